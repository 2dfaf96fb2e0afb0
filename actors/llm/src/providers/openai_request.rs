//! The request pi-ai's Chat Completions provider sends (`buildParams`, `convertMessages`,
//! `convertTools` in `providers/openai-completions.js`): `model, messages, stream,
//! prompt_cache_key?, prompt_cache_retention?, stream_options?, store?,
//! max_completion_tokens|max_tokens, tools?` and the reasoning member of the server's
//! `thinkingFormat`.

use serde_json::{Map, Value, json};

use pith_events::js::to_js_json;
use pith_events::{
    AgentMessage, AssistantMessage, ContentBlock, ThinkingContent, ToolCall, UserContent,
};

use super::http::truthy;
use super::openai_compat::OpenAiCompat;
use super::transform::{js_prefix, sanitize_id, transform_messages};
use super::{CacheRetention, ProviderOptions, clamp_thinking_level};
use crate::model::Model;
use crate::provider::ProviderRequest;
use pith_events::ThinkingLevel;
use pith_events::ToolSpec;

/// `{type: ephemeral}` markers for OpenRouter's Anthropic models (pi `getCompatCacheControl`).
fn cache_control(compat: &OpenAiCompat, retention: CacheRetention) -> Option<Value> {
    if compat.cache_control_format.as_deref() != Some("anthropic") {
        return None;
    }
    match retention {
        CacheRetention::None => None,
        CacheRetention::Long if compat.supports_long_cache_retention => {
            Some(json!({"type": "ephemeral", "ttl": "1h"}))
        }
        _ => Some(json!({"type": "ephemeral"})),
    }
}

/// The value a thinking level is sent as: the model's `thinkingLevelMap` entry when it is a
/// string, else the level itself (pi's `thinkingLevelMap?.[level] ?? level`).
fn mapped_effort(model: &Model, level: &str) -> String {
    model
        .thinking_level_map
        .as_ref()
        .and_then(|m| m.get(level).cloned().flatten())
        .unwrap_or_else(|| level.to_owned())
}

