//! Servers that answer with something other than a model stream (issue 13): an HTML page with
//! status 200, a stream that ends before the message does, and a stream that stalls after its
//! headers. Each must end as an error reply naming what happened, never as an empty
//! successful one, and never wait for ever.

use std::sync::Arc;
use std::time::Duration;

use pith_events::{AgentMessage, AssistantMessage, StopReason};
use pith_llm::provider::{Provider, ProviderEvent, ProviderRequest};
use pith_llm::providers::{ProviderOptions, provider_with};
use pith_llm::retry::{ProviderRetrySettings, is_retryable};
use pith_tests::models::{anthropic, anthropic_model, openai, openai_model, options};
use pith_tests::sse_server::{End, Scripted, SseServer};
use pith_tests::wire::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn ask() -> ProviderRequest {
    ProviderRequest {
        provider: "test".into(),
        model: "test".into(),
        thinking_level: pith_events::ThinkingLevel::Off,
        system_prompt: None,
        messages: vec![AgentMessage::user_text("hi", 1)],
        tools: Vec::new(),
        max_tokens: None,
        session_id: None,
    }
}

/// The final reply; fails the test if the provider takes longer than `limit`.
async fn reply(provider: &Arc<dyn Provider>, limit: Duration) -> AssistantMessage {
    let mut rx = provider.stream(ask(), CancellationToken::new());
    let mut last = None;
    while let Some(e) = tokio::time::timeout(limit, rx.recv())
        .await
        .expect("the provider answers in time")
    {
        if let ProviderEvent::Done(m) = e {
            last = Some(m);
        }
    }
    last.expect("a final reply")
}

fn html(status: u16) -> Scripted {
    Scripted {
        headers: vec![("content-type".into(), "text/html; charset=utf-8".into())],
        body: b"<!doctype html><html><head><title>Sign in to the  Wi-Fi</title></head><body>portal</body></html>".to_vec(),
        ..Scripted::status(status, "")
    }
}

#[tokio::test]
async fn an_html_page_with_status_200_is_an_error_reply() {
    let server = SseServer::start(vec![html(200), html(200)]).await;
    for provider in [openai(&server), anthropic(&server)] {
        let r = reply(&provider, Duration::from_secs(8)).await;
        assert_eq!(r.stop_reason, StopReason::Error);
        assert!(r.content.is_empty());
        assert_eq!(
            r.error_message.as_deref(),
            Some(
                "The server answered with an HTML page instead of a model stream (check the provider's baseUrl): Sign in to the Wi-Fi"
            )
        );
    }
}

#[tokio::test]
async fn a_stream_that_ends_before_the_message_is_an_error_reply() {
    // OpenAI: text arrives, then `[DONE]` without any finish_reason (pi-ai 1.6.0's check).
    let openai_body = openai_sse(&[chunk("c1", json!({"content": "half"}), json!(null))]);
    // Anthropic: the connection closes cleanly before message_stop.
    let anthropic_body = anthropic_sse(&[
        message_start("m1", json!({"input_tokens": 1})),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "half"),
    ]);
    let server = SseServer::start(vec![
        Scripted::sse(openai_body),
        Scripted::sse(anthropic_body),
    ])
    .await;
    let o = reply(&openai(&server), Duration::from_secs(8)).await;
    assert_eq!(o.stop_reason, StopReason::Error);
    assert_eq!(
        o.error_message.as_deref(),
        Some("Stream ended without finish_reason")
    );
    assert!(is_retryable(&o, 0), "a cut stream is worth another try");
    let a = reply(&anthropic(&server), Duration::from_secs(8)).await;
    assert_eq!(a.stop_reason, StopReason::Error);
    assert_eq!(
        a.error_message.as_deref(),
        Some("Anthropic stream ended before message_stop")
    );
}

#[tokio::test]
async fn a_server_without_finish_reasons_can_say_so_in_compat() {
    let body = openai_sse(&[chunk("c1", json!({"content": "whole"}), json!(null))]);
    let server = SseServer::start(vec![Scripted::sse(body)]).await;
    let mut model = openai_model(&server.base);
    model.compat = Some(json!({"supportsFinishReason": false}));
    let provider = provider_with(model, Some("k".into()), options()).unwrap();
    let r = reply(&provider, Duration::from_secs(8)).await;
    assert_eq!(r.stop_reason, StopReason::Stop, "{:?}", r.error_message);
}

#[tokio::test]
async fn a_stream_that_stalls_after_its_headers_times_out_with_a_clear_error() {
    let body = openai_sse(&[chunk("c1", json!({"content": "so far"}), json!(null))]);
    // Only the first event arrives; then the connection stays open and silent.
    let first_event = body.split("\n\n").next().unwrap().to_owned() + "\n\n";
    let anthropic_first = anthropic_sse(&[message_start("m1", json!({"input_tokens": 1}))]);
    let server = SseServer::start(vec![
        Scripted::sse(first_event).ending(End::Hang),
        Scripted::sse(anthropic_first).ending(End::Hang),
    ])
    .await;
    // pi's setting, as settings.json gives it: 300 ms of silence.
    let mut opts = ProviderOptions { ..options() };
    opts.apply_retry(&ProviderRetrySettings {
        http_idle_timeout_ms: 300,
        ..ProviderRetrySettings::default()
    });
    assert_eq!(
        opts.timeout,
        Duration::from_millis(300),
        "timeoutMs defaults to the idle timeout"
    );
    for model in [openai_model(&server.base), anthropic_model(&server.base)] {
        let provider = provider_with(model, Some("k".into()), opts.clone()).unwrap();
        let r = reply(&provider, Duration::from_secs(8)).await;
        assert_eq!(r.stop_reason, StopReason::Error);
        assert_eq!(
            r.error_message.as_deref(),
            Some(
                "Stream timed out: no data from the provider for 300ms (settings.json: httpIdleTimeoutMs)"
            )
        );
        assert!(is_retryable(&r, 0));
    }
}

#[test]
fn idle_and_request_timeouts_follow_pis_settings() {
    let mut opts = ProviderOptions::default();
    assert_eq!(opts.idle_timeout, Some(Duration::from_secs(300)));
    assert_eq!(opts.timeout, Duration::from_secs(300));
    opts.apply_retry(&ProviderRetrySettings {
        timeout_ms: Some(2_000),
        http_idle_timeout_ms: 0,
        ..ProviderRetrySettings::default()
    });
    assert_eq!(
        (opts.timeout, opts.idle_timeout),
        (Duration::from_secs(2), None)
    );
    opts.apply_retry(&ProviderRetrySettings {
        timeout_ms: Some(0),
        ..ProviderRetrySettings::default()
    });
    assert_eq!(opts.timeout, Duration::MAX, "0 is no limit");
}
