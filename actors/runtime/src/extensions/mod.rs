//! Extensions hosted out of process and what all extensions share (spec: extensions.md):
//!
//! - [`registry`]: the tools extensions register, read by the Agent each turn.
//! - [`schema`]: checks tool arguments against a tool's `inputSchema` before `tool_call`.

pub mod registry;
pub mod schema;
