//! The few JavaScript semantics pi's results depend on (spec README, "JS-isms"): `trim()`'s
//! whitespace set, truthiness of JSON values, `Number(x)` and `String(x)` of JSON values, and
//! `new Date(x).getTime()`.

/// Whether `c` is in ECMAScript's WhiteSpace ∪ LineTerminator sets, which `String.prototype.trim`
/// removes. Differs from `char::is_whitespace`: includes U+FEFF (BOM), excludes U+0085 (NEL).
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{a}' | '\u{b}' | '\u{c}' | '\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// JavaScript truthiness of a JSON value: `null`, `false`, `0` and `""` are falsy.
pub fn is_truthy(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// `s.trim()` as JavaScript does it.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// JavaScript truthiness of one raw JSON value (`""`, `0`, `-0`, `false`, `null` are falsy;
/// objects and arrays are truthy). `None` (a missing member, i.e. `undefined`) is falsy.
pub fn js_truthy(raw: Option<&str>) -> bool {
    let Some(raw) = raw else { return false };
    let raw = raw.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
    match raw.as_bytes().first() {
        None | Some(b'n') | Some(b'f') => false,
        Some(b'"') => raw.len() > 2,
        Some(b't') | Some(b'{') | Some(b'[') => true,
        Some(_) => raw
            .parse::<f64>()
            .map(|n| n != 0.0 && !n.is_nan())
            .unwrap_or(true),
    }
}

/// JavaScript's `Number(text)` for a string: surrounding [`is_js_whitespace`] is ignored,
/// blank is `0`, `0x`/`0o`/`0b` literals (unsigned), `Infinity` with an optional sign, and
/// decimal literals with an optional sign, fraction and exponent; anything else is `NaN`.
/// Callers that only take finite numbers filter the result; `NaN` is never turned into a
/// default here.
pub fn string_to_number(text: &str) -> f64 {
    let t = js_trim(text);
    if t.is_empty() {
        return 0.0;
    }
    for (prefix, radix) in [
        ("0x", 16),
        ("0X", 16),
        ("0o", 8),
        ("0O", 8),
        ("0b", 2),
        ("0B", 2),
    ] {
        if let Some(digits) = t.strip_prefix(prefix) {
            // Digits beyond u64 are still a number in JavaScript, just a rounded one.
            return if !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix)) {
                digits.chars().fold(0.0, |n, c| {
                    n * f64::from(radix) + f64::from(c.to_digit(radix).unwrap_or(0))
                })
            } else {
                f64::NAN
            };
        }
    }
    let (sign, body) = match t.as_bytes()[0] {
        b'-' => (-1.0, &t[1..]),
        b'+' => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    if body == "Infinity" {
        return sign * f64::INFINITY;
    }
    if !is_decimal_literal(body) {
        return f64::NAN;
    }
    body.parse::<f64>().map_or(f64::NAN, |n| sign * n)
}

/// `StrUnsignedDecimalLiteral`: digits with an optional fraction (`1.`, `.5`), then an
/// optional exponent with a sign.
fn is_decimal_literal(body: &str) -> bool {
    let b = body.as_bytes();
    let mut i = 0;
    let int_digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    i += int_digits;
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        i += frac_digits;
    }
    if int_digits + frac_digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if exp_digits == 0 {
            return false;
        }
        i += exp_digits;
    }
    i == b.len()
}

/// JavaScript's `Number(v)` for a JSON value: numbers as they are, strings through
/// [`string_to_number`], `null` and `false` are 0, `true` is 1, objects are `NaN`, arrays
/// go through their `String()` (`[]` is 0, `[5]` is 5).
pub fn to_number(v: &serde_json::Value) -> f64 {
    use serde_json::Value;
    match v {
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) => string_to_number(s),
        Value::Array(_) => string_to_number(&to_js_string(Some(v))),
        Value::Object(_) => f64::NAN,
    }
}

