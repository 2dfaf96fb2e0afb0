//! The request pi-ai 1.6.0 sends to Gemini (`api/google-generative-ai.js` `buildParams`,
//! `api/google-shared.js` `convertMessages`/`convertTools`), as `@google/genai` 2.32 puts it
//! on the wire (`generateContentParametersToMldev`): `contents, systemInstruction?, tools?,
//! generationConfig: {maxOutputTokens, thinkingConfig?}`, every object's members in the SDK's
//! order.
//!
//! Thinking: levels are clamped as pi clamps them; Gemini 3+, `*-latest` and Gemma 4 get a
//! `thinkingLevel` (`LOW`, …), other models a token `thinkingBudget` (per model family, or the
//! `thinkingBudgets` setting); `off` on a thinking model sends `thinkingBudget: 0`, or the
//! lowest level a model that cannot stop thinking has.

use pith_events::ThinkingLevel;
use serde_json::{Map, Value, json};

use pith_events::js::js_trim;
use pith_events::{AgentMessage, ContentBlock, ToolSpec, UserContent};

use super::simple_options::max_tokens;
use super::transform::{sanitize_id, transform_messages};
use super::{ProviderOptions, clamp_thinking_level};
use crate::model::Model;
use crate::provider::ProviderRequest;

/// The JSON body for `request`.
///
/// Errors: pi's text when the model's `thinkingLevelMap` maps the level to something Gemini
/// has no level for.
pub(crate) fn request_body(
    model: &Model,
    request: &ProviderRequest,
    options: &ProviderOptions,
) -> Result<Value, String> {
    let thinking = thinking_config(model, request, options)?;
    let mut body = Map::new();
    body.insert("contents".into(), Value::Array(contents(model, request)));
    if let Some(system) = request.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}], "role": "user"}),
        );
    }
    if !request.tools.is_empty() {
        let strict = supports_strict_tools(&model.id);
        let declarations = tools(&request.tools, strict);
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations.0}]),
        );
        // pi's `resolveGoogleFunctionCallingMode` without a tool choice.
        if declarations.1 {
            body.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": {"mode": "VALIDATED"}}),
            );
        }
    }
    let mut generation = Map::new();
    generation.insert("maxOutputTokens".into(), json!(max_tokens(model, request)));
    if let Some(t) = thinking {
        generation.insert("thinkingConfig".into(), t);
    }
    body.insert("generationConfig".into(), Value::Object(generation));
    Ok(Value::Object(body))
}

/// `thinkingConfig`, `None` for a model that cannot think.
fn thinking_config(
    model: &Model,
    request: &ProviderRequest,
    options: &ProviderOptions,
) -> Result<Option<Value>, String> {
    if !model.reasoning {
        return Ok(None);
    }
    let level = if request.thinking_level == ThinkingLevel::Off {
        ThinkingLevel::Off
    } else {
        clamp_thinking_level(model, request.thinking_level)
    };
    if level == ThinkingLevel::Off {
        return disabled_thinking(model).map(Some);
    }
    let resolved = resolve_level(model, level.as_str())?;
    Ok(Some(if uses_thinking_level(model) {
        json!({"includeThoughts": true, "thinkingLevel": resolved.to_uppercase()})
    } else {
        json!({"includeThoughts": true, "thinkingBudget": budget(model, &resolved, options)})
    }))
}

/// pi's `getDisabledGoogleThinkingConfig`: models with levels that cannot stop thinking get
/// their lowest level instead of a zero budget.
fn disabled_thinking(model: &Model) -> Result<Value, String> {
    if !uses_thinking_level(model) {
        return Ok(json!({"thinkingBudget": 0}));
    }
    let fallback = clamp_thinking_level(model, ThinkingLevel::Off);
    if fallback == ThinkingLevel::Off {
        return Ok(json!({"thinkingBudget": 0}));
    }
    let resolved = resolve_level(model, fallback.as_str())?;
    Ok(json!({"thinkingLevel": resolved.to_uppercase()}))
}

/// pi's `resolveGoogleThinkingLevel`: the model's mapping (lowercased) or the level itself,
/// which must be one Gemini has.
fn resolve_level(model: &Model, level: &str) -> Result<String, String> {
    let mapped = model
        .thinking_level_map
        .as_ref()
        .and_then(|m| m.get(level))
        .cloned()
        .flatten();
    let resolved = mapped
        .as_deref()
        .map_or_else(|| level.to_owned(), str::to_lowercase);
    match resolved.as_str() {
        "minimal" | "low" | "medium" | "high" => Ok(resolved),
        _ => Err(format!(
            "Unsupported Google thinking level mapping for {}/{}: {level} -> {}",
            model.provider,
            model.id,
            mapped.as_deref().unwrap_or("undefined")
        )),
    }
}

