//! Where the transcript goes: above the editor's bottom area (the editor's printer erases
//! the area, prints, and draws it again while a read is in progress; it prints straight to
//! the terminal between reads). Every print is whole lines.

use std::io::Write;

use unicode_width::UnicodeWidthChar;

use super::scrollback::{Layout, Mark, Origin, Scrollback, shown_after};

/// The printer the editor hands over.
pub type Printer = super::editor::Printer;

/// The transcript's output.
pub struct Screen {
    printer: Option<Printer>,
    /// The last line printed was blank: blank lines never come in pairs (pi's spacers).
    last_blank: bool,
}

impl Screen {
    /// Prints through `printer` when there is one, else to stdout.
    pub fn new(printer: Option<Printer>) -> Screen {
        Screen {
            printer,
            last_blank: true,
        }
    }

    /// Prints `text` (one or more lines, the last one not blank).
    pub fn print(&mut self, text: &str) {
        self.last_blank = false;
        let rows = text.lines().map(str::to_owned).collect();
        self.write(text, |s| s.rows(rows, Origin::Other));
    }

    /// Writes `sequence` to the terminal as it is: only for pith's own control sequences
    /// (`/copy`'s OSC 52), never for text from a model, a tool or a file. Called between
    /// reads, when the editor does not draw.
    pub fn write_raw(&mut self, sequence: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(sequence.as_bytes());
        let _ = out.flush();
    }

    /// The editor printed a line (the prompt and what was typed).
    pub fn typed(&mut self) {
        self.last_blank = false;
    }

