//! `pith -p`: print mode on the built-in offline model, with pi's session flags.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

fn pith(agent: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::cargo_bin("pith").expect("binary");
    // The offline default must not turn into a real provider on a machine with keys.
    for var in pith_llm::auth::KEY_VARS {
        cmd.env_remove(var);
    }
    cmd.env("PITH_AGENT_DIR", agent)
        .current_dir(cwd)
        .env("TZ", "UTC");
    cmd
}

/// `agent/` and `work/` under `root`, and a faux script with `json` in it.
fn scripted(root: &Path, json: &str) -> (PathBuf, PathBuf, PathBuf) {
    let (agent, cwd) = (root.join("agent"), root.join("work"));
    fs::create_dir_all(&cwd).unwrap();
    let script = root.join("script.json");
    fs::write(&script, json).unwrap();
    (agent, cwd, script)
}

use pith_tests::files::{entry_kinds as kinds, session_files};

/// Settings that keep only `tokens` recent tokens: pi 1.6.0 compacts nothing when the whole
/// conversation fits the kept budget (spec compaction.md §4 step 7).
fn keep_recent(agent: &Path, tokens: u64) {
    fs::create_dir_all(agent).unwrap();
    fs::write(
        agent.join("settings.json"),
        format!(r#"{{"compaction":{{"keepRecentTokens":{tokens}}}}}"#),
    )
    .unwrap();
}

#[test]
fn a_prompt_writes_a_session_pi_can_read_and_prints_the_reply() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("work"));
    fs::create_dir_all(&cwd).unwrap();
    pith(&agent, &cwd)
        .args(["-p", "Hello, pith"])
        .assert()
        .success()
        .stdout("faux-1 (offline) heard: Hello, pith\n")
        .stderr(predicate::str::contains(
            "using the built-in offline model faux/faux-1",
        ));
    let files = session_files(&agent);
    assert_eq!(files.len(), 1);
    let encoded = pith_store::dirs::encode_cwd(&cwd.to_string_lossy());
    assert!(
        files[0].parent().unwrap().ends_with(&encoded),
        "{}",
        files[0].display()
    );
    assert_eq!(
        kinds(&files[0]),
        ["model_change", "thinking_level_change", "user", "assistant"]
    );

    // --continue appends to the same file; stdin is put before the first message.
    pith(&agent, &cwd)
        .args(["-p", "-c", " and more"])
        .write_stdin("piped")
        .assert()
        .success()
        .stdout("faux-1 (offline) heard: piped and more\n");
    assert_eq!(session_files(&agent).len(), 1);
    assert_eq!(kinds(&files[0]).iter().filter(|k| *k == "user").count(), 2);
}

#[test]
fn no_session_writes_nothing_and_fork_copies() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("work"));
    fs::create_dir_all(&cwd).unwrap();
    pith(&agent, &cwd)
        .args(["-p", "--no-session", "hi"])
        .assert()
        .success();
    assert!(session_files(&agent).is_empty());
    pith(&agent, &cwd).args(["-p", "first"]).assert().success();
    let source = session_files(&agent).remove(0);
    pith(&agent, &cwd)
        .args(["-p", "--fork"])
        .arg(&source)
        .arg("second")
        .assert()
        .success();
    let files = session_files(&agent);
    assert_eq!(files.len(), 2);
    let fork = files.iter().find(|f| **f != source).unwrap();
    let header: serde_json::Value =
        serde_json::from_str(fs::read_to_string(fork).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(header["parentSession"], source.to_string_lossy().as_ref());
    pith(&agent, &cwd)
        .args(["-p", "--fork", "x", "--no-session", "hi"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "--fork cannot be combined with --no-session",
        ));
}

