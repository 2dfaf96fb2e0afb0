//! JSON as models stream it: tool-call arguments arrive in pieces, and some models write
//! invalid escapes or raw control characters inside strings.
//!
//! A port of pi-ai's `utils/json-parse.js` (`repairJson`, `parseJsonWithRepair`,
//! `parseStreamingJson`) and of the `partial-json` 0.1.7 parser it falls back to, quirks
//! included, so a partial tool call shows the same arguments as in pi.

use serde_json::{Map, Value};

/// Escapes that JSON allows after a backslash.
const VALID_ESCAPES: &[char] = &['"', '\\', '/', 'b', 'f', 'n', 'r', 't', 'u'];

/// Repairs string literals: raw control characters inside strings are escaped, and a
/// backslash before a character JSON cannot escape is doubled (pi-ai `repairJson`).
pub fn repair_json(json: &str) -> String {
    let chars: Vec<char> = json.chars().collect();
    let mut out = String::with_capacity(json.len());
    let mut in_string = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if !in_string {
            out.push(c);
            in_string = c == '"';
            i += 1;
            continue;
        }
        match c {
            '"' => {
                out.push(c);
                in_string = false;
            }
            '\\' => match chars.get(i + 1) {
                None => out.push_str("\\\\"),
                Some('u')
                    if chars.len() >= i + 6
                        && chars[i + 2..i + 6].iter().all(|d| d.is_ascii_hexdigit()) =>
                {
                    out.push_str("\\u");
                    out.extend(&chars[i + 2..i + 6]);
                    i += 5;
                }
                Some(&next) if VALID_ESCAPES.contains(&next) => {
                    out.push('\\');
                    out.push(next);
                    i += 1;
                }
                Some(_) => out.push_str("\\\\"),
            },
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// Parses complete JSON, retrying once on the repaired text when it differs (pi-ai
/// `parseJsonWithRepair`).
///
/// Errors: serde's error for the original text when neither parses.
pub fn parse_json_with_repair(json: &str) -> Result<Value, serde_json::Error> {
    match serde_json::from_str(json) {
        Ok(v) => Ok(v),
        Err(e) => {
            let repaired = repair_json(json);
            if repaired != json {
                serde_json::from_str(&repaired)
            } else {
                Err(e)
            }
        }
    }
}

/// The arguments so far of a streamed tool call: complete JSON (repaired if need be), else
/// the longest prefix `partial-json` makes sense of (a `null` there becomes `{}`), else `{}`
/// (pi-ai `parseStreamingJson`). Never fails.
pub fn parse_streaming_json(partial: &str) -> Value {
    if partial.trim().is_empty() {
        return Value::Object(Map::new());
    }
    if let Ok(v) = parse_json_with_repair(partial) {
        return v;
    }
    let parsed = parse_partial(partial)
        .ok()
        .or_else(|| parse_partial(&repair_json(partial)).ok());
    match parsed {
        Some(Value::Null) | None => Value::Object(Map::new()),
        Some(v) => v,
    }
}

/// Why `partial-json` gave up: the input ends too early where that is not allowed, or it is
/// not JSON at all. With every partial kind allowed (pi's use), both end the same way.
#[derive(Debug)]
enum Partial {
    Incomplete,
    Malformed,
}

/// `partial-json`'s `parse(text)` with `Allow.ALL`. `NaN` and `±Infinity` become `null`, as
/// they do once JavaScript writes the arguments out.
fn parse_partial(text: &str) -> Result<Value, Partial> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Partial::Malformed);
    }
    PartialParser { s: text, i: 0 }.any()
}

/// `JSON.parse` of a slice given by byte offsets that may not fall on character boundaries.
fn json_at(s: &str, from: usize, to: usize) -> Result<Value, Partial> {
    let slice = s.get(from..to).ok_or(Partial::Malformed)?;
    serde_json::from_str(slice).map_err(|_| Partial::Malformed)
}

/// JavaScript's `s.substring(a, b)` on byte offsets: negative ends count as 0 and the ends
/// are swapped when `a > b`.
fn js_substring(s: &str, a: isize, b: isize) -> Option<&str> {
    let clamp = |x: isize| x.clamp(0, s.len() as isize) as usize;
    let (a, b) = (clamp(a), clamp(b));
    s.get(a.min(b)..a.max(b))
}

fn last_index_of(s: &str, b: u8) -> isize {
    s.bytes().rposition(|x| x == b).map_or(-1, |i| i as isize)
}

struct PartialParser<'a> {
    s: &'a str,
    i: usize,
}

