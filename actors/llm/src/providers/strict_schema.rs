//! pi-ai's `makeStrictJsonSchema` (constrained-sampling.js): the strict form of a tool's
//! argument schema that providers with strict (validated) tool sampling take — every object
//! lists all its properties as required, a property that was optional becomes
//! `{anyOf: [schema, {type: "null"}]}` unless it already allows null, and objects allow no
//! additional properties. Schemas strict sampling cannot express have no strict form.

use serde_json::{Map, Value, json};

/// Keywords strict sampling does not support.
const UNSUPPORTED: [&str; 16] = [
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "prefixItems",
    "not",
    "if",
    "then",
    "else",
];

/// pi's `resolveJsonSchemaStrictSampling` for the OpenAI-style APIs (Chat Completions,
/// Responses): a tool's `parameters` and its `strict` flag. The strict schema goes out for a
/// tool that prefers it where the server knows strict mode and the schema has a strict form;
/// `strict` is `None` where the server does not know strict mode (no flag is sent).
pub(crate) fn openai_parameters(
    tool: &pith_events::ToolSpec,
    supports_strict_mode: bool,
) -> (Value, Option<bool>) {
    let strict = (supports_strict_mode && tool.prefers_strict_schema)
        .then(|| strict_json_schema(&tool.parameters))
        .flatten();
    let flag = supports_strict_mode.then_some(strict.is_some());
    (strict.unwrap_or_else(|| tool.parameters.clone()), flag)
}

/// The strict form of `schema` (an object schema), or `None` when it has none (pi's
/// `UnsupportedStrictJsonSchemaError`: unsupported keywords, untyped nodes, object or array
/// unions, tuples, open `additionalProperties`, a root that is not an object).
pub(crate) fn strict_json_schema(schema: &Value) -> Option<Value> {
    strict_json_schema_where(schema, &|_, _| false)
}

/// [`strict_json_schema`] for a provider that supports fewer keywords: a node holding a
/// `(keyword, value)` for which `unsupported` is true has no strict form either (pi's
/// `isUnsupportedKeyword`).
pub(crate) fn strict_json_schema_where(
    schema: &Value,
    unsupported: &dyn Fn(&str, &Value) -> bool,
) -> Option<Value> {
    let mut strict = schema.clone();
    make_strict(&mut strict, unsupported)?;
    (strict.get("type").and_then(Value::as_str) == Some("object")).then_some(strict)
}

fn types(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// pi's `isStructuredSchema`.
fn is_structured(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    let types = types(map);
    types.contains(&"object")
        || types.contains(&"array")
        || map.contains_key("properties")
        || map.contains_key("items")
}

/// pi's `schemaAllowsNull`.
fn allows_null(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    types(map).contains(&"null")
        || map.get("const") == Some(&Value::Null)
        || map
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.contains(&Value::Null))
        || map
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|variants| variants.iter().any(allows_null))
}

/// pi's `makeJsonSchemaNodeStrict`, in place; `None` where it throws.
fn make_strict(schema: &mut Value, unsupported: &dyn Fn(&str, &Value) -> bool) -> Option<()> {
    let map = schema.as_object_mut()?;
    if UNSUPPORTED.iter().any(|k| map.contains_key(*k)) {
        return None;
    }
    if map.iter().any(|(k, v)| unsupported(k, v)) {
        return None;
    }
    if !map.contains_key("type") && !map.contains_key("anyOf") && !map.contains_key("enum") {
        return None;
    }
    if let Some(any_of) = map.get_mut("anyOf") {
        let variants = any_of.as_array_mut().filter(|v| !v.is_empty())?;
        for variant in variants {
            if is_structured(variant) {
                return None;
            }
            make_strict(variant, unsupported)?;
        }
    }
    if let Some(items) = map.get_mut("items") {
        if items.is_array() {
            return None;
        }
        make_strict(items, unsupported)?;
    }
    let is_object = map.get("type").and_then(Value::as_str) == Some("object");
    if map.contains_key("properties") && !is_object {
        return None;
    }
    if !is_object {
        return Some(());
    }
    if map
        .get("additionalProperties")
        .is_some_and(|a| *a != Value::Bool(false))
    {
        return None;
    }
    if map.get("properties").is_some_and(|p| !p.is_object()) {
        return None;
    }
    let required: Vec<String> = match map.get("required") {
        None => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .map(|k| k.as_str().map(str::to_owned))
            .collect::<Option<_>>()?,
        Some(_) => return None,
    };
    // pi writes back into the same object: keys keep their places.
    let names: Vec<Value> = match map.get_mut("properties") {
        Some(Value::Object(properties)) => {
            if required.iter().any(|k| !properties.contains_key(k)) {
                return None;
            }
            for (key, property) in properties.iter_mut() {
                make_strict(property, unsupported)?;
                if !required.contains(key) && !allows_null(property) {
                    *property = json!({"anyOf": [property.take(), {"type": "null"}]});
                }
            }
            properties.keys().cloned().map(Value::from).collect()
        }
        _ if !required.is_empty() => return None,
        _ => Vec::new(),
    };
    map.insert("required".into(), Value::Array(names));
    map.insert("additionalProperties".into(), Value::Bool(false));
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_properties_become_nullable_and_required() {
        let schema = json!({"type": "object", "required": ["path"], "properties": {
            "path": {"type": "string"}, "limit": {"type": "number", "description": "n"},
            "edits": {"type": "array", "items": {"type": "object", "properties": {
                "old": {"type": "string"}}, "required": ["old"]}}}});
        assert_eq!(
            strict_json_schema(&schema).unwrap(),
            json!({"type": "object", "required": ["path", "limit", "edits"], "properties": {
                "path": {"type": "string"},
                "limit": {"anyOf": [{"type": "number", "description": "n"}, {"type": "null"}]},
                "edits": {"anyOf": [{"type": "array", "items": {"type": "object",
                    "properties": {"old": {"type": "string"}}, "required": ["old"],
                    "additionalProperties": false}}, {"type": "null"}]}},
                "additionalProperties": false})
        );
    }

    #[test]
    fn schemas_strict_sampling_cannot_express_have_no_strict_form() {
        for schema in [
            json!({"type": "object", "properties": {"a": {"description": "untyped"}}}),
            json!({"type": "object", "additionalProperties": true}),
            json!({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}}),
            json!({"type": "string"}),
            json!({"type": "object", "required": ["missing"], "properties": {}}),
        ] {
            assert_eq!(strict_json_schema(&schema), None, "{schema}");
        }
    }
}
