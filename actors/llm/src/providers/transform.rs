//! What every provider does to the context before converting it: pi-ai 1.6.0's
//! `transformMessages` (`api/transform-messages.js`).
//!
//! - Images sent to a model without image input become one placeholder text per run of
//!   images.
//! - Replies of another model (provider, API or id differ) lose what only that model can read:
//!   thinking is dropped (pi 0.73.1 sent it as plain text; 1.6.0 drops it, as the other model
//!   took it for part of the visible reply), text and tool-call signatures are dropped, and
//!   tool-call ids are normalised for the target API (results follow).
//! - Thinking without text is dropped unless the same model signed it.
//! - Tool calls and results are paired by [`crate::tool_pairs`], the one home of that rule:
//!   `error`/`aborted` replies are skipped, calls left without a result get an `isError`
//!   result `No result provided`, results without a call are left out. The agent's context is
//!   paired already; pairing again keeps every other caller safe and costs nothing on
//!   well-paired input.

use std::collections::HashMap;

use pith_events::{AgentMessage, AssistantMessage, ContentBlock, TextContent, UserContent};

use crate::model::Model;

const USER_IMAGE_PLACEHOLDER: &str = "(image omitted: model does not support images)";
const TOOL_IMAGE_PLACEHOLDER: &str = "(tool image omitted: model does not support images)";

/// The context as the target model may see it; only user, assistant and toolResult messages
/// come out. `normalize_id` maps a foreign tool-call id (and the reply it is in) to one the
/// target API accepts.
pub(crate) fn transform_messages(
    messages: &[AgentMessage],
    model: &Model,
    normalize_id: &dyn Fn(&str, &AssistantMessage) -> String,
) -> Vec<AgentMessage> {
    let vision = model.accepts_images();
    let mut id_map: HashMap<String, String> = HashMap::new();
    let mut first = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            AgentMessage::User(u) => {
                let mut u = u.clone();
                if !vision && let UserContent::Blocks(blocks) = &u.content {
                    u.content = UserContent::Blocks(without_images(blocks, USER_IMAGE_PLACEHOLDER));
                }
                first.push(AgentMessage::User(u));
            }
            AgentMessage::ToolResult(r) => {
                let mut r = r.clone();
                if !vision {
                    r.content = without_images(&r.content, TOOL_IMAGE_PLACEHOLDER);
                }
                if let Some(id) = id_map.get(&r.tool_call_id) {
                    r.tool_call_id = id.clone();
                }
                first.push(AgentMessage::ToolResult(r));
            }
            AgentMessage::Assistant(a) => {
                first.push(AgentMessage::Assistant(for_model(
                    a,
                    model,
                    normalize_id,
                    &mut id_map,
                )));
            }
            // convert_to_llm already turned every other role into a user message.
            _ => {}
        }
    }
    crate::tool_pairs::pair_tool_calls(first)
}

fn without_images(blocks: &[ContentBlock], placeholder: &str) -> Vec<ContentBlock> {
    let mut out = Vec::with_capacity(blocks.len());
    let mut previous_was_placeholder = false;
    for block in blocks {
        if let ContentBlock::Image(_) = block {
            if !previous_was_placeholder {
                out.push(ContentBlock::text(placeholder));
            }
            previous_was_placeholder = true;
            continue;
        }
        previous_was_placeholder = matches!(block, ContentBlock::Text(t) if t.text == placeholder);
        out.push(block.clone());
    }
    out
}

fn for_model(
    a: &AssistantMessage,
    model: &Model,
    normalize_id: &dyn Fn(&str, &AssistantMessage) -> String,
    id_map: &mut HashMap<String, String>,
) -> AssistantMessage {
    let same = a.provider == model.provider && a.api == model.api.as_str() && a.model == model.id;
    let mut out = a.clone();
    out.content = a
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Thinking(t) => {
                if !same {
                    return None;
                }
                let signed = t
                    .thinking_signature
                    .as_deref()
                    .is_some_and(|s| !s.is_empty());
                if t.redacted == Some(true) || signed {
                    return Some(block.clone());
                }
                (!pith_events::js::js_trim(&t.thinking).is_empty()).then(|| block.clone())
            }
            ContentBlock::Text(t) if !same => Some(ContentBlock::Text(TextContent {
                text: t.text.clone(),
                text_signature: None,
            })),
            ContentBlock::ToolCall(c) if !same => {
                let mut c = c.clone();
                c.thought_signature = None;
                let id = normalize_id(&c.id, a);
                if id != c.id {
                    id_map.insert(c.id.clone(), id.clone());
                    c.id = id;
                }
                Some(ContentBlock::ToolCall(c))
            }
            other => Some(other.clone()),
        })
        .collect();
    out
}

/// Replaces every character outside `[a-zA-Z0-9_-]` with `_` and keeps at most `max` UTF-16
/// units, as pi's `id.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, max)` does (a character
/// outside the BMP is two units, so two underscores).
pub(crate) fn sanitize_id(id: &str, max: usize) -> String {
    let mut out = String::with_capacity(id.len());
    for c in id.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('_');
            }
        }
    }
    out.truncate(max.min(out.len()));
    out
}

