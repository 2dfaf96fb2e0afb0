//! A list of settings, each with its current value (pi-tui's `SettingsList` as pi's
//! `/settings` uses it): the labels in one column, the values aligned beside them, the selected
//! setting's description below.
//!
//! Keys: Up/Down (Ctrl+P/N) move, wrapping around; Enter, or Space while the search is empty,
//! changes the selected value to the next of its values (pi cycles them the same way); typing
//! searches the labels (pi-tui's fuzzy filter); Esc or Ctrl+C closes. The state
//! is a plain struct tests drive with keys; [`show_settings`] is the thin loop on the real
//! terminal, which hands every change to its caller at once (pi applies each as it is made).

use anyhow::Result;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::text::{Line, Span};

use pith_store::search::matching::fuzzy_filter;

use super::input::{LineInput, is_cancel, is_confirm, move_in_list};
use super::style;
use super::terminal::Screen;

/// One setting: what is shown, and the values Enter cycles through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingItem {
    /// pi's item id (`autocompact`, `steering-mode`, …): what the caller matches on.
    pub id: &'static str,
    /// The label in the first column.
    pub label: &'static str,
    /// Shown below the list while the item is selected.
    pub description: String,
    /// The value shown; one of `values` unless the file holds something else.
    pub value: String,
    /// The values in the order Enter goes through them.
    pub values: Vec<&'static str>,
}

impl SettingItem {
    /// The value after the current one (the first when the current one is not listed).
    fn next_value(&self) -> Option<&'static str> {
        let at = self.values.iter().position(|v| *v == self.value);
        let next = at.map_or(0, |i| (i + 1) % self.values.len());
        self.values.get(next).copied()
    }
}

/// What a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingsAction {
    /// Keep going.
    None,
    /// The item at this index took its next value (already in the state).
    Changed(usize),
    /// Closed.
    Close,
}

/// The list's state.
#[derive(Debug, Clone)]
pub struct SettingsListState {
    title: String,
    items: Vec<SettingItem>,
    /// The search typed so far.
    query: LineInput,
    /// Indices into `items` that match the search, in the order shown.
    shown: Vec<usize>,
    /// Position in `shown`.
    cursor: usize,
    /// Rows available for items.
    page: usize,
    /// A change that could not be saved, shown until the next key.
    problem: Option<String>,
}

impl SettingsListState {
    /// A list titled `title`, the cursor on the first item.
    pub fn new(title: &str, items: Vec<SettingItem>) -> SettingsListState {
        SettingsListState {
            title: title.to_owned(),
            shown: (0..items.len()).collect(),
            items,
            query: LineInput::default(),
            cursor: 0,
            page: 10,
            problem: None,
        }
    }

    /// Rows the list may use.
    pub fn set_page(&mut self, rows: usize) {
        self.page = rows.max(1);
    }

    /// The items with their current values.
    pub fn items(&self) -> &[SettingItem] {
        &self.items
    }

    /// Puts back the value an item had before a change that could not be saved, and shows why.
    pub fn undo(&mut self, index: usize, previous: String, why: String) {
        if let Some(item) = self.items.get_mut(index) {
            item.value = previous;
        }
        self.problem = Some(why);
    }

    /// Applies `key`.
    pub fn handle_key(&mut self, key: &KeyEvent) -> SettingsAction {
        self.problem = None;
        let n = self.shown.len();
        if is_cancel(key) {
            return SettingsAction::Close;
        }
        if is_confirm(key) || (key.code == KeyCode::Char(' ') && self.query.is_empty()) {
            let Some(&index) = self.shown.get(self.cursor) else {
                return SettingsAction::None;
            };
            let item = &mut self.items[index];
            return match item.next_value() {
                Some(next) => {
                    item.value = next.to_owned();
                    SettingsAction::Changed(index)
                }
                None => SettingsAction::None,
            };
        }
        if !move_in_list(key, &mut self.cursor, n, self.page) {
            let before = self.query.value();
            if self.query.handle_key(key) && self.query.value() != before {
                let query = self.query.value();
                self.shown = fuzzy_filter(self.items.iter().map(|i| i.label), &query);
                self.cursor = 0;
            }
        }
        SettingsAction::None
    }

    /// The view as lines for a terminal `width` wide (pi's `renderMainList`).
    pub fn lines(&self, width: usize) -> Vec<Line<'static>> {
        let rule = Line::styled("─".repeat(width), style::accent());
        let mut out = vec![
            rule.clone(),
            Line::styled(format!(" {}", self.title), style::bold()),
            Line::default(),
            self.query.line(width),
            Line::default(),
        ];
        let label_width = self
            .items
            .iter()
            .map(|i| crate::text::width(i.label))
            .max()
            .unwrap_or(0)
            .min(36);
        let n = self.shown.len();
        if n == 0 {
            out.push(Line::styled("  No matching settings", style::dim()));
        }
        let start = (self.cursor + 1).saturating_sub(self.page);
        for (pos, &index) in self.shown.iter().enumerate().skip(start).take(self.page) {
            let item = &self.items[index];
            let selected = pos == self.cursor;
            let marker = if selected { "→ " } else { "  " };
            let pad = " ".repeat(label_width.saturating_sub(crate::text::width(item.label)));
            let label_style = if selected {
                style::accent()
            } else {
                ratatui::style::Style::default()
            };
            let value_style = if selected {
                style::accent()
            } else {
                style::muted()
            };
            out.push(Line::from(vec![
                Span::styled(marker, style::accent()),
                Span::styled(format!("{}{pad}", item.label), label_style),
                Span::raw("  "),
                Span::styled(item.value.clone(), value_style),
            ]));
        }
        if n > self.page {
            out.push(Line::styled(
                format!("  ({}/{n})", self.cursor + 1),
                style::dim(),
            ));
        }
        if let Some(item) = self.shown.get(self.cursor).map(|&i| &self.items[i]) {
            out.push(Line::default());
            for line in wrap_words(&item.description, width.saturating_sub(4).max(10)) {
                out.push(Line::styled(format!("  {line}"), style::muted()));
            }
        }
        if let Some(problem) = &self.problem {
            out.push(Line::default());
            out.push(Line::styled(format!("  {problem}"), style::error()));
        }
        out.push(Line::default());
        out.push(Line::styled(
            "  Type to search · Enter/Space to change · Esc to cancel",
            style::dim(),
        ));
        out.push(rule);
        out
    }
}

