//! The bottom area: the status line, the editor's rows and the completion menu, laid out
//! for the terminal's width and redrawn in place. Output above it (the transcript) erases
//! the area, prints, and draws it again; nothing of it ever scrolls into the transcript
//! except the editor's rows of a sent prompt.

use std::io::Write;

use unicode_width::UnicodeWidthChar;

/// The rows to draw and where the cursor goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Each row, at most the width given to [`layout`] columns wide (styles included).
    pub rows: Vec<String>,
    /// The cursor's row and column within `rows`.
    pub cursor: (usize, usize),
}

impl Frame {
    /// At most `rows` rows: a frame taller than the screen could not be erased, so only the
    /// rows around the cursor are kept (the cursor's row last when it is far down).
    pub fn window(self, rows: usize) -> Frame {
        if self.rows.len() <= rows {
            return self;
        }
        let first = (self.cursor.0 + 1).saturating_sub(rows);
        Frame {
            rows: self.rows.into_iter().skip(first).take(rows).collect(),
            cursor: (self.cursor.0 - first, self.cursor.1),
        }
    }
}

/// Lays out `status` (one row, already fitted, after a blank one), then `prompt` and `text` wrapped to
/// `width` columns (continuation lines indented by the prompt's width), then the `menu`
/// rows; the cursor goes to byte offset `cursor` of `text`.
pub fn layout(
    status: Option<&str>,
    prompt: &str,
    text: &str,
    cursor: usize,
    menu: &[String],
    width: usize,
) -> Frame {
    // A blank row keeps the status apart from the transcript (pi's `Loader` has one).
    let mut rows: Vec<String> = status
        .map(|s| vec![String::new(), s.to_owned()])
        .unwrap_or_default();
    let indent = super::super::screen::width(prompt);
    let room = width.saturating_sub(indent).max(1);
    let mut at = (rows.len(), indent);
    let mut offset = 0;
    for (i, line) in text.split('\n').enumerate() {
        let chunks = super::super::screen::word_wrap(line, room);
        let last = chunks.len() - 1;
        for (k, &(start, end)) in chunks.iter().enumerate() {
            let mut row = if i == 0 && k == 0 {
                prompt.to_owned()
            } else {
                " ".repeat(indent)
            };
            let mut used = 0;
            for (b, c) in line[start..end].char_indices() {
                if offset + start + b == cursor {
                    at = (rows.len(), indent + used);
                }
                // The text may come from a file or a session (Ctrl+G, /fork): a control
                // character is shown, never sent to the terminal.
                row.push(if c.is_control() { '?' } else { c });
                used += c.width().unwrap_or(0);
            }
            if k == last && offset + end == cursor {
                at = (rows.len(), indent + used);
            }
            rows.push(row);
        }
        offset += line.len() + 1;
    }
    rows.extend(menu.iter().cloned());
    Frame { rows, cursor: at }
}

/// The status row's index in a frame [`layout`] made with a status (after the blank row).
pub const STATUS_ROW: usize = 1;

/// At most this many rows of the reply's unfinished line are shown above the status.
pub const LIVE_ROWS: usize = 8;

/// The unfinished last line of a streaming reply, wrapped to `width` columns at word
/// boundaries: its last [`LIVE_ROWS`] rows (plain text; control characters shown as `?`).
pub fn live_rows(text: &str, width: usize) -> Vec<String> {
    let mut rest: String = text
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    let mut rows = Vec::new();
    while let Some((row, more)) = super::super::screen::split_row(&rest, width) {
        rows.push(row);
        rest = more;
    }
    if !rest.is_empty() {
        rows.push(rest);
    }
    let skip = rows.len().saturating_sub(LIVE_ROWS);
    rows.split_off(skip)
}

/// What is on the screen of the bottom area.
#[derive(Debug, Default)]
pub struct Surface {
    /// How many rows the area has now (0: not drawn).
    rows: usize,
    /// The row the cursor is on, within the area.
    cursor_row: usize,
    /// The area has a status row first.
    status: bool,
    /// What the status row shows, so an unchanged one is not written again.
    status_row: String,
    /// The status row's index within the area.
    status_at: usize,
    /// The columns each drawn row takes, for working out where a resize moved them.
    widths: Vec<usize>,
    /// The cursor's column.
    cursor_col: usize,
}

