//! The test server over stdio: naming, results, timeouts, abort, reconnect, list changes,
//! teardown.

use std::time::Duration;

use pith_mcp::{ServerState, Transport};
use pith_tools::{ToolError, ToolSource};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::*;

#[tokio::test]
async fn tools_are_named_described_and_annotated() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(vec![stdio("test-srv")], dir.path()).await;
    assert_eq!(
        names(&hub),
        [
            "mcp__test_srv__echo",
            "mcp__test_srv__delete_thing",
            "mcp__test_srv__big",
            "mcp__test_srv__structured",
            "mcp__test_srv__fail",
            "mcp__test_srv__sleep",
            "mcp__test_srv__wait_cancel",
            "mcp__test_srv__exit",
            "mcp__test_srv__add_tool",
            "mcp__test_srv__spawn_child",
            "mcp__test_srv__pid",
        ]
    );
    let echo = tool(&hub, "mcp__test_srv__echo");
    assert_eq!(echo.spec().description, "Echoes text back.");
    assert_eq!(
        echo.spec().parameters,
        json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})
    );
    assert_eq!(echo.source().as_deref(), Some("mcp:test-srv"));
    assert_eq!(
        echo.annotations(),
        Some(json!({"readOnlyHint":true,"openWorldHint":false}))
    );
    assert_eq!(
        tool(&hub, "mcp__test_srv__delete_thing").annotations(),
        Some(json!({"destructiveHint":true}))
    );
    assert_eq!(tool(&hub, "mcp__test_srv__pid").annotations(), None);
    let statuses = hub.statuses();
    assert_eq!(statuses[0].state, ServerState::Connected);
    assert_eq!(statuses[0].tools.len(), 11);
    hub.shutdown().await;
}

