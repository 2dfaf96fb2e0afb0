//! Text for terminals and pages, in one home: display widths and truncation (pi-tui's
//! `visibleWidth` and `truncateToWidth`), and the ways a session's text is made one line
//! (for the full-screen views, `pith session` output, and the HTML export's rows).

use std::borrow::Cow;

use ratatui::text::Span;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Columns `s` takes on a terminal.
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// `s` cut to at most `max` columns; when cut, it ends in `ellipsis` (pi-tui's
/// `truncateToWidth`: `"…"` in the picker, `"..."` in the tree, `""` for none).
pub fn truncate(s: &str, max: usize, ellipsis: &str) -> String {
    if width(s) <= max {
        return s.to_owned();
    }
    let tail = width(ellipsis);
    if tail > max {
        return String::new();
    }
    let budget = max - tail;
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > budget {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push_str(ellipsis);
    out
}

/// A run of spans cut to `max` columns, ending in `ellipsis` (styled like the span it cuts)
/// when anything was cut.
pub fn truncate_spans(spans: Vec<Span<'static>>, max: usize, ellipsis: &str) -> Vec<Span<'static>> {
    let total: usize = spans.iter().map(|s| width(&s.content)).sum();
    if total <= max {
        return spans;
    }
    let budget = max.saturating_sub(width(ellipsis));
    let mut used = 0;
    let mut out = Vec::new();
    for s in spans {
        let w = width(&s.content);
        if used + w <= budget {
            used += w;
            out.push(s);
            continue;
        }
        let mut cut = truncate(&s.content, budget - used, "");
        if width(ellipsis) <= max {
            cut.push_str(ellipsis);
        }
        out.push(Span::styled(cut, s.style));
        break;
    }
    out
}

/// Control characters (C0, DEL, C1) replaced by spaces, then trimmed: one display line.
pub fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

/// `s` with control characters (terminal escapes, newlines) shown escaped, so text from a
/// session file can never drive the terminal or break a table.
pub fn printable(s: &str) -> Cow<'_, str> {
    // Most text has none: a listing of 10,000 sessions copied 30,000 strings for nothing.
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// First non-blank line of `s`, made [`printable`], cut to `max` characters with an ellipsis.
pub fn first_line(s: &str, max: usize) -> String {
    let line = s
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    // Only the part that can be shown is escaped: a first message can be a whole file.
    let line = printable(match line.char_indices().nth(max + 1) {
        Some((end, _)) => &line[..end],
        None => line,
    });
    if line.chars().count() <= max {
        line.into_owned()
    } else {
        let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

/// The first `max` characters of `text` with line breaks and tabs turned into spaces and the
/// ends trimmed, plus `...` when something was cut (pi's `truncate(normalize(…))` of the HTML
/// export).
pub fn normalized_prefix(text: &str, max: usize) -> String {
    let trimmed = text.trim();
    let mut out: String = trimmed
        .chars()
        .take(max)
        .map(|c| {
            if matches!(c, '\n' | '\t' | '\r') {
                ' '
            } else {
                c
            }
        })
        .collect();
    if trimmed.chars().nth(max).is_some() {
        out.push_str("...");
    }
    out
}

/// One line for an extension's notice in the print and interactive modes.
pub fn extension_notice(notice: &pith_actors::event::ExtensionNotice) -> String {
    use pith_actors::event::ExtensionNotice;
    match notice {
        ExtensionNotice::Error {
            extension,
            event,
            error,
        } => format!("extension {extension} ({event}): {error}"),
        ExtensionNotice::UiRequest { method, params, .. } => {
            let text = params
                .get("message")
                .or_else(|| params.get("text"))
                .or_else(|| params.get("title"))
                .and_then(|v| v.as_str())
                .unwrap_or_default();
            format!("extension {method}: {text}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_counts_columns_not_bytes() {
        assert_eq!(truncate("hello", 5, "…"), "hello");
        assert_eq!(truncate("hello world", 6, "…"), "hello…");
        assert_eq!(truncate("hello world", 6, "..."), "hel...");
        assert_eq!(truncate("日本語です", 5, "…"), "日本…");
        assert_eq!(truncate("日本語です", 5, ""), "日本");
        assert_eq!(one_line("a\nb\tc\u{7f} "), "a b c");
    }

    #[test]
    fn first_lines_escape_controls_and_cut_at_max_characters() {
        assert_eq!(first_line("\n  \n  hello  \nnext", 5), "hello");
        assert_eq!(first_line("hello!", 5), "hell…");
        assert_eq!(first_line("héllo", 5), "héllo");
        // Escapes count as what is shown: `\u{1b}` is six characters.
        assert_eq!(first_line("a\u{1b}", 7), "a\\u{1b}");
        assert_eq!(first_line("a\u{1b}", 6), "a\\u{1…");
        assert_eq!(first_line("a\u{1b}bcdefgh", 8), "a\\u{1b}…");
        assert_eq!(printable("x\ty"), "x\\ty");
    }

    #[test]
    fn normalized_prefixes_cut_and_flatten() {
        assert_eq!(normalized_prefix("  a\nb\tc  ", 10), "a b c");
        assert_eq!(normalized_prefix("abcdef", 3), "abc...");
        assert_eq!(normalized_prefix("äöü", 3), "äöü");
    }
}
