//! A one-pass JSON validator that also picks out the members the log needs eagerly.
//!
//! Opening a session must decide, for every line, whether `JSON.parse` would accept it and
//! read its `type`, `id`, `parentId`, `timestamp` and `message.role`. Message bodies are
//! only needed when a context is built, and then only on the path. Parsing every line into a
//! `serde_json::Value` costs ~6× the file read on the 100 MiB benchmark file; this scanner
//! validates the full JSON grammar without allocating and records byte spans instead.
//!
//! It is iterative (an explicit stack), so nesting depth is bounded only by memory, and it
//! follows `JSON.parse` rather than serde_json where they differ: lone UTF-16 surrogate escapes
//! (`"\ud800"`) are valid, numbers of any magnitude are valid, and a duplicated key's last
//! value wins.

use std::borrow::Cow;

pub use pith_events::js::without_lone_surrogates;

/// Byte range `start..end` inside a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// The spanned text of `s`.
    pub fn of<'a>(&self, s: &'a str) -> &'a str {
        s.get(self.start..self.end).unwrap_or("")
    }
}

/// Spans of the raw JSON values of the members read eagerly; a string value's span
/// includes its quotes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Members {
    /// Top-level `type`.
    pub kind: Option<Span>,
    /// Top-level `id`.
    pub id: Option<Span>,
    /// Top-level `parentId`.
    pub parent_id: Option<Span>,
    /// Top-level `timestamp`.
    pub timestamp: Option<Span>,
    /// Top-level `message`.
    pub message: Option<Span>,
    /// `message.role`, only when `message` is an object and `role` is a string.
    pub role: Option<Span>,
    /// `message.timestamp`, only when `message` is an object (any JSON value).
    pub message_timestamp: Option<Span>,
    /// `message.content`, only when `message` is an object (any JSON value).
    pub message_content: Option<Span>,
}

/// What [`scan`] found in one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scanned {
    /// The JSON value without surrounding whitespace.
    pub value: Span,
    /// Whether the value is an object (only objects can be entries).
    pub is_object: bool,
    /// Member spans; all `None` unless `is_object`.
    pub members: Members,
    /// Whether a number literal may lie beyond f64's range (`1e400`): `JSON.parse` reads it as
    /// ±Infinity (written back as `null`), serde_json refuses it; see [`js_compatible`].
    pub huge_numbers: bool,
}

/// Why a line is not JSON: the byte offset and what was expected there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanError {
    /// Byte offset in the line (0-based).
    pub offset: usize,
    /// What went wrong, e.g. `"expected ':'"`.
    pub reason: &'static str,
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "invalid JSON at byte {}: {}",
            self.offset + 1,
            self.reason
        )
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FrameKind {
    /// The top-level object.
    Top,
    /// The object that is the top-level `message` member's value.
    Message,
    Other,
}

struct Frame {
    object: bool,
    start: usize,
    key: Span,
    kind: FrameKind,
}

fn err<T>(offset: usize, reason: &'static str) -> Result<T, ScanError> {
    Err(ScanError { offset, reason })
}

#[inline]
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// Whether the key at `key` (between the quotes) is `name`.
#[inline]
fn key_is(b: &[u8], key: Span, name: &str) -> bool {
    let raw = &b[key.start..key.end];
    if !raw.contains(&b'\\') {
        return raw == name.as_bytes();
    }
    std::str::from_utf8(raw).is_ok_and(|s| unescape(s) == name)
}

