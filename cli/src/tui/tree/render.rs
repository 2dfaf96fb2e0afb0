//! Drawing the tree view (pi's `TreeSelectorComponent` and `TreeList.render`), plus the
//! summary prompt and the instructions box, which pi shows as separate dialogs.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use ratatui::Frame;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::layout::Row;
use super::nodes::Tone;
use super::state::{Mode, SUMMARY_CHOICES, TreeState};
use crate::text::{truncate, truncate_spans};
use crate::tui::style;

/// Lines around the tree rows: borders, title, help, search, blank, status, blank.
pub const CHROME_ROWS: usize = 9;

/// The help line under the title (pi's, with its default keys).
pub const KEYS_LINE: &str = "  ↑/↓: move. ←/→: page. ^←/^→ or Alt+←/Alt+→: fold/branch. shift+l: label. \
ctrl+d/ctrl+t/ctrl+u/ctrl+l/ctrl+a: filters (ctrl+o/shift+ctrl+o cycle). shift+t: label time";

/// Draws the view on `frame`; label times use `tz` and `now`.
pub fn draw(frame: &mut Frame<'_>, state: &TreeState, tz: &TimeZone, now: Timestamp) {
    let area = frame.area();
    let lines = lines(state, area.width as usize, tz, now);
    frame.render_widget(Paragraph::new(lines), area);
}

fn tone(t: Tone) -> Style {
    match t {
        Tone::Text => Style::new(),
        Tone::Accent | Tone::Border => style::accent(),
        Tone::Success => style::success(),
        Tone::Muted => style::muted(),
        Tone::Dim => style::dim(),
        Tone::Error => style::error(),
        Tone::Warning => style::warning(),
        Tone::Custom => style::bold().patch(style::accent()),
    }
}

/// The view as lines `width` columns wide.
pub fn lines(state: &TreeState, width: usize, tz: &TimeZone, now: Timestamp) -> Vec<Line<'static>> {
    let border = Line::styled("─".repeat(width.max(1)), style::dim());
    let mut out = vec![
        border.clone(),
        Line::styled("   Session Tree", style::bold()),
        Line::styled(truncate(KEYS_LINE, width, "..."), style::muted()),
    ];
    let mut search = vec![Span::styled("  Type to search:", style::muted())];
    if !state.search.is_empty() {
        search.push(Span::styled(format!(" {}", state.search), style::accent()));
    }
    out.push(Line::from(search));
    out.push(border.clone());
    out.push(Line::default());
    match &state.mode {
        Mode::List => out.extend(tree_lines(state, width, tz, now)),
        Mode::Label { input, .. } => {
            out.push(Line::styled("  Label (empty to remove):", style::muted()));
            let mut line = input.line(width.saturating_sub(2));
            line.spans.insert(0, Span::raw("  "));
            out.push(line);
            out.push(hint_line(
                &[("enter", "save"), ("escape/ctrl+c", "cancel")],
                "  ",
            ));
        }
        Mode::Summary { choice, .. } => {
            out.push(Line::styled(
                " Summarize branch?",
                style::bold().patch(style::accent()),
            ));
            out.push(Line::default());
            for (i, c) in SUMMARY_CHOICES.iter().enumerate() {
                out.push(if i == *choice {
                    Line::styled(format!(" → {c}"), style::accent())
                } else {
                    Line::raw(format!("   {c}"))
                });
            }
            out.push(Line::default());
            out.push(hint_line(
                &[
                    ("↑↓", "navigate"),
                    ("enter", "select"),
                    ("escape/ctrl+c", "back to tree"),
                ],
                "  ",
            ));
        }
        Mode::Instructions { input, .. } => {
            out.push(Line::styled(
                " Custom summarization instructions",
                style::bold().patch(style::accent()),
            ));
            out.push(Line::default());
            out.push(input.line(width));
            out.push(Line::default());
            out.push(hint_line(
                &[("enter", "submit"), ("escape/ctrl+c", "back")],
                "  ",
            ));
        }
    }
    out.push(Line::default());
    out.push(border);
    out
}

fn hint_line(pairs: &[(&str, &str)], sep: &str) -> Line<'static> {
    let mut spans = vec![Span::raw(" ")];
    for (n, (key, desc)) in pairs.iter().enumerate() {
        if n > 0 {
            spans.push(Span::raw(sep.to_owned()));
        }
        spans.push(Span::styled(key.to_string(), style::dim()));
        spans.push(Span::styled(format!(" {desc}"), style::muted()));
    }
    Line::from(spans)
}

