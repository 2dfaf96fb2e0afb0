//! Drawing the picker: pi's `SessionSelectorHeader` and `SessionList.render`, one line each,
//! filling the screen (pi shows 10 rows; pith shows as many as fit).

use ratatui::Frame;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::state::{NameFilter, PickerState, Scope};
use crate::text::{one_line, truncate, truncate_spans, width};
use crate::tui::style;

/// What rendering needs from outside the state, fixed in tests.
#[derive(Debug, Clone)]
pub struct RenderEnv {
    /// "Now" in ms since the epoch, for the age column.
    pub now_ms: f64,
    /// The home directory, shown as `~`.
    pub home: Option<String>,
}

impl RenderEnv {
    /// The real clock and `$HOME`.
    pub fn system() -> RenderEnv {
        RenderEnv {
            now_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_millis() as f64),
            home: std::env::var("HOME").ok().filter(|h| !h.is_empty()),
        }
    }

    fn shorten(&self, path: &str) -> String {
        match &self.home {
            Some(h) if path.starts_with(h.as_str()) => format!("~{}", &path[h.len()..]),
            _ => path.to_owned(),
        }
    }
}

/// Lines above and below the list: borders, blanks, header, hints, search box, indicator.
pub const CHROME_ROWS: usize = 11;

/// pi's `formatSessionDate`: `now`, `5m`, `3h`, `2d`, `1w`, `4mo`, `1y`.
pub fn format_age(modified_ms: f64, now_ms: f64) -> String {
    let diff = now_ms - modified_ms;
    let mins = (diff / 60_000.0).floor();
    let hours = (diff / 3_600_000.0).floor();
    let days = (diff / 86_400_000.0).floor();
    if diff.is_nan() {
        // JavaScript's comparisons with NaN all fail, which lands on the last branch.
        return "NaNy".into();
    }
    if mins < 1.0 {
        "now".into()
    } else if mins < 60.0 {
        format!("{mins}m")
    } else if hours < 24.0 {
        format!("{hours}h")
    } else if days < 7.0 {
        format!("{days}d")
    } else if days < 30.0 {
        format!("{}w", (days / 7.0).floor())
    } else if days < 365.0 {
        format!("{}mo", (days / 30.0).floor())
    } else {
        format!("{}y", (days / 365.0).floor())
    }
}

/// Draws the whole picker on `frame`.
pub fn draw(frame: &mut Frame<'_>, state: &PickerState, env: &RenderEnv) {
    let area = frame.area();
    let lines = lines(state, env, area.width as usize);
    frame.render_widget(Paragraph::new(lines), area);
}

/// The picker as lines `width` columns wide.
pub fn lines(state: &PickerState, env: &RenderEnv, width: usize) -> Vec<Line<'static>> {
    let border = Line::styled("─".repeat(width.max(1)), style::accent());
    let mut out = vec![border.clone(), Line::default()];
    if let Some((_, input)) = &state.rename {
        out.push(Line::styled(" Rename Session", style::bold()));
        out.push(Line::default());
        out.push(input.line(width));
        out.push(Line::default());
        out.push(Line::styled(
            " enter to save · escape/ctrl+c to cancel",
            style::muted(),
        ));
    } else {
        out.extend(header(state, width));
        out.push(Line::default());
        out.push(state.query.line(width));
        out.push(Line::default());
        out.extend(list(state, env, width));
    }
    out.push(Line::default());
    out.push(border);
    out
}

fn header(state: &PickerState, width: usize) -> Vec<Line<'static>> {
    let title = match state.scope {
        Scope::Current => "Resume Session (Current Folder)",
        Scope::All => "Resume Session (All)",
    };
    let mut right: Vec<Span<'static>> = Vec::new();
    if let Some((loaded, total)) = state.loading() {
        let progress = if total > 0 {
            format!("{loaded}/{total}")
        } else {
            "...".into()
        };
        right.push(Span::styled("○ Current Folder | ", style::muted()));
        right.push(Span::styled(format!("Loading {progress}"), style::accent()));
    } else if state.scope == Scope::Current {
        right.push(Span::styled("◉ Current Folder", style::accent()));
        right.push(Span::styled(" | ○ All", style::muted()));
    } else {
        right.push(Span::styled("○ Current Folder | ", style::muted()));
        right.push(Span::styled("◉ All", style::accent()));
    }
    if let Some((done, total)) = state.indexing() {
        // Searches answer from what is indexed meanwhile.
        right.push(Span::styled(
            format!("  Indexing {done}/{total}"),
            style::accent(),
        ));
    }
    let name = match state.name_filter {
        NameFilter::All => "All",
        NameFilter::Named => "Named",
    };
    right.push(Span::styled("  Name: ", style::muted()));
    right.push(Span::styled(name, style::accent()));
    right.push(Span::styled("  Sort: ", style::muted()));
    right.push(Span::styled(state.sort.label(), style::accent()));
    let right = truncate_spans(right, width, "");
    let right_width: usize = right.iter().map(|s| width_of(s)).sum();
    let left = truncate(title, width.saturating_sub(right_width + 1), "");
    let gap = width.saturating_sub(width_of_str(&left) + right_width);
    let mut first = vec![
        Span::styled(left, style::bold()),
        Span::raw(" ".repeat(gap)),
    ];
    first.extend(right);

    let (hint1, hint2) = if state.confirming_delete.is_some() {
        (
            Line::styled(
                truncate(
                    "Delete session? (it moves to the trash folder) enter confirm · escape/ctrl+c cancel",
                    width,
                    "…",
                ),
                style::error(),
            ),
            Line::default(),
        )
    } else if let Some(status) = &state.status {
        let s = if status.error {
            style::error()
        } else {
            style::accent()
        };
        (
            Line::styled(truncate(&status.text, width, "…"), s),
            Line::default(),
        )
    } else {
        let path_state = if state.show_path { "(on)" } else { "(off)" };
        let mut hint2 = vec![
            ("ctrl+s", "sort".to_owned()),
            ("ctrl+n", "named".to_owned()),
            ("ctrl+d", "delete".to_owned()),
            ("ctrl+p", format!("path {path_state}")),
        ];
        if state.can_rename {
            hint2.push(("ctrl+r", "rename".to_owned()));
        }
        let hint1 = hints(
            &[("tab", "scope".to_owned())],
            r#"re:<pattern> regex · "phrase" exact"#,
        );
        (
            Line::from(truncate_spans(hint1, width, "…")),
            Line::from(truncate_spans(hints(&hint2, ""), width, "…")),
        )
    };
    vec![Line::from(first), hint1, hint2]
}

