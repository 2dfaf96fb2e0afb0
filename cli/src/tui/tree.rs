//! The `/tree` view (spec: tree-and-context.md §4, §6.3, §9; compaction.md §9): the session
//! tree with the active path marked (`•`), labels in brackets, filters, search, folding,
//! label editing, and on selection pi's "Summarize branch?" prompt.
//!
//! Layout: [`nodes`] reads each entry once into what the view shows, [`layout`] orders,
//! filters and indents the rows, [`state`] holds the view and its key handling (no terminal),
//! [`render`] draws it. This file runs the loop.
//!
//! Keys (pi's defaults): ↑/↓ move (wrapping) · ←/→ or PgUp/PgDn page · Ctrl+←/→ or Alt+←/→
//! fold/unfold, or jump between branch segments · Enter select · Esc clears the search, then
//! closes · typing searches · Shift+L label · Shift+T label times · Ctrl+D default · Ctrl+T no
//! tools · Ctrl+U user only · Ctrl+L labeled only · Ctrl+A all · Ctrl+O / Shift+Ctrl+O cycle
//! the filters.
//!
//! Nothing is written here: label changes and the navigation come back in [`TreeOutcome`] for
//! the caller to apply in order (pi appends labels as they are made; the caller doing it right
//! after the view closes gives the same file).

use std::time::Duration;

use anyhow::Result;
use pith_store::{Leaf, Session};

use super::terminal::{Screen, next_key};

pub mod layout;
pub mod nodes;
pub mod render;
pub mod state;

#[cfg(test)]
mod tests;

pub use layout::FilterMode;
use state::{TreeAction, TreeState};

/// What the user did in the tree view.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TreeOutcome {
    /// Labels set (`Some`) or cleared (`None`), in the order the user changed them.
    pub labels: Vec<(String, Option<String>)>,
    /// The entry to navigate to, if one was selected.
    pub navigate: Option<TreeTarget>,
}

/// A selected entry and how to leave the current branch.
///
/// Selecting the current leaf returns it with `summarize: false` and no prompt; pi then shows
/// "Already at this point" instead of navigating (spec: tree-and-context.md §9).
#[derive(Debug, Clone, PartialEq)]
pub struct TreeTarget {
    /// The selected entry.
    pub entry_id: String,
    /// Summarize the branch being left (spec: compaction.md §9).
    pub summarize: bool,
    /// Custom instructions for that summary (`None` when empty).
    pub custom_instructions: Option<String>,
}

/// How the view opens.
#[derive(Debug, Clone, Default)]
pub struct TreeOptions {
    /// Initial filter (pi's `treeFilterMode` setting).
    pub filter: FilterMode,
    /// Entry to put the cursor on instead of the leaf.
    pub initial_selected: Option<String>,
    /// Never ask "Summarize branch?" (pi's `branchSummary.skipPrompt`): selecting navigates
    /// without a summary.
    pub skip_summary_prompt: bool,
}

/// Shows the session's tree with the active path marked and returns what the user did.
/// A session without entries returns an empty outcome without opening the view (pi shows
/// "No entries in session").
///
/// Errors: stdin/stdout is not a terminal; the terminal fails.
#[allow(dead_code)] // The agreed entry point; the interactive mode uses `show_tree_with`.
pub fn show_tree(session: &Session) -> Result<TreeOutcome> {
    show_tree_with(session, &TreeOptions::default())
}

/// [`show_tree`] with [`TreeOptions`].
///
/// Errors: as [`show_tree`].
pub fn show_tree_with(session: &Session, options: &TreeOptions) -> Result<TreeOutcome> {
    if session.entries().is_empty() {
        return Ok(TreeOutcome::default());
    }
    let mut state = new_state(session, options);
    let mut screen = Screen::enter()?;
    let tz = jiff::tz::TimeZone::system();
    let navigate = loop {
        let (_, height) = screen.size()?;
        state.set_max_visible((height as usize).saturating_sub(render::CHROME_ROWS));
        let now = jiff::Timestamp::now();
        screen
            .terminal()
            .draw(|frame| render::draw(frame, &state, &tz, now))?;
        let Some(key) = next_key(Duration::from_millis(250))? else {
            continue;
        };
        match state.handle_key(key) {
            TreeAction::None => {}
            TreeAction::Cancel => break None,
            TreeAction::Navigate(target) => break Some(target),
        }
    };
    Ok(TreeOutcome {
        labels: state.labels().to_vec(),
        navigate,
    })
}

/// The view's state for `session`, cursor on the leaf (or `options.initial_selected`).
pub fn new_state(session: &Session, options: &TreeOptions) -> TreeState {
    let (nodes, roots) = nodes::build(session);
    let leaf = match session.tree().leaf() {
        Leaf::At(i) => Some(i),
        Leaf::Root => None,
    };
    TreeState::new(nodes, &roots, leaf, options)
}
