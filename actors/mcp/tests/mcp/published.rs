//! `@modelcontextprotocol/server-filesystem` from npm, started as users start it (a stdio
//! command in `mcp.json`). `scripts/install-mcp-servers` puts it under
//! `target/mcp-servers/` (scripts/test runs it).

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
