//! The Anthropic and OpenAI providers against a local server that streams scripted SSE bodies
//! 7 bytes at a time: whole final messages, update sequences, error texts and the recorded
//! requests.

use std::sync::Arc;
use std::time::Duration;

use pith_events::ToolSpec;
use pith_events::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, ThinkingContent, ToolCall,
    ToolResultMessage, Usage, UserContent, UserMessage,
};
use pith_llm::model::Model;
use pith_llm::overflow::is_context_overflow;
use pith_llm::provider::{Provider, ProviderEvent, ProviderRequest};
use pith_llm::providers::{self, ProviderOptions, provider_with};
use pith_llm::retry::is_retryable;
use pith_tests::models::{anthropic, anthropic_model, openai, openai_model, options};
use pith_tests::sse_server::{End, Scripted, SseServer};
use pith_tests::wire::*;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const T0: i64 = 1_764_000_000_000;

fn ask(text: &str) -> ProviderRequest {
    ProviderRequest {
        provider: "test".into(),
        model: "test".into(),
        thinking_level: pith_events::ThinkingLevel::Off,
        system_prompt: None,
        messages: vec![AgentMessage::user_text(text, 1)],
        tools: Vec::new(),
        max_tokens: None,
        session_id: None,
    }
}

async fn collect(mut rx: mpsc::Receiver<ProviderEvent>) -> (Vec<ProviderEvent>, AssistantMessage) {
    let mut events = Vec::new();
    while let Some(e) = tokio::time::timeout(Duration::from_secs(8), rx.recv())
        .await
        .expect("the provider answers in time")
    {
        events.push(e);
    }
    let last = match events.last() {
        Some(ProviderEvent::Done(m)) => m.clone(),
        other => panic!("the last event must be Done, got {other:?}"),
    };
    let dones = events
        .iter()
        .filter(|e| matches!(e, ProviderEvent::Done(_)))
        .count();
    assert_eq!(dones, 1, "exactly one Done");
    (events, last)
}

async fn run(
    provider: &Arc<dyn Provider>,
    request: ProviderRequest,
) -> (Vec<ProviderEvent>, AssistantMessage) {
    let abort = CancellationToken::new();
    collect(provider.stream(request, abort)).await
}

/// The event sequence as `start`, `text_delta 0 "…"`, `done`.
fn steps(events: &[ProviderEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            ProviderEvent::Start(_) => "start".to_owned(),
            ProviderEvent::Update { update, .. } => {
                let kind = serde_json::to_value(update.kind).unwrap();
                let kind = kind.as_str().unwrap();
                match &update.delta {
                    Some(d) => format!("{kind} {} {d:?}", update.content_index),
                    None => format!("{kind} {}", update.content_index),
                }
            }
            ProviderEvent::Done(_) => "done".to_owned(),
        })
        .collect()
}

/// The final message as JSON, without `durationMs`: every final reply is timed (pi-ai's event
/// stream), and the time is measured.
fn to_json(m: &AssistantMessage) -> Value {
    assert!(m.duration_ms.is_some(), "a final reply is timed: {m:?}");
    let mut v = serde_json::to_value(m).unwrap();
    v.as_object_mut().unwrap().shift_remove("durationMs");
    v
}

/// Usage with pi's `totalTokens` and `calculateCost` for `model`.
fn usage(model: &Model, input: u64, output: u64, cache_read: u64, cache_write: u64) -> Value {
    let mut u = Usage {
        input,
        output,
        cache_read,
        cache_write,
        total_tokens: input + output + cache_read + cache_write,
        ..Usage::default()
    };
    // pi 1.6.0: Chat Completions always counts reasoning tokens (0 without details),
    // Anthropic the one-hour cache writes.
    match model.api.as_str() {
        "openai-completions" => u.reasoning = Some(0),
        "anthropic-messages" => u.cache_write_1h = Some(0),
        _ => {}
    }
    model.price(&mut u);
    serde_json::to_value(u).unwrap()
}

/// The usage of a reply the server reported none for: pi-ai's initial zeros, without the
/// members its usage parsing adds (`reasoning`, `cacheWrite1h`, `totalFromProvider`).
fn no_usage() -> Value {
    serde_json::to_value(Usage::default()).unwrap()
}

/// A final reply as pi 1.6.0 writes it, with the provider's own stop reason for `stop`.
fn assistant_json(model: &Model, content: Value, usage: Value, stop: &str) -> Value {
    let raw = match (model.api.as_str(), stop) {
        ("anthropic-messages", "stop") => Some("end_turn"),
        ("anthropic-messages", "toolUse") => Some("tool_use"),
        ("anthropic-messages", "length") => Some("max_tokens"),
        ("openai-completions", "stop") => Some("stop"),
        ("openai-completions", "toolUse") => Some("tool_calls"),
        ("openai-completions", "length") => Some("length"),
        _ => None,
    };
    let mut v = json!({"content": content, "api": model.api.as_str(), "provider": model.provider,
        "model": model.id, "usage": usage, "stopReason": stop, "timestamp": T0});
    if let Some(raw) = raw {
        v["rawStopReason"] = json!(raw);
    }
    v
}

// --- Anthropic -------------------------------------------------------------------------------

