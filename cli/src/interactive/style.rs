//! ANSI styles for the transcript: pi's theme roles (`error`, `warning`, `dim`, `muted`,
//! `toolTitle`, …) as plain SGR codes, so the output stays readable in any terminal. `NO_COLOR`
//! (any value) turns them off.

use std::sync::OnceLock;

/// Whether styles are written (`NO_COLOR` unset).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("NO_COLOR").is_none())
}

/// Whether the terminal takes 24-bit colours: `COLORTERM` is `truecolor` or `24bit`, as
/// pi's chalk decides; otherwise colours go out as the nearest of the 256.
pub fn truecolor() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("COLORTERM").is_ok_and(|v| v == "truecolor" || v == "24bit"))
}

/// The SGR parameters of foreground colour `(r, g, b)`: 24-bit, or with `truecolor` off
/// chalk's nearest xterm-256 colour (`ansi256`).
pub fn fg_rgb(r: u8, g: u8, b: u8, truecolor: bool) -> String {
    if truecolor {
        return format!("38;2;{r};{g};{b}");
    }
    let index = if r == g && g == b {
        match r {
            0..8 => 16,
            249.. => 231,
            _ => (((f64::from(r) - 8.0) / 247.0 * 24.0).round() as u8) + 232,
        }
    } else {
        let level = |c: u8| (f64::from(c) / 255.0 * 5.0).round() as u8;
        16 + 36 * level(r) + 6 * level(g) + level(b)
    };
    format!("38;5;{index}")
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
