//! The session every export test uses, and helpers to export it and read the page.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use regex::Regex;
use serde_json::{Value, json};

/// A 1×1 PNG.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/// Markup a message may hold that must stay text.
const PAYLOAD: &str =
    r#"</script><script>window.pwned=1</script><img src=x onerror="window.pwned=2"> & <b>bold</b>"#;

/// `pith` run in `cwd`, with its agent directory there too.
pub fn pith(cwd: &Path) -> Command {
    let mut cmd = Command::cargo_bin("pith").expect("binary");
    cmd.current_dir(cwd)
        .env("PITH_AGENT_DIR", cwd.join("agent"))
        .env("TZ", "UTC");
    cmd
}

/// An entry timestamp `sec` seconds into the session.
fn ts(sec: u32) -> String {
    format!("2025-03-05T10:{:02}:{:02}.000Z", sec / 60, sec % 60)
}

/// An entry line of `kind` with `fields` after the common ones.
fn entry(kind: &str, id: &str, parent: Option<&str>, sec: u32, fields: Value) -> Value {
    let mut e = json!({"type": kind, "id": id, "parentId": parent, "timestamp": ts(sec)});
    for (k, v) in fields.as_object().unwrap() {
        e[k] = v.clone();
    }
    e
}

/// A `message` entry.
fn message(id: &str, parent: &str, sec: u32, message: Value) -> Value {
    entry(
        "message",
        id,
        Some(parent),
        sec,
        json!({ "message": message }),
    )
}

/// An assistant message with fixed usage (0.75 USD); `extra` adds or replaces members.
fn assistant(content: Value, stop: &str, extra: Value) -> Value {
    let mut m = json!({
        "role": "assistant", "content": content, "api": "anthropic-messages",
        "provider": "anthropic", "model": "claude-test",
        "usage": {"input": 1200, "output": 300, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1500,
                  "cost": {"input": 0.25, "output": 0.5, "cacheRead": 0, "cacheWrite": 0, "total": 0.75}},
        "stopReason": stop, "timestamp": 1741168800000_i64
    });
    for (k, v) in extra.as_object().unwrap() {
        m[k] = v.clone();
    }
    m
}