#[tokio::test]
async fn anthropic_text_streams_split_anywhere() {
    let mut body = anthropic_sse(&[message_start(
        "msg_01",
        json!({"input_tokens": 12, "output_tokens": 1}),
    )]);
    body.push_str("event: ping\ndata: {\"type\": \"ping\"}\n\n");
    body.push_str(&anthropic_sse(&[
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Héllo "),
        text_delta(0, "wörld 🙂"),
        block_stop(0),
        message_delta("end_turn", json!({"output_tokens": 6})),
        message_stop(),
    ]));
    let server = SseServer::start(vec![Scripted::sse(body)]).await;
    let provider = anthropic(&server);
    assert_eq!(provider.name(), "anthropic");
    assert_eq!(provider.context_window("claude-sonnet-4-5"), Some(200_000));
    let (events, last) = run(&provider, ask("hi")).await;

    let model = anthropic_model(&server.base);
    let mut expected = assistant_json(
        &model,
        json!([{"type": "text", "text": "Héllo wörld 🙂"}]),
        usage(&model, 12, 6, 0, 0),
        "stop",
    );
    expected["responseId"] = json!("msg_01");
    assert_eq!(to_json(&last), expected);
    assert_eq!(
        steps(&events),
        [
            "start",
            "text_start 0",
            "text_delta 0 \"Héllo \"",
            "text_delta 0 \"wörld 🙂\"",
            "text_end 0",
            "done"
        ]
    );
    let ProviderEvent::Update { update, .. } = &events[2] else {
        panic!("update expected")
    };
    assert_eq!(update.delta.as_deref(), Some("Héllo "));

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.path, "/v1/messages");
    for (name, value) in [
        ("x-api-key", "sk-ant-test"),
        ("anthropic-version", "2023-06-01"),
        ("anthropic-beta", "interleaved-thinking-2025-05-14"),
        ("anthropic-dangerous-direct-browser-access", "true"),
        ("accept", "application/json"),
        ("content-type", "application/json"),
    ] {
        assert_eq!(
            r.headers.get(name).map(String::as_str),
            Some(value),
            "{name}"
        );
    }
    assert!(!r.headers.contains_key("authorization"));
    assert_eq!(
        r.body.to_string(),
        json!({"model": "claude-sonnet-4-5",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}],
            "max_tokens": 32000, "stream": true, "thinking": {"type": "disabled"}})
        .to_string()
    );
}

#[tokio::test]
async fn anthropic_thinking_with_signature_and_redacted_thinking() {
    let body = anthropic_sse(&[
        message_start("msg_02", json!({"input_tokens": 5, "output_tokens": 1})),
        block_start(
            0,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        ),
        delta(0, json!({"type": "thinking_delta", "thinking": "Let me "})),
        delta(0, json!({"type": "thinking_delta", "thinking": "think."})),
        delta(0, json!({"type": "signature_delta", "signature": "sig-"})),
        delta(0, json!({"type": "signature_delta", "signature": "abc"})),
        block_stop(0),
        block_start(1, json!({"type": "redacted_thinking", "data": "opaque"})),
        block_stop(1),
        block_start(2, json!({"type": "text", "text": ""})),
        text_delta(2, "Done."),
        block_stop(2),
        message_delta("end_turn", json!({"output_tokens": 30})),
        message_stop(),
    ]);
    let server = SseServer::start(vec![Scripted::sse(body)]).await;
    let (events, last) = run(&anthropic(&server), ask("think")).await;
    let model = anthropic_model(&server.base);
    let mut expected = assistant_json(
        &model,
        json!([
            {"type": "thinking", "thinking": "Let me think.", "thinkingSignature": "sig-abc"},
            {"type": "thinking", "thinking": "[Reasoning redacted]", "thinkingSignature": "opaque",
             "redacted": true},
            {"type": "text", "text": "Done."}
        ]),
        usage(&model, 5, 30, 0, 0),
        "stop",
    );
    expected["responseId"] = json!("msg_02");
    assert_eq!(to_json(&last), expected);
    assert_eq!(
        steps(&events),
        [
            "start",
            "thinking_start 0",
            "thinking_delta 0 \"Let me \"",
            "thinking_delta 0 \"think.\"",
            "thinking_end 0",
            "thinking_start 1",
            "thinking_end 1",
            "text_start 2",
            "text_delta 2 \"Done.\"",
            "text_end 2",
            "done"
        ]
    );
}

#[tokio::test]
async fn anthropic_tool_use_parses_partial_json_as_it_streams() {
    let pieces = ["", "{\"path\": \"sr", "c/ma", "in.rs\", \"limit\": 2", "0}"];
    let mut events = vec![
        message_start("msg_03", json!({"input_tokens": 50, "output_tokens": 1})),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Reading."),
        block_stop(0),
        block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_01", "name": "read", "input": {}}),
        ),
    ];
    events.extend(
        pieces
            .iter()
            .map(|p| delta(1, json!({"type": "input_json_delta", "partial_json": p}))),
    );
    events.extend([
        block_stop(1),
        message_delta("tool_use", json!({"output_tokens": 40})),
        message_stop(),
    ]);
    let server = SseServer::start(vec![Scripted::sse(anthropic_sse(&events))]).await;
    let (events, last) = run(&anthropic(&server), ask("read main")).await;
    let model = anthropic_model(&server.base);
    let mut expected = assistant_json(
        &model,
        json!([
            {"type": "text", "text": "Reading."},
            {"type": "toolCall", "id": "toolu_01", "name": "read",
             "arguments": {"path": "src/main.rs", "limit": 20}}
        ]),
        usage(&model, 50, 40, 0, 0),
        "toolUse",
    );
    expected["responseId"] = json!("msg_03");
    assert_eq!(to_json(&last), expected);

    // Updates carry only what changed (pi's wire form): the argument text in pieces, then
    // the whole call at its end.
    let (deltas, end) = tool_call_stream(&events, 1);
    assert_eq!(
        serde_json::from_str::<Value>(&deltas).unwrap(),
        json!({"path": "src/main.rs", "limit": 20})
    );
    assert_eq!(end, json!({"path": "src/main.rs", "limit": 20}));
    assert_eq!(
        steps(&events)[4..],
        [
            "toolcall_start 1",
            "toolcall_delta 1 \"\"",
            "toolcall_delta 1 \"{\\\"path\\\": \\\"sr\"",
            "toolcall_delta 1 \"c/ma\"",
            "toolcall_delta 1 \"in.rs\\\", \\\"limit\\\": 2\"",
            "toolcall_delta 1 \"0}\"",
            "toolcall_end 1",
            "done"
        ]
    );
}

