//! The request pi-ai 1.6.0 sends to the OpenAI Responses API (`api/openai-responses.js`
//! `buildParams`, `api/openai-responses-shared.js` `convertResponsesMessages`,
//! `convertResponsesTools`): `model, input, stream, prompt_cache_key?,
//! prompt_cache_retention?, prompt_cache_options?, store: false, max_output_tokens?, tools?,
//! reasoning?, include?`.
//!
//! `input` holds the system prompt (`developer` for thinking models), user turns, earlier
//! replies as their items (reasoning items as they came, encrypted content included; text as
//! `message` items with their ids; calls as `function_call` items) and results as
//! `function_call_output`. Thinking: the clamped level, through the model's
//! `thinkingLevelMap`, is `reasoning.effort` with `summary: auto`, and the encrypted
//! reasoning is asked for; `off` sends the model's `off` value (`none` when it has none, nothing
//! when it cannot stop thinking).

use pith_events::ThinkingLevel;
use serde_json::{Map, Value, json};

use pith_events::js::{js_trim, to_js_json};
use pith_events::{AgentMessage, AssistantMessage, ContentBlock, ToolSpec, UserContent};

use super::http::json_syntax_error;
use super::simple_options::max_tokens;
use super::transform::{js_prefix, transform_messages};
use super::{CacheRetention, ProviderOptions, clamp_thinking_level};
use crate::model::Model;
use crate::provider::ProviderRequest;

/// Providers whose `call|item` tool-call ids are kept as pairs (`OPENAI_TOOL_CALL_PROVIDERS`).
const PAIRED_ID_PROVIDERS: [&str; 3] = ["openai", "openai-codex", "opencode"];
/// The Responses API rejects `max_output_tokens` below this.
const MIN_OUTPUT_TOKENS: u64 = 16;
/// `reasoning.effort` while `configuration_update` items carry the level.
const CONFIGURATION_UPDATE_REQUEST_EFFORT: &str = "medium";

/// pi's `getCompat` for the Responses API: `compat` switches of the model with their defaults.
#[derive(Debug, Clone)]
pub(crate) struct ResponsesCompat {
    supports_developer_role: bool,
    supports_mid_convo_system_messages: bool,
    session_affinity_format: String,
    prompt_cache_key_mode: String,
    supports_long_cache_retention: bool,
    supports_strict_mode: bool,
    supports_additional_tools: bool,
    supports_explicit_prompt_cache_mode: bool,
    supports_max_output_tokens: bool,
    supports_mid_convo_effort: bool,
}

impl ResponsesCompat {
    /// The switches of `model`.
    pub(crate) fn of(model: &Model) -> ResponsesCompat {
        let compat = model.compat.as_ref();
        let flag = |name: &str, default: bool| {
            compat
                .and_then(|c| c.get(name))
                .and_then(Value::as_bool)
                .unwrap_or(default)
        };
        let text = |name: &str, default: &str| {
            compat
                .and_then(|c| c.get(name))
                .and_then(Value::as_str)
                .unwrap_or(default)
                .to_owned()
        };
        let openrouter = model.provider == "openrouter" || model.base_url.contains("openrouter.ai");
        ResponsesCompat {
            supports_developer_role: flag("supportsDeveloperRole", true),
            supports_mid_convo_system_messages: flag("supportsMidConvoSystemMessages", false),
            session_affinity_format: text(
                "sessionAffinityFormat",
                if openrouter { "openrouter" } else { "openai" },
            ),
            prompt_cache_key_mode: text("promptCacheKeyMode", "auto"),
            supports_long_cache_retention: flag("supportsLongCacheRetention", true),
            supports_strict_mode: flag("supportsStrictMode", false),
            supports_additional_tools: flag("supportsAdditionalTools", false),
            supports_explicit_prompt_cache_mode: flag("supportsExplicitPromptCacheMode", false),
            supports_max_output_tokens: flag("supportsMaxOutputTokens", true),
            supports_mid_convo_effort: flag("supportsMidConvoEffort", false),
        }
    }

