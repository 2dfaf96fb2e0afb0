//! Published servers started as users start them (a stdio command in `mcp.json`):
//! `@modelcontextprotocol/server-filesystem` from npm and `mcp-server-time` from PyPI.
//! `scripts/install-mcp-servers` puts them under `target/mcp-servers/` (scripts/test runs it).

use std::path::PathBuf;
use std::time::Duration;

use pith_mcp::Transport;
use serde_json::json;

use crate::support::*;

fn filesystem_server() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/mcp-servers/node_modules/.bin/mcp-server-filesystem");
    assert!(
        bin.exists(),
        "{} is missing: run scripts/install-mcp-servers",
        bin.display()
    );
    bin
}

#[tokio::test]
async fn the_npm_filesystem_server_lists_and_reads_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello from a file\n").unwrap();
    let config = entry(
        "filesystem",
        Transport::Stdio {
            command: filesystem_server().display().to_string(),
            args: vec![".".into()],
            env: Default::default(),
            cwd: None,
        },
        Duration::from_secs(60),
    );
    let hub = hub(vec![config], dir.path()).await;
    let names = names(&hub);
    assert!(
        names.contains(&"mcp__filesystem__read_text_file".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"mcp__filesystem__list_directory".to_owned()),
        "{names:?}"
    );
    let listing = call(
        &hub,
        "mcp__filesystem__list_directory",
        json!({"path": dir.path()}),
    )
    .await
    .unwrap();
    assert!(
        text(&listing).contains("[FILE] notes.txt"),
        "{}",
        text(&listing)
    );
    let read = call(
        &hub,
        "mcp__filesystem__read_text_file",
        json!({"path": dir.path().join("notes.txt")}),
    )
    .await
    .unwrap();
    assert_eq!(text(&read), "hello from a file\n");
    let server_pids = hub.statuses();
    assert_eq!(server_pids[0].state, pith_mcp::ServerState::Connected);
    hub.shutdown().await;
}

#[tokio::test]
async fn the_pypi_time_server_tells_the_time_with_structured_content() {
    let dir = tempfile::tempdir().unwrap();
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/mcp-servers/venv/bin/mcp-server-time");
    assert!(
        bin.exists(),
        "{} is missing: run scripts/install-mcp-servers",
        bin.display()
    );
    let config = entry(
        "time",
        Transport::Stdio {
            command: bin.display().to_string(),
            args: vec!["--local-timezone".into(), "UTC".into()],
            env: Default::default(),
            cwd: None,
        },
        Duration::from_secs(60),
    );
    let hub = hub(vec![config], dir.path()).await;
    assert_eq!(
        names(&hub),
        ["mcp__time__get_current_time", "mcp__time__convert_time"]
    );
    let now = call(
        &hub,
        "mcp__time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await
    .unwrap();
    let structured = &now.details["structuredContent"];
    assert_eq!(structured["timezone"], "UTC");
    assert_eq!(structured["is_dst"], false);
    let shown: serde_json::Value = serde_json::from_str(&text(&now)).unwrap();
    assert_eq!(&shown, structured);
    hub.shutdown().await;
}
