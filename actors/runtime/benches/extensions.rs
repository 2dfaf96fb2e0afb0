//! The extension host's speed bars (spec: extensions.md §4 step 6), on the faux model with a
//! real long-lived Python extension process (standard library only):
//! - an `intercept` round trip (`tool_call` gate answering `{}` at once): the extra wall time
//!   per tool call of a turn of 100 `read` calls with the gate, over the same turn without
//!   it; bar ≤ 1 ms median;
//! - observed events: a reply of 20,000 word-sized deltas (20,000 `message_update`s) with an
//!   extension observing `message_update` and `turn_end`, against no extension: the agent time
//!   each observed event costs, and so what 10,000 events/s cost; bar 10,000 events/s without
//!   slowing the agent (the agent never waits for an observer: updates are sent without a
//!   reply and serialised only when written);
//! - coalescing: the same reply to an extension that takes 1 ms per line read (so its queue
//!   backs up): the bench process's peak RSS grows by a bounded amount.
//!
//! pi 1.6.0 runs extensions in its own process (no round trip), so there is no pi figure to
//! put beside these. Run: `cargo bench -p pith-actors --bench extensions` (medians of 11).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use pith_actors::extension_host::HostedExtensions;
use pith_actors::runtime::{FirstSession, Runtime, RuntimeConfig, ToolChoice};
use pith_events::ext::{ExtensionSpec, Manifest, Scope};
use pith_llm::faux::{Faux, ScriptedReply};
use pith_store::SessionEnv;
use pith_store::env::{RandomIds, SteppingClock};

const SAMPLES: usize = 11;
const CALLS: usize = 100;
const WORDS: usize = 20_000;

const EXTENSION: &str = r#"
import json, os, sys, time
mode = os.environ["BENCH_MODE"]
def send(m):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **m}) + "\n"); sys.stdout.flush()
seen = 0
for line in sys.stdin:
    if mode == "slow":
        time.sleep(0.001)
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        subscribe = ({"tool_call": "intercept"} if mode == "gate"
                     else {"message_update": "observe", "turn_end": "observe"})
        send({"id": mid, "result": {"protocolVersion": 1, "name": "bench", "subscribe": subscribe}})
    elif method == "intercept":
        send({"id": mid, "result": {}})

    elif method == "event":
        seen += 1
    elif method == "shutdown":
        send({"id": mid, "result": {}}); break
"#;

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("bench_ext.py");
    std::fs::write(&script, EXTENSION).unwrap();
    std::fs::write(tmp.path().join("small.txt"), "one line\n").unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();

    let calls: Vec<serde_json::Value> = (0..CALLS)
        .map(|i| json!({"type":"toolCall","id":format!("c{i}"),"name":"read","arguments":{"path":"small.txt"}}))
        .collect();
    let turn = json!([{"content": calls}, {"content":[{"type":"text","text":"done"}]}]).to_string();
    let without = median(&rt, tmp.path(), &turn, None);
    let with = median(&rt, tmp.path(), &turn, Some(("gate", &script)));
    let per_call = with.saturating_sub(without).as_secs_f64() * 1e6 / CALLS as f64;
    println!(
        "turn of {CALLS} read calls: {:.1} ms without an extension, {:.1} ms with a Python tool_call gate",
        ms(without),
        ms(with)
    );
    println!(
        "intercept round trip: {per_call:.0} µs median per call (bar ≤ 1000 µs; pi: in-process, n/a)"
    );

    let text: String = (0..WORDS).map(|i| format!("w{i} ")).collect();
    let reply = json!([{"content":[{"type":"text","text":text}]}]).to_string();
    let without = median(&rt, tmp.path(), &reply, None);
    let with = median(&rt, tmp.path(), &reply, Some(("observe", &script)));
    let per_event_us = with.saturating_sub(without).as_secs_f64() * 1e6 / WORDS as f64;
    println!(
        "reply of {WORDS} deltas: {:.1} ms without an extension, {:.1} ms with one observing message_update and turn_end: {per_event_us:.2} µs of agent time per observed event, so 10,000 events/s cost the agent {:.1}% of a core (bar: 10,000/s without slowing the agent)",
        ms(without),
        ms(with),
        per_event_us * 10_000.0 / 1e4
    );

    let before = peak_rss_kib();
    let slow = median(&rt, tmp.path(), &reply, Some(("slow", &script)));
    let after = peak_rss_kib();
    println!(
        "the same reply to an extension reading 1 line/ms: {:.1} ms; peak RSS {} → {} KiB (+{} KiB: coalesced, bounded)",
        ms(slow),
        before,
        after,
        after.saturating_sub(before)
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The bench process's peak resident set (`VmHWM`), in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// The median over [`SAMPLES`] of one prompt's run (prompt to idle) on a fresh runtime.
fn median(
    rt: &tokio::runtime::Runtime,
    dir: &Path,
    replies: &str,
    extension: Option<(&str, &PathBuf)>,
) -> Duration {
    let mut times: Vec<Duration> = (0..SAMPLES)
        .map(|_| rt.block_on(one_run(dir, replies, extension)))
        .collect();
    times.sort();
    times[SAMPLES / 2]
}

async fn one_run(dir: &Path, replies: &str, extension: Option<(&str, &PathBuf)>) -> Duration {
    let agent = tempfile::tempdir().unwrap();
    let env = SessionEnv {
        agent_dir: agent.path().to_path_buf(),
        clock: Arc::new(SteppingClock::new(1_764_000_000_000, 1)),
        ids: Arc::new(RandomIds),
    };
    // A first prompt, not timed, waits for the extension's start (a Python start-up is tens
    // of milliseconds, and more on a busy machine).
    let mut script: Vec<ScriptedReply> =
        serde_json::from_str(r#"[{"content":[{"type":"text","text":"ready"}]}]"#).unwrap();
    script.extend(serde_json::from_str::<Vec<ScriptedReply>>(replies).unwrap());
    let mut config = RuntimeConfig {
        env: env.clone(),
        cwd: dir.to_string_lossy().into_owned(),
        session_dir: None,
        persist: false,
        provider: Arc::new(Faux::new(script, env.clock.clone())),
        model: pith_events::ModelRef::new("faux", "faux-1"),
        thinking_level: pith_events::ThinkingLevel::Off,
        selection: Default::default(),
        session_name: None,
        tools: ToolChoice::defaults(),
        system_prompt: None,
        extensions: Vec::new(),
        hosted: HostedExtensions::default(),
        resources: Default::default(),
    };
    if let Some((mode, script)) = extension {
        let manifest: Manifest = serde_json::from_value(json!({
            "name": "bench", "command": ["python3", script], "env": {"BENCH_MODE": mode}
        }))
        .unwrap();
        config.hosted = HostedExtensions {
            specs: vec![ExtensionSpec {
                manifest,
                dir: dir.to_path_buf(),
                scope: Scope::Cli,
            }],
            mode: "print".into(),
            ..HostedExtensions::default()
        };
    }
    let handle = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    handle.prompt("warm up").await.unwrap();
    handle.wait_idle().await.unwrap();
    let started = Instant::now();
    handle.prompt("go").await.unwrap();
    handle.wait_idle().await.unwrap();
    let took = started.elapsed();
    let _ = handle.shutdown().await;
    took
}
