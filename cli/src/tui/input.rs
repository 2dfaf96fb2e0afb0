//! A one-line text input (pi-tui's `Input`): the search box, the rename box and the label box.
//!
//! Editing keys follow pi's defaults: Left/Right (Ctrl+B/F), Home/End (Ctrl+A/E),
//! Alt+Left/Right or Alt+B/F by word, Backspace, Delete, Ctrl+W or Alt+Backspace (word
//! back), Alt+D (word forward), Ctrl+U (to start), Ctrl+K (to end). Text is typed characters;
//! control characters never enter it.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};

use super::style;

/// Whether `key` is Ctrl+`c` (without Alt), `c` lowercase.
pub fn is_ctrl(key: &KeyEvent, c: char) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL)
        && !key.modifiers.contains(KeyModifiers::ALT)
        && matches!(key.code, KeyCode::Char(k) if k.eq_ignore_ascii_case(&c))
}

/// Whether `key` cancels a view: Esc or Ctrl+C (pi's `tui.select.cancel`).
pub fn is_cancel(key: &KeyEvent) -> bool {
    key.code == KeyCode::Esc || is_ctrl(key, 'c')
}

/// Whether `key` confirms: Enter (pi's `tui.select.confirm`).
pub fn is_confirm(key: &KeyEvent) -> bool {
    key.code == KeyCode::Enter
}

/// Moves `cursor` through a list of `n` rows for pi's list keys (`tui.select.up`/`down`
/// wrapping, page up/down by `page`, Ctrl+P/N); `false` when `key` is none of them.
pub fn move_in_list(key: &KeyEvent, cursor: &mut usize, n: usize, page: usize) -> bool {
    match key.code {
        KeyCode::Up if n > 0 => *cursor = (*cursor + n - 1) % n,
        KeyCode::Down if n > 0 => *cursor = (*cursor + 1) % n,
        KeyCode::PageUp => *cursor = cursor.saturating_sub(page),
        KeyCode::PageDown if n > 0 => *cursor = (*cursor + page).min(n - 1),
        _ if is_ctrl(key, 'p') && n > 0 => *cursor = (*cursor + n - 1) % n,
        _ if is_ctrl(key, 'n') && n > 0 => *cursor = (*cursor + 1) % n,
        _ => return false,
    }
    true
}

/// Ctrl+Backspace. Most terminals send it as `^H`, which arrives as Ctrl+H.
pub fn is_ctrl_backspace(key: &KeyEvent) -> bool {
    (key.code == KeyCode::Backspace && key.modifiers.contains(KeyModifiers::CONTROL))
        || is_ctrl(key, 'h')
}

/// A single-line editable text with a cursor (a char index).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineInput {
    chars: Vec<char>,
    cursor: usize,
}

impl LineInput {
    /// An input holding `text`, cursor at the end.
    pub fn with_text(text: &str) -> LineInput {
        let chars: Vec<char> = text.chars().collect();
        LineInput {
            cursor: chars.len(),
            chars,
        }
    }

    /// The text.
    pub fn value(&self) -> String {
        self.chars.iter().collect()
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.chars.is_empty()
    }

