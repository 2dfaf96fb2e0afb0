//! An MCP server's tool as a pith [`Tool`] (spec: extensions.md §1.3).
//!
//! A call asks the server's task for a live connection (which reconnects a dropped one), sends
//! `tools/call` with the server's `timeout` (a progress notification from the server restarts
//! it, rmcp's `reset_timeout_on_progress`), and answers an abort with
//! `notifications/cancelled`. The result is converted by [`crate::output`].

use std::sync::Arc;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientNotification, ClientRequest, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use serde_json::{Map, Value};

use pith_tools::{Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

use crate::output::convert;
use crate::server::ServerHandle;
use pith_events::ToolSpec;

/// The annotation hints pi passes on (`toToolAnnotations`).
const ANNOTATION_HINTS: [&str; 4] = [
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// One tool of one server, named `mcp__<server>__<tool>`.
pub struct McpTool {
    /// The name the model calls it by.
    pub(crate) name: String,
    pub(crate) server: Arc<ServerHandle>,
    /// The tool as the server listed it.
    pub(crate) tool: rmcp::model::Tool,
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        let server = &self.server.config.name;
        let title = self
            .tool
            .title
            .clone()
            .or_else(|| self.tool.annotations.as_ref().and_then(|a| a.title.clone()));
        let description = self
            .tool
            .description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_owned)
            .or(title)
            .unwrap_or_else(|| format!("MCP tool {} from server {server}", self.tool.name));
        let mut parameters = Value::Object((*self.tool.input_schema).clone());
        // pi's normalizeMcpInputSchema: providers need an object schema.
        if parameters.get("type").is_none() {
            parameters["type"] = Value::String("object".to_owned());
        }
        ToolSpec {
            prefers_strict_schema: false,
            name: self.name.clone(),
            description,
            parameters,
        }
    }

    fn run(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        let server = self.server.clone();
        let tool = self.tool.name.to_string();
        Box::pin(async move {
            let arguments = match args {
                Value::Object(map) => map,
                Value::Null => Map::new(),
                other => {
                    return Err(ToolError::Failed(format!(
                        "MCP tool arguments must be an object, got {other}"
                    )));
                }
            };
            // A connection that dropped since the last call is reopened by `peer()`; one that
            // drops under this call (a transport error before any answer) is reopened once.
            let mut attempt = 0;
            let result = loop {
                attempt += 1;
                let peer = tokio::select! {
                    peer = server.peer() => peer.map_err(ToolError::Failed)?,
                    () = ctx.abort.cancelled() => return Err(ToolError::Aborted),
                };
                match call(&peer, &server, &tool, arguments.clone(), &ctx).await {
                    Err(CallFailure::Service(
                        rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_),
                    )) if attempt == 1 => server.reconnect(),
                    Err(CallFailure::Service(e)) => {
                        return Err(ToolError::Failed(call_error(
                            &server.config.name,
                            &tool,
                            &e,
                        )));
                    }
                    Err(CallFailure::Aborted) => return Err(ToolError::Aborted),
                    Ok(ServerResult::CallToolResult(result)) => break result,
                    Ok(_) => {
                        return Err(ToolError::Failed(format!(
                            "MCP tool {}/{tool} gave an unexpected reply",
                            server.config.name
                        )));
                    }
                }
            };
            let raw = serde_json::to_value(&result).unwrap_or(Value::Null);
            let converted = convert(&server.config.name, &tool, &raw, &ctx.output_dir);
            let output = ToolOutput {
                content: converted.content,
                details: converted.details,
                structured_content: None,
            };
            if converted.is_error {
                Err(ToolError::Result(Box::new(output)))
            } else {
                Ok(output)
            }
        })
    }

    fn source(&self) -> Option<String> {
        Some(format!("mcp:{}", self.server.config.name))
    }

    fn annotations(&self) -> Option<Value> {
        let raw = serde_json::to_value(self.tool.annotations.as_ref()?).ok()?;
        let hints: Map<String, Value> = ANNOTATION_HINTS
            .iter()
            .filter_map(|h| {
                raw.get(*h)
                    .filter(|v| v.is_boolean())
                    .map(|v| ((*h).to_owned(), v.clone()))
            })
            .collect();
        (!hints.is_empty()).then_some(Value::Object(hints))
    }
}

enum CallFailure {
    Service(rmcp::ServiceError),
    Aborted,
}

/// One `tools/call`: `timeout` restarts on each progress notification; an abort sends
/// `notifications/cancelled`.
async fn call(
    peer: &rmcp::service::Peer<rmcp::RoleClient>,
    server: &ServerHandle,
    tool: &str,
    arguments: Map<String, Value>,
    ctx: &ToolContext,
) -> Result<ServerResult, CallFailure> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments),
    ));
    let options =
        PeerRequestOptions::with_timeout(server.config.timeout).reset_timeout_on_progress();
    let handle = peer
        .send_request_with_option(request, options)
        .await
        .map_err(CallFailure::Service)?;
    let id = handle.id.clone();
    // Progress notifications become partial results (pi: `Progress N/T` or the message).
    let token = handle.progress_token.clone();
    let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel();
    if let Ok(mut routes) = server.progress.lock() {
        routes.insert(token.clone(), progress_tx);
    }
    let forward = ctx.progress.clone().map(|updates| {
        let details = serde_json::json!({ "server": server.config.name, "tool": tool });
        tokio::spawn(async move {
            while let Some(p) = progress_rx.recv().await {
                let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
                let text = p
                    .message
                    .unwrap_or_else(|| format!("Progress {}{total}", p.progress));
                let _ = updates.send(ToolOutput {
                    content: vec![pith_events::ContentBlock::text(text)],
                    details: details.clone(),
                    structured_content: None,
                });
            }
        })
    });
    let outcome = tokio::select! {
        response = handle.await_response() => response.map_err(CallFailure::Service),
        () = ctx.abort.cancelled() => {
            let cancel = ClientNotification::CancelledNotification(CancelledNotification::new(
                CancelledNotificationParam::new(Some(id), Some("aborted by the user".to_owned())),
            ));
            let _ = peer.send_notification(cancel).await;
            Err(CallFailure::Aborted)
        }
    };
    if let Ok(mut routes) = server.progress.lock() {
        routes.remove(&token);
    }
    // The route held the only sender: the forwarder ends once it passed on what came.
    if let Some(forward) = forward {
        let _ = forward.await;
    }
    outcome
}

fn call_error(server: &str, tool: &str, e: &rmcp::ServiceError) -> String {
    match e {
        rmcp::ServiceError::Timeout { timeout } => format!(
            "MCP tool {server}/{tool} timed out after {} s",
            timeout.as_secs_f64()
        ),
        rmcp::ServiceError::McpError(data) => {
            format!("MCP tool {server}/{tool} failed: {}", data.message)
        }
        other => format!("MCP tool {server}/{tool} failed: {other}"),
    }
}
