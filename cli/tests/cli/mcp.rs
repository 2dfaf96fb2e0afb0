//! MCP servers from `mcp.json` in a real `pith` run: `@modelcontextprotocol/server-filesystem`
//! from npm and a probe server on the MCP Python SDK (scripts/install-mcp-servers puts both
//! under target/mcp-servers), as users run them.
//!
//! - this file: scripted calls reaching the published servers (npm, PyPI) and a streamable
//!   HTTP server on the loopback in each mode, `pith mcp list`;
//! - `gates`: a gate extension blocking destructive MCP tools, read-only ones passing;
//! - `servers`: a killed server reconnecting, a hanging one timing out, nothing left running;
//! - `commands`: `/mcp` through rpc's `mcp` command (status, reconnect, enable, disable),
//!   servers kept across `/new`, `--no-mcp`.

mod commands;
mod gates;
mod servers;
pub(crate) mod support;

use std::fs;
use std::time::Duration;

use serde_json::{Value, json};

use support::{MODES, Run, calls, mcp_servers_dir, probe_entry, script, setup, text, tool_results};
use support::{filesystem_server, pith, processes_naming};

#[test]
fn a_scripted_call_of_an_mcp_tool_reaches_the_server_and_lands_in_the_session() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("repo"));
    fs::create_dir_all(&agent).unwrap();
    fs::create_dir_all(&cwd).unwrap();
    fs::write(cwd.join("notes.txt"), "the secret is 42\n").unwrap();
    // `pith mcp add`, as the README shows it.
    pith(&agent, &cwd)
        .args(["mcp", "add", "filesystem", "--"])
        .arg(filesystem_server())
        .arg(&cwd)
        .assert()
        .success()
        .stdout(predicates::str::contains(format!(
            r#"Added global MCP server "filesystem" in {}."#,
            agent.join("mcp.json").display()
        )));
    let script = tmp.path().join("script.json");
    fs::write(
        &script,
        serde_json::to_string(&json!([
            {"content":[{"type":"toolCall","id":"tc1","name":"mcp__filesystem__read_text_file",
                         "arguments":{"path": cwd.join("notes.txt")}}]},
            {"content":[{"type":"text","text":"read it"}]}
        ]))
        .unwrap(),
    )
    .unwrap();
    pith(&agent, &cwd)
        .args(["-p", "--session", "s.jsonl", "--faux-script"])
        .arg(&script)
        .arg("read my notes")
        .assert()
        .success()
        .stdout("read it\n");
    let entries: Vec<Value> = fs::read_to_string(cwd.join("s.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let result = entries
        .iter()
        .find(|e| e["message"]["role"] == "toolResult")
        .expect("a toolResult entry");
    assert_eq!(
        result["message"]["toolName"],
        "mcp__filesystem__read_text_file"
    );
    assert_eq!(result["message"]["isError"], false);
    assert_eq!(
        result["message"]["content"],
        json!([{"type":"text","text":"the secret is 42\n"}])
    );
    assert_eq!(result["message"]["details"]["server"], json!("filesystem"));
    // The server went with pith.
    let left = processes_naming(&cwd.display().to_string());
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn mcp_list_connects_reports_a_broken_entry_and_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("repo"));
    fs::create_dir_all(&agent).unwrap();
    fs::create_dir_all(cwd.join(".pith")).unwrap();
    fs::write(
        agent.join("mcp.json"),
        serde_json::to_string(&json!({"mcpServers":{
            "filesystem":{"command": filesystem_server(), "args":[&cwd]},
            "broken":{"command":"/nonexistent/server"},
            "typo":{"command":"x","args":"not a list"}}}))
        .unwrap(),
    )
    .unwrap();
    fs::write(
        cwd.join(".pith/mcp.json"),
        r#"{"mcpServers":{"filesystem":{"enabled":false}}}"#,
    )
    .unwrap();
    let out = pith(&agent, &cwd).args(["mcp", "list"]).assert().code(1);
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("filesystem: connected, "), "{stdout}");
    assert!(
        lines[2].starts_with("  tools: read_file, read_text_file, "),
        "{stdout}"
    );
    assert_eq!(lines[3], "broken: failed");
    assert_eq!(lines[4], "  /nonexistent/server");
    assert_eq!(
        lines[5],
        "  could not start /nonexistent/server: No such file or directory (os error 2)"
    );
    assert_eq!(
        lines[6],
        format!(
            r#"config error: {}: server "typo": args must be an array of strings"#,
            agent.join("mcp.json").display()
        )
    );
    assert_eq!(
        lines[7],
        format!(
            "{} is ignored because the project is not trusted (use --approve).",
            cwd.join(".pith/mcp.json").display()
        )
    );
    // Trusted, the project turns the filesystem server off.
    let out = pith(&agent, &cwd)
        .args(["mcp", "list", "--approve", "--json"])
        .assert()
        .code(1);
    let listed: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(listed["servers"][0]["state"], "disabled");
    assert_eq!(listed["servers"][1]["state"], "failed");
    pith(&agent, &cwd)
        .args(["mcp", "remove", "broken"])
        .assert()
        .success();
    let left = processes_naming(&cwd.display().to_string());
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn json_mode_waits_for_a_slow_server_before_the_first_request() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("repo"));
    fs::create_dir_all(&agent).unwrap();
    fs::create_dir_all(&cwd).unwrap();
    fs::write(cwd.join("a.txt"), "alpha").unwrap();
    // The server takes 2 s to start: the first request waits for it (at most 10 s).
    fs::write(
        agent.join("mcp.json"),
        serde_json::to_string(&json!({"mcpServers":{"slow-fs":{
            "command":"sh",
            "args":["-c", format!("sleep 2; exec '{}' '{}'", filesystem_server().display(), cwd.display())]}}}))
        .unwrap(),
    )
    .unwrap();
    let script = tmp.path().join("script.json");
    fs::write(
        &script,
        serde_json::to_string(&json!([
            {"content":[{"type":"toolCall","id":"tc1","name":"mcp__slow_fs__list_directory",
                         "arguments":{"path": cwd}}]},
            {"content":[{"type":"text","text":"listed"}]}
        ]))
        .unwrap(),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = pith(&agent, &cwd)
        .args(["--mode", "json", "--no-session", "--faux-script"])
        .arg(&script)
        .arg("list")
        .assert()
        .success();
    assert!(started.elapsed() >= Duration::from_secs(2));
    let events: Vec<Value> = String::from_utf8(out.get_output().stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .expect("a tool_execution_end event");
    assert_eq!(end["toolName"], "mcp__slow_fs__list_directory");
    assert_eq!(end["isError"], false);
    assert_eq!(
        end["result"]["content"],
        json!([{"type":"text","text":"[FILE] a.txt"}])
    );
    assert_eq!(end["result"]["details"]["server"], "slow-fs");
    let left = processes_naming(&cwd.display().to_string());
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn rpc_mode_runs_an_mcp_tool_and_the_result_lands_in_the_session() {
    use std::io::{BufRead, BufReader, Write};
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("repo"));
    fs::create_dir_all(&agent).unwrap();
    fs::create_dir_all(&cwd).unwrap();
    fs::write(cwd.join("b.txt"), "bravo").unwrap();
    fs::write(
        agent.join("mcp.json"),
        serde_json::to_string(
            &json!({"mcpServers":{"fs":{"command": filesystem_server(), "args":[&cwd]}}}),
        )
        .unwrap(),
    )
    .unwrap();
    let script = tmp.path().join("script.json");
    fs::write(
        &script,
        serde_json::to_string(&json!([
            {"content":[{"type":"toolCall","id":"tc1","name":"mcp__fs__read_text_file",
                         "arguments":{"path": cwd.join("b.txt")}}]},
            {"content":[{"type":"text","text":"ok"}]}
        ]))
        .unwrap(),
    )
    .unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_pith"));
    for var in pith_llm::auth::KEY_VARS {
        cmd.env_remove(var);
    }
    let mut child = cmd
        .env("PITH_AGENT_DIR", &agent)
        .current_dir(&cwd)
        .args(["--mode", "rpc", "--session", "r.jsonl", "--faux-script"])
        .arg(&script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, r#"{{"type":"prompt","message":"read b"}}"#).unwrap();
    let mut ends = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if event["type"] == "tool_execution_end" {
            ends.push(event.clone());
        }
        if event["type"] == "agent_end" {
            break;
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(ends.len(), 1);
    assert_eq!(
        ends[0]["result"]["content"],
        json!([{"type":"text","text":"bravo"}])
    );
    let file = fs::read_to_string(cwd.join("r.jsonl")).unwrap();
    let result: Value = file
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["message"]["role"] == "toolResult")
        .unwrap();
    assert_eq!(
        result["message"]["content"],
        json!([{"type":"text","text":"bravo"}])
    );
    let left = processes_naming(&cwd.display().to_string());
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn mcp_list_reports_a_file_that_is_not_json_and_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("repo"));
    fs::create_dir_all(&agent).unwrap();
    fs::create_dir_all(&cwd).unwrap();
    fs::write(
        agent.join("mcp.json"),
        "{\"mcpServers\": {\"fs\": {\"command\": ",
    )
    .unwrap();
    let out = pith(&agent, &cwd).args(["mcp", "list"]).assert().code(1);
    assert_eq!(
        String::from_utf8(out.get_output().stdout.clone()).unwrap(),
        format!(
            "config error: {}: EOF while parsing a value at line 1 column 34\n",
            agent.join("mcp.json").display()
        )
    );
    // A session run reports it on stderr and goes on without the servers.
    let out = pith(&agent, &cwd)
        .args(["-p", "--no-session", "hi"])
        .assert()
        .success();
    assert!(
        String::from_utf8(out.get_output().stderr.clone())
            .unwrap()
            .contains(&format!(
                "pith: MCP config error: {}: EOF while parsing",
                agent.join("mcp.json").display()
            )),
        "{:?}",
        out.get_output()
    );
}

#[test]
fn the_pypi_time_server_and_a_loopback_http_server_answer_in_every_mode() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    // The HTTP server runs on its own, as a remote one would: pith only connects to it.
    let entry = probe_entry(&root.display().to_string(), &root.join("pid"), None);
    let mut http = std::process::Command::new(entry["command"].as_str().unwrap())
        .args(
            entry["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap()),
        )
        .arg("--http")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(http.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let port = first.trim().strip_prefix("listening ").expect("the port");
    // Started through a link under `root`, so its command line names `root` (other tests
    // may run the time server meanwhile).
    let time = root.join("mcp-server-time");
    std::os::unix::fs::symlink(mcp_servers_dir().join("venv/bin/mcp-server-time"), &time).unwrap();
    let (agent, cwd) = setup(
        &root,
        json!({
            "time": {"command": time,
                     "args": ["--local-timezone", "UTC"]},
            "web": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}
        }),
    );
    let script = script(
        &root,
        json!([
            calls(&[
                (
                    "t",
                    "mcp__time__get_current_time",
                    json!({"timezone": "UTC"})
                ),
                ("w", "mcp__web__pid", json!({})),
            ]),
            text("done"),
        ]),
    );
    for mode in MODES {
        let session = format!("{mode:?}.jsonl");
        let run = Run {
            agent: &agent,
            cwd: &cwd,
            args: vec![
                "--session".into(),
                session.clone().into(),
                "--faux-script".into(),
                script.clone().into(),
            ],
        };
        run.prompt(mode, "what time is it", false);
        let results = tool_results(&cwd.join(&session));
        assert_eq!(results.len(), 2, "{mode:?}: {results:?}");
        assert_eq!(results[0]["isError"], false, "{mode:?}: {results:?}");
        let told: Value = serde_json::from_str(results[0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(told["timezone"], "UTC", "{mode:?}: {results:?}");
        // The HTTP call reached the server we started.
        assert_eq!(
            results[1],
            json!({"id":"w","name":"mcp__web__pid","text":http.id().to_string(),"isError":false}),
            "{mode:?}"
        );
        let left = processes_naming(&time.display().to_string());
        assert!(left.is_empty(), "{mode:?}: left running: {left:?}");
    }
    let _ = http.kill();
    let _ = http.wait();
}