#[tokio::test]
async fn results_become_content_details_and_error_results() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(vec![stdio("t")], dir.path()).await;
    let echo = call(&hub, "mcp__t__echo", json!({"text":"hi"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "echo: hi");
    assert_eq!(echo.details, json!({"server":"t","tool":"echo"}));
    let structured = call(&hub, "mcp__t__structured", json!({})).await.unwrap();
    assert_eq!(
        structured.details,
        json!({"server":"t","tool":"structured","structuredContent":{"temperature":21}})
    );
    let Err(ToolError::Result(failed)) = call(&hub, "mcp__t__fail", json!({})).await else {
        panic!("an error result expected");
    };
    assert_eq!(text(&failed), "it broke");
    let output_dir = pith_tools::OutputDir::in_dir(dir.path());
    let big = call_in(&hub, "mcp__t__big", json!({"bytes": 30000}), &output_dir)
        .await
        .unwrap();
    let path = big.details["fullOutputPath"].as_str().unwrap().to_owned();
    assert_eq!(std::fs::read_to_string(&path).unwrap().len(), 30000);
    let shown = text(&big);
    assert!(shown.starts_with(
        "Warning: truncated output (original token count: 7500)\nTotal output lines: 469\n\n0123"
    ));
    assert!(shown.contains("…9520 chars truncated…"), "{shown}");
    assert!(shown.len() < 21 * 1024);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_call_times_out_unless_the_server_reports_progress() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = stdio("t");
    server.timeout = Duration::from_millis(500);
    let hub = hub(vec![server], dir.path()).await;
    let started = std::time::Instant::now();
    let late = call(&hub, "mcp__t__sleep", json!({"ms": 3000})).await;
    assert_eq!(
        late,
        Err(ToolError::Failed(
            "MCP tool t/sleep timed out after 0.5 s".into()
        ))
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    // Progress every 100 ms keeps a 500 ms limit from firing for 1.5 s, and each
    // notification is a partial result.
    let (updates_tx, mut updates) = tokio::sync::mpsc::unbounded_channel();
    let mut ctx = pith_tools::ToolContext::new(dir.path(), CancellationToken::new(), "c");
    ctx.progress = Some(updates_tx);
    let kept = tool(&hub, "mcp__t__sleep")
        .run(json!({"ms": 1500, "progress": true}), ctx)
        .await;
    assert_eq!(text(&kept.unwrap()), "slept 1500 ms");
    let first = updates.recv().await.unwrap();
    assert_eq!(text(&first), "Progress 1");
    assert_eq!(first.details, json!({"server":"t","tool":"sleep"}));
    let mut count = 1;
    while updates.try_recv().is_ok() {
        count += 1;
    }
    assert!((10..=16).contains(&count), "{count} progress updates");
    hub.shutdown().await;
}

#[tokio::test]
async fn abort_cancels_the_call_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(vec![stdio("t")], dir.path()).await;
    let log = dir.path().join("cancel.log");
    let abort = CancellationToken::new();
    let trigger = abort.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let result = call_with(&hub, "mcp__t__wait_cancel", json!({"log": log}), abort).await;
    assert_eq!(result, Err(ToolError::Aborted));
    assert!(
        eventually(Duration::from_secs(3), || log.exists()).await,
        "the server saw no notifications/cancelled"
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "cancelled");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_dying_server_reconnects_on_the_next_call() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(vec![stdio("t")], dir.path()).await;
    let first: u32 = text(&call(&hub, "mcp__t__pid", json!({})).await.unwrap())
        .parse()
        .unwrap();
    let died = call(&hub, "mcp__t__exit", json!({})).await;
    assert!(matches!(died, Err(ToolError::Failed(_))), "{died:?}");
    assert!(eventually(Duration::from_secs(3), || gone(first)).await);
    let second: u32 = text(&call(&hub, "mcp__t__pid", json!({})).await.unwrap())
        .parse()
        .unwrap();
    assert_ne!(first, second);
    assert_eq!(hub.statuses()[0].state, ServerState::Connected);
    hub.shutdown().await;
    assert!(eventually(Duration::from_secs(3), || gone(second)).await);
}

#[tokio::test]
async fn list_changed_refreshes_the_tools() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(vec![stdio("t")], dir.path()).await;
    assert!(!names(&hub).contains(&"mcp__t__extra".to_owned()));
    call(&hub, "mcp__t__add_tool", json!({})).await.unwrap();
    assert!(
        eventually(Duration::from_secs(3), || names(&hub)
            .contains(&"mcp__t__extra".to_owned()))
        .await
    );
    assert_eq!(
        text(&call(&hub, "mcp__t__extra", json!({})).await.unwrap()),
        "extra!"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_the_server_and_its_grandchildren() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(vec![stdio("t")], dir.path()).await;
    let server: u32 = text(&call(&hub, "mcp__t__pid", json!({})).await.unwrap())
        .parse()
        .unwrap();
    let grandchild: u32 = text(&call(&hub, "mcp__t__spawn_child", json!({})).await.unwrap())
        .parse()
        .unwrap();
    assert!(!gone(server) && !gone(grandchild));
    let started = std::time::Instant::now();
    hub.shutdown().await;
    assert!(gone(server), "the server is still running");
    assert!(
        eventually(Duration::from_secs(2), || gone(grandchild)).await,
        "the grandchild outlived the server"
    );
    // The server leaves on stdin's end; no 3 s SIGTERM wait.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(hub.tools().is_empty());
}

#[tokio::test]
async fn broken_servers_fail_with_why_and_disabled_ones_wait() {
    let dir = tempfile::tempdir().unwrap();
    let mut missing = stdio("missing");
    missing.transport = Transport::Stdio {
        command: "/nonexistent/mcp-server".into(),
        args: vec![],
        env: Default::default(),
        cwd: None,
    };
    let mut crashing = stdio("crashing");
    crashing.transport = Transport::Stdio {
        command: "sh".into(),
        args: vec!["-c".into(), "echo 'oops: no config' >&2; exit 1".into()],
        env: Default::default(),
        cwd: None,
    };
    let mut unset = stdio("unset");
    unset.transport = Transport::Stdio {
        command: server_bin().into(),
        args: vec![],
        env: [(
            "TOKEN".to_owned(),
            "${PITH_MCP_TEST_SURELY_UNSET}".to_owned(),
        )]
        .into(),
        cwd: None,
    };
    let mut off = stdio("off");
    off.enabled = false;
    let hub = hub(vec![missing, crashing, unset, off, stdio("ok")], dir.path()).await;
    let states: Vec<String> = hub.statuses().iter().map(|s| s.state.to_string()).collect();
    assert!(
        states[0].starts_with("failed: could not start /nonexistent/mcp-server: No such file"),
        "{states:?}"
    );
    assert!(
        states[1].starts_with("failed: ") && states[1].ends_with("oops: no config"),
        "{states:?}"
    );
    assert_eq!(
        states[2],
        r#"failed: Failed to resolve MCP server "unset" env "TOKEN" from environment variable: PITH_MCP_TEST_SURELY_UNSET"#
    );
    assert_eq!(states[3..], ["disabled", "connected"]);
    assert!(names(&hub).iter().all(|n| n.starts_with("mcp__ok__")));
    hub.shutdown().await;
}

#[tokio::test]
async fn reconfiguring_keeps_unchanged_servers_and_restarts_changed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(vec![stdio("kept"), stdio("changed")], dir.path()).await;
    let pid = |name: &'static str| {
        let hub = hub.clone();
        async move {
            let out = call(&hub, &format!("mcp__{name}__pid"), json!({}))
                .await
                .unwrap();
            text(&out).parse::<u32>().unwrap()
        }
    };
    let (kept, changed) = (pid("kept").await, pid("changed").await);
    let mut new_changed = stdio("changed");
    new_changed.timeout = Duration::from_secs(5);
    let mut hidden = stdio("hidden");
    hidden.tool_exposure = vec![("*".into(), pith_mcp::config::Exposure::Hidden)];
    hidden
        .tool_exposure
        .insert(0, ("echo".into(), pith_mcp::config::Exposure::Direct));
    hub.reconfigure(
        &pith_mcp::McpConfig {
            servers: vec![stdio("kept"), new_changed, hidden],
            problems: vec![],
        },
        dir.path().to_path_buf(),
    )
    .await;
    hub.wait_settled(Duration::from_secs(10)).await;
    assert_eq!(pid("kept").await, kept);
    assert!(gone(changed));
    assert_ne!(pid("changed").await, changed);
    // toolExposure: only `echo` of the third server is offered.
    let hidden_tools: Vec<String> = names(&hub)
        .into_iter()
        .filter(|n| n.starts_with("mcp__hidden__"))
        .collect();
    assert_eq!(hidden_tools, ["mcp__hidden__echo"]);
    hub.shutdown().await;
    assert!(gone(kept));
}

