//! Runtime: the root supervisor. It owns the current session's subtree (SessionWriter,
//! Projection, Agent, Compactor, one actor per extension) and replaces it on `/new`,
//! `/resume`, `/fork`, `/clone` and `/import`, or rebuilds it from the log when a child
//! crashes (spec: lifecycle.md §6–7; guarantees in `docs/actors.md`).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio::sync::mpsc;

use pith_events::{EntryType, ExtensionEvent, SessionStart, StartReason};
use pith_store::{Leaf, Session, SessionEnv};

use crate::agent::{Agent, AgentArgs, AgentMsg, EventSink};
use crate::compactor::{Compactor, CompactorMsg, Navigated, TreeOptions};
use crate::extension::{Extension, ExtensionActor, ExtensionMsg, SlashCommand, Verdict};
use crate::projection::{Projection, ProjectionMsg};
use crate::provider::Provider;
use crate::tool::Toolset;
use crate::trace::TraceIds;
use crate::writer::{Append, SessionWriter, Snapshot, WriterArgs, WriterMsg};

const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Builds a fresh extension for every session subtree.
pub type ExtensionFactory = Arc<dyn Fn() -> Box<dyn Extension> + Send + Sync>;

/// Builds a session's system prompt from its cwd and the tools offered; called for every
/// session the runtime starts, since a switch may change the cwd.
pub type SystemPromptFn =
    Arc<dyn Fn(&std::path::Path, &[crate::tool::ToolSpec]) -> String + Send + Sync>;

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
    pub tools: Toolset,
    /// Builds the system prompt of a session from its cwd and tools; `None` sends none.
    pub system_prompt: Option<SystemPromptFn>,
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
    /// Answered when the agent has nothing left to do for the prompts sent so far.
    WhenIdle(RpcReplyPort<()>),
    /// Answered with whether no run is active, by the agent after everything sent to it
    /// before (so steering queued earlier has had its `queue_update`).
    IsIdle(RpcReplyPort<bool>),
    /// Manual compaction with a summary; answered with the entry id.
    Compact(String, RpcReplyPort<Result<String, String>>),
    /// `/tree`: move the leaf to an entry (optionally summarizing the branch left behind).
    NavigateTree(String, TreeOptions, RpcReplyPort<Result<Navigated, String>>),
    /// `/compact [focus]`: summarized by the model; answered with the entry id.
    CompactNow(Option<String>, RpcReplyPort<Result<String, String>>),
    /// `!cmd` / `!!cmd` (`true`): run a user command in the session cwd; answered with the
    /// recorded bashExecution message (spec: agent-and-events.md §5).
    Bash(
        String,
        bool,
        RpcReplyPort<Result<pith_events::BashExecutionMessage, String>>,
    ),
    /// Cancel the running user command.
    AbortBash,
    /// `/model`: use another model from the next request on; appends `model_change`.
    SetModel(
        Arc<dyn Provider>,
        (String, String),
        RpcReplyPort<Result<(), String>>,
    ),
    /// `/thinking`: use another thinking level; appends `thinking_level_change` when it
    /// differs and emits `thinking_level_changed`.
    SetThinkingLevel(String, RpcReplyPort<Result<(), String>>),
    /// `/name`: appends `session_info` and emits `session_info_changed`.
    SetSessionName(String, RpcReplyPort<Result<(), String>>),
    /// `/label`: sets (`Some`) or clears (`None`) the label of an entry.
    SetLabel(String, Option<String>, RpcReplyPort<Result<(), String>>),
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
    /// Agent and compaction events; detached from the frontends at teardown.
    events: crate::agent::EventSink,
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

mod controls;
mod handle;
mod subtree;
mod switch;

pub use handle::{RuntimeError, RuntimeHandle};

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
            RuntimeMsg::WhenIdle(reply) => match &state.subtree {
                // Forwarded: waiting must not hold the Runtime's mailbox.
                Some(sub) => {
                    if let Err(e) = sub.agent.cast(AgentMsg::WhenIdle(reply)) {
                        tracing::warn!("the agent is gone: {e}");
                    }
                }
                None => {
                    let _ = reply.send(());
                }
            },
            RuntimeMsg::IsIdle(reply) => match &state.subtree {
                // Forwarded with the port: the agent's mailbox orders it after earlier casts.
                Some(sub) => {
                    if let Err(e) = sub.agent.cast(AgentMsg::IsIdle(reply)) {
                        tracing::warn!("the agent is gone: {e}");
                    }
                }
                None => {
                    let _ = reply.send(true);
                }
            },
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
            RuntimeMsg::NavigateTree(target, options, reply) => match &state.subtree {
                Some(sub) => {
                    // The leaf cannot move under a run that is appending to it.
                    let idle = call(&sub.agent, AgentMsg::IsIdle).await.unwrap_or(false);
                    if !idle {
                        let _ = reply.send(Err(
                            "Cannot move in the tree while the agent is running; abort it first"
                                .into(),
                        ));
                    } else {
                        let ids = state.ids();
                        // Like /compact, a branch summary may take minutes: the Compactor
                        // answers the caller itself.
                        if let Err(e) = sub
                            .compactor
                            .cast(CompactorMsg::NavigateTree(ids, target, options, reply))
                        {
                            tracing::warn!("the compactor is gone: {e}");
                        }
                    }
                }
                None => {
                    let _ = reply.send(Err("no session".into()));
                }
            },
            RuntimeMsg::CompactNow(focus, reply) => match &state.subtree {
                // The summary can take minutes: the Compactor answers the caller itself so
                // the Runtime stays free for aborts, steering and switches meanwhile.
                // A running turn may have tool calls pending: the compaction waits for the run
                // to end (pi aborts it instead, and drops the aborted reply).
                Some(sub) => {
                    let ids = state.ids();
                    let (agent, compactor) = (sub.agent.clone(), sub.compactor.clone());
                    tokio::spawn(async move {
                        let _ = agent.call(AgentMsg::WhenIdle, None).await;
                        if let Err(e) = compactor.cast(CompactorMsg::Compact(ids, focus, reply)) {
                            tracing::warn!("the compactor is gone: {e}");
                        }
                    });
                }
                None => {
                    let _ = reply.send(Err("no session".into()));
                }
            },
            RuntimeMsg::Bash(command, exclude, reply) => match &state.subtree {
                // Forwarded with the reply port: the command may run for minutes.
                Some(sub) => {
                    if let Err(e) = sub.agent.cast(AgentMsg::Bash(command, exclude, reply)) {
                        tracing::warn!("the agent is gone: {e}");
                    }
                }
                None => {
                    let _ = reply.send(Err("no session".into()));
                }
            },
            RuntimeMsg::SetModel(provider, model, reply) => {
                let r = Self::set_model(state, provider, model).await;
                let _ = reply.send(r);
            }
            RuntimeMsg::SetThinkingLevel(level, reply) => {
                let r = Self::set_thinking_level(state, level).await;
                let _ = reply.send(r);
            }
            RuntimeMsg::SetSessionName(name, reply) => {
                let r = Self::set_session_name(state, name).await;
                let _ = reply.send(r);
            }
            RuntimeMsg::SetLabel(target_id, label, reply) => {
                let r = Self::append(
                    state,
                    Append::Label {
                        target_id,
                        label: label.filter(|l| !l.trim().is_empty()),
                    },
                )
                .await
                .map(|_| ());
                let _ = reply.send(r);
            }
            RuntimeMsg::AbortBash => {
                if let Some(sub) = &state.subtree {
                    let _ = sub.agent.cast(AgentMsg::AbortBash);
                }
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
