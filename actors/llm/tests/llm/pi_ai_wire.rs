//! pith's Gemini and Responses providers against pi-ai 1.6.0 itself: each case in
//! `tests/pi-ai/*.json` holds a context, options and scripted replies (`case`) and what pi-ai
//! 1.6.0 sent and made of them under Node (`pi`, recorded by `scripts/pi-ai-wire.mjs`). The
//! same replies are served to pith 7 bytes at a time, and the request bodies must be the same
//! bytes, the request paths and headers the same, the stream the same events and the final
//! message the same JSON.
//!
//! `durationMs` is a measured time: it is left out of both messages. What pith's providers do
//! not fill in yet is left out of pi's: `providerThinkingLevel`.
//! Times differ by nature: timestamps are compared with pith's clock, and the milliseconds in
//! Gemini's made-up tool-call ids are masked.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pith_events::clock::SteppingClock;
use pith_events::js::to_js_json;
use pith_events::{AgentMessage, ToolSpec};
use pith_llm::model::Model;
use pith_llm::provider::{ProviderEvent, ProviderRequest};
use pith_llm::providers::{CacheRetention, ProviderOptions, provider_with};
use pith_tests::sse_server::{End, Scripted, SseServer};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

const T0: i64 = 1_764_000_000_000;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("pi-ai");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/pi-ai exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn reply(r: &Value) -> Scripted {
    let status = r["status"].as_u64().unwrap_or(200) as u16;
    let body = r["body"].as_str().unwrap_or("");
    let mut s = if status == 200 {
        Scripted::sse(body)
    } else {
        Scripted::status(status, body)
    };
    s.headers = r["headers"]
        .as_object()
        .map(|h| {
            h.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    s.chunk = 7;
    s.pause = Duration::from_millis(1);
    s = match r["end"].as_str() {
        Some("cut") => s.ending(End::Cut),
        Some("hang") => s.ending(End::Hang),
        _ => s,
    };
    match r["delayHeadersMs"].as_u64() {
        Some(ms) => s.delayed(Duration::from_millis(ms)),
        None => s,
    }
}

/// The step name pi's events have: `start`, `text_delta`, …, `done` or `error`.
fn event_json(e: &ProviderEvent) -> Value {
    match e {
        ProviderEvent::Start(_) => json!({"type": "start"}),
        ProviderEvent::Update { update, .. } => {
            let mut v = json!({"type": update.kind, "contentIndex": update.content_index});
            if let Some(d) = &update.delta {
                v["delta"] = json!(d);
            }
            v
        }
        ProviderEvent::Done(m) => match m.stop_reason {
            pith_events::StopReason::Error | pith_events::StopReason::Aborted => {
                json!({"type": "error"})
            }
            _ => json!({"type": "done"}),
        },
    }
}

/// Gemini's `<name>_<ms>_<n>` ids with the milliseconds masked.
fn mask_generated_ids(v: &mut Value) {
    let Some(content) = v.get_mut("content").and_then(Value::as_array_mut) else {
        return;
    };
    for block in content {
        if let Some(Value::String(id)) = block.get_mut("id") {
            let parts: Vec<&str> = id.rsplitn(3, '_').collect();
            if parts.len() == 3
                && parts[1].len() == 13
                && parts[..2]
                    .iter()
                    .all(|p| p.chars().all(|c| c.is_ascii_digit()))
            {
                *id = format!("{}_<ms>_{}", parts[2], parts[0]);
            }
        }
    }
}

/// pi's final message as pith can hold it.
fn comparable_pi_message(mut m: Value) -> Value {
    let o = m.as_object_mut().expect("message object");
    for key in ["role", "durationMs", "providerThinkingLevel"] {
        o.shift_remove(key);
    }
    o.insert("timestamp".into(), json!(T0));
    if let Some(Value::Array(ds)) = o.get_mut("diagnostics") {
        for d in ds {
            d["timestamp"] = json!(T0);
        }
    }
    mask_generated_ids(&mut m);
    m
}

struct Outcome {
    requests: Vec<pith_tests::sse_server::Recorded>,
    events: Vec<Value>,
    message: Value,
}

async fn run_case(case: &Value) -> Outcome {
    let replies: Vec<Scripted> = case["replies"]
        .as_array()
        .unwrap()
        .iter()
        .map(reply)
        .collect();
    let server = SseServer::start(replies).await;
    let mut model_json = case["model"].clone();
    model_json["baseUrl"] = json!(format!(
        "{}{}",
        server.base,
        model_json["baseUrl"].as_str().unwrap_or("")
    ));
    let model: Model = serde_json::from_value(model_json).expect("model");
    let o = &case["options"];
    let options = ProviderOptions {
        clock: Arc::new(SteppingClock::new(T0, 0)),
        max_retries: 0,
        timeout: Duration::from_secs(5),
        cache_retention: match o["cacheRetention"].as_str() {
            Some("long") => CacheRetention::Long,
            Some("none") => CacheRetention::None,
            _ => CacheRetention::Short,
        },
        thinking_budgets: serde_json::from_value(o["thinkingBudgets"].clone()).unwrap_or_default(),
        headers: serde_json::from_value(o["headers"].clone()).unwrap_or_default(),
        ..ProviderOptions::default()
    };
    let provider =
        provider_with(model, o["apiKey"].as_str().map(str::to_owned), options).expect("provider");
    let request = ProviderRequest {
        provider: "test".into(),
        model: "test".into(),
        thinking_level: o["reasoning"]
            .as_str()
            .unwrap_or("off")
            .parse()
            .expect("a thinking level"),
        system_prompt: case["systemPrompt"].as_str().map(str::to_owned),
        messages: serde_json::from_value::<Vec<AgentMessage>>(case["messages"].clone())
            .expect("messages"),
        tools: case["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| ToolSpec {
                prefers_strict_schema: false,
                name: t["name"].as_str().unwrap().to_owned(),
                description: t["description"].as_str().unwrap().to_owned(),
                parameters: t["parameters"].clone(),
            })
            .collect(),
        max_tokens: o["maxTokens"].as_u64(),
        session_id: o["sessionId"].as_str().map(str::to_owned),
    };
    let abort = CancellationToken::new();
    if let Some(ms) = case["abortAfterMs"].as_u64() {
        let abort = abort.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            abort.cancel();
        });
    }
    let abort_after = case["abortAfterEvents"].as_u64().map(|n| n as usize);
    let mut rx = provider.stream(request, abort.clone());
    let mut events = Vec::new();
    let mut message = Value::Null;
    while let Some(e) = tokio::time::timeout(Duration::from_secs(8), rx.recv())
        .await
        .expect("the provider answers in time")
    {
        events.push(event_json(&e));
        if Some(events.len()) == abort_after {
            abort.cancel();
        }
        if let ProviderEvent::Done(m) = e {
            message = serde_json::to_value(&m).unwrap();
        }
    }
    mask_generated_ids(&mut message);
    Outcome {
        requests: server.requests(),
        events,
        message,
    }
}

