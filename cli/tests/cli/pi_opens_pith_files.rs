//! pith does not write pi 1.6.0's system-message entries (docs/divergences.md); pi 1.6.0 still
//! opens a session pith wrote with the same context. pith writes a session (a retried
//! failure hidden by a context_edit, a tool call, two prompts) against scripts/mock-llm.py;
//! then pith and the real pi 1.6.0 each resume a copy with the same prompt, and the messages
//! of their requests (without the system prompt) are equal.
//!
//! Needs the pi 1.6.0 oracle (`pith_tests::pi_oracle::install`: `$PITH_PI_ORACLE` or
//! `target/pi-oracle`, which `scripts/test` installs) and python3; without them it fails.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use pith_tests::pi_oracle::MockLlm;
use serde_json::{Value, json};

fn agent_dir(dir: &Path, url: &str) {
    fs::create_dir_all(dir).unwrap();
    fs::write(
        dir.join("models.json"),
        json!({"providers": {"mock": {"baseUrl": url, "api": "openai-completions", "apiKey": "none",
            "models": [{"id": "mock-1", "contextWindow": 100000, "maxTokens": 1000}]}}})
        .to_string(),
    )
    .unwrap();
    fs::write(dir.join("settings.json"), r#"{"retry":{"baseDelayMs":10}}"#).unwrap();
}

/// The messages of `mock`'s last request, without system/developer messages.
fn last_messages(mock: &MockLlm) -> Vec<Value> {
    let last = mock.request_bodies().pop().unwrap();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system" && m["role"] != "developer")
        .cloned()
        .collect()
}

#[test]
fn pi_1_6_resumes_a_pith_session_with_the_same_context() {
    let pi = pith_tests::pi_oracle::pi_bin();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let work = root.join("work");
    fs::create_dir_all(&work).unwrap();
    let first = MockLlm::start(
        root,
        "first",
        &json!([
            {"status": 500, "error": {"message": "boom", "type": "server_error"}},
            {"text": "first answer", "tool_calls": [{"id": "call_1", "name": "bash", "arguments": {"command": "echo hi"}}]},
            {"text": "done with tool"},
            {"text": "second answer"},
            {"text": "pith resumed"}
        ]),
    );
    let pith_agent = root.join("pith-agent");
    agent_dir(&pith_agent, &first.url);
    let pith = |args: &[&str]| {
        let out = Command::new(assert_cmd::cargo::cargo_bin("pith"))
            .current_dir(&work)
            .env("PITH_AGENT_DIR", &pith_agent)
            .env("HOME", root)
            .args(["--model", "mock/mock-1"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    pith(&["-p", "one", "two"]);
    let written = pith_tests::files::session_files(&pith_agent).pop().unwrap();
    let text = fs::read_to_string(&written).unwrap();
    assert!(
        text.contains("\"type\":\"context_edit\""),
        "the retry was hidden"
    );
    assert!(
        !text.contains("\"role\":\"system\""),
        "pith writes no system messages"
    );
    let (for_pith, for_pi) = (root.join("pith-copy.jsonl"), root.join("pi-copy.jsonl"));
    fs::copy(&written, &for_pith).unwrap();
    fs::copy(&written, &for_pi).unwrap();
    pith(&["--session", for_pith.to_str().unwrap(), "-p", "three"]);

    let second = MockLlm::start(root, "second", &json!([{"text": "pi resumed"}]));
    let pi_agent = root.join("pi-agent");
    agent_dir(&pi_agent, &second.url);
    let out = Command::new(&pi)
        .current_dir(&work)
        .env("PI_CODING_AGENT_DIR", &pi_agent)
        .env("HOME", root)
        .args(["--model", "mock/mock-1", "--session"])
        .arg(&for_pi)
        .args(["-p", "three"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "pi resumed\n");

    let (ours, theirs) = (last_messages(&first), last_messages(&second));
    assert_eq!(ours.len(), 7, "{ours:#?}");
    assert_eq!(ours, theirs);
}