#[test]
fn an_error_reply_exits_1_and_is_persisted() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, script) = scripted(
        tmp.path(),
        r#"[{"content":[],"errorMessage":"400 invalid request"}]"#,
    );
    pith(&agent, &cwd)
        .args(["-p", "--faux-script"])
        .arg(&script)
        .arg("hi")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("400 invalid request"));
    let file = session_files(&agent).remove(0);
    assert!(
        fs::read_to_string(file)
            .unwrap()
            .contains(r#""stopReason":"error","errorMessage":"400 invalid request""#)
    );
    fs::write(&script, "[{").unwrap();
    pith(&agent, &cwd)
        .args(["-p", "--faux-script"])
        .arg(&script)
        .arg("hi")
        .assert()
        .failure()
        .stderr(predicate::str::contains("script.json: line 1, column 2"));
    pith(&agent, &cwd)
        .args(["-p", "--model", "nope/gpt-9", "hi"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "Model \"nope/gpt-9\" not found. Use --list-models to see available models.",
        ));
    pith(&agent, &cwd)
        .args(["-p", "--model", "openai/gpt-9", "hi"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "Model \"gpt-9\" not found for provider \"openai\". Using custom model id.",
        ))
        .stderr(predicate::str::contains("No API key found for openai"));
}

#[test]
fn the_trace_draws_the_message_flow_and_never_holds_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("work"));
    fs::create_dir_all(&cwd).unwrap();
    let trace = tmp.path().join("trace.json");
    let secret = "sk-ant-pith-test-secret-0123456789";
    pith(&agent, &cwd)
        .env("ANTHROPIC_API_KEY", secret)
        .env("OPENAI_API_KEY", secret)
        .args(["-p", "--model", "faux/faux-1", "--trace"])
        .arg(&trace)
        .arg("trace me")
        .assert()
        .success();
    let text = fs::read_to_string(&trace).unwrap();
    assert!(!text.contains(secret));
    for f in session_files(&agent) {
        assert!(!fs::read_to_string(f).unwrap().contains(secret));
    }
    let out = pith(&agent, &cwd)
        .args(["trace", "mermaid"])
        .arg(&trace)
        .output()
        .unwrap();
    let diagram = String::from_utf8(out.stdout).unwrap();
    assert!(diagram.starts_with("sequenceDiagram\n"));
    for arrow in [
        "Frontend->>Runtime: prompt",
        "Runtime->>Agent: prompt",
        "Agent->>SessionWriter: append_message",
        "SessionWriter->>Projection: appended",
        "Agent->>SessionWriter: sync",
        "Agent->>Projection: get_context",
    ] {
        assert!(diagram.contains(arrow), "{arrow} missing in\n{diagram}");
    }
}

#[test]
fn every_prompt_runs_and_the_last_reply_decides_the_exit_status() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, script) = scripted(
        tmp.path(),
        r#"[{"content":[],"errorMessage":"400 bad request"},{"content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"a"},{"type":"text","text":"b"}]}]"#,
    );
    pith(&agent, &cwd)
        .args(["-p", "--faux-script"])
        .arg(&script)
        .args(["one", "two"])
        .assert()
        .success()
        .stdout("a\nb\n");
    pith(&agent, &cwd)
        .args(["-p", "--trace", "/nonexistent-dir/t.json", "hi"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "cannot write the trace file /nonexistent-dir/t.json",
        ));
}

#[test]
fn a_failed_write_is_reported_and_fails_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("work"));
    fs::create_dir_all(&cwd).unwrap();
    pith(&agent, &cwd).args(["-p", "first"]).assert().success();
    let file = session_files(&agent).remove(0);
    // While the next reply is delayed, the session file becomes a directory.
    let script = tmp.path().join("s.json");
    fs::write(
        &script,
        r#"[{"content":[{"type":"text","text":"late"}],"delayMs":700}]"#,
    )
    .unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("pith"))
        .env("PITH_AGENT_DIR", &agent)
        .current_dir(&cwd)
        .args(["-p", "-c", "--faux-script"])
        .arg(&script)
        .arg("second")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    // Its folder becomes a file: nothing can be written there, nor beside it.
    let dir = file.parent().unwrap();
    fs::remove_dir_all(dir).unwrap();
    fs::write(dir, "not a folder").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("could not save the session"), "{stderr}");
    assert_eq!(fs::read_to_string(dir).unwrap(), "not a folder");
}