/// Validates `b` as exactly one JSON text (JSON whitespace allowed around it), as
/// `JSON.parse` would, and returns the member spans. `b` must be valid UTF-8 for the spans to
/// be usable as `str` ranges; bytes ≥ 0x80 are accepted inside strings.
///
/// Errors: the first offset where the grammar fails.
pub fn scan(b: &[u8]) -> Result<Scanned, ScanError> {
    let mut members = Members::default();
    let mut pending_role: Option<Span> = None;
    let mut pending_timestamp: Option<Span> = None;
    let mut pending_content: Option<Span> = None;
    let mut stack: Vec<Frame> = Vec::new();
    let mut huge_numbers = false;
    let clean = no_control_bytes(b);
    let mut i = skip_ws(b, 0);

    'value: loop {
        let mut vstart = i;
        let mut vend;
        match b.get(i) {
            None => return err(i, "unexpected end of line"),
            Some(b'{') => {
                let kind = if stack.is_empty() {
                    FrameKind::Top
                } else if stack.len() == 1
                    && stack[0].kind == FrameKind::Top
                    && key_is(b, stack[0].key, "message")
                {
                    pending_role = None;
                    pending_timestamp = None;
                    pending_content = None;
                    FrameKind::Message
                } else {
                    FrameKind::Other
                };
                stack.push(Frame {
                    object: true,
                    start: i,
                    key: Span::default(),
                    kind,
                });
                i = skip_ws(b, i + 1);
                if b.get(i) == Some(&b'}') {
                    i += 1;
                    stack.pop();
                    vend = i;
                } else {
                    if let Some(top) = stack.last_mut() {
                        i = parse_key(b, i, &mut top.key, clean)?;
                    }
                    continue 'value;
                }
            }
            Some(b'[') => {
                stack.push(Frame {
                    object: false,
                    start: i,
                    key: Span::default(),
                    kind: FrameKind::Other,
                });
                i = skip_ws(b, i + 1);
                if b.get(i) == Some(&b']') {
                    i += 1;
                    stack.pop();
                    vend = i;
                } else {
                    continue 'value;
                }
            }
            Some(b'"') => {
                i = scan_string_in(b, i, clean)?;
                vend = i;
            }
            Some(b't') => {
                i = literal(b, i, b"true")?;
                vend = i;
            }
            Some(b'f') => {
                i = literal(b, i, b"false")?;
                vend = i;
            }
            Some(b'n') => {
                i = literal(b, i, b"null")?;
                vend = i;
            }
            Some(b'-' | b'0'..=b'9') => {
                let end = scan_number(b, i)?;
                // Only long literals or three-digit exponents can leave f64's range.
                if end - i > 300 || b[i..end].iter().any(|c| matches!(c, b'e' | b'E')) {
                    huge_numbers |= !js_number_is_finite(&b[i..end]);
                }
                i = end;
                vend = i;
            }
            Some(_) => return err(i, "expected a JSON value"),
        }

        // A value [vstart, vend) is complete; record it, then close containers as needed.
        loop {
            let Some(top) = stack.last_mut() else {
                i = skip_ws(b, i);
                if i != b.len() {
                    return err(i, "unexpected data after the JSON value");
                }
                let is_object = b[vstart] == b'{';
                return Ok(Scanned {
                    value: Span {
                        start: vstart,
                        end: vend,
                    },
                    is_object,
                    members: if is_object {
                        members
                    } else {
                        Members::default()
                    },
                    huge_numbers,
                });
            };
            if top.object {
                let span = Span {
                    start: vstart,
                    end: vend,
                };
                match top.kind {
                    FrameKind::Top => {
                        let key = top.key;
                        if key_is(b, key, "type") {
                            members.kind = Some(span);
                        } else if key_is(b, key, "id") {
                            members.id = Some(span);
                        } else if key_is(b, key, "parentId") {
                            members.parent_id = Some(span);
                        } else if key_is(b, key, "timestamp") {
                            members.timestamp = Some(span);
                        } else if key_is(b, key, "message") {
                            members.message = Some(span);
                            let object = b[vstart] == b'{';
                            members.role = pending_role.take().filter(|_| object);
                            members.message_timestamp = pending_timestamp.take().filter(|_| object);
                            members.message_content = pending_content.take().filter(|_| object);
                        }
                    }
                    FrameKind::Message => {
                        if key_is(b, top.key, "role") {
                            pending_role = (b[vstart] == b'"').then_some(span);
                        } else if key_is(b, top.key, "timestamp") {
                            pending_timestamp = Some(span);
                        } else if key_is(b, top.key, "content") {
                            pending_content = Some(span);
                        }
                    }
                    FrameKind::Other => {}
                }
            }
            i = skip_ws(b, i);
            match (b.get(i), top.object) {
                (Some(b','), true) => {
                    i = skip_ws(b, i + 1);
                    i = parse_key(b, i, &mut top.key, clean)?;
                    continue 'value;
                }
                (Some(b','), false) => {
                    i = skip_ws(b, i + 1);
                    continue 'value;
                }
                (Some(b'}'), true) | (Some(b']'), false) => {
                    i += 1;
                    vstart = top.start;
                    vend = i;
                    stack.pop();
                }
                (_, true) => return err(i, "expected ',' or '}'"),
                (_, false) => return err(i, "expected ',' or ']'"),
            }
        }
    }
}