/// `text` in lines of at most `width` columns, broken between words (a longer word has a
/// line of its own).
fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && crate::text::width(&line) + 1 + crate::text::width(word) > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Rows of the view that are not items (title, description, hint, rules).
const CHROME_ROWS: usize = 12;

/// Shows the list full-screen until it is closed; `apply` is called with each changed item
/// (its new value set) and returns why it could not be saved, which puts the old value back.
/// Returns the items as they are when closed.
///
/// Errors: the terminal cannot be taken over or read.
pub fn show_settings(
    title: &str,
    items: Vec<SettingItem>,
    mut apply: impl FnMut(&SettingItem) -> Result<(), String>,
) -> Result<Vec<SettingItem>> {
    let mut state = SettingsListState::new(title, items);
    let mut screen = Screen::enter()?;
    loop {
        let (width, height) = screen.size()?;
        state.set_page((height as usize).saturating_sub(CHROME_ROWS));
        let Some(key) = screen.show(state.lines(width as usize))? else {
            continue;
        };
        let previous = state.items().get(state.cursor).map(|i| i.value.clone());
        match state.handle_key(&key) {
            SettingsAction::None => {}
            SettingsAction::Changed(i) => {
                if let Err(why) = apply(&state.items()[i])
                    && let Some(previous) = previous
                {
                    state.undo(i, previous, why);
                }
            }
            SettingsAction::Close => return Ok(state.items),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::testing::{ch, key, screen};

    fn items() -> Vec<SettingItem> {
        vec![
            SettingItem {
                id: "autocompact",
                label: "Auto-compact",
                description: "Automatically compact context when it gets too large".into(),
                value: "true".into(),
                values: vec!["true", "false"],
            },
            SettingItem {
                id: "steering-mode",
                label: "Steering mode",
                description: "Enter while streaming queues steering messages.".into(),
                value: "odd".into(),
                values: vec!["one-at-a-time", "all"],
            },
        ]
    }

    #[test]
    fn enter_and_space_cycle_the_selected_value_and_esc_closes() {
        let mut s = SettingsListState::new("Settings", items());
        assert_eq!(
            s.handle_key(&key(KeyCode::Enter)),
            SettingsAction::Changed(0)
        );
        assert_eq!(s.items()[0].value, "false");
        assert_eq!(s.handle_key(&ch(' ')), SettingsAction::Changed(0));
        assert_eq!(s.items()[0].value, "true");
        s.handle_key(&key(KeyCode::Down));
        // A value that is not one of the item's goes to the first.
        assert_eq!(
            s.handle_key(&key(KeyCode::Enter)),
            SettingsAction::Changed(1)
        );
        assert_eq!(s.items()[1].value, "one-at-a-time");
        s.handle_key(&key(KeyCode::Down));
        assert_eq!(s.handle_key(&ch(' ')), SettingsAction::Changed(0));
        assert_eq!(s.handle_key(&key(KeyCode::Esc)), SettingsAction::Close);
    }

    #[test]
    fn typing_searches_the_labels_and_enter_changes_the_match() {
        let mut s = SettingsListState::new("Settings", items());
        for c in "steer".chars() {
            assert_eq!(s.handle_key(&ch(c)), SettingsAction::None);
        }
        // Only "Steering mode" is left, and it is what Enter changes; Space types.
        assert_eq!(
            s.handle_key(&key(KeyCode::Enter)),
            SettingsAction::Changed(1)
        );
        assert_eq!(s.handle_key(&ch(' ')), SettingsAction::None);
        assert_eq!(s.items()[0].value, "true");
        let view = screen(s.lines(60), 60, 20);
        assert!(view.contains("Steering mode"), "{view}");
        assert!(!view.contains("Auto-compact"), "{view}");
        for c in "zzz".chars() {
            s.handle_key(&ch(c));
        }
        assert!(screen(s.lines(60), 60, 20).contains("No matching settings"));
        assert_eq!(s.handle_key(&key(KeyCode::Enter)), SettingsAction::None);
    }

    #[test]
    fn descriptions_wrap_between_words() {
        assert_eq!(
            wrap_words("one two three four", 9),
            ["one two", "three", "four"]
        );
        assert_eq!(wrap_words("", 9), Vec::<String>::new());
    }

    #[test]
    fn values_align_and_the_selected_description_shows() {
        let mut s = SettingsListState::new("Settings", items());
        s.handle_key(&key(KeyCode::Down));
        let text = screen(s.lines(60), 60, 14);
        assert!(text.contains("  Auto-compact   true"), "{text}");
        assert!(text.contains("→ Steering mode  odd"), "{text}");
        assert!(
            text.contains("Enter while streaming queues steering messages."),
            "{text}"
        );
        s.undo(1, "all".into(), "settings.json: not changed".into());
        let text = screen(s.lines(60), 60, 14);
        assert!(text.contains("→ Steering mode  all"), "{text}");
        assert!(text.contains("settings.json: not changed"), "{text}");
    }
}
