//! Hubs over the test server.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pith_mcp::{McpConfig, McpHub, ServerConfig, Transport};
use pith_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolSource};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The test server binary.
pub fn server_bin() -> &'static str {
    env!("CARGO_BIN_EXE_pith-mcp-test-server")
}

/// A server entry as `mcp.json` would give it.
pub fn entry(name: &str, transport: Transport, timeout: Duration) -> ServerConfig {
    ServerConfig {
        name: name.to_owned(),
        transport,
        timeout,
        enabled: true,
        description: None,
        exposure: None,
        tool_exposure: Vec::new(),
        file: PathBuf::from("mcp.json"),
        override_file: None,
    }
}

/// The test server over stdio.
pub fn stdio(name: &str) -> ServerConfig {
    entry(
        name,
        Transport::Stdio {
            command: server_bin().to_owned(),
            args: Vec::new(),
            env: Default::default(),
            cwd: None,
        },
        Duration::from_secs(60),
    )
}

/// A hub over `servers`, waited for.
pub async fn hub(servers: Vec<ServerConfig>, cwd: &Path) -> McpHub {
    let hub = McpHub::start(
        &McpConfig {
            servers,
            problems: Vec::new(),
        },
        cwd.to_path_buf(),
    );
    hub.ready().await;
    hub
}

/// The tool called `name`.
pub fn tool(hub: &McpHub, name: &str) -> Arc<dyn Tool> {
    hub.tools()
        .into_iter()
        .find(|t| t.spec().name == name)
        .unwrap_or_else(|| panic!("no tool {name} in {:?}", names(hub)))
}

/// The offered tool names.
pub fn names(hub: &McpHub) -> Vec<String> {
    hub.tools().iter().map(|t| t.spec().name).collect()
}

/// Calls `name` with `args`.
pub async fn call(hub: &McpHub, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
    call_with(hub, name, args, CancellationToken::new()).await
}

/// Calls `name` with `args` and an abort token.
pub async fn call_with(
    hub: &McpHub,
    name: &str,
    args: Value,
    abort: CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let ctx = ToolContext::new(std::env::temp_dir(), abort, "call-1");
    tool(hub, name).run(args, ctx).await
}

/// Calls `name` with full outputs going to `output_dir` (kept by the caller).
pub async fn call_in(
    hub: &McpHub,
    name: &str,
    args: Value,
    output_dir: &pith_tools::OutputDir,
) -> Result<ToolOutput, ToolError> {
    let mut ctx = ToolContext::new(std::env::temp_dir(), CancellationToken::new(), "call-1");
    ctx.output_dir = output_dir.clone();
    tool(hub, name).run(args, ctx).await
}

/// The text of a result.
pub fn text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|b| match b {
            pith_events::ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
pub fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Waits up to `limit` for `check`.
pub async fn eventually(limit: Duration, check: impl Fn() -> bool) -> bool {
    let end = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < end {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check()
}