/// JavaScript's `String(v)` for a JSON value; `None` stands for `undefined`. Numbers print as
/// JavaScript prints them, arrays as their items joined by `,` (a `null` item is empty),
/// objects as `[object Object]`.
pub fn to_js_string(value: Option<&serde_json::Value>) -> String {
    use serde_json::Value;
    match value {
        None => "undefined".to_owned(),
        Some(Value::Null) => "null".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n
            .as_f64()
            .map_or_else(|| n.to_string(), super::format_js_number),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                // `[null].toString()` is "", unlike `String(null)`.
                Value::Null => String::new(),
                v => to_js_string(Some(v)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".to_owned(),
    }
}

/// Largest magnitude of a valid JavaScript time value, in ms (ECMA-262 TimeClip).
const MAX_TIME_MS: f64 = 8.64e15;

/// `new Date(v).getTime()` for one raw JSON value, in ms since the Unix epoch; NaN when
/// JavaScript gives `NaN` (spec: format.md §4.3). `None` stands for a missing member
/// (`undefined`). Numbers are clipped as `TimeClip` does, strings go through [`date_parse`],
/// `null` is 0, booleans are 0/1, objects and arrays are NaN.
pub fn js_date_value(raw: Option<&str>) -> f64 {
    let Some(raw) = raw else { return f64::NAN };
    let raw = raw.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
    match raw.as_bytes().first() {
        Some(b'"') => match serde_json::from_str::<String>(raw) {
            Ok(s) => date_parse(&s),
            Err(_) => f64::NAN,
        },
        Some(b'n') => 0.0,
        Some(b't') => 1.0,
        Some(b'f') => 0.0,
        Some(b'-' | b'0'..=b'9') => match raw.parse::<f64>() {
            Ok(n) if n.is_finite() && n.abs() <= MAX_TIME_MS => n.trunc() + 0.0,
            _ => f64::NAN,
        },
        _ => f64::NAN,
    }
}

/// `Date.parse(s)` for the ECMAScript date-time string format
/// (`YYYY[-MM[-DD]][THH:mm[:ss[.s…]]][Z|±HH:mm]`, years also as `±YYYYYY`), in ms since the
/// epoch; NaN for anything else. A date-time without offset is read as UTC (JavaScript reads it
/// in local time; pith runs its comparisons with TZ=UTC, where the two agree). V8's fallback
/// parser for legacy formats (`"Jan 1 2025"`) is not reproduced: pi never writes them.
pub fn date_parse(s: &str) -> f64 {
    parse_iso(s.as_bytes()).unwrap_or(f64::NAN)
}

fn digits(b: &[u8], at: usize, n: usize) -> Option<i64> {
    let part = b.get(at..at + n)?;
    part.iter().try_fold(0i64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
    })
}

