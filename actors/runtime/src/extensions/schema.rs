//! Tool arguments checked against the tool's JSON Schema before `tool_call`, as pi does
//! (spec: extensions.md §1.2 "Tools"; pi-ai `validateToolArguments`).
//!
//! A small subset of JSON Schema, without a dependency: `type` (one or a list), `required`,
//! `properties`, `items`, `enum` and `additionalProperties: false`. Keywords outside it are
//! accepted unchecked; the extension still sees whatever arrives.

use serde_json::Value;

/// Checks `args` against `schema`. `Err` is pi's error text:
/// `Validation failed for tool "<name>":\n  - <path>: <message>…\n\nReceived arguments:\n<json>`.
pub fn validate(tool: &str, schema: &Value, args: &Value) -> Result<(), String> {
    let mut errors = Vec::new();
    check(schema, args, &mut Vec::new(), &mut errors);
    if errors.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = errors
        .iter()
        .map(|(path, message)| format!("  - {path}: {message}"))
        .collect();
    let pretty = serde_json::to_string_pretty(args).unwrap_or_default();
    Err(format!(
        "Validation failed for tool \"{tool}\":\n{}\n\nReceived arguments:\n{pretty}",
        lines.join("\n")
    ))
}

fn type_matches(name: &str, v: &Value) -> bool {
    match name {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.as_i64().is_some() || v.as_u64().is_some(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => true,
    }
}

fn path_text(path: &[String]) -> String {
    if path.is_empty() {
        "root".to_owned()
    } else {
        path.join(".")
    }
}

fn check(schema: &Value, v: &Value, path: &mut Vec<String>, errors: &mut Vec<(String, String)>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() && !types.iter().any(|t| type_matches(t, v)) {
        errors.push((path_text(path), format!("must be {}", types.join(","))));
        return;
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(v)
    {
        errors.push((
            path_text(path),
            "must be equal to one of the allowed values".into(),
        ));
    }
    if let Some(obj) = v.as_object() {
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !obj.contains_key(name) {
                    errors.push((
                        path_text(path),
                        format!("must have required property '{name}'"),
                    ));
                }
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (key, value) in obj {
            match props.and_then(|p| p.get(key)) {
                Some(sub) => {
                    path.push(key.clone());
                    check(sub, value, path, errors);
                    path.pop();
                }
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    errors.push((
                        path_text(path),
                        format!("must NOT have additional property '{key}'"),
                    ));
                }
                None => {}
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, item) in arr.iter().enumerate() {
            path.push(i.to_string());
            check(items, item, path, errors);
            path.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::validate;
    use serde_json::json;

    #[test]
    fn required_fields_and_types_are_checked_with_pis_wording() {
        let schema = json!({"type":"object","required":["text"],
            "properties":{"text":{"type":"string"},"n":{"type":"integer"}}});
        assert_eq!(
            validate("todo", &schema, &json!({"text":"a","n":2})),
            Ok(())
        );
        assert_eq!(
            validate("todo", &schema, &json!({"n":"x"})).unwrap_err(),
            "Validation failed for tool \"todo\":\n  - root: must have required property 'text'\n  - n: must be integer\n\nReceived arguments:\n{\n  \"n\": \"x\"\n}"
        );
    }
}
