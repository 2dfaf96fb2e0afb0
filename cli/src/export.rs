//! `pith --export FILE [OUT]` and `/export`: one self-contained HTML file of a session.
//!
//! The page holds the whole tree (every branch), shows the session's branch when it opens and
//! switches branches in place; styles and script are inline and a Content-Security-Policy
//! forbids every network load. Layout:
//!
//! - [`page`]: the document, written in one pass straight into the output file;
//! - [`entries`]: one entry as HTML plus its sidebar text; [`tools`]: tool calls and results;
//! - [`tree`]: parents, newest leaves and pi's indented sidebar rows;
//! - [`markdown`], [`html`]: safe markdown and escaping; [`stats`]: token and cost totals.
//!
//! Unlike pi's export, which embeds the session as JSON and renders it in the browser, the
//! HTML is rendered here: the page reads without script, nothing in a message can reach a
//! script context, and a large session costs the browser a parse rather than a JSON decode
//! plus a render.

mod entries;
mod html;
mod markdown;
mod page;
mod stats;
mod tools;
mod tree;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use pith_store::writer::{Replace, replace_file};
use pith_store::{OpenMode, Session, SessionEnv};

/// Sessions with at least this many entries get a progress bar (when stderr is a terminal).
const PROGRESS_FROM: usize = 5_000;

/// Writes the HTML export of `session_file` to `out` (default: `pith-session-<file stem>.html`
/// in the current directory, pi's `<app>-session-<basename>.html` with pith's name) and
/// returns its path.
///
/// The session file is opened read-only: never locked, migrated or written. The page is
/// written beside its destination and renamed into place, so a failed export leaves no
/// half-written file; a symlink at the destination is refused.
///
/// Errors: the file is missing or not a session, or the output cannot be written.
pub fn export_html(session_file: &Path, out: Option<&Path>) -> Result<PathBuf> {
    // Opening a missing path would start a new session; exporting one is an error (pi:
    // "File not found").
    if !session_file.is_file() {
        bail!("File not found: {}", session_file.display());
    }
    let env = SessionEnv::system();
    let session = Session::open(session_file, None, None, OpenMode::ReadOnly, &env)
        .with_context(|| format!("cannot read {}", session_file.display()))?;
    // The page shows every entry: bodies a large session left in its file are read in one
    // pass, not one read each.
    session
        .tree()
        .read_back_bodies()
        .with_context(|| format!("cannot read {}", session_file.display()))?;
    for w in session.warnings() {
        eprintln!("pith: {}: {w}", session_file.display());
    }
    let out_path = match out {
        Some(p) => p.to_owned(),
        None => PathBuf::from(default_name(session_file)),
    };
    let file_name = session_file
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());

    write_to(&out_path, &session, &file_name)?;
    Ok(out_path)
}

/// pi's default name, `${APP_NAME}-session-${basename(file, ".jsonl")}.html`, with pith as
/// the app: a `pi-session-…` file would claim pi wrote it.
fn default_name(session_file: &Path) -> String {
    let base = session_file
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let stem = base.strip_suffix(".jsonl").unwrap_or(&base);
    format!("pith-session-{stem}.html")
}

/// Writes the page to a temporary file beside `out` and renames it into place
/// (`pith_store::writer::replace_file`): a symlink at `out` is refused, never written through,
/// and a failed export leaves no half-written file.
fn write_to(out: &Path, session: &Session, file_name: &str) -> Result<()> {
    let total = session.entries().len();
    let bar = (total >= PROGRESS_FROM && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(total as u64);
        if let Ok(style) = ProgressStyle::with_template("exporting {bar:30} {pos}/{len} entries") {
            bar.set_style(style);
        }
        bar
    });
    let mut progress = |done: usize| {
        if let Some(bar) = &bar {
            bar.set_position(done as u64);
        }
    };
    replace_file(out, Replace::RegularOrNothing, |w| {
        page::write_page(w, session, file_name, &mut progress)
    })
    .with_context(|| format!("cannot write {}", out.display()))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_name_follows_pi() {
        assert_eq!(
            default_name(Path::new("/x/2025-01-01T00-00-00-000Z_abc.jsonl")),
            "pith-session-2025-01-01T00-00-00-000Z_abc.html"
        );
        assert_eq!(
            default_name(Path::new("s.json")),
            "pith-session-s.json.html"
        );
    }
}
