//! What pi-ai 1.6.0's `buildBaseOptions` (`api/simple-options.js`) decides for every provider
//! that follows it (Gemini and the Responses API; the Anthropic and Chat Completions providers
//! still follow 0.73.1): the output limit, fitted into the context window with the room pi's
//! token estimate (`utils/estimate.js`) leaves.

use pith_events::js::to_js_json;
use pith_events::{AgentMessage, ContentBlock, StopReason, ToolSpec, UserContent};

use crate::model::Model;
use crate::provider::ProviderRequest;

/// Tokens always left free besides the prompt.
const CONTEXT_SAFETY_TOKENS: u64 = 4096;
/// Share of the prompt kept free as well (OpenRouter counts prompts higher than providers).
const CONTEXT_SAFETY_RATIO: f64 = 0.15;
/// The ratio margin only stays while it leaves at least this much output.
const MIN_OUTPUT_WITH_RATIO_MARGIN: i64 = 32768;
/// pi's estimate: characters (UTF-16 units) per token.
const CHARS_PER_TOKEN: f64 = 3.5;
/// pi's estimate of an image in characters.
const ESTIMATED_IMAGE_CHARS: usize = 4800;

/// The output limit pi-ai 1.6.0 sends: the request's own, else the model's `maxTokens`, cut to
/// the room the context window leaves (`clampMaxTokensToContext`). A window of 0 is unknown:
/// only a floor of 1 applies. `Some(0)` from the caller stays 0, as JavaScript's `0 ??`
/// keeps it and `Math.min` then picks it.
pub(crate) fn max_tokens(model: &Model, request: &ProviderRequest) -> u64 {
    let wanted = request.max_tokens.unwrap_or(model.max_tokens);
    if model.context_window == 0 {
        return wanted.max(1);
    }
    let input = estimate_context_tokens(request) as i64;
    let window = model.context_window as i64;
    let margin =
        (CONTEXT_SAFETY_TOKENS as i64).max((input as f64 * CONTEXT_SAFETY_RATIO).ceil() as i64);
    let mut room = window - input - margin;
    if room < MIN_OUTPUT_WITH_RATIO_MARGIN {
        room = MIN_OUTPUT_WITH_RATIO_MARGIN.min(window - input - CONTEXT_SAFETY_TOKENS as i64);
    }
    wanted.min(room.max(1) as u64)
}

/// pi's `estimateContextTokens` of the context a request makes: the last usable reply's
/// reported total plus an estimate of what came after it, or an estimate of everything. The
/// system prompt and tools count as pi's leading system message (timestamp 0).
fn estimate_context_tokens(request: &ProviderRequest) -> u64 {
    let system = system_tokens(request.system_prompt.as_deref(), &request.tools);
    let messages = &request.messages;
    // The system message is the first prefix message; its timestamp is 0.
    let mut latest_prefix = if system.is_some() { 0 } else { i64::MIN };
    let mut last_usage: Option<(u64, usize)> = None;
    for (i, message) in messages.iter().enumerate() {
        if let AgentMessage::Assistant(a) = message {
            let tokens = context_tokens(&a.usage);
            if a.timestamp >= latest_prefix
                && !matches!(a.stop_reason, StopReason::Aborted | StopReason::Error)
                && tokens > 0
            {
                last_usage = Some((tokens, i));
            }
        }
        latest_prefix = latest_prefix.max(message_timestamp(message));
    }
    match last_usage {
        Some((tokens, at)) => tokens + messages[at + 1..].iter().map(message_tokens).sum::<u64>(),
        None => system.unwrap_or(0) + messages.iter().map(message_tokens).sum::<u64>(),
    }
}

/// pi's `calculateContextTokens`.
fn context_tokens(u: &pith_events::Usage) -> u64 {
    if u.total_tokens > 0 {
        u.total_tokens
    } else {
        u.input + u.output + u.cache_read + u.cache_write
    }
}

fn message_timestamp(message: &AgentMessage) -> i64 {
    match message {
        AgentMessage::User(m) => m.timestamp,
        AgentMessage::Assistant(m) => m.timestamp,
        AgentMessage::ToolResult(m) => m.timestamp,
        _ => i64::MIN,
    }
}

