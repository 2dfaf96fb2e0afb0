//! ANSI styles for the transcript: pi's theme roles (`error`, `warning`, `dim`, `muted`,
//! `toolTitle`, …) as plain SGR codes, so the output stays readable in any terminal. `NO_COLOR`
//! (any value) turns them off.

use std::sync::OnceLock;

/// Whether styles are written (`NO_COLOR` unset).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("NO_COLOR").is_none())
}

fn wrap(text: &str, on: &str, off: &str) -> String {
    if enabled() && !text.is_empty() {
        format!("\x1b[{on}m{text}\x1b[{off}m")
    } else {
        text.to_owned()
    }
}

/// Bold (pi's titles: tool calls, `$ command`, section headers).
pub fn bold(text: &str) -> String {
    wrap(text, "1", "22")
}

/// Dim (pi's `dim`: status lines, the footer, queued messages).
pub fn dim(text: &str) -> String {
    wrap(text, "2", "22")
}

/// Dim italic (pi's thinking blocks).
pub fn thinking(text: &str) -> String {
    wrap(text, "2;3", "22;23")
}

/// Red (pi's `error`).
pub fn error(text: &str) -> String {
    wrap(text, "31", "39")
}

/// Yellow (pi's `warning`).
pub fn warning(text: &str) -> String {
    wrap(text, "33", "39")
}

/// Green (pi's `success`, added diff lines).
pub fn success(text: &str) -> String {
    wrap(text, "32", "39")
}

/// Cyan (pi's `accent`: paths, labels).
pub fn accent(text: &str) -> String {
    wrap(text, "36", "39")
}

/// Grey (pi's `muted` / `toolOutput`).
pub fn muted(text: &str) -> String {
    wrap(text, "90", "39")
}

/// Magenta (pi's `customMessageLabel`: `[compaction]`, `[branch]`).
pub fn label(text: &str) -> String {
    wrap(text, "35", "39")
}

/// `text` in the SGR `codes` (e.g. `"1;33"`), reset after; `text` as it is when `codes` is
/// empty or colours are off.
pub fn with(codes: &str, text: &str) -> String {
    if codes.is_empty() {
        text.to_owned()
    } else {
        wrap(text, codes, "0")
    }
}

/// pi's `DynamicBorder`: a dim rule across all `cols` columns.
pub fn border(cols: usize) -> String {
    dim(&"─".repeat(cols.max(1)))
}
