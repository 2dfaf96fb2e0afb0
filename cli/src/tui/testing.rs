//! Test helpers for the views: key events and the screen as text.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

/// A plain key.
pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// Ctrl+`c`.
pub fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

/// A typed character (Shift for upper case, as terminals report it).
pub fn ch(c: char) -> KeyEvent {
    let m = if c.is_uppercase() {
        KeyModifiers::SHIFT
    } else {
        KeyModifiers::NONE
    };
    KeyEvent::new(KeyCode::Char(c), m)
}

/// Renders `lines` on a `width`×`height` test terminal and returns the screen as text,
/// trailing blanks trimmed per row and trailing empty rows dropped.
pub fn screen(lines: Vec<Line<'static>>, width: u16, height: u16) -> String {
    let mut term = match Terminal::new(TestBackend::new(width, height)) {
        Ok(t) => t,
        Err(e) => panic!("test terminal: {e}"),
    };
    if let Err(e) = term.draw(|f| f.render_widget(Paragraph::new(lines), f.area())) {
        panic!("draw: {e}");
    }
    let buf = term.backend().buffer();
    let mut rows: Vec<String> = (0..height)
        .map(|y| {
            let mut row = String::new();
            for x in 0..width {
                row.push_str(buf[(x, y)].symbol());
            }
            row.trim_end().to_owned()
        })
        .collect();
    while rows.last().is_some_and(String::is_empty) {
        rows.pop();
    }
    rows.join("\n")
}