#[tokio::test]
async fn anthropic_usage_counts_cache_tokens_and_cost() {
    let body = anthropic_sse(&[
        message_start(
            "msg_04",
            json!({"input_tokens": 100, "output_tokens": 1, "cache_read_input_tokens": 1000,
                   "cache_creation_input_tokens": 200}),
        ),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "ok"),
        block_stop(0),
        // Proxies may leave input out here; the counts of message_start stay.
        message_delta("max_tokens", json!({"output_tokens": 50})),
        message_stop(),
    ]);
    let server = SseServer::start(vec![Scripted::sse(body)]).await;
    let (events, last) = run(&anthropic(&server), ask("cache")).await;
    let model = anthropic_model(&server.base);
    let expected_usage = usage(&model, 100, 50, 1000, 200);
    assert_eq!(expected_usage["totalTokens"], 1350);
    assert_eq!(
        expected_usage["cost"]["cacheWrite"],
        json!(3.75 / 1e6 * 200.0)
    );
    assert_eq!(to_json(&last)["usage"], expected_usage);
    assert_eq!(last.stop_reason, StopReason::Length);
    // Input counts are known from message_start on, before any text.
    let ProviderEvent::Update { usage, .. } = &events[1] else {
        panic!("update expected")
    };
    assert_eq!(usage.input, 100);
    assert_eq!(usage.output, 1);
}

#[tokio::test]
async fn anthropic_ignores_unknown_events_and_blocks() {
    let mut body = anthropic_sse(&[message_start("msg_05", json!({"input_tokens": 1}))]);
    body.push_str("event: brand_new_event\ndata: {\"type\":\"brand_new_event\",\"x\":1}\n\n");
    body.push_str(": a comment\n\n");
    body.push_str(&anthropic_sse(&[
        block_start(
            0,
            json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search"}),
        ),
        delta(0, json!({"type": "input_json_delta", "partial_json": "{}"})),
        block_stop(0),
        block_start(1, json!({"type": "text", "text": ""})),
        delta(1, json!({"type": "citations_delta", "citation": {}})),
        text_delta(1, "fine"),
        block_stop(1),
        message_delta("end_turn", json!({"output_tokens": 2})),
        message_stop(),
    ]));
    let server = SseServer::start(vec![Scripted::sse(body)]).await;
    let (events, last) = run(&anthropic(&server), ask("x")).await;
    assert_eq!(
        steps(&events),
        [
            "start",
            "text_start 0",
            "text_delta 0 \"fine\"",
            "text_end 0",
            "done"
        ]
    );
    assert_eq!(last.stop_reason, StopReason::Stop);
    assert_eq!(last.texts().collect::<String>(), "fine");
}

#[tokio::test]
async fn anthropic_rate_limit_is_the_sdk_error_text() {
    let error = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#;
    let server = SseServer::start(vec![Scripted::status(429, error)]).await;
    let (events, last) = run(&anthropic(&server), ask("x")).await;
    let model = anthropic_model(&server.base);
    let mut expected = assistant_json(&model, json!([]), no_usage(), "error");
    expected["errorMessage"] = json!(format!("429 {error}"));
    assert_eq!(to_json(&last), expected);
    assert!(is_retryable(&last, 200_000));
    // No response, no start: only the final message.
    assert_eq!(steps(&events), ["done"]);
}

#[tokio::test]
async fn anthropic_overloaded_as_529_and_in_stream() {
    let error = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let mut in_stream = anthropic_sse(&[
        message_start("msg_06", json!({"input_tokens": 9, "output_tokens": 1})),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Partial"),
    ]);
    in_stream.push_str(&format!("event: error\ndata: {error}\n\n"));
    let server =
        SseServer::start(vec![Scripted::status(529, error), Scripted::sse(in_stream)]).await;
    let provider = anthropic(&server);

    let (_, first) = run(&provider, ask("x")).await;
    assert_eq!(first.stop_reason, StopReason::Error);
    assert_eq!(
        first.error_message.as_deref(),
        Some(format!("529 {error}").as_str())
    );
    assert!(is_retryable(&first, 200_000));

    let (events, second) = run(&provider, ask("x")).await;
    let model = anthropic_model(&server.base);
    let mut expected = assistant_json(
        &model,
        json!([{"type": "text", "text": "Partial"}]),
        usage(&model, 9, 1, 0, 0),
        "error",
    );
    expected["responseId"] = json!("msg_06");
    expected["errorMessage"] = json!(error);
    assert_eq!(to_json(&second), expected);
    assert!(is_retryable(&second, 200_000));
    assert_eq!(
        steps(&events),
        ["start", "text_start 0", "text_delta 0 \"Partial\"", "done"]
    );
}

