//! OpenAI Chat Completions (`POST {baseUrl}/chat/completions`, streamed), for OpenAI and any
//! compatible server (llama.cpp, vLLM, Ollama, OpenRouter, DeepSeek …), as pi-ai's
//! `providers/openai-completions.js` (`streamSimpleOpenAICompletions`) speaks it.
//!
//! Request: `model, messages, stream, prompt_cache_key?, prompt_cache_retention?,
//! stream_options?, store?, max_completion_tokens|max_tokens, tools?` and the reasoning
//! member of the server's `thinkingFormat` (built in `openai_request`); headers
//! `Authorization: Bearer <key>` (left out without a key) and the model's headers. Server
//! quirks follow pi's `compat` switches (`openai_compat`).

use crate::Error;
use std::collections::HashMap;

use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use pith_events::js::to_js_json;
use pith_events::{
    AssistantMessage, ContentBlock, StopReason, StreamKind, ThinkingContent, ToolCall, Usage,
};

use super::error_text::format_provider_error;
use super::http::{ErrorShape, Failed, Framing, HttpRequest, make_message, truthy};
use super::openai_compat::OpenAiCompat;
use super::openai_request::request_body;
use super::partial_json::parse_streaming_json;
use super::sse::SseEvent;
use super::{
    ApiKey, CacheRetention, Call, Output, ProviderOptions, ReplyStream, endpoint, header_map, spawn,
};
use crate::model::Model;
use crate::provider::{Provider, ProviderEvent, ProviderRequest};

/// Delta members that carry reasoning, in pi's order of preference.
const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

/// A model behind an OpenAI-compatible Chat Completions endpoint.
pub struct OpenAiCompletions {
    model: Model,
    key: Option<ApiKey>,
    options: ProviderOptions,
    client: reqwest::Client,
}

impl std::fmt::Debug for OpenAiCompletions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The model's headers may carry credentials (models.json): name the model only.
        f.debug_struct("OpenAiCompletions")
            .field("model", &self.model.qualified_id())
            .field("base_url", &self.model.base_url)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl OpenAiCompletions {
    /// A provider for `model`, with `key` if the server wants one, sharing `client`.
    pub(crate) fn new(
        model: Model,
        key: Option<ApiKey>,
        options: ProviderOptions,
        client: reqwest::Client,
    ) -> OpenAiCompletions {
        OpenAiCompletions {
            model,
            key,
            options,
            client,
        }
    }

    fn headers(
        &self,
        compat: &OpenAiCompat,
        request: &ProviderRequest,
    ) -> reqwest::header::HeaderMap {
        let mut headers: Vec<(&str, String)> = vec![("accept", "application/json".to_owned())];
        if let Some(key) = &self.key {
            headers.push(("authorization", format!("Bearer {}", key.expose())));
        }
        headers.extend(
            self.model
                .headers
                .iter()
                .flatten()
                .map(|(k, v)| (k.as_str(), v.clone())),
        );
        if let Some(id) = self.cache_session_id(request)
            && compat.send_session_affinity_headers
        {
            for name in ["session_id", "x-client-request-id", "x-session-affinity"] {
                headers.push((name, id.to_owned()));
            }
        }
        headers.extend(
            self.options
                .headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.clone())),
        );
        headers.push(("content-type", "application/json".to_owned()));
        header_map(
            headers.iter().map(|(k, v)| (*k, v.as_str())),
            &["authorization"],
        )
    }

    fn cache_session_id<'r>(&self, request: &'r ProviderRequest) -> Option<&'r str> {
        match self.options.cache_retention {
            CacheRetention::None => None,
            _ => request.session_id.as_deref(),
        }
    }
}

impl Provider for OpenAiCompletions {
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
        let compat = OpenAiCompat::of(&self.model);
        let body = request_body(&self.model, &request, &self.options, &compat);
        let call = Call::new(
            self.client.clone(),
            HttpRequest {
                url: endpoint(&self.model.base_url, "/chat/completions"),
                headers: self.headers(&compat, &request),
                body: serde_json::to_vec(&body).unwrap_or_default(),
            },
            &self.options,
            ErrorShape::OpenAi,
        );
        let msg = AssistantMessage::new(
            self.model.api.as_str(),
            self.model.provider.clone(),
            self.model.id.clone(),
            Vec::new(),
            self.options.clock.now_ms(),
        );
        let reply = OpenAiStream {
            model: self.model.clone(),
            text: None,
            thinking: None,
            by_index: HashMap::new(),
            by_id: HashMap::new(),
            partial_args: HashMap::new(),
            stream_index: HashMap::new(),
            done: false,
            finish_reason_expected: compat.supports_finish_reason,
            has_finish_reason: false,
        };
        spawn(call, reply, msg, abort)
    }
}

