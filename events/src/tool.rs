//! What the model is told about a tool (spec: agent-and-events.md §1.3): the one shape the
//! tools crate produces and the providers send, so neither needs the other.

use serde_json::Value;

/// What the model is told about a tool: sent with every request.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls it by, e.g. `read`.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}
