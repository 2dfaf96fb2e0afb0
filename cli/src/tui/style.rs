//! The few colours the views use, named after pi's theme roles (`accent`, `muted`, `dim`,
//! `warning`, `error`, `success`, `selectedBg`) so the renderers read like pi's components.

use ratatui::style::{Color, Modifier, Style};

/// pi's `accent`: titles, the cursor marker, the active path.
pub fn accent() -> Style {
    Style::new().fg(Color::Cyan)
}

/// pi's `muted`: hints and secondary text.
pub fn muted() -> Style {
    Style::new().fg(Color::Gray)
}

/// pi's `dim`: tree connectors, counts, bookkeeping entries.
pub fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// pi's `warning`: labels and named sessions.
pub fn warning() -> Style {
    Style::new().fg(Color::Yellow)
}

/// pi's `error`: delete confirmation, failures.
pub fn error() -> Style {
    Style::new().fg(Color::Red)
}

/// pi's `success`: the `assistant:` role.
pub fn success() -> Style {
    Style::new().fg(Color::Green)
}

/// pi's `selectedBg` behind the selected row.
pub fn selected() -> Style {
    Style::new().bg(Color::Indexed(236))
}

/// Bold (the selected row's text, titles).
pub fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

/// The text cursor of an input.
pub fn cursor() -> Style {
    Style::new().add_modifier(Modifier::REVERSED)
}