/// pi's `usesGoogleThinkingLevel`: Gemini 3 Pro/Flash, Gemini 4 and later, the `*-latest`
/// Flash aliases and Gemma 4 take levels; the rest take token budgets.
pub(crate) fn uses_thinking_level(model: &Model) -> bool {
    let id = model.id.to_lowercase();
    let gemini3 = id.find("gemini-3").is_some_and(|at| {
        let rest = &id[at + "gemini-3".len()..];
        let rest = match rest.strip_prefix('.') {
            Some(r) if r.starts_with(|c: char| c.is_ascii_digit()) => {
                r.trim_start_matches(|c: char| c.is_ascii_digit())
            }
            _ => rest,
        };
        rest.starts_with("-pro") || rest.starts_with("-flash")
    });
    let gemini4_up = id.match_indices("gemini-").any(|(at, m)| {
        let rest = &id[at + m.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        match digits.len() {
            0 => false,
            1 => digits.as_str() >= "4",
            _ => !digits.starts_with('0'),
        }
    });
    let gemma4 = id.contains("gemma4") || id.contains("gemma-4");
    gemini3
        || gemini4_up
        || id == "gemini-flash-latest"
        || id == "gemini-flash-lite-latest"
        || gemma4
}

/// pi's `getGoogleBudget` for a resolved level: the `thinkingBudgets` setting, else per
/// Gemini 2.5 family, else `-1` (the model decides).
fn budget(model: &Model, level: &str, options: &ProviderOptions) -> i64 {
    if let Some(b) = options.thinking_budgets.get(level) {
        return *b as i64;
    }
    let table: [i64; 4] = if model.id.contains("2.5-pro") {
        [128, 2048, 8192, 32768]
    } else if model.id.contains("2.5-flash-lite") {
        [512, 2048, 8192, 24576]
    } else if model.id.contains("2.5-flash") {
        [128, 2048, 8192, 24576]
    } else {
        return -1;
    };
    match level {
        "minimal" => table[0],
        "low" => table[1],
        "medium" => table[2],
        _ => table[3],
    }
}

/// The Gemini major version of a model id (`gemini-3.1-pro` → 3).
fn gemini_major(id: &str) -> Option<u32> {
    let id = id.to_lowercase();
    let rest = id
        .strip_prefix("gemini-live-")
        .or_else(|| id.strip_prefix("gemini-"))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// pi's `requiresToolCallId`: Claude and gpt-oss behind Google, and Gemini 3+, want call ids
/// on function calls and responses.
fn requires_tool_call_id(id: &str) -> bool {
    id.starts_with("claude-")
        || id.starts_with("gpt-oss-")
        || gemini_major(id).is_some_and(|m| m >= 3)
}

/// Whether images may sit inside a function response (Gemini 3+, and anything not Gemini).
fn multimodal_function_response(id: &str) -> bool {
    gemini_major(id).is_none_or(|m| m >= 3)
}

/// A thought signature Gemini accepts: base64, a multiple of 4 long, from the same model.
fn signature(same_model: bool, sig: Option<&str>) -> Option<String> {
    let sig = sig.filter(|s| !s.is_empty())?;
    let body = sig.trim_end_matches('=');
    let padding = sig.len() - body.len();
    let valid = same_model
        && sig.len() % 4 == 0
        && padding <= 2
        && !body.is_empty()
        && body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '/');
    valid.then(|| sig.to_owned())
}

/// A text part in the SDK's member order (`text`, `thought`, `thoughtSignature`).
fn text_part(text: &str, thought: bool, sig: Option<String>) -> Value {
    let mut part = Map::new();
    part.insert("text".into(), json!(text));
    if thought {
        part.insert("thought".into(), json!(true));
    }
    if let Some(s) = sig {
        part.insert("thoughtSignature".into(), json!(s));
    }
    Value::Object(part)
}

fn inline_data(mime_type: &str, data: &str) -> Value {
    json!({"inlineData": {"mimeType": mime_type, "data": data}})
}

/// pi's `convertMessages`: user turns, `model` turns, and tool results as `functionResponse`
/// parts of user turns (consecutive results share one turn).
fn contents(model: &Model, request: &ProviderRequest) -> Vec<Value> {
    let with_ids = requires_tool_call_id(&model.id);
    let normalize = |id: &str, _: &pith_events::AssistantMessage| {
        if with_ids {
            sanitize_id(id, 64)
        } else {
            id.to_owned()
        }
    };
    let messages = transform_messages(&request.messages, model, &normalize);
    let mut contents: Vec<Value> = Vec::new();
    for message in &messages {
        match message {
            AgentMessage::User(u) => {
                let parts: Vec<Value> = match &u.content {
                    UserContent::Text(t) => vec![json!({ "text": t })],
                    UserContent::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(json!({"text": t.text})),
                            ContentBlock::Image(i) => Some(inline_data(&i.mime_type, &i.data)),
                            _ => None,
                        })
                        .collect(),
                };
                if !parts.is_empty() {
                    contents.push(json!({"parts": parts, "role": "user"}));
                }
            }
            AgentMessage::Assistant(a) => {
                let same = a.provider == model.provider && a.model == model.id;
                let mut parts = Vec::new();
                for block in &a.content {
                    match block {
                        ContentBlock::Text(t) => {
                            let sig = signature(same, t.text_signature.as_deref());
                            if js_trim(&t.text).is_empty() && sig.is_none() {
                                continue;
                            }
                            parts.push(text_part(&t.text, false, sig));
                        }
                        ContentBlock::Thinking(t) => {
                            if same {
                                let sig = signature(same, t.thinking_signature.as_deref());
                                if js_trim(&t.thinking).is_empty() && sig.is_none() {
                                    continue;
                                }
                                parts.push(text_part(&t.thinking, true, sig));
                            } else if !js_trim(&t.thinking).is_empty() {
                                parts.push(text_part(&t.thinking, false, None));
                            }
                        }
                        ContentBlock::ToolCall(c) => {
                            let mut call = Map::new();
                            call.insert("args".into(), c.arguments.clone());
                            if with_ids {
                                call.insert("id".into(), json!(c.id));
                            }
                            call.insert("name".into(), json!(c.name));
                            let mut part = Map::new();
                            part.insert("functionCall".into(), Value::Object(call));
                            if let Some(s) = signature(same, c.thought_signature.as_deref()) {
                                part.insert("thoughtSignature".into(), json!(s));
                            }
                            parts.push(Value::Object(part));
                        }
                        _ => {}
                    }
                }
                if !parts.is_empty() {
                    contents.push(json!({"parts": parts, "role": "model"}));
                }
            }
            AgentMessage::ToolResult(r) => {
                let text = r
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                let images: Vec<Value> = if model.accepts_images() {
                    r.content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Image(i) => Some(inline_data(&i.mime_type, &i.data)),
                            _ => None,
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                let has_text = !js_trim(&text).is_empty();
                let value = if has_text {
                    text
                } else if !images.is_empty() {
                    "(see attached image)".to_owned()
                } else {
                    String::new()
                };
                let nested = multimodal_function_response(&model.id);
                let mut response = Map::new();
                response.insert("name".into(), json!(r.tool_name));
                let key = if r.is_error { "error" } else { "output" };
                let mut result = Map::new();
                result.insert(key.into(), json!(value));
                response.insert("response".into(), Value::Object(result));
                if !images.is_empty() && nested {
                    response.insert("parts".into(), Value::Array(images.clone()));
                }
                if with_ids {
                    response.insert("id".into(), json!(r.tool_call_id));
                }
                let part = json!({"functionResponse": response});
                let merged = contents.last_mut().is_some_and(|last| {
                    let joins = last["role"] == "user"
                        && last["parts"]
                            .as_array()
                            .is_some_and(|p| p.iter().any(|p| p.get("functionResponse").is_some()));
                    if joins && let Some(parts) = last["parts"].as_array_mut() {
                        parts.push(part.clone());
                    }
                    joins
                });
                if !merged {
                    contents.push(json!({"parts": [part], "role": "user"}));
                }
                if !images.is_empty() && !nested {
                    let mut parts = vec![json!({"text": "Tool result image:"})];
                    parts.extend(images);
                    contents.push(json!({"parts": parts, "role": "user"}));
                }
            }
            _ => {}
        }
    }
    contents
}

