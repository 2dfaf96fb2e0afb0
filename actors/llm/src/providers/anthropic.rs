//! The Anthropic Messages API (`POST {baseUrl}/v1/messages`, streamed), as pi-ai's
//! `providers/anthropic.js` (`streamSimpleAnthropic`) speaks it.
//!
//! Request: `model, messages, max_tokens, stream, system?, tools?, thinking?,
//! output_config?`; headers `anthropic-version: 2023-06-01`, `x-api-key` (or
//! `Authorization: Bearer` for a Claude subscription token `sk-ant-oat…`, with Claude Code's
//! identity as pi sends it), `anthropic-beta` for interleaved thinking (models without
//! adaptive thinking) and fine-grained tool streaming (only when the model's compat turns
//! eager tool input streaming off), then the model's headers.

use crate::Error;
use std::collections::HashMap;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use pith_events::{
    AssistantMessage, ContentBlock, StopReason, StreamKind, ThinkingContent, ToolCall,
};

use super::anthropic_request::{Compat, request_body, supports_adaptive_thinking};
use super::http::{ErrorShape, Framing, HttpRequest};
use super::partial_json::{parse_json_with_repair, parse_streaming_json};
use super::sse::SseEvent;
use super::{ApiKey, Call, Output, ProviderOptions, ReplyStream, endpoint, header_map, spawn};
use crate::model::Model;
use crate::provider::{Provider, ProviderEvent, ProviderRequest};

const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
/// The Claude Code version pi impersonates with subscription tokens.
const CLAUDE_CODE_VERSION: &str = "2.1.75";
/// The events pi reads; any other named event (`ping`, new ones) is skipped.
const MESSAGE_EVENTS: &[&str] = &[
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
];

/// A model behind the Anthropic Messages API.
pub struct Anthropic {
    model: Model,
    key: ApiKey,
    options: ProviderOptions,
    client: reqwest::Client,
}

impl std::fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The model's headers may carry credentials (models.json): name the model only.
        f.debug_struct("Anthropic")
            .field("model", &self.model.qualified_id())
            .field("base_url", &self.model.base_url)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Anthropic {
    /// A provider for `model` with `key`, sharing `client`.
    pub(crate) fn new(
        model: Model,
        key: ApiKey,
        options: ProviderOptions,
        client: reqwest::Client,
    ) -> Anthropic {
        Anthropic {
            model,
            key,
            options,
            client,
        }
    }
}

impl Provider for Anthropic {
    /// The provider's name (`Provider::name` means `anthropic`, `openai`, … — not the
    /// model's display name, which is what clippy guesses from the field names).
    #[allow(clippy::misnamed_getters)]
    fn name(&self) -> &str {
        &self.model.provider
    }

    fn context_window(&self, _model: &str) -> Option<u64> {
        (self.model.context_window > 0).then_some(self.model.context_window)
    }

    fn max_tokens(&self, _model: &str) -> Option<u64> {
        (self.model.max_tokens > 0).then_some(self.model.max_tokens)
    }

    fn accepts_images(&self, _model: &str) -> bool {
        self.model.accepts_images()
    }

    /// Streams one reply of this provider's model (the request's `provider`/`model` names
    /// are not consulted: a provider is made for one model).
    fn stream(
        &self,
        request: ProviderRequest,
        abort: CancellationToken,
    ) -> mpsc::Receiver<ProviderEvent> {
        let oauth = self.key.expose().contains("sk-ant-oat");
        let body = request_body(&self.model, &request, &self.options, oauth);
        let call = Call::new(
            self.client.clone(),
            HttpRequest {
                url: endpoint(&self.model.base_url, "/v1/messages"),
                headers: self.headers(&request, oauth),
                body: serde_json::to_vec(&body).unwrap_or_default(),
            },
            &self.options,
            ErrorShape::Anthropic,
        );
        let msg = AssistantMessage::new(
            self.model.api.as_str(),
            self.model.provider.clone(),
            self.model.id.clone(),
            Vec::new(),
            self.options.clock.now_ms(),
        );
        let reply = AnthropicStream {
            model: self.model.clone(),
            tools: request.tools.iter().map(|t| t.name.clone()).collect(),
            oauth,
            open: Vec::new(),
            partial_json: HashMap::new(),
            saw_start: false,
            saw_stop: false,
        };
        spawn(call, reply, msg, abort)
    }
}