#[tokio::test]
async fn anthropic_refusal_is_an_error() {
    let body = anthropic_sse(&[
        message_start("msg_07", json!({"input_tokens": 3})),
        message_delta("refusal", json!({"output_tokens": 0})),
        message_stop(),
    ]);
    let server = SseServer::start(vec![Scripted::sse(body)]).await;
    let (_, last) = run(&anthropic(&server), ask("x")).await;
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(
        last.error_message.as_deref(),
        Some("An unknown error occurred")
    );
}

// --- OpenAI ----------------------------------------------------------------------------------

#[tokio::test]
async fn openai_text_with_crlf_comments_and_usage() {
    let chunks = [
        chunk(
            "chatcmpl-1",
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        ),
        chunk("chatcmpl-1", json!({"content": "Héllo"}), Value::Null),
        chunk("chatcmpl-1", json!({"content": " 🙂"}), Value::Null),
        chunk("chatcmpl-1", json!({}), json!("stop")),
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4o-mini-2024-07-18",
               "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23}}),
    ];
    let body = format!(": keep-alive\n\n{}", openai_sse(&chunks)).replace('\n', "\r\n");
    let server = SseServer::start(vec![Scripted::sse(body)]).await;
    let provider = openai(&server);
    let mut request = ask("hi");
    request.system_prompt = Some("Be brief.".into());
    let (events, last) = run(&provider, request).await;
    let model = openai_model(&server.base);
    let mut expected = assistant_json(
        &model,
        json!([{"type": "text", "text": "Héllo 🙂"}]),
        usage(&model, 20, 3, 0, 0),
        "stop",
    );
    expected["responseModel"] = json!("gpt-4o-mini-2024-07-18");
    expected["responseId"] = json!("chatcmpl-1");
    assert_eq!(to_json(&last), expected);
    assert_eq!(
        steps(&events),
        [
            "start",
            "text_start 0",
            "text_delta 0 \"Héllo\"",
            "text_delta 0 \" 🙂\"",
            "text_end 0",
            "done"
        ]
    );
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(
        r.headers.get("authorization").map(String::as_str),
        Some("Bearer sk-openai-test")
    );
    assert_eq!(
        r.body.to_string(),
        json!({"model": "gpt-4o-mini",
            "messages": [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "stream": true, "stream_options": {"include_usage": true}, "store": false,
            "max_completion_tokens": 16384})
        .to_string()
    );
}

#[tokio::test]
async fn openai_two_tool_calls_interleaved_by_index() {
    let call = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut function = json!({"arguments": args});
        if let Some(n) = name {
            function["name"] = json!(n);
        }
        let mut c = json!({"index": index, "function": function});
        if let Some(id) = id {
            c["id"] = json!(id);
            c["type"] = json!("function");
        }
        c
    };
    let chunks = [
        chunk(
            "chatcmpl-2",
            json!({"role": "assistant", "content": null,
            "tool_calls": [call(0, Some("call_a"), Some("read"), "")]}),
            Value::Null,
        ),
        chunk(
            "chatcmpl-2",
            json!({"tool_calls": [call(1, Some("call_b"), Some("bash"), "")]}),
            Value::Null,
        ),
        chunk(
            "chatcmpl-2",
            json!({"tool_calls": [call(0, None, None, "{\"path\":")]}),
            Value::Null,
        ),
        chunk(
            "chatcmpl-2",
            json!({"tool_calls": [call(1, None, None, "{\"command\":\"ls\"}")]}),
            Value::Null,
        ),
        chunk(
            "chatcmpl-2",
            json!({"tool_calls": [call(0, None, None, "\"a.txt\"}")]}),
            Value::Null,
        ),
        chunk("chatcmpl-2", json!({}), json!("tool_calls")),
    ];
    let server = SseServer::start(vec![Scripted::sse(openai_sse(&chunks))]).await;
    let (events, last) = run(&openai(&server), ask("go")).await;
    let model = openai_model(&server.base);
    let mut expected = assistant_json(
        &model,
        json!([
            {"type": "toolCall", "id": "call_a", "name": "read", "arguments": {"path": "a.txt"}},
            {"type": "toolCall", "id": "call_b", "name": "bash", "arguments": {"command": "ls"}}
        ]),
        no_usage(),
        "toolUse",
    );
    expected["responseId"] = json!("chatcmpl-2");
    assert_eq!(to_json(&last), expected);
    assert_eq!(
        steps(&events),
        [
            "start",
            "toolcall_start 0",
            "toolcall_delta 0 \"\"",
            "toolcall_start 1",
            "toolcall_delta 1 \"\"",
            "toolcall_delta 0 \"{\\\"path\\\":\"",
            "toolcall_delta 1 \"{\\\"command\\\":\\\"ls\\\"}\"",
            "toolcall_delta 0 \"\\\"a.txt\\\"}\"",
            "toolcall_end 0",
            "toolcall_end 1",
            "done"
        ]
    );
}

