//! Session lifecycle values shared by the runtime, extensions and frontends
//! (spec: lifecycle.md §7, agent-and-events.md §6).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How a session subtree starts: handed as a value to the freshly spawned subtree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionStart {
    /// A new session in the runtime's cwd (`/new`, or no session flags).
    New,
    /// An existing file (`/resume`, `--session`, `--continue`).
    Resume(PathBuf),
    /// A new file holding the path up to the parent of `entry_id` (`/fork`).
    Fork {
        /// The user message forked before.
        entry_id: String,
    },
    /// A new file holding the path through the leaf (`/clone`).
    Clone,
    /// A copy of an outside file, opened like a resume (`/import`).
    Import(PathBuf),
}

impl SessionStart {
    /// pi's `reason` for `session_start` / `session_shutdown`.
    pub fn reason(&self) -> StartReason {
        match self {
            SessionStart::New => StartReason::New,
            SessionStart::Resume(_) | SessionStart::Import(_) => StartReason::Resume,
            SessionStart::Fork { .. } | SessionStart::Clone => StartReason::Fork,
        }
    }
}

/// `reason` of `session_start` and `session_shutdown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartReason {
    /// The process started.
    Startup,
    /// `/new`.
    New,
    /// `/resume`, `/import`.
    Resume,
    /// `/fork`, `/clone`.
    Fork,
    /// The process is quitting (shutdown only).
    Quit,
    /// `/reload`: the extensions were loaded again (pi's own reason).
    Reload,
    /// The subtree was rebuilt from the log after a crash (pith's own reason).
    Restart,
}

/// An event extensions can subscribe to (spec: agent-and-events.md §6).
#[derive(Debug, Clone, PartialEq)]
pub enum ExtensionEvent {
    /// A session subtree started.
    SessionStart {
        /// Why.
        reason: StartReason,
        /// The file of the session that was active before, if any.
        previous_session_file: Option<PathBuf>,
    },
    /// The session is about to be replaced by a new or resumed one; may be cancelled.
    SessionBeforeSwitch {
        /// `New` or `Resume`.
        reason: StartReason,
        /// The file being switched to (absent for a new session).
        target_session_file: Option<PathBuf>,
    },
    /// A fork or clone is about to happen; may be cancelled.
    SessionBeforeFork {
        /// The entry forked at.
        entry_id: String,
        /// `before` (fork) or `at` (clone).
        position: ForkPosition,
    },
    /// The session subtree is shutting down.
    SessionShutdown {
        /// Why.
        reason: StartReason,
        /// The file that comes next, if known.
        target_session_file: Option<PathBuf>,
    },
    /// A compaction is about to summarize; may be cancelled, or answered with the summary to
    /// use instead of the model's (spec: compaction.md §10).
    SessionBeforeCompact {
        /// `manual`, `threshold` or `overflow`.
        reason: String,
        /// What the compaction would keep and summarize.
        preparation: Box<CompactionPlan>,
        /// `/compact <focus>`.
        custom_instructions: Option<String>,
    },
    /// A compaction entry was appended.
    SessionCompact {
        /// The entry's id.
        entry_id: String,
        /// Its summary.
        summary: String,
        /// Whether an extension supplied the summary.
        from_extension: bool,
    },
    /// `/tree` is about to move the leaf; may be cancelled, or answered with the summary of
    /// the branch left behind (used only when the user asked for one).
    SessionBeforeTree {
        /// The selected entry.
        target_id: String,
        /// The leaf before.
        old_leaf_id: Option<String>,
        /// Deepest entry shared by the old and the new position.
        common_ancestor_id: Option<String>,
        /// Ids of the entries left behind, oldest first.
        entries_to_summarize: Vec<String>,
        /// The user asked for a branch summary.
        user_wants_summary: bool,
        /// Focus for the summary.
        custom_instructions: Option<String>,
    },
    /// `/tree` moved the leaf.
    SessionTree {
        /// The leaf now.
        new_leaf_id: Option<String>,
        /// The leaf before.
        old_leaf_id: Option<String>,
        /// The branch summary appended, if any.
        summary_entry_id: Option<String>,
        /// Whether an extension supplied that summary.
        from_extension: Option<bool>,
    },
    /// An agent event (boxed: messages are large next to the lifecycle events).
    Agent(Box<crate::agent::AgentEvent>),
    /// A prompt arrived, before anything else happens to it; may be transformed or handled
    /// (spec: extensions.md §1.2 events table, agent-and-events.md §6).
    Input {
        /// The prompt text.
        text: String,
        /// Attached images.
        images: Vec<crate::message::ImageContent>,
        /// `interactive`, `rpc` or `extension`.
        source: String,
    },
    /// The prompt is about to start a run; may inject a message or change the system prompt.
    BeforeAgentStart {
        /// The prompt text (after `input` transforms).
        prompt: String,
        /// Attached images.
        images: Vec<crate::message::ImageContent>,
        /// The system prompt the run would use.
        system_prompt: String,
    },
    /// A tool call is about to run; may be blocked or have its arguments replaced.
    ToolCall {
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// Its arguments (replaced ones, if an earlier extension replaced them).
        input: serde_json::Value,
        /// `builtin`, `extension:<name>` or `mcp:<server>`.
        source: String,
        /// The tool's annotations (MCP's hints), `{}` when none.
        annotations: serde_json::Value,
    },
    /// A tool call finished; its result may be patched.
    ToolResult {
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// The arguments it ran with.
        input: serde_json::Value,
        /// The result's content (patched by earlier extensions, if they did).
        content: Vec<crate::message::ContentBlock>,
        /// The result's details (`null` when none).
        details: serde_json::Value,
        /// Whether it is an error result.
        is_error: bool,
    },
    /// All automatic work of a prompt is over (pi >= 0.80.4; pith sends it to extensions).
    AgentSettled {
        /// The run ended because of an abort.
        aborted: bool,
    },
}