impl Anthropic {
    fn headers(&self, request: &ProviderRequest, oauth: bool) -> reqwest::header::HeaderMap {
        let compat = Compat::of(&self.model);
        let mut betas = Vec::new();
        if !request.tools.is_empty() && !compat.eager_tool_input_streaming {
            betas.push(FINE_GRAINED_TOOL_STREAMING_BETA);
        }
        // pi asks for interleaved thinking on every request (its default), except where
        // adaptive thinking already includes it.
        if !supports_adaptive_thinking(&self.model.id) {
            betas.push(INTERLEAVED_THINKING_BETA);
        }
        let key = self.key.expose();
        let bearer = format!("Bearer {key}");
        let mut headers: Vec<(&str, String)> = vec![("anthropic-version", "2023-06-01".to_owned())];
        if oauth {
            let mut all = vec!["claude-code-20250219", "oauth-2025-04-20"];
            all.extend(&betas);
            headers.extend([
                ("authorization", bearer),
                ("accept", "application/json".to_owned()),
                (
                    "anthropic-dangerous-direct-browser-access",
                    "true".to_owned(),
                ),
                ("anthropic-beta", all.join(",")),
                ("user-agent", format!("claude-cli/{CLAUDE_CODE_VERSION}")),
                ("x-app", "cli".to_owned()),
            ]);
        } else {
            headers.extend([
                ("x-api-key", key.to_owned()),
                ("accept", "application/json".to_owned()),
                (
                    "anthropic-dangerous-direct-browser-access",
                    "true".to_owned(),
                ),
            ]);
            if !betas.is_empty() {
                headers.push(("anthropic-beta", betas.join(",")));
            }
        }
        let extra = self
            .model
            .headers
            .iter()
            .flatten()
            .chain(&self.options.headers)
            .map(|(k, v)| (k.as_str(), v.clone()));
        headers.extend(extra);
        headers.push(("content-type", "application/json".to_owned()));
        header_map(
            headers.iter().map(|(k, v)| (*k, v.as_str())),
            &["x-api-key", "authorization"],
        )
    }
}

/// pi's `mapStopReason`; an unknown reason is an error.
fn stop_reason(reason: &str) -> Result<StopReason, Error> {
    match reason {
        "end_turn" | "pause_turn" | "stop_sequence" => Ok(StopReason::Stop),
        "max_tokens" => Ok(StopReason::Length),
        "tool_use" => Ok(StopReason::ToolUse),
        "refusal" | "sensitive" => Ok(StopReason::Error),
        other => Err(Error::Stream(format!("Unhandled stop reason: {other}"))),
    }
}

/// One reply's stream state (pi keeps it on the blocks as `index` and `partialJson`).
struct AnthropicStream {
    model: Model,
    tools: Vec<String>,
    oauth: bool,
    /// Blocks still streaming: Anthropic's block index → position in `content`.
    open: Vec<(u64, usize)>,
    /// Raw argument JSON of tool calls still streaming, by position in `content`.
    partial_json: HashMap<usize, String>,
    saw_start: bool,
    saw_stop: bool,
}

fn count(usage: &Value, name: &str) -> Option<u64> {
    usage.get(name).and_then(Value::as_u64)
}

impl AnthropicStream {
    fn position(&self, event: &Value) -> Option<usize> {
        let index = event.get("index").and_then(Value::as_u64)?;
        self.open.iter().find(|(i, _)| *i == index).map(|(_, p)| *p)
    }

    fn price(&self, out: &mut Output) {
        let u = &mut out.msg.usage;
        u.total_tokens = u.input + u.output + u.cache_read + u.cache_write;
        self.model.price(u);
    }

