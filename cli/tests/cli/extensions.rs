//! Extension processes as users run them: `pith -p --faux-script … -e EXT`, real Python and
//! Node children, the session file and the output checked (spec: extensions.md §4). The
//! fault injector (`extensions/fault.py`) proves that gates fail closed and that no session
//! line is lost when an extension hangs, crashes or writes garbage.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{Value, json};

use pith_tests::files::session_files;

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

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn fault_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/extensions/fault.py")
}

/// `agent/`, `work/` and the faux script under `root`.
fn setup(root: &Path, script: &Value) -> (PathBuf, PathBuf, PathBuf) {
    let (agent, cwd) = (root.join("agent"), root.join("work"));
    fs::create_dir_all(&cwd).unwrap();
    let file = root.join("script.json");
    fs::write(&file, script.to_string()).unwrap();
    (agent, cwd, file)
}

/// A directory holding an `extension.json` for the fault injector in `mode`.
fn fault_ext(root: &Path, mode: &str, intercept_ms: u64) -> (PathBuf, PathBuf) {
    let dir = root.join(format!("fault-{mode}"));
    fs::create_dir_all(&dir).unwrap();
    let log = root.join(format!("fault-{mode}.log"));
    let manifest = json!({
        "name": "fault", "version": "0", "protocol": 1,
        "command": ["python3", fault_script()],
        "env": {"FAULT_MODE": mode, "FAULT_LOG": log},
        "timeouts": {"interceptMs": intercept_ms}
    });
    fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
    (dir, log)
}

fn entries(file: &Path) -> Vec<Value> {
    fs::read_to_string(file)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tool_results(file: &Path) -> Vec<Value> {
    entries(file)
        .into_iter()
        .filter(|e| e["message"]["role"] == "toolResult")
        .map(|e| {
            json!({"id": e["message"]["toolCallId"], "text": e["message"]["content"][0]["text"],
                   "isError": e["message"]["isError"]})
        })
        .collect()
}

fn roles(file: &Path) -> Vec<String> {
    entries(file)
        .iter()
        .map(|e| match e["type"].as_str().unwrap() {
            "message" => e["message"]["role"].as_str().unwrap().to_owned(),
            t => t.to_owned(),
        })
        .collect()
}

fn bash_calls(calls: &[(&str, &str)]) -> Value {
    let blocks: Vec<Value> = calls
        .iter()
        .map(|(id, cmd)| json!({"type":"toolCall","id":id,"name":"bash","arguments":{"command":cmd}}))
        .collect();
    json!([{"content": blocks}, {"content":[{"type":"text","text":"done"}]}])
}

#[test]
fn the_python_permission_gate_blocks_a_dangerous_command_in_print_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, script) = setup(
        tmp.path(),
        &bash_calls(&[("c1", "rm -rf build"), ("c2", "echo ok")]),
    );
    let gate = repo().join("examples/extensions/python/permission_gate.py");
    pith(&agent, &cwd)
        .args(["-p", "--model", "faux/faux-1", "--faux-script"])
        .arg(&script)
        .arg("-e")
        .arg(&gate)
        .arg("clean up")
        .assert()
        .success()
        .stdout("done\n");
    let file = &session_files(&agent)[0];
    assert_eq!(
        tool_results(file),
        [
            json!({"id":"c1","text":"Dangerous command blocked (no UI to confirm)","isError":true}),
            json!({"id":"c2","text":"ok\n","isError":false}),
        ]
    );
    // pi's error tool result: details {} and nothing else.
    let blocked = entries(file)
        .into_iter()
        .find(|e| e["message"]["toolCallId"] == "c1")
        .unwrap();
    assert_eq!(blocked["message"]["details"], json!({}));
}

