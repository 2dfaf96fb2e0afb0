//! Runtime: the root supervisor. It owns the current session's subtree (SessionWriter,
//! Projection, Agent, Compactor, one actor per extension) and replaces it on `/new`,
//! `/resume`, `/fork`, `/clone` and `/import`, or rebuilds it from the log when a child
//! crashes (spec: lifecycle.md §6–7; guarantees in `docs/actors.md`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ractor::{
    Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent,
};
use tokio::sync::mpsc;

use pith_events::{
    AgentMessage, EntryType, ExtensionEvent, ForkPosition, SessionStart, StartReason,
};
use pith_store::{Leaf, OpenMode, Session, SessionEnv};

use crate::agent::{Agent, AgentArgs, AgentMsg, EventSink, Tools};
use crate::compactor::{Compactor, CompactorMsg};
use crate::extension::{Extension, ExtensionActor, ExtensionMsg, SlashCommand, Verdict};
use crate::projection::{Projection, ProjectionMsg};
use crate::provider::Provider;
use crate::trace::TraceIds;
use crate::writer::{SessionWriter, Snapshot, WriterArgs, WriterMsg};

const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Builds a fresh extension for every session subtree.
pub type ExtensionFactory = Arc<dyn Fn() -> Box<dyn Extension> + Send + Sync>;

/// Everything the runtime needs besides the first session.
#[derive(Clone)]
pub struct RuntimeConfig {
    /// Clock, ids, agent directory.
    pub env: SessionEnv,
    /// The process's working directory (new sessions belong to it).
    pub cwd: String,
    /// A custom session directory (`--session-dir`); `None` = per-cwd default.
    pub session_dir: Option<PathBuf>,
    /// `false` for `--no-session`: nothing is ever written, `/new` included.
    pub persist: bool,
    /// The model.
    pub provider: Arc<dyn Provider>,
    /// `(provider, model id)`.
    pub model: (String, String),
    /// Thinking level for new sessions.
    pub thinking_level: String,
    /// Tools the model may call.
    pub tools: Arc<dyn Tools>,
    /// Extensions, in load order.
    pub extensions: Vec<ExtensionFactory>,
}

pub use crate::event::RuntimeEvent;
use crate::event::UiSink;

/// Result of a switch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SwitchOutcome {
    /// `Some(reason)` when an extension cancelled it; nothing changed then.
    pub cancelled: Option<String>,
    /// The new session's file.
    pub session_file: Option<PathBuf>,
    /// `/fork`: the forked user message's text, for the editor.
    pub selected_text: Option<String>,
}

/// What `/session` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    /// The file (may not exist yet).
    pub session_file: Option<PathBuf>,
    /// The id.
    pub session_id: String,
    /// The cwd.
    pub cwd: String,
    /// Number of entries.
    pub entries: usize,
    /// The leaf id.
    pub leaf_id: Option<String>,
}

/// Messages of the Runtime.
#[derive(Debug)]
pub enum RuntimeMsg {
    /// Send a prompt to the agent; answered when the run started (or why not).
    Prompt(String, RpcReplyPort<Result<(), String>>),
    /// Queue steering.
    Steer(String),
    /// Queue a follow-up.
    FollowUp(String),
    /// Abort the run; answered when idle.
    Abort(RpcReplyPort<()>),
    /// Replace the session; answered with the outcome.
    Switch(SessionStart, RpcReplyPort<Result<SwitchOutcome, String>>),
    /// Manual compaction with a summary; answered with the entry id.
    Compact(String, RpcReplyPort<Result<String, String>>),
    /// Run an extension's slash command; `None` when no extension has it.
    Command(String, String, RpcReplyPort<Option<String>>),
    /// Answered with every extension command.
    Commands(RpcReplyPort<Vec<SlashCommand>>),
    /// Answered with the current session.
    Summary(RpcReplyPort<SessionSummary>),
    /// Answered with a copy of the current log.
    Snapshot(RpcReplyPort<Snapshot>),
    /// Answered with the projection's current context.
    Context(RpcReplyPort<crate::projection::Context>),
    /// A new subscription to runtime events.
    Subscribe(RpcReplyPort<mpsc::UnboundedReceiver<RuntimeEvent>>),
    /// Stop everything (flush, fsync, `session_shutdown {quit}`); answered when done.
    Shutdown(RpcReplyPort<()>),
    /// Make the named child actor fail, to exercise restarts (tests and `pith debug`).
    CrashChild(String),
    /// Rebuild the subtree of session `session_id` after its `actor` failed (internal: sent by
    /// the supervision handler, so the failed actor finishes dying — and drops the file
    /// lock it held — before the rebuild reopens the file).
    Restart {
        /// The session the failure belongs to; a restart for an older subtree is ignored.
        session_id: String,
        /// Which actor failed.
        actor: &'static str,
        /// Why.
        why: String,
    },
}

