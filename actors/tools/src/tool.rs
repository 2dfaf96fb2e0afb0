//! The seam to tools: what the model is told about a tool ([`ToolSpec`]) and how a call runs
//! ([`Tool::run`]) (spec: agent-and-events.md §1.3).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use pith_events::ContentBlock;

pub use pith_events::ToolSpec;

use crate::spill::OutputDir;

/// A finished call's result: the toolResult message's `content` and `details`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// What the model sees: text and image blocks.
    pub content: Vec<ContentBlock>,
    /// Tool-specific data for frontends (pi's shapes, e.g. `{truncation, fullOutputPath}`);
    /// `null` when there is none (pi's `undefined`: the key is left out of the entry).
    pub details: Value,
    /// What programmatic callers get besides the text (pi 1.6.0's `structuredContent`: bash's
    /// `{output, truncated, exit_code, wall_time_seconds}`, read's text or image). It travels in
    /// `tool_execution_end.result` only; the toolResult entry keeps content and details.
    pub structured_content: Option<Value>,
}

/// What a running call may use.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The session's working directory: relative paths resolve against it and commands run
    /// in it.
    pub cwd: PathBuf,
    /// Cancelled when the user aborts; a call should stop soon after and return an error.
    pub abort: CancellationToken,
    /// The call's id, for progress reports.
    pub tool_call_id: String,
    /// Partial results while the call runs (pi's `tool_execution_update`); sending may fail
    /// when nobody listens, which is fine.
    pub progress: Option<mpsc::UnboundedSender<ToolOutput>>,
    /// Where full outputs go (bash's `pi-bash-*.log`): the process's own folder, shared by
    /// every call ([`Toolset::output_dir`]).
    pub output_dir: OutputDir,
    /// The model the call was made for (pi's `ctx.model`); `None` when not known.
    pub model: Option<ToolModel>,
}

impl ToolContext {
    /// A context for a call in `cwd` with no progress channel, a fresh output folder and no
    /// model (for calls made outside an agent run, and tests).
    pub fn new(cwd: impl Into<PathBuf>, abort: CancellationToken, tool_call_id: &str) -> Self {
        Self {
            cwd: cwd.into(),
            abort,
            tool_call_id: tool_call_id.to_owned(),
            progress: None,
            output_dir: OutputDir::new(),
            model: None,
        }
    }
}

/// What a tool may know of the model it works for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolModel {
    /// The model's id (`claude-sonnet-4-5`, …).
    pub id: String,
    /// Whether the model takes image input (pi: `model.input.includes("image")`). The read
    /// tool marks an image result for a model without it
    /// (`details.imageUnsupportedByModel`).
    pub accepts_images: bool,
}

/// A failed call. Its text is what the model gets (`isError: true`), in pi's words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The user aborted the call (pi's `Operation aborted`).
    #[error("Operation aborted")]
    Aborted,
    /// Any other failure, as pi words it (`Validation failed for tool …`, `Command exited
    /// with code 1`, a Node-style file error, …).
    #[error("{0}")]
    Failed(String),
    /// The tool answered with an error result of its own (an MCP server's `isError`): its
    /// content and details reach the model and the session as they are.
    #[error("{}", error_text(.0))]
    Result(Box<ToolOutput>),
}

/// The text blocks of an error result, one per line.
fn error_text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Tools build pi's texts as strings.
impl From<String> for ToolError {
    fn from(text: String) -> ToolError {
        ToolError::Failed(text)
    }
}

impl From<&str> for ToolError {
    fn from(text: &str) -> ToolError {
        ToolError::Failed(text.to_owned())
    }
}

/// A running call: `Ok` is the result, `Err` what the model gets as an error result.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send>>;

