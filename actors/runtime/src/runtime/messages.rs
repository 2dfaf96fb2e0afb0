//! What the Runtime is sent: by the [`RuntimeHandle`](super::RuntimeHandle) on a frontend's
//! behalf, and by itself (a restart).

use std::sync::Arc;

use ractor::RpcReplyPort;
use tokio::sync::mpsc;

use pith_events::{BashExecutionMessage, ModelRef, SessionStart, ThinkingLevel};
use pith_llm::provider::Provider;

use super::{CurrentSession, RuntimeEvent, SwitchOutcome};
use crate::RuntimeError;
use crate::agent::UserCommand;
use crate::envelope::MessageKind;
use crate::extension::SlashCommand;
use crate::tree_navigator::{NavigateOptions, Navigated};
use crate::writer::Snapshot;

/// Messages of the Runtime (sent by the [`RuntimeHandle`](super::RuntimeHandle), and to itself).
#[derive(Debug)]
pub enum RuntimeMsg {
    /// Send a prompt to the agent; answered when the run started (or why not).
    Prompt {
        /// The prompt and its images.
        input: crate::agent::UserInput,
        /// Started, or why not.
        reply: RpcReplyPort<Result<(), RuntimeError>>,
    },
    /// Queue steering.
    Steer {
        /// The message and its images.
        input: crate::agent::UserInput,
    },
    /// Queue a follow-up.
    FollowUp {
        /// The message and its images.
        input: crate::agent::UserInput,
    },
    /// Abort the run; answered when idle.
    Abort {
        /// Idle.
        reply: RpcReplyPort<()>,
    },
    /// Replace the session; answered with the outcome.
    Switch {
        /// What to open.
        start: SessionStart,
        /// The outcome.
        reply: RpcReplyPort<Result<SwitchOutcome, RuntimeError>>,
    },
    /// Answered when the agent has nothing left to do for the prompts sent so far.
    WhenIdle {
        /// Idle.
        reply: RpcReplyPort<()>,
    },
    /// Answered with whether no run is active, by the agent after everything sent to it
    /// before (so steering queued earlier has had its `queue_update`).
    IsIdle {
        /// No run is active.
        reply: RpcReplyPort<bool>,
    },
    /// Takes the queued steering and follow-up messages out of the agent's queues (pi's
    /// `clearQueue()`); answered with them (nothing when no session is active).
    ClearQueue {
        /// What was queued.
        reply: RpcReplyPort<crate::agent::QueuedMessages>,
    },
    /// Compaction with a summary the caller wrote; answered with the entry id.
    CompactWith {
        /// The summary.
        summary: String,
        /// The entry's id.
        reply: RpcReplyPort<Result<String, RuntimeError>>,
    },
    /// `/tree`: move the leaf to an entry (optionally summarizing the branch left behind).
    NavigateTree {
        /// The entry selected.
        target_id: String,
        /// pi's options.
        options: NavigateOptions,
        /// What changed.
        reply: RpcReplyPort<Result<Navigated, RuntimeError>>,
    },
    /// `/compact [focus]`: summarized by the model; answered with the entry id.
    Compact {
        /// What the summary should focus on.
        focus: Option<String>,
        /// The entry's id and pi's `CompactionResult`.
        reply: RpcReplyPort<Result<(String, pith_events::CompactionResult), RuntimeError>>,
    },
    /// `!cmd` / `!!cmd`: run a user command in the session cwd; answered with the recorded
    /// bashExecution message (spec: agent-and-events.md §5).
    Bash {
        /// The command.
        command: UserCommand,
        /// What was recorded.
        reply: RpcReplyPort<Result<BashExecutionMessage, RuntimeError>>,
    },
    /// Cancel the running user command.
    AbortBash,
    /// `/model`: use another model from the next request on; appends `model_change`.
    SetModel {
        /// Serves the model.
        provider: Arc<dyn Provider>,
        /// The model.
        model: ModelRef,
        /// Done, or why not.
        reply: RpcReplyPort<Result<(), RuntimeError>>,
    },
    /// `/thinking`: use another thinking level; appends `thinking_level_change` when it
    /// differs and emits `thinking_level_changed`.
    SetThinkingLevel {
        /// The level.
        level: ThinkingLevel,
        /// Done, or why not.
        reply: RpcReplyPort<Result<(), RuntimeError>>,
    },
    /// rpc `set_steering_mode` & co.: saves `value` at `path` in the agent directory's
    /// `settings.json` (pi's `SettingsManager` setters) and applies the session cwd's settings
    /// again to the agent and the Compactor.
    SetSetting {
        /// Dotted settings path (`steeringMode`, `compaction.enabled`, …).
        path: String,
        /// The new value.
        value: serde_json::Value,
        /// Done, or why not.
        reply: RpcReplyPort<Result<(), RuntimeError>>,
    },
    /// `/name`: appends `session_info` and emits `session_info_changed`.
    SetSessionName {
        /// The name.
        name: String,
        /// Done, or why not.
        reply: RpcReplyPort<Result<(), RuntimeError>>,
    },
    /// `/label`: sets (`Some`) or clears (`None`) the label of an entry.
    SetLabel {
        /// The labelled entry.
        entry_id: String,
        /// The label.
        label: Option<String>,
        /// Done, or why not.
        reply: RpcReplyPort<Result<(), RuntimeError>>,
    },
    /// Run an extension's slash command; `None` when no extension has it.
    Command {
        /// Its name, without the slash.
        name: String,
        /// What followed the name.
        args: String,
        /// The text to show.
        reply: RpcReplyPort<Option<String>>,
    },
    /// `/reload [name]`: the extensions (or the one named) shut down, start again and get
    /// `session_start {reason: "reload"}`; answered with the names reloaded.
    Reload {
        /// One extension's name; `None` for all.
        name: Option<String>,
        /// The names reloaded.
        reply: RpcReplyPort<Vec<String>>,
    },
    /// Answered with every extension command.
    Commands {
        /// The commands.
        reply: RpcReplyPort<Vec<SlashCommand>>,
    },
    /// Answered with the current session.
    CurrentSession {
        /// The session.
        reply: RpcReplyPort<CurrentSession>,
    },
    /// Answered with a copy of the current log.
    Snapshot {
        /// The copy.
        reply: RpcReplyPort<Snapshot>,
    },
    /// Answered with the projection's current context.
    Context {
        /// The context.
        reply: RpcReplyPort<crate::projection::Context>,
    },
    /// A new subscription to runtime events.
    Subscribe {
        /// The events.
        reply: RpcReplyPort<mpsc::UnboundedReceiver<RuntimeEvent>>,
    },
    /// The frontends' backpressure handle.
    Pacer {
        /// It.
        reply: RpcReplyPort<crate::event::Pacer>,
    },
    /// Stop everything (flush, fsync, `session_shutdown {quit}`); answered when done.
    Shutdown {
        /// Done.
        reply: RpcReplyPort<()>,
    },
    /// Make the named child actor fail, to exercise restarts (tests and `pith debug`).
    CrashChild {
        /// `SessionWriter`, `Projection`, `Agent`, `Compactor` or `TreeNavigator`.
        actor: String,
    },
    /// Rebuild the subtree of session `session_id` after its `actor` failed (internal: sent by
    /// the supervision handler, so the failed actor finishes dying — and drops the file
    /// lock it held — before the rebuild reopens the file).
    Restart {
        /// The session the failure belongs to; a restart for an older subtree is ignored.
        session_id: String,
        /// Which actor failed.
        actor: String,
        /// Why.
        why: String,
    },
}