#[test]
fn a_session_file_replaced_while_in_use_is_saved_beside_it_and_the_user_told() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("work"));
    fs::create_dir_all(&cwd).unwrap();
    pith(&agent, &cwd).args(["-p", "first"]).assert().success();
    let file = session_files(&agent).remove(0);
    let script = tmp.path().join("s.json");
    fs::write(
        &script,
        r#"[{"content":[{"type":"text","text":"late"}],"delayMs":700}]"#,
    )
    .unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("pith"))
        .env("PITH_AGENT_DIR", &agent)
        .current_dir(&cwd)
        .args(["-p", "-c", "--faux-script"])
        .arg(&script)
        .arg("second")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    // The session file becomes a directory holding something of the user's.
    fs::remove_file(&file).unwrap();
    fs::create_dir(&file).unwrap();
    fs::write(file.join("keep"), "mine").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let beside = file.with_file_name(format!(
        "{}.recovered.jsonl",
        file.file_stem().unwrap().to_string_lossy()
    ));
    assert!(
        stderr.contains("replaced by a directory") && stderr.contains(&*beside.to_string_lossy()),
        "{stderr}"
    );
    assert_eq!(fs::read_to_string(file.join("keep")).unwrap(), "mine");
    let text = fs::read_to_string(&beside).unwrap();
    // Header, model and thinking level, both prompts and both replies.
    assert_eq!(text.lines().count(), 7, "{text}");
    assert!(text.lines().nth(3).unwrap().contains("\"first\""), "{text}");
    assert!(text.lines().last().unwrap().contains("late"), "{text}");
}

#[test]
fn a_second_writer_is_refused_and_read_only_works_on_a_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("work"));
    fs::create_dir_all(&cwd).unwrap();
    pith(&agent, &cwd).args(["-p", "first"]).assert().success();
    let file = session_files(&agent).remove(0);
    let before = fs::read(&file).unwrap();
    // Another process holds the writer lock while a slow reply runs.
    let script = tmp.path().join("slow.json");
    fs::write(
        &script,
        r#"[{"content":[{"type":"text","text":"slow"}],"delayMs":1500}]"#,
    )
    .unwrap();
    let mut holder = std::process::Command::new(assert_cmd::cargo::cargo_bin("pith"))
        .env("PITH_AGENT_DIR", &agent)
        .current_dir(&cwd)
        .args(["-p", "-c", "--faux-script"])
        .arg(&script)
        .arg("held")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    pith(&agent, &cwd)
        .args(["-p", "-c", "second writer"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(format!(
            "is open for writing in another process (pid {})",
            holder.id()
        )))
        .stderr(predicate::str::contains("--read-only"));
    pith(&agent, &cwd)
        .args(["-p", "-c", "--read-only", "just looking"])
        .assert()
        .success()
        .stdout("faux-1 (offline) heard: just looking\n");
    assert!(holder.wait().unwrap().success());
    let after = fs::read_to_string(&file).unwrap();
    assert!(after.starts_with(std::str::from_utf8(&before).unwrap()));
    assert!(
        after.contains("held")
            && !after.contains("just looking")
            && !after.contains("second writer")
    );
}

