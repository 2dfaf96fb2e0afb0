//! Output truncation shared by the tools, ported from pi's `core/tools/truncate.js`.
//!
//! Two independent limits, whichever is hit first: lines (2000) and UTF-8 bytes (50 KB). Head
//! truncation (reads) never returns a partial line; tail truncation (command output) may
//! return the end of a single over-long last line.

use serde::Serialize;

/// pi's `DEFAULT_MAX_LINES`: at most this many lines reach the model.
pub const DEFAULT_MAX_LINES: usize = 2000;

/// pi's `DEFAULT_MAX_BYTES`: at most this many UTF-8 bytes (50 KB) reach the model.
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;

/// pi's `GREP_MAX_LINE_LENGTH`: a grep line longer than this many UTF-16 code units is cut.
pub const GREP_MAX_LINE_LENGTH: usize = 500;

/// The two limits; [`Default`] is pi's 2000 lines / 50 KB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most lines kept.
    pub max_lines: usize,
    /// Most UTF-8 bytes kept (newlines between kept lines count).
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// Which limit cut the text (`"lines"` / `"bytes"` in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    /// The line limit.
    Lines,
    /// The byte limit.
    Bytes,
}

/// pi's `TruncationResult`; serializes with pi's keys and key order, as it appears in a
/// tool result's `details.truncation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// The text that was kept.
    pub content: String,
    /// Whether anything was cut.
    pub truncated: bool,
    /// Which limit cut it; `null` when nothing was cut.
    pub truncated_by: Option<TruncatedBy>,
    /// Lines in the input (`split("\n")` count, so a trailing newline adds an empty line).
    pub total_lines: usize,
    /// UTF-8 bytes in the input.
    pub total_bytes: usize,
    /// Lines kept.
    pub output_lines: usize,
    /// UTF-8 bytes kept.
    pub output_bytes: usize,
    /// Tail truncation only: the kept text is the end of one over-long line.
    pub last_line_partial: bool,
    /// Head truncation only: the first line alone is over the byte limit, nothing was kept.
    pub first_line_exceeds_limit: bool,
    /// The line limit used.
    pub max_lines: usize,
    /// The byte limit used.
    pub max_bytes: usize,
}

