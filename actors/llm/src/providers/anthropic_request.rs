//! The request pi-ai's Anthropic provider sends (`buildParams`, `convertMessages`,
//! `convertTools` in `providers/anthropic.js`, with `streamSimpleAnthropic`'s thinking
//! budgets): `model, messages, max_tokens, stream, system?, tools?, thinking?,
//! output_config?`, prompt-cache markers on the system prompt, the last tool and the last
//! user message.

use serde_json::{Map, Value, json};

use pith_events::{AgentMessage, AssistantMessage, ContentBlock, UserContent};

use super::transform::{sanitize_id, transform_messages};
use super::{CacheRetention, ProviderOptions, clamp_thinking_level};
use crate::model::Model;
use crate::provider::ProviderRequest;
use pith_events::ThinkingLevel;
use pith_events::ToolSpec;

/// Claude Code's tool names; with a subscription token pi renames tools to these casings.
const CLAUDE_CODE_TOOLS: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];

/// The Anthropic switches of a model's `compat` (defaults: both on).
pub(super) struct Compat {
    /// Tools stream their input eagerly (else the fine-grained streaming beta is asked for).
    pub(super) eager_tool_input_streaming: bool,
    /// The 1-hour cache is allowed.
    long_cache_retention: bool,
    /// Strict tool schemas (`supportsStrictTools`, default off): a tool that prefers strict
    /// sampling goes out with `strict: true` and its strict schema.
    strict_tools: bool,
}

