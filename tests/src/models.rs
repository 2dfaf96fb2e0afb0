//! Model descriptions the provider tests run against: pi-ai's table rows for one model of each
//! API, pointed at a local server.

use std::sync::Arc;
use std::time::Duration;

use pith_events::clock::SteppingClock;
use pith_llm::model::Model;
use pith_llm::provider::Provider;
use pith_llm::providers::{CacheRetention, ProviderOptions, provider_with};
use serde_json::json;

use crate::sse_server::SseServer;

/// Provider options for tests: a clock stopped at 2025-11-24T16:00:00Z, no SDK retries, a
/// 5 s timeout, short cache retention.
pub fn options() -> ProviderOptions {
    ProviderOptions {
        clock: Arc::new(SteppingClock::new(1_764_000_000_000, 0)),
        max_retries: 0,
        timeout: Duration::from_secs(5),
        cache_retention: CacheRetention::Short,
        ..ProviderOptions::default()
    }
}

/// An Anthropic provider for [`anthropic_model`] on `server`, with a test key.
pub fn anthropic(server: &SseServer) -> Arc<dyn Provider> {
    provider_with(
        anthropic_model(&server.base),
        Some("sk-ant-test".into()),
        options(),
    )
    .expect("provider")
}

/// An OpenAI provider for [`openai_model`] on `server`, with a test key.
pub fn openai(server: &SseServer) -> Arc<dyn Provider> {
    provider_with(
        openai_model(&server.base),
        Some("sk-openai-test".into()),
        options(),
    )
    .expect("provider")
}

/// Claude Sonnet 4.5 as pi-ai describes it (`anthropic-messages`), served at `base`.
pub fn anthropic_model(base: &str) -> Model {
    serde_json::from_value(json!({
        "id": "claude-sonnet-4-5", "name": "Claude Sonnet 4.5", "api": "anthropic-messages",
        "provider": "anthropic", "baseUrl": base, "reasoning": true,
        "input": ["text", "image"],
        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
        "contextWindow": 200000, "maxTokens": 64000
    }))
    .expect("model")
}

/// GPT-4o mini as pi-ai describes it (`openai-completions`), served at `base/v1`.
pub fn openai_model(base: &str) -> Model {
    serde_json::from_value(json!({
        "id": "gpt-4o-mini", "name": "GPT-4o mini", "api": "openai-completions",
        "provider": "openai", "baseUrl": format!("{base}/v1"), "reasoning": false,
        "input": ["text", "image"],
        "cost": {"input": 0.15, "output": 0.6, "cacheRead": 0.075, "cacheWrite": 0},
        "contextWindow": 128000, "maxTokens": 16384
    }))
    .expect("model")
}

/// A Gemini provider for [`gemini_model`] on `server`, with a test key.
pub fn gemini(server: &SseServer) -> Arc<dyn Provider> {
    provider_with(
        gemini_model(&server.base),
        Some("gk-test".into()),
        options(),
    )
    .expect("provider")
}

/// An OpenAI Responses provider for [`responses_model`] on `server`, with a test key.
pub fn responses(server: &SseServer) -> Arc<dyn Provider> {
    provider_with(
        responses_model(&server.base),
        Some("sk-openai-test".into()),
        options(),
    )
    .expect("provider")
}

/// Gemini 2.5 Flash as pi-ai 1.6.0 describes it (`google-generative-ai`), served at
/// `base/v1beta`.
pub fn gemini_model(base: &str) -> Model {
    serde_json::from_value(json!({
        "id": "gemini-2.5-flash", "name": "Gemini 2.5 Flash", "api": "google-generative-ai",
        "provider": "google", "baseUrl": format!("{base}/v1beta"), "reasoning": true,
        "input": ["text", "image"],
        "cost": {"input": 0.3, "output": 2.5, "cacheRead": 0.075, "cacheWrite": 0},
        "contextWindow": 1048576, "maxTokens": 65536
    }))
    .expect("model")
}

/// GPT-5 as pi-ai 1.6.0 describes it (`openai-responses`), served at `base/v1`.
pub fn responses_model(base: &str) -> Model {
    serde_json::from_value(json!({
        "id": "gpt-5", "name": "GPT-5", "api": "openai-responses",
        "provider": "openai", "baseUrl": format!("{base}/v1"), "reasoning": true,
        "input": ["text", "image"],
        "cost": {"input": 1.25, "output": 10, "cacheRead": 0.125, "cacheWrite": 0},
        "contextWindow": 400000, "maxTokens": 128000,
        "thinkingLevelMap": {"off": null, "minimal": "minimal", "low": "low", "medium": "medium",
            "high": "high", "xhigh": null},
        "compat": {"supportsStrictMode": true, "supportsOpenAIGrammarTools": true}
    }))
    .expect("model")
}