/// The JSON body pi sends for `request` (`buildParams`).
pub(crate) fn request_body(
    model: &Model,
    request: &ProviderRequest,
    options: &ProviderOptions,
    compat: &OpenAiCompat,
) -> Value {
    let retention = options.cache_retention;
    let long = retention == CacheRetention::Long && compat.supports_long_cache_retention;
    let mut messages = convert_messages(model, request, compat);
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    // Filled in below (cache markers may change it); inserted now for pi's member order.
    body.insert("messages".into(), Value::Null);
    body.insert("stream".into(), json!(true));
    let cache_key =
        (model.base_url.contains("api.openai.com") && retention != CacheRetention::None) || long;
    if cache_key && let Some(id) = &request.session_id {
        body.insert("prompt_cache_key".into(), json!(id));
    }
    if long {
        body.insert("prompt_cache_retention".into(), json!("24h"));
    }
    if compat.supports_usage_in_streaming {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.supports_store {
        body.insert("store".into(), json!(false));
    }
    // The request's limit, else `buildBaseOptions`'s; a zero means none (JavaScript's falsy 0).
    let max_tokens = request
        .max_tokens
        .or_else(|| (model.max_tokens > 0).then(|| model.max_tokens.min(32_000)));
    if let Some(n) = max_tokens.filter(|n| *n > 0) {
        body.insert(compat.max_tokens_field.clone(), json!(n));
    }
    let mut tools = if !request.tools.is_empty() {
        Some(convert_tools(&request.tools, compat))
    } else if has_tool_history(&request.messages) {
        // Anthropic behind LiteLLM-style proxies wants `tools` whenever the history has calls.
        Some(Vec::new())
    } else {
        None
    };
    if let Some(cache) = cache_control(compat, retention) {
        apply_cache_control(&mut messages, tools.as_mut(), &cache);
    }
    body.insert("messages".into(), Value::Array(messages));
    if let Some(tools) = tools {
        let any = !tools.is_empty();
        body.insert("tools".into(), Value::Array(tools));
        if any && compat.zai_tool_stream {
            body.insert("tool_stream".into(), json!(true));
        }
    }
    let level = clamp_thinking_level(model, request.thinking_level);
    let effort = (level != ThinkingLevel::Off).then_some(level.as_str());
    let thinking_on = effort.is_some();
    let format = compat.thinking_format.as_str();
    let map = model.thinking_level_map.as_ref();
    if matches!(format, "zai" | "qwen") && model.reasoning {
        body.insert("enable_thinking".into(), json!(thinking_on));
    } else if format == "qwen-chat-template" && model.reasoning {
        body.insert(
            "chat_template_kwargs".into(),
            json!({"enable_thinking": thinking_on, "preserve_thinking": true}),
        );
    } else if format == "deepseek" && model.reasoning {
        let kind = if thinking_on { "enabled" } else { "disabled" };
        body.insert("thinking".into(), json!({ "type": kind }));
        if let Some(e) = &effort {
            body.insert("reasoning_effort".into(), json!(mapped_effort(model, e)));
        }
    } else if format == "openrouter" && model.reasoning {
        if let Some(e) = &effort {
            body.insert(
                "reasoning".into(),
                json!({"effort": mapped_effort(model, e)}),
            );
        } else {
            match map.and_then(|m| m.get("off")) {
                Some(None) => {}
                Some(Some(off)) => {
                    body.insert("reasoning".into(), json!({ "effort": off }));
                }
                None => {
                    body.insert("reasoning".into(), json!({"effort": "none"}));
                }
            }
        }
    } else if model.reasoning && compat.supports_reasoning_effort {
        match &effort {
            Some(e) => {
                body.insert("reasoning_effort".into(), json!(mapped_effort(model, e)));
            }
            None => {
                if let Some(Some(off)) = map.and_then(|m| m.get("off")) {
                    body.insert("reasoning_effort".into(), json!(off));
                }
            }
        }
    }
    let given = |name: &str| {
        model
            .compat
            .as_ref()
            .and_then(|c| c.get(name))
            .filter(|v| truthy(v))
    };
    if model.base_url.contains("openrouter.ai")
        && let Some(routing) = given("openRouterRouting")
    {
        body.insert("provider".into(), routing.clone());
    }
    if model.base_url.contains("ai-gateway.vercel.sh")
        && let Some(routing) = given("vercelGatewayRouting")
    {
        let mut gateway = Map::new();
        for name in ["only", "order"] {
            if let Some(v) = routing.get(name).filter(|v| truthy(v)) {
                gateway.insert(name.into(), v.clone());
            }
        }
        if !gateway.is_empty() {
            body.insert("providerOptions".into(), json!({ "gateway": gateway }));
        }
    }
    Value::Object(body)
}

fn has_tool_history(messages: &[AgentMessage]) -> bool {
    messages.iter().any(|m| match m {
        AgentMessage::ToolResult(_) => true,
        AgentMessage::Assistant(a) => a.tool_calls().next().is_some(),
        _ => false,
    })
}

fn convert_tools(tools: &[ToolSpec], compat: &OpenAiCompat) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            let mut function = Map::new();
            function.insert("name".into(), json!(tool.name));
            function.insert("description".into(), json!(tool.description));
            let (parameters, strict) =
                super::strict_schema::openai_parameters(tool, compat.supports_strict_mode);
            function.insert("parameters".into(), parameters);
            if let Some(strict) = strict {
                function.insert("strict".into(), json!(strict));
            }
            json!({"type": "function", "function": function})
        })
        .collect()
}