/// The actors of one session.
struct Subtree {
    writer: ActorRef<WriterMsg>,
    projection: ActorRef<ProjectionMsg>,
    agent: ActorRef<AgentMsg>,
    compactor: ActorRef<CompactorMsg>,
    extensions: Vec<ActorRef<ExtensionMsg>>,
    forwarder: tokio::task::JoinHandle<()>,
    session_file: Option<PathBuf>,
    session_id: String,
    session_dir: Option<PathBuf>,
    cwd: String,
    /// A child failed; a restart is on its way.
    failed: bool,
}

impl Subtree {
    fn ids(&self) -> HashSet<ActorId> {
        let mut ids: HashSet<ActorId> = [
            self.writer.get_id(),
            self.projection.get_id(),
            self.agent.get_id(),
            self.compactor.get_id(),
        ]
        .into();
        ids.extend(self.extensions.iter().map(|e| e.get_id()));
        ids
    }

    fn name_of(&self, id: ActorId) -> &'static str {
        if id == self.writer.get_id() {
            "SessionWriter"
        } else if id == self.projection.get_id() {
            "Projection"
        } else if id == self.agent.get_id() {
            "Agent"
        } else if id == self.compactor.get_id() {
            "Compactor"
        } else {
            "Extension"
        }
    }
}

/// The runtime's state.
pub struct RuntimeState {
    config: RuntimeConfig,
    subtree: Option<Subtree>,
    /// The first session, until `post_start` spawns its subtree.
    first: Option<Session>,
    ui: UiSink,
    next_id: AtomicU64,
}

impl RuntimeState {
    fn notify(&self, event: RuntimeEvent) {
        self.ui.notify(event);
    }

    fn ids(&self) -> TraceIds {
        TraceIds::root(self.next_id.fetch_add(1, Ordering::Relaxed), "Runtime")
    }
}

/// The Runtime actor. Spawn it with [`Runtime::start`].
pub struct Runtime;

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
        match self.actor.call(build, Some(CALL_TIMEOUT)).await {
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

/// pi's writes at session start (spec: lifecycle.md §6): a fresh session gets `model_change`
/// and `thinking_level_change`; a resumed one without a thinking level on its branch gets one.
fn initial_writes(session: &mut Session, config: &RuntimeConfig) -> Result<(), String> {
    let has_existing = !session.build_context().messages.is_empty();
    let has_thinking = session
        .tree()
        .get_branch(None)
        .iter()
        .any(|e| e.kind() == &EntryType::ThinkingLevelChange);
    let result = if has_existing {
        if has_thinking {
            Ok(String::new())
        } else {
            session.append_thinking_level_change(&config.thinking_level)
        }
    } else {
        session
            .append_model_change(&config.model.0, &config.model.1)
            .and_then(|_| session.append_thinking_level_change(&config.thinking_level))
    };
    result.map(|_| ()).map_err(|e| e.to_string())
}

async fn call<M: ractor::Message, T: Send + 'static>(
    actor: &ActorRef<M>,
    build: impl FnOnce(RpcReplyPort<T>) -> M,
) -> Option<T> {
    match actor.call(build, Some(CALL_TIMEOUT)).await {
        Ok(ractor::rpc::CallResult::Success(v)) => Some(v),
        _ => None,
    }
}

