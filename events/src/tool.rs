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
    /// pi's `constrainedSampling: {type: "json_schema", strict: "prefer"}` (its read, bash,
    /// edit and write tools): a provider that supports strict sampling sends the strict form
    /// of `parameters` (every property required, optional ones nullable, no additional
    /// properties) when the schema has one; otherwise the schema as it is.
    pub prefers_strict_schema: bool,
}
