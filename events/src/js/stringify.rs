//! JSON spelled the way JavaScript's `JSON.stringify` spells it (spec README, "JS-isms").
//!
//! serde_json's compact output already matches `JSON.stringify` for strings (short escapes,
//! lowercase `\u00xx`, `/` and non-ASCII raw) and for integers. Floats differ: serde_json uses
//! ryu's exponent form (`7.500000000000001e-5`, `1e21`, `5.0`) where JavaScript writes
//! `0.00007500000000000001`, `1e+21` and `5`. [`JsFormatter`] fixes that, so a line pith
//! creates is byte-for-byte the line pi would have written for the same value.

use std::io;

use serde::Serialize;
use serde_json::ser::Formatter;

/// serde_json formatter that writes finite `f64`s as `Number.prototype.toString` does.
/// Non-finite values never reach it: serde_json writes them as `null`, as `JSON.stringify` does.
#[derive(Debug, Default, Clone, Copy)]
pub struct JsFormatter;

impl Formatter for JsFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(format_js_number(value).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        writer.write_all(format_js_number(f64::from(value)).as_bytes())
    }
}

/// Serializes `value` as one compact JSON text, spelled as `JSON.stringify(value)` would be.
///
/// Errors: only what `value`'s `Serialize` impl reports (e.g. a map with non-string keys).
pub fn to_js_json<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, JsFormatter);
    value.serialize(&mut ser)?;
    // serde_json only ever writes UTF-8.
    String::from_utf8(out).map_err(|e| serde_json::Error::io(io::Error::other(e)))
}

/// `Number.prototype.toString()` for a finite double (ECMA-262 Number::toString, radix 10).
///
/// Shortest round-trip digits come from ryu; JavaScript only differs in where it puts them:
/// plain notation for decimal exponents in `-6..21`, otherwise `d.ddde±n`. `-0` is `0`;
/// non-finite values give `NaN`, `Infinity` or `-Infinity`.
pub fn format_js_number(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if value == 0.0 {
        return "0".to_owned();
    }
    let mut buf = ryu::Buffer::new();
    let shortest = buf.format_finite(value.abs());
    let (digits, n) = decimal_digits(shortest);
    let k = digits.len() as i32;
    let mut out = String::with_capacity(24);
    if value < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n >= 1 { '+' } else { '-' });
        out.push_str(&(n - 1).abs().to_string());
    }
    out
}

/// Splits ryu's output (`123.45`, `1e21`, `7.5e-5`, `5.0`) into significant digits without
/// leading/trailing zeros and the exponent `n` with value = 0.d1d2… × 10^n.
fn decimal_digits(s: &str) -> (String, i32) {
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().unwrap_or(0)),
        None => (s, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits: String = int_part.chars().chain(frac_part.chars()).collect();
    let mut n = int_part.len() as i32 + exp;
    let leading = digits.len() - digits.trim_start_matches('0').len();
    digits.drain(..leading);
    n -= leading as i32;
    let trimmed = digits.trim_end_matches('0').len();
    digits.truncate(trimmed);
    (digits, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_spelled_like_javascript() {
        // Expected strings are what node 20 prints for `String(x)`.
        let cases: &[(f64, &str)] = &[
            (0.00007500000000000001, "0.00007500000000000001"),
            (7.5e-7, "7.5e-7"),
            (0.000001, "0.000001"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456789012345680000.0, "123456789012345680000"),
            (5.0, "5"),
            (-0.0, "0"),
            (-1.5, "-1.5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.7e308, "1.7e+308"),
            (5e-324, "5e-324"),
            (0.0035372, "0.0035372"),
            (1759890470640.0, "1759890470640"),
            (1.5e-10, "1.5e-10"),
            (123.456, "123.456"),
        ];
        for &(x, want) in cases {
            assert_eq!(format_js_number(x), want, "for {x:e}");
        }
    }

    #[test]
    fn strings_are_escaped_like_json_stringify() {
        let s = "a\u{1}\u{1f}\"\\/\u{7f}\u{2028}é\t\n\r\u{8}\u{c}";
        // JSON.stringify: short escapes for \b\t\n\f\r, lowercase \u00xx for other controls,
        // everything else (including / DEL U+2028) raw.
        assert_eq!(
            to_js_json(s).expect("serializes"),
            "\"a\\u0001\\u001f\\\"\\\\/\u{7f}\u{2028}é\\t\\n\\r\\b\\f\""
        );
    }

    proptest::proptest! {
        #[test]
        fn js_spelling_round_trips(x in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL) {
            let s = format_js_number(x);
            let back: f64 = s.parse().expect("a JS number string parses as f64");
            proptest::prop_assert_eq!(back, if x == 0.0 { 0.0 } else { x });
        }
    }
}