#[test]
fn slash_compact_summarizes_through_the_model_and_a_second_one_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, script) = scripted(
        tmp.path(),
        r#"[{"content":[{"type":"text","text":"r1"}]},{"content":[{"type":"text","text":"THE SUMMARY"}]},{"content":[{"type":"text","text":"r2"}]}]"#,
    );
    // Keeping 1 token keeps the reply; the prompt is a split turn's prefix.
    keep_recent(&agent, 1);
    pith(&agent, &cwd)
        .args(["-p", "--faux-script"])
        .arg(&script)
        .args(["one", "/compact keep names", "two"])
        .assert()
        .success()
        .stdout("r2\n")
        .stderr("pith: compacted\n");
    let file = session_files(&agent).pop().unwrap();
    assert_eq!(
        kinds(&file),
        [
            "model_change",
            "thinking_level_change",
            "user",
            "assistant",
            "compaction",
            "user",
            "assistant"
        ]
    );
    // The reply is kept; its prompt, with nothing before it, is summarized as a split
    // turn's prefix (compaction.md §7).
    let lines: Vec<serde_json::Value> = fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[5]["summary"],
        "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nTHE SUMMARY"
    );
    assert_eq!(lines[5]["firstKeptEntryId"], lines[4]["id"]);
    assert_eq!(
        lines[5]["details"],
        serde_json::json!({"readFiles":[],"modifiedFiles":[]})
    );

    pith(&agent, &cwd)
        .args(["-p", "-c", "/compact"])
        .assert()
        .success()
        .stderr(predicate::str::ends_with("\npith: compacted\n"));
    pith(&agent, &cwd)
        .args(["-p", "-c", "/compact"])
        .assert()
        .code(1)
        .stderr(predicate::str::ends_with(
            "\npith: Compaction failed: Already compacted\n",
        ));
    assert_eq!(
        kinds(&file).iter().filter(|k| *k == "compaction").count(),
        2
    );
}

#[test]
fn an_overflow_is_compacted_and_retried_before_the_next_prompt_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let overflow =
        r#"{"content":[],"errorMessage":"prompt is too long: 213462 tokens > 200000 maximum"}"#;
    let text = |t: &str| format!(r#"{{"content":[{{"type":"text","text":"{t}"}}]}}"#);
    let (agent, cwd, script) = scripted(
        tmp.path(),
        &format!(
            "[{},{overflow},{},{},{},{overflow},{},{},{overflow},{}]",
            text("reply one"),
            text("SUMMARY"),
            text("PREFIX"),
            text("retried reply"),
            text("SUMMARY 2"),
            text("PREFIX 2"),
            text("last reply")
        ),
    );
    // Keeping 1 token would keep only the overflowed prompt and its hidden reply: pi 1.6.0
    // keeps from the hidden reply, so what came before is summarized and the prompt is the
    // split turn's prefix (compaction.md §5.1), two summary requests each time.
    keep_recent(&agent, 1);
    // second: overflow → compaction → retry. third: overflow → compaction → the retry
    // overflows again → pi's give-up; fourth still runs.
    pith(&agent, &cwd)
        .args(["-p", "--faux-script"])
        .arg(&script)
        .args(["first", "second", "third", "fourth"])
        .assert()
        .success()
        .stdout("last reply\n");
    let file = session_files(&agent).pop().unwrap();
    assert_eq!(
        kinds(&file),
        [
            "model_change",
            "thinking_level_change",
            "user",
            "assistant",
            "user",
            "assistant",
            "context_edit",
            "compaction",
            "assistant",
            "user",
            "assistant",
            "context_edit",
            "compaction",
            "assistant",
            "user",
            "assistant"
        ],
        "each overflowed reply is hidden by a context_edit before the compaction (pi 1.6.0)"
    );
    let text = fs::read_to_string(&file).unwrap();
    assert!(!text.contains("Request was aborted"), "{text}");
    assert!(text.contains("retried reply"));
}

#[test]
fn an_overflow_with_nothing_to_compact_is_an_error_and_exit_1() {
    // pi 1.6.0 hides the overflowed reply, finds nothing to summarize, and exits 0 printing
    // nothing; pith says why on stderr and exits 1 (docs/divergences.md, "Output").
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, script) = scripted(
        tmp.path(),
        r#"[{"content":[],"errorMessage":"prompt is too long: 213462 tokens > 200000 maximum"},
            {"content":[{"type":"text","text":"never asked"}]}]"#,
    );
    pith(&agent, &cwd)
        .args(["-p", "--faux-script"])
        .arg(&script)
        .arg("hello")
        .assert()
        .code(1)
        .stdout("")
        .stderr("prompt is too long: 213462 tokens > 200000 maximum\n");
    let file = session_files(&agent).pop().unwrap();
    // As pi 1.6.0 writes it: the attempt hidden, no compaction, no retry.
    assert_eq!(
        kinds(&file),
        [
            "model_change",
            "thinking_level_change",
            "user",
            "assistant",
            "context_edit"
        ]
    );
}

