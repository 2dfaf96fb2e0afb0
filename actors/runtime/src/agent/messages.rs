//! The Agent's messages and what they carry, apart from the actor so that the actors and
//! extension hosts that send to the Agent need not depend on the Agent's own module (and
//! through it on theirs).

use std::sync::Arc;

use ractor::RpcReplyPort;

use pith_events::{BashExecutionMessage, ImageContent, ModelRef, ThinkingLevel};
use pith_llm::provider::Provider;

use crate::RuntimeError;
use crate::envelope::MessageKind;

/// What a user sends: a prompt, steering or follow-up text and the images attached to it
/// (pi's `prompt(text, {images})`, `steer(text, images)`, `followUp(text, images)`). The
/// images are sent as they came; the run resizes them when their user message starts
/// (`image::process`, pi's `_normalizePromptImages`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInput {
    /// The text, prompt templates and skills already expanded.
    pub text: String,
    /// The attached images, in order.
    pub images: Vec<ImageContent>,
}

impl UserInput {
    /// Text without images.
    pub fn text(text: impl Into<String>) -> UserInput {
        UserInput {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

/// A user shell command: `!cmd`, or `!!cmd` (kept out of the context).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserCommand {
    /// The command line, without the `!`.
    pub command: String,
    /// `!!cmd`: recorded, but never sent to the model.
    pub exclude_from_context: bool,
}

/// Messages of the Agent.
#[derive(Debug)]
pub enum AgentMsg {
    /// Start a run with this prompt text; answered once the run has started, or with
    /// [`RuntimeError::AgentBusy`] while one runs (queue it with `Steer`/`FollowUp`).
    Prompt {
        /// The prompt.
        input: UserInput,
        /// Started, or why not.
        reply: RpcReplyPort<Result<(), RuntimeError>>,
    },
    /// Queue a steering message (delivered after the current tool calls).
    Steer {
        /// The message.
        input: UserInput,
    },
    /// Queue a follow-up (delivered when the run would otherwise end).
    FollowUp {
        /// The message.
        input: UserInput,
    },
    /// Take every queued steering and follow-up message out of the queues (pi's
    /// `clearQueue()`, pi ≥ 0.84.4); answered with what was queued, oldest first, after a
    /// `queue_update` with empty lists.
    ClearQueue {
        /// What was queued.
        reply: RpcReplyPort<QueuedMessages>,
    },
    /// Abort the current run; answered when the agent is idle.
    Abort {
        /// Idle.
        reply: RpcReplyPort<()>,
    },
    /// Before a switch (issue 13: no accepted prompt is lost): abort the current run, then
    /// run what was accepted and has not run yet (prompts waiting for the run, queued steering
    /// and follow-ups) in this session; answered when nothing is left.
    Settle {
        /// Settled.
        reply: RpcReplyPort<()>,
    },
    /// Answered with whether no run is active.
    IsIdle {
        /// No run is active.
        reply: RpcReplyPort<bool>,
    },
    /// Answered once no run is active: after `agent_end`, the compaction check, an overflow
    /// retry and any prompt that waited for them.
    WhenIdle {
        /// Idle.
        reply: RpcReplyPort<()>,
    },
    /// The run compacts (before its prompt) or is about to emit `agent_end` (`true`), or
    /// goes on with its turns (`false`) (internal): prompts sent meanwhile wait for the run
    /// instead of being refused.
    Deferring {
        /// Prompts wait from now on (`true`) or not (`false`).
        deferring: bool,
    },
    /// The run task finished (internal).
    RunFinished,
    /// Run a user shell command in the session cwd (spec: agent-and-events.md §5); answered
    /// with the recorded message when it finished, or an error when another one is running.
    /// Recorded at once when idle, else at the start of the next prompt, as pi does.
    Bash {
        /// The command.
        command: UserCommand,
        /// What was recorded.
        reply: RpcReplyPort<Result<BashExecutionMessage, RuntimeError>>,
    },
    /// Cancel the running user command.
    AbortBash,
    /// Use this model from the next request on (a running request finishes on the old one).
    SetModel {
        /// Serves the model.
        provider: Arc<dyn Provider>,
        /// The model.
        model: ModelRef,
    },
    /// Use this thinking level from the next request on.
    SetThinkingLevel {
        /// The level.
        level: ThinkingLevel,
    },
    /// The session cwd's settings changed (queue modes, retries): used from now on.
    SetSettings {
        /// The settings now.
        settings: crate::settings::Settings,
    },
    /// The system prompt was built again (`/reload` changed the extension tools and their
    /// snippets): used from the next run on.
    SetSystemPrompt {
        /// The prompt now.
        prompt: String,
    },
    /// An extension's `sendMessage` (spec: agent-and-events.md §3.3): `nextTurn` is held for
    /// the next prompt; during a run it is steered (or queued as a follow-up); when idle it
    /// starts a run (`trigger_turn`) or is recorded as it is.
    CustomMessage {
        /// The message.
        message: Box<pith_events::CustomMessage>,
        /// `steer` (default), `followUp` or `nextTurn`.
        deliver_as: Option<String>,
        /// Start a run with it when idle.
        trigger_turn: bool,
    },
    /// A user command finished (internal).
    BashDone {
        /// What it printed and how it ended.
        message: Box<BashExecutionMessage>,
        /// The caller of [`AgentMsg::Bash`].
        reply: RpcReplyPort<Result<BashExecutionMessage, RuntimeError>>,
    },
}

impl MessageKind for AgentMsg {
    fn kind(&self) -> &'static str {
        match self {
            AgentMsg::Prompt { .. } => "prompt",
            AgentMsg::Steer { .. } => "steer",
            AgentMsg::FollowUp { .. } => "follow_up",
            AgentMsg::Abort { .. } => "abort",
            AgentMsg::ClearQueue { .. } => "clear_queue",
            AgentMsg::Settle { .. } => "settle",
            AgentMsg::IsIdle { .. } => "is_idle",
            AgentMsg::WhenIdle { .. } => "when_idle",
            AgentMsg::Deferring { .. } => "deferring",
            AgentMsg::RunFinished => "run_finished",
            AgentMsg::Bash { .. } => "bash",
            AgentMsg::AbortBash => "abort_bash",
            AgentMsg::SetModel { .. } => "set_model",
            AgentMsg::SetThinkingLevel { .. } => "set_thinking_level",
            AgentMsg::SetSettings { .. } => "set_settings",
            AgentMsg::SetSystemPrompt { .. } => "set_system_prompt",
            AgentMsg::BashDone { .. } => "bash_done",
            AgentMsg::CustomMessage { .. } => "custom_message",
        }
    }
}

/// The steering and follow-up messages taken out of the queues by
/// [`AgentMsg::ClearQueue`], each oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueuedMessages {
    /// Steering messages.
    pub steering: Vec<String>,
    /// Follow-ups.
    pub follow_up: Vec<String>,
}

impl QueuedMessages {
    /// Nothing was queued.
    pub fn is_empty(&self) -> bool {
        self.steering.is_empty() && self.follow_up.is_empty()
    }
}