impl PartialParser<'_> {
    fn byte(&self) -> Option<u8> {
        self.s.as_bytes().get(self.i).copied()
    }

    fn rest(&self) -> &str {
        self.s.get(self.i..).unwrap_or("")
    }

    fn skip_blank(&mut self) {
        while matches!(self.byte(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.i += 1;
        }
    }

    /// A literal, complete or (at the very end of the input) a prefix of it.
    fn literal(&mut self, word: &str, min_left: usize) -> bool {
        let rest = self.rest();
        let whole = rest.starts_with(word);
        let prefix = rest.len() < word.len() && rest.len() > min_left && word.starts_with(rest);
        if whole || prefix {
            self.i += word.len();
        }
        whole || prefix
    }

    fn any(&mut self) -> Result<Value, Partial> {
        self.skip_blank();
        match self.byte() {
            None => return Err(Partial::Incomplete),
            Some(b'"') => return self.string().map(Value::String),
            Some(b'{') => return Ok(self.object()),
            Some(b'[') => return Ok(self.array()),
            Some(_) => {}
        }
        if self.literal("null", 0) {
            return Ok(Value::Null);
        }
        if self.literal("true", 0) {
            return Ok(Value::Bool(true));
        }
        if self.literal("false", 0) {
            return Ok(Value::Bool(false));
        }
        if self.literal("Infinity", 0) || self.literal("-Infinity", 1) || self.literal("NaN", 0) {
            return Ok(Value::Null);
        }
        self.number()
    }

    fn string(&mut self) -> Result<String, Partial> {
        let bytes = self.s.as_bytes();
        let start = self.i;
        let mut escape = false;
        self.i += 1;
        while self.i < bytes.len()
            && (bytes[self.i] != b'"' || (escape && bytes[self.i - 1] == b'\\'))
        {
            escape = bytes[self.i] == b'\\' && !escape;
            self.i += 1;
        }
        let as_string = |v: Value| match v {
            Value::String(s) => Ok(s),
            _ => Err(Partial::Malformed),
        };
        if self.byte() == Some(b'"') {
            self.i += 1;
            return json_at(self.s, start, self.i - usize::from(escape)).and_then(as_string);
        }
        // Unterminated: close it, or cut before the last backslash (a half escape).
        let body = self
            .s
            .get(start..self.i - usize::from(escape))
            .unwrap_or("");
        if let Ok(v) = serde_json::from_str(&format!("{body}\"")) {
            return as_string(v);
        }
        let cut = js_substring(self.s, start as isize, last_index_of(self.s, b'\\'))
            .ok_or(Partial::Malformed)?;
        serde_json::from_str(&format!("{cut}\""))
            .map_err(|_| Partial::Malformed)
            .and_then(as_string)
    }

    /// An object; whatever fails inside ends it with the members parsed so far, leaving the
    /// position where the failure was (the enclosing value goes on from there).
    fn object(&mut self) -> Value {
        self.i += 1;
        self.skip_blank();
        let mut map = Map::new();
        while self.byte() != Some(b'}') {
            self.skip_blank();
            if self.i >= self.s.len() {
                return Value::Object(map);
            }
            let Ok(key) = self.string() else {
                return Value::Object(map);
            };
            self.skip_blank();
            self.i += 1; // the colon, unchecked as in partial-json
            match self.any() {
                Ok(value) => {
                    map.insert(key, value);
                }
                Err(_) => return Value::Object(map),
            }
            self.skip_blank();
            if self.byte() == Some(b',') {
                self.i += 1;
            }
        }
        self.i += 1;
        Value::Object(map)
    }

    /// An array; whatever fails inside ends it with the items parsed so far.
    fn array(&mut self) -> Value {
        self.i += 1;
        let mut items = Vec::new();
        while self.byte() != Some(b']') {
            let before = self.i;
            match self.any() {
                Ok(v) => items.push(v),
                Err(_) => return Value::Array(items),
            }
            // An item that consumed nothing would repeat forever; end the array there.
            if self.i == before {
                return Value::Array(items);
            }
            self.skip_blank();
            if self.byte() == Some(b',') {
                self.i += 1;
            }
        }
        self.i += 1;
        Value::Array(items)
    }

    fn number(&mut self) -> Result<Value, Partial> {
        let s = self.s;
        if self.i == 0 {
            if s == "-" {
                return Err(Partial::Malformed);
            }
            return serde_json::from_str(s).or_else(|_| {
                js_substring(s, 0, last_index_of(s, b'e'))
                    .and_then(|t| serde_json::from_str(t).ok())
                    .ok_or(Partial::Malformed)
            });
        }
        let start = self.i;
        if self.byte() == Some(b'-') {
            self.i += 1;
        }
        while matches!(self.byte(), Some(b) if !b",]}".contains(&b)) {
            self.i += 1;
        }
        if let Ok(v) = json_at(s, start, self.i) {
            return Ok(v);
        }
        if s.get(start..self.i) == Some("-") {
            return Err(Partial::Incomplete);
        }
        js_substring(s, start as isize, last_index_of(s, b'e'))
            .and_then(|t| serde_json::from_str(t).ok())
            .ok_or(Partial::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Inputs and what pi-ai's `parseStreamingJson` (node, partial-json 0.1.7) returned.
    #[test]
    fn streaming_prefixes_parse_as_pi_does() {
        let cases = [
            ("", r#"{}"#),
            ("   ", r#"{}"#),
            ("{", r#"{}"#),
            ("{\"pa", r#"{}"#),
            ("{\"path\"", r#"{}"#),
            ("{\"path\":", r#"{}"#),
            ("{\"path\": \"src/m", r#"{"path":"src/m"}"#),
            ("{\"path\": \"a\\", r#"{"path":"a"}"#),
            ("{\"path\": \"a\\u00", r#"{"path":"a"}"#),
            ("{\"path\": \"a\", \"n\": 12", r#"{"path":"a","n":12}"#),
            ("{\"path\": \"a\", \"n\": -", r#"{"path":"a"}"#),
            ("{\"ok\": tr", r#"{"ok":true}"#),
            ("{\"ok\": nu", r#"{"ok":null}"#),
            ("{\"xs\": [1, 2, {\"y\": \"z", r#"{"xs":[1,2,{"y":"z"}]}"#),
            ("{\"a\": 1}", r#"{"a":1}"#),
            ("{\"a\": 1} trailing", r#"{"a":1}"#),
            ("null", r#"null"#),
            ("[1, 2", r#"[1,2]"#),
            ("{\"q\": \"say \\\"hi\\\"\"", r#"{"q":"say \"hi\""}"#),
            ("{\"a\":\"tab\there", r#"{}"#),
            ("{\"a\":\"tab\there\"}", r#"{"a":"tab\there"}"#),
            ("}{", r#"{}"#),
            ("{a:1}", r#"{}"#),
            ("-", r#"{}"#),
            ("[,]x", r#"[]"#),
            ("éé", r#"{}"#),
            ("{\"a\": 1.", r#"{}"#),
            ("{\"a\": 1e", r#"{"a":1}"#),
            ("{\"a\": 1e5, \"b\": [tru", r#"{"a":100000,"b":[true]}"#),
            ("[{\"a\":1, x], 2]", r#"[{"a":1}]"#),
            ("{\"a\": -Inf", r#"{"a":null}"#),
            ("{\"a\": NaN}", r#"{"a":null}"#),
            ("{\"e\": \"x\", \"n\": 1.", r#"{"e":"x"}"#),
            (
                "{\"a\": {\"b\": [1, {\"c\": \"d\\n",
                r#"{"a":{"b":[1,{"c":"d\n"}]}}"#,
            ),
            ("12", r#"12"#),
            ("1e", r#"1"#),
            ("\"str", r#""str""#),
            ("[1, [2, [3", r#"[1,[2,[3]]]"#),
            ("{\"a\":\"C:\\dir\", \"b\": 1", r#"{}"#),
        ];
        for (text, expected) in cases {
            // Compared as JavaScript writes them: 1e5 and 100000 are one number there.
            let actual = pith_events::js::to_js_json(&parse_streaming_json(text)).expect("json");
            assert_eq!(actual, expected, "{text:?}");
        }
    }

    #[test]
    fn repairs_control_characters_and_bad_escapes() {
        assert_eq!(repair_json("{\"a\":\"x\ny\"}"), "{\"a\":\"x\\ny\"}");
        assert_eq!(repair_json("{\"a\":\"C:\\dir\"}"), "{\"a\":\"C:\\\\dir\"}");
        assert_eq!(
            repair_json("{\"a\":\"\\u00e9\\q\"}"),
            "{\"a\":\"\\u00e9\\\\q\"}"
        );
        assert_eq!(repair_json("{\"a\":\"\u{1}\"}"), "{\"a\":\"\\u0001\"}");
        assert_eq!(
            parse_json_with_repair("{\"a\":\"C:\\dir\"}").ok(),
            Some(json!({"a": "C:\\dir"}))
        );
        assert!(parse_json_with_repair("{nope").is_err());
        // A raw control character spoils the partial string: partial-json gives up on the
        // member (its object keeps what came before), so the repair is never tried.
        assert_eq!(parse_streaming_json("{\"a\":\"tab\there"), json!({}));
        assert_eq!(
            parse_streaming_json("{\"a\":\"tab\there\"}"),
            json!({"a": "tab\there"})
        );
    }

    #[test]
    fn garbage_gives_an_empty_object() {
        for text in ["}{", "{a:1}", "-", "[,]x", "\u{e9}\u{e9}"] {
            let v = parse_streaming_json(text);
            assert!(v.is_object() || v.is_array(), "{text:?} -> {v}");
        }
    }
}
