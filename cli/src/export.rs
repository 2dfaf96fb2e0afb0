//! `pith --export FILE [OUT]` and `/export`: one self-contained HTML file of a session.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// Writes the HTML export of `session_file` to `out` and returns its path.
///
/// Errors: always, until the export lands.
pub fn export_html(_session_file: &Path, _out: Option<&Path>) -> Result<PathBuf> {
    bail!("HTML export is not built yet")
}