#[test]
fn a_hanging_gate_blocks_at_its_deadline_and_no_line_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, script) = setup(tmp.path(), &bash_calls(&[("c1", "echo hi")]));
    let (ext, _) = fault_ext(tmp.path(), "hang", 1000);
    let out = pith(&agent, &cwd)
        .args(["-p", "--model", "faux/faux-1", "--faux-script"])
        .arg(&script)
        .arg("-e")
        .arg(&ext)
        .arg("go")
        .assert()
        .success()
        .stdout("done\n");
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("extension fault (tool_call): extension gate did not answer within 1 s"),
        "{stderr}"
    );
    let file = &session_files(&agent)[0];
    assert_eq!(
        tool_results(file),
        [json!({"id":"c1","text":"extension gate did not answer within 1 s","isError":true})]
    );
    assert_eq!(
        roles(file),
        [
            "model_change",
            "thinking_level_change",
            "user",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
}

#[test]
fn a_gate_that_crashes_or_writes_garbage_blocks_and_is_restarted() {
    for mode in ["crash", "garbage", "longline"] {
        let tmp = tempfile::tempdir().unwrap();
        let script = json!([
            {"content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"echo one"}}]},
            {"content":[{"type":"toolCall","id":"c2","name":"flaky","arguments":{"n":2}}]},
            {"content":[{"type":"text","text":"done"}]}
        ]);
        let (agent, cwd, script) = setup(tmp.path(), &script);
        let (ext, log) = fault_ext(tmp.path(), mode, 30_000);
        pith(&agent, &cwd)
            .args(["-p", "--model", "faux/faux-1", "--faux-script"])
            .arg(&script)
            .arg("-e")
            .arg(&ext)
            .arg("go")
            .assert()
            .success()
            .stdout("done\n");
        let file = &session_files(&agent)[0];
        let results = tool_results(file);
        assert_eq!(results.len(), 2, "{mode}: {results:?}");
        assert_eq!(
            results[0]["isError"], true,
            "{mode}: the gate failed closed"
        );
        assert!(
            results[0]["text"]
                .as_str()
                .unwrap()
                .starts_with("extension `fault` "),
            "{mode}: {results:?}"
        );
        // The restarted process serves its tool again.
        assert_eq!(
            results[1],
            json!({"id":"c2","text":"flaky ok","isError":false}),
            "{mode}"
        );
        let seen: Vec<Value> = fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let starts: Vec<&Value> = seen
            .iter()
            .filter(|v| v["event"] == "session_start")
            .collect();
        assert_eq!(
            starts.last().unwrap()["reason"],
            "restart",
            "{mode}: {seen:?}"
        );
        assert_eq!(
            seen.iter().filter(|v| v.get("pid").is_some()).count(),
            2,
            "{mode}"
        );
    }
}

#[test]
fn a_crash_in_the_middle_of_a_tool_call_is_an_error_result_naming_the_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!([
        {"content":[{"type":"toolCall","id":"c1","name":"flaky","arguments":{"n":1}}]},
        {"content":[{"type":"toolCall","id":"c2","name":"flaky","arguments":{"n":"x"}}]},
        {"content":[{"type":"text","text":"done"}]}
    ]);
    let (agent, cwd, script) = setup(tmp.path(), &script);
    let (ext, _) = fault_ext(tmp.path(), "tool", 30_000);
    pith(&agent, &cwd)
        .args(["-p", "--model", "faux/faux-1", "--faux-script"])
        .arg(&script)
        .arg("-e")
        .arg(&ext)
        .arg("go")
        .assert()
        .success()
        .stdout("done\n");
    let file = &session_files(&agent)[0];
    let results = tool_results(file);
    assert_eq!(
        results[0],
        json!({"id":"c1","text":"extension `fault` exited (status 3): fault: dying mid-call","isError":true})
    );
    // Arguments are checked against the tool's schema before anything runs (pi's text).
    assert_eq!(
        results[1]["text"],
        "Validation failed for tool \"flaky\":\n  - n: must be integer\n\nReceived arguments:\n{\n  \"n\": \"x\"\n}"
    );
    // stderr went to the rotated log under the agent dir.
    let log = fs::read_to_string(agent.join("logs/extensions/fault.log")).unwrap();
    assert!(log.contains("fault: dying mid-call"), "{log}");
}

#[test]
fn three_crashes_in_a_minute_disable_the_extension_and_the_session_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let turn = |id: &str| json!({"content":[{"type":"toolCall","id":id,"name":"bash","arguments":{"command":format!("echo {id}")}}]});
    let script = json!([turn("c1"), turn("c2"), turn("c3"), turn("c4"),
        {"content":[{"type":"text","text":"done"}]}]);
    let (agent, cwd, script) = setup(tmp.path(), &script);
    let (ext, _) = fault_ext(tmp.path(), "crash", 30_000);
    let out = pith(&agent, &cwd)
        .args(["-p", "--model", "faux/faux-1", "--faux-script"])
        .arg(&script)
        .arg("-e")
        .arg(&ext)
        .arg("go")
        .assert()
        .success()
        .stdout("done\n");
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("crashed 3 times within 60 s; disabled for this session"),
        "{stderr}"
    );
    let file = &session_files(&agent)[0];
    let errors: Vec<bool> = tool_results(file)
        .iter()
        .map(|r| r["isError"].as_bool().unwrap())
        .collect();
    // Three gates failed closed; once disabled, the extension no longer gates.
    assert_eq!(errors, [true, true, true, false]);
}

