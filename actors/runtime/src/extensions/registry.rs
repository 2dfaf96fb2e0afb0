//! The tools extensions register, in one registry the Agent reads at every tool lookup and
//! every model request (spec: extensions.md §1.1 `registry.rs`, §1.2 "Tools").
//!
//! A process-hosted extension declares its tools in its `initialize` answer and again after
//! each restart; its actor replaces its entry here each time, and removes it when the
//! extension is disabled or stopped. Names that collide with a built-in are ignored unless the
//! manifest says `"override": true` (a warning is logged either way).

use std::sync::{Arc, RwLock};

use serde_json::Value;

use pith_tools::tool::{Tool, ToolSpec, Toolset};

use crate::system_prompt::PromptTool;

/// One registered tool.
#[derive(Clone)]
pub struct RegisteredTool {
    /// The extension that serves it (`source` is `extension:<name>`).
    pub extension: String,
    /// Runs a call.
    pub tool: Arc<dyn Tool>,
    /// MCP's hints (`readOnlyHint`, …), `{}` when none; shown to `tool_call` gates.
    pub annotations: Value,
    /// The manifest allows it to replace a built-in of the same name.
    pub overrides: bool,
    /// `inputSchema`, checked before `tool_call` (spec: extensions.md §1.2 "Tools").
    pub schema: Value,
    /// Its `promptSnippet` and `promptGuidelines` for the system prompt.
    pub prompt: PromptTool,
    /// `executionMode: "sequential"`: a turn that calls it runs all its calls one at a time
    /// (pi's `executeToolCalls`).
    pub sequential: bool,
}

/// A tool found for a call: what runs it and how gates see it.
#[derive(Clone)]
pub struct Found {
    /// Runs the call.
    pub tool: Arc<dyn Tool>,
    /// `builtin`, `extension:<name>` or `mcp:<server>`.
    pub source: String,
    /// The tool's behaviour hints (an MCP server's `destructiveHint`, …); `{}` for built-ins.
    pub annotations: Value,
    /// The schema to validate arguments against; `None` for built-ins (they check their own).
    pub schema: Option<Value>,
    /// Calls of a turn that calls it run one at a time (see [`RegisteredTool::sequential`]).
    pub sequential: bool,
}

/// The extension tools of one session; clones share them.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Arc<RwLock<Vec<RegisteredTool>>>,
}

impl ToolRegistry {
    /// Replaces the tools of `extension` (in declaration order, after the other extensions').
    pub fn set(&self, extension: &str, tools: Vec<RegisteredTool>) {
        if let Ok(mut all) = self.tools.write() {
            all.retain(|t| t.extension != extension);
            all.extend(tools);
        }
    }

    /// Removes the tools of `extension`.
    pub fn remove(&self, extension: &str) {
        self.set(extension, Vec::new());
    }

    fn snapshot(&self) -> Vec<RegisteredTool> {
        self.tools.read().map(|t| t.clone()).unwrap_or_default()
    }

    /// The tools the system prompt lists, with their snippets and guidelines:
    /// [`ToolRegistry::specs`] without the tools of sources (MCP servers), whose descriptions
    /// reach the model with the request's tools only. A built-in an extension overrides takes
    /// the extension's snippet and guidelines (pi: the definition replaces the built-in's).
    pub fn prompt_tools(&self, builtins: &Toolset) -> Vec<PromptTool> {
        let ext = self.snapshot();
        let fixed: Vec<String> = builtins.fixed_specs().into_iter().map(|s| s.name).collect();
        let from_sources: Vec<String> = builtins
            .names()
            .into_iter()
            .filter(|n| !fixed.contains(n))
            .collect();
        self.specs(builtins)
            .into_iter()
            .filter(|s| !from_sources.contains(&s.name))
            .map(|s| {
                let declared = ext.iter().find(|t| {
                    t.tool.spec().name == s.name && (t.overrides || !fixed.contains(&s.name))
                });
                match declared {
                    Some(t) => t.prompt.clone(),
                    None => PromptTool::builtin(&s.name),
                }
            })
            .collect()
    }

    /// The specs offered to the model: the built-ins (an overridden one replaced in place),
    /// then the extension tools that collide with nothing, in load order.
    pub fn specs(&self, builtins: &Toolset) -> Vec<ToolSpec> {
        let ext = self.snapshot();
        let names = builtins.names();
        let mut specs: Vec<ToolSpec> = builtins
            .specs()
            .into_iter()
            .map(|s| {
                ext.iter()
                    .find(|t| t.overrides && t.tool.spec().name == s.name)
                    .map(|t| t.tool.spec())
                    .unwrap_or(s)
            })
            .collect();
        for t in &ext {
            let spec = t.tool.spec();
            if !names.contains(&spec.name) && !specs.iter().any(|s| s.name == spec.name) {
                specs.push(spec);
            }
        }
        specs
    }

    /// The tool a call named `name` runs: an overriding extension tool, else the built-in,
    /// else the first extension tool of that name.
    pub fn find(&self, builtins: &Toolset, name: &str) -> Option<Found> {
        let ext = self.snapshot();
        let of = |t: &RegisteredTool| Found {
            tool: t.tool.clone(),
            source: format!("extension:{}", t.extension),
            annotations: t.annotations.clone(),
            schema: Some(t.schema.clone()),
            sequential: t.sequential,
        };
        let named = |t: &&RegisteredTool| t.tool.spec().name == name;
        if let Some(t) = ext.iter().filter(named).find(|t| t.overrides) {
            return Some(of(t));
        }
        if let Some(tool) = builtins.get(name) {
            // A source's tool (an MCP server's) says where it comes from and how it behaves:
            // gates see `mcp:<server>` and the server's hints (spec: extensions.md §1.3).
            return Some(Found {
                source: tool.source().unwrap_or_else(|| "builtin".into()),
                annotations: tool
                    .annotations()
                    .unwrap_or_else(|| Value::Object(Default::default())),
                tool,
                schema: None,
                sequential: false,
            });
        }
        ext.iter().find(named).map(of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_events::ToolSpec;
    use pith_tools::tool::{ToolContext, ToolFuture};

    /// A tool as an MCP server's looks to the registry.
    struct ServerTool;

    impl Tool for ServerTool {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                prefers_strict_schema: false,
                name: "mcp__fs__delete".into(),
                description: "Delete a file".into(),
                parameters: serde_json::json!({"type": "object"}),
            }
        }
        fn run(&self, _: Value, _: ToolContext) -> ToolFuture {
            Box::pin(async { Err(pith_tools::tool::ToolError::Aborted) })
        }
        fn source(&self) -> Option<String> {
            Some("mcp:fs".into())
        }
        fn annotations(&self) -> Option<Value> {
            Some(serde_json::json!({"destructiveHint": true}))
        }
    }

    #[test]
    fn a_source_tool_reaches_gates_with_its_source_and_hints() {
        let tools = Toolset::new(vec![Arc::new(ServerTool)]);
        let found = ToolRegistry::default()
            .find(&tools, "mcp__fs__delete")
            .expect("found");
        assert_eq!(found.source, "mcp:fs");
        assert_eq!(
            found.annotations,
            serde_json::json!({"destructiveHint": true})
        );
    }
}
