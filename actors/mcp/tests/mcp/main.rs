//! pith-mcp's integration tests, against real MCP servers: `pith-mcp-test-server` (rmcp's
//! server side, over stdio and streamable HTTP) and `@modelcontextprotocol/server-filesystem`
//! from npm, run as users run it.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod http;
mod published;
mod stdio;
mod support;
