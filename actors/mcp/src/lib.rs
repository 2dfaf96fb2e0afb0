//! MCP servers for pith (spec: extensions.md §1.3): pi 1.6.0's `mcp.json`, one task per
//! server over the official Rust SDK (`rmcp`), and their tools as pith tools.
//!
//! - [`config`]: the files (`~/.pith/agent/mcp.json`, a trusted project's `.pith/mcp.json`),
//!   their validation with pi's messages, `${VAR}`/`!command` values, and `pith mcp add|remove`
//!   edits.
//! - [`server`]: one server's task: connect (stdio child in its own process group, or
//!   streamable HTTP), reconnect on the next call after a drop, refresh on
//!   `tools/list_changed`, stop without leaving processes.
//! - [`hub`]: [`McpHub`], the servers of a runtime; it is a [`pith_tools::ToolSource`], so
//!   every session's toolset offers the servers' tools as they come and go.
//! - [`tool`]: [`tool::McpTool`], one server tool as a [`pith_tools::Tool`] (timeouts,
//!   progress, abort).
//! - [`naming`]: `mcp__<server>__<tool>` names; [`output`]: results as pith's content blocks.
//!
//! This crate sees `pith-events`, `pith-tools` and `pith-llm` (for pi's config-value
//! resolution), never the runtime.

pub mod config;
pub mod error;
pub mod hub;
pub mod naming;
pub mod output;
pub mod server;
pub mod tool;

pub use config::{ConfigProblem, McpConfig, ServerConfig, Transport};
pub use error::{Error, Result};
pub use hub::{McpHub, ServerStatus};
pub use server::ServerState;
