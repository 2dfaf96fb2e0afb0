//! `/trust`: pi 1.6.0's trust selector (`TrustSelectorComponent`) for the session's project:
//! the project, its saved decision and whether this session trusts it, then `Trust` or `Do
//! not trust`, the saved one marked. The choice is saved in `<agent dir>/trust.json`
//! ([`crate::ext_trust::save_decision`]) and counts from the next start, as in pi. pi's
//! `Trust parent folder` is left out: pith's trust store has no inheritance between folders
//! (docs/divergences.md).

use anyhow::Result;

use super::app::App;
use super::commands::view;
use crate::tui::select::{Item, select_about};

/// pi's `formatDecision`: `trusted (<path>)`, `untrusted (<path>)` or `none`.
pub fn decision_text(decision: Option<bool>, project: &str) -> String {
    match decision {
        Some(true) => format!("trusted ({project})"),
        Some(false) => format!("untrusted ({project})"),
        None => "none".to_owned(),
    }
}

impl App {
    /// pi's `renderProjectTrustWarningIfNeeded`: at startup, a project that has files needing
    /// trust ([`pith_actors::trust::needs_trust`]) and is not trusted is named as such.
    ///
    /// Errors: the runtime stopped answering.
    pub(super) async fn untrusted_project_warning(&mut self) -> Result<()> {
        let cwd = std::path::PathBuf::from(self.rt.current_session().await?.cwd);
        if pith_actors::trust::needs_trust(&cwd)
            && !pith_actors::trust::project_trusted(&self.env.agent_dir, &cwd, None)
        {
            self.screen.print_lines(&[
                String::new(),
                super::style::warning(
                    "This project is not trusted. Project .pith resources are ignored. Use /trust to save a trust decision, then restart pith.",
                ),
            ]);
        }
        Ok(())
    }

    /// `/trust`: shows the project's trust and saves the decision picked.
    ///
    /// Errors: the runtime stopped answering.
    pub(super) async fn trust(&mut self) -> Result<()> {
        let cwd = self.rt.current_session().await?.cwd;
        let cwd = std::path::PathBuf::from(cwd);
        let agent_dir = self.env.agent_dir.clone();
        let project = pith_actors::trust::project_key(&cwd);
        let saved = pith_actors::trust::stored_decision(&agent_dir, &cwd);
        let trusted_now = pith_actors::trust::project_trusted(&agent_dir, &cwd, None);
        let about = vec![
            cwd.display().to_string(),
            String::new(),
            format!("Saved decision: {}", decision_text(saved, &project)),
            format!(
                "Current session: {}",
                if trusted_now { "trusted" } else { "untrusted" }
            ),
        ];
        let options = [("Trust", true), ("Do not trust", false)];
        let items: Vec<Item> = options
            .iter()
            .map(|(label, trusted)| {
                let marker = if saved == Some(*trusted) {
                    "✓ "
                } else {
                    "  "
                };
                Item::new(format!("{marker}{label}"), "")
            })
            .collect();
        let initial = options
            .iter()
            .position(|(_, t)| saved == Some(*t))
            .unwrap_or(0);
        let picked =
            view(move || select_about("Project trust", about, items, initial, false)).await;
        match picked {
            Ok(Some(i)) => {
                let trusted = options[i].1;
                match crate::ext_trust::save_decision(&agent_dir, &cwd, trusted) {
                    Ok(()) => self.status(&format!(
                        "Saved trust decision: {}. Restart pith for this to take effect.",
                        if trusted { "trusted" } else { "untrusted" }
                    )),
                    Err(e) => self.error(&format!("{e:#}")),
                }
            }
            Ok(None) => {}
            Err(e) => self.view_failed(&e),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_shown_as_pi_formats_them() {
        assert_eq!(decision_text(None, "/p"), "none");
        assert_eq!(decision_text(Some(true), "/p"), "trusted (/p)");
        assert_eq!(decision_text(Some(false), "/p"), "untrusted (/p)");
    }
}