    fn block_start(&mut self, event: &Value, out: &mut Output) {
        let Some(block) = event.get("content_block") else {
            return;
        };
        let text = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or("");
        let (content, kind) = match block.get("type").and_then(Value::as_str) {
            Some("text") => (ContentBlock::text(""), StreamKind::TextStart),
            Some("thinking") => (
                ContentBlock::Thinking(ThinkingContent {
                    thinking: String::new(),
                    thinking_signature: Some(String::new()),
                    redacted: None,
                }),
                StreamKind::ThinkingStart,
            ),
            Some("redacted_thinking") => (
                ContentBlock::Thinking(ThinkingContent {
                    thinking: "[Reasoning redacted]".into(),
                    thinking_signature: Some(text("data").to_owned()),
                    redacted: Some(true),
                }),
                StreamKind::ThinkingStart,
            ),
            Some("tool_use") => {
                let name = text("name");
                let name = if self.oauth {
                    self.tools
                        .iter()
                        .find(|t| t.eq_ignore_ascii_case(name))
                        .map_or(name, String::as_str)
                } else {
                    name
                };
                let arguments = match block.get("input") {
                    None | Some(Value::Null) => json!({}),
                    Some(v) => v.clone(),
                };
                (
                    ContentBlock::ToolCall(ToolCall {
                        id: text("id").to_owned(),
                        name: name.to_owned(),
                        arguments,
                        thought_signature: None,
                    }),
                    StreamKind::ToolCallStart,
                )
            }
            _ => return,
        };
        let position = out.msg.content.len();
        out.msg.content.push(content);
        if let Some(index) = event.get("index").and_then(Value::as_u64) {
            self.open.push((index, position));
        }
        if kind == StreamKind::ToolCallStart {
            self.partial_json.insert(position, String::new());
        }
        out.update(kind, position, None);
    }

    fn block_delta(&mut self, event: &Value, out: &mut Output) {
        let (Some(position), Some(delta)) = (self.position(event), event.get("delta")) else {
            return;
        };
        let text = |name: &str| {
            delta
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let block = &mut out.msg.content[position];
        match (delta.get("type").and_then(Value::as_str), block) {
            (Some("text_delta"), ContentBlock::Text(t)) => {
                let piece = text("text");
                t.text.push_str(&piece);
                out.update(StreamKind::TextDelta, position, Some(piece));
            }
            (Some("thinking_delta"), ContentBlock::Thinking(t)) => {
                let piece = text("thinking");
                t.thinking.push_str(&piece);
                out.update(StreamKind::ThinkingDelta, position, Some(piece));
            }
            (Some("input_json_delta"), ContentBlock::ToolCall(c)) => {
                let piece = text("partial_json");
                let json = self.partial_json.entry(position).or_default();
                json.push_str(&piece);
                c.arguments = parse_streaming_json(json);
                out.update(StreamKind::ToolCallDelta, position, Some(piece));
            }
            (Some("signature_delta"), ContentBlock::Thinking(t)) => {
                t.thinking_signature
                    .get_or_insert_with(String::new)
                    .push_str(&text("signature"));
            }
            _ => {}
        }
    }

    fn block_stop(&mut self, event: &Value, out: &mut Output) {
        let Some(position) = self.position(event) else {
            return;
        };
        self.open.retain(|(_, p)| *p != position);
        let kind = match &mut out.msg.content[position] {
            ContentBlock::Text(_) => StreamKind::TextEnd,
            ContentBlock::Thinking(_) => StreamKind::ThinkingEnd,
            ContentBlock::ToolCall(c) => {
                let json = self.partial_json.remove(&position).unwrap_or_default();
                c.arguments = parse_streaming_json(&json);
                StreamKind::ToolCallEnd
            }
            _ => return,
        };
        out.update(kind, position, None);
    }

    fn message_start(&mut self, event: &Value, out: &mut Output) {
        self.saw_start = true;
        let message = event.get("message").unwrap_or(&Value::Null);
        if let Some(id) = message.get("id").and_then(Value::as_str) {
            out.msg.response_id = Some(id.to_owned());
        }
        // Input counts arrive here, so even a reply aborted early reports them.
        let usage = message.get("usage").unwrap_or(&Value::Null);
        let u = &mut out.msg.usage;
        u.input = count(usage, "input_tokens").unwrap_or(0);
        u.output = count(usage, "output_tokens").unwrap_or(0);
        u.cache_read = count(usage, "cache_read_input_tokens").unwrap_or(0);
        u.cache_write = count(usage, "cache_creation_input_tokens").unwrap_or(0);
        // pi ≥ 1.x: the one-hour cache writes, 0 when the server gives no breakdown.
        u.cache_write_1h = Some(
            usage
                .get("cache_creation")
                .and_then(|c| count(c, "ephemeral_1h_input_tokens"))
                .unwrap_or(0),
        );
        self.price(out);
    }

    fn message_delta(&mut self, event: &Value, out: &mut Output) -> Result<(), Error> {
        if let Some(reason) = event
            .get("delta")
            .and_then(|d| d.get("stop_reason"))
            .and_then(Value::as_str)
        {
            out.msg.raw_stop_reason = Some(reason.to_owned());
            out.msg.stop_reason = stop_reason(reason)?;
        }
        // Only counts that are present replace earlier ones (proxies omit input here).
        let usage = event.get("usage").unwrap_or(&Value::Null);
        let u = &mut out.msg.usage;
        for (name, field) in [
            ("input_tokens", &mut u.input),
            ("output_tokens", &mut u.output),
            ("cache_read_input_tokens", &mut u.cache_read),
            ("cache_creation_input_tokens", &mut u.cache_write),
        ] {
            if let Some(n) = count(usage, name) {
                *field = n;
            }
        }
        if let Some(n) = usage
            .get("cache_creation")
            .and_then(|c| count(c, "ephemeral_1h_input_tokens"))
        {
            u.cache_write_1h = Some(n);
        }
        // Anthropic reports reasoning tokens as a subset of output tokens.
        if let Some(n) = usage
            .get("output_tokens_details")
            .and_then(|d| count(d, "thinking_tokens"))
        {
            u.reasoning = Some(n);
        }
        self.price(out);
        Ok(())
    }
}

impl ReplyStream for AnthropicStream {
    const FRAMING: Framing = Framing::Sse {
        dispatch_trailing: true,
    };

