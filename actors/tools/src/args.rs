//! Argument checking as pi 1.6.0 does it before a tool runs (pi-ai `validateToolArguments`:
//! pi-schema's coercion, then its check), so that a bad call gets pi's
//! `Validation failed for tool "…"` text.
//!
//! Only what the built-in schemas use is covered: objects of strings, numbers, booleans and
//! arrays of such objects. Coercion first drops a `null` given for an optional property (as if
//! it were left out), then converts values TypeBox-style (`"5"` to 5, a single value to a
//! one-element array, …).

use crate::tool::ToolError;
use serde_json::{Map, Value};

/// One property's type.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ty {
    /// A JSON string; numbers, booleans and `null` convert to their text.
    String,
    /// A JSON number; numeric strings, booleans and `null` convert.
    Number,
    /// A JSON boolean; `0`/`1`, `"true"`/`"false"` (any case), `"0"`/`"1"` and `null` convert
    /// (pi-schema's `tryBoolean`).
    Boolean,
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
/// (`Validation failed for tool "read":\n  - path: expected string, got array\n\nReceived arguments:\n…`).
pub(crate) fn validate(
    tool: &str,
    schema: &Object,
    args: &Value,
) -> Result<Map<String, Value>, ToolError> {
    let mut converted = args.clone();
    convert_object(schema, &mut converted);
    let mut errors = Vec::new();
    check_object(schema, &converted, "", &mut errors);
    match converted {
        Value::Object(map) if errors.is_empty() => Ok(map),
        _ => {
            let received = serde_json::to_string_pretty(args).unwrap_or_default();
            let listed: Vec<String> = errors.iter().map(|e| format!("  - {e}")).collect();
            Err(ToolError::Failed(format!(
                "Validation failed for tool \"{tool}\":\n{}\n\nReceived arguments:\n{received}",
                listed.join("\n")
            )))
        }
    }
}

fn convert_object(schema: &Object, value: &mut Value) {
    let Value::Object(map) = value else { return };
    for (name, _) in schema.props {
        if !schema.required.contains(name) && map.get(*name).is_some_and(Value::is_null) {
            map.remove(*name);
        }
    }
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
                Value::Number(_) | Value::Bool(_) | Value::Null => {
                    pith_events::js::to_js_string(Some(value))
                }
                _ => return,
            };
            *value = Value::String(text);
        }
        Ty::Number => {
            let number = match value {
                Value::String(s) => Some(pith_events::js::string_to_number(s))
                    .filter(|n| n.is_finite())
                    .or_else(|| {
                        // pi-schema's tryNumber: after `+value`, "true"/"false" in any case.
                        match s.to_lowercase().as_str() {
                            "true" => Some(1.0),
                            "false" => Some(0.0),
                            _ => None,
                        }
                    }),
                Value::Bool(b) => Some(f64::from(u8::from(*b))),
                Value::Null => Some(0.0),
                _ => None,
            };
            if let Some(n) = number.and_then(json_number_opt) {
                *value = Value::Number(n);
            }
        }
        Ty::Boolean => {
            let flag = match value {
                Value::Number(n) if n.as_f64() == Some(0.0) => Some(false),
                Value::Number(n) if n.as_f64() == Some(1.0) => Some(true),
                Value::Null => Some(false),
                Value::String(s) if s.eq_ignore_ascii_case("false") || s == "0" => Some(false),
                Value::String(s) if s.eq_ignore_ascii_case("true") || s == "1" => Some(true),
                _ => None,
            };
            if let Some(b) = flag {
                *value = Value::Bool(b);
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
pub(crate) fn json_number_opt(n: f64) -> Option<serde_json::Number> {
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        Some(serde_json::Number::from(n as i64))
    } else {
        serde_json::Number::from_f64(n)
    }
}

/// [`json_number_opt`] for any finite value (a non-finite one, which JSON cannot hold,
/// becomes 0).
pub(crate) fn json_number(n: f64) -> serde_json::Number {
    json_number_opt(n).unwrap_or_else(|| serde_json::Number::from(0))
}

/// pi-schema's error walk: a wrong type is `expected <type>, got <kind>`; then each missing
/// required property (`<name>: missing`), each property's own errors in schema order, and
/// each unknown property of a closed object (`<name>: unknown field`).
fn check_object(schema: &Object, value: &Value, path: &str, errors: &mut Vec<String>) {
    let Value::Object(map) = value else {
        errors.push(format!(
            "{}: expected object, got {}",
            display(path),
            kind(value)
        ));
        return;
    };
    for name in schema.required {
        if !map.contains_key(*name) {
            errors.push(format!("{}: missing", join(path, name)));
        }
    }
    for (name, ty) in schema.props {
        let Some(v) = map.get(*name) else { continue };
        let here = join(path, name);
        let expected = match ty {
            Ty::String if !v.is_string() => Some("string"),
            Ty::Number if !v.is_number() => Some("number"),
            Ty::Boolean if !v.is_boolean() => Some("boolean"),
            Ty::Array(_) if !v.is_array() => Some("array"),
            _ => None,
        };
        if let Some(expected) = expected {
            errors.push(format!("{here}: expected {expected}, got {}", kind(v)));
            continue;
        }
        if let (Ty::Array(item), Value::Array(items)) = (ty, v) {
            for (i, it) in items.iter().enumerate() {
                check_object(item, it, &join(&here, &i.to_string()), errors);
            }
        }
    }
    if !schema.additional {
        for key in map.keys() {
            if !schema.props.iter().any(|(name, _)| name == key) {
                errors.push(format!("{}: unknown field", join(path, key)));
            }
        }
    }
}

/// pi-schema's `typeName`: `integer` for a whole number, else the JSON kind.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n)
            if n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0) =>
        {
            "integer"
        }
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
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
            Err("Validation failed for tool \"read\":\n  - path: missing\n  - offset: expected number, got string\n\nReceived arguments:\n{\n  \"offset\": \"x\"\n}".into())
        );
    }
}