/// pi's `applyAnthropicCacheControl`: the system prompt, the last tool and the last user or
/// assistant message with text get a marker.
fn apply_cache_control(messages: &mut [Value], tools: Option<&mut Vec<Value>>, cache: &Value) {
    if let Some(system) = messages
        .iter_mut()
        .find(|m| matches!(m["role"].as_str(), Some("system" | "developer")))
    {
        mark_text(system, cache);
    }
    if let Some(Value::Object(last)) = tools.and_then(|t| t.last_mut()) {
        last.insert("cache_control".into(), cache.clone());
    }
    for message in messages.iter_mut().rev() {
        if matches!(message["role"].as_str(), Some("user" | "assistant"))
            && mark_text(message, cache)
        {
            return;
        }
    }
}

fn mark_text(message: &mut Value, cache: &Value) -> bool {
    match &mut message["content"] {
        Value::String(s) if s.is_empty() => false,
        Value::String(s) => {
            let text = std::mem::take(s);
            message["content"] = json!([{"type": "text", "text": text, "cache_control": cache}]);
            true
        }
        Value::Array(parts) => match parts.iter_mut().rev().find(|p| p["type"] == "text") {
            Some(Value::Object(part)) => {
                part.insert("cache_control".into(), cache.clone());
                true
            }
            _ => false,
        },
        _ => false,
    }
}

fn image_url(data: &str, mime_type: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}})
}

/// pi-ai's `convertMessages` for Chat Completions, after `transformMessages`.
fn convert_messages(model: &Model, request: &ProviderRequest, compat: &OpenAiCompat) -> Vec<Value> {
    let normalize = |id: &str, _: &AssistantMessage| {
        // OpenAI Responses ids look like `{call_id}|{item id}`; the call id is what counts.
        if let Some((call_id, _)) = id.split_once('|') {
            sanitize_id(call_id, 40)
        } else if model.provider == "openai" {
            js_prefix(id, 40)
        } else {
            id.to_owned()
        }
    };
    let messages = transform_messages(&request.messages, model, &normalize);
    let mut params = Vec::new();
    if let Some(system) = request.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        let role = if model.reasoning && compat.supports_developer_role {
            "developer"
        } else {
            "system"
        };
        params.push(json!({"role": role, "content": system}));
    }
    let mut last_role: Option<&str> = None;
    let mut i = 0;
    while i < messages.len() {
        let message = &messages[i];
        i += 1;
        if compat.requires_assistant_after_tool_result
            && last_role == Some("toolResult")
            && matches!(message, AgentMessage::User(_))
        {
            params.push(
                json!({"role": "assistant", "content": "I have processed the tool results."}),
            );
        }
        match message {
            AgentMessage::User(u) => match &u.content {
                UserContent::Text(text) => params.push(json!({"role": "user", "content": text})),
                UserContent::Blocks(blocks) => {
                    let content: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
                            ContentBlock::Image(img) => Some(image_url(&img.data, &img.mime_type)),
                            _ => None,
                        })
                        .collect();
                    if content.is_empty() {
                        continue;
                    }
                    params.push(json!({"role": "user", "content": content}));
                }
            },
            AgentMessage::Assistant(a) => match assistant_message(a, model, compat) {
                Some(m) => params.push(m),
                None => continue,
            },
            AgentMessage::ToolResult(_) => {
                let mut images = Vec::new();
                let mut j = i - 1;
                while let Some(AgentMessage::ToolResult(r)) = messages.get(j) {
                    let text = r
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(t.text.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    let text = if text.is_empty() {
                        "(see attached image)".to_owned()
                    } else {
                        text
                    };
                    let mut result = Map::new();
                    result.insert("role".into(), json!("tool"));
                    result.insert("content".into(), json!(text));
                    result.insert("tool_call_id".into(), json!(r.tool_call_id));
                    if compat.requires_tool_result_name && !r.tool_name.is_empty() {
                        result.insert("name".into(), json!(r.tool_name));
                    }
                    params.push(Value::Object(result));
                    if model.accepts_images() {
                        images.extend(r.content.iter().filter_map(|b| match b {
                            ContentBlock::Image(img) => Some(image_url(&img.data, &img.mime_type)),
                            _ => None,
                        }));
                    }
                    j += 1;
                }
                i = j;
                if images.is_empty() {
                    last_role = Some("toolResult");
                } else {
                    // Tool messages cannot hold images: they follow as a user message.
                    if compat.requires_assistant_after_tool_result {
                        params.push(json!({"role": "assistant", "content": "I have processed the tool results."}));
                    }
                    let mut content = vec![
                        json!({"type": "text", "text": "Attached image(s) from tool result:"}),
                    ];
                    content.extend(images);
                    params.push(json!({"role": "user", "content": content}));
                    last_role = Some("user");
                }
                continue;
            }
            _ => continue,
        }
        last_role = Some(message.role());
    }
    params
}