    /// How session-affinity headers are spelled (`openai`, `openrouter`, or another value
    /// that sends only `x-client-request-id`).
    pub(crate) fn session_affinity_format(&self) -> &str {
        &self.session_affinity_format
    }

    /// pi's `getResponsesToolSupport`: tools declared in `additional_tools` input items
    /// (`changes`) instead of the top-level list. (Tool search only changes anything for later
    /// system messages, which pith never sends.)
    fn declares_tools_in_input(&self) -> bool {
        self.supports_mid_convo_system_messages && self.supports_additional_tools
    }
}

/// pi's `isChatGPTSignIn`: a key that is not an API key (`sk-…`) sent to OpenAI itself is a
/// ChatGPT login, which rejects some request members.
pub(crate) fn is_chatgpt_sign_in(model: &Model, key: Option<&str>) -> bool {
    model.provider == "openai"
        && model.base_url == "https://api.openai.com/v1"
        && key.is_some_and(|k| !k.starts_with("sk-"))
}

/// The value a level is sent as: the model's `thinkingLevelMap` entry when it is a string,
/// else the level (pi's `thinkingLevelMap?.[level] ?? level`).
fn mapped(model: &Model, level: &str) -> String {
    model
        .thinking_level_map
        .as_ref()
        .and_then(|m| m.get(level).cloned().flatten())
        .unwrap_or_else(|| level.to_owned())
}

/// The JSON body for `request` sent with `key`.
///
/// Errors: the parse error of a stored reasoning item that is not JSON (pi throws it too).
pub(crate) fn request_body(
    model: &Model,
    request: &ProviderRequest,
    options: &ProviderOptions,
    compat: &ResponsesCompat,
    key: Option<&str>,
) -> Result<Value, String> {
    let sign_in = is_chatgpt_sign_in(model, key);
    let effort = (request.thinking_level != ThinkingLevel::Off)
        .then(|| clamp_thinking_level(model, request.thinking_level))
        .filter(|l| *l != ThinkingLevel::Off)
        .map(ThinkingLevel::as_str);
    let configuration_effort = effort
        .filter(|_| compat.supports_mid_convo_effort && !sign_in)
        .map(|e| mapped(model, e));
    let retention = options.cache_retention;
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert(
        "input".into(),
        Value::Array(input(
            model,
            request,
            compat,
            configuration_effort.as_deref(),
        )?),
    );
    body.insert("stream".into(), json!(true));
    if retention != CacheRetention::None
        && compat.prompt_cache_key_mode != "disabled"
        && let Some(id) = &request.session_id
    {
        body.insert("prompt_cache_key".into(), json!(prompt_cache_key(id)));
    }
    if !sign_in {
        let long = retention == CacheRetention::Long && compat.supports_long_cache_retention;
        if long && !compat.supports_explicit_prompt_cache_mode {
            body.insert("prompt_cache_retention".into(), json!("24h"));
        }
        if compat.supports_explicit_prompt_cache_mode {
            if retention == CacheRetention::None {
                body.insert("prompt_cache_options".into(), json!({"mode": "explicit"}));
            } else if long {
                body.insert("prompt_cache_options".into(), json!({"ttl": "30m"}));
            }
        }
    }
    body.insert("store".into(), json!(false));
    let limit = max_tokens(model, request);
    if limit > 0 && compat.supports_max_output_tokens && !sign_in {
        body.insert(
            "max_output_tokens".into(),
            json!(limit.max(MIN_OUTPUT_TOKENS)),
        );
    }
    if !request.tools.is_empty() && !compat.declares_tools_in_input() {
        body.insert("tools".into(), Value::Array(tools(&request.tools, compat)));
    }
    if model.reasoning {
        match &effort {
            Some(e) => {
                let sent = match &configuration_effort {
                    Some(_) => CONFIGURATION_UPDATE_REQUEST_EFFORT.to_owned(),
                    None => mapped(model, e),
                };
                body.insert(
                    "reasoning".into(),
                    json!({"effort": sent, "summary": "auto"}),
                );
                body.insert("include".into(), json!(["reasoning.encrypted_content"]));
            }
            None if model.provider != "github-copilot" => {
                match model.thinking_level_map.as_ref().and_then(|m| m.get("off")) {
                    Some(None) => {}
                    Some(Some(off)) => {
                        body.insert("reasoning".into(), json!({ "effort": off }));
                    }
                    None => {
                        body.insert("reasoning".into(), json!({"effort": "none"}));
                    }
                }
            }
            None => {}
        }
        if model.provider == "xai" {
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
    }
    Ok(Value::Object(body))
}

/// pi's `clampOpenAIPromptCacheKey`: at most 64 characters (code points).
fn prompt_cache_key(id: &str) -> String {
    id.chars().take(64).collect()
}

/// pi's `convertResponsesTools`: `{type: function, name, description, parameters}`; where
/// the server knows strict mode, `strict` says whether `parameters` is the tool's strict
/// schema (a tool that prefers strict sampling and has one).
fn tools(tools: &[ToolSpec], compat: &ResponsesCompat) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            let mut tool = Map::new();
            tool.insert("type".into(), json!("function"));
            tool.insert("name".into(), json!(t.name));
            tool.insert("description".into(), json!(t.description));
            let (parameters, strict) =
                super::strict_schema::openai_parameters(t, compat.supports_strict_mode);
            tool.insert("parameters".into(), parameters);
            if let Some(strict) = strict {
                tool.insert("strict".into(), json!(strict));
            }
            Value::Object(tool)
        })
        .collect()
}

