//! Argument checking as pi does it before a tool runs (pi-ai `validateToolArguments`: TypeBox
//! `Value.Convert`, then `Check`), so that a bad call gets pi's
//! `Validation failed for tool "…"` text.
//!
//! Only what the built-in schemas use is covered: objects of strings, numbers and arrays of
//! such objects.

use serde_json::{Map, Value};

/// One property's type.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ty {
    /// A JSON string; numbers, booleans and `null` convert to their text.
    String,
    /// A JSON number; numeric strings, booleans and `null` convert.
    Number,
    /// An array of objects; any other value becomes a one-element array.
    Array(&'static Object),
}

/// An object schema.
#[derive(Debug)]
pub(crate) struct Object {
    /// Properties in schema order (which is pi's error order).
    pub props: &'static [(&'static str, Ty)],
    /// Required property names, in schema order.
    pub required: &'static [&'static str],
    /// Whether unknown properties are allowed (`additionalProperties` absent).
    pub additional: bool,
}

/// Converts `args` as TypeBox does and checks them against `schema`; the error is pi's text
/// (`Validation failed for tool "read":\n  - path: must be string\n\nReceived arguments:\n…`).
pub(crate) fn validate(
    tool: &str,
    schema: &Object,
    args: &Value,
) -> Result<Map<String, Value>, String> {
    let mut converted = args.clone();
    convert_object(schema, &mut converted);
    let mut errors = Vec::new();
    check_object(schema, &converted, "", &mut errors);
    match converted {
        Value::Object(map) if errors.is_empty() => Ok(map),
        _ => {
            let received = serde_json::to_string_pretty(args).unwrap_or_default();
            let listed: Vec<String> = errors.iter().map(|e| format!("  - {e}")).collect();
            Err(format!(
                "Validation failed for tool \"{tool}\":\n{}\n\nReceived arguments:\n{received}",
                listed.join("\n")
            ))
        }
    }
}

fn convert_object(schema: &Object, value: &mut Value) {
    let Value::Object(map) = value else { return };
    for (name, ty) in schema.props {
        if let Some(v) = map.get_mut(*name) {
            convert(*ty, v);
        }
    }
}

fn convert(ty: Ty, value: &mut Value) {
    match ty {
        Ty::String => {
            let text = match value {
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                Value::Null => "null".to_owned(),
                _ => return,
            };
            *value = Value::String(text);
        }
        Ty::Number => {
            let number = match value {
                Value::String(s) => js_string_to_number(s),
                Value::Bool(b) => Some(f64::from(u8::from(*b))),
                Value::Null => Some(0.0),
                _ => None,
            };
            if let Some(n) = number.and_then(json_number) {
                *value = Value::Number(n);
            }
        }
        Ty::Array(item) => {
            if !value.is_array() {
                *value = Value::Array(vec![value.take()]);
            }
            if let Value::Array(items) = value {
                for v in items {
                    convert_object(item, v);
                }
            }
        }
    }
}

/// A whole number stays an integer in JSON, as JavaScript prints it.
fn json_number(n: f64) -> Option<serde_json::Number> {
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        Some(serde_json::Number::from(n as i64))
    } else {
        serde_json::Number::from_f64(n)
    }
}

/// JavaScript's `Number(text)` for finite results: blank is 0, `0x`/`0o`/`0b` prefixes,
/// decimal literals with an exponent.
fn js_string_to_number(text: &str) -> Option<f64> {
    let t = text.trim();
    if t.is_empty() {
        return Some(0.0);
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
            return u64::from_str_radix(digits, radix).ok().map(|n| n as f64);
        }
    }
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let decimal = !body.is_empty()
        && body
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        && body.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    if !decimal {
        return None;
    }
    t.parse::<f64>().ok().filter(|n| n.is_finite())
}

fn check_object(schema: &Object, value: &Value, path: &str, errors: &mut Vec<String>) {
    let Value::Object(map) = value else {
        errors.push(format!("{}: must be object", display(path)));
        return;
    };
    let missing: Vec<&str> = schema
        .required
        .iter()
        .copied()
        .filter(|name| !map.contains_key(*name))
        .collect();
    if let Some(first) = missing.first() {
        errors.push(format!(
            "{}: must have required properties {}",
            join(path, first),
            missing.join(", ")
        ));
    }
    if !schema.additional {
        let extra: Vec<&String> = map
            .keys()
            .filter(|k| !schema.props.iter().any(|(name, _)| name == k))
            .collect();
        for key in &extra {
            errors.push(format!("{}: schema is false", join(path, key)));
        }
        if !extra.is_empty() {
            errors.push(format!(
                "{}: must not have additional properties",
                display(path)
            ));
        }
    }
    for (name, ty) in schema.props {
        let Some(v) = map.get(*name) else { continue };
        let here = join(path, name);
        match ty {
            Ty::String if !v.is_string() => errors.push(format!("{here}: must be string")),
            Ty::Number if !v.is_number() => errors.push(format!("{here}: must be number")),
            Ty::Array(item) => match v {
                Value::Array(items) => {
                    for (i, it) in items.iter().enumerate() {
                        check_object(item, it, &join(&here, &i.to_string()), errors);
                    }
                }
                _ => errors.push(format!("{here}: must be array")),
            },
            Ty::String | Ty::Number => {}
        }
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn display(path: &str) -> &str {
    if path.is_empty() { "root" } else { path }
}

/// The text of a JSON number as JavaScript prints it (`5`, `2.5`).
pub(crate) fn js_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const READ: Object = Object {
        props: &[("path", Ty::String), ("offset", Ty::Number)],
        required: &["path"],
        additional: true,
    };

    #[test]
    fn converts_like_typebox() {
        let out = validate("read", &READ, &json!({"path": 5, "offset": "0x10"}));
        assert_eq!(
            out,
            Ok(json!({"path": "5", "offset": 16})
                .as_object()
                .cloned()
                .unwrap_or_default())
        );
    }

    #[test]
    fn reports_like_pi() {
        let err = validate("read", &READ, &json!({"offset": "x"}));
        assert_eq!(
            err,
            Err("Validation failed for tool \"read\":\n  - path: must have required properties path\n  - offset: must be number\n\nReceived arguments:\n{\n  \"offset\": \"x\"\n}".to_owned())
        );
    }
}