impl Runtime {
    async fn spawn_subtree(
        me: &ActorRef<RuntimeMsg>,
        state: &mut RuntimeState,
        mut session: Session,
        reason: StartReason,
        previous: Option<PathBuf>,
    ) -> Result<(), String> {
        initial_writes(&mut session, &state.config)?;
        let cell: ActorCell = me.get_cell();
        let session_id = session.session_id().to_owned();
        let session_file = session.session_file().map(Path::to_owned);
        let session_dir = session.session_dir().map(Path::to_owned);
        let cwd = session.cwd().to_owned();
        let entries = session.entries().to_vec();
        let leaf = session.tree().leaf();
        let err = |e: ractor::SpawnErr| e.to_string();
        let (projection, _) =
            Actor::spawn_linked(None, Projection, session_id.clone(), cell.clone())
                .await
                .map_err(err)?;
        let _ = projection.cast(ProjectionMsg::Load(entries.clone(), leaf));
        let (writer, _) = Actor::spawn_linked(
            None,
            SessionWriter,
            WriterArgs {
                session,
                projection: projection.clone(),
                ui: state.ui.clone(),
            },
            cell.clone(),
        )
        .await
        .map_err(err)?;
        let mut extensions = Vec::new();
        let mut subscriptions = Vec::new();
        for factory in &state.config.extensions {
            let extension = factory();
            let subs: Vec<String> = extension
                .subscriptions()
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
            let (ext, _) = Actor::spawn_linked(
                None,
                ExtensionActor,
                (extension, writer.clone()),
                cell.clone(),
            )
            .await
            .map_err(err)?;
            extensions.push(ext.clone());
            subscriptions.push((ext, subs));
        }
        let events = EventSink::default();
        let agent_args = AgentArgs {
            writer: writer.clone(),
            projection: projection.clone(),
            provider: state.config.provider.clone(),
            model: state.config.model.clone(),
            thinking_level: state.config.thinking_level.clone(),
            tools: state.config.tools.clone(),
            events: events.clone(),
            clock: state.config.env.clock.clone(),
            session_id: session_id.clone(),
            // cwd-bound: read again for every session this runtime starts.
            settings: {
                let settings =
                    crate::settings::Settings::load(&state.config.env.agent_dir, Path::new(&cwd));
                for problem in &settings.problems {
                    state.notify(RuntimeEvent::Notice(format!("settings ignored: {problem}")));
                }
                settings
            },
            extensions: subscriptions,
        };
        let (agent, _) = Actor::spawn_linked(None, Agent, agent_args, cell.clone())
            .await
            .map_err(err)?;
        let (compactor, _) = Actor::spawn_linked(
            None,
            Compactor,
            (writer.clone(), projection.clone()),
            cell.clone(),
        )
        .await
        .map_err(err)?;
        // Agent events reach extensions from the agent itself; frontends get them here.
        let mut rx = events.subscribe();
        let ui = state.ui.clone();
        let forwarder = tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                ui.notify(RuntimeEvent::Agent(Box::new(event)));
            }
        });
        // session_start, with the log so extensions can restore their state from it.
        let ids = state.ids();
        for ext in &extensions {
            let ev = Box::new(ExtensionEvent::SessionStart {
                reason,
                previous_session_file: previous.clone(),
            });
            let _ = call(ext, |r| ExtensionMsg::Event(ids, ev, entries.clone(), r)).await;
        }
        state.notify(RuntimeEvent::SessionStarted {
            reason,
            session_file: session_file.clone(),
            session_id: session_id.clone(),
        });
        state.subtree = Some(Subtree {
            writer,
            projection,
            agent,
            compactor,
            extensions,
            forwarder,
            session_file,
            session_id: session_id.clone(),
            session_dir,
            cwd,
            failed: false,
        });
        Ok(())
    }

    /// Stops the subtree; the writer flushes and fsyncs in its `post_stop`.
    async fn stop_subtree(state: &mut RuntimeState) -> Option<Snapshot> {
        let sub = state.subtree.take()?;
        if let Some(()) = call(&sub.agent, AgentMsg::Abort).await {}
        let snapshot = call(&sub.writer, |r| {
            WriterMsg::Snapshot(TraceIds::root(0, "Runtime"), r)
        })
        .await;
        let timeout = Some(CALL_TIMEOUT);
        let _ = sub.agent.stop_and_wait(None, timeout).await;
        let _ = sub.compactor.stop_and_wait(None, timeout).await;
        for ext in &sub.extensions {
            let _ = ext.stop_and_wait(None, timeout).await;
        }
        let _ = sub.writer.stop_and_wait(None, timeout).await;
        let _ = sub.projection.stop_and_wait(None, timeout).await;
        sub.forwarder.abort();
        snapshot
    }

    /// Asks every extension about a cancellable event; the first cancel wins.
    async fn ask_extensions(state: &RuntimeState, event: ExtensionEvent) -> Option<String> {
        let sub = state.subtree.as_ref()?;
        let ids = state.ids();
        for ext in &sub.extensions {
            let ev = Box::new(event.clone());
            if let Some(Verdict::Cancel(reason)) =
                call(ext, |r| ExtensionMsg::Event(ids, ev, Vec::new(), r)).await
            {
                return Some(reason);
            }
        }
        None
    }

    async fn tell_extensions(state: &RuntimeState, event: ExtensionEvent) {
        let Some(sub) = state.subtree.as_ref() else {
            return;
        };
        let ids = state.ids();
        for ext in &sub.extensions {
            let ev = Box::new(event.clone());
            let _ = call(ext, |r| ExtensionMsg::Event(ids, ev, Vec::new(), r)).await;
        }
    }

    fn session_dir_for(state: &RuntimeState, cwd: &str) -> Result<Option<PathBuf>, String> {
        if !state.config.persist {
            return Ok(None);
        }
        match &state.config.session_dir {
            Some(d) => Ok(Some(d.clone())),
            None => pith_store::dirs::default_session_dir(&state.config.env.agent_dir, cwd)
                .map(Some)
                .map_err(|e| e.to_string()),
        }
    }

    async fn switch(
        me: &ActorRef<RuntimeMsg>,
        state: &mut RuntimeState,
        start: SessionStart,
    ) -> Result<SwitchOutcome, String> {
        let snapshot = match &state.subtree {
            Some(sub) => call(&sub.writer, |r| {
                WriterMsg::Snapshot(TraceIds::root(0, "Runtime"), r)
            })
            .await
            .ok_or("the session writer did not answer")?,
            None => return Err("no session".into()),
        };
        let env = state.config.env.clone();
        let (current_file, current_dir, current_cwd) = {
            let sub = state.subtree.as_ref().ok_or("no session")?;
            (
                sub.session_file.clone(),
                sub.session_dir.clone(),
                sub.cwd.clone(),
            )
        };
        // Where a fork/clone starts, validated before anyone is asked (pi: after; the event
        // would then announce an impossible fork).
        let mut selected_text = None;
        let fork_target: Option<Option<String>> = match &start {
            SessionStart::Fork { entry_id } => {
                let entry = snapshot
                    .entries
                    .iter()
                    .rev()
                    .find(|e| e.id() == entry_id)
                    .ok_or("Invalid entry ID for forking")?;
                let message = entry.decode_message().and_then(Result::ok);
                let Some(AgentMessage::User(user)) = message else {
                    return Err("Invalid entry ID for forking".into());
                };
                selected_text = Some(user.content.joined_text(""));
                Some(entry.parent().id().map(str::to_owned))
            }
            SessionStart::Clone => match snapshot.leaf {
                Leaf::At(i) => Some(Some(snapshot.entries[i].id().to_owned())),
                Leaf::Root => return Err("Cannot clone session: no current entry selected".into()),
            },
            _ => None,
        };
        let veto = match &start {
            SessionStart::New => ExtensionEvent::SessionBeforeSwitch {
                reason: StartReason::New,
                target_session_file: None,
            },
            SessionStart::Resume(p) | SessionStart::Import(p) => {
                ExtensionEvent::SessionBeforeSwitch {
                    reason: StartReason::Resume,
                    target_session_file: Some(p.clone()),
                }
            }
            SessionStart::Fork { entry_id } => ExtensionEvent::SessionBeforeFork {
                entry_id: entry_id.clone(),
                position: ForkPosition::Before,
            },
            SessionStart::Clone => ExtensionEvent::SessionBeforeFork {
                entry_id: fork_target.clone().flatten().unwrap_or_default(),
                position: ForkPosition::At,
            },
        };
        if let Some(reason) = Self::ask_extensions(state, veto).await {
            return Ok(SwitchOutcome {
                cancelled: Some(reason),
                ..SwitchOutcome::default()
            });
        }
        // Import copies before the switch (pi: the copy exists even if opening fails).
        let import_dest = match &start {
            SessionStart::Import(src) => {
                let src = std::path::absolute(src).map_err(|e| e.to_string())?;
                if !src.is_file() {
                    return Err(format!("File not found: {}", src.display()));
                }
                let dir = current_dir
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(&state.config.cwd));
                pith_store::dirs::ensure_dir(&dir).map_err(|e| e.to_string())?;
                let dest = dir.join(src.file_name().unwrap_or_default());
                if dest != src {
                    std::fs::copy(&src, &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
                }
                Some(dest)
            }
            _ => None,
        };
        let reason = start.reason();
        Self::tell_extensions(
            state,
            ExtensionEvent::SessionShutdown {
                reason,
                target_session_file: None,
            },
        )
        .await;
        Self::stop_subtree(state).await;
        let opened: Result<Session, String> = match &start {
            // The runtime's cwd is the current session's (pi's runtime.cwd follows a resume
            // into another project), so /new starts there.
            SessionStart::New => match Self::session_dir_for(state, &current_cwd) {
                Ok(Some(dir)) => {
                    Session::create(&current_cwd, Some(&dir), &env).map_err(|e| e.to_string())
                }
                Ok(None) => Ok(Session::in_memory(&current_cwd, &env)),
                Err(e) => Err(e),
            },
            SessionStart::Resume(path) => {
                Session::open(path, None, None, OpenMode::Write, &env).map_err(|e| e.to_string())
            }
            SessionStart::Import(_) => match &import_dest {
                Some(dest) => {
                    Session::open(dest, current_dir.as_deref(), None, OpenMode::Write, &env)
                        .map_err(|e| e.to_string())
                }
                None => Err("nothing imported".into()),
            },
            SessionStart::Fork { .. } | SessionStart::Clone => {
                let mut source = Session::from_snapshot(
                    snapshot.header.clone(),
                    snapshot.entries.clone(),
                    snapshot.leaf,
                    &current_cwd,
                    current_dir.as_deref(),
                    current_file.as_deref(),
                    &env,
                );
                match fork_target.clone().flatten() {
                    Some(target) => source
                        .create_branched_session(&target)
                        .map(|_| source)
                        .map_err(|e| e.to_string()),
                    None => {
                        let parent = current_file
                            .as_ref()
                            .map(|p| p.to_string_lossy().into_owned());
                        source.new_session(None, parent);
                        Ok(source)
                    }
                }
            }
        };
        let (session, failure) = match opened {
            Ok(s) => (s, None),
            // The old session comes back: a failed switch changes nothing.
            Err(e) => (
                Session::from_snapshot(
                    snapshot.header,
                    snapshot.entries,
                    snapshot.leaf,
                    &current_cwd,
                    current_dir.as_deref(),
                    current_file.as_deref(),
                    &env,
                ),
                Some(e),
            ),
        };
        let session_file = session.session_file().map(Path::to_owned);
        let start_reason = if failure.is_some() {
            StartReason::Restart
        } else {
            reason
        };
        Self::spawn_subtree(me, state, session, start_reason, current_file).await?;
        match failure {
            Some(e) => Err(e),
            None => Ok(SwitchOutcome {
                cancelled: None,
                session_file,
                selected_text,
            }),
        }
    }

    async fn restart(
        me: &ActorRef<RuntimeMsg>,
        state: &mut RuntimeState,
        failed: &str,
        why: String,
    ) {
        let (file, dir, cwd) = match &state.subtree {
            Some(s) => (s.session_file.clone(), s.session_dir.clone(), s.cwd.clone()),
            None => return,
        };
        let snapshot = Self::stop_subtree(state).await;
        let env = state.config.env.clone();
        let session = match (&file, snapshot) {
            (Some(f), _) if f.exists() => open_when_released(f, dir.as_deref(), &cwd, &env).await,
            (_, Some(s)) => Ok(Session::from_snapshot(
                s.header,
                s.entries,
                s.leaf,
                &cwd,
                dir.as_deref(),
                file.as_deref(),
                &env,
            )),
            (_, None) => Err("nothing to rebuild from".to_owned()),
        };
        match session {
            Ok(session) => {
                match Self::spawn_subtree(me, state, session, StartReason::Restart, file).await {
                    Ok(()) => state.notify(RuntimeEvent::Notice(format!(
                        "The {failed} actor failed ({why}); the session was rebuilt from its log."
                    ))),
                    Err(e) => state.notify(RuntimeEvent::Notice(format!(
                        "The {failed} actor failed ({why}); restarting the session failed: {e}"
                    ))),
                }
            }
            Err(e) => state.notify(RuntimeEvent::Notice(format!(
                "The {failed} actor failed ({why}) and the session could not be rebuilt: {e}"
            ))),
        }
    }
}

