//! Agent events: what the agent loop emits, in pi's JSON shape (spec: agent-and-events.md §1, §7).
//!
//! Serialized with `type` first and pi's member names. `turn_start`/`turn_end` carry the
//! `turnIndex` (and `timestamp`) of pi's extension events; what `--mode json` and `--mode rpc`
//! print is the listener shape of [`crate::listener`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{AgentMessage, ToolCall, Usage};

/// The kind of a streaming update of an assistant message (`assistantMessageEvent.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamKind {
    /// A text block starts.
    TextStart,
    /// More text.
    TextDelta,
    /// The text block is complete.
    TextEnd,
    /// A thinking block starts.
    ThinkingStart,
    /// More thinking.
    ThinkingDelta,
    /// The thinking block is complete.
    ThinkingEnd,
    /// A tool call starts.
    #[serde(rename = "toolcall_start")]
    ToolCallStart,
    /// More tool-call arguments (JSON text).
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta,
    /// The tool call is complete.
    #[serde(rename = "toolcall_end")]
    ToolCallEnd,
}

/// `assistantMessageEvent` of a `message_update`: pi-ai's stream event without its cumulative
/// `partial` (spec: agent-and-events.md §8.1). Each kind carries only its own members, so an
/// update costs what it adds, never a copy of the message so far:
///
/// - `text_start`/`thinking_start`: `{type, contentIndex}`;
/// - `*_delta`: `{type, contentIndex, delta}`;
/// - `text_end`/`thinking_end`: `{type, contentIndex, content}` (the whole block's text, once);
/// - `toolcall_start`: `{type, contentIndex, id, toolName}` (pi ≥ 0.84.3);
/// - `toolcall_end`: `{type, contentIndex, toolCall}` (the finished call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamUpdate {
    /// What happened.
    #[serde(rename = "type")]
    pub kind: StreamKind,
    /// Index of the content block it concerns, in the final `content`.
    #[serde(rename = "contentIndex")]
    pub content_index: usize,
    /// The new text, for `*_delta`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub delta: Option<String>,
    /// The whole block text, for `text_end` and `thinking_end`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub content: Option<String>,
    /// The call's id, for `toolcall_start`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub id: Option<String>,
    /// The tool's name, for `toolcall_start`.
    #[serde(rename = "toolName", skip_serializing_if = "Option::is_none", default)]
    pub tool_name: Option<String>,
    /// The finished call, for `toolcall_end`; written as a `toolCall` content block.
    #[serde(
        rename = "toolCall",
        skip_serializing_if = "Option::is_none",
        default,
        with = "tagged_tool_call"
    )]
    pub tool_call: Option<ToolCall>,
}

impl StreamUpdate {
    /// An update of `kind` at `content_index` with only `delta` (if any) set; the `*_end` and
    /// `toolcall_start` members are added with the `with_*` methods.
    pub fn new(kind: StreamKind, content_index: usize, delta: Option<String>) -> StreamUpdate {
        StreamUpdate {
            kind,
            content_index,
            delta,
            content: None,
            id: None,
            tool_name: None,
            tool_call: None,
        }
    }

    /// The update of `kind` at `content_index` of `reply` (the message after the change),
    /// with the members pi's event of that kind carries read from the block: the whole text
    /// at `text_end`/`thinking_end`, id and name at `toolcall_start`, the call at
    /// `toolcall_end`. Costs the block's size only at `*_end`. A block of another kind at the
    /// index (a provider bug) leaves the member out, as `JSON.stringify` drops `undefined`.
    pub fn of(
        kind: StreamKind,
        content_index: usize,
        delta: Option<String>,
        reply: &crate::message::AssistantMessage,
    ) -> StreamUpdate {
        use crate::message::ContentBlock;
        let update = StreamUpdate::new(kind, content_index, delta);
        let block = reply.content.get(content_index);
        match (kind, block) {
            (StreamKind::TextEnd, Some(ContentBlock::Text(t))) => {
                update.with_content(t.text.clone())
            }
            (StreamKind::ThinkingEnd, Some(ContentBlock::Thinking(t))) => {
                update.with_content(t.thinking.clone())
            }
            (StreamKind::ToolCallStart, Some(ContentBlock::ToolCall(c))) => {
                update.with_tool(c.id.clone(), c.name.clone())
            }
            (StreamKind::ToolCallEnd, Some(ContentBlock::ToolCall(c))) => {
                update.with_tool_call(c.clone())
            }
            (
                StreamKind::TextStart
                | StreamKind::TextDelta
                | StreamKind::TextEnd
                | StreamKind::ThinkingStart
                | StreamKind::ThinkingDelta
                | StreamKind::ThinkingEnd
                | StreamKind::ToolCallStart
                | StreamKind::ToolCallDelta
                | StreamKind::ToolCallEnd,
                _,
            ) => update,
        }
    }