fn status_tags(state: &TreeState) -> String {
    let mut s = state.filter.tag().to_owned();
    if state.show_label_times {
        s.push_str(" [+label time]");
    }
    s
}

fn tree_lines(
    state: &TreeState,
    width: usize,
    tz: &TimeZone,
    now: Timestamp,
) -> Vec<Line<'static>> {
    let rows = &state.layout.rows;
    if rows.is_empty() {
        return vec![
            Line::styled(truncate("  No entries found", width, "..."), style::muted()),
            Line::styled(
                truncate(&format!("  (0/0){}", status_tags(state)), width, "..."),
                style::muted(),
            ),
        ];
    }
    let max = state.max_visible;
    let start = state
        .selected
        .saturating_sub(max / 2)
        .min(rows.len().saturating_sub(max));
    let end = (start + max).min(rows.len());
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate().take(end).skip(start) {
        out.push(row_line(state, row, i == state.selected, width, tz, now));
    }
    out.push(Line::styled(
        truncate(
            &format!(
                "  ({}/{}){}",
                state.selected + 1,
                rows.len(),
                status_tags(state)
            ),
            width,
            "...",
        ),
        style::muted(),
    ));
    out
}

/// The connector/gutter prefix of a row (pi builds it character by character).
pub fn prefix(state: &TreeState, row: &Row) -> String {
    let layout = &state.layout;
    let display_indent = if layout.multiple_roots {
        row.indent.saturating_sub(1)
    } else {
        row.indent
    };
    let connector = row.show_connector && !row.is_virtual_root_child;
    let connector_at = connector.then(|| display_indent as isize - 1);
    let folded = state.folded.contains(&row.node);
    let mut s = String::new();
    for i in 0..display_indent * 3 {
        let (level, pos) = (i / 3, i % 3);
        if let Some(g) = row.gutters.iter().find(|g| g.position == level) {
            s.push(if pos == 0 && g.show { '│' } else { ' ' });
        } else if connector_at == Some(level as isize) {
            s.push(match pos {
                0 if row.is_last => '└',
                0 => '├',
                1 if folded => '⊞',
                1 if layout.is_foldable(row.node) => '⊟',
                1 => '─',
                _ => ' ',
            });
        } else {
            s.push(' ');
        }
    }
    s
}

fn row_line(
    state: &TreeState,
    row: &Row,
    selected: bool,
    width: usize,
    tz: &TimeZone,
    now: Timestamp,
) -> Line<'static> {
    let node = &state.nodes[row.node];
    let mut spans = vec![if selected {
        Span::styled("› ", style::accent())
    } else {
        Span::raw("  ")
    }];
    spans.push(Span::styled(prefix(state, row), style::dim()));
    let shows_fold_in_connector = row.show_connector && !row.is_virtual_root_child;
    if state.folded.contains(&row.node) && !shows_fold_in_connector {
        spans.push(Span::styled("⊞ ", style::accent()));
    }
    if state.active[row.node] {
        spans.push(Span::styled("• ", style::accent()));
    }
    if let Some(label) = &node.label {
        spans.push(Span::styled(format!("[{label}] "), style::warning()));
        if state.show_label_times
            && let Some(t) = node
                .label_time
                .as_deref()
                .and_then(|t| format_label_time(t, tz, now))
        {
            spans.push(Span::styled(format!("{t} "), style::muted()));
        }
    }
    for (t, text) in &node.display {
        let mut s = tone(*t);
        if selected {
            s = s.patch(style::bold());
        }
        spans.push(Span::styled(text.clone(), s));
    }
    let mut line = Line::from(truncate_spans(spans, width, "..."));
    if selected {
        line = line.patch_style(style::selected());
    }
    line
}

/// pi's `formatLabelTimestamp` in local time: `HH:MM` today, `M/D HH:MM` this year, else
/// `YY/M/D HH:MM`. `None` for an unparsable time.
pub fn format_label_time(iso: &str, tz: &TimeZone, now: Timestamp) -> Option<String> {
    let t: Timestamp = iso.parse().ok()?;
    let d = t.to_zoned(tz.clone());
    let n = now.to_zoned(tz.clone());
    let time = format!("{:02}:{:02}", d.hour(), d.minute());
    if d.date() == n.date() {
        return Some(time);
    }
    if d.year() == n.year() {
        return Some(format!("{}/{} {time}", d.month(), d.day()));
    }
    Some(format!(
        "{:02}/{}/{} {time}",
        d.year().rem_euclid(100),
        d.month(),
        d.day()
    ))
}