    fn event(&mut self, sse: SseEvent, out: &mut Output) -> Result<(), Error> {
        let name = sse.event.as_deref().unwrap_or("");
        if name == "error" {
            return Err(Error::Stream(sse.data));
        }
        if !MESSAGE_EVENTS.contains(&name) {
            return Ok(());
        }
        let event = parse_json_with_repair(&sse.data).map_err(|e| {
            format!(
                "Could not parse Anthropic SSE event {name}: {e}; data={}; raw={}",
                sse.data,
                sse.raw.join("\\n")
            )
        })?;
        match event.get("type").and_then(Value::as_str) {
            Some("message_start") => self.message_start(&event, out),
            Some("message_stop") => self.saw_stop = true,
            Some("content_block_start") => self.block_start(&event, out),
            Some("content_block_delta") => self.block_delta(&event, out),
            Some("content_block_stop") => self.block_stop(&event, out),
            Some("message_delta") => self.message_delta(&event, out)?,
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, out: &mut Output) -> Result<(), Error> {
        if self.saw_start && !self.saw_stop {
            return Err("Anthropic stream ended before message_stop".into());
        }
        if matches!(out.msg.stop_reason, StopReason::Error | StopReason::Aborted) {
            return Err("An unknown error occurred".into());
        }
        Ok(())
    }

    /// Node's fetch rejects the pending body read with this `AbortError` text, and pi-ai
    /// passes it on; no block is closed.
    fn aborted(&mut self, _out: &mut Output) -> &'static str {
        "This operation was aborted"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons() {
        assert_eq!(stop_reason("refusal"), Ok(StopReason::Error));
        assert_eq!(
            stop_reason("weird").map_err(|e| e.to_string()),
            Err("Unhandled stop reason: weird".to_owned())
        );
    }
}