/// Parses `"key"` then `:` at `i`; stores the key's inner span; returns the value's offset.
fn parse_key(b: &[u8], i: usize, key: &mut Span, clean: bool) -> Result<usize, ScanError> {
    if b.get(i) != Some(&b'"') {
        return err(i, "expected a string key");
    }
    let end = scan_string_in(b, i, clean)?;
    *key = Span {
        start: i + 1,
        end: end - 1,
    };
    let j = skip_ws(b, end);
    if b.get(j) != Some(&b':') {
        return err(j, "expected ':'");
    }
    Ok(skip_ws(b, j + 1))
}

fn literal(b: &[u8], i: usize, word: &[u8]) -> Result<usize, ScanError> {
    if b.get(i..i + word.len()) == Some(word) {
        Ok(i + word.len())
    } else {
        err(i, "invalid literal")
    }
}

fn scan_number(b: &[u8], mut i: usize) -> Result<usize, ScanError> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        _ => return err(i, "expected a digit"),
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !b.get(i).is_some_and(u8::is_ascii_digit) {
            return err(i, "expected a digit after '.'");
        }
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        if !b.get(i).is_some_and(u8::is_ascii_digit) {
            return err(i, "expected a digit in the exponent");
        }
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    Ok(i)
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Offset (0..8) of the first byte in `w` (little-endian) that is `"`, `\\` or a control
/// character, or 8 if there is none. Classic SWAR: a byte `b` is flagged when `b - n` borrows
/// for `n = 0x20`, or when `b ^ c` is zero; borrows can only flag bytes *after* a real hit,
/// so the lowest flag is exact.
#[inline]
fn first_stop(w: u64) -> usize {
    let flags = (quote_or_backslash_flags(w) | (w.wrapping_sub(ONES * 0x20) & !w)) & HIGHS;
    (flags.trailing_zeros() / 8) as usize
}

/// [`first_stop`] for text without control characters: the first `"` or `\\` only.
#[inline]
fn first_quote_or_backslash(w: u64) -> usize {
    ((quote_or_backslash_flags(w) & HIGHS).trailing_zeros() / 8) as usize
}

/// The flags of [`first_stop`] for `"` and `\\` (high bits of each byte; unmasked).
#[inline]
fn quote_or_backslash_flags(w: u64) -> u64 {
    let quote = w ^ (ONES * u64::from(b'"'));
    let slash = w ^ (ONES * u64::from(b'\\'));
    (quote.wrapping_sub(ONES) & !quote) | (slash.wrapping_sub(ONES) & !slash)
}

/// Whether `b` holds no byte below 0x20, so that no string in it can hold a control
/// character. A fold without an early exit, so that it compiles to vector instructions;
/// in pages, so that a line with one stops soon.
fn no_control_bytes(b: &[u8]) -> bool {
    b.chunks(4096)
        .all(|page| page.iter().fold(0u8, |acc, &x| acc | u8::from(x < 0x20)) == 0)
}

/// [`scan_string`] for a line [`no_control_bytes`] found `clean`: only `"` and `\\` can end
/// a run, and memchr finds them with the processor's vector instructions.
fn scan_string_in(b: &[u8], i: usize, clean: bool) -> Result<usize, ScanError> {
    if !clean {
        return scan_string(b, i);
    }
    let mut j = i + 1;
    loop {
        // Runs between escapes are short in session text (a backslash every 15 bytes in a
        // large session's tool output): eight bytes at a time first, memchr for a long run.
        let mut found = false;
        for _ in 0..4 {
            let Some(chunk) = b.get(j..j + 8) else { break };
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let k = first_quote_or_backslash(u64::from_le_bytes(word));
            j += k;
            if k < 8 {
                found = true;
                break;
            }
        }
        if !found {
            let Some(k) = b
                .get(j..)
                .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
            else {
                return err(b.len(), "unterminated string");
            };
            j += k;
        }
        match b.get(j) {
            Some(b'"') => return Ok(j + 1),
            _ => j = escape(b, j)?,
        }
    }
}

