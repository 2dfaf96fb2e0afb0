//! The handle frontends hold: typed calls into the Runtime.

use ractor::{Actor, ActorRef, RpcReplyPort};
use tokio::sync::mpsc;

use pith_events::SessionStart;
use pith_store::Session;

use super::*;

/// How long `/compact` may take: a summary is a full model reply over the history.
const SUMMARY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// A handle to a running runtime.
#[derive(Clone)]
pub struct RuntimeHandle {
    actor: ActorRef<RuntimeMsg>,
}

/// Errors of runtime calls.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The runtime or a session actor did not answer.
    #[error("the runtime did not answer: {0}")]
    Unanswered(String),
    /// The operation failed.
    #[error("{0}")]
    Failed(String),
}

impl RuntimeHandle {
    async fn ask<T: Send + 'static>(
        &self,
        build: impl FnOnce(RpcReplyPort<T>) -> RuntimeMsg,
    ) -> Result<T, RuntimeError> {
        self.ask_within(build, CALL_TIMEOUT).await
    }

    async fn ask_within<T: Send + 'static>(
        &self,
        build: impl FnOnce(RpcReplyPort<T>) -> RuntimeMsg,
        timeout: std::time::Duration,
    ) -> Result<T, RuntimeError> {
        match self.actor.call(build, Some(timeout)).await {
            Ok(ractor::rpc::CallResult::Success(v)) => Ok(v),
            Ok(ractor::rpc::CallResult::Timeout) => {
                Err(RuntimeError::Unanswered("timed out".into()))
            }
            Ok(ractor::rpc::CallResult::SenderError) => {
                Err(RuntimeError::Unanswered("the runtime stopped".into()))
            }
            Err(e) => Err(RuntimeError::Unanswered(e.to_string())),
        }
    }

    /// Subscribes to runtime events (agent events of every session, session starts, notices).
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn subscribe(&self) -> Result<mpsc::UnboundedReceiver<RuntimeEvent>, RuntimeError> {
        self.ask(RuntimeMsg::Subscribe).await
    }

    /// Sends a prompt; returns once the run has started.
    ///
    /// Errors: [`RuntimeError::Failed`] while another run is active.
    pub async fn prompt(&self, text: &str) -> Result<(), RuntimeError> {
        let text = text.to_owned();
        self.ask(|r| RuntimeMsg::Prompt(text, r))
            .await?
            .map_err(RuntimeError::Failed)
    }

    /// Queues a steering message.
    pub fn steer(&self, text: &str) {
        let _ = self.actor.cast(RuntimeMsg::Steer(text.to_owned()));
    }

    /// Queues a follow-up.
    pub fn follow_up(&self, text: &str) {
        let _ = self.actor.cast(RuntimeMsg::FollowUp(text.to_owned()));
    }

    /// Waits until the agent has nothing left to do: the run, the compaction after it, an
    /// overflow retry, and prompts that waited for those. A frontend waits for this, not for
    /// the first `agent_end`, before it sends the next prompt.
    ///
    /// Errors: [`RuntimeError::Unanswered`] (no timeout: a run takes as long as it takes,
    /// abort it to end it).
    pub async fn wait_idle(&self) -> Result<(), RuntimeError> {
        match self.actor.call(RuntimeMsg::WhenIdle, None).await {
            Ok(ractor::rpc::CallResult::Success(())) => Ok(()),
            Ok(_) => Err(RuntimeError::Unanswered("the runtime stopped".into())),
            Err(e) => Err(RuntimeError::Unanswered(e.to_string())),
        }
    }

    /// Whether no run is active (a run includes its compaction check and retry waits). The
    /// agent answers after handling everything sent to it before, so steering and follow-ups
    /// queued earlier have been queued, and their `queue_update` emitted, when this returns.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn is_idle(&self) -> Result<bool, RuntimeError> {
        self.ask(RuntimeMsg::IsIdle).await
    }

    /// Runs `command` as the user's `!command` (`exclude_from_context` for `!!command`) in the
    /// session cwd and returns what was recorded (spec: agent-and-events.md §5). The entry is
    /// written at once when the agent is idle, else before the next prompt.
    ///
    /// Errors: [`RuntimeError::Failed`] when another command is running.
    pub async fn bash(
        &self,
        command: &str,
        exclude_from_context: bool,
    ) -> Result<pith_events::BashExecutionMessage, RuntimeError> {
        let command = command.to_owned();
        match self
            .actor
            .call(|r| RuntimeMsg::Bash(command, exclude_from_context, r), None)
            .await
        {
            Ok(ractor::rpc::CallResult::Success(r)) => r.map_err(RuntimeError::Failed),
            Ok(_) => Err(RuntimeError::Unanswered("the runtime stopped".into())),
            Err(e) => Err(RuntimeError::Unanswered(e.to_string())),
        }
    }

    /// `/model`: `provider` serves `model` (`(provider name, model id)`) from the next
    /// request on, for this and later sessions; the session records a `model_change`.
    ///
    /// Errors: [`RuntimeError::Failed`] when the entry cannot be written.
    pub async fn set_model(
        &self,
        provider: std::sync::Arc<dyn crate::provider::Provider>,
        model: (String, String),
    ) -> Result<(), RuntimeError> {
        self.ask(|r| RuntimeMsg::SetModel(provider, model, r))
            .await?
            .map_err(RuntimeError::Failed)
    }

    /// `/thinking`: the level (already clamped to the model) from the next request on.
    ///
    /// Errors: [`RuntimeError::Failed`] when the entry cannot be written.
    pub async fn set_thinking_level(&self, level: &str) -> Result<(), RuntimeError> {
        let level = level.to_owned();
        self.ask(|r| RuntimeMsg::SetThinkingLevel(level, r))
            .await?
            .map_err(RuntimeError::Failed)
    }

    /// `/name`: names the session (`session_info`), trimmed.
    ///
    /// Errors: [`RuntimeError::Failed`] with `Session name cannot be empty`.
    pub async fn set_session_name(&self, name: &str) -> Result<(), RuntimeError> {
        let name = name.to_owned();
        self.ask(|r| RuntimeMsg::SetSessionName(name, r))
            .await?
            .map_err(RuntimeError::Failed)
    }

    /// `/label`: sets the label of `entry_id`, or clears it with `None` or a blank label.
    ///
    /// Errors: [`RuntimeError::Failed`] for an unknown entry.
    pub async fn set_label(&self, entry_id: &str, label: Option<&str>) -> Result<(), RuntimeError> {
        let (id, label) = (entry_id.to_owned(), label.map(str::to_owned));
        self.ask(|r| RuntimeMsg::SetLabel(id, label, r))
            .await?
            .map_err(RuntimeError::Failed)
    }

    /// Cancels the running user command, if any.
    pub fn abort_bash(&self) {
        let _ = self.actor.cast(RuntimeMsg::AbortBash);
    }

    /// Aborts the run and waits until the agent is idle.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn abort(&self) -> Result<(), RuntimeError> {
        self.ask(RuntimeMsg::Abort).await
    }

    /// Replaces the session (`/new`, `/resume`, `/fork`, `/clone`, `/import`).
    ///
    /// Errors: [`RuntimeError::Failed`] with pi's message (e.g. `Invalid entry ID for forking`).
    pub async fn switch(&self, start: SessionStart) -> Result<SwitchOutcome, RuntimeError> {
        self.ask(|r| RuntimeMsg::Switch(start, r))
            .await?
            .map_err(RuntimeError::Failed)
    }

    /// Compacts now with `summary`; returns the compaction entry's id.
    ///
    /// Errors: [`RuntimeError::Failed`].
    pub async fn compact(&self, summary: &str) -> Result<String, RuntimeError> {
        let summary = summary.to_owned();
        self.ask(|r| RuntimeMsg::Compact(summary, r))
            .await?
            .map_err(RuntimeError::Failed)
    }

    /// `/compact [focus]`: compacts with a summary the model writes (spec: compaction.md §4–7);
    /// returns the compaction entry's id.
    ///
    /// Errors: [`RuntimeError::Failed`] with pi's message (`Already compacted`, …).
    pub async fn compact_now(&self, focus: Option<&str>) -> Result<String, RuntimeError> {
        let focus = focus.map(str::to_owned);
        self.ask_within(|r| RuntimeMsg::CompactNow(focus, r), SUMMARY_TIMEOUT)
            .await?
            .map_err(RuntimeError::Failed)
    }

    /// `/tree`: moves the leaf to `target_id` (spec: tree-and-context.md §9). A user or custom
    /// message target moves the leaf to its parent and returns its text for the editor; with
    /// `options.summarize` the branch left behind is summarized by the model first.
    ///
    /// Errors: [`RuntimeError::Failed`] with `Entry <id> not found`, a summary failure, or
    /// while the agent is running.
    pub async fn navigate_tree(
        &self,
        target_id: &str,
        options: TreeOptions,
    ) -> Result<Navigated, RuntimeError> {
        let target = target_id.to_owned();
        self.ask_within(
            |r| RuntimeMsg::NavigateTree(target, options, r),
            SUMMARY_TIMEOUT,
        )
        .await?
        .map_err(RuntimeError::Failed)
    }

    /// Runs an extension command; `None` when none registers it.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn command(&self, name: &str, args: &str) -> Result<Option<String>, RuntimeError> {
        let (name, args) = (name.to_owned(), args.to_owned());
        self.ask(|r| RuntimeMsg::Command(name, args, r)).await
    }

    /// Every extension command.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn commands(&self) -> Result<Vec<SlashCommand>, RuntimeError> {
        self.ask(RuntimeMsg::Commands).await
    }

    /// The current session.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn summary(&self) -> Result<SessionSummary, RuntimeError> {
        self.ask(RuntimeMsg::Summary).await
    }

    /// A copy of the current log.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn snapshot(&self) -> Result<Snapshot, RuntimeError> {
        self.ask(RuntimeMsg::Snapshot).await
    }

    /// The context the agent would send now (the projection's).
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn context(&self) -> Result<crate::projection::Context, RuntimeError> {
        self.ask(RuntimeMsg::Context).await
    }

    /// Makes a child actor fail (`SessionWriter`, `Projection`, `Agent`, `Compactor`).
    pub fn crash_child(&self, name: &str) {
        let _ = self.actor.cast(RuntimeMsg::CrashChild(name.to_owned()));
    }

    /// Flushes, fsyncs and stops everything.
    ///
    /// Errors: [`RuntimeError::Unanswered`].
    pub async fn shutdown(&self) -> Result<(), RuntimeError> {
        let r = self.ask(RuntimeMsg::Shutdown).await;
        self.actor.stop(None);
        r
    }
}

impl Runtime {
    /// Spawns the runtime with its first session (opened by the caller from the CLI flags)
    /// and starts that session's subtree (`session_start {reason: startup}`).
    ///
    /// Errors: [`RuntimeError::Failed`] when the runtime cannot be spawned.
    pub async fn start(
        config: RuntimeConfig,
        session: Session,
    ) -> Result<RuntimeHandle, RuntimeError> {
        let (actor, _handle) = Actor::spawn(None, Runtime, (config, session))
            .await
            .map_err(|e| RuntimeError::Failed(e.to_string()))?;
        Ok(RuntimeHandle { actor })
    }
}
