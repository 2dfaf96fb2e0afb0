//! The event stream of the OpenAI Responses API as pi-ai 1.6.0 reads it
//! (`processResponsesStream` in `api/openai-responses-shared.js`, the `openai` SDK's SSE
//! handling and pi's error texts in `api/openai-responses.js`); see [`super::responses`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value};

use pith_events::clock::Clock;
use pith_events::js::{js_trim, to_js_json};
use pith_events::{
    ContentBlock, StopReason, StreamKind, TextContent, ThinkingContent, ToolCall, Usage,
};

use super::http::{Failed, Framing, make_message, truthy};
use super::partial_json::{parse_json_with_repair, parse_streaming_json};
use super::responses_errors::{request_failure, with_hint};
use super::sse::SseEvent;
use super::{Output, ReplyStream};
use crate::model::Model;

/// What one output item became.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SlotKind {
    Thinking,
    Text,
    /// A tool call and the raw text of its arguments so far.
    ToolCall(String),
}

#[derive(Debug, Clone)]
struct Slot {
    kind: SlotKind,
    at: usize,
}

/// One reply's stream state (pi's `processResponsesStream`).
pub(crate) struct ResponsesStream {
    model: Model,
    clock: Arc<dyn Clock>,
    /// Open items by `output_index`.
    slots: HashMap<i64, Slot>,
    /// Tool calls (by position) whose item has not finished.
    unfinished: HashSet<usize>,
    /// Reasoning blocks (by position) by item id, for encrypted content that only the final
    /// response carries.
    reasoning_by_id: HashMap<String, usize>,
    /// A `response.completed`/`incomplete`/`failed` event came.
    terminal: bool,
    /// `[DONE]` came: the rest of the body is ignored.
    done: bool,
}

fn index_of(event: &Value) -> i64 {
    event
        .get("output_index")
        .and_then(Value::as_i64)
        .unwrap_or(-1)
}