impl MessageKind for RuntimeMsg {
    fn kind(&self) -> &'static str {
        match self {
            RuntimeMsg::Prompt { .. } => "prompt",
            RuntimeMsg::Steer { .. } => "steer",
            RuntimeMsg::ClearQueue { .. } => "clear_queue",
            RuntimeMsg::FollowUp { .. } => "follow_up",
            RuntimeMsg::Abort { .. } => "abort",
            RuntimeMsg::Switch { .. } => "switch",
            RuntimeMsg::WhenIdle { .. } => "when_idle",
            RuntimeMsg::IsIdle { .. } => "is_idle",
            RuntimeMsg::CompactWith { .. } => "compact_with",
            RuntimeMsg::NavigateTree { .. } => "navigate_tree",
            RuntimeMsg::Compact { .. } => "compact",
            RuntimeMsg::Bash { .. } => "bash",
            RuntimeMsg::AbortBash => "abort_bash",
            RuntimeMsg::SetModel { .. } => "set_model",
            RuntimeMsg::SetThinkingLevel { .. } => "set_thinking_level",
            RuntimeMsg::SetSessionName { .. } => "set_session_name",
            RuntimeMsg::SetSetting { .. } => "set_setting",
            RuntimeMsg::SetLabel { .. } => "set_label",
            RuntimeMsg::Command { .. } => "command",
            RuntimeMsg::Commands { .. } => "commands",
            RuntimeMsg::Reload { .. } => "reload",
            RuntimeMsg::CurrentSession { .. } => "current_session",
            RuntimeMsg::Snapshot { .. } => "snapshot",
            RuntimeMsg::Context { .. } => "context",
            RuntimeMsg::Subscribe { .. } => "subscribe",
            RuntimeMsg::Pacer { .. } => "pacer",
            RuntimeMsg::Shutdown { .. } => "shutdown",
            RuntimeMsg::CrashChild { .. } => "crash_child",
            RuntimeMsg::Restart { .. } => "restart",
        }
    }
}
