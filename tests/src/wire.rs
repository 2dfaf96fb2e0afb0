//! Streamed model replies as the Anthropic Messages, OpenAI Chat Completions, OpenAI Responses
//! and Gemini APIs send them, built from JSON events, for the local [`crate::sse_server`].

use serde_json::{Value, json};

/// `event: <type>` + `data: <json>` for each Anthropic event.
pub fn anthropic_sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

/// Anthropic `message_start` with a message id and usage.
pub fn message_start(id: &str, usage: Value) -> Value {
    json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "usage": usage}})
}

/// Anthropic `content_block_start` at `index`.
pub fn block_start(index: u64, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

/// Anthropic `content_block_delta` at `index`.
pub fn delta(index: u64, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

/// Anthropic text delta at `index`.
pub fn text_delta(index: u64, text: &str) -> Value {
    delta(index, json!({"type": "text_delta", "text": text}))
}

/// Anthropic `content_block_stop` at `index`.
pub fn block_stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

/// Anthropic `message_delta` with a stop reason and usage.
pub fn message_delta(stop: &str, usage: Value) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": usage})
}

/// Anthropic `message_stop`.
pub fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

/// `data: <json>` lines, `[DONE]` last.
pub fn openai_sse(chunks: &[Value]) -> String {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// One OpenAI `chat.completion.chunk` with one choice.
pub fn chunk(id: &str, delta: Value, finish: Value) -> Value {
    json!({"id": id, "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

/// A finished Anthropic reply whose text is `S`.
pub fn anthropic_reply() -> String {
    anthropic_sse(&[
        message_start("msg_s", json!({"input_tokens": 1})),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "S"),
        block_stop(0),
        message_delta("end_turn", json!({"output_tokens": 1})),
        message_stop(),
    ])
}

/// A finished OpenAI reply whose text is `S`.
pub fn openai_reply() -> String {
    openai_sse(&[chunk("chatcmpl-s", json!({"content": "S"}), json!("stop"))])
}

/// `data: <json>` chunks as Gemini's `streamGenerateContent?alt=sse` sends them (`\r\n\r\n`
/// after each).
pub fn gemini_sse(chunks: &[Value]) -> String {
    chunks
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n"))
        .collect()
}

/// One Gemini chunk: the first candidate's `parts`, with a `finishReason` and `usageMetadata`
/// when given.
pub fn gemini_chunk(parts: Value, finish: Option<&str>, usage: Option<Value>) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    let mut chunk = json!({"candidates": [candidate], "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-g1"});
    if let Some(u) = usage {
        chunk["usageMetadata"] = u;
    }
    chunk
}

/// Gemini `usageMetadata`.
pub fn gemini_usage(prompt: u64, candidates: u64, thoughts: u64, cached: u64) -> Value {
    json!({"promptTokenCount": prompt, "candidatesTokenCount": candidates,
        "thoughtsTokenCount": thoughts, "cachedContentTokenCount": cached,
        "totalTokenCount": prompt + candidates + thoughts})
}

/// A finished Gemini reply whose text is `S`.
pub fn gemini_reply() -> String {
    gemini_sse(&[gemini_chunk(
        json!([{"text": "S"}]),
        Some("STOP"),
        Some(gemini_usage(1, 1, 0, 0)),
    )])
}

/// `event: <type>` + `data: <json>` for each Responses API event.
pub fn responses_sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

/// A Responses API `response` object with `status`, `output` and `usage`.
pub fn response_object(id: &str, status: &str, output: Value, usage: Value) -> Value {
    json!({"id": id, "object": "response", "created_at": 1, "status": status,
        "model": "gpt-5", "output": output, "usage": usage})
}

/// Responses API usage.
pub fn responses_usage(input: u64, cached: u64, output: u64, reasoning: u64) -> Value {
    json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output, "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input + output})
}

/// `response.output_item.added` / `.done` of `item` at `index`.
pub fn output_item(done: bool, index: u64, item: Value) -> Value {
    let kind = if done { "done" } else { "added" };
    json!({"type": format!("response.output_item.{kind}"), "output_index": index, "item": item})
}

/// A Responses event of `kind` at output `index` with more members.
pub fn responses_event(kind: &str, index: u64, more: Value) -> Value {
    let mut e = json!({"type": kind, "output_index": index});
    if let (Some(e), Some(more)) = (e.as_object_mut(), more.as_object()) {
        e.extend(more.clone());
    }
    e
}

/// A finished Responses reply whose text is `S`.
pub fn responses_reply() -> String {
    let message = json!({"id": "msg_s", "type": "message", "status": "completed",
        "role": "assistant", "content": [{"type": "output_text", "text": "S", "annotations": []}]});
    responses_sse(&[
        json!({"type": "response.created", "response": response_object("resp_s", "in_progress", json!([]), Value::Null)}),
        output_item(
            false,
            0,
            json!({"id": "msg_s", "type": "message", "status": "in_progress", "role": "assistant", "content": []}),
        ),
        responses_event(
            "response.output_text.delta",
            0,
            json!({"item_id": "msg_s", "content_index": 0, "delta": "S"}),
        ),
        output_item(true, 0, message.clone()),
        json!({"type": "response.completed", "response": response_object("resp_s", "completed", json!([message]), responses_usage(1, 0, 1, 0))}),
    ])
}
