//! Cleaning command output for display and storage, as pi's user-bash path does: npm
//! `strip-ansi` 7.2 (its `ansi-regex` 6.6 pattern, ported verbatim) and pi's
//! `sanitizeBinaryOutput`.

use std::sync::LazyLock;

use regex::Regex;

/// ansi-regex 6.6's pattern; `regex`'s leftmost-first alternation matches as JavaScript's does.
static ANSI: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let st = r"(?:\x{1B}\x{5C}|\x{9C})";
    let string_controls = r"\x{18}\x{1A}\x{1B}\x{80}-\x{9F}";
    let osc = format!(r"(?:\x{{1B}}\]|\x{{9D}})[^\x{{07}}{string_controls}]*(?:\x{{07}}|{st})");
    let control_string =
        format!(r"(?:\x{{1B}}[PX^_k]|[\x{{90}}\x{{98}}\x{{9E}}\x{{9F}}])[^{string_controls}]*{st}");
    let linux_palette = format!(r"\x{{1B}}\](?:P[0-9A-Fa-f]{{7}}|R)(?:\x{{07}}|{st})?");
    let csi = r"(?:\x{1B}\[|\x{9B})[\x{30}-\x{3F}]*[\x{20}-\x{2F}]*[\x{40}-\x{7E}]";
    let escape = r"\x{1B}(?:[\x{20}-\x{2F}]+[\x{30}-\x{7E}]|[0-9A-PR-TZcf-oq-uy=><~|}])";
    Regex::new(&format!(
        "{linux_palette}|{osc}|{control_string}|{csi}|{escape}"
    ))
    .ok()
});

/// npm `strip-ansi`: removes escape sequences (CSI, OSC, DCS/APC/PM/SOS strings, two-byte
/// escapes, Linux palette codes); other text is untouched.
pub fn strip_ansi(text: &str) -> String {
    if !text.contains(['\u{1B}', '\u{9B}']) {
        return text.to_owned();
    }
    match ANSI.as_ref() {
        Some(re) => re.replace_all(text, "").into_owned(),
        None => text.to_owned(),
    }
}

/// pi's `sanitizeBinaryOutput`: drops C0 control characters except tab, newline and carriage
/// return, and U+FFF9–U+FFFB (which crash pi's `string-width`).
pub fn sanitize_binary_output(text: &str) -> String {
    text.chars()
        .filter(|&c| {
            let code = u32::from(c);
            matches!(code, 0x09 | 0x0A | 0x0D)
                || (code > 0x1F && !(0xFFF9..=0xFFFB).contains(&code))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_like_strip_ansi() {
        assert_eq!(strip_ansi("\u{1b}[31mred\u{1b}[0m"), "red");
        assert_eq!(
            strip_ansi("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{7}"),
            "link"
        );
        assert_eq!(strip_ansi("a\u{1b}7b"), "ab");
        // A lone ESC before ordinary text is not a sequence.
        assert_eq!(strip_ansi("a\u{1b}Qb"), "a\u{1b}Qb");
        assert_eq!(strip_ansi("\u{1b}[?25lX\u{1b}(0Y\u{1b}Pqq\u{1b}\\Z"), "XYZ");
    }

    #[test]
    fn sanitizes() {
        assert_eq!(
            sanitize_binary_output("a\u{0}b\tc\r\n\u{1b}\u{7f}\u{fffa}"),
            "ab\tc\r\n\u{7f}"
        );
    }
}