/// The first `max` UTF-16 units of `s` (JavaScript's `slice(0, max)`), never splitting a
/// character.
pub(crate) fn js_prefix(s: &str, max: usize) -> String {
    let mut units = 0;
    let mut out = String::new();
    for c in s.chars() {
        units += c.len_utf16();
        if units > max {
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_events::{
        ImageContent, StopReason, ThinkingContent, ToolCall, ToolResultMessage, UserMessage,
    };
    use serde_json::json;

    fn model() -> Model {
        serde_json::from_value(json!({
            "id": "m2", "name": "M2", "api": "anthropic-messages", "provider": "anthropic",
            "baseUrl": "http://x", "input": ["text"]
        }))
        .expect("model")
    }

    fn assistant(model: &str, content: Vec<ContentBlock>, stop: StopReason) -> AgentMessage {
        let mut a = AssistantMessage::new("anthropic-messages", "anthropic", model, content, 7);
        a.stop_reason = stop;
        AgentMessage::Assistant(a)
    }

    fn thinking(text: &str, sig: Option<&str>, redacted: bool) -> ContentBlock {
        ContentBlock::Thinking(ThinkingContent {
            thinking: text.into(),
            thinking_signature: sig.map(str::to_owned),
            redacted: redacted.then_some(true),
        })
    }

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: json!({}),
            thought_signature: Some("sig".into()),
        })
    }

    fn result(id: &str) -> AgentMessage {
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![
                ContentBlock::Image(ImageContent {
                    data: "AA".into(),
                    mime_type: "image/png".into(),
                }),
                ContentBlock::Image(ImageContent {
                    data: "AA".into(),
                    mime_type: "image/png".into(),
                }),
            ],
            details: None,
            is_error: false,
            duration_ms: None,
            timestamp: 8,
        })
    }

    #[test]
    fn foreign_replies_are_made_readable_and_ids_follow() {
        let normalize = |id: &str, _: &AssistantMessage| sanitize_id(id, 64);
        let messages = vec![
            AgentMessage::User(UserMessage {
                content: UserContent::Text("hi".into()),
                timestamp: 1,
            }),
            assistant(
                "other",
                vec![
                    thinking("secret", Some("s"), true),
                    thinking("plan", Some("s"), false),
                    thinking("  ", None, false),
                    call("call|1"),
                ],
                StopReason::ToolUse,
            ),
            result("call|1"),
            assistant(
                "m2",
                vec![thinking("", Some("sig"), false)],
                StopReason::Stop,
            ),
            assistant("m2", vec![call("lost")], StopReason::Error),
        ];
        let out = transform_messages(&messages, &model(), &normalize);
        let json = serde_json::to_value(&out).expect("json");
        assert_eq!(
            json,
            json!([
                {"role": "user", "content": "hi", "timestamp": 1},
                {"role": "assistant", "content": [
                    {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {}}
                ], "api": "anthropic-messages", "provider": "anthropic", "model": "other",
                 "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                   "totalTokens": 0, "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0,
                   "cacheWrite": 0.0, "total": 0.0}},
                 "stopReason": "toolUse", "timestamp": 7},
                {"role": "toolResult", "toolCallId": "call_1", "toolName": "read",
                 "content": [{"type": "text", "text": TOOL_IMAGE_PLACEHOLDER}],
                 "isError": false, "timestamp": 8},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "", "thinkingSignature": "sig"}
                 ], "api": "anthropic-messages", "provider": "anthropic", "model": "m2",
                 "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                   "totalTokens": 0, "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0,
                   "cacheWrite": 0.0, "total": 0.0}},
                 "stopReason": "stop", "timestamp": 7}
            ])
        );
    }

    #[test]
    fn unanswered_calls_get_a_result() {
        let messages = vec![
            assistant("m2", vec![call("a"), call("b")], StopReason::ToolUse),
            result("a"),
            AgentMessage::user_text("next", 9),
        ];
        let out = transform_messages(&messages, &model(), &|id: &str, _: &AssistantMessage| {
            id.to_owned()
        });
        let roles: Vec<_> = out.iter().map(AgentMessage::role).collect();
        assert_eq!(roles, ["assistant", "toolResult", "toolResult", "user"]);
        let AgentMessage::ToolResult(r) = &out[2] else {
            panic!("result expected")
        };
        assert_eq!((r.tool_call_id.as_str(), r.is_error), ("b", true));
    }

    #[test]
    fn ids_are_cut_like_javascript() {
        assert_eq!(sanitize_id("a|b\u{1f600}c", 64), "a_b__c");
        assert_eq!(sanitize_id(&"x".repeat(70), 64).len(), 64);
        assert_eq!(js_prefix("ab\u{1f600}", 3), "ab");
    }
}