/// pi's `parseChunkUsage`: cached tokens are reads (minus writes when a server counts writes
/// in them), input is the prompt minus both, output is `completion_tokens` (which already
/// includes reasoning).
fn usage(raw: &Value, model: &Model) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_f64).filter(|f| *f != 0.0);
    let details = raw.get("prompt_tokens_details");
    let prompt = n(raw.get("prompt_tokens")).unwrap_or(0.0);
    let cached = details
        .and_then(|d| d.get("cached_tokens"))
        .filter(|v| !v.is_null())
        .or_else(|| raw.get("prompt_cache_hit_tokens").filter(|v| !v.is_null()))
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let write = n(details.and_then(|d| d.get("cache_write_tokens"))).unwrap_or(0.0);
    let read = if write > 0.0 {
        (cached - write).max(0.0)
    } else {
        cached
    };
    let input = (prompt - read - write).max(0.0);
    let output = n(raw.get("completion_tokens")).unwrap_or(0.0);
    // pi ≥ 1.x: the reasoning tokens among the output, 0 when the server does not say.
    let reasoning = n(raw
        .get("completion_tokens_details")
        .and_then(|d| d.get("reasoning_tokens")))
    .or_else(|| n(raw.get("reasoning_tokens")))
    .unwrap_or(0.0);
    let mut u = Usage {
        input: input as u64,
        output: output as u64,
        cache_read: read as u64,
        cache_write: write as u64,
        reasoning: Some(reasoning as u64),
        total_tokens: (input + output + read + write) as u64,
        ..Usage::default()
    };
    model.price(&mut u);
    u
}

/// pi's `mapStopReason` for `finish_reason`.
fn finish_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "stop" | "end" => (StopReason::Stop, None),
        "length" => (StopReason::Length, None),
        "function_call" | "tool_calls" => (StopReason::ToolUse, None),
        other => (
            StopReason::Error,
            Some(format!("Provider finish_reason: {other}")),
        ),
    }
}

/// One reply's stream state: pi keeps one text and one thinking block per reply, and tool
/// calls by their stream `index` (or id).
struct OpenAiStream {
    model: Model,
    text: Option<usize>,
    thinking: Option<usize>,
    by_index: HashMap<i64, usize>,
    by_id: HashMap<String, usize>,
    /// Raw argument JSON of each tool call, by position in `content`.
    partial_args: HashMap<usize, String>,
    /// The stream `index` a tool call was first seen with, by position.
    stream_index: HashMap<usize, i64>,
    /// `[DONE]` arrived: the rest of the body is ignored.
    done: bool,
    /// `compat.supportsFinishReason`: a body that ends without one is an error.
    finish_reason_expected: bool,
    /// A `finish_reason` arrived.
    has_finish_reason: bool,
}

