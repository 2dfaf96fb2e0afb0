//! pith does not write pi 1.6.0's system-message entries (docs/divergences.md); pi 1.6.0 still
//! opens a session pith wrote with the same context. pith writes a session (a retried
//! failure hidden by a context_edit, a tool call, two prompts) against scripts/mock-llm.py;
//! then pith and the real pi 1.6.0 each resume a copy with the same prompt, and the messages
//! of their requests (without the system prompt) are equal.
//!
//! Needs the pi 1.6.0 oracle (`pith_tests::pi_oracle::install`: `$PITH_PI_ORACLE` or
//! `target/pi-oracle`, which `scripts/test` installs) and python3; without them it fails.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Mock {
    child: Child,
    log: PathBuf,
    url: String,
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn mock(dir: &Path, name: &str, replies: Value) -> Mock {
    let script = dir.join(format!("{name}.json"));
    fs::write(&script, replies.to_string()).unwrap();
    let (log, port) = (
        dir.join(format!("{name}.log")),
        dir.join(format!("{name}.port")),
    );
    let child = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/mock-llm.py"))
        .args(["--idle-exit", "60", "--pause-ms", "0", "--script"])
        .arg(&script)
        .arg("--log")
        .arg(&log)
        .arg("--port-file")
        .arg(&port)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let port = loop {
        if let Ok(p) = fs::read_to_string(&port)
            && !p.trim().is_empty()
        {
            break p.trim().to_owned();
        }
        assert!(start.elapsed() < Duration::from_secs(10), "mock server");
        std::thread::sleep(Duration::from_millis(20));
    };
    Mock {
        child,
        log,
        url: format!("http://127.0.0.1:{port}/v1"),
    }
}

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

/// The messages of the last request in `log`, without system/developer messages.
fn last_messages(log: &Path) -> Vec<Value> {
    let text = fs::read_to_string(log).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    last["body"]["messages"]
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
    let first = mock(
        root,
        "first",
        json!([
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

    let second = mock(root, "second", json!([{"text": "pi resumed"}]));
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

    let (ours, theirs) = (last_messages(&first.log), last_messages(&second.log));
    assert_eq!(ours.len(), 7, "{ours:#?}");
    assert_eq!(ours, theirs);
}