#[test]
fn lint_on_edit_appends_its_findings_to_the_result_the_model_sees() {
    let tmp = tempfile::tempdir().unwrap();
    let write = |id: &str, path: &str, content: &str| json!({"type":"toolCall","id":id,"name":"write","arguments":{"path":path,"content":content}});
    let script = json!([
        {"content":[write("w1", "bad.py", "def f(:\n"), write("w2", "notes.txt", "fine  \nok\n")]},
        {"content":[{"type":"text","text":"done"}]}
    ]);
    let (agent, cwd, script) = setup(tmp.path(), &script);
    let lint = repo().join("examples/extensions/python/lint_on_edit.py");
    pith(&agent, &cwd)
        .args(["-p", "--model", "faux/faux-1", "--faux-script"])
        .arg(&script)
        .arg("-e")
        .arg(&lint)
        .arg("write them")
        .assert()
        .success();
    let file = &session_files(&agent)[0];
    let results: Vec<Value> = entries(file)
        .into_iter()
        .filter(|e| e["message"]["role"] == "toolResult")
        .map(|e| e["message"].clone())
        .collect();
    let texts = |m: &Value| -> Vec<String> {
        m["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["text"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(texts(&results[0])[0], "Successfully wrote to bad.py");
    assert!(
        texts(&results[0])[1].starts_with("lint:\n"),
        "{:?}",
        texts(&results[0])
    );
    assert_eq!(results[0]["details"], json!({"lint": {"ok": false}}));
    assert_eq!(
        texts(&results[1]),
        [
            "Successfully wrote to notes.txt",
            "lint:\nnotes.txt:1: trailing whitespace"
        ]
    );
}

#[test]
fn the_node_todo_tool_keeps_its_state_in_details_across_a_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let todo = |id: &str, args: Value| json!({"content":[{"type":"toolCall","id":id,"name":"todo","arguments":args}]});
    let first = json!([
        todo("t1", json!({"action":"add","text":"write tests"})),
        todo("t2", json!({"action":"add","text":"ship"})),
        todo("t3", json!({"action":"toggle","index":1})),
        {"content":[{"type":"text","text":"planned"}]}
    ]);
    let (agent, cwd, script) = setup(tmp.path(), &first);
    let ext = repo().join("examples/extensions/node/todo.mjs");
    pith(&agent, &cwd)
        .args(["-p", "--model", "faux/faux-1", "--faux-script"])
        .arg(&script)
        .arg("-e")
        .arg(&ext)
        .arg("plan")
        .assert()
        .success()
        .stdout("planned\n");
    // A new pith process, a new extension process: the list comes back from the branch.
    let second = tmp.path().join("second.json");
    fs::write(
        &second,
        json!([todo("t4", json!({"action":"list"})), {"content":[{"type":"text","text":"ok"}]}])
            .to_string(),
    )
    .unwrap();
    pith(&agent, &cwd)
        .args(["-p", "-c", "--model", "faux/faux-1", "--faux-script"])
        .arg(&second)
        .arg("-e")
        .arg(&ext)
        .arg("what is left?")
        .assert()
        .success()
        .stdout("ok\n");
    let file = &session_files(&agent)[0];
    let last = tool_results(file).pop().unwrap();
    assert_eq!(
        last,
        json!({"id":"t4","text":"1. [x] write tests\n2. [ ] ship","isError":false})
    );
}

#[test]
fn a_project_extension_runs_only_once_trusted_and_is_skipped_when_it_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, script) = setup(tmp.path(), &json!([]));
    let dir = cwd.join(".pith/extensions/fault");
    fs::create_dir_all(&dir).unwrap();
    let log = tmp.path().join("spawned.log");
    let manifest = |mode: &str| {
        json!({"name":"fault","command":["python3", fault_script()],
               "env":{"FAULT_MODE": mode, "FAULT_LOG": log}})
        .to_string()
    };
    fs::write(dir.join("extension.json"), manifest("ok")).unwrap();
    let run = |extra: &[&str]| {
        let out = pith(&agent, &cwd)
            .args(["-p", "--model", "faux/faux-1", "--faux-script"])
            .arg(&script)
            .args(extra)
            .arg("hi")
            .assert()
            .success();
        String::from_utf8_lossy(&out.get_output().stderr).into_owned()
    };
    // Not trusted: never spawned, and the user is told what did not run.
    let stderr = run(&[]);
    assert!(!log.exists(), "spawned before the trust decision");
    assert!(
        stderr.contains("project extension extensions/fault (python3 ")
            && stderr.contains("not run: the project is not trusted (use --approve)"),
        "{stderr}"
    );
    // --approve trusts it (and remembers).
    run(&["--approve"]);
    assert!(log.exists());
    fs::remove_file(&log).unwrap();
    run(&[]);
    assert!(
        log.exists(),
        "a trusted project's extension runs without the flag"
    );
    fs::remove_file(&log).unwrap();
    // Changed: skipped, with a warning naming it, until trusted again.
    fs::write(dir.join("extension.json"), manifest("hang")).unwrap();
    let stderr = run(&[]);
    assert!(!log.exists());
    assert!(
        stderr.contains("project extension extensions/fault (python3 ")
            && stderr.contains("changed since the project was trusted"),
        "{stderr}"
    );
    run(&["--no-approve"]);
    assert!(!log.exists());
}

