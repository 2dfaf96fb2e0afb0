//! Lone UTF-16 surrogate escapes: `JSON.parse` keeps them in strings, serde_json rejects
//! them (spec: divergences.md, "lone UTF-16 surrogate escapes").

use std::borrow::Cow;

/// `raw` with every lone surrogate escape replaced by `\ufffd`, so that serde_json (which
/// rejects them) can decode a value `JSON.parse` accepts. Borrowed when there is none.
pub fn without_lone_surrogates(raw: &str) -> Cow<'_, str> {
    // Almost every text has no `\u` escape at all; memmem finds that out with SIMD.
    if memchr::memmem::find(raw.as_bytes(), b"\\u").is_none() {
        return Cow::Borrowed(raw);
    }
    let b = raw.as_bytes();
    let is_escape_at = |k: usize| -> Option<u32> {
        if b.get(k) == Some(&b'\\') && b.get(k + 1) == Some(&b'u') {
            raw.get(k + 2..k + 6)
                .and_then(|h| u32::from_str_radix(h, 16).ok())
        } else {
            None
        }
    };
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut k = 0;
    while k < b.len() {
        if b[k] != b'\\' {
            k += 1;
            continue;
        }
        match is_escape_at(k) {
            Some(u) if (0xD800..0xDC00).contains(&u) => {
                if is_escape_at(k + 6).is_some_and(|l| (0xDC00..0xE000).contains(&l)) {
                    k += 12;
                } else {
                    let o = out.get_or_insert_with(|| String::with_capacity(raw.len()));
                    o.push_str(&raw[copied..k]);
                    o.push_str("\\ufffd");
                    k += 6;
                    copied = k;
                }
            }
            Some(u) if (0xDC00..0xE000).contains(&u) => {
                let o = out.get_or_insert_with(|| String::with_capacity(raw.len()));
                o.push_str(&raw[copied..k]);
                o.push_str("\\ufffd");
                k += 6;
                copied = k;
            }
            Some(_) => k += 6,
            // Any other escape is two bytes; skipping both keeps `\\u` from being misread.
            None => k += 2,
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
