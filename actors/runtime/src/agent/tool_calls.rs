//! Running the tool calls of one assistant message (spec: agent-and-events.md §1.3).

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tracing::Instrument;

use pith_events::{AgentEvent, AgentMessage, ContentBlock, ToolResultMessage};

use super::Run;
use crate::extension_host::{ToolCallEvent, ToolResultEvent};
use crate::extensions::registry::Found;
use crate::extensions::schema::validate;
use pith_tools::tool::{ToolContext, ToolError, ToolModel, ToolOutput};

/// What a running call reports to the turn.
enum Report {
    Progress(usize, ToolOutput),
    /// The result and how long the tool's execute took, in ms.
    Done(usize, Result<ToolOutput, ToolError>, u64),
}

/// A turn's tool calls as they settle, by call index.
struct Batch {
    outcomes: Vec<Option<(Vec<ContentBlock>, Value, bool)>>,
    /// pi ≥ 1.1 times each execute (not the lookup or the gates): `durationMs` of the
    /// toolResult and of `tool_execution_end`; absent for a call that never ran.
    durations: Vec<Option<u64>>,
    /// The arguments each call ran with (a `tool_call` gate may replace them).
    ran_with: Vec<Value>,
    /// Calls started and not yet done.
    running: usize,
}

impl Run {
    /// Runs a turn's tool calls (spec: agent-and-events.md §1.3): `tool_execution_start` for
    /// each in call order, unknown tools answered at once, the others run concurrently with
    /// `tool_execution_update`/`tool_execution_end` in completion order. When one of the
    /// calls is to a tool declared `executionMode: "sequential"` (extensions.md §1.2), every
    /// call of the turn runs alone, each ended before the next starts (pi's
    /// `executeToolCallsSequential`). Returns the toolResult messages in call order.
    pub(super) async fn run_tools(&self, calls: &[(String, String, Value)]) -> Vec<AgentMessage> {
        let registry = self.args.extensions.registry();
        let sequential = calls.iter().any(|(_, name, _)| {
            registry
                .find(&self.args.tools, name)
                .is_some_and(|f| f.sequential)
        });
        let mut batch = Batch {
            outcomes: vec![None; calls.len()],
            durations: vec![None; calls.len()],
            ran_with: calls.iter().map(|(_, _, a)| a.clone()).collect(),
            running: 0,
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        for (index, (id, name, args)) in calls.iter().enumerate() {
            self.emit(AgentEvent::ToolExecutionStart {
                tool_call_id: id.clone(),
                tool_name: name.clone(),
                args: args.clone(),
            })
            .await;
            let found = registry.find(&self.args.tools, name);
            let prepared = match found {
                // pi's error results carry `details: {}` (agent-and-events.md §1.3).
                None => Err(format!("Tool {name} not found")),
                Some(found) => self.prepare(id, name, args, found).await,
            };
            let (tool, args) = match prepared {
                Ok(ready) => ready,
                Err(text) => {
                    let outcome = (vec![ContentBlock::text(text)], json!({}), true);
                    self.end_tool(id, name, &outcome, Map::new(), None).await;
                    batch.outcomes[index] = Some(outcome);
                    continue;
                }
            };
            batch.ran_with[index] = args.clone();
            let (progress_tx, mut progress_rx) = mpsc::unbounded_channel();
            let ctx = ToolContext {
                cwd: self.args.cwd.clone(),
                abort: self.abort.clone(),
                tool_call_id: id.clone(),
                progress: Some(progress_tx),
                output_dir: self.args.tools.output_dir().clone(),
                model: Some(ToolModel {
                    id: self.args.model.id.clone(),
                    accepts_images: self.args.provider.accepts_images(&self.args.model.id),
                }),
            };
            let call = tool.run(args, ctx);
            let tx = tx.clone();
            batch.running += 1;
            // Each execution is a span of its own in traces.
            let span = tracing::info_span!("tool", tool = %name, call = %id);
            tokio::spawn(
                async move {
                    let forward = {
                        let tx = tx.clone();
                        tokio::spawn(async move {
                            while let Some(p) = progress_rx.recv().await {
                                let _ = tx.send(Report::Progress(index, p));
                            }
                        })
                    };
                    // tokio's clock: monotonic, and paused in tests.
                    let started = tokio::time::Instant::now();
                    // A panicking tool is a failed call, not a dead agent.
                    let result = match tokio::spawn(call.in_current_span()).await {
                        Ok(result) => result,
                        Err(e) => Err(ToolError::Failed(format!("the tool failed: {e}"))),
                    };
                    // pi: `Math.round(performance.now() - startedAt)`.
                    let took = (started.elapsed().as_secs_f64() * 1000.0).round() as u64;
                    let _ = forward.await;
                    let _ = tx.send(Report::Done(index, result, took));
                }
                .instrument(span),
            );
            // One at a time: this call ends before the next one starts.
            while sequential && batch.running > 0 {
                let Some(report) = rx.recv().await else { break };
                self.settle(calls, report, &mut batch).await;
            }
        }
        drop(tx);
        while batch.running > 0 {
            let Some(report) = rx.recv().await else { break };
            self.settle(calls, report, &mut batch).await;
        }
        calls
            .iter()
            .zip(batch.outcomes)
            .zip(batch.durations)
            .map(|(((id, name, _), outcome), duration_ms)| {
                let (content, details, is_error) = outcome.unwrap_or_else(|| {
                    (
                        vec![ContentBlock::text("the tool call was lost")],
                        json!({}),
                        true,
                    )
                });
                AgentMessage::ToolResult(ToolResultMessage {
                    tool_call_id: id.clone(),
                    tool_name: name.clone(),
                    content,
                    // pi leaves `details` out when a tool gives none.
                    details: (!details.is_null()).then_some(details),
                    is_error,
                    duration_ms,
                    timestamp: self.args.clock.now_ms(),
                })
            })
            .collect()
    }

    /// Takes one report of a running call: progress becomes `tool_execution_update`, a
    /// finished call is patched by `tool_result` interceptors and ended.
    async fn settle(&self, calls: &[(String, String, Value)], report: Report, batch: &mut Batch) {
        match report {
            Report::Progress(index, partial) => {
                let (id, name, args) = &calls[index];
                self.emit(AgentEvent::ToolExecutionUpdate {
                    tool_call_id: id.clone(),
                    tool_name: name.clone(),
                    args: args.clone(),
                    partial_result: result_json(&partial.content, &partial.details),
                })
                .await;
            }
            Report::Done(index, result, took) => {
                batch.running -= 1;
                // What pi's event `result` holds besides content and details: the
                // structured content, and `isError` when the tool returned its error
                // result (a thrown error has neither).
                let mut extra = Map::new();
                let outcome = match result {
                    Ok(out) => {
                        if let Some(s) = out.structured_content {
                            extra.insert("structuredContent".into(), s);
                        }
                        (out.content, out.details, false)
                    }
                    Err(ToolError::Result(out)) => {
                        if let Some(s) = out.structured_content {
                            extra.insert("structuredContent".into(), s);
                        }
                        extra.insert("isError".into(), Value::Bool(true));
                        (out.content, out.details, true)
                    }
                    Err(e) => (vec![ContentBlock::text(e.to_string())], json!({}), true),
                };
                let (id, name, _) = &calls[index];
                let outcome = self
                    .patch_result(id, name, &batch.ran_with[index], outcome)
                    .await;
                self.end_tool(id, name, &outcome, extra, Some(took)).await;
                batch.outcomes[index] = Some(outcome);
                batch.durations[index] = Some(took);
            }
        }
    }

    /// pi's `prepareToolCall` after the lookup: the arguments checked against an extension
    /// tool's schema, then the `tool_call` gates (spec: extensions.md §1.2). `Err` is the
    /// error result's text: the validation failure, the block reason, or pi's
    /// `Tool execution was blocked`.
    async fn prepare(
        &self,
        id: &str,
        name: &str,
        args: &Value,
        found: Found,
    ) -> Result<(std::sync::Arc<dyn pith_tools::tool::Tool>, Value), String> {
        if let Some(schema) = &found.schema {
            validate(name, schema, args)?;
        }
        if !self.args.extensions.wants("tool_call") {
            return Ok((found.tool, args.clone()));
        }
        let call = ToolCallEvent {
            tool_call_id: id.to_owned(),
            tool_name: name.to_owned(),
            input: args.clone(),
            source: found.source,
            annotations: found.annotations,
        };
        let gated = self.args.extensions.tool_call(&self.from, call).await;
        if self.abort.is_cancelled() {
            return Err(ToolError::Aborted.to_string());
        }
        match gated {
            Ok(args) => Ok((found.tool, args)),
            Err(reason) if reason.is_empty() => Err("Tool execution was blocked".into()),
            Err(reason) => Err(reason),
        }
    }

    /// pi's `afterToolCall`: the `tool_result` patches, in load order.
    async fn patch_result(
        &self,
        id: &str,
        name: &str,
        args: &Value,
        outcome: (Vec<ContentBlock>, Value, bool),
    ) -> (Vec<ContentBlock>, Value, bool) {
        if !self.args.extensions.wants("tool_result") {
            return outcome;
        }
        let (content, details, is_error) = outcome;
        let result = ToolResultEvent {
            tool_call_id: id.to_owned(),
            tool_name: name.to_owned(),
            input: args.clone(),
            content,
            details,
            is_error,
        };
        let patched = self.args.extensions.tool_result(&self.from, result).await;
        (patched.content, patched.details, patched.is_error)
    }

    /// `tool_execution_end`; `extra` members of the tool's own result (pi 1.6.0's
    /// `structuredContent`, `isError`) ride in its `result` after content and details;
    /// `duration_ms` is how long the execute took (none: it never ran).
    async fn end_tool(
        &self,
        id: &str,
        name: &str,
        outcome: &(Vec<ContentBlock>, Value, bool),
        extra: Map<String, Value>,
        duration_ms: Option<u64>,
    ) {
        let mut result = result_json(&outcome.0, &outcome.1);
        if let Value::Object(r) = &mut result {
            r.extend(extra);
        }
        self.emit(AgentEvent::ToolExecutionEnd {
            tool_call_id: id.to_owned(),
            tool_name: name.to_owned(),
            result,
            is_error: outcome.2,
            duration_ms,
        })
        .await;
    }
}

/// A tool result as pi's events carry it: `{content, details}`, without `details` when the
/// tool gave none (JSON `undefined` disappears).
fn result_json(content: &[ContentBlock], details: &Value) -> Value {
    if details.is_null() {
        json!({ "content": content })
    } else {
        json!({ "content": content, "details": details })
    }
}