#[test]
fn the_node_rules_injector_transforms_input_injects_a_message_and_handles_a_command() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, script) = setup(
        tmp.path(),
        &json!([{"content":[{"type":"text","text":"answered"}]}]),
    );
    fs::write(cwd.join("RULES.md"), "Use tabs.\n").unwrap();
    let ext = repo().join("examples/extensions/node/rules.mjs");
    pith(&agent, &cwd)
        .args(["-p", "--model", "faux/faux-1", "--faux-script"])
        .arg(&script)
        .arg("-e")
        .arg(&ext)
        .arg("?? monads")
        .assert()
        .success()
        .stdout("answered\n");
    let file = &session_files(&agent)[0];
    let all = entries(file);
    let user = all.iter().find(|e| e["message"]["role"] == "user").unwrap();
    assert_eq!(
        user["message"]["content"][0]["text"],
        "Explain briefly: monads"
    );
    let injected: Vec<&Value> = all
        .iter()
        .filter(|e| e["type"] == "custom_message")
        .collect();
    assert_eq!(injected.len(), 1);
    assert_eq!(injected[0]["customType"], "rules");
    assert_eq!(injected[0]["content"], "Remember the project rules.");
    assert_eq!(injected[0]["display"], false);
    assert_eq!(
        roles(file),
        [
            "model_change",
            "thinking_level_change",
            "user",
            "custom_message",
            "assistant"
        ]
    );
    // Handled: nothing reaches the model or the file.
    pith(&agent, &cwd)
        .args(["-p", "-c", "--model", "faux/faux-1", "-e"])
        .arg(&ext)
        .arg("/ping")
        .assert()
        .success();
    assert_eq!(roles(file).len(), 5);
}

