//! The Gemini and OpenAI Responses providers against a local server that streams scripted
//! SSE bodies 7 bytes at a time: final messages and update sequences with their values, the
//! provider-level retry setting, and how the agent's rules (retry, overflow) read their error
//! texts. `pi_ai_wire.rs` compares the same providers with pi-ai 1.6.0 case by case.

use std::sync::Arc;
use std::time::Duration;

use pith_events::{AgentMessage, AssistantMessage, StopReason, ToolSpec, Usage};
use pith_llm::model::Model;
use pith_llm::overflow::is_context_overflow;
use pith_llm::provider::{Provider, ProviderEvent, ProviderRequest};
use pith_llm::providers::{ProviderOptions, provider_with};
use pith_llm::retry::is_retryable;
use pith_tests::models::{gemini, gemini_model, options, responses, responses_model};
use pith_tests::sse_server::{Scripted, SseServer};
use pith_tests::wire::*;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const T0: i64 = 1_764_000_000_000;

fn ask(text: &str, thinking: &str) -> ProviderRequest {
    ProviderRequest {
        provider: "test".into(),
        model: "test".into(),
        thinking_level: thinking.parse().expect("a thinking level"),
        system_prompt: Some("Be brief.".into()),
        messages: vec![AgentMessage::user_text(text, 1)],
        tools: vec![ToolSpec {
            prefers_strict_schema: false,
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
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
    match events.last() {
        Some(ProviderEvent::Done(m)) => {
            let m = m.clone();
            (events, m)
        }
        other => panic!("the last event must be Done, got {other:?}"),
    }
}

async fn run(
    provider: &Arc<dyn Provider>,
    request: ProviderRequest,
) -> (Vec<ProviderEvent>, AssistantMessage) {
    collect(provider.stream(request, CancellationToken::new())).await
}

fn steps(events: &[ProviderEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            ProviderEvent::Start(_) => "start".to_owned(),
            ProviderEvent::Update { update, .. } => {
                let kind = serde_json::to_value(update.kind).unwrap();
                match &update.delta {
                    Some(d) => format!("{} {} {d:?}", kind.as_str().unwrap(), update.content_index),
                    None => format!("{} {}", kind.as_str().unwrap(), update.content_index),
                }
            }
            ProviderEvent::Done(_) => "done".to_owned(),
        })
        .collect()
}

/// The final message as JSON without `durationMs`, which every final reply has (pi-ai's
/// event stream times it) and which is measured.
fn untimed(m: &AssistantMessage) -> Value {
    assert!(m.duration_ms.is_some(), "a final reply is timed: {m:?}");
    let mut v = serde_json::to_value(m).unwrap();
    v.as_object_mut().unwrap().shift_remove("durationMs");
    v
}

/// Usage as pi-ai 1.6.0 parses it, `reasoning` (thinking tokens among `output`) included.
fn priced(
    model: &Model,
    input: u64,
    output: u64,
    cache_read: u64,
    reasoning: u64,
    total: u64,
) -> Value {
    let mut u = Usage {
        input,
        output,
        cache_read,
        reasoning: Some(reasoning),
        total_tokens: total,
        ..Usage::default()
    };
    model.price(&mut u);
    serde_json::to_value(u).unwrap()
}

// --- Gemini ----------------------------------------------------------------------------------

#[tokio::test]
async fn gemini_streams_thinking_text_and_whole_tool_calls() {
    let body = gemini_sse(&[
        gemini_chunk(json!([{"text": "Plan ", "thought": true}]), None, None),
        gemini_chunk(
            json!([{"text": "it.", "thought": true, "thoughtSignature": "c2ln"}]),
            None,
            None,
        ),
        gemini_chunk(json!([{"text": "Reading "}, {"text": "now."}]), None, None),
        gemini_chunk(
            json!([{"functionCall": {"id": "c1", "name": "read", "args": {"path": "a.rs"}},
                    "thoughtSignature": "Y2FsbA=="}]),
            Some("STOP"),
            Some(gemini_usage(100, 10, 40, 20)),
        ),
    ]);
    let server = SseServer::start(vec![Scripted::sse(body)]).await;
    let provider = gemini(&server);
    assert_eq!(provider.name(), "google");
    assert_eq!(provider.context_window("x"), Some(1_048_576));
    let (events, last) = run(&provider, ask("hi", "high")).await;
    let model = gemini_model(&server.base);
    assert_eq!(
        untimed(&last),
        json!({"content": [
            {"type": "thinking", "thinking": "Plan it.", "thinkingSignature": "c2ln"},
            {"type": "text", "text": "Reading now."},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.rs"},
             "thoughtSignature": "Y2FsbA=="}
        ], "api": "google-generative-ai", "provider": "google", "model": "gemini-2.5-flash",
           "usage": priced(&model, 80, 50, 20, 40, 150), "stopReason": "toolUse", "timestamp": T0,
           "responseId": "resp-g1", "rawStopReason": "STOP"})
    );
    assert_eq!(
        steps(&events),
        [
            "start",
            "thinking_start 0",
            "thinking_delta 0 \"Plan \"",
            "thinking_delta 0 \"it.\"",
            "thinking_end 0",
            "text_start 1",
            "text_delta 1 \"Reading \"",
            "text_delta 1 \"now.\"",
            "text_end 1",
            "toolcall_start 2",
            "toolcall_delta 2 \"{\\\"path\\\":\\\"a.rs\\\"}\"",
            "toolcall_end 2",
            "done"
        ]
    );
    let r = &server.requests()[0];
    assert_eq!(
        r.path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    );
    assert_eq!(r.query.as_deref(), Some("alt=sse"));
    assert_eq!(
        r.headers.get("x-goog-api-key").map(String::as_str),
        Some("gk-test")
    );
    assert!(!r.headers.contains_key("authorization"));
    assert_eq!(
        r.body,
        json!({"contents": [{"parts": [{"text": "hi"}], "role": "user"}],
            "systemInstruction": {"parts": [{"text": "Be brief."}], "role": "user"},
            "tools": [{"functionDeclarations": [{"name": "read", "description": "Read a file",
                "parametersJsonSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]}],
            "generationConfig": {"maxOutputTokens": 65536,
                "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 24576}}})
    );
}

#[tokio::test]
async fn gemini_makes_ids_for_calls_without_one_or_with_a_used_one() {
    let body = gemini_sse(&[gemini_chunk(
        json!([{"functionCall": {"name": "read", "args": {"path": "a"}}},
               {"functionCall": {"id": "x", "name": "read"}},
               {"functionCall": {"id": "x", "name": "bash", "args": null}}]),
        Some("STOP"),
        None,
    )]);
    let server = SseServer::start(vec![Scripted::sse(body)]).await;
    let (_, last) = run(&gemini(&server), ask("hi", "off")).await;
    let ids: Vec<String> = last.tool_calls().map(|c| c.id.clone()).collect();
    assert_eq!(
        ids,
        [
            format!("read_{T0}_1"),
            "x".to_owned(),
            format!("bash_{T0}_2")
        ]
    );
    let args: Vec<Value> = last.tool_calls().map(|c| c.arguments.clone()).collect();
    assert_eq!(args, [json!({"path": "a"}), json!({}), json!({})]);
    assert_eq!(last.stop_reason, StopReason::ToolUse);
    // Thinking off on a budget model: a zero budget.
    assert_eq!(
        server.requests()[0].body["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 0})
    );
}

#[tokio::test]
async fn gemini_errors_keep_the_sdk_texts_and_the_agent_reads_them() {
    let overloaded =
        r#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#;
    let too_long = r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#;
    let server = SseServer::start(vec![
        Scripted::status(503, overloaded),
        Scripted::status(400, too_long),
        Scripted::sse(format!(
            "{}data: {overloaded}\r\n\r\n",
            gemini_sse(&[gemini_chunk(json!([{"text": "Hi"}]), None, None)])
        )),
        Scripted::sse(gemini_sse(&[gemini_chunk(
            json!([{"text": "x"}]),
            Some("RECITATION"),
            None,
        )])),
    ])
    .await;
    let provider = gemini(&server);
    let (_, first) = run(&provider, ask("a", "off")).await;
    assert_eq!(first.error_message.as_deref(), Some(overloaded));
    assert!(is_retryable(&first, 1_048_576));
    let (_, second) = run(&provider, ask("b", "off")).await;
    assert!(is_context_overflow(&second, 1_048_576));
    assert!(!is_retryable(&second, 1_048_576));
    let (events, third) = run(&provider, ask("c", "off")).await;
    assert_eq!(
        third.error_message.as_deref(),
        Some(format!("got status: UNAVAILABLE. {overloaded}").as_str())
    );
    // The text so far stays, its block never closed.
    assert_eq!(third.texts().collect::<String>(), "Hi");
    assert_eq!(
        steps(&events),
        ["start", "text_start 0", "text_delta 0 \"Hi\"", "done"]
    );
    let (_, fourth) = run(&provider, ask("d", "off")).await;
    assert_eq!(
        (fourth.stop_reason, fourth.error_message.as_deref()),
        (StopReason::Error, Some("Provider stopped with: RECITATION"))
    );
    assert_eq!(
        server.requests().len(),
        4,
        "no provider-level retries by default"
    );
}

#[tokio::test]
async fn provider_retries_are_off_by_default_and_follow_the_setting() {
    assert_eq!(ProviderOptions::default().max_retries, 0);
    let server = SseServer::start(vec![
        Scripted::status(503, r#"{"error":{"code":503}}"#),
        Scripted::sse(gemini_reply()),
    ])
    .await;
    let provider = provider_with(
        gemini_model(&server.base),
        Some("k".into()),
        ProviderOptions {
            max_retries: 1,
            ..options()
        },
    )
    .unwrap();
    let (_, last) = run(&provider, ask("hi", "off")).await;
    assert_eq!(last.texts().collect::<String>(), "S");
    assert_eq!(server.requests().len(), 2);
}

// --- Responses -------------------------------------------------------------------------------

#[tokio::test]
async fn responses_stream_reasoning_text_and_partial_arguments() {
    let reasoning =
        json!({"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "E"});
    let reasoning_done = json!({"id": "rs_1", "type": "reasoning", "encrypted_content": "E",
        "summary": [{"type": "summary_text", "text": "Short plan"}]});
    let call = json!({"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "read", "arguments": ""});
    let call_done = json!({"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "read",
        "arguments": "{\"path\":\"src/main.rs\",\"limit\":20}"});
    let body = responses_sse(&[
        json!({"type": "response.created", "response": response_object("resp_9", "in_progress", json!([]), Value::Null)}),
        output_item(false, 0, reasoning),
        responses_event(
            "response.reasoning_summary_text.delta",
            0,
            json!({"delta": "Short "}),
        ),
        responses_event(
            "response.reasoning_summary_text.delta",
            0,
            json!({"delta": "plan"}),
        ),
        responses_event("response.reasoning_summary_part.done", 0, json!({})),
        output_item(true, 0, reasoning_done.clone()),
        output_item(false, 1, call),
        responses_event(
            "response.function_call_arguments.delta",
            1,
            json!({"delta": "{\"path\":\"src/ma"}),
        ),
        responses_event(
            "response.function_call_arguments.delta",
            1,
            json!({"delta": "in.rs\",\"limit\":2"}),
        ),
        responses_event(
            "response.function_call_arguments.done",
            1,
            json!({"arguments": "{\"path\":\"src/main.rs\",\"limit\":20}"}),
        ),
        output_item(true, 1, call_done.clone()),
        json!({"type": "response.completed", "response": response_object("resp_9", "completed",
            json!([reasoning_done, call_done]), responses_usage(1000, 800, 60, 40))}),
    ]);
    let server = SseServer::start(vec![Scripted::sse(body)]).await;
    let provider = responses(&server);
    let (events, last) = run(&provider, ask("hi", "low")).await;
    let model = responses_model(&server.base);
    assert_eq!(
        untimed(&last),
        json!({"content": [
            {"type": "thinking", "thinking": "Short plan", "thinkingSignature":
                r#"{"id":"rs_1","type":"reasoning","encrypted_content":"E","summary":[{"type":"summary_text","text":"Short plan"}]}"#},
            {"type": "toolCall", "id": "call_1|fc_1", "name": "read",
             "arguments": {"path": "src/main.rs", "limit": 20}}
        ], "api": "openai-responses", "provider": "openai", "model": "gpt-5",
           "usage": priced(&model, 200, 60, 800, 40, 1060), "stopReason": "toolUse", "timestamp": T0,
           "responseId": "resp_9", "rawStopReason": "completed"})
    );
    // Updates carry only what changed: the argument text in pieces, the call at its end.
    let (deltas, end) = crate::providers::tool_call_stream(&events, 1);
    assert_eq!(
        serde_json::from_str::<Value>(&deltas).unwrap(),
        json!({"path": "src/main.rs", "limit": 20})
    );
    assert_eq!(end, json!({"path": "src/main.rs", "limit": 20}));
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/responses");
    assert_eq!(
        r.headers.get("authorization").map(String::as_str),
        Some("Bearer sk-openai-test")
    );
    assert_eq!(
        r.body["reasoning"],
        json!({"effort": "low", "summary": "auto"})
    );
    assert_eq!(r.body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        r.body["input"][0],
        json!({"role": "developer", "content": "Be brief."})
    );
}

#[tokio::test]
async fn responses_errors_read_as_pi_formats_them() {
    let limit = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
    let server = SseServer::start(vec![
        Scripted::status(429, limit).header("retry-after", "120"),
        Scripted::status(429, limit).header("retry-after", "120"),
        Scripted::sse(responses_sse(&[
            json!({"type": "response.failed", "response":
            {"id": "r", "status": "failed", "error": {"code": "server_error", "message": "boom"}}}),
        ])),
    ])
    .await;
    let (_, first) = run(&responses(&server), ask("a", "off")).await;
    assert_eq!(
        first.error_message.as_deref(),
        Some(
            r#"OpenAI API error (429): {"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}"#
        )
    );
    assert!(is_retryable(&first, 400_000));
    // A server asking for a longer wait than allowed fails the retry at once.
    let retrying = provider_with(
        responses_model(&server.base),
        Some("sk-x".into()),
        ProviderOptions {
            max_retries: 3,
            ..options()
        },
    )
    .unwrap();
    let (_, second) = run(&retrying, ask("b", "off")).await;
    assert_eq!(
        second.error_message.as_deref(),
        Some("Server requested 120s retry delay (max: 60s). 429 Rate limit reached")
    );
    let (_, third) = run(&responses(&server), ask("c", "off")).await;
    assert_eq!(third.error_message.as_deref(), Some("server_error: boom"));
    assert!(is_retryable(&third, 400_000));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn aborting_ends_the_reply_as_pi_does() {
    for (provider, expected) in [
        ("gemini", "This operation was aborted"),
        (
            "responses",
            "OpenAI Responses stream ended before a terminal response event",
        ),
    ] {
        let first = match provider {
            "gemini" => gemini_sse(&[gemini_chunk(json!([{"text": "Hel"}]), None, None)]),
            _ => responses_sse(&[
                json!({"type": "response.created", "response": response_object("r", "in_progress", json!([]), Value::Null)}),
                output_item(
                    false,
                    0,
                    json!({"id": "m", "type": "message", "content": []}),
                ),
                responses_event("response.output_text.delta", 0, json!({"delta": "Hel"})),
            ]),
        };
        let server = SseServer::start(vec![
            Scripted::sse(first).ending(pith_tests::sse_server::End::Hang),
            Scripted::sse(String::new()).delayed(Duration::from_secs(5)),
        ])
        .await;
        let p = if provider == "gemini" {
            gemini(&server)
        } else {
            responses(&server)
        };
        let abort = CancellationToken::new();
        let mut rx = p.stream(ask("a", "off"), abort.clone());
        let mut seen = Vec::new();
        while let Some(e) = rx.recv().await {
            let delta = matches!(&e, ProviderEvent::Update { update, .. } if update.delta.as_deref() == Some("Hel"));
            seen.push(e);
            if delta {
                abort.cancel();
            }
        }
        let Some(ProviderEvent::Done(last)) = seen.last() else {
            panic!("Done expected")
        };
        assert_eq!(
            (
                last.stop_reason,
                last.error_message.as_deref(),
                last.texts().collect::<String>()
            ),
            (StopReason::Aborted, Some(expected), "Hel".to_owned()),
            "{provider}"
        );
        // Before the response: pi-ai's retry loop sees the signal.
        let early = CancellationToken::new();
        let rx = p.stream(ask("b", "off"), early.clone());
        tokio::time::sleep(Duration::from_millis(50)).await;
        early.cancel();
        let (_, last) = collect(rx).await;
        assert_eq!(
            (last.stop_reason, last.error_message.as_deref()),
            (StopReason::Aborted, Some("Request aborted")),
            "{provider}"
        );
    }
}
