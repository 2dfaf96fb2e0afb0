//! HTML escaping: every string that comes from the session goes through here on its way into
//! the page, so a message holding `</script>` or markup is shown as text and cannot end an
//! element early.

use std::fmt;

/// `text` escaped for element content and for quoted attribute values (`& < > " '`).
///
/// A `Display` wrapper rather than a function returning `String`, so large texts are written
/// into the output buffer in slices instead of being copied first.
#[derive(Debug, Clone, Copy)]
pub struct Esc<'a>(pub &'a str);

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0;
        let mut start = 0;
        for (i, b) in text.bytes().enumerate() {
            let entity = match b {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                b'\'' => "&#39;",
                _ => continue,
            };
            // The escaped bytes are ASCII, so `start..i` always falls on char boundaries.
            f.write_str(&text[start..i])?;
            f.write_str(entity)?;
            start = i + 1;
        }
        f.write_str(&text[start..])
    }
}

/// `text` escaped into a new string (for the short texts kept until the tree is written).
pub fn escaped(text: &str) -> String {
    Esc(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_becomes_text() {
        assert_eq!(
            escaped(r#"</script><img src=x onerror='a()'> & "q""#),
            "&lt;/script&gt;&lt;img src=x onerror=&#39;a()&#39;&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(escaped("ünïcödé ✓"), "ünïcödé ✓");
    }
}