impl Compat {
    pub(super) fn of(model: &Model) -> Compat {
        let flag = |name: &str| {
            model
                .compat
                .as_ref()
                .and_then(|c| c.get(name))
                .and_then(Value::as_bool)
                .unwrap_or(true)
        };
        Compat {
            eager_tool_input_streaming: flag("supportsEagerToolInputStreaming"),
            long_cache_retention: flag("supportsLongCacheRetention"),
            strict_tools: model
                .compat
                .as_ref()
                .and_then(|c| c.get("supportsStrictTools"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }
}

/// Opus 4.6/4.7 and Sonnet 4.6 think adaptively (pi-ai `supportsAdaptiveThinking`).
pub(super) fn supports_adaptive_thinking(id: &str) -> bool {
    [
        "opus-4-6",
        "opus-4.6",
        "opus-4-7",
        "opus-4.7",
        "sonnet-4-6",
        "sonnet-4.6",
    ]
    .iter()
    .any(|p| id.contains(p))
}

/// `cache_control` for `retention` (pi-ai `getCacheControl`).
fn cache_control(model: &Model, retention: CacheRetention) -> Option<Value> {
    match retention {
        CacheRetention::None => None,
        CacheRetention::Short => Some(json!({"type": "ephemeral"})),
        CacheRetention::Long if Compat::of(model).long_cache_retention => {
            Some(json!({"type": "ephemeral", "ttl": "1h"}))
        }
        CacheRetention::Long => Some(json!({"type": "ephemeral"})),
    }
}

/// How a request thinks: `max_tokens` and the `thinking`/`output_config` members.
struct Thinking {
    max_tokens: u64,
    thinking: Option<Value>,
    effort: Option<String>,
}

/// pi's `streamSimpleAnthropic` + `buildParams`: the reply budget is `max_tokens` when the
/// request sets one, else `min(maxTokens, 32000)` (`buildBaseOptions`); adaptive models get
/// `{type: adaptive}` and an effort, others a token budget added to the reply budget
/// (`adjustMaxTokensForThinking`, capped by the model's limit); `off` is `{type: disabled}`.
/// Models that cannot think get no `thinking` member.
fn thinking(
    model: &Model,
    level: ThinkingLevel,
    max_tokens: Option<u64>,
    options: &ProviderOptions,
) -> Thinking {
    let level = clamp_thinking_level(model, level).as_str();
    let base = max_tokens.or_else(|| (model.max_tokens > 0).then(|| model.max_tokens.min(32_000)));
    let or_third = |n: Option<u64>| n.filter(|n| *n > 0).unwrap_or(model.max_tokens / 3);
    if level == "off" {
        return Thinking {
            max_tokens: or_third(base),
            thinking: model.reasoning.then(|| json!({"type": "disabled"})),
            effort: None,
        };
    }
    if supports_adaptive_thinking(&model.id) {
        let mapped = model
            .thinking_level_map
            .as_ref()
            .and_then(|m| m.get(level).cloned().flatten());
        let effort = mapped.unwrap_or_else(|| {
            match level {
                "minimal" | "low" => "low",
                "medium" => "medium",
                _ => "high",
            }
            .to_owned()
        });
        return Thinking {
            max_tokens: or_third(base),
            thinking: model
                .reasoning
                .then(|| json!({"type": "adaptive", "display": "summarized"})),
            effort: model.reasoning.then_some(effort),
        };
    }
    let level = if matches!(level, "xhigh" | "max") {
        "high"
    } else {
        level
    };
    let default_budget = match level {
        "minimal" => 1024,
        "low" => 2048,
        "medium" => 8192,
        _ => 16384,
    };
    let mut budget = options
        .thinking_budgets
        .get(level)
        .copied()
        .unwrap_or(default_budget);
    let max_tokens = (base.unwrap_or(0) + budget).min(model.max_tokens);
    if max_tokens <= budget {
        budget = max_tokens.saturating_sub(1024);
    }
    let budget = if budget == 0 { 1024 } else { budget };
    Thinking {
        max_tokens: or_third(Some(max_tokens)),
        thinking: model
            .reasoning
            .then(|| json!({"type": "enabled", "budget_tokens": budget, "display": "summarized"})),
        effort: None,
    }
}

/// The JSON body pi sends for `request` (`buildParams`).
pub(crate) fn request_body(
    model: &Model,
    request: &ProviderRequest,
    options: &ProviderOptions,
    oauth: bool,
) -> Value {
    let cache = cache_control(model, options.cache_retention);
    let think = thinking(model, request.thinking_level, request.max_tokens, options);
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(
            &request.messages,
            model,
            oauth,
            cache.as_ref(),
        )),
    );
    body.insert("max_tokens".into(), json!(think.max_tokens));
    body.insert("stream".into(), json!(true));
    let with_cache = |mut block: Map<String, Value>| {
        if let Some(c) = &cache {
            block.insert("cache_control".into(), c.clone());
        }
        Value::Object(block)
    };
    let text_block = |text: &str| {
        let mut m = Map::new();
        m.insert("type".into(), json!("text"));
        m.insert("text".into(), json!(text));
        with_cache(m)
    };
    let system_prompt = request.system_prompt.as_deref().filter(|s| !s.is_empty());
    let mut system = Vec::new();
    if oauth {
        system.push(text_block(
            "You are Claude Code, Anthropic's official CLI for Claude.",
        ));
    }
    if let Some(prompt) = system_prompt {
        system.push(text_block(prompt));
    }
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    if !request.tools.is_empty() {
        let compat = Compat::of(model);
        body.insert(
            "tools".into(),
            Value::Array(convert_tools(
                &request.tools,
                oauth,
                compat.eager_tool_input_streaming,
                compat.strict_tools,
                cache.as_ref(),
            )),
        );
    }
    if let Some(t) = think.thinking {
        body.insert("thinking".into(), t);
    }
    if let Some(effort) = think.effort {
        body.insert("output_config".into(), json!({ "effort": effort }));
    }
    Value::Object(body)
}

fn to_claude_code_name(name: &str) -> String {
    CLAUDE_CODE_TOOLS
        .iter()
        .find(|t| t.eq_ignore_ascii_case(name))
        .map_or_else(|| name.to_owned(), |t| (*t).to_owned())
}

/// pi's `isAnthropicStrictUnsupportedKeyword`: numeric and count bounds, `minItems` other
/// than 0 or 1, and string formats Anthropic does not know.
fn strict_unsupported(key: &str, value: &Value) -> bool {
    const KEYWORDS: [&str; 11] = [
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "maxItems",
        "uniqueItems",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
    ];
    const FORMATS: [&str; 10] = [
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "uri",
        "ipv4",
        "ipv6",
        "uuid",
    ];
    match key {
        k if KEYWORDS.contains(&k) => true,
        "minItems" => *value != json!(0) && *value != json!(1),
        "format" => !value.as_str().is_some_and(|f| FORMATS.contains(&f)),
        _ => false,
    }
}

fn convert_tools(
    tools: &[ToolSpec],
    oauth: bool,
    eager: bool,
    strict_tools: bool,
    cache: Option<&Value>,
) -> Vec<Value> {
    tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let mut t = Map::new();
            let name = if oauth {
                to_claude_code_name(&tool.name)
            } else {
                tool.name.clone()
            };
            t.insert("name".into(), json!(name));
            t.insert("description".into(), json!(tool.description));
            if eager {
                t.insert("eager_input_streaming".into(), json!(true));
            }
            let strict = (strict_tools && tool.prefers_strict_schema)
                .then(|| {
                    super::strict_schema::strict_json_schema_where(
                        &tool.parameters,
                        &strict_unsupported,
                    )
                })
                .flatten();
            let schema = strict.as_ref().unwrap_or(&tool.parameters);
            // pi's legacy input schema: shared definitions and additionalProperties kept,
            // other root keywords left out (Anthropic rejects root anyOf/oneOf/allOf).
            let mut legacy = Map::new();
            legacy.insert("type".into(), json!("object"));
            legacy.insert(
                "properties".into(),
                schema
                    .get("properties")
                    .cloned()
                    .unwrap_or_else(|| json!({})),
            );
            legacy.insert(
                "required".into(),
                schema.get("required").cloned().unwrap_or_else(|| json!([])),
            );
            for key in ["additionalProperties", "$defs", "definitions"] {
                if let Some(v) = schema.get(key) {
                    legacy.insert(key.into(), v.clone());
                }
            }
            let input_schema = match &strict {
                Some(Value::Object(full)) => {
                    let mut merged = full.clone();
                    merged.extend(legacy);
                    merged
                }
                _ => legacy,
            };
            if strict.is_some() {
                t.insert("strict".into(), json!(true));
            }
            t.insert("input_schema".into(), Value::Object(input_schema));
            if let Some(c) = cache.filter(|_| i + 1 == tools.len()) {
                t.insert("cache_control".into(), c.clone());
            }
            Value::Object(t)
        })
        .collect()
}