/// pi's `normalizeIdPart`: `[a-zA-Z0-9_-]` only, at most 64 units, no trailing underscores.
fn id_part(part: &str) -> String {
    let sanitized: String = part
        .chars()
        .flat_map(|c| {
            let keep = c.is_ascii_alphanumeric() || c == '_' || c == '-';
            let n = if keep { 1 } else { c.len_utf16() };
            std::iter::repeat_n(if keep { c } else { '_' }, n)
        })
        .collect();
    js_prefix(&sanitized, 64).trim_end_matches('_').to_owned()
}

/// pi's `shortHash` (two 32-bit multiply-xor lanes, printed in base 36).
pub(crate) fn short_hash(s: &str) -> String {
    let mut h1: u32 = 0xdeadbeef;
    let mut h2: u32 = 0x41c6ce57;
    for unit in s.encode_utf16() {
        let ch = u32::from(unit);
        h1 = (h1 ^ ch).wrapping_mul(2654435761);
        h2 = (h2 ^ ch).wrapping_mul(1597334677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2246822507) ^ (h2 ^ (h2 >> 13)).wrapping_mul(3266489909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2246822507) ^ (h1 ^ (h1 >> 13)).wrapping_mul(3266489909);
    format!("{}{}", base36(h2), base36(h1))
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The id a call of another model gets here (pi's `normalizeToolCallId`): OpenAI keeps
/// `call|item` pairs with an item id that starts with `fc_` (hashed when the call came from
/// another provider or API); everyone else gets one plain id.
fn normalize_call_id(model: &Model, id: &str, source: &AssistantMessage) -> String {
    if !PAIRED_ID_PROVIDERS.contains(&model.provider.as_str()) || !id.contains('|') {
        return id_part(id);
    }
    let mut pieces = id.split('|');
    let call = id_part(pieces.next().unwrap_or(""));
    let item = pieces.next().unwrap_or("");
    let foreign = source.provider != model.provider || source.api != model.api.as_str();
    let mut item = if foreign {
        js_prefix(&format!("fc_{}", short_hash(item)), 64)
    } else {
        id_part(item)
    };
    if !item.starts_with("fc_") {
        item = id_part(&format!("fc_{item}"));
    }
    format!("{call}|{item}")
}

/// A text signature (pi's `parseTextSignature`): `{"v":1,"id":…,"phase"?}` or a plain id.
fn text_signature(sig: Option<&str>) -> Option<(String, Option<String>)> {
    let sig = sig.filter(|s| !s.is_empty())?;
    if sig.starts_with('{')
        && let Ok(v) = serde_json::from_str::<Value>(sig)
        && v.get("v").and_then(Value::as_f64) == Some(1.0)
        && let Some(id) = v.get("id").and_then(Value::as_str)
    {
        let phase = v
            .get("phase")
            .and_then(Value::as_str)
            .filter(|p| matches!(*p, "commentary" | "final_answer"))
            .map(str::to_owned);
        return Some((id.to_owned(), phase));
    }
    Some((sig.to_owned(), None))
}

/// A tool result's `output`: its text, or input parts when it has images the model can see.
fn tool_output(model: &Model, content: &[ContentBlock]) -> Value {
    let text = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let images: Vec<_> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image(i) => Some(i),
            _ => None,
        })
        .collect();
    let has_text = !js_trim(&text).is_empty();
    if images.is_empty() || !model.accepts_images() {
        return json!(if has_text {
            text
        } else if !images.is_empty() {
            "(see attached image)".to_owned()
        } else {
            "(no tool output)".to_owned()
        });
    }
    let mut parts = Vec::new();
    if has_text {
        parts.push(json!({"type": "input_text", "text": text}));
    }
    for i in images {
        parts.push(input_image(&i.mime_type, &i.data));
    }
    Value::Array(parts)
}

fn input_image(mime_type: &str, data: &str) -> Value {
    json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{mime_type};base64,{data}")})
}

/// pi's `convertResponsesMessages` for pith's context: the system prompt and tools are its
/// one leading system message.
fn input(
    model: &Model,
    request: &ProviderRequest,
    compat: &ResponsesCompat,
    configuration_effort: Option<&str>,
) -> Result<Vec<Value>, String> {
    let normalize = |id: &str, source: &AssistantMessage| normalize_call_id(model, id, source);
    let messages = transform_messages(&request.messages, model, &normalize);
    let instruction_role = if model.reasoning && compat.supports_developer_role {
        "developer"
    } else {
        "system"
    };
    let mut items = Vec::new();
    if compat.declares_tools_in_input() && !request.tools.is_empty() {
        items.push(json!({"type": "additional_tools", "role": "developer",
            "tools": tools(&request.tools, compat)}));
    }
    if let Some(system) = request.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        items.push(json!({"role": instruction_role, "content": system}));
    }
    let mut index = 0;
    for message in &messages {
        match message {
            AgentMessage::User(u) => {
                let content: Vec<Value> = match &u.content {
                    UserContent::Text(t) => vec![json!({"type": "input_text", "text": t})],
                    UserContent::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => {
                                Some(json!({"type": "input_text", "text": t.text}))
                            }
                            ContentBlock::Image(i) => Some(input_image(&i.mime_type, &i.data)),
                            _ => None,
                        })
                        .collect(),
                };
                if content.is_empty() {
                    continue;
                }
                items.push(json!({"role": "user", "content": content}));
            }
            AgentMessage::Assistant(a) => {
                let output = assistant_items(model, a, index)?;
                if output.is_empty() {
                    continue;
                }
                items.extend(output);
            }
            AgentMessage::ToolResult(r) => {
                let call_id = r.tool_call_id.split('|').next().unwrap_or("");
                items.push(json!({"type": "function_call_output", "call_id": call_id,
                    "output": tool_output(model, &r.content)}));
            }
            _ => continue,
        }
        index += 1;
    }
    if let Some(effort) = configuration_effort {
        items.push(json!({"type": "configuration_update", "reasoning": {"effort": effort}}));
    }
    Ok(items)
}

