//! A server's life in a real run, on the probe server (the MCP Python SDK over stdio) in
//! print, json and rpc modes: a killed server reconnects on the next call, a hanging one
//! times out at its `timeout`, and nothing the server started outlives pith (checked by pid,
//! by the server's process group and by a marker in the command lines), SIGTERM included;
//! an rpc `abort` cancels a hanging call on the server.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::*;

/// A run of `replies` against the probe server (`timeout` seconds per call) with
/// `--session s-<mode>.jsonl`; returns the session's tool results. `root` is the marker: the
/// server's and its grandchildren's command lines hold it.
fn probe_run(root: &Path, mode: Mode, timeout: Option<u64>, replies: Value) -> Vec<Value> {
    let marker = root.display().to_string();
    let (agent, cwd) = setup(
        root,
        json!({"probe": probe_entry(&marker, &root.join("pid"), timeout)}),
    );
    let script = script(root, replies);
    let session = format!("s-{mode:?}.jsonl");
    let run = Run {
        agent: &agent,
        cwd: &cwd,
        args: vec![
            OsString::from("--session"),
            session.clone().into(),
            "--faux-script".into(),
            script.into(),
        ],
    };
    run.prompt(mode, "go", false);
    tool_results(&cwd.join(session))
}

fn pid_of(result: &Value) -> u32 {
    result["text"].as_str().unwrap().parse().unwrap()
}

#[test]
fn a_killed_server_reconnects_on_the_next_call() {
    for mode in MODES {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let kill = format!("kill -9 $(cat '{}')", root.join("pid").display());
        let results = probe_run(
            &root,
            mode,
            None,
            json!([
                calls(&[("p1", "mcp__probe__pid", json!({}))]),
                calls(&[("k", "bash", json!({"command": kill}))]),
                calls(&[("p2", "mcp__probe__pid", json!({}))]),
                text("done"),
            ]),
        );
        assert_eq!(results.len(), 3, "{mode:?}: {results:?}");
        assert_eq!(results[0]["isError"], false, "{mode:?}: {results:?}");
        assert_eq!(results[2]["isError"], false, "{mode:?}: {results:?}");
        let (first, second) = (pid_of(&results[0]), pid_of(&results[2]));
        assert_ne!(first, second, "{mode:?}: the same server answered");
        assert!(gone(first), "{mode:?}");
        assert!(
            eventually(|| processes_naming(&root.display().to_string()).is_empty()),
            "{mode:?}: left running: {:?}",
            processes_naming(&root.display().to_string())
        );
    }
}

#[test]
fn a_hanging_server_times_out_at_its_timeout_with_a_clear_error() {
    for mode in MODES {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let started = Instant::now();
        let results = probe_run(
            &root,
            mode,
            Some(1),
            json!([
                calls(&[("h", "mcp__probe__hang", json!({}))]),
                calls(&[("p", "mcp__probe__pid", json!({}))]),
                text("done"),
            ]),
        );
        // Connecting takes about a second, the call one more; far from the 60 s default.
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{mode:?}: {:?}",
            started.elapsed()
        );
        assert_eq!(
            results[0],
            json!({"id":"h","name":"mcp__probe__hang",
                   "text":"MCP tool probe/hang timed out after 1 s","isError":true}),
            "{mode:?}"
        );
        // The server still answers the next call.
        assert_eq!(results[1]["isError"], false, "{mode:?}: {results:?}");
        assert!(
            eventually(|| processes_naming(&root.display().to_string()).is_empty()),
            "{mode:?}: left running: {:?}",
            processes_naming(&root.display().to_string())
        );
    }
}

#[test]
fn no_server_process_or_grandchild_outlives_pith() {
    for mode in MODES {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let results = probe_run(
            &root,
            mode,
            None,
            json!([
                calls(&[
                    ("p", "mcp__probe__pid", json!({})),
                    ("c", "mcp__probe__spawn_child", json!({})),
                ]),
                text("done"),
            ]),
        );
        let (server, grandchild) = (pid_of(&results[0]), pid_of(&results[1]));
        // pith has exited: the server and the process it started are gone at once, and so
        // is everything of the server's process group (its guard leads it).
        assert!(
            gone(server),
            "{mode:?}: the server {server} is still running"
        );
        assert!(
            eventually(|| group_members(server).is_empty()),
            "{mode:?}: left in the server's group: {:?}",
            group_members(server)
        );
        assert!(
            eventually(|| gone(grandchild)),
            "{mode:?}: the grandchild {grandchild} is still running"
        );
        let left = processes_naming(&root.display().to_string());
        assert!(left.is_empty(), "{mode:?}: left running: {left:?}");
    }
}

