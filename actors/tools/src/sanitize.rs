//! Cleaning command output and any text bound for a terminal.
//!
//! - [`strip_ansi`], [`split_incomplete_ansi_suffix`]: pi 1.6.0's own `utils/ansi.js`
//!   (derived from ansi-regex/strip-ansi, with its own CSI/OSC rules).
//! - [`sanitize_binary_output`]: pi's `sanitizeBinaryOutput`.
//! - [`for_terminal`]: the one function frontends pass every text through before they print
//!   it (tool output, model text, file names).
//!
//! Where pi strips (pi 1.6.0): user bash (`!cmd`) output, chunk by chunk, before it is
//! stored and shown ([`crate::bash::execute_bash_with`]); and tool results when the
//! interactive mode draws them (`getTextOutput`). The bash and read tools give the model the
//! output as it is, escape sequences included (in JSON they travel escaped, as `\u001b`); so
//! does the session file. A terminal only ever sees such text through [`for_terminal`].

use std::sync::LazyLock;

use regex::Regex;

/// The pieces of pi's `ansi.js` patterns. JavaScript's `\d` is ASCII only, hence `[0-9]`.
const ST: &str = r"(?:\x07|\x1B\x5C|\x{9C})";
const CSI_START: &str =
    r"(?:(?:\x1B\[|\x{9B})[<=>]|[\x1B\x{9B}][\[\]()#;?]*)(?:[0-9]{1,4}(?:[;:][0-9]{0,4})*)?";
const CSI_FINAL: &str = r"[0-9A-PR-TZcf-nq-uy=><~]";

/// pi's `ansiRegex`: a complete OSC (`ESC ]` … up to the first ST) or CSI-like sequence.
static ANSI: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(&format!(r"(?:\x1B\](?s:.)*?{ST})|{CSI_START}{CSI_FINAL}")).ok());

/// A CSI start that runs to the end of the text (pi's unfinished-sequence pattern, CSI half).
static CSI_START_TO_END: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(&format!(r"\A{CSI_START}\z")).ok());

/// pi's `stripAnsi`: removes escape sequences (OSC strings, CSI and two-byte escapes as pi's
/// pattern sees them); other text is untouched.
pub fn strip_ansi(text: &str) -> String {
    if !text.contains(['\u{1B}', '\u{9B}']) {
        return text.to_owned();
    }
    match ANSI.as_ref() {
        Some(re) => re.replace_all(text, "").into_owned(),
        None => text.to_owned(),
    }
}

/// pi only holds back this many UTF-16 code units of an unfinished sequence.
const MAX_PENDING_ANSI_LENGTH: usize = 256;

/// pi's `splitIncompleteAnsiSuffix`: `(complete, pending)` where `pending` is an escape
/// sequence still unfinished at the end of streamed text (an OSC without its terminator, or a
/// CSI without its final byte), to be put before the next chunk. Only the last 256 UTF-16
/// units are looked at; longer unfinished sequences are passed on as they are.
pub fn split_incomplete_ansi_suffix(text: &str) -> (&str, &str) {
    if !text.contains(['\u{1B}', '\u{9B}']) {
        return (text, "");
    }
    let window = window_start(text);
    // JavaScript's `exec` finds the leftmost start whose rest matches up to the end.
    for (i, c) in text[window..].char_indices() {
        if !matches!(c, '\u{1B}' | '\u{9B}') {
            continue;
        }
        let at = window + i;
        let rest = &text[at..];
        if unfinished_osc(rest)
            || CSI_START_TO_END
                .as_ref()
                .is_some_and(|re| re.is_match(rest))
        {
            return (&text[..at], rest);
        }
    }
    (text, "")
}

/// The byte index where the last [`MAX_PENDING_ANSI_LENGTH`] UTF-16 units begin (moved forward
/// to a character boundary).
fn window_start(text: &str) -> usize {
    let total: usize = text.chars().map(char::len_utf16).sum();
    let skip = total.saturating_sub(MAX_PENDING_ANSI_LENGTH);
    let mut units = 0;
    for (i, c) in text.char_indices() {
        if units >= skip {
            return i;
        }
        units += c.len_utf16();
    }
    text.len()
}

/// `ESC ]` followed to the end by anything but BEL, U+009C and an ESC that starts `ESC \`.
fn unfinished_osc(rest: &str) -> bool {
    let Some(body) = rest.strip_prefix("\u{1B}]") else {
        return false;
    };
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{07}' | '\u{9C}' => return false,
            '\u{1B}' if chars.peek() == Some(&'\\') => return false,
            _ => {}
        }
    }
    true
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