/// `key desc · key desc · tail` in pi's hint colours.
fn hints(pairs: &[(&str, String)], tail: &str) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    for (n, (key, desc)) in pairs.iter().enumerate() {
        if n > 0 {
            out.push(Span::styled(" · ", style::muted()));
        }
        out.push(Span::styled(key.to_string(), style::dim()));
        out.push(Span::styled(format!(" {desc}"), style::muted()));
    }
    if !tail.is_empty() {
        out.push(Span::styled(" · ", style::muted()));
        out.push(Span::styled(tail.to_owned(), style::muted()));
    }
    out
}

fn width_of(s: &Span<'_>) -> usize {
    width(&s.content)
}

fn width_of_str(s: &str) -> usize {
    width(s)
}

fn list(state: &PickerState, env: &RenderEnv, width: usize) -> Vec<Line<'static>> {
    let rows = &state.rows;
    if rows.is_empty() {
        if state.loading().is_some() {
            return vec![Line::default()];
        }
        if let Some(e) = state.query_error() {
            // pi shows an empty list; saying why is kinder.
            return vec![Line::styled(
                truncate(&one_line(&format!("  Invalid regex: {e}")), width, "…"),
                style::error(),
            )];
        }
        let all = state.scope == Scope::All;
        let msg = match (state.name_filter, all) {
            (NameFilter::Named, true) => "  No named sessions found. Press ctrl+n to show all.",
            (NameFilter::Named, false) => {
                "  No named sessions in current folder. Press ctrl+n to show all, or Tab to view all."
            }
            (NameFilter::All, true) => "  No sessions found",
            (NameFilter::All, false) => "  No sessions in current folder. Press Tab to view all.",
        };
        return vec![Line::styled(truncate(msg, width, "…"), style::muted())];
    }
    let max = state.max_visible;
    let start = state
        .selected
        .saturating_sub(max / 2)
        .min(rows.len().saturating_sub(max));
    let end = (start + max).min(rows.len());
    let sessions = state.sessions();
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate().take(end).skip(start) {
        let Some(session) = sessions.get(row.index) else {
            continue;
        };
        let selected = i == state.selected;
        let deleting = state.confirming_delete.as_deref() == Some(session.path.as_path());
        let current = state.is_current_session(row.index);
        let prefix = row.prefix();
        // pi's title (the name, else the first message), then what the search found in the
        // messages, when it found them there.
        let title = one_line(session.name.as_deref().unwrap_or(&session.first_message));
        let found = state
            .hit(row.index)
            .filter(|hit| hit.entry.is_some())
            .map(|hit| one_line(&hit.snippet));
        let mut right = format!(
            "{} {}",
            session.message_count,
            format_age(session.modified_ms, env.now_ms)
        );
        if state.scope == Scope::All && !session.cwd.is_empty() {
            right = format!("{} {right}", env.shorten(&session.cwd));
        }
        if state.show_path {
            right = format!("{} {right}", env.shorten(&session.path.to_string_lossy()));
        }
        let avail = width
            .saturating_sub(2 + width_of_str(&prefix) + width_of_str(&right) + 2)
            .max(10);
        let text = match found {
            // The title keeps a third of the room at most: the snippet says why it is here.
            Some(found) => {
                let title = truncate(&title, (avail / 3).max(12), "…");
                truncate(&format!("{title} › {found}"), avail, "…")
            }
            None => truncate(&title, avail, "…"),
        };
        let mut msg_style = if deleting {
            style::error()
        } else if current {
            style::accent()
        } else if session.name.is_some() {
            style::warning()
        } else {
            Style::new()
        };
        if selected {
            msg_style = msg_style.patch(style::bold());
        }
        let cursor = if selected {
            Span::styled("› ", style::accent())
        } else {
            Span::raw("  ")
        };
        let left_width = 2 + width_of_str(&prefix) + width_of_str(&text);
        let gap = width
            .saturating_sub(left_width + width_of_str(&right))
            .max(1);
        let right_style = if deleting {
            style::error()
        } else {
            style::dim()
        };
        let spans = vec![
            cursor,
            Span::styled(prefix, style::dim()),
            Span::styled(text, msg_style),
            Span::raw(" ".repeat(gap)),
            Span::styled(right, right_style),
        ];
        let mut line = Line::from(truncate_spans(spans, width, "..."));
        if selected {
            line = line.patch_style(style::selected());
        }
        out.push(line);
    }
    if start > 0 || end < rows.len() {
        out.push(Line::styled(
            truncate(
                &format!("  ({}/{})", state.selected + 1, rows.len()),
                width,
                "",
            ),
            style::muted(),
        ));
    }
    out
}
