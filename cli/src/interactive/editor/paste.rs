//! Large pastes (pi's editor): a paste of more than 10 lines or 1,000 characters goes into
//! the editor as a marker, `[paste #1 +2000 lines]` or `[paste #2 1500 chars]`, and the
//! marker is replaced by the pasted text when the prompt is sent.

/// pi's thresholds: more lines than this, or more characters than [`MAX_CHARS`], collapse.
const MAX_LINES: usize = 10;
/// See [`MAX_LINES`].
const MAX_CHARS: usize = 1000;

/// The pastes behind the markers of the text being edited.
#[derive(Debug, Default, Clone)]
pub struct Pastes {
    /// Marker number and the pasted text, in paste order.
    items: Vec<(usize, String)>,
    counter: usize,
}

impl Pastes {
    /// What a paste puts into the editor: the text cleaned as pi cleans it (line endings
    /// to `\n`, tabs to four spaces, other control characters dropped), or a marker for it
    /// when it is large.
    pub fn paste(&mut self, pasted: &str) -> String {
        let clean = clean(pasted);
        let lines = clean.split('\n').count();
        let chars = clean.chars().count();
        if lines <= MAX_LINES && chars <= MAX_CHARS {
            return clean;
        }
        self.counter += 1;
        let marker = if lines > MAX_LINES {
            format!("[paste #{} +{lines} lines]", self.counter)
        } else {
            format!("[paste #{} {chars} chars]", self.counter)
        };
        self.items.push((self.counter, clean));
        marker
    }

    /// `text` with each marker of a paste replaced by the pasted text (pi's
    /// `expandPasteMarkers`); markers typed by hand for no paste stay.
    pub fn expand(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (id, pasted) in &self.items {
            let mut rest = String::new();
            let mut from = out.as_str();
            let prefix = format!("[paste #{id}");
            while let Some(at) = from.find(&prefix) {
                let after = &from[at + prefix.len()..];
                match marker_tail(after) {
                    Some(len) => {
                        rest.push_str(&from[..at]);
                        rest.push_str(pasted);
                        from = &after[len..];
                    }
                    None => {
                        rest.push_str(&from[..at + prefix.len()]);
                        from = after;
                    }
                }
            }
            rest.push_str(from);
            out = rest;
        }
        out
    }

    /// The length in bytes of the paste marker that `before` ends with, when it ends with
    /// one of these pastes' markers (Backspace deletes it whole).
    pub fn marker_before(&self, before: &str) -> Option<usize> {
        let open = before.rfind("[paste #")?;
        let marker = &before[open..];
        let digits = marker["[paste #".len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>();
        let id: usize = digits.parse().ok()?;
        let tail = &marker["[paste #".len() + digits.len()..];
        (self.items.iter().any(|(i, _)| *i == id) && marker_tail(tail) == Some(tail.len()))
            .then_some(marker.len())
    }

    /// Forgets every paste (the prompt was sent).
    pub fn clear(&mut self) {
        *self = Pastes::default();
    }
}

/// `text` as the editor takes it from outside (a paste, an external editor's file): line
/// endings as `\n`, tabs as four spaces, other control characters dropped (pi's paste
/// filter).
pub fn clean(text: &str) -> String {
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .replace('\t', "    ")
        .chars()
        .filter(|c| *c == '\n' || !c.is_control())
        .collect()
}

/// The length of what closes a marker after `[paste #N`: `]`, ` +N lines]` or ` N chars]`.
fn marker_tail(after: &str) -> Option<usize> {
    if after.starts_with(']') {
        return Some(1);
    }
    let rest = after.strip_prefix(' ')?;
    let (plus, rest) = match rest.strip_prefix('+') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let word = if plus { " lines]" } else { " chars]" };
    rest[digits..]
        .starts_with(word)
        .then(|| 1 + usize::from(plus) + digits + word.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_pastes_go_in_as_text() {
        let mut p = Pastes::default();
        assert_eq!(p.paste("a\r\nb\tc\u{1b}"), "a\nb    c");
        assert_eq!(p.expand("x"), "x");
    }

    #[test]
    fn large_pastes_become_markers_that_expand() {
        let mut p = Pastes::default();
        let long: String = (1..=2000).map(|i| format!("line {i}\n")).collect();
        let long = long.trim_end().to_owned();
        assert_eq!(p.paste(&long), "[paste #1 +2000 lines]");
        let wide = "x".repeat(1500);
        assert_eq!(p.paste(&wide), "[paste #2 1500 chars]");
        assert_eq!(
            p.expand("see [paste #1 +2000 lines] and [paste #2 1500 chars]!"),
            format!("see {long} and {wide}!")
        );
        // A marker for no paste stays as typed.
        assert_eq!(p.expand("[paste #7 +3 lines]"), "[paste #7 +3 lines]");
        assert_eq!(p.marker_before("ab [paste #1 +2000 lines]"), Some(22));
        assert_eq!(p.marker_before("ab [paste #9 +2000 lines]"), None);
        assert_eq!(p.marker_before("ab [paste #1 +2000 lines"), None);
        p.clear();
        assert_eq!(p.expand("[paste #1 +2000 lines]"), "[paste #1 +2000 lines]");
    }
}