#[tokio::test]
async fn openai_usage_with_cached_tokens() {
    let chunks = [
        chunk("chatcmpl-3", json!({"content": "ok"}), json!("length")),
        json!({"id": "chatcmpl-3", "model": "gpt-4o-mini", "choices": [],
               "usage": {"prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280,
                         "prompt_tokens_details": {"cached_tokens": 1000},
                         "completion_tokens_details": {"reasoning_tokens": 30}}}),
    ];
    let server = SseServer::start(vec![Scripted::sse(openai_sse(&chunks))]).await;
    let (_, last) = run(&openai(&server), ask("x")).await;
    let model = openai_model(&server.base);
    let mut expected = usage(&model, 200, 80, 1000, 0);
    assert_eq!(expected["totalTokens"], 1280);
    // pi 1.6.0: `completion_tokens_details.reasoning_tokens`, counted within the output.
    expected["reasoning"] = json!(30);
    assert_eq!(to_json(&last)["usage"], expected);
    assert_eq!(last.stop_reason, StopReason::Length);
}

#[tokio::test]
async fn openai_reasoning_content_becomes_thinking() {
    let chunks = [
        chunk(
            "chatcmpl-4",
            json!({"reasoning_content": "Think"}),
            Value::Null,
        ),
        chunk(
            "chatcmpl-4",
            json!({"reasoning_content": "ing.", "reasoning": "ignored duplicate"}),
            Value::Null,
        ),
        chunk(
            "chatcmpl-4",
            json!({"content": "Answer", "reasoning_content": null}),
            Value::Null,
        ),
        chunk("chatcmpl-4", json!({}), json!("stop")),
    ];
    let server = SseServer::start(vec![Scripted::sse(openai_sse(&chunks))]).await;
    let (events, last) = run(&openai(&server), ask("x")).await;
    assert_eq!(
        to_json(&last)["content"],
        json!([
            {"type": "thinking", "thinking": "Thinking.", "thinkingSignature": "reasoning_content"},
            {"type": "text", "text": "Answer"}
        ])
    );
    assert_eq!(
        steps(&events),
        [
            "start",
            "thinking_start 0",
            "thinking_delta 0 \"Think\"",
            "thinking_delta 0 \"ing.\"",
            "text_start 1",
            "text_delta 1 \"Answer\"",
            "thinking_end 0",
            "text_end 1",
            "done"
        ]
    );
}

#[tokio::test]
async fn openai_server_error_and_content_filter() {
    let error = r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#;
    let filtered = openai_sse(&[
        chunk("chatcmpl-5", json!({"content": "Some"}), Value::Null),
        chunk("chatcmpl-5", json!({}), json!("content_filter")),
    ]);
    let server =
        SseServer::start(vec![Scripted::status(500, error), Scripted::sse(filtered)]).await;
    let provider = openai(&server);
    let (events, last) = run(&provider, ask("x")).await;
    assert_eq!(steps(&events), ["done"]);
    assert_eq!(last.stop_reason, StopReason::Error);
    // pi-ai 1.6.0's formatProviderError: the status, then the body's error object as JSON.
    assert_eq!(
        last.error_message.as_deref(),
        Some(
            r#"500: {"message":"The server had an error while processing your request.","type":"server_error"}"#
        )
    );
    assert!(is_retryable(&last, 128_000));

    let (_, last) = run(&provider, ask("x")).await;
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Provider finish_reason: content_filter")
    );
    assert_eq!(last.texts().collect::<String>(), "Some");
}

#[tokio::test]
async fn openai_in_stream_error_object() {
    let body = "data: {\"error\":{\"message\":\"Rate limit exceeded: free-models-per-day\",\"code\":429,\"metadata\":{\"raw\":\"upstream says no\"}}}\n\n";
    let server = SseServer::start(vec![Scripted::sse(body)]).await;
    let (_, last) = run(&openai(&server), ask("x")).await;
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Rate limit exceeded: free-models-per-day\nupstream says no")
    );
}

// --- Both ------------------------------------------------------------------------------------

#[tokio::test]
async fn overflow_errors_are_recognised() {
    let anthropic_error = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}}"#;
    let openai_error = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let server = SseServer::start(vec![
        Scripted::status(400, anthropic_error),
        Scripted::status(400, openai_error),
    ])
    .await;
    let (_, a) = run(&anthropic(&server), ask("x")).await;
    assert_eq!(
        a.error_message.as_deref(),
        Some(format!("400 {anthropic_error}").as_str())
    );
    assert!(is_context_overflow(&a, 200_000));
    assert!(!is_retryable(&a, 200_000));
    let (_, o) = run(&openai(&server), ask("x")).await;
    assert_eq!(
        o.error_message.as_deref().unwrap(),
        format!(
            "400: {}",
            &openai_error["{\"error\":".len()..openai_error.len() - 1]
        )
    );
    assert!(is_context_overflow(&o, 128_000));
    assert!(!is_retryable(&o, 128_000));
}

