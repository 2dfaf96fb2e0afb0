//! `pith extension check <path> --transcript FILE` (spec: extensions.md §4 step 3): the
//! golden transcripts of `docs/extension-protocol/transcripts/` replayed against the example
//! extensions pass, and an extension that answers differently fails with a readable diff.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn check(ext: &Path, transcript: &str) -> assert_cmd::assert::Assert {
    let tmp = tempfile::tempdir().unwrap();
    Command::cargo_bin("pith")
        .unwrap()
        .env("PITH_AGENT_DIR", tmp.path().join("agent"))
        .current_dir(tmp.path())
        .args(["extension", "check"])
        .arg(ext)
        .arg("--transcript")
        .arg(
            repo()
                .join("docs/extension-protocol/transcripts")
                .join(transcript),
        )
        .assert()
}

#[test]
fn extension_check_replays_golden_transcripts_against_the_examples() {
    let gate = repo().join("examples/extensions/python/permission_gate.py");
    for (ext, transcript, replies) in [
        (gate.clone(), "a_gate_ui_no.jsonl", 3),
        (gate, "b_gate_no_ui.jsonl", 2),
        (
            repo().join("examples/extensions/python/lint_on_edit.py"),
            "c_tool_result_patch.jsonl",
            2,
        ),
        (
            repo().join("examples/extensions/node/rules.mjs"),
            "e_before_agent_start.jsonl",
            3,
        ),
        (
            repo().join("cli/tests/cli/extensions/tally.py"),
            "f_tool_state_resume_tree.jsonl",
            18,
        ),
    ] {
        let out = check(&ext, transcript).success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        assert!(
            stdout.ends_with(&format!(
                "{transcript} ({replies} lines from the extension match)\n"
            )),
            "{stdout}"
        );
    }
}

/// The fault injector's transcripts: an exit mid tool call and the restart after it, a gate
/// that never answers, three crashes. Its mode comes from a manifest's `env`.
#[test]
fn extension_check_replays_crashes_hangs_and_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let fault = repo().join("cli/tests/cli/extensions/fault.py");
    for (mode, transcript, replies) in [
        ("tool", "j_crash_mid_tool_call.jsonl", 4),
        ("hang", "k_hang_deadline.jsonl", 1),
        ("crash", "l_three_crashes.jsonl", 3),
    ] {
        let manifest = tmp.path().join(format!("{mode}.json"));
        let json = serde_json::json!({"name": "fault", "command": ["python3", fault],
                                      "env": {"FAULT_MODE": mode}});
        fs::write(&manifest, json.to_string()).unwrap();
        let out = check(&manifest, transcript).success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        assert!(
            stdout.ends_with(&format!(
                "{transcript} ({replies} lines from the extension match)\n"
            )),
            "{stdout}"
        );
    }
    // A fault injector that does not crash where the transcript says it did fails.
    let manifest = tmp.path().join("ok.json");
    let json = serde_json::json!({"name": "fault", "command": ["python3", fault],
                                  "env": {"FAULT_MODE": "ok"}});
    fs::write(&manifest, json.to_string()).unwrap();
    let out = check(&manifest, "j_crash_mid_tool_call.jsonl").failure();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        stdout.contains(":7: the extension's line differs from the transcript\n")
            && stdout.contains("/method: expected \"tool/progress\", missing"),
        "{stdout}"
    );
}

#[test]
fn extension_check_fails_with_a_diff_when_an_extension_answers_differently() {
    let tmp = tempfile::tempdir().unwrap();
    let gate = fs::read_to_string(repo().join("examples/extensions/python/permission_gate.py"))
        .unwrap()
        .replace("\"Blocked by user\"", "\"Nope\"");
    let modified = tmp.path().join("permission_gate.py");
    fs::write(&modified, gate).unwrap();
    let out = check(&modified, "a_gate_ui_no.jsonl").failure();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let at = repo().join("docs/extension-protocol/transcripts/a_gate_ui_no.jsonl");
    assert_eq!(
        stdout,
        format!(
            "{}:6: the extension's line differs from the transcript\n\
             - {{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"block\":{{\"reason\":\"Blocked by user\"}}}}}}\n\
             + {{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"block\":{{\"reason\":\"Nope\"}}}}}}\n  \
             /result/block/reason: expected \"Blocked by user\", got \"Nope\"\n",
            at.display()
        )
    );
}