#[test]
fn sigterm_during_a_hanging_call_leaves_no_server_behind() {
    for mode in [Mode::Print, Mode::Json] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let marker = root.display().to_string();
        let (agent, cwd) = setup(
            &root,
            json!({"probe": probe_entry(&marker, &root.join("pid"), None)}),
        );
        let script = script(
            &root,
            json!([
                calls(&[("c", "mcp__probe__spawn_child", json!({}))]),
                calls(&[("p", "mcp__probe__pid", json!({}))]),
                calls(&[("h", "mcp__probe__hang", json!({}))]),
                text("never"),
            ]),
        );
        let flag: &[&str] = if mode == Mode::Print {
            &["-p"]
        } else {
            &["--mode", "json"]
        };
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_pith"));
        for var in pith_llm::auth::KEY_VARS {
            cmd.env_remove(var);
        }
        let mut pith = cmd
            .env("PITH_AGENT_DIR", &agent)
            .current_dir(&cwd)
            .args(flag)
            .args(["--session", "s.jsonl", "--faux-script"])
            .arg(&script)
            .arg("go")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // The pid call wrote the file: the hanging call is next.
        assert!(eventually(|| root.join("pid").exists()), "{mode:?}");
        let server: u32 = std::fs::read_to_string(root.join("pid"))
            .unwrap()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(500));
        // The server's guard leads its own process group, with the server and the grandchild
        // in it.
        let group = group_of(server);
        assert_ne!(group, server, "{mode:?}: the guard leads the group");
        assert_eq!(group_members(group).len(), 3, "{mode:?}");
        let killed = std::process::Command::new("kill")
            .args(["-TERM", &pith.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let started = Instant::now();
        let status = loop {
            if let Some(status) = pith.try_wait().unwrap() {
                break status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "{mode:?}: pith did not exit"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.code().is_some(), "{mode:?}: {status:?}");
        assert!(gone(server), "{mode:?}: the server is still running");
        assert!(
            eventually(|| group_members(group).is_empty()),
            "{mode:?}: left in the server's group: {:?}",
            group_members(group)
        );
        assert!(
            eventually(|| processes_naming(&marker).is_empty()),
            "{mode:?}: left running: {:?}",
            processes_naming(&marker)
        );
        // The aborted call is in the session as an error result.
        let results = tool_results(&cwd.join("s.jsonl"));
        assert_eq!(results.len(), 3, "{mode:?}: {results:?}");
        assert_eq!(results[2]["isError"], true, "{mode:?}: {results:?}");
    }
}

#[test]
fn rpc_abort_cancels_a_hanging_call_on_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let marker = root.display().to_string();
    let (agent, cwd) = setup(
        &root,
        json!({"probe": probe_entry(&marker, &root.join("pid"), None)}),
    );
    let script = script(
        &root,
        json!([
            calls(&[("h", "mcp__probe__hang", json!({}))]),
            text("never")
        ]),
    );
    let mut rpc = Rpc::start(
        &agent,
        &cwd,
        &[
            OsString::from("--session"),
            "s.jsonl".into(),
            "--faux-script".into(),
            script.into(),
        ],
    );
    rpc.send(json!({"type":"prompt","message":"wait"}));
    // The call is running once its tool_execution_start is out.
    loop {
        if rpc.next()["type"] == "tool_execution_start" {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let answer = rpc.call("a", json!({"type":"abort"}));
    assert_eq!(answer["success"], true, "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        eventually(|| root.join("pid.cancelled").exists()),
        "the server was not told the call was cancelled"
    );
    assert!(rpc.close().success());
    let results = tool_results(&cwd.join("s.jsonl"));
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["isError"], true, "{results:?}");
    assert!(processes_naming(&marker).is_empty());
}
