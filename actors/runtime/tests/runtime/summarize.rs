//! Summary requests (`/compact`, `/tree` summaries) as they reach a model server: the limit
//! and reasoning members pi sends at each thinking level.

use std::sync::Arc;

use pith_llm::provider::Provider;
use pith_llm::providers::provider_with;
use pith_tests::models::{anthropic, anthropic_model, openai, openai_model, options};
use pith_tests::sse_server::{Scripted, SseServer};
use pith_tests::wire::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The limit and reasoning members of the bodies `summarize` sends with `options`, one request
/// per options, through the provider `make` builds for the server.
async fn summary_bodies(
    reply: String,
    make: impl Fn(&SseServer) -> Arc<dyn Provider>,
    options: &[pith_actors::summarize::SummaryOptions],
) -> Vec<Value> {
    use pith_actors::summarize::{SYSTEM_PROMPT, summarize};
    let server = SseServer::start(
        options
            .iter()
            .map(|_| Scripted::sse(reply.clone()))
            .collect(),
    )
    .await;
    let provider = make(&server);
    let model = pith_events::ModelRef::new("test", "test");
    let abort = CancellationToken::new();
    for o in options {
        let summary = summarize(
            provider.as_ref(),
            &model,
            o,
            "CONV".into(),
            abort.clone(),
            None,
        )
        .await;
        assert_eq!(summary.map(|r| r.text), Ok("S".to_owned()));
    }
    server
        .requests()
        .into_iter()
        .map(|r| {
            let mut body = r.body;
            let object = body.as_object_mut().unwrap();
            // The conversation and pith's own prompt wording are the same in every request.
            let messages = object.remove("messages").unwrap().to_string();
            assert!(messages.contains("CONV"), "{messages}");
            if let Some(system) = object.remove("system") {
                assert_eq!(system[0]["text"], SYSTEM_PROMPT);
            } else {
                assert!(messages.contains(SYSTEM_PROMPT), "{messages}");
            }
            body
        })
        .collect()
}

/// A history or turn-prefix summary (level medium) and a branch summary: pi 1.6.0 passes no
/// token limit (pi ≥ 1.4), so each request has the provider's default limit, `min(maxTokens,
/// 32000)`, a budget-thinking model its budget on top (capped at the model's maxTokens); the
/// history summary thinks at the session's level, the branch summary not at all.
#[tokio::test]
async fn summary_requests_think_at_the_session_level_within_the_reserve() {
    use pith_actors::summarize::SummaryOptions;
    let asks = [
        SummaryOptions::history(pith_events::ThinkingLevel::Medium),
        SummaryOptions::branch(),
    ];
    let enabled =
        |budget: u64| json!({"type": "enabled", "budget_tokens": budget, "display": "summarized"});
    let sonnet_4_5 = summary_bodies(anthropic_reply(), anthropic, &asks).await;
    assert_eq!(
        sonnet_4_5,
        [
            json!({"model": "claude-sonnet-4-5", "max_tokens": 40192, "stream": true,
                "thinking": enabled(8192)}),
            json!({"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": true,
                "thinking": {"type": "disabled"}}),
        ]
    );

    let adaptive = |server: &SseServer| {
        let mut model = anthropic_model(&server.base);
        model.id = "claude-sonnet-4-6".into();
        provider_with(model, Some("k".into()), options()).unwrap()
    };
    let adaptive_thinking = json!({"type": "adaptive", "display": "summarized"});
    assert_eq!(
        summary_bodies(anthropic_reply(), adaptive, &asks).await,
        [
            json!({"model": "claude-sonnet-4-6", "max_tokens": 32000, "stream": true,
                "thinking": adaptive_thinking, "output_config": {"effort": "medium"}}),
            json!({"model": "claude-sonnet-4-6", "max_tokens": 32000, "stream": true,
                "thinking": {"type": "disabled"}}),
        ]
    );

    let reasoning = |server: &SseServer| {
        let mut model = openai_model(&server.base);
        model.id = "gpt-5-mini".into();
        model.reasoning = true;
        model.max_tokens = 128_000;
        provider_with(model, Some("k".into()), options()).unwrap()
    };
    let openai_body = |id: &str, max: u64, effort: Option<&str>| {
        let mut body = json!({"model": id, "stream": true,
            "stream_options": {"include_usage": true}, "store": false,
            "max_completion_tokens": max});
        if let Some(e) = effort {
            body["reasoning_effort"] = json!(e);
        }
        body
    };
    assert_eq!(
        summary_bodies(openai_reply(), reasoning, &asks).await,
        [
            openai_body("gpt-5-mini", 32000, Some("medium")),
            openai_body("gpt-5-mini", 32000, None),
        ]
    );
    // A model that cannot reason gets the limits and no reasoning member, as in pi.
    assert_eq!(
        summary_bodies(openai_reply(), openai, &asks).await,
        [
            openai_body("gpt-4o-mini", 16384, None),
            openai_body("gpt-4o-mini", 16384, None),
        ]
    );
}
