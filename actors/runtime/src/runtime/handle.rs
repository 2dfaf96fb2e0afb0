//! The handle frontends hold: typed calls into the Runtime. Each call is a new flow in
//! traces, sent by `Frontend`, under the one timeout policy of [`crate::envelope`].

use std::sync::Arc;

use ractor::{Actor, ActorRef, RpcReplyPort};
use tokio::sync::mpsc;

use pith_events::{BashExecutionMessage, ImageContent, ModelRef, SessionStart, ThinkingLevel};
use pith_llm::provider::Provider;

use super::open::{FirstSession, Opened, open_first, opened};
use super::{CurrentSession, Runtime, RuntimeConfig, RuntimeEvent, RuntimeMsg, SwitchOutcome};
use crate::RuntimeError;
use crate::agent::{QueuedMessages, UserCommand, UserInput};
use crate::envelope::{Envelope, Origin};
use crate::extension::SlashCommand;
use crate::trace::{ActorName, MessageIds, Trace};
use crate::tree_navigator::{NavigateOptions, Navigated};
use crate::writer::Snapshot;

/// A handle to a running runtime.
#[derive(Clone)]
pub struct RuntimeHandle {
    actor: ActorRef<Envelope<RuntimeMsg>>,
    ids: MessageIds,
}

impl RuntimeHandle {
    /// A frontend's action: the first message of a new flow.
    fn origin(&self) -> Origin {
        let trace = Trace::root(&self.ids, ActorName::Frontend);
        Origin::new(ActorName::Frontend, &trace)
    }

