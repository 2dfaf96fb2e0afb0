//! `/tree` in the interactive mode: the full-screen tree view, then the move it asks for
//! (spec: tree-and-context.md §9), with a branch summary the user can cancel.

use anyhow::Result;

use pith_actors::RuntimeError;
use pith_actors::tree_navigator::{NavigateOptions, Navigated};

use super::app::App;
use super::commands::view;
use super::quiet_wait::QuietInput;

/// How one round of `/tree` ended.
enum Round {
    /// The user cancelled the branch summary of a move to this entry: the tree opens again
    /// on it.
    Again(String),
    /// The leaf moved.
    Moved,
    /// Nothing moved (closed, cancelled, failed, or already there).
    Stayed,
}

impl App {
    /// `/tree`: the tree view; its label changes are applied, then the move (with the branch
    /// summary chosen there), then the target's text goes to the editor (spec:
    /// tree-and-context.md §9). Returns whether the leaf moved.
    pub(super) async fn tree(&mut self) -> Result<bool> {
        let mut selected = None;
        // pi shows the tree again, on the same entry, after a summary the user cancelled.
        loop {
            match self.tree_at(selected).await? {
                Round::Again(entry) => selected = Some(entry),
                Round::Moved => return Ok(true),
                Round::Stayed => return Ok(false),
            }
        }
    }

    /// One round of `/tree` opening on `initial_selected`.
    async fn tree_at(&mut self, initial_selected: Option<String>) -> Result<Round> {
        let session = self.session().await?;
        if session.entries().is_empty() {
            self.status("No entries in session");
            return Ok(Round::Stayed);
        }
        let leaf = session.leaf_id().map(str::to_owned);
        // pi's `treeFilterMode` and `branchSummary.skipPrompt` settings.
        let settings =
            pith_actors::settings::Settings::load(&self.env.agent_dir, session.cwd().as_ref());
        let options = crate::tui::tree::TreeOptions {
            filter: settings
                .get("treeFilterMode")
                .and_then(|v| v.as_str())
                .and_then(crate::tui::tree::FilterMode::from_setting)
                .unwrap_or_default(),
            initial_selected,
            skip_summary_prompt: settings
                .get("branchSummary.skipPrompt")
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
        };
        let outcome = match view(move || crate::tui::tree::show_tree_with(&session, &options)).await
        {
            Ok(o) => o,
            Err(e) => {
                self.view_failed(&e);
                return Ok(Round::Stayed);
            }
        };
        for (id, label) in &outcome.labels {
            if let Err(e) = self.rt.set_label(id, label.as_deref()).await {
                self.error(&e.to_string());
            }
        }
        let Some(target) = outcome.navigate else {
            return Ok(Round::Stayed);
        };
        if leaf.as_deref() == Some(target.entry_id.as_str()) {
            self.status("Already at this point");
            return Ok(Round::Stayed);
        }
        if target.summarize {
            self.editor
                .set_status(Some(super::editor::Status::BranchSummary));
        }
        let options = NavigateOptions {
            summarize: target.summarize,
            custom_instructions: target.custom_instructions,
            ..Default::default()
        };
        let navigated = if target.summarize {
            let navigated = self.summarize_and_move(&target.entry_id, options).await;
            self.editor.set_status(None);
            navigated?
        } else {
            self.rt.navigate_tree(&target.entry_id, options).await
        };
        match navigated {
            Ok(nav) if nav.aborted => {
                self.status("Branch summarization cancelled");
                return Ok(Round::Again(target.entry_id));
            }
            Ok(nav) if nav.cancelled => self.status("Navigation cancelled"),
            Ok(nav) => {
                self.drain_events();
                self.show_history().await?;
                if let Some(text) = nav.editor_text {
                    self.next_initial = text;
                }
                self.status("Navigated to selected point");
                return Ok(Round::Moved);
            }
            Err(e) => self.error(&e.to_string()),
        }
        Ok(Round::Stayed)
    }

    /// The move with a branch summary. The summary is written while the editor is not
    /// reading: typed keys stay off the screen and out of the next prompt, and Esc, Ctrl+C
    /// or Ctrl+D (or SIGINT) cancels it at once (pi's `abortBranchSummary`).
    async fn summarize_and_move(
        &mut self,
        target: &str,
        options: NavigateOptions,
    ) -> Result<Result<Navigated, RuntimeError>> {
        use tokio::signal::unix::{SignalKind, signal};
        let quiet = QuietInput::new();
        let (_watch, mut pressed) = quiet.watch_cancel_keys();
        let mut sigint = signal(SignalKind::interrupt())?;
        let navigating = self.rt.navigate_tree(target, options);
        tokio::pin!(navigating);
        let mut cancelled = false;
        let navigated = loop {
            tokio::select! {
                navigated = &mut navigating => break navigated,
                _ = &mut pressed, if !cancelled => {
                    cancelled = true;
                    self.rt.abort().await?;
                }
                _ = sigint.recv(), if !cancelled => {
                    cancelled = true;
                    self.rt.abort().await?;
                }
            }
        };
        drop(quiet);
        Ok(navigated)
    }
}
