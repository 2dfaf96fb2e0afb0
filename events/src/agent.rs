//! Agent events: what the agent loop emits, in pi's JSON shape (spec: agent-and-events.md §1, §7).
//!
//! Serialized with `type` first and pi's member names. `turn_start`/`turn_end` carry the
//! `turnIndex` (and `timestamp`) of pi's extension events; what `--mode json` and `--mode rpc`
//! print is the listener shape of [`crate::listener`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::AgentMessage;

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

/// `assistantMessageEvent` of a `message_update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamUpdate {
    /// What happened.
    #[serde(rename = "type")]
    pub kind: StreamKind,
    /// Index of the content block it concerns.
    #[serde(rename = "contentIndex")]
    pub content_index: usize,
    /// The new text, for `*_delta`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub delta: Option<String>,
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
    /// A streamed assistant message changed.
    MessageUpdate {
        /// The partial message after the update.
        message: AgentMessage,
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
    /// `{readFiles, modifiedFiles}`.
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