/// What a compaction would do, as `session_before_compact` shows it (pi's
/// `CompactionPreparation`, spec: compaction.md §4).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPlan {
    /// First entry kept verbatim.
    pub first_kept_entry_id: Option<String>,
    /// Messages the history summary covers.
    pub messages_to_summarize: Vec<crate::message::AgentMessage>,
    /// For a split turn: the turn's beginning.
    pub turn_prefix_messages: Vec<crate::message::AgentMessage>,
    /// Whether the cut splits a turn.
    pub is_split_turn: bool,
    /// Estimated context tokens before.
    pub tokens_before: u64,
    /// The previous compaction's summary.
    pub previous_summary: Option<String>,
}

impl ExtensionEvent {
    /// Whether extensions may cancel the operation this event announces.
    pub fn is_cancellable(&self) -> bool {
        matches!(
            self,
            ExtensionEvent::SessionBeforeSwitch { .. }
                | ExtensionEvent::SessionBeforeFork { .. }
                | ExtensionEvent::SessionBeforeCompact { .. }
                | ExtensionEvent::SessionBeforeTree { .. }
        )
    }

    /// Whether extensions may answer it with a summary to use.
    pub fn takes_a_summary(&self) -> bool {
        matches!(
            self,
            ExtensionEvent::SessionBeforeCompact { .. } | ExtensionEvent::SessionBeforeTree { .. }
        )
    }

    /// The event's name as pi's extension API spells it.
    pub fn name(&self) -> &'static str {
        match self {
            ExtensionEvent::SessionStart { .. } => "session_start",
            ExtensionEvent::SessionBeforeSwitch { .. } => "session_before_switch",
            ExtensionEvent::SessionBeforeFork { .. } => "session_before_fork",
            ExtensionEvent::SessionShutdown { .. } => "session_shutdown",
            ExtensionEvent::SessionBeforeCompact { .. } => "session_before_compact",
            ExtensionEvent::SessionCompact { .. } => "session_compact",
            ExtensionEvent::SessionBeforeTree { .. } => "session_before_tree",
            ExtensionEvent::SessionTree { .. } => "session_tree",
            ExtensionEvent::Agent(e) => e.name(),
            ExtensionEvent::Input { .. } => "input",
            ExtensionEvent::BeforeAgentStart { .. } => "before_agent_start",
            ExtensionEvent::ToolCall { .. } => "tool_call",
            ExtensionEvent::ToolResult { .. } => "tool_result",
            ExtensionEvent::AgentSettled { .. } => "agent_settled",
        }
    }
}

/// `position` of `session_before_fork`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForkPosition {
    /// `/fork`: copy up to the selected user message's parent.
    Before,
    /// `/clone`: copy through the entry.
    At,
}