#[tokio::test]
async fn a_cut_stream_keeps_the_partial_reply() {
    let anthropic_body = anthropic_sse(&[
        message_start("msg_08", json!({"input_tokens": 4})),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Hal"),
    ]);
    let openai_body: String = [chunk("chatcmpl-6", json!({"content": "Hal"}), Value::Null)]
        .iter()
        .map(|c| format!("data: {c}\n\n"))
        .collect();
    let clean_end = anthropic_sse(&[
        message_start("msg_09", json!({"input_tokens": 4})),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Hal"),
    ]);
    let server = SseServer::start(vec![
        Scripted::sse(anthropic_body).ending(End::Cut),
        Scripted::sse(openai_body).ending(End::Cut),
        Scripted::sse(clean_end),
    ])
    .await;
    let (events, a) = run(&anthropic(&server), ask("x")).await;
    assert_eq!(
        steps(&events),
        ["start", "text_start 0", "text_delta 0 \"Hal\"", "done"]
    );
    let model = anthropic_model(&server.base);
    let mut expected = assistant_json(
        &model,
        json!([{"type": "text", "text": "Hal"}]),
        usage(&model, 4, 0, 0, 0),
        "error",
    );
    expected["responseId"] = json!("msg_08");
    expected["errorMessage"] = json!("terminated: other side closed (UND_ERR_SOCKET)");
    assert_eq!(to_json(&a), expected);
    assert!(is_retryable(&a, 200_000));

    let (_, o) = run(&openai(&server), ask("x")).await;
    assert_eq!(o.stop_reason, StopReason::Error);
    assert_eq!(
        o.error_message.as_deref(),
        Some("terminated: other side closed (UND_ERR_SOCKET)")
    );
    assert_eq!(o.texts().collect::<String>(), "Hal");

    let (_, clean) = run(&anthropic(&server), ask("x")).await;
    assert_eq!(clean.stop_reason, StopReason::Error);
    assert_eq!(
        clean.error_message.as_deref(),
        Some("Anthropic stream ended before message_stop")
    );
}

#[tokio::test]
async fn malformed_event_data_is_an_error_not_a_panic() {
    let mut anthropic_body = anthropic_sse(&[message_start("msg_10", json!({"input_tokens": 1}))]);
    anthropic_body
        .push_str("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",oops}\n\n");
    let openai_body = "data: {\"id\":\"c\",\"choices\":[]}\n\ndata: {not json}\n\n";
    let server = SseServer::start(vec![
        Scripted::sse(anthropic_body),
        Scripted::sse(openai_body),
    ])
    .await;
    let (_, a) = run(&anthropic(&server), ask("x")).await;
    assert_eq!(a.stop_reason, StopReason::Error);
    let text = a.error_message.unwrap();
    assert!(
        text.starts_with(
            "Could not parse Anthropic SSE event content_block_delta: key must be a string"
        ),
        "{text}"
    );
    assert!(
        text.ends_with(
            "; data={\"type\":\"content_block_delta\",oops}; raw=event: content_block_delta\\ndata: {\"type\":\"content_block_delta\",oops}"
        ),
        "{text}"
    );
    let (_, o) = run(&openai(&server), ask("x")).await;
    assert_eq!(o.stop_reason, StopReason::Error);
    let text = o.error_message.unwrap();
    assert!(
        text.starts_with("Could not parse SSE data as JSON: "),
        "{text}"
    );
    assert!(text.ends_with("; data={not json}"), "{text}");
}

/// Streams until the first text delta, then aborts.
async fn abort_after_first_delta(
    provider: &Arc<dyn Provider>,
) -> (Vec<ProviderEvent>, AssistantMessage) {
    let abort = CancellationToken::new();
    let abort_tx = abort.clone();
    let mut rx = provider.stream(ask("x"), abort);
    let mut events = Vec::new();
    while let Some(e) = tokio::time::timeout(Duration::from_secs(8), rx.recv())
        .await
        .unwrap()
    {
        let is_delta = matches!(&e, ProviderEvent::Update { update, .. } if update.delta.is_some());
        events.push(e);
        if is_delta {
            abort_tx.cancel();
        }
    }
    let ProviderEvent::Done(last) = events.last().unwrap().clone() else {
        panic!("Done expected last")
    };
    (events, last)
}

#[tokio::test]
async fn abort_mid_stream_keeps_the_partial_reply() {
    let anthropic_body = anthropic_sse(&[
        message_start("msg_11", json!({"input_tokens": 7})),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Hel"),
    ]);
    let openai_body = format!(
        "data: {}\n\n",
        chunk("chatcmpl-7", json!({"content": "Hel"}), Value::Null)
    );
    let server = SseServer::start(vec![
        Scripted::sse(anthropic_body).ending(End::Hang),
        Scripted::sse(openai_body).ending(End::Hang),
    ])
    .await;
    let (events, a) = abort_after_first_delta(&anthropic(&server)).await;
    assert_eq!(
        steps(&events),
        ["start", "text_start 0", "text_delta 0 \"Hel\"", "done"]
    );
    let model = anthropic_model(&server.base);
    let mut expected = assistant_json(
        &model,
        json!([{"type": "text", "text": "Hel"}]),
        usage(&model, 7, 0, 0, 0),
        "aborted",
    );
    expected["responseId"] = json!("msg_11");
    // What Node's fetch says when the pending read is aborted; pi passes it on.
    expected["errorMessage"] = json!("This operation was aborted");
    assert_eq!(to_json(&a), expected);

    // The OpenAI SDK ends quietly on abort, so pi closes the blocks first.
    let (events, o) = abort_after_first_delta(&openai(&server)).await;
    assert_eq!(
        steps(&events),
        [
            "start",
            "text_start 0",
            "text_delta 0 \"Hel\"",
            "text_end 0",
            "done"
        ]
    );
    assert_eq!(o.stop_reason, StopReason::Aborted);
    assert_eq!(o.error_message.as_deref(), Some("Request was aborted"));
    assert_eq!(o.texts().collect::<String>(), "Hel");
}

