//! `/share`: pi's gist share (`session-share.js` `shareViaGist`): the session's HTML export
//! uploaded as a secret GitHub gist by the GitHub CLI, `gh gist create --public=false
//! session.html`, after `gh auth status` says it is logged in. pi first tries its Radius
//! service; pith has none (docs/divergences.md). The gist's URL is shown, and a viewer URL
//! when `PITH_SHARE_VIEWER_URL` names one (pi's `PI_SHARE_VIEWER_URL`: `<viewer>#<gist id>`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;

use super::app::App;

/// What sharing ended with: the lines to show, or the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shared {
    /// The gist's URL, and the viewer's when one is configured.
    Done {
        /// `https://gist.github.com/<user>/<id>`, as `gh` printed it.
        gist: String,
        /// `<PITH_SHARE_VIEWER_URL>#<id>`.
        viewer: Option<String>,
    },
    /// pi's error text.
    Failed(String),
}

/// The executable `name` in one of `PATH`'s folders.
fn on_path(name: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Exports `session_file` as HTML in a temporary folder and uploads it with `gh` (found on
/// `path_var`); blocks while `gh` runs. `viewer` is the share viewer's base URL.
pub fn share(
    session_file: &Path,
    path_var: Option<&std::ffi::OsStr>,
    viewer: Option<&str>,
) -> Shared {
    let Some(gh) = on_path("gh", path_var) else {
        return Shared::Failed(
            "GitHub CLI (gh) is not installed. Install it from https://cli.github.com/".into(),
        );
    };
    let logged_in = Command::new(&gh)
        .args(["auth", "status"])
        .stdin(std::process::Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    if !logged_in {
        return Shared::Failed("GitHub CLI is not logged in. Run 'gh auth login' first.".into());
    }
    let tmp = match tempfile::Builder::new().prefix("pith-share-").tempdir() {
        Ok(t) => t,
        Err(e) => return Shared::Failed(format!("Failed to export session: {e}")),
    };
    let html = tmp.path().join("session.html");
    if let Err(e) = crate::export::export_html(session_file, Some(&html)) {
        return Shared::Failed(format!("Failed to export session: {e:#}"));
    }
    let output = Command::new(&gh)
        .args(["gist", "create", "--public=false"])
        .arg(&html)
        .stdin(std::process::Stdio::null())
        .output();
    let output = match output {
        Ok(o) => o,
        Err(e) => return Shared::Failed(format!("Failed to create gist: {e}")),
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let why = Some(stderr.trim())
            .filter(|s| !s.is_empty())
            .unwrap_or("Unknown error");
        return Shared::Failed(format!("Failed to create gist: {why}"));
    }
    let gist = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let id = gist.rsplit('/').next().unwrap_or_default();
    if id.is_empty() {
        return Shared::Failed("Failed to parse gist ID from gh output".into());
    }
    Shared::Done {
        viewer: viewer
            .filter(|v| !v.is_empty())
            .map(|v| format!("{v}#{id}")),
        gist,
    }
}

impl App {
    /// `/share`: the current session as a secret gist.
    ///
    /// Errors: the runtime stopped answering.
    pub(super) async fn share(&mut self) -> Result<()> {
        let Some(file) = self
            .rt
            .current_session()
            .await?
            .session_file
            .filter(|f| f.exists())
        else {
            self.error(
                "Failed to export session: the session has no file yet (it is written with the first reply)",
            );
            return Ok(());
        };
        self.status("Creating gist...");
        let path_var = std::env::var_os("PATH");
        let viewer = std::env::var("PITH_SHARE_VIEWER_URL").ok();
        let shared = tokio::task::spawn_blocking(move || {
            share(&file, path_var.as_deref(), viewer.as_deref())
        })
        .await
        .unwrap_or_else(|e| Shared::Failed(format!("Failed to create gist: {e}")));
        let safe = |s: &str| pith_tools::sanitize::for_terminal(s);
        match shared {
            Shared::Done { gist, viewer } => {
                let mut lines = vec![String::new()];
                if let Some(viewer) = viewer {
                    lines.push(format!("Share URL: {}", safe(&viewer)));
                }
                lines.push(format!("Gist: {}", safe(&gist)));
                self.screen.print_lines(&lines);
            }
            Shared::Failed(why) => self.error(&safe(&why)),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_gh_on_the_path_sharing_says_gh_is_needed() {
        let tmp = tempfile::tempdir().expect("tmp");
        let file = tmp.path().join("s.jsonl");
        let shared = share(&file, Some(tmp.path().as_os_str()), None);
        assert_eq!(
            shared,
            Shared::Failed(
                "GitHub CLI (gh) is not installed. Install it from https://cli.github.com/".into()
            )
        );
        assert_eq!(on_path("gh", None), None);
    }
}
