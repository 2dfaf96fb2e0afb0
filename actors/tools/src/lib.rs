//! pi's built-in coding tools (`read`, `bash`, `edit`, `write`, pi-coding-agent 0.73.1
//! `core/tools/*`; `grep`, `find`, `ls` from pi 1.6.0), and user bash (`!cmd`,
//! [`bash::execute_bash`]).
//!
//! What the model sees (names, descriptions, schemas, result texts and `details`) is pi's,
//! word for word. A tool's failure is its [`ToolError`], whose text the agent turns into pi's error
//! result (spec: agent-and-events.md §1.3). A `details` of `null` stands for pi's `undefined`
//! (no details at all).
//!
//! - [`read`], [`write`](mod@write), [`edit`] (+ [`edit_diff`], [`line_diff`]), [`bash`] (+ [`shell`], `output`): the tools.
//! - [`grep`], [`find`], [`ls`]: pi's read-only exploration tools, with ripgrep's and fd's
//!   crates in process (`walk`: their ignore rules; `listing`: their shared result ending).
//! - [`truncate`]: pi's 2000-line / 50 KB limits; [`paths`]: how a `path` argument resolves.
//! - [`sanitize`]: pi's ANSI stripping and control-character removal (user bash), and
//!   [`sanitize::for_terminal`], which frontends apply to every text they print.
//! - [`guard`]: `pith __guard`, which keeps extension and MCP server processes from outliving
//!   a killed pith ([`ChildGuard`]).
//! - [`spill`]: the per-process folder for full outputs ([`OutputDir`]), removed at exit.
//! - `args`: pi's argument conversion and `Validation failed` texts.
//! - `image`, `node_error`, `utf8`, `mutation_queue`: small helpers named after
//!   what they do.
//! - [`tool`]: the seam ([`Tool`], [`ToolContext`], [`ToolOutput`], [`Toolset`]); a tool is
//!   called with a `CancellationToken` that the user's abort cancels.
//!
//! This crate sees `pith-events` only: a tool knows nothing of sessions or actors.

use std::future::Future;
use std::sync::Arc;

pub use guard::ChildGuard;
pub use spill::OutputDir;
pub use tool::{
    Tool, ToolContext, ToolError, ToolFuture, ToolModel, ToolOutput, ToolSource, Toolset,
};

mod args;
pub mod bash;
pub mod edit;
pub mod edit_diff;
pub mod find;
pub mod grep;
pub mod guard;
pub mod image;
pub mod line_diff;
mod listing;
pub mod ls;
mod mutation_queue;
mod node_error;
mod output;
pub mod paths;
pub mod read;
pub mod sanitize;
pub mod shell;
pub mod spill;
pub mod tool;
pub mod truncate;
mod utf8;
mod walk;
pub mod write;

pub use bash::{BashResult, BashTool, execute_bash, execute_bash_with};
pub use edit::EditTool;
pub use find::FindTool;
pub use grep::GrepTool;
pub use ls::LsTool;
pub use read::ReadTool;
pub use shell::{ShellConfig, ShellError};
pub use write::WriteTool;

/// Names of the built-in tools, in pi's default order (`createCodingTools`: read, bash, edit,
/// write), which is also the default active set.
pub const BUILTIN_TOOL_NAMES: [&str; 4] = ["read", "bash", "edit", "write"];

/// pi's default tools with default shell settings: read, bash, edit, write.
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    builtin_tools_with(&ShellConfig::default())
}

/// pi's default tools, the bash tool using `shell` (the `shellPath` / `shellCommandPrefix`
/// settings).
pub fn builtin_tools_with(shell: &ShellConfig) -> Vec<Arc<dyn Tool>> {
    BUILTIN_TOOL_NAMES
        .iter()
        .filter_map(|name| tool_by_name_with(name, shell))
        .collect()
}

/// Every built-in tool name pith has, in pi's `allTools` order: the default set, then the
/// read-only exploration tools.
pub const ALL_TOOL_NAMES: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/// The built-in tool called `name` (for `--tools a,b`); `None` for names pith does not have.
pub fn tool_by_name(name: &str) -> Option<Arc<dyn Tool>> {
    tool_by_name_with(name, &ShellConfig::default())
}

/// [`tool_by_name`] with shell settings for `bash`.
pub fn tool_by_name_with(name: &str, shell: &ShellConfig) -> Option<Arc<dyn Tool>> {
    match name {
        "read" => Some(Arc::new(ReadTool)),
        "bash" => Some(Arc::new(BashTool::new(shell.clone()))),
        "edit" => Some(Arc::new(EditTool)),
        "write" => Some(Arc::new(WriteTool)),
        "grep" => Some(Arc::new(GrepTool)),
        "find" => Some(Arc::new(FindTool)),
        "ls" => Some(Arc::new(LsTool)),
        _ => None,
    }
}

/// The one-line `promptSnippet` pi lists under "Available tools" in the system prompt;
/// `None` for tools without one (pi then leaves the tool out of that list).
pub fn prompt_snippet(name: &str) -> Option<&'static str> {
    match name {
        "read" => Some("Read file contents"),
        "bash" => Some("Execute bash commands (ls, grep, find, etc.)"),
        "edit" => Some(
            "Make precise file edits with exact text replacement, including multiple disjoint edits in one call",
        ),
        "write" => Some("Create or overwrite files"),
        "grep" => Some("Search file contents for patterns (respects .gitignore)"),
        "find" => Some("Find files by glob pattern (respects .gitignore)"),
        "ls" => Some("List directory contents"),
        _ => None,
    }
}

/// The `promptGuidelines` a tool adds to the system prompt's rules, in pi 1.6.0's order
/// (bash's `PI_*` hint is left out: pith's bash sets no such variables).
pub fn prompt_guidelines(name: &str) -> &'static [&'static str] {
    match name {
        "read" => &["Use read to examine files instead of cat or sed."],
        "edit" => &[
            "Use edit for targeted changes. Batch changes to one file in a single call.",
            "Each edits[].oldText must exactly and uniquely match the original file. Keep matches short and non-overlapping; merge nearby changes without including large unchanged regions.",
        ],
        "write" => &["Use write only for new files or complete rewrites."],
        _ => &[],
    }
}

/// Whether the call was aborted already.
fn aborted(ctx: &ToolContext) -> bool {
    ctx.abort.is_cancelled()
}

/// Runs `work`, giving up with pi's `Operation aborted` as soon as the abort flag rises (the
/// work itself may still finish in the background, as in pi).
async fn until_aborted<F>(ctx: &ToolContext, work: F) -> Result<ToolOutput, ToolError>
where
    F: Future<Output = Result<ToolOutput, ToolError>>,
{
    tokio::select! {
        r = work => r,
        () = ctx.abort.cancelled() => Err(ToolError::Aborted),
    }
}