/// Checks the escape at `j` (a backslash); returns the offset after it.
#[inline]
fn escape(b: &[u8], j: usize) -> Result<usize, ScanError> {
    match b.get(j + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(j + 2),
        Some(b'u') => match b.get(j + 2..j + 6) {
            Some(h) if h.iter().all(u8::is_ascii_hexdigit) => Ok(j + 6),
            _ => err(j, "invalid \\u escape"),
        },
        _ => err(j, "invalid escape"),
    }
}

/// Scans the string starting at the quote at `i`; returns the offset after the closing quote.
fn scan_string(b: &[u8], i: usize) -> Result<usize, ScanError> {
    let mut j = i + 1;
    loop {
        // Eight bytes at a time until one of them can end the run.
        while let Some(chunk) = b.get(j..j + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let k = first_stop(u64::from_le_bytes(word));
            j += k;
            if k < 8 {
                break;
            }
        }
        match b.get(j) {
            None => return err(j, "unterminated string"),
            Some(b'"') => return Ok(j + 1),
            Some(b'\\') => j = escape(b, j)?,
            Some(&c) if c < 0x20 => return err(j, "control character in string"),
            Some(_) => j += 1,
        }
    }
}

/// The value of a JSON string literal's inner text (without quotes), with escapes resolved.
/// A lone UTF-16 surrogate escape becomes U+FFFD (the file keeps its bytes; only derived text
/// shows the replacement, spec: divergences.md "Reading").
pub fn unescape(inner: &str) -> Cow<'_, str> {
    if !inner.contains('\\') {
        return Cow::Borrowed(inner);
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.char_indices().peekable();
    let hex = |at: usize| -> Option<u32> {
        inner
            .get(at..at + 4)
            .and_then(|h| u32::from_str_radix(h, 16).ok())
    };
    while let Some((pos, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some((_, e)) = chars.next() else { break };
        match e {
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'u' => {
                let Some(unit) = hex(pos + 2) else { break };
                for _ in 0..4 {
                    chars.next();
                }
                let ch = if (0xD800..0xDC00).contains(&unit) {
                    let low = (inner.get(pos + 6..pos + 8) == Some("\\u"))
                        .then(|| hex(pos + 8))
                        .flatten()
                        .filter(|l| (0xDC00..0xE000).contains(l));
                    match low {
                        Some(low) => {
                            for _ in 0..6 {
                                chars.next();
                            }
                            char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                        }
                        None => None,
                    }
                } else {
                    char::from_u32(unit)
                };
                out.push(ch.unwrap_or('\u{fffd}'));
            }
            other => out.push(other),
        }
    }
    Cow::Owned(out)
}

/// The string a raw JSON string literal (with quotes) stands for; `None` if `raw` is not a
/// string literal.
pub fn string_value(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    Some(unescape(inner))
}

fn js_number_is_finite(literal: &[u8]) -> bool {
    std::str::from_utf8(literal)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .is_some_and(f64::is_finite)
}

/// `raw` (valid JSON) with every number literal beyond f64's range replaced by `null`: what
/// `JSON.stringify(JSON.parse(raw))` writes for it (±Infinity becomes `null`). Everything
/// else, strings included, is left as it is. Borrowed when nothing changes.
pub fn js_compatible(raw: &str) -> Cow<'_, str> {
    let b = raw.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = scan_string(b, i).unwrap_or(b.len()),
            b'-' | b'0'..=b'9' => {
                let end = scan_number(b, i).unwrap_or(b.len()).max(i + 1);
                if !js_number_is_finite(&b[i..end]) {
                    let o = out.get_or_insert_with(|| String::with_capacity(raw.len()));
                    o.push_str(&raw[copied..i]);
                    o.push_str("null");
                    copied = end;
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    match out {
        Some(mut o) => {
            o.push_str(&raw[copied..]);
            Cow::Owned(o)
        }
        None => Cow::Borrowed(raw),
    }
}

mod edit;

pub use edit::{MemberSpan, object_members, remove_member, set_member};

#[cfg(test)]
mod tests;