impl Surface {
    /// Whether the area is on the screen.
    pub fn drawn(&self) -> bool {
        self.rows > 0
    }

    /// Appends to `out` what removes the area: up to its first row, clear to the end of
    /// the screen. The cursor is left at the start of that row.
    pub fn erase(&mut self, out: &mut String) {
        if self.rows == 0 {
            return;
        }
        out.push('\r');
        if self.cursor_row > 0 {
            out.push_str(&format!("\x1b[{}A", self.cursor_row));
        }
        out.push_str("\x1b[J");
        self.rows = 0;
        self.cursor_row = 0;
    }

    /// Appends to `out` what draws `frame` from the cursor's row (erased first); `status_at`
    /// is the status row's index in it, when it has one.
    pub fn draw(&mut self, frame: &Frame, status_at: Option<usize>, out: &mut String) {
        self.erase(out);
        for (i, row) in frame.rows.iter().enumerate() {
            if i > 0 {
                out.push_str("\r\n");
            }
            out.push_str(row);
        }
        let last = frame.rows.len().saturating_sub(1);
        let (row, col) = frame.cursor;
        if last > row {
            out.push_str(&format!("\x1b[{}A", last - row));
        }
        out.push('\r');
        if col > 0 {
            out.push_str(&format!("\x1b[{col}C"));
        }
        self.rows = frame.rows.len().max(1);
        self.cursor_row = row;
        self.cursor_col = col;
        self.widths = frame.rows.iter().map(|r| width(r)).collect();
        self.status = status_at.is_some();
        self.status_at = status_at.unwrap_or(0);
        self.status_row = status_at
            .and_then(|at| frame.rows.get(at).cloned())
            .unwrap_or_default();
    }

    /// Appends to `out` what rewrites the status row alone (the spinner's next frame, the
    /// countdown's next second); `false` when the area has no status row.
    pub fn redraw_status(&mut self, status: &str, out: &mut String) -> bool {
        if !self.status || self.rows == 0 {
            return false;
        }
        if self.status_row == status {
            return true;
        }
        self.status_row = status.to_owned();
        out.push_str("\x1b7");
        let up = self.cursor_row.saturating_sub(self.status_at);
        if up > 0 {
            out.push_str(&format!("\x1b[{up}A"));
        }
        out.push('\r');
        out.push_str(status);
        out.push_str("\x1b[K\x1b8");
        true
    }

    /// The terminal is now `columns` wide and has reflowed the area's rows, as tmux, kitty,
    /// VTE, iTerm2 and Alacritty do: each row takes as many rows of the new width as its
    /// text needs, and the cursor stays on its character. Works out how far up the area now
    /// starts, so that the next erase removes all of it.
    pub fn reflowed(&mut self, columns: usize) {
        if self.rows == 0 {
            return;
        }
        let columns = columns.max(1);
        let height = |w: usize| w.div_ceil(columns).max(1);
        let above: usize = self
            .widths
            .iter()
            .take(self.cursor_row)
            .map(|&w| height(w))
            .sum();
        self.cursor_row = above + self.cursor_col / columns;
        self.cursor_col %= columns;
        self.rows = self.widths.iter().map(|&w| height(w)).sum::<usize>().max(1);
        // The status row moved too; it is drawn again whole with the area.
        self.status = false;
    }

    /// Forgets the area without touching the screen (what was drawn stays, as the
    /// transcript's last lines).
    pub fn leave(&mut self) {
        self.rows = 0;
        self.cursor_row = 0;
        self.status = false;
        self.widths.clear();
    }
}

/// Columns `row` takes, its SGR styles left out.
pub fn width(row: &str) -> usize {
    super::super::screen::width(&strip_sgr(row))
}

