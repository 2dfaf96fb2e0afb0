//! `/mcp` through rpc's `mcp` command: the servers' states, reconnect, enable and disable
//! (saved in `mcp.json` as pi 1.6.0 saves them), on the probe server; servers living across
//! `/new`; `--no-mcp`.

use std::ffi::OsString;
use std::fs;

use serde_json::{Value, json};

use super::support::*;

#[test]
fn rpc_mcp_shows_reconnects_disables_and_enables_a_server() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let marker = root.display().to_string();
    let pidfile = root.join("pid");
    let entry = probe_entry(&marker, &pidfile, None);
    let (agent, cwd) = setup(&root, json!({ "probe": entry }));
    let pid_call = |id: &str| calls(&[(id, "mcp__probe__pid", json!({}))]);
    let script = script(
        &root,
        json!([
            pid_call("a"),
            text("a"),
            pid_call("b"),
            text("b"),
            pid_call("c"),
            text("c"),
            pid_call("d"),
            text("d")
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
    let pid = || -> u32 { fs::read_to_string(&pidfile).unwrap().parse().unwrap() };
    let saved = || -> Value {
        serde_json::from_str::<Value>(&fs::read_to_string(agent.join("mcp.json")).unwrap()).unwrap()
            ["mcpServers"]["probe"]
            .clone()
    };
    // The states, once the servers' first attempt is over (pi's `/mcp` waits too).
    let transport: Vec<&str> = std::iter::once(entry["command"].as_str().unwrap())
        .chain(
            entry["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap()),
        )
        .collect();
    let probe = |state: &str, enabled: bool| {
        json!({"name":"probe","source":agent.join("mcp.json"),"enabled":enabled,
               "transport":transport.join(" "),"state":state,
               "tools": if enabled { json!(["pid","hang","nap","die","spawn_child"]) } else { json!([]) }})
    };
    assert_eq!(
        rpc.call("1", json!({"type":"mcp"})),
        json!({"type":"response","id":"1","command":"mcp","success":true,
               "data":{"servers":[probe("connected", true)]}})
    );
    rpc.prompt("a");
    let first = pid();
    // Reconnect: a new server process, the old one gone.
    assert_eq!(
        rpc.call(
            "2",
            json!({"type":"mcp","action":"reconnect","server":"probe"})
        )["data"],
        json!({"servers":[probe("connected", true)],
               "message":r#"Reconnected to MCP server "probe" (connected, 5 tools)."#})
    );
    assert!(gone(first));
    rpc.prompt("b");
    let second = pid();
    assert_ne!(first, second);
    // Disable: stopped, its tools gone, saved.
    assert_eq!(
        rpc.call(
            "3",
            json!({"type":"mcp","action":"disable","server":"probe"})
        )["data"],
        json!({"servers":[probe("disabled", false)],
               "message":r#"Disabled MCP server "probe"."#})
    );
    assert!(gone(second));
    assert_eq!(saved()["enabled"], json!(false));
    rpc.prompt("c");
    // Enable: started again, saved (pi drops the default `enabled`).
    assert_eq!(
        rpc.call(
            "4",
            json!({"type":"mcp","action":"enable","server":"probe"})
        )["data"],
        json!({"servers":[probe("connected", true)],
               "message":r#"Enabled MCP server "probe" (connected, 5 tools)."#})
    );
    assert_eq!(saved(), entry);
    rpc.prompt("d");
    let third = pid();
    assert_ne!(third, second);
    let results = tool_results(&cwd.join("s.jsonl"));
    let errors: Vec<&Value> = results.iter().map(|r| &r["isError"]).collect();
    assert_eq!(errors, [false, false, true, false], "{results:?}");
    assert_eq!(results[2]["text"], "Tool mcp__probe__pid not found");
    // Mistakes are error responses.
    let wrong = rpc.call(
        "5",
        json!({"type":"mcp","action":"reconnect","server":"nope"}),
    );
    assert_eq!(
        (&wrong["success"], &wrong["error"]),
        (&json!(false), &json!(r#"No MCP server named "nope"."#))
    );
    let wrong = rpc.call("6", json!({"type":"mcp","action":"fly"}));
    assert_eq!(wrong["success"], false);
    assert!(
        wrong["error"].as_str().unwrap().starts_with("mcp takes"),
        "{wrong}"
    );
    assert!(rpc.close().success());
    let left = processes_naming(&marker);
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn a_new_session_keeps_the_running_servers() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let marker = root.display().to_string();
    let pidfile = root.join("pid");
    let (agent, cwd) = setup(
        &root,
        json!({ "probe": probe_entry(&marker, &pidfile, None) }),
    );
    let pid_call = |id: &str| calls(&[(id, "mcp__probe__pid", json!({}))]);
    let script = script(
        &root,
        json!([pid_call("a"), text("a"), pid_call("b"), text("b")]),
    );
    let mut rpc = Rpc::start(
        &agent,
        &cwd,
        &[OsString::from("--faux-script"), script.into()],
    );
    let pid = || -> u32 { fs::read_to_string(&pidfile).unwrap().parse().unwrap() };
    rpc.prompt("a");
    let first = pid();
    let switched = rpc.call("n", json!({"type":"new_session"}));
    assert_eq!(switched["success"], true, "{switched}");
    rpc.prompt("b");
    assert_eq!(pid(), first, "/new restarted the server");
    assert!(rpc.close().success());
    assert!(gone(first));
}

#[test]
fn no_mcp_starts_no_server_and_rpc_mcp_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let marker = root.display().to_string();
    let pidfile = root.join("pid");
    let (agent, cwd) = setup(
        &root,
        json!({ "probe": probe_entry(&marker, &pidfile, None) }),
    );
    let script = script(
        &root,
        json!([calls(&[("a", "mcp__probe__pid", json!({}))]), text("a")]),
    );
    let mut rpc = Rpc::start(
        &agent,
        &cwd,
        &[
            OsString::from("--no-mcp"),
            "--session".into(),
            "s.jsonl".into(),
            "--faux-script".into(),
            script.into(),
        ],
    );
    assert_eq!(
        rpc.call("1", json!({"type":"mcp"}))["data"],
        json!({"servers": []})
    );
    let refused = rpc.call(
        "2",
        json!({"type":"mcp","action":"enable","server":"probe"}),
    );
    assert_eq!(
        refused["error"],
        "No MCP servers are running (--no-mcp or --no-tools)"
    );
    rpc.prompt("a");
    // No server (pith's own command line names the root too, not the pid file).
    assert!(processes_naming(&pidfile.display().to_string()).is_empty());
    assert!(rpc.close().success());
    assert!(!pidfile.exists());
    assert_eq!(
        tool_results(&cwd.join("s.jsonl"))[0]["text"],
        "Tool mcp__probe__pid not found"
    );
}