#[test]
fn json_mode_prints_the_header_then_every_event() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, script) = scripted(
        tmp.path(),
        r#"[{"content":[{"type":"thinking","thinking":"hmm"},{"type":"toolCall","id":"c1","name":"nope","arguments":{"n":1.5}}]},
            {"content":[{"type":"text","text":"hello"}]},
            {"content":[],"errorMessage":"400 bad request"}]"#,
    );
    let out = pith(&agent, &cwd)
        .args(["--mode", "json", "--faux-script"])
        .arg(&script)
        .args(["one", "two"])
        .assert()
        // Like pi's JSON mode: an error reply is an event, not a failed run.
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    let raw: Vec<&str> = out.lines().collect();
    let lines: Vec<serde_json::Value> = raw
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let file = session_files(&agent).remove(0);
    let header: serde_json::Value =
        serde_json::from_str(fs::read_to_string(&file).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(lines[0], header);
    let types: Vec<&str> = lines[1..]
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|t| *t != "message_update")
        .collect();
    let tool_turn = [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
        "agent_settled",
    ];
    let error_turn = [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
        "agent_settled",
    ];
    assert_eq!(types, [&tool_turn[..], &error_turn[..]].concat());

    // Whole lines, as pi's listeners get them and `JSON.stringify` spells them: the agent
    // loop's bare `turn_start`, `turn_end` without `turnIndex`, and pi-ai's stream events.
    let call = r#"{"type":"toolCall","id":"c1","name":"nope","arguments":{"n":1.5}}"#;
    // pi ≥ 0.84's wire form: delta-only, with the usage so far (spec §8.1).
    let expected_updates = [
        r#"{"type":"thinking_start","contentIndex":0}"#.to_owned(),
        r#"{"type":"thinking_delta","contentIndex":0,"delta":"hmm"}"#.to_owned(),
        r#"{"type":"thinking_end","contentIndex":0,"content":"hmm"}"#.to_owned(),
        r#"{"type":"toolcall_start","contentIndex":1,"id":"c1","toolName":"nope"}"#.to_owned(),
        r#"{"type":"toolcall_delta","contentIndex":1,"delta":"{\"n\":1.5}"}"#.to_owned(),
        format!(r#"{{"type":"toolcall_end","contentIndex":1,"toolCall":{call}}}"#),
        r#"{"type":"text_start","contentIndex":0}"#.to_owned(),
        r#"{"type":"text_delta","contentIndex":0,"delta":"hello"}"#.to_owned(),
        r#"{"type":"text_end","contentIndex":0,"content":"hello"}"#.to_owned(),
    ];
    let zero = r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
    let updates: Vec<&str> = raw
        .iter()
        .zip(&lines)
        .filter(|(_, e)| e["type"] == "message_update")
        .map(|(l, _)| *l)
        .collect();
    assert_eq!(updates.len(), expected_updates.len());
    for (line, event) in updates.into_iter().zip(expected_updates) {
        assert_eq!(
            line,
            format!(
                r#"{{"type":"message_update","usage":{zero},"assistantMessageEvent":{event}}}"#
            )
        );
    }
    // A turn ends with its assistant message and tool results, as their message_end had them.
    let mut ended: Vec<&str> = Vec::new();
    let mut turn_ends = 0;
    for (line, event) in raw.iter().zip(&lines) {
        match event["type"].as_str().unwrap() {
            "turn_start" => {
                assert_eq!(*line, r#"{"type":"turn_start"}"#);
                ended.clear();
            }
            "message_end" if event["message"]["role"] != "user" => ended.push(
                line.strip_prefix(r#"{"type":"message_end","message":"#)
                    .and_then(|m| m.strip_suffix('}'))
                    .unwrap(),
            ),
            "turn_end" => {
                turn_ends += 1;
                assert_eq!(
                    *line,
                    format!(
                        r#"{{"type":"turn_end","message":{},"toolResults":[{}]}}"#,
                        ended[0],
                        ended[1..].join(",")
                    )
                );
            }
            _ => {}
        }
    }
    assert_eq!(turn_ends, 3);
    assert_eq!(
        *raw.last().unwrap(),
        r#"{"type":"agent_settled","aborted":false}"#
    );
    let last = &lines[lines.len() - 2];
    assert_eq!(last["messages"][1]["errorMessage"], "400 bad request");
    // The error reply is a faux one: pi's faux provider writes `errorMessage` before
    // `timestamp`.
    let agent_end = raw[raw.len() - 2];
    assert!(
        agent_end.contains(r#""stopReason":"error","errorMessage":"400 bad request","timestamp":"#),
        "{agent_end}"
    );
}

#[test]
fn user_commands_are_recorded_and_double_bang_stays_out_of_the_context() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, script) = scripted(
        tmp.path(),
        r#"[{"content":[{"type":"text","text":"answer"}]}]"#,
    );
    pith(&agent, &cwd)
        .args(["-p", "--faux-script"])
        .arg(&script)
        .args(["!echo visible", "  !! echo hidden ", "question"])
        .assert()
        .success()
        .stdout("visible\nhidden\nanswer\n");
    let file = session_files(&agent).remove(0);
    let lines: Vec<serde_json::Value> = fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let messages: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["type"] == "message")
        .map(|l| &l["message"])
        .collect();
    let mut bash: Vec<serde_json::Value> = messages[..2].iter().map(|m| (*m).clone()).collect();
    for b in &mut bash {
        b.as_object_mut().unwrap().remove("timestamp");
    }
    assert_eq!(
        bash,
        [
            serde_json::json!({"role":"bashExecution","command":"echo visible","output":"visible\n",
                "exitCode":0,"cancelled":false,"truncated":false}),
            serde_json::json!({"role":"bashExecution","command":"echo hidden","output":"hidden\n",
                "exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":true}),
        ]
    );
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(messages[3]["role"], "assistant");
    // A failing command makes the exit status 1, and `!` alone is an ordinary prompt.
    pith(&agent, &cwd)
        .args(["-p", "-c", "--faux-script"])
        .arg(&script)
        .args(["!exit 3"])
        .assert()
        .code(1);
    pith(&agent, &cwd)
        .args(["-p", "-c", "--faux-script"])
        .arg(&script)
        .args(["!"])
        .assert()
        .success()
        .stdout("answer\n");
}