#[test]
fn extension_check_runs_the_handshake_and_fails_on_a_broken_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, _) = setup(tmp.path(), &json!([]));
    let gate = repo().join("examples/extensions/python/permission_gate.py");
    pith(&agent, &cwd)
        .args(["extension", "check"])
        .arg(&gate)
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "ok: permission_gate speaks PXP/1 (0 tools, 0 commands)",
        ));
    let todo = repo().join("examples/extensions/node/todo.mjs");
    pith(&agent, &cwd)
        .args(["extension", "check"])
        .arg(&todo)
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "ok: todo speaks PXP/1 (1 tools, 1 commands)",
        ));
    let (broken, _) = fault_ext(tmp.path(), "garbage", 1000);
    pith(&agent, &cwd)
        .args(["extension", "check"])
        .arg(&broken)
        .assert()
        .failure()
        .stderr(predicates::str::contains(
            "not a JSON-RPC line: this is not json",
        ));
    // `list` shows what would load, in load order.
    pith(&agent, &cwd)
        .args(["extension", "list", "-e"])
        .arg(&gate)
        .assert()
        .success()
        .stdout(format!("permission_gate\tcli\t{}\n", gate.display()));
}

#[test]
fn send_message_during_a_run_is_steered_after_the_tool_results_not_between_them() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, script) = setup(
        tmp.path(),
        &bash_calls(&[("c1", "echo one"), ("c2", "echo two")]),
    );
    let notes = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/extensions/notes.py");
    pith(&agent, &cwd)
        .args(["-p", "--model", "faux/faux-1", "--faux-script"])
        .arg(&script)
        .arg("-e")
        .arg(&notes)
        .arg("go")
        .assert()
        .success()
        .stdout("done\n");
    let file = &session_files(&agent)[0];
    assert_eq!(
        roles(file),
        [
            "model_change",
            "thinking_level_change",
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "custom_message",
            "custom_message",
            "assistant"
        ]
    );
}

#[test]
fn a_gate_whose_manifest_says_allow_lets_the_call_through_when_it_hangs() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd, script) = setup(tmp.path(), &bash_calls(&[("c1", "echo hi")]));
    let (ext, _) = fault_ext(tmp.path(), "hang", 500);
    let manifest = ext.join("extension.json");
    let mut m: Value = serde_json::from_str(&fs::read_to_string(&manifest).unwrap()).unwrap();
    m["onFailure"] = json!("allow");
    fs::write(&manifest, m.to_string()).unwrap();
    pith(&agent, &cwd)
        .args(["-p", "--model", "faux/faux-1", "--faux-script"])
        .arg(&script)
        .arg("-e")
        .arg(&ext)
        .arg("go")
        .assert()
        .success()
        .stdout("done\n");
    let file = &session_files(&agent)[0];
    assert_eq!(
        tool_results(file),
        [json!({"id":"c1","text":"hi\n","isError":false})]
    );
}

/// Runs `timed_tools.py` (its `slow` tool declared `slow_mode`) under `pith --mode json` on a
/// mock model that calls `slow` then `quick` in one turn; returns the tool events as
/// `start:<id>`/`end:<id>` and the system prompt of the first request.
fn timed_tools_run(slow_mode: &str) -> (Vec<String>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("work"));
    fs::create_dir_all(&cwd).unwrap();
    let call = |id: &str, name: &str| json!({"id": id, "name": name, "arguments": {}});
    let mock = pith_tests::pi_oracle::MockLlm::start(
        tmp.path(),
        "mock",
        &json!([{"text": "", "tool_calls": [call("s1", "slow"), call("q1", "quick")]},
                {"text": "done"}]),
    );
    pith_tests::files::write(
        &agent.join("models.json"),
        json!({"providers": {"mock": {"baseUrl": mock.url, "api": "openai-completions",
            "apiKey": "none", "models": [{"id": "mock-1"}]}}})
        .to_string(),
    );
    let ext = tmp.path().join("timed");
    fs::create_dir_all(&ext).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/extensions/timed_tools.py");
    fs::write(
        ext.join("extension.json"),
        json!({"name": "timed", "version": "0", "protocol": 1,
               "command": ["python3", script], "env": {"TIMED_SLOW_MODE": slow_mode}})
        .to_string(),
    )
    .unwrap();
    let out = pith(&agent, &cwd)
        .args(["--mode", "json", "-p", "--model", "mock/mock-1", "-e"])
        .arg(&ext)
        .arg("go")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|e| match e["type"].as_str() {
            Some("tool_execution_start") => Some(format!("start:{}", e["toolCallId"].as_str()?)),
            Some("tool_execution_end") => Some(format!("end:{}", e["toolCallId"].as_str()?)),
            _ => None,
        })
        .collect();
    let first = mock.request_bodies().remove(0);
    let system = first["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (events, system)
}

