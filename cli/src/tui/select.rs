//! A list to pick one item from (pi-tui's `SelectList` as pi's selectors use it: `/model`,
//! `/thinking`, `/fork`'s "Message 2 of 13", `/import`'s confirmation).
//!
//! Keys: Up/Down (Ctrl+P/N) move, wrapping around; PageUp/PageDown move a page; typing
//! filters (every word of the filter must appear in the item, case ignored); Enter picks;
//! Esc or Ctrl+C cancels. The state is a plain struct tests drive with keys and render on
//! ratatui's `TestBackend`; [`select`] is the thin loop on the real terminal.

use anyhow::Result;
use ratatui::crossterm::event::KeyEvent;
use ratatui::text::{Line, Span};

use super::input::{LineInput, is_cancel, is_confirm, is_ctrl, move_in_list};
use super::style;
use super::terminal::Screen;

/// One choice: what is shown, and a dimmed note after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The text shown and filtered on.
    pub label: String,
    /// Shown dimmed after the label (not filtered on); may be empty.
    pub note: String,
}

impl Item {
    /// An item with a note.
    pub fn new(label: impl Into<String>, note: impl Into<String>) -> Item {
        Item {
            label: label.into(),
            note: note.into(),
        }
    }
}

/// What a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectAction {
    /// Keep going.
    None,
    /// Picked the item at this index of the full list.
    Picked(usize),
    /// Ctrl+S on a selector that saves: picked, and to be kept as the default (pi's
    /// `app.models.save`).
    Saved(usize),
    /// Cancelled.
    Cancel,
}

/// The selector's state.
#[derive(Debug, Clone)]
pub struct SelectState {
    title: String,
    items: Vec<Item>,
    filter: LineInput,
    /// Indices into `items` that pass the filter.
    visible: Vec<usize>,
    /// Position in `visible`.
    cursor: usize,
    /// Rows available for items.
    page: usize,
    /// Whether typing filters (a yes/no question does not need it).
    filterable: bool,
    /// Muted lines under the title (`/trust`'s project and decisions).
    about: Vec<String>,
    /// Ctrl+S picks and saves (the model selector).
    savable: bool,
}

impl SelectState {
    /// A selector titled `title` over `items`, the cursor on `initial` (an index of `items`).
    pub fn new(title: &str, items: Vec<Item>, initial: usize, filterable: bool) -> SelectState {
        let visible: Vec<usize> = (0..items.len()).collect();
        SelectState {
            title: title.to_owned(),
            cursor: initial.min(items.len().saturating_sub(1)),
            items,
            filter: LineInput::default(),
            visible,
            page: 10,
            filterable,
            about: Vec::new(),
            savable: false,
        }
    }

    /// The same, where Ctrl+S picks the item to be saved as the default.
    pub fn savable(mut self) -> SelectState {
        self.savable = true;
        self
    }

    /// The same, with `about` shown muted under the title.
    pub fn with_about(mut self, about: Vec<String>) -> SelectState {
        self.about = about;
        self
    }

    /// Rows the list may use.
    pub fn set_page(&mut self, rows: usize) {
        self.page = rows.max(1);
    }

    /// Applies `key`.
    pub fn handle_key(&mut self, key: &KeyEvent) -> SelectAction {
        let n = self.visible.len();
        if is_cancel(key) {
            return SelectAction::Cancel;
        }
        if is_confirm(key) {
            return match self.visible.get(self.cursor) {
                Some(&i) => SelectAction::Picked(i),
                None => SelectAction::None,
            };
        }
        if self.savable && is_ctrl(key, 's') {
            return match self.visible.get(self.cursor) {
                Some(&i) => SelectAction::Saved(i),
                None => SelectAction::None,
            };
        }
        if !move_in_list(key, &mut self.cursor, n, self.page) && self.filterable {
            let before = self.filter.value();
            if self.filter.handle_key(key) && self.filter.value() != before {
                self.refilter();
            }
        }
        SelectAction::None
    }

    fn refilter(&mut self) {
        let words: Vec<String> = self
            .filter
            .value()
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        self.visible = (0..self.items.len())
            .filter(|&i| {
                let label = self.items[i].label.to_lowercase();
                words.iter().all(|w| label.contains(w.as_str()))
            })
            .collect();
        self.cursor = 0;
    }

    /// The view as lines for a terminal `width` wide.
    pub fn lines(&self, width: usize) -> Vec<Line<'static>> {
        let rule = Line::styled("─".repeat(width), style::accent());
        let mut out = vec![
            rule.clone(),
            Line::styled(format!(" {}", self.title), style::bold()),
        ];
        if !self.about.is_empty() {
            out.push(Line::default());
            out.extend(
                self.about
                    .iter()
                    .map(|l| Line::styled(format!(" {l}"), style::muted())),
            );
        }
        if self.filterable {
            let mut search = vec![Span::styled(" Type to filter: ", style::dim())];
            search.extend(self.filter.line(width.saturating_sub(17)).spans);
            out.push(Line::from(search));
        }
        out.push(Line::default());
        let n = self.visible.len();
        let start = (self.cursor + 1).saturating_sub(self.page);
        for (pos, &i) in self.visible.iter().enumerate().skip(start).take(self.page) {
            let item = &self.items[i];
            let selected = pos == self.cursor;
            let marker = if selected { "› " } else { "  " };
            let mut spans = vec![Span::styled(
                format!("{marker}{}", item.label),
                if selected {
                    style::selected()
                } else {
                    ratatui::style::Style::default()
                },
            )];
            if !item.note.is_empty() {
                spans.push(Span::styled(format!("  {}", item.note), style::dim()));
            }
            out.push(Line::from(spans));
        }
        if n == 0 {
            out.push(Line::styled("  No matches", style::muted()));
        } else if n > self.page {
            out.push(Line::styled(
                format!("  ({}/{n})", self.cursor + 1),
                style::muted(),
            ));
        }
        out.push(Line::default());
        out.push(Line::styled(
            if self.savable {
                " ↑/↓ move · enter select · ctrl+s set as default · esc cancel"
            } else {
                " ↑/↓ move · enter select · esc cancel"
            },
            style::dim(),
        ));
        out.push(rule);
        out
    }
}