#[test]
fn file_arguments_and_trimmed_stdin_make_the_first_prompt() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, script) = scripted(
        tmp.path(),
        r#"[{"content":[{"type":"text","text":"r1"}]},{"content":[{"type":"text","text":"r2"}]}]"#,
    );
    fs::write(cwd.join("a.txt"), "file content\n").unwrap();
    fs::write(cwd.join("empty.txt"), "").unwrap();
    pith(&agent, &cwd)
        .args(["-p", "--faux-script"])
        .arg(&script)
        .args(["@a.txt", "question", "@empty.txt", "second"])
        .write_stdin("  piped line\n\n")
        .assert()
        .success()
        .stdout("r2\n");
    let file = session_files(&agent).remove(0);
    let users: Vec<String> = fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["message"]["role"] == "user")
        .map(|l| {
            l["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let path = fs::canonicalize(&cwd).unwrap().join("a.txt");
    assert_eq!(
        users,
        [
            format!(
                "piped line<file name=\"{}\">\nfile content\n\n</file>\nquestion",
                path.display()
            ),
            "second".to_owned()
        ]
    );
    pith(&agent, &cwd)
        .args(["-p", "--faux-script"])
        .arg(&script)
        .args(["@missing.txt", "q"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("File not found: "));
}

#[test]
fn an_interrupted_user_command_is_recorded_as_cancelled() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, script) =
        scripted(tmp.path(), r#"[{"content":[{"type":"text","text":"r1"}]}]"#);
    pith(&agent, &cwd)
        .args(["-p", "--faux-script"])
        .arg(&script)
        .arg("first")
        .assert()
        .success();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("pith"));
    for var in pith_llm::auth::KEY_VARS {
        child.env_remove(var);
    }
    let mut child = child
        .env("PITH_AGENT_DIR", &agent)
        .current_dir(&cwd)
        .args(["-p", "-c", "--faux-script"])
        .arg(&script)
        .args(["!echo started; touch ready; sleep 30", "never sent"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the command runs.
    let mut out = child.stdout.take().unwrap();
    let file = session_files(&agent).remove(0);
    let started = std::time::Instant::now();
    while !cwd.join("ready").exists() {
        assert!(
            started.elapsed().as_secs() < 20,
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let mut printed = String::new();
    std::io::Read::read_to_string(&mut out, &mut printed).unwrap();
    let last: serde_json::Value =
        serde_json::from_str(fs::read_to_string(&file).unwrap().lines().last().unwrap()).unwrap();
    let mut message = last["message"].clone();
    message.as_object_mut().unwrap().remove("timestamp");
    assert_eq!(
        message,
        serde_json::json!({"role":"bashExecution","command":"echo started; touch ready; sleep 30",
            "output":"started\n","cancelled":true,"truncated":false})
    );
}

#[test]
fn sigint_cancels_a_compaction_summary_and_writes_nothing() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    // The summary's reply would take ten minutes.
    let (agent, cwd, script) = scripted(
        tmp.path(),
        r#"[{"content":[{"type":"text","text":"r1"}]},{"content":[{"type":"text","text":"LATE"}],"delayMs":600000}]"#,
    );
    // Keeping 1 token keeps the reply: the prompt is summarized, as a split turn's prefix.
    keep_recent(&agent, 1);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("pith"));
    for var in pith_llm::auth::KEY_VARS {
        child.env_remove(var);
    }
    let mut child = child
        .env("PITH_AGENT_DIR", &agent)
        .current_dir(&cwd)
        .args(["-p", "--mode", "json", "--faux-script"])
        .arg(&script)
        .args(["one", "/compact", "never sent"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    // Print mode shows a compaction's events when it is over; the first prompt's end is the
    // last sign of life before the summary starts.
    for line in lines.by_ref() {
        if line.unwrap().contains(r#""type":"agent_end""#) {
            break;
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let signalled = std::time::Instant::now();
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = child.wait().unwrap();
    // Seconds, not the ten minutes of the summary (the 100 ms bound is the runtime's test).
    assert!(signalled.elapsed().as_secs() < 10);
    assert_eq!(status.code(), Some(130));
    let end: serde_json::Value = serde_json::from_str(
        rest.iter()
            .find(|l| l.contains(r#""type":"compaction_end""#))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        end,
        serde_json::json!({"type":"compaction_end","reason":"manual","aborted":true,"willRetry":false})
    );
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("pith: Compaction cancelled"), "{stderr}");
    let file = session_files(&agent).pop().unwrap();
    assert_eq!(
        kinds(&file),
        ["model_change", "thinking_level_change", "user", "assistant"]
    );
}

/// `pith -p … | true` and `pith --mode json … | head -c1`: a reader that went away is not a
/// crash; the run goes on, exits 0 and is saved in its session.
#[test]
fn a_reader_that_goes_away_neither_crashes_pith_nor_loses_the_run() {
    for mode in ["text", "json"] {
        let tmp = tempfile::tempdir().unwrap();
        let (agent, cwd, script) = scripted(
            tmp.path(),
            r#"[{"content":[{"type":"text","text":"first line\nsecond line"}]}]"#,
        );
        // The reader is gone before pith writes anything.
        let out = crate::output_with_reader_gone(
            std::process::Command::new(assert_cmd::cargo::cargo_bin("pith"))
                .env("PITH_AGENT_DIR", &agent)
                .current_dir(&cwd)
                .args(["--mode", mode, "-p", "--faux-script"])
                .arg(&script)
                .arg("hello"),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{mode}: {stderr}");
        assert!(!stderr.contains("panicked"), "{mode}: {stderr}");
        let file = &session_files(&agent)[0];
        assert_eq!(
            kinds(file),
            ["model_change", "thinking_level_change", "user", "assistant"],
            "{mode}"
        );
    }
}
