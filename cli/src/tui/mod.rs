//! Full-screen views (ratatui on crossterm): the session picker of `/resume` and `pith -r`,
//! and the `/tree` view.
//!
//! Layout:
//!
//! - [`picker`] and [`tree`]: the two views. Each keeps its state and key handling in a plain
//!   struct (`PickerState`, `TreeState`) that tests drive with key events and render on
//!   ratatui's `TestBackend`; only a thin loop touches the terminal.
//! - [`select`]: the one-item selector of `/model`, `/thinking`, `/fork`, `/trust`;
//!   [`settings_list`]: `/settings`' list of values to cycle. The same plain-struct design.
//! - [`search`]: pi's session search (fuzzy tokens, `"phrases"`, `re:regex`).
//! - [`terminal`]: taking the terminal and giving it back on every exit path.
//! - [`input`]: the one-line text box and key predicates; [`style`]: pi's colour roles;
//!   [`progress`]: a stderr progress bar for long work. Display widths are in `crate::text`.
//!
//! Keys are pi 0.73.1's defaults; each view's module docs list them and the views show pi's
//! hint lines. Key events are `ratatui::crossterm::event::KeyEvent` (crossterm 0.29).

pub mod input;
pub mod picker;
pub mod progress;
pub mod search;
pub mod select;
pub mod settings_list;
pub mod style;
pub mod terminal;
pub mod tree;

#[cfg(test)]
pub mod testing;