/// One assistant message, or `None` when it has neither content nor tool calls (some servers
/// reject those; aborted replies leave them).
fn assistant_message(a: &AssistantMessage, model: &Model, compat: &OpenAiCompat) -> Option<Value> {
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    m.insert(
        "content".into(),
        if compat.requires_assistant_after_tool_result {
            json!("")
        } else {
            Value::Null
        },
    );
    let texts: Vec<&str> = a
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) if !t.text.trim().is_empty() => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    let text = texts.concat();
    let thinking: Vec<&ThinkingContent> = a
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => Some(t),
            _ => None,
        })
        .collect();
    if !thinking.is_empty() {
        if compat.requires_thinking_as_text {
            let joined: Vec<&str> = thinking.iter().map(|t| t.thinking.as_str()).collect();
            let mut parts = vec![json!({"type": "text", "text": joined.join("\n\n")})];
            parts.extend(texts.iter().map(|t| json!({"type": "text", "text": t})));
            m.insert("content".into(), Value::Array(parts));
        } else {
            if !text.is_empty() {
                m.insert("content".into(), json!(text));
            }
            // The first block's signature names the field the server streamed it in.
            if let Some(field) = thinking[0]
                .thinking_signature
                .as_deref()
                .filter(|s| !s.is_empty())
            {
                let joined: Vec<&str> = thinking.iter().map(|t| t.thinking.as_str()).collect();
                m.insert(field.to_owned(), json!(joined.join("\n")));
            }
        }
    } else if !text.is_empty() {
        m.insert("content".into(), json!(text));
    }
    let calls: Vec<&ToolCall> = a.tool_calls().collect();
    if !calls.is_empty() {
        let tool_calls: Vec<Value> = calls
            .iter()
            .map(|c| {
                let arguments = to_js_json(&c.arguments).unwrap_or_else(|_| "{}".to_owned());
                json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments}})
            })
            .collect();
        m.insert("tool_calls".into(), Value::Array(tool_calls));
        let details: Vec<Value> = calls
            .iter()
            .filter_map(|c| c.thought_signature.as_deref())
            .filter_map(|s| serde_json::from_str::<Value>(s).ok())
            .filter(truthy)
            .collect();
        if !details.is_empty() {
            m.insert("reasoning_details".into(), Value::Array(details));
        }
    }
    if compat.requires_reasoning_content_on_assistant_messages
        && model.reasoning
        && !m.contains_key("reasoning_content")
    {
        m.insert("reasoning_content".into(), json!(""));
    }
    let has_content = match &m["content"] {
        Value::String(s) => !s.is_empty(),
        Value::Array(parts) => !parts.is_empty(),
        _ => false,
    };
    (has_content || m.contains_key("tool_calls")).then_some(Value::Object(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Model {
        serde_json::from_value(json!({
            "id": "gpt", "name": "gpt", "api": "openai-completions", "provider": "openai",
            "baseUrl": "https://api.openai.com/v1"
        }))
        .expect("model")
    }

    #[test]
    fn empty_assistant_messages_are_left_out() {
        let a = AssistantMessage::new("openai-completions", "openai", "gpt", Vec::new(), 1);
        let compat = OpenAiCompat::of(&model());
        assert_eq!(assistant_message(&a, &model(), &compat), None);
    }
}