/// Rows of the view that are not items.
const CHROME_ROWS: usize = 8;

/// Shows the selector full-screen until an item is picked (its index in `items`) or the user
/// cancels (`None`).
///
/// Errors: the terminal cannot be taken over or read.
pub fn select(
    title: &str,
    items: Vec<Item>,
    initial: usize,
    filterable: bool,
) -> Result<Option<usize>> {
    select_about(title, Vec::new(), items, initial, filterable)
}

/// [`select`] with `about`: muted lines under the title.
///
/// Errors: the terminal cannot be taken over or read.
pub fn select_about(
    title: &str,
    about: Vec<String>,
    items: Vec<Item>,
    initial: usize,
    filterable: bool,
) -> Result<Option<usize>> {
    let state = SelectState::new(title, items, initial, filterable).with_about(about);
    Ok(run(state)?.map(|(i, _)| i))
}

/// [`select_about`] where Ctrl+S also picks: `Some((index, saved))`, `saved` when it was
/// Ctrl+S (pi's model and thinking selectors: set as default).
///
/// Errors: the terminal cannot be taken over or read.
pub fn select_or_save(
    title: &str,
    about: Vec<String>,
    items: Vec<Item>,
    initial: usize,
) -> Result<Option<(usize, bool)>> {
    run(SelectState::new(title, items, initial, true)
        .with_about(about)
        .savable())
}

fn run(mut state: SelectState) -> Result<Option<(usize, bool)>> {
    if state.items.is_empty() {
        return Ok(None);
    }
    let chrome = CHROME_ROWS + state.about.len() + usize::from(!state.about.is_empty());
    let mut screen = Screen::enter()?;
    loop {
        let (width, height) = screen.size()?;
        state.set_page((height as usize).saturating_sub(chrome));
        let Some(key) = screen.show(state.lines(width as usize))? else {
            continue;
        };
        match state.handle_key(&key) {
            SelectAction::None => {}
            SelectAction::Picked(i) => return Ok(Some((i, false))),
            SelectAction::Saved(i) => return Ok(Some((i, true))),
            SelectAction::Cancel => return Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::testing::{ch, ctrl, key, screen};
    use ratatui::crossterm::event::KeyCode;

    fn models() -> Vec<Item> {
        ["anthropic/claude-sonnet-4-5", "openai/gpt-5", "faux/faux-1"]
            .iter()
            .map(|m| Item::new(*m, ""))
            .collect()
    }

    #[test]
    fn arrows_wrap_and_enter_picks_the_index_of_the_full_list() {
        let mut s = SelectState::new("Select model", models(), 1, true);
        assert_eq!(s.handle_key(&key(KeyCode::Down)), SelectAction::None);
        assert_eq!(s.handle_key(&key(KeyCode::Down)), SelectAction::None);
        assert_eq!(s.handle_key(&key(KeyCode::Enter)), SelectAction::Picked(0));
        assert_eq!(s.handle_key(&ctrl('p')), SelectAction::None);
        assert_eq!(s.handle_key(&key(KeyCode::Enter)), SelectAction::Picked(2));
        assert_eq!(s.handle_key(&key(KeyCode::Esc)), SelectAction::Cancel);
    }

    #[test]
    fn typing_filters_by_every_word() {
        let mut s = SelectState::new("Select model", models(), 0, true);
        for c in "gpt".chars() {
            s.handle_key(&ch(c));
        }
        assert_eq!(s.handle_key(&key(KeyCode::Enter)), SelectAction::Picked(1));
        let text = screen(s.lines(40), 40, 12);
        assert!(text.contains("› openai/gpt-5"), "{text}");
        assert!(!text.contains("faux"), "{text}");
        for c in "zz".chars() {
            s.handle_key(&ch(c));
        }
        assert!(screen(s.lines(40), 40, 12).contains("No matches"));
        assert_eq!(s.handle_key(&key(KeyCode::Enter)), SelectAction::None);
    }

    #[test]
    fn a_long_list_shows_a_page_around_the_cursor_and_the_position() {
        let items: Vec<Item> = (1..=30)
            .map(|i| Item::new(format!("Message {i}"), "note"))
            .collect();
        let mut s = SelectState::new("Fork from", items, 29, false);
        s.set_page(5);
        let text = screen(s.lines(40), 40, 14);
        assert!(text.contains("› Message 30  note"), "{text}");
        assert!(text.contains("Message 26"), "{text}");
        assert!(!text.contains("Message 25"), "{text}");
        assert!(text.contains("(30/30)"), "{text}");
        // Not filterable: letters do nothing.
        s.handle_key(&ch('x'));
        assert_eq!(s.handle_key(&key(KeyCode::Enter)), SelectAction::Picked(29));
    }
}
