//! Gemini over Google's Generative Language API (`POST
//! {baseUrl}/models/{id}:streamGenerateContent?alt=sse`, key in `x-goog-api-key`), as pi-ai
//! 1.6.0's `google-generative-ai` api speaks it through `@google/genai` 2.32
//! (`api/google-generative-ai.js`, `api/google-shared.js`). The body is built in
//! `google_request`.
//!
//! Stream: each chunk's first candidate's parts become blocks: text parts with `thought:
//! true` are thinking, other text parts text (a change of kind closes the block), a
//! `functionCall` part is one whole tool call (start, one delta with its arguments as JSON,
//! end). `thoughtSignature`s are kept on the block they came with (the last non-empty one).
//! Calls without an id, or with one already used in the reply, get `<name>_<ms>_<n>`.
//! `finishReason` maps to the stop reason (`STOP` with tool calls is `toolUse`; safety and
//! other refusals are errors, `Provider stopped with: <reason>`); `usageMetadata` gives usage
//! (output includes thoughts; cached prompt tokens are cache reads). A stream without a
//! finish reason is an error. Errors keep the SDK's texts: an HTTP error is its JSON body, an
//! error chunk `got status: <status>. <chunk>`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use pith_events::clock::Clock;
use pith_events::js::{format_js_number, to_js_json};
use pith_events::{
    AssistantMessage, ContentBlock, StopReason, StreamKind, TextContent, ThinkingContent, ToolCall,
    Usage,
};

use super::google_request::request_body;
use super::http::{ErrorShape, Framing, HttpRequest, json_syntax_error, truthy};
use super::sse::SseEvent;
use super::{ApiKey, Call, Output, ProviderOptions, ReplyStream, failed_now, header_map, spawn};
use crate::model::Model;
use crate::provider::{Provider, ProviderEvent, ProviderRequest};

/// A Gemini (or Gemma) model behind the Generative Language API.
pub struct Gemini {
    model: Model,
    key: ApiKey,
    options: ProviderOptions,
    client: reqwest::Client,
    /// pi's module-wide `toolCallCounter`: makes generated call ids unique.
    calls: Arc<AtomicU64>,
}