/// The items of one earlier reply (`index` counts the messages before it, for made-up
/// message ids).
fn assistant_items(
    model: &Model,
    a: &AssistantMessage,
    index: usize,
) -> Result<Vec<Value>, String> {
    let same_provider_api = a.provider == model.provider && a.api == model.api.as_str();
    let other_model = same_provider_api && a.model != model.id;
    let mut output = Vec::new();
    let mut text_index = 0;
    for block in &a.content {
        match block {
            ContentBlock::Thinking(t) => {
                if let Some(sig) = t.thinking_signature.as_deref().filter(|s| !s.is_empty()) {
                    let item: Value =
                        serde_json::from_str(sig).map_err(|e| json_syntax_error(sig, &e))?;
                    output.push(item);
                }
            }
            ContentBlock::Text(t) => {
                let parsed = text_signature(t.text_signature.as_deref());
                let fallback = if text_index == 0 {
                    format!("msg_pi_{index}")
                } else {
                    format!("msg_pi_{index}_{text_index}")
                };
                text_index += 1;
                let id = match parsed.as_ref().map(|(id, _)| id.as_str()) {
                    None | Some("") => fallback,
                    Some(id) if id.encode_utf16().count() > 64 => {
                        format!("msg_{}", short_hash(id))
                    }
                    Some(id) => id.to_owned(),
                };
                let mut item = Map::new();
                item.insert("type".into(), json!("message"));
                item.insert("role".into(), json!("assistant"));
                item.insert(
                    "content".into(),
                    json!([{"type": "output_text", "text": t.text, "annotations": []}]),
                );
                item.insert("status".into(), json!("completed"));
                item.insert("id".into(), json!(id));
                if let Some(phase) = parsed.and_then(|(_, p)| p) {
                    item.insert("phase".into(), json!(phase));
                }
                output.push(Value::Object(item));
            }
            ContentBlock::ToolCall(c) => {
                let mut pieces = c.id.split('|');
                let call_id = pieces.next().unwrap_or("");
                let item_id = pieces
                    .next()
                    .filter(|i| !other_model && i.starts_with("fc_"));
                let mut item = Map::new();
                item.insert("type".into(), json!("function_call"));
                if let Some(i) = item_id {
                    item.insert("id".into(), json!(i));
                }
                item.insert("call_id".into(), json!(call_id));
                item.insert("name".into(), json!(c.name));
                item.insert(
                    "arguments".into(),
                    json!(to_js_json(&c.arguments).unwrap_or_default()),
                );
                output.push(Value::Object(item));
            }
            _ => {}
        }
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_hash_is_pis() {
        // Values computed with pi-ai 1.6.0's shortHash under Node.
        assert_eq!(short_hash(""), "k4n83c7h0j2b");
        assert_eq!(short_hash("fc_abc"), "1qaoofs1vxahbg");
        assert_eq!(short_hash("h\u{e9}llo \u{1f600}"), "1t90xbiinqdrp");
    }

    #[test]
    fn foreign_call_ids_become_openai_pairs() {
        let model: Model = serde_json::from_value(json!({
            "id": "gpt-5", "name": "gpt-5", "api": "openai-responses", "provider": "openai",
            "baseUrl": "https://api.openai.com/v1"
        }))
        .expect("model");
        let anthropic = AssistantMessage::new("anthropic-messages", "anthropic", "c", vec![], 1);
        let same = AssistantMessage::new("openai-responses", "openai", "gpt-4.1", vec![], 1);
        assert_eq!(
            normalize_call_id(&model, "toolu_01.x", &anthropic),
            "toolu_01_x"
        );
        assert_eq!(
            normalize_call_id(&model, "call_1|fc_9", &same),
            "call_1|fc_9"
        );
        assert_eq!(
            normalize_call_id(&model, "call_1|item!", &same),
            "call_1|fc_item"
        );
        assert_eq!(
            normalize_call_id(&model, "call_1|fc_abc", &anthropic),
            format!("call_1|fc_{}", short_hash("fc_abc"))
        );
        assert_eq!(id_part("a.b__"), "a_b");
    }

    #[test]
    fn text_signatures() {
        assert_eq!(
            text_signature(Some(r#"{"v":1,"id":"msg_1","phase":"final_answer"}"#)),
            Some(("msg_1".into(), Some("final_answer".into())))
        );
        assert_eq!(
            text_signature(Some(r#"{"v":1,"id":"msg_1","phase":"other"}"#)),
            Some(("msg_1".into(), None))
        );
        assert_eq!(
            text_signature(Some(r#"{"v":2}"#)),
            Some((r#"{"v":2}"#.into(), None))
        );
        assert_eq!(
            text_signature(Some("msg_legacy")),
            Some(("msg_legacy".into(), None))
        );
        assert_eq!(text_signature(None), None);
    }
}