#[tokio::test]
async fn abort_before_the_response() {
    let server = SseServer::start(vec![]).await;
    let abort = CancellationToken::new();
    let abort_tx = abort.clone();
    abort_tx.cancel();
    let (events, last) = collect(anthropic(&server).stream(ask("x"), abort)).await;
    assert_eq!(steps(&events), ["done"]);
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(last.error_message.as_deref(), Some("Request aborted"));
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn connection_refused() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let base = format!("http://127.0.0.1:{port}");
    for provider in [
        provider_with(
            anthropic_model(&base),
            Some("sk-ant-test".into()),
            options(),
        )
        .unwrap(),
        provider_with(openai_model(&base), None, options()).unwrap(),
    ] {
        let (events, last) = run(&provider, ask("x")).await;
        assert_eq!(steps(&events), ["done"]);
        assert_eq!(last.stop_reason, StopReason::Error);
        // pi-ai 1.6.0 appends the deepest cause (withCauseDetail), as Node names it.
        assert_eq!(
            last.error_message.as_deref(),
            Some(format!("Connection error.: connect ECONNREFUSED 127.0.0.1:{port}").as_str())
        );
        assert!(is_retryable(&last, 0));
        assert!(last.content.is_empty());
    }
}

#[tokio::test]
async fn the_sdk_retry_policy_runs_inside_the_provider() {
    let error = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let ok = anthropic_sse(&[
        message_start("msg_12", json!({"input_tokens": 1})),
        message_delta("end_turn", json!({"output_tokens": 1})),
        message_stop(),
    ]);
    let server = SseServer::start(vec![
        Scripted::status(529, error).header("retry-after-ms", "1"),
        Scripted::status(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#,
        ),
        Scripted::status(503, "").header("retry-after-ms", "1"),
        Scripted::sse(ok),
    ])
    .await;
    let provider = provider_with(
        anthropic_model(&server.base),
        Some("sk-ant-test".into()),
        ProviderOptions {
            max_retries: 2,
            ..options()
        },
    )
    .unwrap();
    // 529 is retried, 400 is not.
    let (_, first) = run(&provider, ask("x")).await;
    assert_eq!(
        first.error_message.as_deref(),
        Some(r#"400 {"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#)
    );
    assert_eq!(server.requests().len(), 2);
    let (_, second) = run(&provider, ask("x")).await;
    assert_eq!(second.stop_reason, StopReason::Stop);
    assert_eq!(second.response_id.as_deref(), Some("msg_12"));
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn no_key_means_no_authorization_header() {
    let body = openai_sse(&[chunk(
        "chatcmpl-8",
        json!({"content": "local"}),
        json!("stop"),
    )]);
    let server = SseServer::start(vec![Scripted::sse(body.clone()), Scripted::sse(body)]).await;
    for key in [None, Some(String::new())] {
        let provider = provider_with(openai_model(&server.base), key, options()).unwrap();
        let (_, last) = run(&provider, ask("x")).await;
        assert_eq!(last.texts().collect::<String>(), "local");
    }
    for r in server.requests() {
        assert!(!r.headers.contains_key("authorization"), "{:?}", r.headers);
    }
}

#[test]
fn provider_for_rejects_what_it_cannot_speak() {
    let mut faux = openai_model("http://x");
    faux.api = pith_llm::model::Api::Faux;
    let err = providers::provider_for(faux, None).err().unwrap();
    assert!(
        matches!(err, providers::Error::UnsupportedApi { .. }),
        "{err}"
    );
    let err = providers::provider_for(anthropic_model("http://x"), None)
        .err()
        .unwrap();
    assert_eq!(err.to_string(), "No API key for provider: anthropic");
}

// --- Request bodies --------------------------------------------------------------------------

/// user → assistant (thinking, text, two calls) → two results → user, with a system prompt
/// and one tool.
fn conversation(level: &str) -> ProviderRequest {
    let assistant = {
        let mut a = AssistantMessage::new(
            "anthropic-messages",
            "anthropic",
            "claude-sonnet-4-5",
            vec![
                ContentBlock::Thinking(ThinkingContent {
                    thinking: "plan".into(),
                    thinking_signature: Some("sig1".into()),
                    redacted: None,
                }),
                ContentBlock::text("Reading."),
                ContentBlock::ToolCall(ToolCall {
                    id: "toolu_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                    thought_signature: None,
                }),
                ContentBlock::ToolCall(ToolCall {
                    id: "toolu_2".into(),
                    name: "read".into(),
                    arguments: json!({"path": "b"}),
                    thought_signature: None,
                }),
            ],
            2,
        );
        a.stop_reason = StopReason::ToolUse;
        a
    };
    let result = |id: &str, texts: &[&str], is_error: bool| {
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: texts.iter().map(|t| ContentBlock::text(*t)).collect(),
            details: None,
            is_error,
            duration_ms: None,
            timestamp: 3,
        })
    };
    ProviderRequest {
        provider: "test".into(),
        model: "test".into(),
        thinking_level: level.parse().unwrap(),
        system_prompt: Some("You are pith.".into()),
        messages: vec![
            AgentMessage::user_text("read a and b", 1),
            AgentMessage::Assistant(assistant),
            result("toolu_1", &["A"], false),
            result("toolu_2", &["B1", "B2"], true),
            AgentMessage::User(UserMessage {
                content: UserContent::Text("thanks".into()),
                timestamp: 4,
            }),
        ],
        tools: vec![ToolSpec {
            prefers_strict_schema: false,
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
                "required": ["path"]}),
        }],
        max_tokens: None,
        session_id: None,
    }
}

fn done_body() -> String {
    anthropic_sse(&[
        message_start("msg_13", json!({"input_tokens": 1})),
        message_delta("end_turn", json!({"output_tokens": 1})),
        message_stop(),
    ])
}

