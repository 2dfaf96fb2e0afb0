//! pith's rpc `mcp` command (docs/rpc.md): what `/mcp` does in the interactive mode, with
//! the servers' states as data. pi 1.6.0 reaches its `/mcp` through `prompt` as an extension
//! command; pith's `/mcp` is built in, so it gets a command of its own.

use serde_json::{Value, json};

use super::Rpc;
use super::commands::Answer;
use crate::mcp_cmd::{McpAction, status_json};

/// The refusal of an `action` pith does not know, or one without its `server`.
const USAGE: &str =
    r#"mcp takes {"action": "reconnect" | "enable" | "disable", "server": NAME}, or neither"#;

impl Rpc {
    /// `mcp {action?, server?}`: answered `{servers: [...], message?}` once the action is
    /// done (a reconnect or an enable waits for the connection, at most 10 s; other commands
    /// go on meanwhile). `servers` are `pith mcp list --json`'s objects.
    pub(super) fn mcp(
        &self,
        id: Option<Value>,
        name: &str,
        action: Option<String>,
        server: Option<String>,
    ) -> Answer {
        let words = format!(
            "{} {}",
            action.unwrap_or_default(),
            server.unwrap_or_default()
        );
        let Ok(action) = McpAction::parse(&words) else {
            return Answer::Now(Err(USAGE.to_owned()));
        };
        let Some(hub) = self.mcp.clone() else {
            return Answer::Now(match action {
                McpAction::Status => Ok(Some(json!({ "servers": [] }))),
                McpAction::Reconnect(_) | McpAction::Enable(_) | McpAction::Disable(_) => {
                    Err("No MCP servers are running (--no-mcp or --no-tools)".to_owned())
                }
            });
        };
        self.later(id, name, async move {
            let message = action.run(&hub).await?;
            let servers: Vec<Value> = hub.statuses().iter().map(status_json).collect();
            let mut data = json!({ "servers": servers });
            if let Some(message) = message {
                data["message"] = json!(message);
            }
            Ok(Some(data))
        })
    }
}