/// Every case, compared part by part; all differences are reported together.
#[tokio::test]
async fn pith_sends_and_reads_what_pi_ai_does() {
    let mut failures = Vec::new();
    let files = fixtures();
    assert!(
        files.len() >= 30,
        "expected the recorded cases, found {}",
        files.len()
    );
    let fixtures: Vec<Value> = files
        .iter()
        .map(|f| serde_json::from_str(&std::fs::read_to_string(f).unwrap()).expect("fixture JSON"))
        .collect();
    // The cases run side by side: most of their time is the server's pauses between chunks.
    let outcomes =
        futures_util::future::join_all(fixtures.iter().map(|f| run_case(&f["case"]))).await;
    for ((file, fixture), got) in files.iter().zip(&fixtures).zip(outcomes) {
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        let pi = &fixture["pi"];
        let mut fail = |what: &str, expected: String, actual: String| {
            failures.push(format!(
                "{name}: {what}\n  pi-ai: {expected}\n  pith:  {actual}"
            ));
        };
        let pi_requests = pi["requests"].as_array().unwrap();
        if pi_requests.len() != got.requests.len() {
            fail(
                "request count",
                pi_requests.len().to_string(),
                got.requests.len().to_string(),
            );
        }
        for (p, r) in pi_requests.iter().zip(&got.requests) {
            let url = match &r.query {
                Some(q) => format!("{}?{q}", r.path),
                None => r.path.clone(),
            };
            if p["url"] != json!(url) {
                fail("path", p["url"].to_string(), url);
            }
            let body = String::from_utf8_lossy(&r.raw).into_owned();
            if p["body"].as_str() != Some(body.as_str()) {
                fail("body", p["body"].as_str().unwrap_or("").to_owned(), body);
            }
            let empty = Map::new();
            for (name, value) in p["headers"].as_object().unwrap_or(&empty) {
                // Node's fetch asks for `*/*` on its own; reqwest sends no `accept` unless told.
                if name == "accept" && value == "*/*" {
                    continue;
                }
                let ours = r.headers.get(name).cloned().unwrap_or_default();
                if value.as_str() != Some(ours.as_str()) {
                    fail(&format!("header {name}"), value.to_string(), ours);
                }
            }
        }
        let pi_events = pi["events"].as_array().unwrap();
        if pi_events != &got.events {
            fail(
                "events",
                serde_json::to_string(pi_events).unwrap(),
                serde_json::to_string(&got.events).unwrap(),
            );
        }
        // Spelled as JSON.stringify spells numbers (pith's floats are `0.0` in serde_json).
        let expected = to_js_json(&comparable_pi_message(pi["message"].clone())).unwrap();
        let mut actual = serde_json::to_value(&got.message).unwrap();
        if let Some(o) = actual.as_object_mut() {
            o.shift_remove("durationMs");
        }
        let actual = to_js_json(&actual).unwrap();
        if expected != actual {
            fail("message", expected, actual);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from pi-ai 1.6.0:\n{}",
        failures
            .iter()
            .map(|f| f.split(':').next().unwrap())
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        files.len(),
        failures.join("\n")
    );
}