fn image_block(data: &str, mime_type: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}})
}

/// A tool result's `content`: the texts joined by `\n`, or blocks when there are images
/// (with a placeholder text when there is no text) (pi-ai `convertContentBlocks`).
fn tool_result_content(content: &[ContentBlock]) -> Value {
    let has_images = content.iter().any(|b| matches!(b, ContentBlock::Image(_)));
    if !has_images {
        let texts: Vec<&str> = content
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => t.text.as_str(),
                // JavaScript's join writes a missing `text` as "".
                ContentBlock::Unknown(v) => v.get("text").and_then(Value::as_str).unwrap_or(""),
                _ => "",
            })
            .collect();
        return json!(texts.join("\n"));
    }
    let mut blocks: Vec<Value> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
            ContentBlock::Image(i) => Some(image_block(&i.data, &i.mime_type)),
            _ => None,
        })
        .collect();
    if !blocks.iter().any(|b| b["type"] == "text") {
        blocks.insert(0, json!({"type": "text", "text": "(see attached image)"}));
    }
    Value::Array(blocks)
}

/// pi-ai's `convertMessages` for Anthropic, after `transformMessages`.
fn convert_messages(
    messages: &[AgentMessage],
    model: &Model,
    oauth: bool,
    cache: Option<&Value>,
) -> Vec<Value> {
    let normalize = |id: &str, _: &AssistantMessage| sanitize_id(id, 64);
    let messages = transform_messages(messages, model, &normalize);
    let mut params: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            AgentMessage::User(u) => match &u.content {
                UserContent::Text(text) => {
                    if !text.trim().is_empty() {
                        params.push(json!({"role": "user", "content": text}));
                    }
                }
                UserContent::Blocks(blocks) => {
                    let content: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                                Some(json!({"type": "text", "text": t.text}))
                            }
                            ContentBlock::Image(img) => {
                                Some(image_block(&img.data, &img.mime_type))
                            }
                            _ => None,
                        })
                        .collect();
                    if !content.is_empty() {
                        params.push(json!({"role": "user", "content": content}));
                    }
                }
            },
            AgentMessage::Assistant(a) => {
                let content = assistant_blocks(a, oauth);
                if !content.is_empty() {
                    params.push(json!({"role": "assistant", "content": content}));
                }
            }
            AgentMessage::ToolResult(_) => {
                // Consecutive results travel in one user message (z.ai's endpoint needs it).
                let mut results = Vec::new();
                while let Some(AgentMessage::ToolResult(r)) = messages.get(i) {
                    results.push(json!({
                        "type": "tool_result",
                        "tool_use_id": r.tool_call_id,
                        "content": tool_result_content(&r.content),
                        "is_error": r.is_error,
                    }));
                    i += 1;
                }
                params.push(json!({"role": "user", "content": results}));
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if let (Some(cache), Some(last)) = (cache, params.last_mut())
        && last["role"] == "user"
    {
        match &mut last["content"] {
            Value::Array(blocks) => {
                if let Some(Value::Object(block)) = blocks.last_mut()
                    && matches!(
                        block.get("type").and_then(Value::as_str),
                        Some("text" | "image" | "tool_result")
                    )
                {
                    block.insert("cache_control".into(), cache.clone());
                }
            }
            Value::String(text) => {
                let text = std::mem::take(text);
                last["content"] = json!([{"type": "text", "text": text, "cache_control": cache}]);
            }
            _ => {}
        }
    }
    params
}