fn strip_sgr(row: &str) -> String {
    let mut out = String::with_capacity(row.len());
    let mut rest = row;
    while let Some(at) = rest.find("\x1b[") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        match after.find('m') {
            Some(end) => rest = &after[end + 1..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Writes `text` to the terminal at once.
pub fn write(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_wrap_under_the_prompt_and_the_cursor_follows() {
        let f = layout(None, "> ", "abcdefgh", 8, &[], 6);
        assert_eq!(f.rows, ["> abcd", "  efgh"]);
        assert_eq!(f.cursor, (1, 6));
        // Rows end between words, as pi-tui's editor wraps them; the space stays on the
        // row it ends, and a cursor after it is at the start of the next row.
        let f = layout(None, "> ", "the quick brown fox", 4, &[], 12);
        assert_eq!(f.rows, ["> the quick ", "  brown fox"]);
        assert_eq!(f.cursor, (0, 6));
        let f = layout(None, "> ", "the quick brown fox", 10, &[], 12);
        assert_eq!(f.cursor, (1, 2));
        // A word longer than a row is cut where the row is full.
        let f = layout(None, "> ", "a verylongword", 14, &[], 8);
        assert_eq!(f.rows, ["> a ", "  verylo", "  ngword"]);
        assert_eq!(f.cursor, (2, 8));
        let f = layout(Some("⠋ Working"), "> ", "ab\ncd", 3, &["menu".into()], 40);
        assert_eq!(f.rows, ["", "⠋ Working", "> ab", "  cd", "menu"]);
        assert_eq!(f.cursor, (3, 2));
        let f = layout(None, "> ", "", 0, &[], 40);
        assert_eq!((f.rows, f.cursor), (vec!["> ".to_owned()], (0, 2)));
        // Wide characters never split a column pair.
        let f = layout(None, "> ", "日本語", 3, &[], 6);
        assert_eq!(f.rows, ["> 日本", "  語"]);
        assert_eq!(f.cursor, (0, 4));
        // Control characters are shown as `?`, never written.
        let f = layout(None, "> ", "a\u{1b}[2Jb\tc", 0, &[], 40);
        assert_eq!(f.rows, ["> a?[2Jb?c"]);
    }

    #[test]
    fn a_frame_taller_than_the_screen_keeps_the_rows_up_to_the_cursor() {
        let text = "1\n2\n3\n4\n5";
        let f = layout(None, "> ", text, 7, &[], 40).window(3);
        assert_eq!(
            (f.rows, f.cursor),
            (vec!["  2".into(), "  3".into(), "  4".into()], (2, 3))
        );
        let f = layout(None, "> ", text, 1, &[], 40).window(3);
        assert_eq!(
            (f.rows, f.cursor),
            (vec!["> 1".into(), "  2".into(), "  3".into()], (0, 3))
        );
    }

    #[test]
    fn the_area_is_erased_from_its_first_row() {
        let mut s = Surface::default();
        let mut out = String::new();
        let f = layout(Some("st"), "> ", "a\nb", 1, &[], 40);
        s.draw(&f, Some(STATUS_ROW), &mut out);
        assert_eq!(out, "\r\nst\r\n> a\r\n  b\x1b[1A\r\x1b[3C");
        out.clear();
        assert!(s.redraw_status("st2", &mut out));
        assert_eq!(out, "\x1b7\x1b[1A\rst2\x1b[K\x1b8");
        out.clear();
        // The same status again writes nothing.
        assert!(s.redraw_status("st2", &mut out));
        assert_eq!(out, "");
        s.erase(&mut out);
        assert_eq!(out, "\r\x1b[2A\x1b[J");
        assert!(!s.drawn());
    }
}

#[cfg(test)]
mod reflow_tests {
    use super::*;

    #[test]
    fn a_narrower_terminal_wraps_long_rows_and_the_erase_goes_up_past_them() {
        let mut s = Surface::default();
        let frame = Frame {
            rows: vec![String::new(), "s".repeat(30), "x".repeat(100)],
            cursor: (2, 50),
        };
        let mut out = String::new();
        s.draw(&frame, Some(1), &mut out);
        s.reflowed(40);
        // Rows of 1, 1 and 3 lines; the cursor is on the second line of the third.
        let mut out = String::new();
        s.erase(&mut out);
        assert_eq!(out, "\r\x1b[3A\x1b[J");
        // Widening back joins the lines again: one row each.
        s.draw(&frame, Some(1), &mut String::new());
        s.reflowed(200);
        let mut out = String::new();
        s.erase(&mut out);
        assert_eq!(out, "\r\x1b[2A\x1b[J");
    }
}