#[tokio::test]
async fn anthropic_request_body_shape() {
    let server = SseServer::start(vec![Scripted::sse(done_body())]).await;
    run(&anthropic(&server), conversation("medium")).await;
    let r = &server.requests()[0];
    let cache = json!({"type": "ephemeral"});
    let expected = json!({
        "model": "claude-sonnet-4-5",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "read a and b"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "plan", "signature": "sig1"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "b"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "A", "is_error": false},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "B1\nB2", "is_error": true}
            ]},
            {"role": "user", "content": [{"type": "text", "text": "thanks", "cache_control": cache}]}
        ],
        "max_tokens": 32000 + 8192,
        "stream": true,
        "system": [{"type": "text", "text": "You are pith.", "cache_control": cache}],
        "tools": [{"name": "read", "description": "Read a file", "eager_input_streaming": true,
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}},
                "required": ["path"]},
            "cache_control": cache}],
        "thinking": {"type": "enabled", "budget_tokens": 8192, "display": "summarized"}
    });
    assert_eq!(r.body.to_string(), expected.to_string());
}

#[tokio::test]
async fn openai_request_body_shape() {
    let body = openai_sse(&[chunk("chatcmpl-9", json!({"content": "ok"}), json!("stop"))]);
    let server = SseServer::start(vec![Scripted::sse(body)]).await;
    let mut model = openai_model(&server.base);
    model.id = "gpt-5-mini".into();
    model.reasoning = true;
    model.max_tokens = 128_000;
    let provider = provider_with(model, Some("k".into()), options()).unwrap();
    run(&provider, conversation("medium")).await;
    let r = &server.requests()[0];
    // The assistant came from another model: its thinking is dropped (pi-ai 1.6.0). pi 1.6.0
    // assumes no strict tool schemas of any server (`supportsStrictMode: false`).
    let expected = json!({
        "model": "gpt-5-mini",
        "messages": [
            {"role": "developer", "content": "You are pith."},
            {"role": "user", "content": [{"type": "text", "text": "read a and b"}]},
            {"role": "assistant", "content": "Reading.", "tool_calls": [
                {"id": "toolu_1", "type": "function",
                 "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}},
                {"id": "toolu_2", "type": "function",
                 "function": {"name": "read", "arguments": "{\"path\":\"b\"}"}}
            ]},
            {"role": "tool", "content": "A", "tool_call_id": "toolu_1"},
            {"role": "tool", "content": "B1\nB2", "tool_call_id": "toolu_2"},
            {"role": "user", "content": "thanks"}
        ],
        "stream": true,
        "stream_options": {"include_usage": true},
        "store": false,
        "max_completion_tokens": 32000,
        "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                "required": ["path"]}}}],
        "reasoning_effort": "medium"
    });
    assert_eq!(r.body.to_string(), expected.to_string());
}

#[tokio::test]
async fn openai_compat_flags_shape_the_request() {
    let body = openai_sse(&[chunk(
        "chatcmpl-10",
        json!({"content": "ok"}),
        json!("stop"),
    )]);
    let server = SseServer::start(vec![Scripted::sse(body)]).await;
    let model: Model = serde_json::from_value(json!({
        "id": "qwen3", "name": "qwen3", "api": "openai-completions", "provider": "llama-cpp",
        "baseUrl": format!("{}/v1", server.base), "reasoning": true, "maxTokens": 4096,
        "headers": {"x-extra": "1"},
        "compat": {"maxTokensField": "max_tokens", "supportsUsageInStreaming": false,
                   "supportsDeveloperRole": false, "supportsStore": false,
                   "supportsReasoningEffort": false}
    }))
    .unwrap();
    let provider = provider_with(model, None, options()).unwrap();
    let mut request = ask("hi");
    request.system_prompt = Some("sys".into());
    request.thinking_level = pith_events::ThinkingLevel::High;
    run(&provider, request).await;
    let r = &server.requests()[0];
    assert_eq!(r.headers.get("x-extra").map(String::as_str), Some("1"));
    assert_eq!(
        r.body.to_string(),
        json!({"model": "qwen3",
            "messages": [{"role": "system", "content": "sys"},
                         {"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "stream": true, "max_tokens": 4096})
        .to_string()
    );
}

#[tokio::test]
async fn a_byte_order_mark_before_the_first_event_keeps_it() {
    let body = format!("\u{feff}{}", anthropic_reply());
    let server = SseServer::start(vec![Scripted::sse(body)]).await;
    let (_, last) = run(&anthropic(&server), ask("hi")).await;
    assert_eq!(last.stop_reason, StopReason::Stop);
    assert_eq!(last.texts().collect::<String>(), "S");
    assert_eq!(last.response_id.as_deref(), Some("msg_s"));
}

/// The argument deltas of the tool call at `index`, joined, and the arguments its
/// `toolcall_end` carries.
pub fn tool_call_stream(events: &[ProviderEvent], index: usize) -> (String, Value) {
    let mut deltas = String::new();
    let mut end = Value::Null;
    for e in events {
        if let ProviderEvent::Update { update, .. } = e
            && update.content_index == index
        {
            match update.kind {
                pith_events::StreamKind::ToolCallDelta => {
                    deltas.push_str(update.delta.as_deref().unwrap_or(""))
                }
                pith_events::StreamKind::ToolCallEnd => {
                    end = update.tool_call.as_ref().unwrap().arguments.clone()
                }
                _ => {}
            }
        }
    }
    (deltas, end)
}