    /// Sets `content`, the whole block text of a `text_end`/`thinking_end`.
    pub fn with_content(mut self, content: String) -> StreamUpdate {
        self.content = Some(content);
        self
    }

    /// Sets `id` and `toolName` of a `toolcall_start`.
    pub fn with_tool(mut self, id: String, tool_name: String) -> StreamUpdate {
        self.id = Some(id);
        self.tool_name = Some(tool_name);
        self
    }

    /// Sets `toolCall`, the finished call of a `toolcall_end`.
    pub fn with_tool_call(mut self, call: ToolCall) -> StreamUpdate {
        self.tool_call = Some(call);
        self
    }
}

/// `toolCall` as the content block `{"type":"toolCall", id, name, arguments}`.
mod tagged_tool_call {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::message::{ContentBlock, TaggedBlock, ToolCall};

    pub fn serialize<S: Serializer>(call: &Option<ToolCall>, s: S) -> Result<S::Ok, S::Error> {
        match call {
            Some(c) => TaggedBlock::ToolCall(c).serialize(s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ToolCall>, D::Error> {
        Ok(match Option::<ContentBlock>::deserialize(d)? {
            Some(ContentBlock::ToolCall(c)) => Some(c),
            Some(
                ContentBlock::Text(_)
                | ContentBlock::Thinking(_)
                | ContentBlock::Image(_)
                | ContentBlock::Unknown(_),
            )
            | None => None,
        })
    }
}

/// One event of the agent loop (spec: agent-and-events.md §1.2, §2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A run starts (`prompt` or `continue`).
    AgentStart,
    /// A turn starts: one LLM call and its tool calls. `turnIndex` restarts at 0 per run.
    TurnStart {
        /// 0-based turn number within the run.
        #[serde(rename = "turnIndex")]
        turn_index: u32,
        /// ms since the epoch.
        timestamp: i64,
    },
    /// A message begins (a prompt, a streamed assistant reply, a tool result).
    MessageStart {
        /// The message so far.
        message: AgentMessage,
    },
    /// A streamed assistant message changed: pi's wire form `{type, usage,
    /// assistantMessageEvent}` (pi ≥ 0.84, spec §8.1). Only what changed travels, so a
    /// reply of n deltas costs O(n) to stream and print; whoever needs the message so far
    /// folds the updates into the `message_start` message.
    MessageUpdate {
        /// The streaming reply's usage when the update was made (zero until the provider
        /// reports it).
        usage: Usage,
        /// What changed.
        #[serde(rename = "assistantMessageEvent")]
        update: StreamUpdate,
    },
    /// A message is complete; user, assistant, toolResult and custom messages are persisted now.
    MessageEnd {
        /// The final message.
        message: AgentMessage,
    },
    /// A tool call starts executing.
    ToolExecutionStart {
        /// The call's id.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// The tool.
        #[serde(rename = "toolName")]
        tool_name: String,
        /// Its arguments.
        args: Value,
    },
    /// A running tool call reported a partial result.
    ToolExecutionUpdate {
        /// The call's id.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// The tool.
        #[serde(rename = "toolName")]
        tool_name: String,
        /// Its arguments.
        args: Value,
        /// `{content, details}` so far.
        #[serde(rename = "partialResult")]
        partial_result: Value,
    },
    /// A tool call finished.
    ToolExecutionEnd {
        /// The call's id.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// The tool.
        #[serde(rename = "toolName")]
        tool_name: String,
        /// `{content, details}` of the result.
        result: Value,
        /// Whether the tool failed.
        #[serde(rename = "isError")]
        is_error: bool,
        /// How long the tool's execute took, in ms (pi ≥ 1.1); absent when it never ran.
        #[serde(
            rename = "durationMs",
            skip_serializing_if = "Option::is_none",
            default
        )]
        duration_ms: Option<u64>,
    },
    /// A turn ended.
    TurnEnd {
        /// 0-based turn number within the run.
        #[serde(rename = "turnIndex")]
        turn_index: u32,
        /// The turn's assistant message.
        message: AgentMessage,
        /// The tool results of the turn, in call order.
        #[serde(rename = "toolResults")]
        tool_results: Vec<AgentMessage>,
    },
    /// The run ended.
    AgentEnd {
        /// Every message the run added (prompts included).
        messages: Vec<AgentMessage>,
        /// The run's last reply will be retried automatically (pi ≥ 0.75.4, spec §2).
        #[serde(rename = "willRetry", default)]
        will_retry: bool,
    },
    /// All automatic work of a prompt is over: retries, overflow recovery and queued
    /// follow-ups included (pi ≥ 0.80.4, spec §2). Emitted once per settled prompt; what
    /// pi's `RpcClient` waits for.
    AgentSettled {
        /// The run ended because of an abort (pi ≥ 1.1).
        aborted: bool,
    },
    /// An entry appended outside message persistence (a retry's `context_edit`, an
    /// extension's entry), whole, as stored (pi 1.6.0, spec §2).
    EntryAppended {
        /// The entry's JSON object.
        entry: Value,
    },
    /// Output of a running rpc `bash` command (pi ≥ 0.82, rpc only, spec §5).
    BashExecutionUpdate {
        /// The `bash` request's id; absent when it had none.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        id: Option<Value>,
        /// The output chunk.
        delta: String,
    },
    /// A compaction or branch-summary request failed transiently and is retried
    /// (pi ≥ 0.81.1, spec §7).
    SummarizationRetryScheduled {
        /// 1-based attempt number.
        attempt: u32,
        /// `retry.maxRetries`.
        #[serde(rename = "maxAttempts")]
        max_attempts: u32,
        /// The wait before the attempt, in ms.
        #[serde(rename = "delayMs")]
        delay_ms: u64,
        /// The error that is retried.
        #[serde(rename = "errorMessage")]
        error_message: String,
    },
    /// A summarization retry starts (pi ≥ 0.81.1).
    SummarizationRetryAttemptStart {
        /// `compaction` or `branchSummary`.
        source: String,
        /// For `compaction`: `manual`, `threshold` or `overflow`.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        reason: Option<String>,
    },
    /// The summarization retries are over (pi ≥ 0.81.1).
    SummarizationRetryFinished,
    /// An extension's handler failed (rpc's `extension_error`, spec §9).
    ExtensionError {
        /// The extension's path (or name).
        #[serde(rename = "extensionPath")]
        extension_path: String,
        /// The event it was handling.
        event: String,
        /// The error text.
        error: String,
    },
    /// The steering / follow-up queues changed (full current lists).
    QueueUpdate {
        /// Queued steering texts.
        steering: Vec<String>,
        /// Queued follow-up texts.
        #[serde(rename = "followUp")]
        follow_up: Vec<String>,
    },
    /// The session name changed.
    SessionInfoChanged {
        /// The new name; absent when cleared.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        name: Option<String>,
    },
    /// The thinking level changed (pi's `thinking_level_changed`).
    ThinkingLevelChanged {
        /// The new level.
        level: crate::ThinkingLevel,
    },
    /// A failed reply is retried after a delay (spec: agent-and-events.md §4).
    AutoRetryStart {
        /// 1-based attempt number.
        attempt: u32,
        /// `retry.maxRetries`.
        #[serde(rename = "maxAttempts")]
        max_attempts: u32,
        /// The wait before the attempt, in ms.
        #[serde(rename = "delayMs")]
        delay_ms: u64,
        /// The error that is retried.
        #[serde(rename = "errorMessage")]
        error_message: String,
    },
    /// A retry chain ended: a reply succeeded, retries ran out, or the user cancelled.
    AutoRetryEnd {
        /// Whether a reply succeeded.
        success: bool,
        /// The last attempt made.
        attempt: u32,
        /// The error left, or `Retry cancelled`; absent on success.
        #[serde(
            rename = "finalError",
            skip_serializing_if = "Option::is_none",
            default
        )]
        final_error: Option<String>,
    },
    /// A compaction began (spec: compaction.md §8).
    CompactionStart {
        /// `manual`, `threshold` or `overflow`.
        reason: String,
    },
    /// A compaction ended: with its result, or why not (spec: compaction.md §8).
    CompactionEnd {
        /// As in `compaction_start`.
        reason: String,
        /// What was appended; absent when nothing was.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        result: Option<CompactionResult>,
        /// The compaction was cancelled.
        aborted: bool,
        /// The failed request is sent again with the compacted context.
        #[serde(rename = "willRetry")]
        will_retry: bool,
        /// `Compaction failed: …` and the like.
        #[serde(
            rename = "errorMessage",
            skip_serializing_if = "Option::is_none",
            default
        )]
        error_message: Option<String>,
    },
}