impl OpenAiStream {
    fn chunk(&mut self, chunk: &Value, out: &mut Output) {
        if !chunk.is_object() {
            return;
        }
        if out.msg.response_id.is_none()
            && let Some(id) = chunk
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        {
            out.msg.response_id = Some(id.to_owned());
        }
        if out.msg.response_model.is_none()
            && let Some(m) = chunk.get("model").and_then(Value::as_str)
            && !m.is_empty()
            && m != self.model.id
        {
            out.msg.response_model = Some(m.to_owned());
        }
        let chunk_usage = chunk.get("usage").filter(|u| truthy(u));
        if let Some(u) = chunk_usage {
            out.msg.usage = usage(u, &self.model);
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return;
        };
        // Moonshot reports usage on the choice.
        if chunk_usage.is_none()
            && let Some(u) = choice.get("usage").filter(|u| truthy(u))
        {
            out.msg.usage = usage(u, &self.model);
        }
        if let Some(reason) = choice.get("finish_reason").filter(|r| truthy(r)) {
            let reason = reason
                .as_str()
                .map_or_else(|| reason.to_string(), str::to_owned);
            let (stop, error) = finish_reason(&reason);
            self.has_finish_reason = true;
            out.msg.raw_stop_reason = Some(reason.clone());
            out.msg.stop_reason = stop;
            if error.is_some() {
                out.msg.error_message = error;
            }
        }
        let Some(delta) = choice.get("delta").filter(|d| truthy(d)) else {
            return;
        };
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            let at = self.ensure_text(out);
            if let ContentBlock::Text(t) = &mut out.msg.content[at] {
                t.text.push_str(text);
            }
            out.update(StreamKind::TextDelta, at, Some(text.to_owned()));
        }
        let reasoning = REASONING_FIELDS.iter().find_map(|field| {
            delta
                .get(*field)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(|s| (*field, s))
        });
        if let Some((field, text)) = reasoning {
            let at = self.ensure_thinking(field, out);
            if let ContentBlock::Thinking(t) = &mut out.msg.content[at] {
                t.thinking.push_str(text);
            }
            out.update(StreamKind::ThinkingDelta, at, Some(text.to_owned()));
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                self.tool_call_delta(call, out);
            }
        }
        if let Some(details) = delta.get("reasoning_details").and_then(Value::as_array) {
            for detail in details {
                let encrypted =
                    detail.get("type").and_then(Value::as_str) == Some("reasoning.encrypted");
                let id = detail
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty());
                if let (true, Some(id), true) =
                    (encrypted, id, detail.get("data").is_some_and(truthy))
                {
                    for block in &mut out.msg.content {
                        if let ContentBlock::ToolCall(c) = block
                            && c.id == id
                        {
                            c.thought_signature = to_js_json(detail).ok();
                            break;
                        }
                    }
                }
            }
        }
    }

    fn ensure_text(&mut self, out: &mut Output) -> usize {
        if let Some(at) = self.text {
            return at;
        }
        let at = out.msg.content.len();
        out.msg.content.push(ContentBlock::text(""));
        self.text = Some(at);
        out.update(StreamKind::TextStart, at, None);
        at
    }

    fn ensure_thinking(&mut self, field: &str, out: &mut Output) -> usize {
        if let Some(at) = self.thinking {
            return at;
        }
        let at = out.msg.content.len();
        out.msg
            .content
            .push(ContentBlock::Thinking(ThinkingContent {
                thinking: String::new(),
                // pi records which delta member carried the reasoning, to send it back there.
                thinking_signature: Some(field.to_owned()),
                redacted: None,
            }));
        self.thinking = Some(at);
        out.update(StreamKind::ThinkingStart, at, None);
        at
    }

    fn tool_call_delta(&mut self, call: &Value, out: &mut Output) {
        let index = call.get("index").and_then(Value::as_i64);
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let function = call.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let found = index
            .and_then(|i| self.by_index.get(&i))
            .or_else(|| id.and_then(|id| self.by_id.get(id)))
            .copied();
        let at = match found {
            Some(at) => at,
            None => {
                let at = out.msg.content.len();
                out.msg.content.push(ContentBlock::ToolCall(ToolCall {
                    id: id.unwrap_or("").to_owned(),
                    name: name.unwrap_or("").to_owned(),
                    arguments: Value::Object(Map::new()),
                    thought_signature: None,
                }));
                self.partial_args.insert(at, String::new());
                out.update(StreamKind::ToolCallStart, at, None);
                at
            }
        };
        if let Some(i) = index
            && !self.stream_index.contains_key(&at)
        {
            self.stream_index.insert(at, i);
            self.by_index.insert(i, at);
        }
        if let Some(id) = id {
            self.by_id.insert(id.to_owned(), at);
        }
        let mut delta = String::new();
        if let ContentBlock::ToolCall(c) = &mut out.msg.content[at] {
            if c.id.is_empty()
                && let Some(id) = id
            {
                c.id = id.to_owned();
            }
            if c.name.is_empty()
                && let Some(name) = name
            {
                c.name = name.to_owned();
            }
            if let Some(args) = function
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                delta = args.to_owned();
                let partial = self.partial_args.entry(at).or_default();
                partial.push_str(args);
                c.arguments = parse_streaming_json(partial);
            }
        }
        out.update(StreamKind::ToolCallDelta, at, Some(delta));
    }

    /// pi's `finishBlock` for every block, in order: the `*_end` events, and the final parse
    /// of each tool call's arguments.
    fn finish_blocks(&mut self, out: &mut Output) {
        for at in 0..out.msg.content.len() {
            let kind = match &mut out.msg.content[at] {
                ContentBlock::Text(_) => StreamKind::TextEnd,
                ContentBlock::Thinking(_) => StreamKind::ThinkingEnd,
                ContentBlock::ToolCall(c) => {
                    let partial = self.partial_args.remove(&at).unwrap_or_default();
                    c.arguments = parse_streaming_json(&partial);
                    StreamKind::ToolCallEnd
                }
                _ => continue,
            };
            out.update(kind, at, None);
        }
    }
}