#[tokio::test]
async fn a_session_in_another_project_gets_that_projects_servers() {
    let root = tempfile::tempdir().unwrap();
    let (agent, a, b) = (
        root.path().join("agent"),
        root.path().join("a"),
        root.path().join("b"),
    );
    for dir in [&agent, &a, &b.join(".pith")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let entry = json!({"command": server_bin()});
    std::fs::write(
        agent.join("mcp.json"),
        json!({"mcpServers":{"kept": entry}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        b.join(".pith/mcp.json"),
        json!({"mcpServers":{"proj": entry}}).to_string(),
    )
    .unwrap();
    let agent_dir = agent.clone();
    let loader: pith_mcp::hub::Loader = std::sync::Arc::new(move |dir: &std::path::Path| {
        pith_mcp::config::load(&agent_dir, dir, true)
    });
    let hub = pith_mcp::McpHub::start_with_loader(loader, a.clone(), None);
    hub.ready().await;
    let pid = |name: &'static str| {
        let hub = hub.clone();
        async move {
            let out = call(&hub, &format!("mcp__{name}__pid"), json!({}))
                .await
                .unwrap();
            text(&out).parse::<u32>().unwrap()
        }
    };
    let kept = pid("kept").await;
    hub.cwd_changed(&b).await;
    hub.wait_settled(Duration::from_secs(10)).await;
    let proj = pid("proj").await;
    assert_eq!(pid("kept").await, kept);
    hub.cwd_changed(&a).await;
    assert!(gone(proj));
    assert!(names(&hub).iter().all(|n| !n.starts_with("mcp__proj__")));
    assert_eq!(pid("kept").await, kept);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_that_never_answers_fails_after_10_s_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("pith-mcp-hang-{}", std::process::id());
    let mut hanging = stdio("hang");
    hanging.transport = Transport::Stdio {
        command: "sh".into(),
        args: vec!["-c".into(), format!("sleep 300 # {marker}")],
        env: Default::default(),
        cwd: None,
    };
    let started = std::time::Instant::now();
    let hub = hub(vec![hanging, stdio("ok")], dir.path()).await;
    // The first prompt's wait (10 s) may end just before the connect limit (10 s) does.
    hub.wait_settled(Duration::from_secs(5)).await;
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(10) && waited < Duration::from_secs(13),
        "{waited:?}"
    );
    let states: Vec<String> = hub.statuses().iter().map(|s| s.state.to_string()).collect();
    assert_eq!(states, ["failed: no answer within 10 s", "connected"]);
    let running = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&marker))
        })
    };
    assert!(
        eventually(Duration::from_secs(3), || !running()).await,
        "the hanging server was left running"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn disable_stops_the_server_and_enable_starts_it_both_saved_in_the_file() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("mcp.json");
    std::fs::write(
        &file,
        json!({"mcpServers":{"t":{"command": server_bin()},"u":{"command": server_bin()}}})
            .to_string(),
    )
    .unwrap();
    let config = pith_mcp::config::load(root.path(), root.path(), false);
    let hub = pith_mcp::McpHub::start(&config, root.path().to_path_buf());
    hub.ready().await;
    let server: u32 = text(&call(&hub, "mcp__t__pid", json!({})).await.unwrap())
        .parse()
        .unwrap();
    let grandchild: u32 = text(&call(&hub, "mcp__t__spawn_child", json!({})).await.unwrap())
        .parse()
        .unwrap();
    hub.set_enabled("t", false).await.unwrap();
    assert!(gone(server), "a disabled server is still running");
    assert!(eventually(Duration::from_secs(2), || gone(grandchild)).await);
    assert!(names(&hub).iter().all(|n| !n.starts_with("mcp__t__")));
    assert_eq!(hub.statuses()[0].state, ServerState::Disabled);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["mcpServers"]["t"]["enabled"], json!(false));
    // The other server was not touched.
    assert!(names(&hub).contains(&"mcp__u__echo".to_owned()));
    hub.set_enabled("t", true).await.unwrap();
    hub.wait_settled(Duration::from_secs(10)).await;
    assert_eq!(hub.statuses()[0].state, ServerState::Connected);
    let again: u32 = text(&call(&hub, "mcp__t__pid", json!({})).await.unwrap())
        .parse()
        .unwrap();
    assert_ne!(again, server);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["mcpServers"]["t"], json!({"command": server_bin()}));
    assert_eq!(
        hub.set_enabled("nope", true).await.unwrap_err(),
        r#"No MCP server named "nope"."#
    );
    hub.shutdown().await;
    assert!(gone(again));
}