    /// Applies an editing key; returns whether the text changed. Keys that are not editing
    /// keys are ignored (returns `false`).
    pub fn handle_key(&mut self, key: &KeyEvent) -> bool {
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Left if alt || ctrl => self.cursor = self.word_start(),
            KeyCode::Right if alt || ctrl => self.cursor = self.word_end(),
            KeyCode::Left => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Right => self.cursor = (self.cursor + 1).min(self.chars.len()),
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.cursor = self.chars.len(),
            KeyCode::Backspace if alt || ctrl => return self.delete_to(self.word_start()),
            KeyCode::Backspace => {
                return self.cursor > 0 && self.delete_to(self.cursor - 1);
            }
            KeyCode::Delete => return self.delete_forward(),
            KeyCode::Char(c) if ctrl && !alt => match c.to_ascii_lowercase() {
                'a' => self.cursor = 0,
                'e' => self.cursor = self.chars.len(),
                'b' => self.cursor = self.cursor.saturating_sub(1),
                'f' => self.cursor = (self.cursor + 1).min(self.chars.len()),
                'w' | 'h' => return self.delete_to(self.word_start()),
                'u' => return self.delete_to(0),
                'k' => {
                    let changed = self.cursor < self.chars.len();
                    self.chars.truncate(self.cursor);
                    return changed;
                }
                _ => {}
            },
            KeyCode::Char(c) if alt => match c {
                'b' => self.cursor = self.word_start(),
                'f' => self.cursor = self.word_end(),
                'd' => {
                    let end = self.word_end();
                    let changed = end > self.cursor;
                    self.chars.drain(self.cursor..end);
                    return changed;
                }
                _ => {}
            },
            KeyCode::Char(c) if !c.is_control() => {
                self.chars.insert(self.cursor, c);
                self.cursor += 1;
                return true;
            }
            _ => {}
        }
        false
    }

    /// Deletes the character under the cursor.
    fn delete_forward(&mut self) -> bool {
        if self.cursor >= self.chars.len() {
            return false;
        }
        self.chars.remove(self.cursor);
        true
    }

    /// Deletes from `start` (before the cursor) to the cursor.
    fn delete_to(&mut self, start: usize) -> bool {
        if start >= self.cursor {
            return false;
        }
        self.chars.drain(start..self.cursor);
        self.cursor = start;
        true
    }

    fn word_start(&self) -> usize {
        let mut i = self.cursor;
        while i > 0 && self.chars[i - 1].is_whitespace() {
            i -= 1;
        }
        while i > 0 && !self.chars[i - 1].is_whitespace() {
            i -= 1;
        }
        i
    }

    fn word_end(&self) -> usize {
        let mut i = self.cursor;
        let n = self.chars.len();
        while i < n && self.chars[i].is_whitespace() {
            i += 1;
        }
        while i < n && !self.chars[i].is_whitespace() {
            i += 1;
        }
        i
    }

    /// The input as one line `"> text"` with the cursor shown as a reversed cell, scrolled
    /// so the cursor stays within `width` columns.
    pub fn line(&self, width: usize) -> Line<'static> {
        let avail = width.saturating_sub(2).max(1);
        // Keep the cursor in view: show the window of chars that ends at the cursor when the
        // text is wider than the box.
        let start = (self.cursor + 1).saturating_sub(avail);
        let end = (start + avail).min(self.chars.len());
        let before: String = self.chars[start..self.cursor].iter().collect();
        let at: String = self
            .chars
            .get(self.cursor)
            .map_or_else(|| " ".to_owned(), char::to_string);
        let after: String = if self.cursor < end {
            self.chars[self.cursor + 1..end].iter().collect()
        } else {
            String::new()
        };
        Line::from(vec![
            Span::raw("> "),
            Span::raw(before),
            Span::styled(at, style::cursor()),
            Span::raw(after),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    fn typed(s: &str) -> LineInput {
        let mut input = LineInput::default();
        for c in s.chars() {
            input.handle_key(&key(KeyCode::Char(c)));
        }
        input
    }

    #[test]
    fn typing_and_deleting_edit_at_the_cursor() {
        let mut input = typed("hello world");
        assert_eq!(input.value(), "hello world");
        assert!(input.handle_key(&ctrl('w')));
        assert_eq!(input.value(), "hello ");
        input.handle_key(&key(KeyCode::Home));
        input.handle_key(&key(KeyCode::Char('>')));
        assert_eq!(input.value(), ">hello ");
        input.handle_key(&key(KeyCode::Delete));
        assert_eq!(input.value(), ">ello ");
        input.handle_key(&ctrl('k'));
        assert_eq!(input.value(), ">");
        input.handle_key(&key(KeyCode::End));
        assert!(input.handle_key(&key(KeyCode::Backspace)));
        assert!(input.is_empty());
        assert!(!input.handle_key(&key(KeyCode::Backspace)));
        // Control characters never become text; unknown chords change nothing.
        assert!(!input.handle_key(&ctrl('x')));
        assert!(!input.handle_key(&key(KeyCode::Char('\u{7}'))));
        assert!(input.is_empty());
    }

    #[test]
    fn the_line_keeps_the_cursor_in_view() {
        let input = typed("abcdefghij");
        let text: String = input
            .line(8)
            .spans
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(text, "> fghij ");
    }
}
