//! pi's `write` tool (`core/tools/write.js`): creates or overwrites a file, creating parent
//! directories.

use crate::tool::ToolError;
use pith_events::ContentBlock;
use serde_json::{Value, json};

use super::args::{self, Object, Ty};
use super::{aborted, mutation_queue, node_error, paths, until_aborted};
use crate::tool::{Tool, ToolContext, ToolFuture, ToolOutput, ToolSpec};

const SCHEMA: Object = Object {
    props: &[("path", Ty::String), ("content", Ty::String)],
    required: &["path", "content"],
    additional: true,
};

/// The `write` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteTool;

impl Tool for WriteTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            prefers_strict_schema: true,
            name: "write".to_owned(),
            description: "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.".to_owned(),
            parameters: json!({
                "type": "object",
                "required": ["path", "content"],
                "properties": {
                    "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
                    "content": {"type": "string", "description": "Content to write to the file"}
                }
            }),
        }
    }

    /// Ok: `Successfully wrote to <path>` (pi 1.6.0's text), `<path>` the argument as given;
    /// details `null`. Err: Node's message, e.g.
    /// `EISDIR: illegal operation on a directory, open '<abs>'`, or `Operation aborted`.
    fn run(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let args = args::validate("write", &SCHEMA, &args)?;
            let path = args
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let content = args
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let absolute = paths::resolve_to_cwd(&path, &ctx.cwd);
            let _lock = mutation_queue::lock(&absolute).await;
            if aborted(&ctx) {
                return Err(ToolError::Aborted);
            }
            until_aborted(&ctx, async {
                if let Some(dir) = absolute.parent() {
                    tokio::fs::create_dir_all(dir)
                        .await
                        .map_err(|e| node_error::message(&e, "mkdir", Some(dir)))?;
                }
                tokio::fs::write(&absolute, content.as_bytes())
                    .await
                    .map_err(|e| node_error::message(&e, "open", Some(&absolute)))?;
                Ok(ToolOutput {
                    content: vec![ContentBlock::text(format!("Successfully wrote to {path}"))],
                    details: Value::Null,
                    structured_content: None,
                })
            })
            .await
        })
    }
}