/// The estimate of the leading system message, `None` when there is none (no prompt, no
/// tools).
fn system_tokens(prompt: Option<&str>, tools: &[ToolSpec]) -> Option<u64> {
    let prompt = prompt.unwrap_or("");
    if prompt.is_empty() && tools.is_empty() {
        return None;
    }
    let tools_tokens = if tools.is_empty() {
        0
    } else {
        let declared: Vec<serde_json::Value> = tools
            .iter()
            .map(|t| serde_json::json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        tokens(utf16_len(&to_js_json(&declared).unwrap_or_default()))
    };
    Some(tokens(utf16_len(prompt)) + tools_tokens)
}

/// pi's `estimateMessageTokens`.
fn message_tokens(message: &AgentMessage) -> u64 {
    match message {
        AgentMessage::User(u) => match &u.content {
            UserContent::Text(t) => tokens(utf16_len(t)),
            UserContent::Blocks(blocks) => tokens(blocks_chars(blocks)),
        },
        AgentMessage::ToolResult(r) => tokens(blocks_chars(&r.content)),
        AgentMessage::Assistant(a) => {
            let chars: usize = a
                .content
                .iter()
                .map(|b| match b {
                    ContentBlock::Text(t) => utf16_len(&t.text),
                    ContentBlock::Thinking(t) => utf16_len(&t.thinking),
                    ContentBlock::ToolCall(c) => {
                        utf16_len(&c.name)
                            + utf16_len(&to_js_json(&c.arguments).unwrap_or_default())
                    }
                    _ => 0,
                })
                .sum();
            tokens(chars)
        }
        _ => 0,
    }
}

/// Text and image content in characters: text by length, each other block as an image.
fn blocks_chars(blocks: &[ContentBlock]) -> usize {
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => utf16_len(&t.text),
            _ => ESTIMATED_IMAGE_CHARS,
        })
        .sum()
}

fn tokens(chars: usize) -> u64 {
    (chars as f64 / CHARS_PER_TOKEN).ceil() as u64
}

/// JavaScript's `length`: UTF-16 code units.
pub(crate) fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_events::{AssistantMessage, Usage};
    use serde_json::json;

    fn model(window: u64, max: u64) -> Model {
        serde_json::from_value(json!({
            "id": "m", "name": "m", "api": "google-generative-ai", "provider": "google",
            "baseUrl": "http://x", "contextWindow": window, "maxTokens": max
        }))
        .expect("model")
    }

    fn request(messages: Vec<AgentMessage>) -> ProviderRequest {
        ProviderRequest {
            provider: "google".into(),
            model: "m".into(),
            thinking_level: pith_events::ThinkingLevel::Off,
            system_prompt: Some("x".repeat(35)),
            messages,
            tools: Vec::new(),
            max_tokens: None,
            session_id: None,
        }
    }

    #[test]
    fn the_limit_fits_the_window() {
        let small = vec![AgentMessage::user_text("y".repeat(70), 1)];
        // 10 + 20 tokens of prompt: far from a 1M window, the model's limit stands.
        assert_eq!(
            max_tokens(&model(1_048_576, 65536), &request(small.clone())),
            65536
        );
        // A 40000-token window: 40000 - 30 - max(4096, 15% of 30) = 35874.
        assert_eq!(
            max_tokens(&model(40_000, 65536), &request(small.clone())),
            35874
        );
        // Less than 32768 left: only the fixed margin, and at most 32768.
        assert_eq!(
            max_tokens(&model(30_000, 65536), &request(small.clone())),
            25874
        );
        // Unknown window: the model's limit; a full window: at least 1.
        assert_eq!(max_tokens(&model(0, 8), &request(small.clone())), 8);
        assert_eq!(max_tokens(&model(4000, 8000), &request(small)), 1);
    }

    #[test]
    fn the_last_reply_with_usage_counts_as_reported() {
        let mut reply = AssistantMessage::new("a", "p", "m", vec![ContentBlock::text("ok")], 5);
        reply.usage = Usage {
            total_tokens: 100_000,
            ..Usage::default()
        };
        let messages = vec![
            AgentMessage::user_text("hello", 1),
            AgentMessage::Assistant(reply),
            AgentMessage::user_text("z".repeat(7), 6),
        ];
        // 100000 reported + 2 for the new prompt.
        let r = request(messages);
        assert_eq!(estimate_context_tokens(&r), 100_002);
        // 200000 - 100002 - 15001 = 84997, under the model's 128000.
        assert_eq!(max_tokens(&model(200_000, 128_000), &r), 84_997);
    }
}
