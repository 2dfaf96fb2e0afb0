//! `/export file.jsonl`: pi's `exportToJsonl` (spec: lifecycle.md §8): a fresh header with the
//! session's id, then the current branch (labels included) re-linked into one chain.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use pith_store::writer::{Replace, replace_file};
use pith_store::{Session, SessionEnv};

/// Writes the branch of `session` to `path` (relative to the process's directory, parent
/// directories created) and returns where it went.
///
/// Errors: the file cannot be written, or an entry cannot be re-linked.
pub fn export_jsonl(session: &Session, env: &SessionEnv, path: &Path) -> Result<PathBuf> {
    let path = std::path::absolute(path)?;
    let header = serde_json::json!({
        "type": "session",
        "version": 3,
        "id": session.session_id(),
        "timestamp": env.now_iso(),
        "cwd": session.cwd(),
    });
    let mut out = format!("{header}\n");
    let mut parent = "null".to_owned();
    for entry in session.tree().get_branch(None) {
        let linked = entry
            .with_member("parentId", &parent)
            .map_err(anyhow::Error::msg)?;
        out.push_str(linked.raw());
        out.push('\n');
        parent = serde_json::to_string(entry.id())?;
    }
    // Beside the destination, then renamed into place; never through a symlink.
    replace_file(&path, Replace::RegularOrNothing, |w| {
        std::io::Write::write_all(w, out.as_bytes())
    })
    .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}