/// pi's `supportsGoogleStrictToolSampling`: Gemini 3 and later (`gemini-N…` or
/// `gemini-live-N…` with N ≥ 3) enforce required parameters in validated tool calling.
fn supports_strict_tools(model_id: &str) -> bool {
    let id = model_id.to_lowercase();
    let rest = id
        .strip_prefix("gemini-live-")
        .or_else(|| id.strip_prefix("gemini-"));
    let digits: String = rest
        .unwrap_or_default()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse::<u64>().is_ok_and(|major| major >= 3)
}

/// pi's `convertTools` (JSON-schema form): `{name, description, parametersJsonSchema}`, with
/// string and number `const`s turned into one-value `enum`s (Gemini ignores `const`); a tool
/// that prefers strict sampling gets its strict schema when `strict` (the model supports it)
/// and the schema has one. Also whether any tool did (the request is then `VALIDATED`).
fn tools(tools: &[ToolSpec], strict: bool) -> (Vec<Value>, bool) {
    let mut any_strict = false;
    let declarations = tools
        .iter()
        .map(|t| {
            let strict_schema = (strict && t.prefers_strict_schema)
                .then(|| super::strict_schema::strict_json_schema(&t.parameters))
                .flatten();
            any_strict |= strict_schema.is_some();
            let parameters = strict_schema.as_ref().unwrap_or(&t.parameters);
            json!({
                "name": t.name,
                "description": t.description,
                "parametersJsonSchema": const_as_enum(parameters, false),
            })
        })
        .collect();
    (declarations, any_strict)
}