impl std::fmt::Debug for Gemini {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The model's headers may carry credentials (models.json): name the model only.
        f.debug_struct("Gemini")
            .field("model", &self.model.qualified_id())
            .field("base_url", &self.model.base_url)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Gemini {
    /// A provider for `model` with `key`, sharing `client`.
    pub(crate) fn new(
        model: Model,
        key: ApiKey,
        options: ProviderOptions,
        client: reqwest::Client,
    ) -> Gemini {
        Gemini {
            model,
            key,
            options,
            client,
            calls: Arc::new(AtomicU64::new(0)),
        }
    }

    /// `{baseUrl}/models/{id}:streamGenerateContent?alt=sse`: the SDK drops one trailing
    /// slash of the base and adds `models/` unless the id names its collection.
    fn url(&self) -> String {
        let base = self
            .model
            .base_url
            .strip_suffix('/')
            .unwrap_or(&self.model.base_url);
        let id = &self.model.id;
        let path = if id.starts_with("models/") || id.starts_with("tunedModels/") {
            id.clone()
        } else {
            format!("models/{id}")
        };
        format!("{base}/{path}:streamGenerateContent?alt=sse")
    }

    /// The model's headers, then the options', then the key (names compared without case,
    /// later ones win, as pi's `providerHeadersToRecord` merges them).
    fn headers(&self) -> reqwest::header::HeaderMap {
        let mut headers: Vec<(&str, &str)> = vec![("content-type", "application/json")];
        headers.extend(
            self.model
                .headers
                .iter()
                .flatten()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        headers.extend(
            self.options
                .headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        headers.push(("x-goog-api-key", self.key.expose()));
        header_map(headers, &["x-goog-api-key"])
    }
}

impl Provider for Gemini {
    /// The provider's name (`Provider::name` means `google`, … — not the model's display
    /// name, which is what clippy guesses from the field names).
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

    /// Streams one reply of this provider's model (the request's `provider`/`model` names
    /// are not consulted: a provider is made for one model).
    fn stream(
        &self,
        request: ProviderRequest,
        abort: CancellationToken,
    ) -> mpsc::Receiver<ProviderEvent> {
        let msg = AssistantMessage::new(
            self.model.api.as_str(),
            self.model.provider.clone(),
            self.model.id.clone(),
            Vec::new(),
            self.options.clock.now_ms(),
        );
        let body = match request_body(&self.model, &request, &self.options) {
            Ok(b) => b,
            Err(e) => return failed_now(msg, e),
        };
        let call = Call::new(
            self.client.clone(),
            HttpRequest {
                url: self.url(),
                headers: self.headers(),
                body: to_js_json(&body).unwrap_or_default().into_bytes(),
            },
            &self.options,
            ErrorShape::Google,
        );
        let reply = GeminiStream {
            model: self.model.clone(),
            clock: self.options.clock.clone(),
            calls: self.calls.clone(),
            current: None,
            finish: None,
        };
        spawn(call, reply, msg, abort)
    }
}

/// The block parts are being added to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Current {
    Text(usize),
    Thinking(usize),
}

/// One reply's stream state.
struct GeminiStream {
    model: Model,
    clock: Arc<dyn Clock>,
    calls: Arc<AtomicU64>,
    current: Option<Current>,
    /// The finish reason seen, as given.
    finish: Option<String>,
}

/// JavaScript's `String(value)` for a part's `text` that is not a string.
fn js_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.as_f64().map(format_js_number).unwrap_or_default(),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                if i.is_null() {
                    String::new()
                } else {
                    js_string(i)
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

/// A count of `usageMetadata` (`|| 0`).
fn count(meta: &Value, key: &str) -> u64 {
    meta.get(key)
        .and_then(Value::as_f64)
        .filter(|f| *f > 0.0)
        .map_or(0, |f| f as u64)
}

/// pi's `mapStopReason` for a `finishReason`.
fn stop_reason(reason: &str) -> Result<StopReason, String> {
    match reason {
        "STOP" => Ok(StopReason::Stop),
        "MAX_TOKENS" | "CONTINUATION" => Ok(StopReason::Length),
        "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "SAFETY"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION"
        | "IMAGE_OTHER"
        | "RECITATION"
        | "FINISH_REASON_UNSPECIFIED"
        | "OTHER"
        | "LANGUAGE"
        | "MALFORMED_FUNCTION_CALL"
        | "UNEXPECTED_TOOL_CALL"
        | "TOO_MANY_TOOL_CALLS"
        | "NO_IMAGE" => Ok(StopReason::Error),
        other => Err(format!("Unhandled stop reason: {other}")),
    }
}

/// `@google/genai`'s `throwIfStreamErrorChunk`: a chunk `{"error": {...}}` whose `code` is an
/// HTTP error status ends the stream with `got status: <status>. <chunk as JSON>`.
fn error_chunk(chunk: &Value) -> Option<String> {
    let error = chunk.get("error").filter(|e| e.is_object())?;
    let code = error.get("code").and_then(Value::as_f64)?;
    if !(400.0..600.0).contains(&code) {
        return None;
    }
    let status = error
        .get("status")
        .map_or_else(|| "undefined".to_owned(), js_string);
    Some(format!(
        "got status: {status}. {}",
        to_js_json(chunk).unwrap_or_default()
    ))
}

impl GeminiStream {
    /// Closes the current block (`text_end`/`thinking_end`).
    fn close(&mut self, out: &mut Output) {
        match self.current.take() {
            Some(Current::Text(at)) => out.update(StreamKind::TextEnd, at, None),
            Some(Current::Thinking(at)) => out.update(StreamKind::ThinkingEnd, at, None),
            None => {}
        }
    }

    fn text_part(
        &mut self,
        text: String,
        thought: bool,
        signature: Option<&str>,
        out: &mut Output,
    ) {
        let at = match (self.current, thought) {
            (Some(Current::Thinking(at)), true) | (Some(Current::Text(at)), false) => at,
            _ => {
                self.close(out);
                let at = out.msg.content.len();
                if thought {
                    out.msg
                        .content
                        .push(ContentBlock::Thinking(ThinkingContent {
                            thinking: String::new(),
                            thinking_signature: None,
                            redacted: None,
                        }));
                    self.current = Some(Current::Thinking(at));
                    out.update(StreamKind::ThinkingStart, at, None);
                } else {
                    out.msg.content.push(ContentBlock::Text(TextContent {
                        text: String::new(),
                        text_signature: None,
                    }));
                    self.current = Some(Current::Text(at));
                    out.update(StreamKind::TextStart, at, None);
                }
                at
            }
        };
        let signature = signature.filter(|s| !s.is_empty()).map(str::to_owned);
        let kind = match &mut out.msg.content[at] {
            ContentBlock::Thinking(t) => {
                t.thinking.push_str(&text);
                if signature.is_some() {
                    t.thinking_signature = signature;
                }
                StreamKind::ThinkingDelta
            }
            ContentBlock::Text(t) => {
                t.text.push_str(&text);
                if signature.is_some() {
                    t.text_signature = signature;
                }
                StreamKind::TextDelta
            }
            _ => return,
        };
        out.update(kind, at, Some(text));
    }

    fn function_call(&mut self, call: &Value, part: &Value, out: &mut Output) {
        self.close(out);
        let provided = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let taken = provided.is_some_and(|id| {
            out.msg
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolCall(c) if c.id == id))
        });
        let name = call.get("name");
        let id = match provided {
            Some(id) if !taken => id.to_owned(),
            _ => format!(
                "{}_{}_{}",
                name.map_or_else(|| "undefined".to_owned(), js_string),
                self.clock.now_ms(),
                self.calls.fetch_add(1, Ordering::Relaxed) + 1
            ),
        };
        let arguments = match call.get("args") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(a) => a.clone(),
        };
        let delta = to_js_json(&arguments).unwrap_or_default();
        let thought_signature = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        let at = out.msg.content.len();
        out.msg.content.push(ContentBlock::ToolCall(ToolCall {
            id,
            name: name
                .filter(|n| truthy(n))
                .map(js_string)
                .unwrap_or_default(),
            arguments,
            thought_signature,
        }));
        out.update(StreamKind::ToolCallStart, at, None);
        out.update(StreamKind::ToolCallDelta, at, Some(delta));
        out.update(StreamKind::ToolCallEnd, at, None);
    }

