//! The test server over streamable HTTP on the loopback.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use pith_mcp::Transport;
use serde_json::json;

use crate::support::*;

/// Starts the HTTP test server (on `port`, 0 for any) and returns it and its port.
fn serve(port: u16) -> (Child, u16) {
    let mut child = Command::new(server_bin())
        .args(["--http", "--port", &port.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .strip_prefix("listening ")
        .unwrap()
        .parse()
        .unwrap();
    (child, port)
}

#[tokio::test]
async fn http_server_calls_and_reconnects_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, port) = serve(0);
    let config = entry(
        "web",
        Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: [("X-Test".to_owned(), "${HOME}".to_owned())].into(),
        },
        Duration::from_secs(60),
    );
    let hub = hub(vec![config], dir.path()).await;
    assert_eq!(hub.statuses()[0].tools.len(), 11);
    let echo = call(&hub, "mcp__web__echo", json!({"text":"over http"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "echo: over http");
    let first: u32 = text(&call(&hub, "mcp__web__pid", json!({})).await.unwrap())
        .parse()
        .unwrap();

    // The server dies and comes back on the same port: the next call reaches the new one.
    server.kill().unwrap();
    server.wait().unwrap();
    let (mut again, _) = serve(port);
    let second = call(&hub, "mcp__web__pid", json!({})).await;
    let second: u32 = text(&second.unwrap()).parse().unwrap();
    assert_ne!(first, second);
    hub.shutdown().await;
    again.kill().unwrap();
    again.wait().unwrap();
}
