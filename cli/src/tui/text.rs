//! Display-width helpers (pi-tui's `visibleWidth` and `truncateToWidth`) for one-line cells.

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
}