/// Reopens the session file for writing once the failed writer's lock is gone: a killed
/// actor's state (and with it the lock) is dropped as its task ends, which may trail the
/// failure notice by a moment.
async fn open_when_released(
    file: &Path,
    dir: Option<&Path>,
    cwd: &str,
    env: &SessionEnv,
) -> Result<Session, String> {
    let mut tries = 0;
    loop {
        match Session::open(file, dir, Some(cwd), OpenMode::Write, env) {
            Err(pith_store::Error::Locked { pid: Some(pid), .. })
                if pid == std::process::id() && tries < 50 =>
            {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            other => return other.map_err(|e| e.to_string()),
        }
    }
}

impl Actor for Runtime {
    type Msg = RuntimeMsg;
    type State = RuntimeState;
    type Arguments = (RuntimeConfig, Session);

    async fn pre_start(
        &self,
        _me: ActorRef<RuntimeMsg>,
        (config, session): Self::Arguments,
    ) -> Result<RuntimeState, ActorProcessingErr> {
        Ok(RuntimeState {
            config,
            subtree: None,
            first: Some(session),
            ui: UiSink::default(),
            next_id: AtomicU64::new(1),
        })
    }

    async fn post_start(
        &self,
        me: ActorRef<RuntimeMsg>,
        state: &mut RuntimeState,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(session) = state.first.take() {
            Self::spawn_subtree(&me, state, session, StartReason::Startup, None)
                .await
                .map_err(ActorProcessingErr::from)?;
        }
        Ok(())
    }

    async fn handle(
        &self,
        me: ActorRef<RuntimeMsg>,
        msg: RuntimeMsg,
        state: &mut RuntimeState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RuntimeMsg::Subscribe(reply) => {
                let _ = reply.send(state.ui.subscribe());
            }
            RuntimeMsg::Prompt(text, reply) => match &state.subtree {
                Some(sub) => {
                    let ids = state.ids();
                    let r = call(&sub.agent, |p| AgentMsg::Prompt(ids, text, p))
                        .await
                        .unwrap_or_else(|| Err("the agent did not answer".into()));
                    let _ = reply.send(r);
                }
                None => {
                    let _ = reply.send(Err("no session".into()));
                }
            },
            RuntimeMsg::Steer(text) => {
                if let Some(sub) = &state.subtree {
                    let _ = sub.agent.cast(AgentMsg::Steer(text));
                }
            }
            RuntimeMsg::FollowUp(text) => {
                if let Some(sub) = &state.subtree {
                    let _ = sub.agent.cast(AgentMsg::FollowUp(text));
                }
            }
            RuntimeMsg::Abort(reply) => {
                if let Some(sub) = &state.subtree {
                    call(&sub.agent, AgentMsg::Abort).await;
                }
                let _ = reply.send(());
            }
            RuntimeMsg::Switch(start, reply) => {
                let r = Self::switch(&me, state, start).await;
                let _ = reply.send(r);
            }
            RuntimeMsg::Compact(summary, reply) => {
                let r = match &state.subtree {
                    Some(sub) => {
                        let ids = state.ids();
                        call(&sub.compactor, |p| CompactorMsg::Manual(ids, summary, p))
                            .await
                            .unwrap_or_else(|| Err("the compactor did not answer".into()))
                    }
                    None => Err("no session".into()),
                };
                let _ = reply.send(r);
            }
            RuntimeMsg::Command(name, args, reply) => {
                let mut answer = None;
                if let Some(sub) = &state.subtree {
                    for ext in &sub.extensions {
                        let cmds = call(ext, ExtensionMsg::Commands).await.unwrap_or_default();
                        if cmds.iter().any(|c| c.name == name) {
                            answer = call(ext, |r| {
                                ExtensionMsg::Command(name.clone(), args.clone(), r)
                            })
                            .await;
                            break;
                        }
                    }
                }
                let _ = reply.send(answer);
            }
            RuntimeMsg::Commands(reply) => {
                let mut all = Vec::new();
                if let Some(sub) = &state.subtree {
                    for ext in &sub.extensions {
                        all.extend(call(ext, ExtensionMsg::Commands).await.unwrap_or_default());
                    }
                }
                let _ = reply.send(all);
            }
            RuntimeMsg::Summary(reply) => {
                if let Some(sub) = &state.subtree
                    && let Some(snap) = call(&sub.writer, |r| {
                        WriterMsg::Snapshot(TraceIds::root(0, "Runtime"), r)
                    })
                    .await
                {
                    {
                        let leaf_id = match snap.leaf {
                            Leaf::At(i) => Some(snap.entries[i].id().to_owned()),
                            Leaf::Root => None,
                        };
                        let _ = reply.send(SessionSummary {
                            session_file: snap.session_file,
                            session_id: snap.header.id().to_owned(),
                            cwd: snap.cwd,
                            entries: snap.entries.len(),
                            leaf_id,
                        });
                    }
                }
            }
            RuntimeMsg::Snapshot(reply) => {
                if let Some(sub) = &state.subtree
                    && let Some(snap) = call(&sub.writer, |r| {
                        WriterMsg::Snapshot(TraceIds::root(0, "Runtime"), r)
                    })
                    .await
                {
                    let _ = reply.send(snap);
                }
            }
            RuntimeMsg::Context(reply) => {
                if let Some(sub) = &state.subtree
                    && let Some(ctx) = call(&sub.projection, |r| {
                        ProjectionMsg::GetContext(TraceIds::root(0, "Runtime"), r)
                    })
                    .await
                {
                    let _ = reply.send(ctx);
                }
            }
            RuntimeMsg::Shutdown(reply) => {
                Self::tell_extensions(
                    state,
                    ExtensionEvent::SessionShutdown {
                        reason: StartReason::Quit,
                        target_session_file: None,
                    },
                )
                .await;
                Self::stop_subtree(state).await;
                let _ = reply.send(());
            }
            RuntimeMsg::Restart {
                session_id,
                actor,
                why,
            } => {
                if state
                    .subtree
                    .as_ref()
                    .is_some_and(|s| s.session_id == session_id)
                {
                    Self::restart(&me, state, actor, why).await;
                }
            }
            RuntimeMsg::CrashChild(name) => {
                if let Some(sub) = &state.subtree {
                    let cell = match name.as_str() {
                        "SessionWriter" => sub.writer.get_cell(),
                        "Projection" => sub.projection.get_cell(),
                        "Compactor" => sub.compactor.get_cell(),
                        _ => sub.agent.get_cell(),
                    };
                    cell.kill();
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        me: ActorRef<RuntimeMsg>,
        event: SupervisionEvent,
        state: &mut RuntimeState,
    ) -> Result<(), ActorProcessingErr> {
        let (id, why) = match &event {
            SupervisionEvent::ActorFailed(cell, err) => (cell.get_id(), err.to_string()),
            SupervisionEvent::ActorTerminated(cell, _, reason) => (
                cell.get_id(),
                reason.clone().unwrap_or_else(|| "stopped".into()),
            ),
            _ => return Ok(()),
        };
        // Only a child of the current subtree that ends on its own is a crash: children the
        // runtime stopped itself (switch, shutdown) belong to a subtree that is already gone.
        let Some(sub) = &state.subtree else {
            return Ok(());
        };
        if sub.failed || !sub.ids().contains(&id) {
            return Ok(());
        }
        let actor = sub.name_of(id);
        let session_id = sub.session_id.clone();
        // Forget this subtree's ids now: the rest of it is stopped by the restart, and those
        // terminations are not new failures.
        if let Some(sub) = &mut state.subtree {
            sub.failed = true;
        }
        let _ = me.cast(RuntimeMsg::Restart {
            session_id,
            actor,
            why,
        });
        Ok(())
    }
}
