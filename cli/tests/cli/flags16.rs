//! pi 1.6.0's newer command-line flags (spec: lifecycle.md §5.1): `--name/-n`,
//! `--session-id`, `--thinking max`, `-p` failing on a reply cut at the output limit, and
//! `-c` in a shared `--session-dir` taking only this directory's sessions.

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

use pith_tests::files::{entry_kinds as kinds, json_lines, session_files};

fn pith(agent: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::cargo_bin("pith").expect("binary");
    for var in pith_llm::auth::KEY_VARS {
        cmd.env_remove(var);
    }
    cmd.env("PITH_AGENT_DIR", agent)
        .current_dir(cwd)
        .env("TZ", "UTC");
    cmd
}

fn dirs(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (agent, cwd) = (root.join("agent"), root.join("work"));
    fs::create_dir_all(&cwd).unwrap();
    (agent, cwd)
}

#[test]
fn name_is_the_root_of_a_new_session_and_must_not_be_blank() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = dirs(tmp.path());
    pith(&agent, &cwd)
        .args(["-p", "-n", "  Refactor auth  ", "hi"])
        .assert()
        .success();
    let file = session_files(&agent).pop().unwrap();
    assert_eq!(
        kinds(&file),
        [
            "session_info",
            "model_change",
            "thinking_level_change",
            "user",
            "assistant"
        ]
    );
    let lines = json_lines(&file);
    assert_eq!(lines[1]["name"], "Refactor auth");
    assert_eq!(lines[1]["parentId"], Value::Null);
    // On a resumed session the name goes at the leaf.
    pith(&agent, &cwd)
        .args(["-p", "-c", "--name", "Renamed", "again"])
        .assert()
        .success();
    let kinds = kinds(&file);
    assert_eq!(kinds[5..], ["session_info", "user", "assistant"]);
    pith(&agent, &cwd)
        .args(["-p", "--name", "   ", "hi"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "--name requires a non-empty value",
        ));
}

#[test]
fn session_id_opens_or_creates_that_session() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = dirs(tmp.path());
    pith(&agent, &cwd)
        .args(["-p", "--session-id", "ci-run-42", "one"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "No project session found with id 'ci-run-42'; creating a new session with that id.",
        ));
    let files = session_files(&agent);
    assert_eq!(files.len(), 1);
    assert!(files[0].to_string_lossy().ends_with("_ci-run-42.jsonl"));
    assert_eq!(json_lines(&files[0])[0]["id"], "ci-run-42");
    pith(&agent, &cwd)
        .args(["-p", "--session-id", "ci-run-42", "two"])
        .assert()
        .success()
        .stderr(predicate::str::contains("No project session").not());
    assert_eq!(session_files(&agent).len(), 1);
    assert_eq!(
        kinds(&files[0]),
        [
            "model_change",
            "thinking_level_change",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    // A fork with an id that exists, an invalid id, and --session-id with --continue.
    pith(&agent, &cwd)
        .args([
            "-p",
            "--fork",
            "ci-run-42",
            "--session-id",
            "ci-run-42",
            "x",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "Session already exists with id 'ci-run-42'",
        ));
    pith(&agent, &cwd)
        .args(["-p", "--session-id", "bad id!", "x"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("Invalid session id"));
    pith(&agent, &cwd)
        .args(["-p", "-c", "--session-id", "ci-run-42", "x"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "--session-id cannot be combined with --continue",
        ));
    // The fork takes the id it is given.
    pith(&agent, &cwd)
        .args(["-p", "--fork", "ci-run-42", "--session-id", "copy.v1", "x"])
        .assert()
        .success();
    assert!(
        session_files(&agent)
            .iter()
            .any(|f| f.to_string_lossy().ends_with("_copy.v1.jsonl"))
    );
}

#[test]
fn a_reply_cut_at_the_output_limit_fails_print_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = dirs(tmp.path());
    let script = tmp.path().join("script.json");
    fs::write(
        &script,
        r#"[{"content":[{"type":"text","text":"half an ans"}],"stopReason":"length"}]"#,
    )
    .unwrap();
    pith(&agent, &cwd)
        .args(["-p", "--faux-script"])
        .arg(&script)
        .arg("hi")
        .assert()
        .code(1)
        .stdout("half an ans\n")
        .stderr(predicate::str::contains(
            "Response was truncated: the model reached its output token limit.",
        ));
}

#[test]
fn thinking_max_is_a_level() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = dirs(tmp.path());
    // The offline model does not reason: pi clamps every level to off.
    pith(&agent, &cwd)
        .args(["-p", "--thinking", "max", "hi"])
        .assert()
        .success();
    let lines = json_lines(&session_files(&agent).pop().unwrap());
    assert_eq!(lines[2]["thinkingLevel"], "off");
    pith(&agent, &cwd)
        .args(["-p", "--thinking", "maximal", "hi"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "off, minimal, low, medium, high, xhigh, max",
        ));
}

#[test]
fn continue_in_a_shared_session_dir_takes_this_directorys_session() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, a) = dirs(tmp.path());
    let b = tmp.path().join("other");
    fs::create_dir_all(&b).unwrap();
    let shared = tmp.path().join("shared");
    let run = |cwd: &Path, args: &[&str]| {
        pith(&agent, cwd)
            .arg("--session-dir")
            .arg(&shared)
            .args(args)
            .assert()
            .success();
    };
    run(&a, &["-p", "from a"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    run(&b, &["-p", "from b"]);
    // b's session is newer, but -c in a continues a's.
    run(&a, &["-p", "-c", "a again"]);
    let files: Vec<_> = fs::read_dir(&shared)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(files.len(), 2);
    let of_a = files
        .iter()
        .find(|f| fs::read_to_string(f).unwrap().contains("from a"))
        .unwrap();
    assert!(fs::read_to_string(of_a).unwrap().contains("a again"));
}