impl Truncation {
    fn untouched(content: &str, limits: Limits, total_lines: usize) -> Self {
        Self {
            content: content.to_owned(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes: content.len(),
            output_lines: total_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines: limits.max_lines,
            max_bytes: limits.max_bytes,
        }
    }
}

/// pi's `formatSize`: `512B`, `1.5KB`, `2.0MB` (one decimal, JavaScript `toFixed` rounding,
/// which rounds halves up).
pub fn format_size(bytes: usize) -> String {
    const KB: u128 = 1024;
    const MB: u128 = 1024 * 1024;
    let b = bytes as u128;
    // bytes/unit is exact in binary, so toFixed(1) rounds the exact value half up.
    let tenths = |unit: u128| (b * 10 + unit / 2) / unit;
    if b < KB {
        format!("{bytes}B")
    } else if b < MB {
        let t = tenths(KB);
        format!("{}.{}KB", t / 10, t % 10)
    } else {
        let t = tenths(MB);
        format!("{}.{}MB", t / 10, t % 10)
    }
}

/// pi's `truncateHead`: keeps the first lines that fit both limits, never a partial line.
/// When the first line alone is over the byte limit the result is empty with
/// `first_line_exceeds_limit`.
pub fn truncate_head(content: &str, limits: Limits) -> Truncation {
    let lines: Vec<&str> = content.split('\n').collect();
    let total_lines = lines.len();
    if total_lines <= limits.max_lines && content.len() <= limits.max_bytes {
        return Truncation::untouched(content, limits, total_lines);
    }
    let first_len = lines.first().map_or(0, |l| l.len());
    if first_len > limits.max_bytes {
        return Truncation {
            content: String::new(),
            truncated: true,
            truncated_by: Some(TruncatedBy::Bytes),
            total_lines,
            total_bytes: content.len(),
            output_lines: 0,
            output_bytes: 0,
            last_line_partial: false,
            first_line_exceeds_limit: true,
            max_lines: limits.max_lines,
            max_bytes: limits.max_bytes,
        };
    }
    let mut kept = 0usize;
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    for (i, line) in lines.iter().enumerate().take(limits.max_lines) {
        let cost = line.len() + usize::from(i > 0);
        if bytes + cost > limits.max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        kept += 1;
        bytes += cost;
    }
    if kept >= limits.max_lines && bytes <= limits.max_bytes {
        by = TruncatedBy::Lines;
    }
    let out = lines[..kept].join("\n");
    Truncation {
        output_bytes: out.len(),
        content: out,
        truncated: true,
        truncated_by: Some(by),
        total_lines,
        total_bytes: content.len(),
        output_lines: kept,
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines: limits.max_lines,
        max_bytes: limits.max_bytes,
    }
}

/// pi's `truncateTail`: keeps the last lines that fit both limits. When even the last line is
/// over the byte limit, its end is kept (cut at a character boundary) with
/// `last_line_partial`.
pub fn truncate_tail(content: &str, limits: Limits) -> Truncation {
    let lines: Vec<&str> = content.split('\n').collect();
    let total_lines = lines.len();
    if total_lines <= limits.max_lines && content.len() <= limits.max_bytes {
        return Truncation::untouched(content, limits, total_lines);
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    let mut last_line_partial = false;
    for line in lines.iter().rev() {
        if kept.len() >= limits.max_lines {
            break;
        }
        let cost = line.len() + usize::from(!kept.is_empty());
        if bytes + cost > limits.max_bytes {
            by = TruncatedBy::Bytes;
            if kept.is_empty() {
                let end = tail_at_char_boundary(line, limits.max_bytes);
                bytes = end.len();
                kept.push(end);
                last_line_partial = true;
            }
            break;
        }
        kept.push(line);
        bytes += cost;
    }
    if kept.len() >= limits.max_lines && bytes <= limits.max_bytes {
        by = TruncatedBy::Lines;
    }
    kept.reverse();
    let out = kept.join("\n");
    Truncation {
        output_bytes: out.len(),
        content: out,
        truncated: true,
        truncated_by: Some(by),
        total_lines,
        total_bytes: content.len(),
        output_lines: kept.len(),
        last_line_partial,
        first_line_exceeds_limit: false,
        max_lines: limits.max_lines,
        max_bytes: limits.max_bytes,
    }
}

/// pi's `truncateLine`: a line longer than `max_units` UTF-16 code units (JavaScript's
/// `length`) keeps its first `max_units` units, one fewer rather than half a surrogate pair
/// (pi's `sliceHead`), followed by `... [truncated]`. Returns the text and whether it was cut.
pub fn truncate_line(line: &str, max_units: usize) -> (std::borrow::Cow<'_, str>, bool) {
    let mut units = 0usize;
    let mut cut = None;
    for (i, c) in line.char_indices() {
        let width = c.len_utf16();
        if cut.is_none() && units + width > max_units {
            // A character that does not fit whole is left out (a pair is never split).
            cut = Some(i);
        }
        units += width;
        if units > max_units && cut.is_some() {
            break;
        }
    }
    match cut {
        Some(end) if units > max_units => (
            std::borrow::Cow::Owned(format!("{}... [truncated]", &line[..end])),
            true,
        ),
        _ => (std::borrow::Cow::Borrowed(line), false),
    }
}

/// The last `max_bytes` bytes of `s`, moved forward to the next character boundary.
fn tail_at_char_boundary(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut start = s.len() - max_bytes;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_size_matches_to_fixed() {
        assert_eq!(format_size(0), "0B");
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(1280), "1.3KB");
        assert_eq!(format_size(51200), "50.0KB");
        assert_eq!(format_size(60000), "58.6KB");
        assert_eq!(format_size(3 * 1024 * 1024 / 2), "1.5MB");
    }

    #[test]
    fn tail_keeps_end_of_long_line() {
        let t = truncate_tail(
            &"é".repeat(10),
            Limits {
                max_lines: 5,
                max_bytes: 5,
            },
        );
        assert_eq!(t.content, "éé");
        assert!(t.last_line_partial);
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
    }

    #[test]
    fn line_cut_like_slice_head() {
        let (t, cut) = truncate_line("abcdef", 4);
        assert_eq!((t.as_ref(), cut), ("abcd... [truncated]", true));
        let (t, cut) = truncate_line("abcd", 4);
        assert_eq!((t.as_ref(), cut), ("abcd", false));
        // U+1F600 is two UTF-16 units: at unit 3-4 it does not fit in 4 units whole.
        let (t, cut) = truncate_line("abc\u{1F600}x", 4);
        assert_eq!((t.as_ref(), cut), ("abc... [truncated]", true));
        // Exactly at the limit with a pair: 5 units long, fits in 5.
        let (t, cut) = truncate_line("abc\u{1F600}", 5);
        assert_eq!((t.as_ref(), cut), ("abc\u{1F600}", false));
    }

    #[test]
    fn head_by_lines() {
        let t = truncate_head(
            "a\nb\nc",
            Limits {
                max_lines: 2,
                max_bytes: 100,
            },
        );
        assert_eq!((t.content.as_str(), t.output_lines), ("a\nb", 2));
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
    }
}