    fn write(&mut self, text: &str, keep: impl FnOnce(&mut Scrollback)) {
        let mut text = only_styles(text);
        if !text.ends_with('\n') {
            text.push('\n');
        }
        if let Some(p) = &self.printer {
            p.print(&text, keep);
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }

    /// Prints every line of `lines` at once (one redraw of the prompt); an empty string is a
    /// blank line, dropped when the line before is blank too. Kept in the scrollback as
    /// printed, for lines of no message ([`Screen::print_streamed`] for a streaming one).
    pub fn print_lines(&mut self, lines: &[String]) {
        self.print_kept(lines, Origin::Other, None);
    }

    /// [`Screen::print_lines`] for the lines of the message streaming now, which
    /// [`Screen::settle`] replaces once it ends.
    pub fn print_streamed(&mut self, lines: &[String]) {
        self.print_kept(lines, Origin::Streamed, None);
    }

    /// Prints `lines` and keeps `layout`, which renders them again for another view (a
    /// resize, Ctrl+T, Ctrl+O).
    pub fn print_layout(&mut self, lines: &[String], layout: Layout) {
        self.print_kept(lines, Origin::Other, Some(layout));
    }

    /// Prints what `layout` renders for the terminal as it is now, and keeps it.
    pub fn show(&mut self, layout: Layout) {
        let view = self
            .printer
            .as_ref()
            .and_then(|p| p.scrollback(|s| s.view(columns())))
            .unwrap_or_else(|| Scrollback::default().view(columns()));
        let lines = layout(&view);
        self.print_layout(&lines, layout);
    }

    fn print_kept(&mut self, lines: &[String], origin: Origin, layout: Option<Layout>) {
        let kept: Vec<&str> = lines
            .iter()
            .map(String::as_str)
            .filter(|line| shown_after(line, &mut self.last_blank))
            .collect();
        let keep = |s: &mut Scrollback| match layout {
            Some(layout) => s.layout(layout),
            None => s.rows(lines.to_vec(), origin),
        };
        if kept.is_empty() {
            if let Some(p) = &self.printer {
                p.scrollback(keep);
            }
            return;
        }
        let mut text = kept.join("\n");
        if kept.last() == Some(&"") {
            // `write` ends the text with a newline only when it has none: a blank last
            // line needs its own (it was the paragraph break lost while a reply streamed).
            text.push('\n');
        }
        self.write(&text, keep);
    }

    /// Where the lines of a message that starts streaming now begin.
    pub fn mark(&self) -> Mark {
        self.printer
            .as_ref()
            .and_then(|p| p.scrollback(|s| s.mark()))
            .unwrap_or(Mark::START)
    }

    /// The message streamed since `mark` ended: `layout` renders it whole from now on.
    pub fn settle(&mut self, mark: Mark, layout: Layout) {
        if let Some(p) = &self.printer {
            p.scrollback(|s| s.settle(mark, layout));
        }
    }

    /// Sets pi's display toggles (Ctrl+T, Ctrl+O) for what is laid out from now on.
    pub fn set_toggles(&mut self, hide_thinking: bool, expanded: bool) {
        if let Some(p) = &self.printer {
            p.scrollback(|s| {
                s.hide_thinking = hide_thinking;
                s.expanded = expanded;
            });
        }
    }

    /// Sets pi's display toggles and prints the whole transcript again with them, ending in
    /// `status` when given (a dim line; it replaces the status of a toggle just before, as
    /// pi's `showStatus` does).
    pub fn toggle(&mut self, hide_thinking: bool, expanded: bool, status: Option<&str>) {
        self.set_toggles(hide_thinking, expanded);
        let rows = status.map(|text| vec![String::new(), super::style::dim(text)]);
        match &self.printer {
            Some(p) => {
                if let Some(rows) = rows {
                    p.scrollback(|s| s.status(rows));
                    self.last_blank = false;
                }
                p.relayout();
            }
            None => {
                if let Some(rows) = rows {
                    self.print_lines(&rows);
                }
            }
        }
    }
}

/// `text` with every control character and escape sequence removed except SGR styles
/// (`ESC [ digits;… m`, all that pith's own `style` module writes), and tabs and newlines.
///
/// The last line of defence: what the transcript shows from a model, a tool or a file was
/// already passed through `pith_tools::sanitize::for_terminal` where it entered (which also
/// removes colours); this makes sure that nothing missed there can set the clipboard, the
/// window title or move the cursor.
pub fn only_styles(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '\u{1b}' {
            let sgr = rest[1..]
                .strip_prefix('[')
                .map(|r| {
                    r.len()
                        - r.trim_start_matches(|d: char| d.is_ascii_digit() || d == ';')
                            .len()
                })
                .filter(|&n| rest[2 + n..].starts_with('m'));
            if let Some(n) = sgr {
                out.push_str(&rest[..3 + n]);
                rest = &rest[3 + n..];
                continue;
            }
        } else if matches!(c, '\n' | '\t')
            || !(c.is_control() || (0xFFF9..=0xFFFB).contains(&u32::from(c)))
        {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The terminal's width in columns (80 when unknown).
pub fn columns() -> usize {
    match rustix::termios::tcgetwinsize(std::io::stdout()) {
        Ok(size) if size.ws_col > 0 => usize::from(size.ws_col),
        _ => 80,
    }
}

pub use crate::text::width;

/// `text` cut to `cols` columns, ending in `…` when cut.
pub fn truncate(text: &str, cols: usize) -> String {
    crate::text::truncate(text, cols, "…")
}

/// Splits the first row off `text` when it is wider than `cols`: at the last space that
/// keeps the row within `cols`, else hard at `cols`. `None` when `text` fits.
pub fn split_row(text: &str, cols: usize) -> Option<(String, String)> {
    let cols = cols.max(10);
    if width(text) <= cols {
        return None;
    }
    let mut used = 0;
    let mut cut = 0;
    let mut last_space = None;
    for (i, c) in text.char_indices() {
        let w = c.width().unwrap_or(0);
        if used + w > cols {
            break;
        }
        used += w;
        cut = i + c.len_utf8();
        if c == ' ' {
            last_space = Some(i);
        }
    }
    if text[cut..].starts_with(' ') {
        return Some((text[..cut].to_owned(), text[cut + 1..].to_owned()));
    }
    Some(match last_space {
        Some(i) if i > 0 => (text[..i].to_owned(), text[i + 1..].to_owned()),
        _ => (text[..cut].to_owned(), text[cut..].to_owned()),
    })
}

/// pi-tui's `wordWrapLine`: `line` cut into rows of at most `room` columns, as byte ranges
/// (at least one). A row ends after the last whitespace before a word when the word still
/// fits on the next row, or between two characters where either is wide (CJK breaks
/// anywhere); a word longer than a row is cut where the row is full.
pub fn word_wrap(line: &str, room: usize) -> Vec<(usize, usize)> {
    let mut chunks = Vec::new();
    let (mut start, mut used) = (0, 0);
    // Where a row may end: (byte index, columns before it).
    let mut opportunity: Option<(usize, usize)> = None;
    let mut chars = line.char_indices().peekable();
    while let Some((b, c)) = chars.next() {
        let w = c.width().unwrap_or(0);
        if used + w > room {
            match opportunity {
                Some((at, before)) if used - before + w <= room => {
                    chunks.push((start, at));
                    start = at;
                    used -= before;
                }
                _ if start < b => {
                    chunks.push((start, b));
                    start = b;
                    used = 0;
                }
                _ => {}
            }
            opportunity = None;
        }
        used += w;
        if let Some(&(next_b, next)) = chars.peek() {
            let breaks = if c.is_whitespace() {
                !next.is_whitespace()
            } else {
                !next.is_whitespace() && (w > 1 || next.width().unwrap_or(0) > 1)
            };
            if breaks {
                opportunity = Some((next_b, used));
            }
        }
    }
    chunks.push((start, line.len()));
    chunks
}

/// pi's `formatTokens` (footer): 999, 1.2k, 45k, 1.5M, 12M.
pub fn format_tokens(count: u64) -> String {
    let n = count as f64;
    match count {
        0..1_000 => count.to_string(),
        1_000..10_000 => format!("{:.1}k", n / 1_000.0),
        10_000..1_000_000 => format!("{}k", (n / 1_000.0).round()),
        1_000_000..10_000_000 => format!("{:.1}M", n / 1_000_000.0),
        _ => format!("{}M", (n / 1_000_000.0).round()),
    }
}

/// JavaScript's `toLocaleString()` for an integer in en-US: `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pith_styles_reach_the_terminal() {
        assert_eq!(
            only_styles("\u{1b}[1m> hi\u{1b}[22m\ttab\nline"),
            "\u{1b}[1m> hi\u{1b}[22m\ttab\nline"
        );
        // OSC 52 (clipboard), a title, cursor moves, C1 controls: their escapes are gone.
        assert_eq!(
            only_styles("a\u{1b}]52;c;aGk=\u{7}b\u{1b}[2Jc\u{9b}31md\r"),
            "a]52;c;aGk=b[2Jc31md"
        );
    }

    #[test]
    fn rows_break_at_the_last_space() {
        assert_eq!(split_row("short", 10), None);
        assert_eq!(
            split_row("the quick brown fox jumps", 12),
            Some(("the quick".into(), "brown fox jumps".into()))
        );
        assert_eq!(
            split_row("the quick brown", 9),
            Some(("the quick".into(), "brown".into()))
        );
        assert_eq!(
            split_row("abcdefghijklmnop", 10),
            Some(("abcdefghij".into(), "klmnop".into()))
        );
    }

    #[test]
    fn numbers_read_as_pi_prints_them() {
        assert_eq!(
            [0, 999, 1_234, 45_600, 1_500_000, 12_000_000].map(format_tokens),
            ["0", "999", "1.2k", "46k", "1.5M", "12M"]
        );
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(12), "12");
        assert_eq!(truncate("abcdef", 4), "abc…");
    }
}