/// extensions.md §1.2 "Tools": a tool's `promptSnippet` is listed under `<tools>` and its
/// `promptGuidelines` under `<rules>` (normalised as pi does: one line, trimmed, no repeats),
/// a tool without a snippet is not listed; a `sequential` tool makes its turn's calls run one
/// at a time, each ended before the next starts (pi's `executeToolCalls`).
#[test]
fn extension_tools_add_their_snippets_and_guidelines_and_sequential_ones_run_alone() {
    let (events, system) = timed_tools_run("sequential");
    assert_eq!(events, ["start:s1", "end:s1", "start:q1", "end:q1"]);
    let tools = system
        .split("<tools>\n")
        .nth(1)
        .and_then(|t| t.split("\n</tools>").next())
        .unwrap_or_default();
    assert!(
        tools.ends_with("- slow: Wait a little\n\nAdditional tools may be available."),
        "{tools}"
    );
    assert!(!tools.contains("quick"), "{tools}");
    let rules = system
        .split("<rules>\n")
        .nth(1)
        .and_then(|t| t.split("\n</rules>").next())
        .unwrap_or_default();
    assert_eq!(
        rules.matches("- Call slow before quick\n").count(),
        1,
        "{rules}"
    );
    assert!(rules.ends_with("- Call slow before quick\n- Be concise in your responses\n- Show file paths clearly when working with files"), "{rules}");

    // Parallel (the default): the quick call ends while the slow one still runs.
    let (events, _) = timed_tools_run("parallel");
    assert_eq!(events, ["start:s1", "start:q1", "end:q1", "end:s1"]);
}

/// A `/reload` that finds a new extension rebuilds the system prompt: the next request lists
/// the new tool's snippet (pi rebuilds its prompt on reload too).
#[test]
fn a_reload_puts_a_new_extension_tool_into_the_system_prompt() {
    use std::io::{BufRead, BufReader, Write};
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("work"));
    fs::create_dir_all(&cwd).unwrap();
    let mock = pith_tests::pi_oracle::MockLlm::start(
        tmp.path(),
        "mock",
        &json!([{"text": "one"}, {"text": "two"}]),
    );
    pith_tests::files::write(
        &agent.join("models.json"),
        json!({"providers": {"mock": {"baseUrl": mock.url, "api": "openai-completions",
            "apiKey": "none", "models": [{"id": "mock-1"}]}}})
        .to_string(),
    );
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("pith"))
        .env("PITH_AGENT_DIR", &agent)
        .env_remove("OPENAI_API_KEY")
        .current_dir(&cwd)
        .args(["--mode", "rpc", "--model", "mock/mock-1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut until = |stop: &dyn Fn(&Value) -> bool| loop {
        let line = lines.next().expect("pith ended early").unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        if stop(&v) {
            return v;
        }
    };
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    send(json!({"type": "prompt", "message": "before"}));
    until(&|v| v["type"] == "agent_settled");
    let ext = agent.join("extensions/timed");
    fs::create_dir_all(&ext).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/extensions/timed_tools.py");
    fs::write(
        ext.join("extension.json"),
        json!({"name": "timed", "version": "0", "protocol": 1, "command": ["python3", script]})
            .to_string(),
    )
    .unwrap();
    send(json!({"id": "r", "type": "reload"}));
    let answer = until(&|v| v["type"] == "response");
    assert_eq!(answer["data"], json!({"reloaded": ["timed"]}));
    send(json!({"type": "prompt", "message": "after"}));
    until(&|v| v["type"] == "agent_settled");
    // End of input ends pith.
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let systems: Vec<String> = mock
        .request_bodies()
        .iter()
        .map(|b| {
            b["messages"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(systems.len(), 2);
    assert!(
        !systems[0].contains("- slow: Wait a little"),
        "{}",
        systems[0]
    );
    assert!(
        systems[1].contains("- slow: Wait a little"),
        "{}",
        systems[1]
    );
}