fn parse_iso(b: &[u8]) -> Option<f64> {
    let mut i;
    let year = match b.first()? {
        b'+' | b'-' => {
            let y = digits(b, 1, 6)?;
            if b[0] == b'-' && y == 0 {
                return None;
            }
            i = 7;
            if b[0] == b'-' { -y } else { y }
        }
        _ => {
            i = 4;
            digits(b, 0, 4)?
        }
    };
    let (mut month, mut day) = (1, 1);
    if b.get(i) == Some(&b'-') {
        month = digits(b, i + 1, 2)?;
        i += 3;
        if b.get(i) == Some(&b'-') {
            day = digits(b, i + 1, 2)?;
            i += 3;
        }
    }
    // V8 checks only 1..=31; an impossible day rolls over into the next month, as
    // `Date.UTC` does (2025-02-30 is 2025-03-02).
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let (mut hour, mut minute, mut second, mut millis) = (0, 0, 0, 0.0);
    let mut offset_min = 0;
    if b.get(i) == Some(&b'T') {
        hour = digits(b, i + 1, 2)?;
        if b.get(i + 3) != Some(&b':') {
            return None;
        }
        minute = digits(b, i + 4, 2)?;
        i += 6;
        if b.get(i) == Some(&b':') {
            second = digits(b, i + 1, 2)?;
            i += 3;
            if b.get(i) == Some(&b'.') {
                let start = i + 1;
                let mut end = start;
                while b.get(end).is_some_and(u8::is_ascii_digit) {
                    end += 1;
                }
                if end == start {
                    return None;
                }
                // Only the first three digits count; V8 truncates the rest.
                let ms_digits = &b[start..end.min(start + 3)];
                let mut ms = 0.0;
                for (k, &c) in ms_digits.iter().enumerate() {
                    ms += f64::from(c - b'0') * [100.0, 10.0, 1.0][k];
                }
                millis = ms;
                i = end;
            }
        }
        match b.get(i) {
            Some(b'Z') => i += 1,
            Some(&sign @ (b'+' | b'-')) => {
                let oh = digits(b, i + 1, 2)?;
                if b.get(i + 3) != Some(&b':') {
                    return None;
                }
                let om = digits(b, i + 4, 2)?;
                if oh > 23 || om > 59 {
                    return None;
                }
                offset_min = (oh * 60 + om) * if sign == b'+' { 1 } else { -1 };
                i += 6;
            }
            _ => {}
        }
        let end_of_day = hour == 24 && minute == 0 && second == 0 && millis == 0.0;
        if (hour > 23 && !end_of_day) || minute > 59 || second > 59 {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let ms = ((days * 24 + hour) * 60 + minute - offset_min) as f64 * 60_000.0
        + second as f64 * 1000.0
        + millis;
    (ms.abs() <= MAX_TIME_MS).then_some(ms)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_iso_like_date_parse() {
        // Values from node 20: Date.parse(s).
        assert_eq!(date_parse("2025-01-01T00:00:05.000Z"), 1735689605000.0);
        assert_eq!(date_parse("2026-11-30T09:32:43.732Z"), 1796031163732.0);
        assert_eq!(date_parse("2025-01-01"), 1735689600000.0);
        assert_eq!(date_parse("2025-01"), 1735689600000.0);
        assert_eq!(date_parse("2025"), 1735689600000.0);
        assert_eq!(date_parse("2025-01-01T01:00+01:00"), 1735689600000.0);
        assert_eq!(date_parse("2025-01-01T00:00:00.1239Z"), 1735689600123.0);
        // V8 rolls impossible days over (checked against node 20).
        assert_eq!(date_parse("2025-02-30T00:00:00.000Z"), 1740873600000.0);
        assert_eq!(date_parse("1969-12-31T23:59:59.999Z"), -1.0);
        assert_eq!(date_parse("+002025-01-01T00:00:00Z"), 1735689600000.0);
        assert_eq!(date_parse("2024-02-29T00:00:00Z"), 1709164800000.0);
        for bad in [
            "nope",
            "",
            "2025-13-01",
            "2025-02-32",
            "2025-01-01T25:00Z",
            "-000000-01-01",
            "2025-01-01T00:00:00.Z",
            "2025-1-1",
        ] {
            assert!(date_parse(bad).is_nan(), "{bad}");
        }
    }

    #[test]
    fn date_values_of_raw_json() {
        assert_eq!(
            js_date_value(Some("\"2025-01-01T00:00:00.000Z\"")),
            1735689600000.0
        );
        assert_eq!(js_date_value(Some("1500.7")), 1500.0);
        assert_eq!(js_date_value(Some("null")), 0.0);
        assert!(js_date_value(None).is_nan());
        assert!(js_date_value(Some("{}")).is_nan());
        assert!(js_date_value(Some("9e15")).is_nan());
    }

    #[test]
    fn numbers_of_strings_as_number_gives_them() {
        // Values from node 22: Number(s).
        for (text, n) in [
            ("", 0.0),
            (" \u{feff}12 \n", 12.0),
            ("0x10", 16.0),
            ("0b101", 5.0),
            ("0o17", 15.0),
            ("-1.5e3", -1500.0),
            ("+.5", 0.5),
            ("5.", 5.0),
            ("-Infinity", f64::NEG_INFINITY),
        ] {
            assert_eq!(string_to_number(text), n, "{text:?}");
        }
        for text in [
            "abc", "0x", "-0x10", "1e", "1_000", "NaN", "inf", "\u{85}1", "1 2", ".",
        ] {
            assert!(string_to_number(text).is_nan(), "{text:?}");
        }
        use serde_json::json;
        assert_eq!(to_number(&json!(null)), 0.0);
        assert_eq!(to_number(&json!(true)), 1.0);
        assert_eq!(to_number(&json!("20000")), 20000.0);
        assert_eq!(to_number(&json!([5])), 5.0);
        assert!(to_number(&json!({})).is_nan());
    }

    #[test]
    fn strings_of_values_as_string_gives_them() {
        use serde_json::json;
        assert_eq!(to_js_string(None), "undefined");
        assert_eq!(to_js_string(Some(&json!(null))), "null");
        assert_eq!(to_js_string(Some(&json!(5))), "5");
        assert_eq!(to_js_string(Some(&json!(1.5))), "1.5");
        assert_eq!(to_js_string(Some(&json!(1e21))), "1e+21");
        assert_eq!(to_js_string(Some(&json!([1, null, "a"]))), "1,,a");
        assert_eq!(to_js_string(Some(&json!({"a": 1}))), "[object Object]");
    }

    #[test]
    fn truthiness_and_trim() {
        assert!(!js_truthy(Some("\"\"")));
        assert!(js_truthy(Some("\"x\"")));
        assert!(!js_truthy(Some("0")));
        assert!(!js_truthy(Some("-0.0")));
        assert!(js_truthy(Some("[]")));
        assert!(!js_truthy(None));
        assert_eq!(js_trim("\u{feff}\u{a0} x \u{2028}"), "x");
        assert_eq!(js_trim("\u{85}x"), "\u{85}x");
    }
}
