//! A small real MCP server built on rmcp's server side, for pith's tests (built only with the
//! `test-server` feature, never installed).
//!
//! Stdio by default; `--http` serves streamable HTTP at `http://127.0.0.1:<port>/mcp` (port 0
//! unless `--port N`) and prints `listening <port>` on stdout.
//!
//! Tools: `echo {text}` (read-only), `delete-thing` (destructive; a `-` to sanitise), `big
//! {bytes}`, `structured`, `fail` (`isError`), `sleep {ms, progress}` (progress every 100 ms
//! when asked), `wait_cancel {log}` (writes `cancelled` to `log` when the client cancels),
//! `exit` (the process dies), `add_tool` (adds `extra`, sends `tools/list_changed`),
//! `spawn_child` (starts a `sleep 300` grandchild and returns its pid), `pid`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::zombie_processes,
    missing_docs
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Clone, Default)]
struct TestServer {
    extra: Arc<AtomicBool>,
}

fn tools(extra: bool) -> Value {
    let object = json!({"type":"object"});
    let mut tools = vec![
        json!({"name":"echo","description":"Echoes text back.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},
               "annotations":{"readOnlyHint":true,"openWorldHint":false}}),
        json!({"name":"delete-thing","description":"Deletes a thing.","inputSchema":object,"annotations":{"destructiveHint":true}}),
        json!({"name":"big","description":"Returns `bytes` bytes of text.","inputSchema":{"type":"object","properties":{"bytes":{"type":"integer"}}}}),
        json!({"name":"structured","description":"Returns structured content.","inputSchema":object}),
        json!({"name":"fail","description":"Always fails.","inputSchema":object}),
        json!({"name":"sleep","description":"Sleeps `ms` milliseconds.","inputSchema":{"type":"object","properties":{"ms":{"type":"integer"},"progress":{"type":"boolean"}}}}),
        json!({"name":"wait_cancel","description":"Waits until cancelled.","inputSchema":{"type":"object","properties":{"log":{"type":"string"}}}}),
        json!({"name":"exit","description":"Ends the server process.","inputSchema":object}),
        json!({"name":"add_tool","description":"Adds the tool `extra`.","inputSchema":object}),
        json!({"name":"spawn_child","description":"Starts a grandchild process.","inputSchema":object}),
        json!({"name":"pid","description":"The server's process id.","inputSchema":object}),
    ];
    if extra {
        tools.push(json!({"name":"extra","description":"Added later.","inputSchema":object}));
    }
    json!({ "tools": tools })
}

fn text(text: impl Into<String>) -> CallToolResponse {
    result(json!({"content":[{"type":"text","text":text.into()}]}))
}

fn result(value: Value) -> CallToolResponse {
    serde_json::from_value::<CallToolResult>(value)
        .unwrap()
        .into()
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(serde_json::from_value(tools(self.extra.load(Ordering::SeqCst))).unwrap())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        Ok(match request.name.as_ref() {
            "echo" => text(format!("echo: {}", args["text"].as_str().unwrap_or(""))),
            "delete-thing" => text("deleted"),
            "big" => {
                let n = args["bytes"].as_u64().unwrap_or(30_000) as usize;
                let line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
                text(line.repeat(n / line.len() + 1)[..n].to_owned())
            }
            "structured" => result(json!({
                "content":[{"type":"text","text":"{\"temperature\":21}"}],
                "structuredContent":{"temperature":21}})),
            "fail" => result(json!({"content":[{"type":"text","text":"it broke"}],"isError":true})),
            "sleep" => {
                let ms = args["ms"].as_u64().unwrap_or(1000);
                let progress = args["progress"].as_bool().unwrap_or(false);
                let token = context.meta.get_progress_token();
                let start = tokio::time::Instant::now();
                let mut step = 0u32;
                while start.elapsed() < Duration::from_millis(ms) {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    step += 1;
                    if progress && let Some(token) = &token {
                        let _ = context
                            .peer
                            .notify_progress(ProgressNotificationParam::new(
                                token.clone(),
                                f64::from(step),
                            ))
                            .await;
                    }
                }
                text(format!("slept {ms} ms"))
            }
            "wait_cancel" => {
                let log = args["log"].as_str().unwrap_or("").to_owned();
                context.ct.cancelled().await;
                if !log.is_empty() {
                    std::fs::write(&log, "cancelled").unwrap();
                }
                text("cancelled")
            }
            "exit" => std::process::exit(3),
            "add_tool" => {
                self.extra.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                text("added")
            }
            "spawn_child" => {
                let child = std::process::Command::new("sleep")
                    .arg("300")
                    .spawn()
                    .unwrap();
                text(child.id().to_string())
            }
            "pid" => text(std::process::id().to_string()),
            "extra" => text("extra!"),
            other => {
                return Err(ErrorData::invalid_params(format!("no tool {other}"), None));
            }
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--http") {
        use rmcp::transport::streamable_http_server::{
            StreamableHttpService, session::local::LocalSessionManager,
        };
        let port: u16 = args
            .iter()
            .position(|a| a == "--port")
            .and_then(|i| args.get(i + 1))
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let service: StreamableHttpService<TestServer, LocalSessionManager> =
            StreamableHttpService::new(
                || Ok(TestServer::default()),
                Default::default(),
                Default::default(),
            );
        let router = axum::Router::new().nest_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        println!("listening {}", listener.local_addr()?.port());
        axum::serve(listener, router).await?;
        return Ok(());
    }
    let service = TestServer::default()
        .serve((tokio::io::stdin(), tokio::io::stdout()))
        .await?;
    service.waiting().await?;
    Ok(())
}