/// JavaScript's `${value}` of a JSON member (`undefined` when absent).
fn js_text(v: Option<&Value>) -> String {
    match v {
        None => "undefined".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// pi's `parseToolCallArguments` of a finished call: the arguments object, `{}` when the text
/// is empty, not JSON, or not an object.
fn final_arguments(text: &str) -> Value {
    if js_trim(text).is_empty() {
        return Value::Object(Map::new());
    }
    match parse_json_with_repair(text) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::Object(Map::new()),
    }
}

/// Arguments while they stream: an object, or `{}` until one shows.
fn partial_arguments(text: &str) -> Value {
    match parse_streaming_json(text) {
        v @ Value::Object(_) => v,
        _ => Value::Object(Map::new()),
    }
}

/// pi's `getServiceTierCostMultiplier`.
fn tier_multiplier(model: &Model, tier: Option<&str>) -> f64 {
    match tier {
        Some("flex") => 0.5,
        Some("priority" | "fast") if model.id == "gpt-5.5" => 2.5,
        Some("priority" | "fast") => 2.0,
        _ => 1.0,
    }
}

impl ResponsesStream {
    /// The state of a new reply of `model`; `clock` stamps diagnostics.
    pub(crate) fn new(model: Model, clock: Arc<dyn Clock>) -> ResponsesStream {
        ResponsesStream {
            model,
            clock,
            slots: HashMap::new(),
            unfinished: HashSet::new(),
            reasoning_by_id: HashMap::new(),
            terminal: false,
            done: false,
        }
    }

    fn create_slot(&mut self, index: i64, item: &Value, out: &mut Output) -> Option<Slot> {
        let at = out.msg.content.len();
        let slot = match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => {
                out.msg
                    .content
                    .push(ContentBlock::Thinking(ThinkingContent {
                        thinking: String::new(),
                        thinking_signature: None,
                        redacted: None,
                    }));
                out.update(StreamKind::ThinkingStart, at, None);
                Slot {
                    kind: SlotKind::Thinking,
                    at,
                }
            }
            Some("message") => {
                out.msg.content.push(ContentBlock::Text(TextContent {
                    text: String::new(),
                    text_signature: None,
                }));
                out.update(StreamKind::TextStart, at, None);
                Slot {
                    kind: SlotKind::Text,
                    at,
                }
            }
            Some("function_call") => {
                let text = item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                out.msg.content.push(ContentBlock::ToolCall(ToolCall {
                    id: format!(
                        "{}|{}",
                        js_text(item.get("call_id")),
                        js_text(item.get("id"))
                    ),
                    name: item
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    arguments: partial_arguments(&text),
                    thought_signature: None,
                }));
                self.unfinished.insert(at);
                out.update(StreamKind::ToolCallStart, at, None);
                Slot {
                    kind: SlotKind::ToolCall(text),
                    at,
                }
            }
            _ => return None,
        };
        self.slots.insert(index, slot.clone());
        Some(slot)
    }

    /// The open slot at `index` when it is of the kind asked for.
    fn slot(&self, index: i64, kind: &str) -> Option<Slot> {
        let slot = self.slots.get(&index)?;
        let matches = matches!(
            (&slot.kind, kind),
            (SlotKind::Thinking, "thinking")
                | (SlotKind::Text, "text")
                | (SlotKind::ToolCall(_), "toolCall")
        );
        matches.then(|| slot.clone())
    }

    fn append_thinking(&mut self, index: i64, delta: &str, out: &mut Output) {
        let Some(slot) = self.slot(index, "thinking") else {
            return;
        };
        if let ContentBlock::Thinking(t) = &mut out.msg.content[slot.at] {
            t.thinking.push_str(delta);
        }
        out.update(StreamKind::ThinkingDelta, slot.at, Some(delta.to_owned()));
    }

    fn append_text(&mut self, index: i64, delta: &str, out: &mut Output) {
        let Some(slot) = self.slot(index, "text") else {
            return;
        };
        if let ContentBlock::Text(t) = &mut out.msg.content[slot.at] {
            t.text.push_str(delta);
        }
        out.update(StreamKind::TextDelta, slot.at, Some(delta.to_owned()));
    }

    /// Arguments text of the call at `index` becomes `text`; `delta` (when some) is sent.
    fn set_arguments(&mut self, index: i64, text: String, delta: Option<String>, out: &mut Output) {
        let Some(slot) = self.slots.get_mut(&index) else {
            return;
        };
        if let ContentBlock::ToolCall(c) = &mut out.msg.content[slot.at] {
            c.arguments = partial_arguments(&text);
        }
        slot.kind = SlotKind::ToolCall(text);
        let at = slot.at;
        if let Some(d) = delta {
            out.update(StreamKind::ToolCallDelta, at, Some(d));
        }
    }

    /// `ToolCallArgumentsStream.replace`: the complete text continues what came (the rest is
    /// a delta) or starts over (no delta).
    fn replace_arguments(&mut self, index: i64, full: &str, send: bool, out: &mut Output) {
        let Some(Slot {
            kind: SlotKind::ToolCall(so_far),
            ..
        }) = self.slot(index, "toolCall")
        else {
            return;
        };
        match full.strip_prefix(so_far.as_str()) {
            Some(rest) => {
                let delta = (send && !rest.is_empty()).then(|| rest.to_owned());
                self.set_arguments(index, full.to_owned(), delta, out);
            }
            None => self.set_arguments(index, full.to_owned(), None, out),
        }
    }

    fn item_done(&mut self, index: i64, item: &Value, out: &mut Output) {
        let slot = match self.slots.get(&index) {
            Some(s) => Some(s.clone()),
            None => self.create_slot(index, item, out),
        };
        let Some(slot) = slot else {
            return;
        };
        let kind = item.get("type").and_then(Value::as_str);
        match (kind, &slot.kind) {
            (Some("reasoning"), SlotKind::Thinking) => {
                let join = |key: &str, sep: &str| {
                    item.get(key)
                        .and_then(Value::as_array)
                        .map(|parts| {
                            parts
                                .iter()
                                .map(|p| p.get("text").and_then(Value::as_str).unwrap_or(""))
                                .collect::<Vec<_>>()
                                .join(sep)
                        })
                        .unwrap_or_default()
                };
                let summary = join("summary", "\n\n");
                let content = join("content", "\n\n");
                if let ContentBlock::Thinking(t) = &mut out.msg.content[slot.at] {
                    if !summary.is_empty() {
                        t.thinking = summary;
                    } else if !content.is_empty() {
                        t.thinking = content;
                    }
                    t.thinking_signature = to_js_json(item).ok();
                }
                if let Some(id) = item.get("id").and_then(Value::as_str) {
                    self.reasoning_by_id.insert(id.to_owned(), slot.at);
                }
                out.update(StreamKind::ThinkingEnd, slot.at, None);
                self.slots.remove(&index);
            }
            (Some("message"), SlotKind::Text) => {
                let text: String = item
                    .get("content")
                    .and_then(Value::as_array)
                    .map(|parts| {
                        parts
                            .iter()
                            .map(|c| {
                                let key = if c.get("type").and_then(Value::as_str)
                                    == Some("output_text")
                                {
                                    "text"
                                } else {
                                    "refusal"
                                };
                                c.get(key).and_then(Value::as_str).unwrap_or("")
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let mut signature = Map::new();
                signature.insert("v".into(), Value::from(1));
                if let Some(id) = item.get("id").filter(|v| !v.is_null()) {
                    signature.insert("id".into(), id.clone());
                }
                if let Some(phase) = item.get("phase").filter(|v| !v.is_null()) {
                    signature.insert("phase".into(), phase.clone());
                }
                if let ContentBlock::Text(t) = &mut out.msg.content[slot.at] {
                    t.text = text;
                    t.text_signature = to_js_json(&signature).ok();
                }
                out.update(StreamKind::TextEnd, slot.at, None);
                self.slots.remove(&index);
            }
            (Some("function_call"), SlotKind::ToolCall(_)) => {
                if let Some(args) = item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .filter(|a| !a.is_empty())
                {
                    self.replace_arguments(index, args, false, out);
                }
                let text = match self.slots.get(&index).map(|s| &s.kind) {
                    Some(SlotKind::ToolCall(t)) => t.clone(),
                    _ => String::new(),
                };
                if let ContentBlock::ToolCall(c) = &mut out.msg.content[slot.at] {
                    c.arguments = final_arguments(&text);
                }
                self.unfinished.remove(&slot.at);
                out.update(StreamKind::ToolCallEnd, slot.at, None);
                self.slots.remove(&index);
            }
            _ => {}
        }
    }

    /// pi's `finalizeResponse` for `response.completed` and `response.incomplete`.
    ///
    /// Errors: a status pi does not know.
    fn finalize(&mut self, response: &Value, out: &mut Output) -> Result<(), String> {
        self.terminal = true;
        for item in response
            .get("output")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let encrypted = item.get("encrypted_content").filter(|e| truthy(e));
            let (Some("reasoning"), Some(encrypted)) =
                (item.get("type").and_then(Value::as_str), encrypted)
            else {
                continue;
            };
            let Some(at) = item
                .get("id")
                .and_then(Value::as_str)
                .and_then(|id| self.reasoning_by_id.get(id))
            else {
                continue;
            };
            if let ContentBlock::Thinking(t) = &mut out.msg.content[*at]
                && let Some(sig) = &t.thinking_signature
                && let Ok(Value::Object(mut stored)) = serde_json::from_str::<Value>(sig)
                && !stored.get("encrypted_content").is_some_and(truthy)
            {
                stored.insert("encrypted_content".into(), encrypted.clone());
                t.thinking_signature = to_js_json(&stored).ok();
            }
        }
        self.reasoning_removals(response.get("input_transformations"), out);
        if let Some(id) = response
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            out.msg.response_id = Some(id.to_owned());
        }
        if let Some(usage) = response.get("usage").filter(|u| truthy(u)) {
            let n = |v: Option<&Value>| {
                v.and_then(Value::as_f64)
                    .filter(|f| *f > 0.0)
                    .unwrap_or(0.0)
            };
            let details = usage.get("input_tokens_details");
            let cached = n(details.and_then(|d| d.get("cached_tokens")));
            let written = n(details.and_then(|d| d.get("cache_write_tokens")));
            out.msg.usage = Usage {
                input: (n(usage.get("input_tokens")) - cached - written).max(0.0) as u64,
                output: n(usage.get("output_tokens")) as u64,
                cache_read: cached as u64,
                cache_write: written as u64,
                reasoning: Some(n(usage
                    .get("output_tokens_details")
                    .and_then(|d| d.get("reasoning_tokens")))
                    as u64),
                total_tokens: n(usage.get("total_tokens")) as u64,
                ..Usage::default()
            };
        }
        self.model.price(&mut out.msg.usage);
        let multiplier = tier_multiplier(
            &self.model,
            response.get("service_tier").and_then(Value::as_str),
        );
        if multiplier != 1.0 {
            let c = &mut out.msg.usage.cost;
            c.input *= multiplier;
            c.output *= multiplier;
            c.cache_read *= multiplier;
            c.cache_write *= multiplier;
            c.total = c.input + c.output + c.cache_read + c.cache_write;
        }
        let status = response.get("status").and_then(Value::as_str);
        let reason = response
            .get("incomplete_details")
            .and_then(|d| d.get("reason"))
            .and_then(Value::as_str);
        // pi ≥ 1.x: `${status}.${reason}` for an incomplete response, else the status (JS
        // writes a missing status as `undefined`).
        out.msg.raw_stop_reason = match (status, reason) {
            (s, Some(r)) => Some(format!("{}.{r}", s.unwrap_or("undefined"))),
            (Some(s), None) => Some(s.to_owned()),
            (None, None) => None,
        };
        let (stop, error) = match status {
            None | Some("completed" | "in_progress" | "queued") => (StopReason::Stop, None),
            Some("incomplete") if reason == Some("max_output_tokens") => (StopReason::Length, None),
            Some("incomplete") => (
                StopReason::Error,
                Some(match reason {
                    Some(r) => format!("Response incomplete: {r}"),
                    None => "Response incomplete without a provider reason".to_owned(),
                }),
            ),
            Some("failed" | "cancelled") => (StopReason::Error, None),
            Some(other) => return Err(format!("Unhandled stop reason: {other}")),
        };
        out.msg.stop_reason = stop;
        out.msg.error_message = error;
        let calls = out
            .msg
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolCall(_)));
        if calls && stop == StopReason::Stop {
            out.msg.stop_reason = StopReason::ToolUse;
        }
        Ok(())
    }

    /// pi's `appendReasoningRemovals`: reasoning the API withheld (except at turn
    /// boundaries) is recorded as a diagnostic.
    fn reasoning_removals(&self, transformations: Option<&Value>, out: &mut Output) {
        let Some(list) = transformations.and_then(Value::as_array) else {
            return;
        };
        let removals: Vec<Value> = list
            .iter()
            .filter(|t| {
                t.get("type").and_then(Value::as_str) == Some("reasoning")
                    && t.get("action").and_then(Value::as_str) == Some("removed")
                    && t.get("reason").and_then(Value::as_str) != Some("turn_boundary")
            })
            .map(|t| {
                let mut m = Map::new();
                for key in ["type", "id", "action", "reason"] {
                    if let Some(v) = t.get(key) {
                        m.insert(key.into(), v.clone());
                    }
                }
                Value::Object(m)
            })
            .collect();
        if removals.is_empty() {
            return;
        }
        let diagnostic = serde_json::json!({
            "type": "openai_input_transformations",
            "timestamp": self.clock.now_ms(),
            "details": {"transformations": removals},
        });
        match &mut out.msg.diagnostics {
            Some(Value::Array(list)) => list.push(diagnostic),
            other => *other = Some(Value::Array(vec![diagnostic])),
        }
    }

    fn response_event(&mut self, data: &Value, out: &mut Output) -> Result<(), String> {
        let kind = data.get("type").and_then(Value::as_str).unwrap_or("");
        let index = index_of(data);
        let delta = || data.get("delta").and_then(Value::as_str).unwrap_or("");
        match kind {
            "response.created" => {
                if let Some(id) = data
                    .get("response")
                    .and_then(|r| r.get("id"))
                    .and_then(Value::as_str)
                {
                    out.msg.response_id = Some(id.to_owned());
                }
            }
            "response.output_item.added" => {
                if let Some(item) = data.get("item") {
                    self.create_slot(index, item, out);
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.append_thinking(index, delta(), out);
            }
            "response.reasoning_summary_part.done" => self.append_thinking(index, "\n\n", out),
            "response.output_text.delta" | "response.refusal.delta" => {
                self.append_text(index, delta(), out);
            }
            "response.function_call_arguments.delta" => {
                if let Some(Slot {
                    kind: SlotKind::ToolCall(mut text),
                    ..
                }) = self.slot(index, "toolCall")
                {
                    let d = delta().to_owned();
                    text.push_str(&d);
                    self.set_arguments(index, text, Some(d), out);
                }
            }
            "response.function_call_arguments.done" => {
                let full = data.get("arguments").and_then(Value::as_str).unwrap_or("");
                self.replace_arguments(index, full, true, out);
            }
            "response.output_item.done" => {
                if let Some(item) = data.get("item") {
                    self.item_done(index, item, out);
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = data.get("response").cloned().unwrap_or(Value::Null);
                self.finalize(&response, out)?;
            }
            "error" => {
                return Err(format!(
                    "Error Code {}: {}",
                    js_text(data.get("code")),
                    js_text(data.get("message"))
                ));
            }
            "response.failed" => {
                self.terminal = true;
                let response = data.get("response");
                out.msg.raw_stop_reason = response
                    .and_then(|r| r.get("status"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let error = response.and_then(|r| r.get("error")).filter(|e| truthy(e));
                let reason = response
                    .and_then(|r| r.get("incomplete_details"))
                    .and_then(|d| d.get("reason"))
                    .filter(|r| truthy(r));
                let text_or = |v: Option<&Value>, default: &str| match v.filter(|v| truthy(v)) {
                    Some(v) => js_text(Some(v)),
                    None => default.to_owned(),
                };
                return Err(match (error, reason) {
                    (Some(e), _) => format!(
                        "{}: {}",
                        text_or(e.get("code"), "unknown"),
                        text_or(e.get("message"), "no message")
                    ),
                    (None, Some(r)) => format!("incomplete: {}", js_text(Some(r))),
                    (None, None) => "Unknown error (no error details in response)".to_owned(),
                });
            }
            _ => {}
        }
        Ok(())
    }
}

impl ReplyStream for ResponsesStream {
    const FRAMING: Framing = Framing::Sse {
        dispatch_trailing: false,
    };

    fn event(&mut self, sse: SseEvent, out: &mut Output) -> Result<(), crate::Error> {
        if self.done {
            return Ok(());
        }
        if sse.data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let data: Value = serde_json::from_str(&sse.data)
            .map_err(|_| "Error reading response: malformed server-sent event JSON.".to_owned())?;
        if sse
            .event
            .as_deref()
            .is_some_and(|e| e.starts_with("thread."))
        {
            return Ok(());
        }
        if sse.event.as_deref() == Some("error") {
            let error = data.get("error").filter(|e| !e.is_null()).unwrap_or(&data);
            return Err(with_hint(make_message(None, Some(error), None)).into());
        }
        if let Some(error) = data.get("error").filter(|e| truthy(e)) {
            return Err(with_hint(make_message(None, Some(error), None)).into());
        }
        self.response_event(&data, out)
            .map_err(|e| crate::Error::from(with_hint(e)))
    }

    fn end(&mut self, out: &mut Output) -> Result<(), crate::Error> {
        if !self.terminal {
            return Err("OpenAI Responses stream ended before a terminal response event".into());
        }
        if out.msg.stop_reason == StopReason::ToolUse
            && let Some(at) = self.unfinished.iter().min()
            && let Some(ContentBlock::ToolCall(c)) = out.msg.content.get(*at)
        {
            return Err(crate::Error::from(format!(
                "OpenAI Responses stream completed with an unfinished tool call: {} ({})",
                c.name, c.id
            )));
        }
        match out.msg.stop_reason {
            StopReason::Error | StopReason::Aborted => Err(with_hint(
                out.msg
                    .error_message
                    .clone()
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(|| "An unknown error occurred".into()),
            )
            .into()),
            _ => Ok(()),
        }
    }

    /// The SDK ends the stream quietly; before a terminal event pi then finds none, after one
    /// it reports the signal itself.
    fn aborted(&mut self, _out: &mut Output) -> &'static str {
        if self.terminal {
            super::ABORTED
        } else {
            "OpenAI Responses stream ended before a terminal response event"
        }
    }

    /// pi's `formatProviderError` with the `OpenAI API error` prefix ([`request_failure`]).
    fn request_failed(&self, failure: Failed) -> String {
        request_failure(&self.model, failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_tiers_change_the_price() {
        let model: Model = serde_json::from_value(serde_json::json!({
            "id": "gpt-5.5", "name": "x", "api": "openai-responses", "provider": "openai",
            "baseUrl": "https://api.openai.com/v1"
        }))
        .expect("model");
        assert_eq!(tier_multiplier(&model, Some("priority")), 2.5);
        assert_eq!(tier_multiplier(&model, Some("flex")), 0.5);
        assert_eq!(tier_multiplier(&model, Some("default")), 1.0);
        assert_eq!(tier_multiplier(&model, None), 1.0);
    }
}