/// Text made safe to print on a terminal: what pi's interactive mode does to a tool result
/// before drawing it (`sanitizeBinaryOutput(stripAnsi(text))` without `\r`), and further
/// (pith): DEL and the C1 controls U+0080–U+009F go too, since terminals that read UTF-8 may
/// act on them (U+009D starts an OSC, U+009B a CSI). Tabs and newlines stay.
///
/// So `ESC ] 52 ; c ; <base64> BEL` (which would set the clipboard) and `ESC ] 0 ; … BEL`
/// (the window title) are removed whole; an unterminated one loses its ESC and stays as
/// plain text. Frontends pass every text they print through this: tool output, model text,
/// file names, error messages that quote a file.
pub fn for_terminal(text: &str) -> String {
    strip_ansi(text)
        .chars()
        .filter(|&c| {
            let code = u32::from(c);
            matches!(code, 0x09 | 0x0A)
                || (code > 0x1F
                    && code != 0x7F
                    && !(0x80..=0x9F).contains(&code)
                    && !(0xFFF9..=0xFFFB).contains(&code))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_like_pi_16() {
        assert_eq!(strip_ansi("\u{1b}[31mred\u{1b}[0m"), "red");
        assert_eq!(
            strip_ansi("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\"),
            "link"
        );
        assert_eq!(strip_ansi("a\u{1b}]52;c;aGk=\u{7}b"), "ab");
        // pi 1.6.0's pattern: ESC 7 is a CSI-like sequence with final byte 7.
        assert_eq!(strip_ansi("a\u{1b}7b"), "ab");
        // An SGR mouse report is removed whole; ESC = keeps the digits after it.
        assert_eq!(strip_ansi("\u{1b}[<35;59;1Mx"), "x");
        assert_eq!(strip_ansi("\u{1b}=123"), "123");
        // An unterminated OSC is no OSC; pi's CSI pattern then takes `ESC ]0;t`.
        assert_eq!(strip_ansi("\u{1b}]0;title"), "itle");
        assert_eq!(strip_ansi("x\u{1b}]0;t\u{1b}\\y"), "xy");
        assert_eq!(strip_ansi("\u{9b}31mX"), "X");
    }

    #[test]
    fn holds_back_unfinished_sequences() {
        assert_eq!(split_incomplete_ansi_suffix("ab"), ("ab", ""));
        assert_eq!(
            split_incomplete_ansi_suffix("ab\u{1b}[3"),
            ("ab", "\u{1b}[3")
        );
        assert_eq!(
            split_incomplete_ansi_suffix("x\u{1b}]52;c;aGk"),
            ("x", "\u{1b}]52;c;aGk")
        );
        // A trailing ESC may start the terminator `ESC \`.
        assert_eq!(
            split_incomplete_ansi_suffix("x\u{1b}]0;t\u{1b}"),
            ("x", "\u{1b}]0;t\u{1b}")
        );
        // Complete sequences are left for strip_ansi.
        assert_eq!(
            split_incomplete_ansi_suffix("x\u{1b}]0;t\u{7}y"),
            ("x\u{1b}]0;t\u{7}y", "")
        );
        assert_eq!(
            split_incomplete_ansi_suffix("x\u{1b}[31m"),
            ("x\u{1b}[31m", "")
        );
        assert_eq!(split_incomplete_ansi_suffix("x\u{1b}"), ("x", "\u{1b}"));
        assert_eq!(split_incomplete_ansi_suffix("x\u{1b}]"), ("x", "\u{1b}]"));
        assert_eq!(
            split_incomplete_ansi_suffix("x\u{1b}]0;a\u{1b}b"),
            ("x", "\u{1b}]0;a\u{1b}b")
        );
        // Past 256 units an unfinished OSC is passed on as it is.
        let long = format!("\u{1b}]0;{}", "t".repeat(300));
        assert_eq!(split_incomplete_ansi_suffix(&long), (long.as_str(), ""));
    }

    #[test]
    fn sanitizes() {
        assert_eq!(
            sanitize_binary_output("a\u{0}b\tc\r\n\u{1b}\u{7f}\u{fffa}"),
            "ab\tc\r\n\u{7f}"
        );
    }

    #[test]
    fn terminal_text_has_no_live_escapes() {
        let clip = "before\u{1b}]52;c;aGVsbG8=\u{7}after\n";
        assert_eq!(for_terminal(clip), "beforeafter\n");
        assert_eq!(for_terminal("t\u{1b}]0;owned\u{1b}\\x"), "tx");
        // Unterminated: what pi's pattern leaves is plain text, without the ESC.
        assert_eq!(for_terminal("\u{1b}]52;c;aGk="), ";aGk=");
        assert_eq!(for_terminal("\u{1b}]52;;aGk="), ";;aGk=");
        // 8-bit controls and DEL, CR.
        assert_eq!(
            for_terminal("a\u{9d}52;c;x\u{9c}b\u{9b}31mc\u{7f}\r\td"),
            "a52;c;xbc\td"
        );
    }
}
