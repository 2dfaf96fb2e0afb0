//! The seam to tools: what the model is told about a tool ([`ToolSpec`]) and how a call runs
//! ([`Tool::run`]) (spec: agent-and-events.md §1.3).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{mpsc, watch};

use pith_events::ContentBlock;

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

/// A finished call's result: the toolResult message's `content` and `details`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// What the model sees: text and image blocks.
    pub content: Vec<ContentBlock>,
    /// Tool-specific data for frontends (pi's shapes, e.g. `{truncation, fullOutputPath}`);
    /// `null` when there is none (pi's `undefined`: the key is left out of the entry).
    pub details: Value,
}

/// What a running call may use.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The session's working directory: relative paths resolve against it and commands run
    /// in it.
    pub cwd: PathBuf,
    /// Turns `true` when the user aborts; a call should stop soon after and return an error.
    pub abort: watch::Receiver<bool>,
    /// The call's id, for progress reports.
    pub tool_call_id: String,
    /// Partial results while the call runs (pi's `tool_execution_update`); sending may fail
    /// when nobody listens, which is fine.
    pub progress: Option<mpsc::UnboundedSender<ToolOutput>>,
}

/// A running call: `Ok` is the result, `Err` the error text the model gets (`isError: true`).
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<ToolOutput, String>> + Send>>;

/// One tool.
pub trait Tool: Send + Sync + 'static {
    /// The tool's name, description and argument schema.
    fn spec(&self) -> ToolSpec;

    /// Runs one call with the model's arguments (not validated beyond JSON: a tool reports
    /// bad arguments as an `Err`).
    fn run(&self, args: Value, ctx: ToolContext) -> ToolFuture;
}

/// The tools a session may call, in the order they are offered to the model.
#[derive(Clone, Default)]
pub struct Toolset {
    tools: Vec<Arc<dyn Tool>>,
}

impl Toolset {
    /// No tools at all.
    pub fn none() -> Self {
        Self::default()
    }

    /// These tools, in this order.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        Self { tools }
    }

    /// The specs sent to the model.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    /// The tool called `name`; `None` gives pi's `Tool <name> not found` result.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.spec().name == name).cloned()
    }

    /// Tool names, in order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec().name).collect()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

impl std::fmt::Debug for Toolset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}