fn assistant_blocks(a: &AssistantMessage, oauth: bool) -> Vec<Value> {
    let mut out = Vec::new();
    for block in &a.content {
        match block {
            ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                out.push(json!({"type": "text", "text": t.text}));
            }
            ContentBlock::Thinking(t) => {
                if t.redacted == Some(true) {
                    out.push(json!({"type": "redacted_thinking", "data": t.thinking_signature}));
                    continue;
                }
                if t.thinking.trim().is_empty() {
                    continue;
                }
                match t
                    .thinking_signature
                    .as_deref()
                    .filter(|s| !s.trim().is_empty())
                {
                    // Unsigned thinking (an aborted stream) goes back as plain text.
                    None => out.push(json!({"type": "text", "text": t.thinking})),
                    Some(sig) => out.push(
                        json!({"type": "thinking", "thinking": t.thinking, "signature": sig}),
                    ),
                }
            }
            ContentBlock::ToolCall(c) => {
                let name = if oauth {
                    to_claude_code_name(&c.name)
                } else {
                    c.name.clone()
                };
                let input = if c.arguments.is_null() {
                    json!({})
                } else {
                    c.arguments.clone()
                };
                out.push(json!({"type": "tool_use", "id": c.id, "name": name, "input": input}));
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_events::{TextContent, ThinkingContent};

    fn model(id: &str, max_tokens: u64, reasoning: bool) -> Model {
        serde_json::from_value(json!({
            "id": id, "name": id, "api": "anthropic-messages", "provider": "anthropic",
            "baseUrl": "https://api.anthropic.com", "reasoning": reasoning,
            "maxTokens": max_tokens, "contextWindow": 200000
        }))
        .expect("model")
    }

    fn budget(m: &Model, level: &str) -> (u64, Option<Value>, Option<String>) {
        let t = thinking(m, level.parse().unwrap(), None, &ProviderOptions::default());
        (t.max_tokens, t.thinking, t.effort)
    }

    #[test]
    fn thinking_budgets_follow_adjust_max_tokens_for_thinking() {
        let m = model("claude-sonnet-4-5", 64000, true);
        assert_eq!(
            budget(&m, "off"),
            (32000, Some(json!({"type": "disabled"})), None)
        );
        assert_eq!(
            budget(&m, "medium"),
            (
                40192,
                Some(json!({"type": "enabled", "budget_tokens": 8192, "display": "summarized"})),
                None
            )
        );
        assert_eq!(budget(&m, "xhigh").0, 32000 + 16384);
        let small = model("claude-x", 4096, true);
        assert_eq!(
            budget(&small, "high"),
            (
                4096,
                Some(json!({"type": "enabled", "budget_tokens": 3072, "display": "summarized"})),
                None
            )
        );
        let adaptive = model("claude-opus-4-6", 128000, true);
        assert_eq!(
            budget(&adaptive, "minimal"),
            (
                32000,
                Some(json!({"type": "adaptive", "display": "summarized"})),
                Some("low".into())
            )
        );
        assert_eq!(
            budget(&model("claude-3-haiku", 4096, false), "high"),
            (4096, None, None)
        );
        assert_eq!(budget(&model("claude-3-haiku", 0, false), "off").0, 0);
    }

    /// The bodies pi 0.73.1's compaction sends (`completeSimple` with `maxTokens` and
    /// `reasoning`, recorded from node): the budget goes on top of the given limit.
    #[test]
    fn a_given_limit_is_the_base_the_thinking_budget_is_added_to() {
        let with = |m: &Model, level: &str, max: u64| {
            let t = thinking(
                m,
                level.parse().unwrap(),
                Some(max),
                &ProviderOptions::default(),
            );
            (t.max_tokens, t.thinking, t.effort)
        };
        let m = model("claude-sonnet-4-5", 64000, true);
        let enabled = |budget: u64| {
            Some(json!({"type": "enabled", "budget_tokens": budget, "display": "summarized"}))
        };
        assert_eq!(with(&m, "medium", 13107), (21299, enabled(8192), None));
        assert_eq!(with(&m, "high", 8192), (24576, enabled(16384), None));
        assert_eq!(with(&m, "minimal", 8192), (9216, enabled(1024), None));
        assert_eq!(
            with(&m, "off", 2048),
            (2048, Some(json!({"type": "disabled"})), None)
        );
        // Capped by the model's own limit, the budget shrinking to leave 1024 for the reply.
        assert_eq!(
            with(&model("claude-x", 16000, true), "high", 13107),
            (16000, enabled(14976), None)
        );
        let adaptive = model("claude-sonnet-4-6", 64000, true);
        assert_eq!(
            with(&adaptive, "medium", 13107),
            (
                13107,
                Some(json!({"type": "adaptive", "display": "summarized"})),
                Some("medium".into())
            )
        );
        // JavaScript's falsy 0: the third of the model's limit.
        assert_eq!(with(&m, "off", 0).0, 64000 / 3);
    }

    #[test]
    fn claude_code_names() {
        assert_eq!(to_claude_code_name("read"), "Read");
        assert_eq!(to_claude_code_name("todowrite"), "TodoWrite");
        assert_eq!(to_claude_code_name("mine"), "mine");
    }

    #[test]
    fn subscription_tokens_speak_as_claude_code() {
        let request = ProviderRequest {
            provider: "anthropic".into(),
            model: "claude-x".into(),
            thinking_level: ThinkingLevel::Off,
            system_prompt: Some("sys".into()),
            messages: vec![AgentMessage::user_text("hi", 1)],
            tools: vec![ToolSpec {
                prefers_strict_schema: false,
                name: "read".into(),
                description: "d".into(),
                parameters: json!({}),
            }],
            max_tokens: None,
            session_id: None,
        };
        let options = ProviderOptions {
            cache_retention: CacheRetention::None,
            ..ProviderOptions::default()
        };
        let body = request_body(&model("claude-x", 1000, false), &request, &options, true);
        assert_eq!(
            body["system"],
            json!([
                {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
                {"type": "text", "text": "sys"}
            ])
        );
        assert_eq!(body["tools"][0]["name"], "Read");
        assert_eq!(body["max_tokens"], 1000);
        assert!(body.get("thinking").is_none());
    }

    #[test]
    fn unsigned_thinking_goes_back_as_text() {
        let mut a = AssistantMessage::new("anthropic-messages", "anthropic", "m", Vec::new(), 1);
        a.content = vec![
            ContentBlock::Thinking(ThinkingContent {
                thinking: "t".into(),
                thinking_signature: Some(String::new()),
                redacted: None,
            }),
            ContentBlock::Text(TextContent {
                text: " ".into(),
                text_signature: None,
            }),
        ];
        assert_eq!(
            assistant_blocks(&a, false),
            vec![json!({"type": "text", "text": "t"})]
        );
    }
}