    fn chunk(&mut self, chunk: &Value, out: &mut Output) -> Result<(), String> {
        if out.msg.response_id.is_none()
            && let Some(id) = chunk
                .get("responseId")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        {
            out.msg.response_id = Some(id.to_owned());
        }
        let candidate = chunk
            .get("candidates")
            .and_then(|c| c.get(0))
            .filter(|c| !c.is_null());
        let parts = candidate
            .and_then(|c| c.get("content"))
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            if let Some(text) = part.get("text") {
                let thought = part.get("thought") == Some(&Value::Bool(true));
                let signature = part.get("thoughtSignature").and_then(Value::as_str);
                self.text_part(js_string(text), thought, signature, out);
            }
            if let Some(call) = part.get("functionCall").filter(|c| truthy(c)) {
                self.function_call(call, part, out);
            }
        }
        if let Some(reason) = candidate
            .and_then(|c| c.get("finishReason"))
            .filter(|r| truthy(r))
        {
            let reason = js_string(reason);
            // pi ≥ 1.x keeps the provider's own reason.
            out.msg.raw_stop_reason = Some(reason.clone());
            let mut stop = stop_reason(&reason)?;
            let calls = out
                .msg
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolCall(_)));
            if calls && stop == StopReason::Stop {
                stop = StopReason::ToolUse;
            }
            out.msg.stop_reason = stop;
            self.finish = Some(reason);
        }
        if let Some(meta) = chunk.get("usageMetadata").filter(|m| truthy(m)) {
            let cached = count(meta, "cachedContentTokenCount");
            let thoughts = count(meta, "thoughtsTokenCount");
            let mut usage = Usage {
                input: count(meta, "promptTokenCount").saturating_sub(cached),
                output: count(meta, "candidatesTokenCount") + thoughts,
                cache_read: cached,
                cache_write: 0,
                reasoning: Some(thoughts),
                total_tokens: count(meta, "totalTokenCount"),
                ..Usage::default()
            };
            self.model.price(&mut usage);
            out.msg.usage = usage;
        }
        Ok(())
    }
}

impl ReplyStream for GeminiStream {
    const FRAMING: Framing = Framing::Gemini;

    fn event(&mut self, sse: SseEvent, out: &mut Output) -> Result<(), crate::Error> {
        let chunk: Value =
            serde_json::from_str(&sse.data).map_err(|e| json_syntax_error(&sse.data, &e))?;
        if let Some(error) = error_chunk(&chunk) {
            return Err(error.into());
        }
        if chunk.is_object() {
            self.chunk(&chunk, out)?;
        }
        Ok(())
    }

    fn end(&mut self, out: &mut Output) -> Result<(), crate::Error> {
        self.close(out);
        match (&self.finish, out.msg.stop_reason) {
            (None, _) => Err("Google stream ended without a finish reason".into()),
            (Some(reason), StopReason::Error | StopReason::Aborted) => Err(crate::Error::from(
                format!("Provider stopped with: {reason}"),
            )),
            _ => Ok(()),
        }
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
    use serde_json::json;

    #[test]
    fn error_chunks_need_an_http_code() {
        assert_eq!(
            error_chunk(&json!({"error": {"code": 503, "message": "busy", "status": "UNAVAILABLE"}})),
            Some(r#"got status: UNAVAILABLE. {"error":{"code":503,"message":"busy","status":"UNAVAILABLE"}}"#.to_owned())
        );
        assert_eq!(
            error_chunk(&json!({"error": {"code": 429}})),
            Some(r#"got status: undefined. {"error":{"code":429}}"#.to_owned())
        );
        assert_eq!(error_chunk(&json!({"error": {"code": 200}})), None);
        assert_eq!(error_chunk(&json!({"error": "text"})), None);
    }

    #[test]
    fn finish_reasons() {
        assert_eq!(stop_reason("STOP"), Ok(StopReason::Stop));
        assert_eq!(stop_reason("CONTINUATION"), Ok(StopReason::Length));
        assert_eq!(stop_reason("SAFETY"), Ok(StopReason::Error));
        assert_eq!(
            stop_reason("NEW_REASON"),
            Err("Unhandled stop reason: NEW_REASON".into())
        );
    }
}