    /// A call answered by the Runtime's own work (bounded by the call timeout).
    async fn ask<T: Send + 'static>(
        &self,
        build: impl FnOnce(RpcReplyPort<T>) -> RuntimeMsg,
    ) -> Result<T, RuntimeError> {
        Ok(self.origin().call(&self.actor, "runtime", build).await?)
    }

    /// A call answered when a run, a summary or a command is over (no timeout).
    async fn wait<T: Send + 'static>(
        &self,
        build: impl FnOnce(RpcReplyPort<T>) -> RuntimeMsg,
    ) -> Result<T, RuntimeError> {
        Ok(self.origin().wait(&self.actor, "runtime", build).await?)
    }

    fn cast(&self, msg: RuntimeMsg) {
        self.origin().cast(&self.actor, msg);
    }

    /// Subscribes to runtime events (agent events of every session, session starts, notices).
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn subscribe(&self) -> Result<mpsc::UnboundedReceiver<RuntimeEvent>, RuntimeError> {
        self.ask(|reply| RuntimeMsg::Subscribe { reply }).await
    }

    /// The backpressure handle of frontends that write agent events out: call
    /// [`crate::event::Pacer::limit`] to make the agent wait while that many are unwritten, and
    /// [`crate::event::Pacer::written`] per event written (spec: issue 13 item 5).
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn pacer(&self) -> Result<crate::event::Pacer, RuntimeError> {
        self.ask(|reply| RuntimeMsg::Pacer { reply }).await
    }

    /// Sends a prompt; returns once the run has started.
    ///
    /// Errors: [`RuntimeError::AgentBusy`] while another run is active.
    pub async fn prompt(&self, text: &str) -> Result<(), RuntimeError> {
        self.prompt_with_images(text, Vec::new()).await
    }

    /// [`RuntimeHandle::prompt`] with images attached (pi's `prompt(text, {images})`): the
    /// user message is the text, then the images, resized as pi resizes them
    /// (`pith_tools::image::process`; a note is appended to the text when one was resized
    /// or left out, agent-and-events.md §3 step 8).
    pub async fn prompt_with_images(
        &self,
        text: &str,
        images: Vec<ImageContent>,
    ) -> Result<(), RuntimeError> {
        let input = UserInput {
            text: text.to_owned(),
            images,
        };
        self.ask(|reply| RuntimeMsg::Prompt { input, reply })
            .await?
    }

    /// Queues a steering message.
    pub fn steer(&self, text: &str) {
        self.steer_with_images(text, Vec::new());
    }

    /// Queues a steering message with images (pi's `steer(text, images)`); they are resized
    /// when the message is delivered.
    pub fn steer_with_images(&self, text: &str, images: Vec<ImageContent>) {
        self.cast(RuntimeMsg::Steer {
            input: UserInput {
                text: text.to_owned(),
                images,
            },
        });
    }

    /// Queues a follow-up.
    pub fn follow_up(&self, text: &str) {
        self.follow_up_with_images(text, Vec::new());
    }

    /// Queues a follow-up with images (pi's `followUp(text, images)`); they are resized when
    /// the message is delivered.
    pub fn follow_up_with_images(&self, text: &str, images: Vec<ImageContent>) {
        self.cast(RuntimeMsg::FollowUp {
            input: UserInput {
                text: text.to_owned(),
                images,
            },
        });
    }

    /// Waits until the agent has nothing left to do: the run, the compaction after it, an
    /// overflow retry, and prompts that waited for those. A frontend waits for this, not for
    /// the first `agent_end`, before it sends the next prompt.
    ///
    /// Errors: [`RuntimeError::Unanswered`] (no timeout: a run takes as long as it takes,
    /// abort it to end it).
    pub async fn wait_idle(&self) -> Result<(), RuntimeError> {
        self.wait(|reply| RuntimeMsg::WhenIdle { reply }).await
    }

    /// Whether no run is active (a run includes its compaction check and retry waits). The
    /// agent answers after handling everything sent to it before, so steering and follow-ups
    /// queued earlier have been queued, and their `queue_update` emitted, when this returns.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn is_idle(&self) -> Result<bool, RuntimeError> {
        self.ask(|reply| RuntimeMsg::IsIdle { reply }).await
    }

    /// Takes every queued steering and follow-up message out of the queues and returns them in
    /// queue order; a `queue_update` with empty lists follows (spec: agent-and-events.md §3.2,
    /// pi ≥ 0.84.4: rpc `clear_queue`; the interactive mode puts them back into the editor on
    /// Esc). A cleared message is never delivered.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn clear_queue(&self) -> Result<QueuedMessages, RuntimeError> {
        self.ask(|reply| RuntimeMsg::ClearQueue { reply }).await
    }

    /// Runs `command` as the user's `!command` (`exclude_from_context` for `!!command`) in the
    /// session cwd and returns what was recorded (spec: agent-and-events.md §5). The entry is
    /// written at once when the agent is idle, else before the next prompt.
    ///
    /// Errors: [`RuntimeError::CommandRunning`] when another command is running.
    pub async fn bash(
        &self,
        command: &str,
        exclude_from_context: bool,
    ) -> Result<BashExecutionMessage, RuntimeError> {
        let command = UserCommand {
            command: command.to_owned(),
            exclude_from_context,
        };
        self.wait(|reply| RuntimeMsg::Bash { command, reply })
            .await?
    }

    /// `/model`: `provider` serves `model` from the next request on, for this and later
    /// sessions; the session records a `model_change`.
    ///
    /// Errors: [`RuntimeError::Store`] when the entry cannot be written.
    pub async fn set_model(
        &self,
        provider: Arc<dyn Provider>,
        model: ModelRef,
    ) -> Result<(), RuntimeError> {
        self.ask(|reply| RuntimeMsg::SetModel {
            provider,
            model,
            reply,
        })
        .await?
    }

    /// `/thinking`: the level (already clamped to the model) from the next request on.
    ///
    /// Errors: [`RuntimeError::Store`] when the entry cannot be written.
    pub async fn set_thinking_level(&self, level: ThinkingLevel) -> Result<(), RuntimeError> {
        self.ask(|reply| RuntimeMsg::SetThinkingLevel { level, reply })
            .await?
    }

    /// Saves a setting as pi's rpc `set_steering_mode`, `set_follow_up_mode`,
    /// `set_auto_compaction` and `set_auto_retry` do (in the agent directory's
    /// `settings.json`) and applies it to the running session at once.
    ///
    /// Errors: [`RuntimeError::SettingNotSaved`] naming the file.
    pub async fn set_setting(
        &self,
        path: &str,
        value: serde_json::Value,
    ) -> Result<(), RuntimeError> {
        let path = path.to_owned();
        self.ask(|reply| RuntimeMsg::SetSetting { path, value, reply })
            .await?
    }

    /// `/name`: names the session (`session_info`), trimmed.
    ///
    /// Errors: [`RuntimeError::EmptySessionName`].
    pub async fn set_session_name(&self, name: &str) -> Result<(), RuntimeError> {
        let name = name.to_owned();
        self.ask(|reply| RuntimeMsg::SetSessionName { name, reply })
            .await?
    }

    /// `/label`: sets the label of `entry_id`, or clears it with `None` or a blank label.
    ///
    /// Errors: [`RuntimeError::Store`] for an unknown entry.
    pub async fn set_label(&self, entry_id: &str, label: Option<&str>) -> Result<(), RuntimeError> {
        let (entry_id, label) = (entry_id.to_owned(), label.map(str::to_owned));
        self.ask(|reply| RuntimeMsg::SetLabel {
            entry_id,
            label,
            reply,
        })
        .await?
    }

    /// Cancels the running user command, if any.
    pub fn abort_bash(&self) {
        self.cast(RuntimeMsg::AbortBash);
    }

    /// Aborts the run and waits until the agent is idle.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn abort(&self) -> Result<(), RuntimeError> {
        self.wait(|reply| RuntimeMsg::Abort { reply }).await
    }

    /// Replaces the session (`/new`, `/resume`, `/fork`, `/clone`, `/import`).
    ///
    /// Errors: pi's refusals ([`RuntimeError::InvalidForkEntry`], [`RuntimeError::NothingToClone`],
    /// [`RuntimeError::ImportNotFound`]) and the store's ([`RuntimeError::Store`]: a locked file,
    /// not a pi session file); the session is then unchanged.
    pub async fn switch(&self, start: SessionStart) -> Result<SwitchOutcome, RuntimeError> {
        self.wait(|reply| RuntimeMsg::Switch { start, reply })
            .await?
    }

    /// Compacts now with `summary` (written by the caller, not the model); returns the
    /// compaction entry's id.
    ///
    /// Errors: [`RuntimeError::NothingToCompact`], or the store's error.
    pub async fn compact_with(&self, summary: &str) -> Result<String, RuntimeError> {
        let summary = summary.to_owned();
        self.wait(|reply| RuntimeMsg::CompactWith { summary, reply })
            .await?
    }

    /// `/compact [focus]`: compacts with a summary the model writes (spec: compaction.md §4–7);
    /// returns the compaction entry's id.
    ///
    /// Errors: pi's refusals ([`RuntimeError::AlreadyCompacted`],
    /// [`RuntimeError::NothingToCompact`], [`RuntimeError::CompactionCancelled`],
    /// [`RuntimeError::CompactionFailed`]).
    pub async fn compact(&self, focus: Option<&str>) -> Result<String, RuntimeError> {
        Ok(self.compact_reporting(focus).await?.0)
    }

    /// [`Self::compact`], answering also pi's `CompactionResult` (what `compaction_end`
    /// reported: rpc's `compact` answers with it).
    ///
    /// Errors: as [`Self::compact`].
    pub async fn compact_reporting(
        &self,
        focus: Option<&str>,
    ) -> Result<(String, pith_events::CompactionResult), RuntimeError> {
        let focus = focus.map(str::to_owned);
        self.wait(|reply| RuntimeMsg::Compact { focus, reply })
            .await?
    }

    /// `/tree`: moves the leaf to `target_id` (spec: tree-and-context.md §9). A user or custom
    /// message target moves the leaf to its parent and returns its text for the editor; with
    /// `options.summarize` the branch left behind is summarized by the model first.
    ///
    /// Errors: [`RuntimeError::Store`] with `Entry <id> not found`, [`RuntimeError::Summary`],
    /// or [`RuntimeError::TreeMoveWhileRunning`].
    pub async fn navigate_tree(
        &self,
        target_id: &str,
        options: NavigateOptions,
    ) -> Result<Navigated, RuntimeError> {
        let target_id = target_id.to_owned();
        self.wait(|reply| RuntimeMsg::NavigateTree {
            target_id,
            options,
            reply,
        })
        .await?
    }

    /// Runs an extension command; `None` when none registers it.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn command(&self, name: &str, args: &str) -> Result<Option<String>, RuntimeError> {
        let (name, args) = (name.to_owned(), args.to_owned());
        // A command may open dialogs and take as long as the user does.
        self.wait(|reply| RuntimeMsg::Command { name, args, reply })
            .await
    }

    /// `/reload [name]`: the names of the extensions reloaded.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn reload(&self, name: Option<&str>) -> Result<Vec<String>, RuntimeError> {
        let name = name.map(str::to_owned);
        self.wait(|reply| RuntimeMsg::Reload { name, reply }).await
    }

    /// Every extension command.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn commands(&self) -> Result<Vec<SlashCommand>, RuntimeError> {
        self.ask(|reply| RuntimeMsg::Commands { reply }).await
    }

    /// The current session's file, id, cwd and size.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn current_session(&self) -> Result<CurrentSession, RuntimeError> {
        self.ask(|reply| RuntimeMsg::CurrentSession { reply }).await
    }

    /// A copy of the current log.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn snapshot(&self) -> Result<Snapshot, RuntimeError> {
        self.ask(|reply| RuntimeMsg::Snapshot { reply }).await
    }

    /// The context the agent would send now (the projection's).
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn context(&self) -> Result<crate::projection::Context, RuntimeError> {
        self.ask(|reply| RuntimeMsg::Context { reply }).await
    }

    /// Makes a child actor fail (`SessionWriter`, `Projection`, `Agent`, `Compactor`,
    /// `TreeNavigator`).
    pub fn crash_child(&self, name: &str) {
        self.cast(RuntimeMsg::CrashChild {
            actor: name.to_owned(),
        });
    }

    /// Flushes, fsyncs and stops everything.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn shutdown(&self) -> Result<(), RuntimeError> {
        let r = self.wait(|reply| RuntimeMsg::Shutdown { reply }).await;
        self.actor.stop(None);
        r
    }
}

/// A started runtime: the handle, and what was opened.
pub struct Started {
    /// Calls into the runtime.
    pub handle: RuntimeHandle,
    /// The first session, as opened.
    pub opened: Opened,
}

impl Runtime {
    /// Opens the first session the command line names and spawns the runtime on it, which
    /// starts that session's subtree (`session_start {reason: startup}`) and makes pi's
    /// session-start writes through its SessionWriter.
    ///
    /// Errors: the store's when the session cannot be opened (matched by frontends:
    /// `RuntimeError::Store(pith_store::Error::Locked {..})`, `NotASession`, …),
    /// [`RuntimeError::MissingSessionCwd`], [`RuntimeError::Spawn`].
    pub async fn start(
        config: RuntimeConfig,
        first: FirstSession,
    ) -> Result<Started, RuntimeError> {
        let session = open_first(&config, &first)?;
        let opened = opened(&session);
        let ids = MessageIds::default();
        let (actor, _handle) = Actor::spawn(None, Runtime, (config, session, ids.clone())).await?;
        Ok(Started {
            handle: RuntimeHandle { actor, ids },
            opened,
        })
    }
}
