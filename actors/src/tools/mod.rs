//! pi's built-in coding tools (`read`, `bash`, `edit`, `write`, pi-coding-agent 0.73.1
//! `core/tools/*`), and user bash (`!cmd`, [`bash::execute_bash`]).
//!
//! What the model sees (names, descriptions, schemas, result texts and `details`) is pi's,
//! word for word. A tool's failure is its `Err(text)`, which the agent turns into pi's error
//! result (spec: agent-and-events.md §1.3). A `details` of `null` stands for pi's `undefined`
//! (no details at all).
//!
//! - [`read`], [`write`], [`edit`] (+ [`edit_diff`], [`line_diff`]), [`bash`] (+ [`shell`], `output`): the tools.
//! - [`truncate`]: pi's 2000-line / 50 KB limits; [`paths`]: how a `path` argument resolves.
//! - [`sanitize`]: ANSI stripping and control-character removal for user bash.
//! - `args`: pi's argument conversion and `Validation failed` texts.
//! - `image`, `node_error`, `spill`, `utf8`, `mutation_queue`: small helpers named after
//!   what they do.

use std::future::Future;
use std::sync::Arc;

use crate::tool::{Tool, ToolContext, ToolOutput};

mod args;
pub mod bash;
pub mod edit;
pub mod edit_diff;
pub mod image;
pub mod line_diff;
mod mutation_queue;
mod node_error;
mod output;
pub mod paths;
pub mod read;
pub mod sanitize;
pub mod shell;
mod spill;
pub mod truncate;
mod utf8;
pub mod write;

pub use bash::{BashResult, BashTool, execute_bash, execute_bash_with};
pub use edit::EditTool;
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
        _ => None,
    }
}

/// The `promptGuidelines` a tool adds to the system prompt's guidelines, in pi's order.
pub fn prompt_guidelines(name: &str) -> &'static [&'static str] {
    match name {
        "read" => &["Use read to examine files instead of cat or sed."],
        "edit" => &[
            "Use edit for precise changes (edits[].oldText must match exactly)",
            "When changing multiple separate locations in one file, use one edit call with multiple entries in edits[] instead of multiple edit calls",
            "Each edits[].oldText is matched against the original file, not after earlier edits are applied. Do not emit overlapping or nested edits. Merge nearby changes into one edit.",
            "Keep edits[].oldText as small as possible while still being unique in the file. Do not pad with large unchanged regions.",
        ],
        "write" => &["Use write only for new files or complete rewrites."],
        _ => &[],
    }
}

/// Whether the call was aborted already.
fn aborted(ctx: &ToolContext) -> bool {
    *ctx.abort.borrow()
}

/// Runs `work`, giving up with pi's `Operation aborted` as soon as the abort flag rises (the
/// work itself may still finish in the background, as in pi).
async fn until_aborted<F>(ctx: &ToolContext, work: F) -> Result<ToolOutput, String>
where
    F: Future<Output = Result<ToolOutput, String>>,
{
    let mut abort = ctx.abort.clone();
    let raised = async move {
        if abort.wait_for(|a| *a).await.is_err() {
            // Nobody can abort any more: only the work can end this.
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        r = work => r,
        () = raised => Err("Operation aborted".to_owned()),
    }
}
