//! Editing one member of an object's text in place: what re-linking a forked entry and
//! migrating a legacy line need, without re-encoding anything else in the line.

use super::{Span, scan_string, skip_ws, unescape};

/// One top-level member of an object text: its decoded key, where its key starts (the opening
/// quote) and its value's span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSpan {
    /// The key, escapes resolved.
    pub key: String,
    /// Offset of the key's opening quote.
    pub key_start: usize,
    /// The value.
    pub value: Span,
}

/// Offset just past the JSON value starting at `i` in valid JSON `b`.
fn value_end(b: &[u8], mut i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => scan_string(b, i).unwrap_or(b.len()),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = scan_string(b, i).unwrap_or(b.len());
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            b.len()
        }
        _ => {
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                i += 1;
            }
            i
        }
    }
}

/// The top-level members of `raw`, a valid JSON object text, in text order (repeated keys
/// included); `None` when `raw` is not an object.
pub fn object_members(raw: &str) -> Option<Vec<MemberSpan>> {
    let b = raw.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    let mut out = Vec::new();
    while b.get(i) == Some(&b'"') {
        let key_end = scan_string(b, i).ok()?;
        let key = unescape(raw.get(i + 1..key_end - 1)?).into_owned();
        let colon = skip_ws(b, key_end);
        let start = skip_ws(b, colon + 1);
        let end = value_end(b, start);
        out.push(MemberSpan {
            key,
            key_start: i,
            value: Span { start, end },
        });
        i = skip_ws(b, end);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
    }
    Some(out)
}

/// `raw` (an object text) with member `key` set to the JSON text `value`: the last occurrence
/// is replaced in place (where `JSON.parse` takes its value from), a missing member is appended
/// last, as a JavaScript assignment adds it. No other byte changes. `None` when `raw` is not
/// an object.
pub fn set_member(raw: &str, key: &str, value: &str) -> Option<String> {
    let members = object_members(raw)?;
    Some(match members.iter().rev().find(|m| m.key == key) {
        Some(m) => format!("{}{value}{}", &raw[..m.value.start], &raw[m.value.end..]),
        None => {
            let close = raw.rfind('}')?;
            let sep = if members.is_empty() { "" } else { "," };
            let key = serde_json::to_string(key).ok()?;
            format!("{}{sep}{key}:{value}{}", &raw[..close], &raw[close..])
        }
    })
}

/// `raw` (an object text) without member `key` (every occurrence, as `delete` removes the
/// property); `None` when `raw` is not an object.
pub fn remove_member(raw: &str, key: &str) -> Option<String> {
    let members = object_members(raw)?;
    let mut out = raw.to_owned();
    // From the end, so earlier offsets stay valid.
    for (n, m) in members.iter().enumerate().rev() {
        if m.key != key {
            continue;
        }
        let (start, end) = match (n.checked_sub(1).map(|p| &members[p]), members.get(n + 1)) {
            // `,"key":value` after the previous member's value.
            (Some(prev), _) => (prev.value.end, m.value.end),
            // The first member: `"key":value,` up to the next key.
            (None, Some(next)) => (m.key_start, next.key_start),
            (None, None) => (m.key_start, m.value.end),
        };
        out.replace_range(start..end, "");
    }
    Some(out)
}