/// A session with every entry kind and two branches below `u1`. The file's last entry is the
/// leaf: the main branch. The id `id"<2>` checks escaping inside attributes.
pub fn fixture() -> Vec<Value> {
    vec![
        entry(
            "session_info",
            "si1",
            None,
            1,
            json!({"name": "Demo <export> & more"}),
        ),
        entry(
            "model_change",
            "mc1",
            Some("si1"),
            2,
            json!({"provider": "anthropic", "modelId": "claude-test"}),
        ),
        entry(
            "thinking_level_change",
            "tl1",
            Some("mc1"),
            3,
            json!({"thinkingLevel": "high"}),
        ),
        message(
            "u1",
            "tl1",
            4,
            json!({"role": "user", "content": [{"type": "text", "text": format!("USER-PROMPT {PAYLOAD}")}], "timestamp": 1}),
        ),
        message(
            "alt1",
            "u1",
            5,
            assistant(
                json!([{"type": "text", "text": "ALT-BRANCH reply"}]),
                "stop",
                json!({}),
            ),
        ),
        message(
            "alt2",
            "alt1",
            6,
            json!({"role": "user", "content": "ALT-FOLLOW-UP", "timestamp": 2}),
        ),
        message(
            "alt3",
            "alt2",
            7,
            assistant(json!([]), "error", json!({"errorMessage": "ALT-ERROR 529"})),
        ),
        entry(
            "branch_summary",
            "bs1",
            Some("u1"),
            8,
            json!({"fromId": "u1", "summary": "BRANCH-SUMMARY tried the alt branch"}),
        ),
        message(
            "a1",
            "bs1",
            9,
            assistant(
                json!([
                    {"type": "thinking", "thinking": "THINKING-TEXT"},
                    {"type": "text", "text": "MAIN-ANSWER with `code` and\n```rust\nfn main() {}\n```"},
                    {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "echo '</script>' BASH-ARG", "timeout": 30}}
                ]),
                "toolUse",
                json!({}),
            ),
        ),
        message(
            "tr1",
            "a1",
            10,
            json!({"role": "toolResult", "toolCallId": "call_1", "toolName": "bash",
            "content": [{"type": "text", "text": format!("TOOL-OUTPUT </pre></b>{}", "\nmore output".repeat(30))}, {"type": "image", "data": PNG, "mimeType": "image/png"}],
            "isError": false, "timestamp": 3}),
        ),
        message(
            "a2",
            "tr1",
            11,
            assistant(
                json!([
                    {"type": "toolCall", "id": "call_2", "name": "read", "arguments": {"path": "/home/dev/proj/missing.rs"}}
                ]),
                "toolUse",
                json!({}),
            ),
        ),
        message(
            "tr2",
            "a2",
            12,
            json!({"role": "toolResult", "toolCallId": "call_2", "toolName": "read",
            "content": [{"type": "text", "text": "ENOENT-ERROR no such file"}], "isError": true, "timestamp": 4}),
        ),
        message(
            "bx1",
            "tr2",
            13,
            json!({"role": "bashExecution", "command": "make BASH-EXEC", "output": "BASH-OUT\n",
            "exitCode": 2, "cancelled": false, "truncated": false, "timestamp": 5}),
        ),
        entry(
            "custom_message",
            "cm1",
            Some("bx1"),
            14,
            json!({"customType": "note-ext", "content": "CUSTOM-SHOWN", "display": true}),
        ),
        entry(
            "custom_message",
            "id\"<2>",
            Some("cm1"),
            15,
            json!({"customType": "secret-ext", "content": "CUSTOM-HIDDEN", "display": false}),
        ),
        entry(
            "custom",
            "cu1",
            Some("id\"<2>"),
            16,
            json!({"customType": "state-ext", "data": {"k": "CUSTOM-DATA"}}),
        ),
        entry(
            "label",
            "lb1",
            Some("cu1"),
            17,
            json!({"targetId": "u1", "label": "LABEL-ONE"}),
        ),
        entry(
            "compaction",
            "cp1",
            Some("lb1"),
            18,
            json!({"summary": "COMPACTION-SUMMARY", "firstKeptEntryId": "a1", "tokensBefore": 12345}),
        ),
        message(
            "a3",
            "cp1",
            19,
            assistant(
                json!([{"type": "text", "text": "FINAL-ANSWER"}]),
                "stop",
                json!({}),
            ),
        ),
    ]
}

/// The index (file order) of the entry with this id: the page calls it `e<i>` and `t<i>`.
pub fn index_of(entries: &[Value], id: &str) -> usize {
    entries.iter().position(|e| e["id"] == id).unwrap()
}

/// Writes a session file with pi's file-name shape into `dir`.
pub fn write_session(dir: &Path, entries: &[Value]) -> PathBuf {
    let path = dir.join("2025-03-05T10-00-00-000Z_sess-1.jsonl");
    let mut text = json!({"type": "session", "version": 3, "id": "sess-1", "timestamp": "2025-03-05T10:00:00.000Z", "cwd": "/home/dev/proj"}).to_string();
    text.push('\n');
    for e in entries {
        text.push_str(&e.to_string());
        text.push('\n');
    }
    fs::write(&path, text).unwrap();
    path
}

/// Exports the fixture and returns (entries, html, page path).
pub fn export_fixture(dir: &Path) -> (Vec<Value>, String, PathBuf) {
    let entries = fixture();
    let session = write_session(dir, &entries);
    let out = dir.join("page.html");
    pith(dir)
        .arg("--export")
        .arg(&session)
        .arg(&out)
        .assert()
        .success()
        .stdout(format!("Exported to: {}\n", out.display()));
    let html = fs::read_to_string(&out).unwrap();
    (entries, html, out)
}

/// The `class` of the element with this `id` attribute.
pub fn class_of(html: &str, id: &str) -> String {
    let re = Regex::new(&format!(r#"<[a-z]+ class="([^"]*)" id="{id}""#)).unwrap();
    re.captures(html)
        .unwrap_or_else(|| panic!("no element #{id}"))[1]
        .to_owned()
}