/// Schema keywords whose values map names to subschemas.
const NAME_MAPS: [&str; 6] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];
/// Keywords holding a subschema or a list of them.
const SUBSCHEMAS: [&str; 16] = [
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];

/// pi's `rewriteConstAsEnum`.
fn const_as_enum(schema: &Value, name_map: bool) -> Value {
    match schema {
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| const_as_enum(i, false)).collect())
        }
        Value::Object(members) => {
            let mut out = Map::new();
            for (key, value) in members {
                let v = if name_map || SUBSCHEMAS.contains(&key.as_str()) {
                    const_as_enum(value, false)
                } else if NAME_MAPS.contains(&key.as_str()) {
                    const_as_enum(value, true)
                } else {
                    value.clone()
                };
                out.insert(key.clone(), v);
            }
            if !name_map
                && !out.contains_key("enum")
                && let Some(c) = out.get("const").cloned()
                && (c.is_string() || c.is_number())
            {
                out.shift_remove("const");
                out.insert("enum".into(), json!([c]));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(id: &str, map: Value) -> Model {
        serde_json::from_value(json!({
            "id": id, "name": id, "api": "google-generative-ai", "provider": "google",
            "baseUrl": "http://x", "reasoning": true, "thinkingLevelMap": map,
            "contextWindow": 1048576, "maxTokens": 65536
        }))
        .expect("model")
    }

    #[test]
    fn which_models_take_levels() {
        for id in [
            "gemini-3-flash-preview",
            "gemini-3.1-pro-preview",
            "gemini-3.8-flash",
            "gemini-4-argon",
            "gemini-12-x",
            "gemini-flash-latest",
            "gemini-flash-lite-latest",
            "gemma-4-31b-it",
            "gemma4-e2b",
        ] {
            assert!(uses_thinking_level(&model(id, Value::Null)), "{id}");
        }
        for id in [
            "gemini-2.5-pro",
            "gemini-2.5-flash",
            "gemini-3-nano",
            "gemini-pro-latest",
            "gemini-05-x",
        ] {
            assert!(!uses_thinking_level(&model(id, Value::Null)), "{id}");
        }
    }

    #[test]
    fn ids_and_signatures() {
        assert!(requires_tool_call_id("gemini-3-flash"));
        assert!(requires_tool_call_id("gemini-live-3-x"));
        assert!(requires_tool_call_id("claude-x"));
        assert!(!requires_tool_call_id("gemini-2.5-pro"));
        assert!(!multimodal_function_response("gemini-2.5-pro"));
        assert!(multimodal_function_response("gemma-4-31b-it"));
        assert_eq!(signature(true, Some("c2ln")).as_deref(), Some("c2ln"));
        assert_eq!(
            signature(true, Some("c2lnbg==")).as_deref(),
            Some("c2lnbg==")
        );
        assert_eq!(signature(false, Some("c2ln")), None);
        assert_eq!(signature(true, Some("c2l")), None);
        assert_eq!(signature(true, Some("c2l!")), None);
        assert_eq!(signature(true, Some("====")), None);
    }

    #[test]
    fn consts_become_enums_where_they_are_schema_keywords() {
        let schema = json!({"type": "object", "properties": {
            "const": {"type": "string", "const": "x"},
            "n": {"anyOf": [{"const": 1}, {"const": true}]}
        }, "const": "top"});
        assert_eq!(
            const_as_enum(&schema, false),
            json!({"type": "object", "properties": {
                "const": {"type": "string", "enum": ["x"]},
                "n": {"anyOf": [{"enum": [1]}, {"const": true}]}
            }, "enum": ["top"]})
        );
    }

    #[test]
    fn unsupported_level_mappings_are_refused() {
        let m = model("gemini-3-pro", json!({"high": "ultra"}));
        assert_eq!(
            resolve_level(&m, "high"),
            Err(
                "Unsupported Google thinking level mapping for google/gemini-3-pro: high -> ultra"
                    .into()
            )
        );
        let gemma = model(
            "gemma-4-31b-it",
            json!({"off": null, "minimal": "MINIMAL", "low": null, "medium": null, "high": "HIGH"}),
        );
        assert_eq!(
            disabled_thinking(&gemma),
            Ok(json!({"thinkingLevel": "MINIMAL"}))
        );
    }
}