/// pi's `CompactionResult`: what a compaction entry records (spec: compaction.md §7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionResult {
    /// The summary text, file lists included.
    pub summary: String,
    /// Id of the first entry kept verbatim.
    #[serde(rename = "firstKeptEntryId")]
    pub first_kept_entry_id: String,
    /// Estimated context tokens before compacting.
    #[serde(rename = "tokensBefore")]
    pub tokens_before: u64,
    /// The context's estimated tokens once compacted (pi ≥ 1.x: the sum of its messages'
    /// estimates); absent when unknown.
    #[serde(
        rename = "estimatedTokensAfter",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub estimated_tokens_after: Option<u64>,
    /// What the summary requests cost (pi ≥ 0.81); absent for a summary an extension gave.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub usage: Option<crate::Usage>,
    /// `{readFiles, modifiedFiles}`; absent (`null` here) when an extension's summary gave
    /// none, as pi leaves `undefined` out.
    #[serde(skip_serializing_if = "Value::is_null", default)]
    pub details: Value,
}

impl AgentEvent {
    /// The event's `type` as pi spells it (`agent_start`, `message_end`, …).
    pub fn name(&self) -> &'static str {
        match self {
            AgentEvent::AgentStart => "agent_start",
            AgentEvent::TurnStart { .. } => "turn_start",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::AgentEnd { .. } => "agent_end",
            AgentEvent::AgentSettled { .. } => "agent_settled",
            AgentEvent::EntryAppended { .. } => "entry_appended",
            AgentEvent::BashExecutionUpdate { .. } => "bash_execution_update",
            AgentEvent::SummarizationRetryScheduled { .. } => "summarization_retry_scheduled",
            AgentEvent::SummarizationRetryAttemptStart { .. } => {
                "summarization_retry_attempt_start"
            }
            AgentEvent::SummarizationRetryFinished => "summarization_retry_finished",
            AgentEvent::ExtensionError { .. } => "extension_error",
            AgentEvent::QueueUpdate { .. } => "queue_update",
            AgentEvent::SessionInfoChanged { .. } => "session_info_changed",
            AgentEvent::ThinkingLevelChanged { .. } => "thinking_level_changed",
            AgentEvent::AutoRetryStart { .. } => "auto_retry_start",
            AgentEvent::AutoRetryEnd { .. } => "auto_retry_end",
            AgentEvent::CompactionStart { .. } => "compaction_start",
            AgentEvent::CompactionEnd { .. } => "compaction_end",
        }
    }
}