/// An OpenAI SDK `APIError` text with OpenRouter's extra `metadata.raw` on a second line,
/// unless the text already quotes it.
fn with_raw_metadata(message: String, error: Option<&Value>) -> String {
    let raw = error
        .and_then(|e| e.get("metadata"))
        .and_then(|m| m.get("raw"))
        .filter(|r| truthy(r));
    let raw = match raw {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => return message,
    };
    if message.contains(&raw) {
        message
    } else {
        format!("{message}\n{raw}")
    }
}

impl ReplyStream for OpenAiStream {
    const FRAMING: Framing = Framing::Sse {
        dispatch_trailing: false,
    };

    fn event(&mut self, sse: SseEvent, out: &mut Output) -> Result<(), Error> {
        if self.done {
            return Ok(());
        }
        if sse.data.starts_with("[DONE]") {
            self.done = true;
            return Ok(());
        }
        let data: Value = serde_json::from_str(&sse.data)
            .map_err(|e| format!("Could not parse SSE data as JSON: {e}; data={}", sse.data))?;
        // Assistants-API events: the SDK passes them on and pi finds no choices in them.
        if sse
            .event
            .as_deref()
            .is_some_and(|e| e.starts_with("thread."))
        {
            return Ok(());
        }
        if let Some(error) = data.get("error").filter(|e| truthy(e)) {
            return Err(Error::Stream(with_raw_metadata(
                make_message(None, Some(error), None),
                Some(error),
            )));
        }
        self.chunk(&data, out);
        Ok(())
    }

    /// pi-ai 1.6.0's end of stream: an error stop reason fails the reply, and so does a
    /// body that ended without a `finish_reason` (an HTML page, a connection closed early)
    /// unless the model's `compat.supportsFinishReason` is false, where the stop reason is
    /// inferred from the content.
    fn end(&mut self, out: &mut Output) -> Result<(), Error> {
        self.finish_blocks(out);
        if !self.has_finish_reason && !self.finish_reason_expected {
            out.msg.stop_reason = if out
                .msg
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolCall(_)))
            {
                StopReason::ToolUse
            } else {
                StopReason::Stop
            };
        }
        match out.msg.stop_reason {
            StopReason::Aborted => Err(super::ABORTED.into()),
            StopReason::Error => {
                Err(Error::Stream(out.msg.error_message.clone().unwrap_or_else(
                    || "Provider returned an error stop reason".into(),
                )))
            }
            _ if self.finish_reason_expected && !self.has_finish_reason => {
                Err("Stream ended without finish_reason".into())
            }
            StopReason::Stop | StopReason::Length | StopReason::ToolUse | StopReason::Pending => {
                Ok(())
            }
        }
    }

    /// The SDK ends the stream quietly on abort, so pi still closes every block and then
    /// reports the signal itself.
    fn aborted(&mut self, out: &mut Output) -> &'static str {
        self.finish_blocks(out);
        super::ABORTED
    }

    /// pi's `formatProviderError` without a prefix: `500: {"message":"boom",…}` for an
    /// HTTP error with an error object ([`format_provider_error`]).
    fn request_failed(&self, failure: Failed) -> String {
        let error = failure.error.clone();
        with_raw_metadata(format_provider_error(failure, None), error.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn model() -> Model {
        serde_json::from_value(json!({
            "id": "gpt", "name": "gpt", "api": "openai-completions", "provider": "openai",
            "baseUrl": "https://api.openai.com/v1",
            "cost": {"input": 1.0, "output": 2.0, "cacheRead": 0.5, "cacheWrite": 0.0}
        }))
        .expect("model")
    }

    #[test]
    fn usage_subtracts_cached_and_written_tokens() {
        let u = usage(
            &json!({"prompt_tokens": 100, "completion_tokens": 20,
                    "prompt_tokens_details": {"cached_tokens": 30, "cache_write_tokens": 10}}),
            &model(),
        );
        assert_eq!(
            (
                u.input,
                u.output,
                u.cache_read,
                u.cache_write,
                u.total_tokens
            ),
            (70, 20, 20, 10, 120)
        );
        let u = usage(
            &json!({"prompt_tokens": 50, "prompt_cache_hit_tokens": 40}),
            &model(),
        );
        assert_eq!((u.input, u.cache_read), (10, 40));
    }

    #[test]
    fn finish_reasons() {
        assert_eq!(finish_reason("tool_calls"), (StopReason::ToolUse, None));
        assert_eq!(
            finish_reason("content_filter"),
            (
                StopReason::Error,
                Some("Provider finish_reason: content_filter".into())
            )
        );
    }
}