/// One tool.
pub trait Tool: Send + Sync + 'static {
    /// The tool's name, description and argument schema.
    fn spec(&self) -> ToolSpec;

    /// Runs one call with the model's arguments (not validated beyond JSON: a tool reports
    /// bad arguments as an `Err`).
    fn run(&self, args: Value, ctx: ToolContext) -> ToolFuture;

    /// Where the tool comes from, for gates and events: `None` for pith's own tools,
    /// `Some("mcp:<server>")` for an MCP server's (spec: extensions.md §1.3).
    fn source(&self) -> Option<String> {
        None
    }

    /// The tool's behaviour hints (`readOnlyHint`, `destructiveHint`, `idempotentHint`,
    /// `openWorldHint`, MCP's `ToolAnnotations`) as a JSON object, for gates; `None` when it
    /// declares none.
    fn annotations(&self) -> Option<Value> {
        None
    }
}

/// Tools that come and go while a session runs (MCP servers connecting, a server's
/// `tools/list_changed`): a [`Toolset`] asks for them at every lookup.
pub trait ToolSource: Send + Sync + 'static {
    /// The tools offered now, after the toolset's own; their names must not clash with them.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;

    /// Resolves once the source is worth asking: MCP waits for its servers' first connection,
    /// at most 10 s (spec: extensions.md §1.3). The agent awaits it before each model request;
    /// after the first wait it resolves at once.
    fn ready(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;

    /// A session starts in `cwd` (the first one, or a switch to a session of another
    /// directory): a source whose tools depend on the directory (a project's MCP servers)
    /// updates them before the session's first lookup. Nothing by default.
    fn cwd_changed<'a>(
        &'a self,
        cwd: &'a std::path::Path,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        let _ = cwd;
        Box::pin(async {})
    }
}

/// The tools a session may call, in the order they are offered to the model, and the
/// output folder their calls (and user bash) share; clones share both.
#[derive(Clone, Default)]
pub struct Toolset {
    tools: Vec<Arc<dyn Tool>>,
    /// Tools that change while the session runs (MCP), offered after `tools`.
    sources: Vec<Arc<dyn ToolSource>>,
    output_dir: OutputDir,
}

impl Toolset {
    /// No tools at all.
    pub fn none() -> Self {
        Self::default()
    }

    /// These tools, in this order.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        Self {
            tools,
            sources: Vec::new(),
            output_dir: OutputDir::new(),
        }
    }

    /// This toolset plus the tools `source` offers at each lookup.
    pub fn with_source(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.sources.push(source);
        self
    }

    /// Waits until every source is ready (see [`ToolSource::ready`]).
    pub async fn ready(&self) {
        for source in &self.sources {
            source.ready().await;
        }
    }

    /// Tells every source that a session starts in `cwd` (see [`ToolSource::cwd_changed`]).
    pub async fn cwd_changed(&self, cwd: &std::path::Path) {
        for source in &self.sources {
            source.cwd_changed(cwd).await;
        }
    }

    /// Every tool now: the fixed ones, then the sources' (a source tool whose name a fixed
    /// tool has is left out).
    fn all(&self) -> Vec<Arc<dyn Tool>> {
        let mut all = self.tools.clone();
        for source in &self.sources {
            for tool in source.tools() {
                let name = tool.spec().name;
                if !all.iter().any(|t| t.spec().name == name) {
                    all.push(tool);
                }
            }
        }
        all
    }

    /// The specs of the fixed tools only (the system prompt lists these, so it does not
    /// change as servers connect).
    pub fn fixed_specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    /// The folder for full outputs of this toolset's calls and of user bash: made on first
    /// use, removed when the last clone of the toolset is dropped (see [`crate::spill`]).
    pub fn output_dir(&self) -> &OutputDir {
        &self.output_dir
    }

    /// The specs sent to the model.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.all().iter().map(|t| t.spec()).collect()
    }

    /// The tool called `name`; `None` gives pi's `Tool <name> not found` result.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.all().into_iter().find(|t| t.spec().name == name)
    }

    /// Tool names, in order.
    pub fn names(&self) -> Vec<String> {
        self.all().iter().map(|t| t.spec().name).collect()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.all().is_empty()
    }
}

impl std::fmt::Debug for Toolset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}
