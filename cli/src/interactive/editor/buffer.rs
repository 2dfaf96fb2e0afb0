//! The text being edited: one string (lines joined by `\n`) and the cursor, a byte offset
//! on a character boundary. Word moves stop where pi's do: after a run of word characters.

/// The editor's text and cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Buffer {
    text: String,
    /// Byte offset into `text`, always on a char boundary.
    cursor: usize,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl Buffer {
    /// `text` with the cursor at its end.
    pub fn new(text: &str) -> Buffer {
        Buffer {
            text: text.to_owned(),
            cursor: text.len(),
        }
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The cursor's byte offset.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The text before the cursor.
    pub fn before(&self) -> &str {
        &self.text[..self.cursor]
    }

    /// Whether there is no text.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the text; the cursor goes to its end.
    pub fn set(&mut self, text: &str) {
        *self = Buffer::new(text);
    }

    /// Inserts `s` at the cursor, leaving the cursor after it.
    pub fn insert(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
    }

    /// Removes `len` bytes before the cursor.
    pub fn remove_before(&mut self, len: usize) -> String {
        let start = self.cursor.saturating_sub(len);
        let removed = self.text[start..self.cursor].to_owned();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
        removed
    }

    fn prev_char(&self) -> Option<char> {
        self.text[..self.cursor].chars().next_back()
    }

    fn next_char(&self) -> Option<char> {
        self.text[self.cursor..].chars().next()
    }

    /// Backspace: the character before the cursor (a line break joins the lines).
    pub fn backspace(&mut self) {
        if let Some(c) = self.prev_char() {
            self.remove_before(c.len_utf8());
        }
    }

    /// Delete: the character after the cursor.
    pub fn delete(&mut self) {
        if let Some(c) = self.next_char() {
            self.text
                .replace_range(self.cursor..self.cursor + c.len_utf8(), "");
        }
    }

    /// One character left.
    pub fn left(&mut self) {
        if let Some(c) = self.prev_char() {
            self.cursor -= c.len_utf8();
        }
    }

    /// One character right.
    pub fn right(&mut self) {
        if let Some(c) = self.next_char() {
            self.cursor += c.len_utf8();
        }
    }

    /// Where a word move left lands: over non-word characters, then over the word.
    fn word_start(&self) -> usize {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(|c: char| !is_word(c));
        trimmed.trim_end_matches(is_word).len()
    }

    /// Where a word move right lands: over non-word characters, then over the word.
    fn word_end(&self) -> usize {
        let after = &self.text[self.cursor..];
        let skipped = after.trim_start_matches(|c: char| !is_word(c));
        let rest = skipped.trim_start_matches(is_word);
        self.text.len() - rest.len()
    }

    /// Alt+B: to the start of the word before the cursor.
    pub fn word_left(&mut self) {
        self.cursor = self.word_start();
    }

    /// Alt+F: to the end of the word after the cursor.
    pub fn word_right(&mut self) {
        self.cursor = self.word_end();
    }

    fn line_start_at(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end_at(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// Ctrl+A: the start of the current line.
    /// Moves the cursor onto the next `c` after the character under it (`forward`), or the
    /// last `c` before it; it stays when there is none (pi's `jumpToChar`).
    pub fn jump_to(&mut self, c: char, forward: bool) {
        let found = if forward {
            let from = self.text[self.cursor..]
                .chars()
                .next()
                .map_or(self.text.len(), |ch| self.cursor + ch.len_utf8());
            self.text[from..].find(c).map(|i| from + i)
        } else {
            self.text[..self.cursor].rfind(c)
        };
        if let Some(at) = found {
            self.cursor = at;
        }
    }

    pub fn line_start(&mut self) {
        self.cursor = self.line_start_at();
    }

    /// Ctrl+E: the end of the current line.
    pub fn line_end(&mut self) {
        self.cursor = self.line_end_at();
    }

    /// Ctrl+W: deletes the word before the cursor; returns it.
    pub fn delete_word_backward(&mut self) -> String {
        let start = self.word_start();
        self.remove_before(self.cursor - start)
    }

    /// Alt+D: deletes the word after the cursor; returns it.
    pub fn delete_word_forward(&mut self) -> String {
        let end = self.word_end();
        let removed = self.text[self.cursor..end].to_owned();
        self.text.replace_range(self.cursor..end, "");
        removed
    }

    /// Ctrl+U: deletes to the start of the line (at its start: the line break before).
    pub fn delete_to_line_start(&mut self) -> String {
        let start = self.line_start_at();
        if start == self.cursor {
            let mut removed = String::new();
            if self.cursor > 0 {
                removed = self.remove_before(1);
            }
            return removed;
        }
        self.remove_before(self.cursor - start)
    }

    /// Ctrl+K: deletes to the end of the line (at its end: the line break after).
    pub fn delete_to_line_end(&mut self) -> String {
        let mut end = self.line_end_at();
        if end == self.cursor && end < self.text.len() {
            end += 1;
        }
        let removed = self.text[self.cursor..end].to_owned();
        self.text.replace_range(self.cursor..end, "");
        removed
    }

    /// The cursor's line (0-based) and column in characters.
    pub fn line_col(&self) -> (usize, usize) {
        let before = &self.text[..self.cursor];
        let line = before.matches('\n').count();
        let col = before[self.line_start_at()..].chars().count();
        (line, col)
    }

    /// How many lines the text has.
    pub fn line_count(&self) -> usize {
        self.text.matches('\n').count() + 1
    }

    /// Up one line, keeping the column where the line is long enough; `false` on the first
    /// line (then Up browses the history).
    pub fn up(&mut self) -> bool {
        let (line, col) = self.line_col();
        if line == 0 {
            return false;
        }
        self.goto(line - 1, col);
        true
    }

    /// Down one line; `false` on the last line.
    pub fn down(&mut self) -> bool {
        let (line, col) = self.line_col();
        if line + 1 >= self.line_count() {
            return false;
        }
        self.goto(line + 1, col);
        true
    }

    fn goto(&mut self, line: usize, col: usize) {
        let mut start = 0;
        for (i, l) in self.text.split('\n').enumerate() {
            if i == line {
                let offset = l.char_indices().nth(col).map_or(l.len(), |(b, _)| b);
                self.cursor = start + offset;
                return;
            }
            start += l.len() + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, cursor: usize) -> Buffer {
        let mut b = Buffer::new(text);
        b.cursor = cursor;
        b
    }

    #[test]
    fn typing_and_deleting() {
        let mut b = Buffer::new("hé");
        b.insert("llo");
        assert_eq!((b.text(), b.cursor()), ("héllo", 6));
        b.left();
        b.left();
        b.backspace();
        assert_eq!(b.text(), "hélo");
        b.delete();
        assert_eq!(b.text(), "héo");
        b.insert("\n");
        assert_eq!((b.text(), b.line_col()), ("hé\no", (1, 0)));
        b.backspace();
        assert_eq!(b.text(), "héo");
    }

    #[test]
    fn words_and_lines() {
        let mut b = Buffer::new("one two  three");
        b.word_left();
        assert_eq!(b.cursor(), 9);
        b.word_left();
        assert_eq!(b.cursor(), 4);
        b.word_right();
        assert_eq!(b.cursor(), 7);
        assert_eq!(b.delete_word_backward(), "two");
        assert_eq!(b.text(), "one   three");
        assert_eq!(b.delete_word_forward(), "  three");
        assert_eq!(b.text(), "one ");

        let mut b = at("ab\ncd ef\ngh", 6);
        b.line_start();
        assert_eq!(b.cursor(), 3);
        b.line_end();
        assert_eq!(b.cursor(), 8);
        b.cursor = 5;
        assert_eq!(b.delete_to_line_end(), " ef");
        assert_eq!(b.delete_to_line_end(), "\n");
        assert_eq!(b.text(), "ab\ncdgh");
        assert_eq!(b.delete_to_line_start(), "cd");
        assert_eq!(b.delete_to_line_start(), "\n");
        assert_eq!(b.text(), "abgh");
    }

    #[test]
    fn up_and_down_keep_the_column() {
        let mut b = at("long line\nab\nthird line", 7);
        assert!(b.down());
        assert_eq!(b.line_col(), (1, 2));
        assert!(b.down());
        assert_eq!(b.line_col(), (2, 2));
        assert!(!b.down());
        assert!(b.up());
        assert!(b.up());
        assert!(!b.up());
        assert_eq!(b.line_col(), (0, 2));
    }
}
