//! Runtime: the root supervisor. It owns the current session's subtree (SessionWriter,
//! Projection, Agent, Compactor, TreeNavigator, one actor per extension) and replaces it on
//! `/new`, `/resume`, `/fork`, `/clone` and `/import`, or rebuilds it from the log when a
//! child crashes (spec: lifecycle.md §6–7; guarantees in `docs/actors.md`).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use pith_events::{ExtensionEvent, ModelRef, StartReason, ThinkingLevel};
use pith_store::{Session, SessionEnv};

use crate::agent::AgentMsg;
use crate::compactor::CompactorMsg;
use crate::envelope::{Envelope, MessageKind, Origin};
use crate::event::{EventSink, UiSink};
use crate::extension_host::Extensions;
use crate::projection::ProjectionRef;
use crate::trace::{ActorName, MessageIds, Trace};
use crate::tree_navigator::NavigatorMsg;
use crate::writer::{Append, WriterRef};
use pith_llm::provider::Provider;
use pith_tools::tool::Toolset;

pub use crate::event::RuntimeEvent;
pub use crate::extension_host::{ExtensionFactory, HostedExtensions};

/// Builds a session's system prompt from its cwd and the tools it lists (their snippets and
/// guidelines); called for every session the runtime starts, since a switch may change the
/// cwd.
pub type SystemPromptFn =
    Arc<dyn Fn(&std::path::Path, &[crate::system_prompt::PromptTool]) -> String + Send + Sync>;

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
    /// Which model that is.
    pub model: ModelRef,
    /// Thinking level for new sessions.
    pub thinking_level: ThinkingLevel,
    /// How a resumed session gets its own model and level back (spec: lifecycle.md §6).
    pub selection: crate::selection::Selection,
    /// `--name`: the first session's name, appended as its `session_info` before pi's
    /// session-start entries (in a new session, the root; spec: lifecycle.md §5.1).
    pub session_name: Option<String>,
    /// Tools the model may call; built for each session once its settings are read.
    pub tools: ToolChoice,
    /// Builds the system prompt of a session from its cwd and tools; `None` sends none.
    pub system_prompt: Option<SystemPromptFn>,
    /// Extensions, in load order.
    pub extensions: Vec<ExtensionFactory>,
    /// Extension processes, loaded after `extensions` (spec: extensions.md).
    pub hosted: HostedExtensions,
    /// Prompt templates and skills: prompts, steering messages and follow-ups are expanded
    /// with them (pi's `/skill:name` and `/template` expansion) before they reach the agent.
    pub resources: Arc<crate::resources::Resources>,
}

/// Which tools a session offers the model. Built-in tools are built for each session after
/// its settings are read, so `shellCommandPrefix` reaches the `bash` tool as it reaches
/// `!cmd`.
#[derive(Clone)]
pub enum ToolChoice {
    /// Built-in tools by name, in this order (pi's default: read, bash, edit, write); names
    /// pith does not have are left out (the CLI refuses them first).
    Builtin(Vec<String>),
    /// Exactly these, whatever the settings say (tests, embedders).
    Fixed(Toolset),
    /// These tools plus those a source offers while the session runs (MCP servers, which
    /// live as long as the runtime: every session's toolset shares the source).
    WithSource(Box<ToolChoice>, Arc<dyn pith_tools::ToolSource>),
}

impl ToolChoice {
    /// pi's default tools.
    pub fn defaults() -> ToolChoice {
        ToolChoice::Builtin(
            pith_tools::BUILTIN_TOOL_NAMES
                .iter()
                .map(|n| (*n).to_owned())
                .collect(),
        )
    }

    /// No tools at all (`--no-tools`).
    pub fn none() -> ToolChoice {
        ToolChoice::Fixed(Toolset::none())
    }

    /// The tools for a session whose settings are `settings`.
    pub fn build(&self, settings: &crate::settings::Settings) -> Toolset {
        match self {
            ToolChoice::Fixed(tools) => tools.clone(),
            ToolChoice::WithSource(base, source) => {
                base.build(settings).with_source(source.clone())
            }
            ToolChoice::Builtin(names) => {
                let shell = pith_tools::ShellConfig {
                    shell_path: None,
                    command_prefix: settings.shell_command_prefix(),
                };
                Toolset::new(
                    names
                        .iter()
                        .filter_map(|n| pith_tools::tool_by_name_with(n, &shell))
                        .collect(),
                )
            }
        }
    }
}

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

/// What `/session` shows: the current session's file, id, cwd and size.
#[derive(Debug, Clone, PartialEq)]
pub struct CurrentSession {
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
    /// The model the session runs (a resumed session's own, spec: lifecycle.md §6).
    pub model: ModelRef,
    /// The thinking level it runs at.
    pub thinking_level: ThinkingLevel,
}

/// The actors of one session.
struct Subtree {
    writer: WriterRef,
    projection: ProjectionRef,
    agent: ActorRef<Envelope<AgentMsg>>,
    compactor: ActorRef<Envelope<CompactorMsg>>,
    navigator: ActorRef<Envelope<NavigatorMsg>>,
    extensions: Extensions,
    /// Agent and compaction events; detached from the frontends at teardown.
    events: EventSink,
    session_file: Option<PathBuf>,
    session_id: String,
    session_dir: Option<PathBuf>,
    cwd: String,
    /// The built-in tools it offers (the system prompt lists them).
    tools: Toolset,
    /// The model this session runs (its own when resumed, spec: lifecycle.md §6).
    model: ModelRef,
    /// The thinking level this session runs at.
    thinking_level: ThinkingLevel,
    /// A child failed; a restart is on its way.
    failed: bool,
}

impl Subtree {
    fn ids(&self) -> HashSet<ActorId> {
        let mut ids: HashSet<ActorId> = [
            self.writer.0.get_id(),
            self.projection.0.get_id(),
            self.agent.get_id(),
            self.compactor.get_id(),
            self.navigator.get_id(),
        ]
        .into();
        ids.extend(self.extensions.ids());
        ids
    }

    fn name_of(&self, id: ActorId) -> ActorName {
        if id == self.writer.0.get_id() {
            ActorName::SessionWriter
        } else if id == self.projection.0.get_id() {
            ActorName::Projection
        } else if id == self.agent.get_id() {
            ActorName::Agent
        } else if id == self.compactor.get_id() {
            ActorName::Compactor
        } else if id == self.navigator.get_id() {
            ActorName::TreeNavigator
        } else {
            self.extensions
                .name_of(id)
                .unwrap_or(ActorName::Extension(Arc::from("?")))
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
    /// Numbers every message of this runtime (shared with its handles).
    ids: MessageIds,
    /// Cancels the summaries running now (`/compact`, a `/tree` branch summary): each gets
    /// a child of it; abort, shutdown and switches cancel it and start a new one.
    summaries: CancellationToken,
}

impl RuntimeState {
    fn notify(&self, event: RuntimeEvent) {
        self.ui.notify(event);
    }

    /// Cancels every summary running now (pi's `abortCompaction` and `abortBranchSummary`).
    fn cancel_summaries(&mut self) {
        self.summaries.cancel();
        self.summaries = CancellationToken::new();
    }

    /// The Runtime sending on its own account (a restart, a session start): a new flow.
    fn own(&self) -> Origin {
        let trace = Trace::root(&self.ids, ActorName::Runtime);
        Origin::new(ActorName::Runtime, &trace)
    }
}

/// The Runtime actor. Spawn it with [`Runtime::start`].
pub struct Runtime;

mod controls;
mod handle;
mod messages;
mod open;
mod subtree;
mod switch;

pub use crate::agent::QueuedMessages;
pub use crate::error::RuntimeError;
pub use handle::{RuntimeHandle, Started};
pub use messages::RuntimeMsg;
pub use open::{FirstSession, Opened};

impl Runtime {
    async fn on(
        me: &ActorRef<Envelope<RuntimeMsg>>,
        state: &mut RuntimeState,
        from: &Origin,
        msg: RuntimeMsg,
    ) {
        match msg {
            RuntimeMsg::Subscribe { reply } => {
                let _ = reply.send(state.ui.subscribe());
            }
            RuntimeMsg::Pacer { reply } => {
                let _ = reply.send(state.ui.pacer().clone());
            }
            RuntimeMsg::Prompt { mut input, reply } => {
                input.text = state.config.resources.expand(&input.text);
                let r = match &state.subtree {
                    Some(sub) => from
                        .call(&sub.agent, "agent", |reply| AgentMsg::Prompt {
                            input,
                            reply,
                        })
                        .await
                        .unwrap_or_else(|e| Err(e.into())),
                    None => Err(RuntimeError::NoSession),
                };
                let _ = reply.send(r);
            }
            RuntimeMsg::Steer { mut input } => {
                input.text = state.config.resources.expand(&input.text);
                if let Some(sub) = &state.subtree {
                    from.cast(&sub.agent, AgentMsg::Steer { input });
                }
            }
            RuntimeMsg::FollowUp { mut input } => {
                input.text = state.config.resources.expand(&input.text);
                if let Some(sub) = &state.subtree {
                    from.cast(&sub.agent, AgentMsg::FollowUp { input });
                }
            }
            // Forwarded with the port: waiting must not hold the Runtime's mailbox.
            RuntimeMsg::WhenIdle { reply } => match &state.subtree {
                Some(sub) => {
                    from.cast(&sub.agent, AgentMsg::WhenIdle { reply });
                }
                None => {
                    let _ = reply.send(());
                }
            },
            // Forwarded with the port: the agent's mailbox orders it after earlier casts.
            RuntimeMsg::IsIdle { reply } => match &state.subtree {
                Some(sub) => {
                    from.cast(&sub.agent, AgentMsg::IsIdle { reply });
                }
                None => {
                    let _ = reply.send(true);
                }
            },
            RuntimeMsg::ClearQueue { reply } => match &state.subtree {
                Some(sub) => {
                    from.cast(&sub.agent, AgentMsg::ClearQueue { reply });
                }
                None => {
                    let _ = reply.send(crate::agent::QueuedMessages::default());
                }
            },
            // pi's `abort()`: the retry wait, the run, a compaction and a branch summary.
            RuntimeMsg::Abort { reply } => {
                state.cancel_summaries();
                if let Some(sub) = &state.subtree {
                    let _ = from
                        .wait(&sub.agent, "agent", |reply| AgentMsg::Abort { reply })
                        .await;
                }
                let _ = reply.send(());
            }
            RuntimeMsg::Switch { start, reply } => {
                let r = Self::switch(me, state, from, start).await;
                let _ = reply.send(r);
            }
            RuntimeMsg::CompactWith { summary, reply } => {
                let r = match &state.subtree {
                    Some(sub) => from
                        .wait(&sub.compactor, "compactor", |reply| {
                            CompactorMsg::CompactWith { summary, reply }
                        })
                        .await
                        .unwrap_or_else(|e| Err(e.into())),
                    None => Err(RuntimeError::NoSession),
                };
                let _ = reply.send(r);
            }
            RuntimeMsg::NavigateTree {
                target_id,
                options,
                reply,
            } => match &state.subtree {
                Some(sub) => {
                    // The leaf cannot move under a run that is appending to it.
                    let idle = from
                        .call(&sub.agent, "agent", |reply| AgentMsg::IsIdle { reply })
                        .await
                        .unwrap_or(false);
                    if !idle {
                        let _ = reply.send(Err(RuntimeError::TreeMoveWhileRunning));
                    } else {
                        // Like /compact, a branch summary may take minutes: the TreeNavigator
                        // answers the caller itself.
                        from.cast(
                            &sub.navigator,
                            NavigatorMsg::Navigate {
                                target_id,
                                options,
                                abort: state.summaries.child_token(),
                                reply,
                            },
                        );
                    }
                }
                None => {
                    let _ = reply.send(Err(RuntimeError::NoSession));
                }
            },
            RuntimeMsg::Compact { focus, reply } => match &state.subtree {
                // The summary can take minutes: the Compactor answers the caller itself so
                // the Runtime stays free for aborts, steering and switches meanwhile.
                // A running turn may have tool calls pending: the compaction waits for the run
                // to end (pi aborts it instead, and drops the aborted reply).
                Some(sub) => {
                    let (agent, compactor) = (sub.agent.clone(), sub.compactor.clone());
                    let from = from.clone();
                    let abort = state.summaries.child_token();
                    tokio::spawn(
                        async move {
                            let _ = from
                                .wait(&agent, "agent", |reply| AgentMsg::WhenIdle { reply })
                                .await;
                            from.cast(
                                &compactor,
                                CompactorMsg::Compact {
                                    focus,
                                    abort,
                                    reply,
                                },
                            );
                        }
                        .in_current_span(),
                    );
                }
                None => {
                    let _ = reply.send(Err(RuntimeError::NoSession));
                }
            },
            // Forwarded with the reply port: the command may run for minutes.
            RuntimeMsg::Bash { command, reply } => match &state.subtree {
                Some(sub) => {
                    from.cast(&sub.agent, AgentMsg::Bash { command, reply });
                }
                None => {
                    let _ = reply.send(Err(RuntimeError::NoSession));
                }
            },
            RuntimeMsg::SetModel {
                provider,
                model,
                reply,
            } => {
                let r = Self::set_model(state, from, provider, model).await;
                let _ = reply.send(r);
            }
            RuntimeMsg::SetThinkingLevel { level, reply } => {
                let r = Self::set_thinking_level(state, from, level).await;
                let _ = reply.send(r);
            }
            RuntimeMsg::SetSetting { path, value, reply } => {
                let r = Self::set_setting(state, from, &path, value);
                let _ = reply.send(r);
            }
            RuntimeMsg::SetSessionName { name, reply } => {
                let r = Self::set_session_name(state, from, name).await;
                let _ = reply.send(r);
            }
            RuntimeMsg::SetLabel {
                entry_id,
                label,
                reply,
            } => {
                let append = Append::Label {
                    target_id: entry_id,
                    label: label.filter(|l| !l.trim().is_empty()),
                };
                let r = Self::append(state, from, append).await.map(|_| ());
                let _ = reply.send(r);
            }
            RuntimeMsg::AbortBash => {
                if let Some(sub) = &state.subtree {
                    from.cast(&sub.agent, AgentMsg::AbortBash);
                }
            }
            RuntimeMsg::Command { name, args, reply } => {
                // Beside the mailbox: a command may wait for a dialog, and the Runtime must
                // go on answering meanwhile.
                match &state.subtree {
                    Some(sub) => {
                        let (extensions, from) = (sub.extensions.clone(), from.clone());
                        tokio::spawn(async move {
                            let answer = extensions.command(&from, &name, &args).await;
                            let _ = reply.send(answer);
                        });
                    }
                    None => {
                        let _ = reply.send(None);
                    }
                }
            }
            RuntimeMsg::Reload { name, reply } => {
                let reloaded = match &state.subtree {
                    Some(sub) => {
                        let reloaded = sub.extensions.reload(from, name.as_deref()).await;
                        // The reloaded tools' snippets and guidelines (pi rebuilds its
                        // prompt on reload too).
                        if let Some(build) = &state.config.system_prompt {
                            let tools = sub.extensions.registry().prompt_tools(&sub.tools);
                            let prompt = build(std::path::Path::new(&sub.cwd), &tools);
                            from.cast(&sub.agent, AgentMsg::SetSystemPrompt { prompt });
                        }
                        reloaded
                    }
                    None => Vec::new(),
                };
                let _ = reply.send(reloaded);
            }
            RuntimeMsg::Commands { reply } => {
                let all = match &state.subtree {
                    Some(sub) => sub.extensions.commands(from).await,
                    None => Vec::new(),
                };
                let _ = reply.send(all);
            }
            RuntimeMsg::CurrentSession { reply } => {
                if let Some(sub) = &state.subtree
                    && let Ok(snap) = sub.writer.snapshot(from).await
                {
                    let leaf_id = snap.tree.leaf_id().map(str::to_owned);
                    let entries = snap.entries().len();
                    let _ = reply.send(CurrentSession {
                        session_file: snap.session_file,
                        session_id: snap.header.id().to_owned(),
                        cwd: snap.cwd,
                        entries,
                        leaf_id,
                        model: sub.model.clone(),
                        thinking_level: sub.thinking_level,
                    });
                }
            }
            RuntimeMsg::Snapshot { reply } => {
                if let Some(sub) = &state.subtree
                    && let Ok(snap) = sub.writer.snapshot(from).await
                {
                    let _ = reply.send(snap);
                }
            }
            RuntimeMsg::Context { reply } => {
                if let Some(sub) = &state.subtree
                    && let Ok(ctx) = sub.projection.context(from).await
                {
                    let _ = reply.send(ctx);
                }
            }
            RuntimeMsg::Shutdown { reply } => {
                let quit = ExtensionEvent::SessionShutdown {
                    reason: StartReason::Quit,
                    target_session_file: None,
                };
                Self::tell_extensions(state, from, quit).await;
                Self::stop_subtree(state, from).await;
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
                    Self::restart(me, state, from, &actor, why).await;
                }
            }
            RuntimeMsg::CrashChild { actor } => {
                if let Some(sub) = &state.subtree {
                    let cell = match actor.as_str() {
                        "SessionWriter" => sub.writer.0.get_cell(),
                        "Projection" => sub.projection.0.get_cell(),
                        "Compactor" => sub.compactor.get_cell(),
                        "TreeNavigator" => sub.navigator.get_cell(),
                        other => match other
                            .strip_prefix("Extension:")
                            .and_then(|n| sub.extensions.cell_named(n))
                        {
                            Some(cell) => cell,
                            None => sub.agent.get_cell(),
                        },
                    };
                    cell.kill();
                }
            }
        }
    }
}

impl Actor for Runtime {
    type Msg = Envelope<RuntimeMsg>;
    type State = RuntimeState;
    type Arguments = (RuntimeConfig, Session, MessageIds);

    async fn pre_start(
        &self,
        _me: ActorRef<Envelope<RuntimeMsg>>,
        (config, session, ids): Self::Arguments,
    ) -> Result<RuntimeState, ActorProcessingErr> {
        Ok(RuntimeState {
            config,
            subtree: None,
            first: Some(session),
            ui: UiSink::default(),
            ids,
            summaries: CancellationToken::new(),
        })
    }

    async fn post_start(
        &self,
        me: ActorRef<Envelope<RuntimeMsg>>,
        state: &mut RuntimeState,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(session) = state.first.take() {
            let from = state.own();
            Self::spawn_subtree(&me, state, &from, session, StartReason::Startup, None)
                .await
                .map_err(|e| ActorProcessingErr::from(e.to_string()))?;
        }
        Ok(())
    }

    async fn handle(
        &self,
        me: ActorRef<Envelope<RuntimeMsg>>,
        Envelope { trace, msg }: Envelope<RuntimeMsg>,
        state: &mut RuntimeState,
    ) -> Result<(), ActorProcessingErr> {
        let session = state
            .subtree
            .as_ref()
            .map(|s| s.session_id.clone())
            .unwrap_or_default();
        let span = trace.span(&ActorName::Runtime, msg.kind(), &session);
        let from = Origin::new(ActorName::Runtime, &trace);
        Self::on(&me, state, &from, msg).instrument(span).await;
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        me: ActorRef<Envelope<RuntimeMsg>>,
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
        // An extension's actor is rebuilt alone (one-for-one): the session goes on.
        if sub.extensions.ids().contains(&id) {
            let extensions = sub.extensions.clone();
            let from = state.own();
            if let Some(name) = extensions.respawn(&from, id).await {
                state.notify(RuntimeEvent::Notice(format!(
                    "{name} failed ({why}) and was started again; the session goes on"
                )));
            }
            return Ok(());
        }
        let actor = sub.name_of(id).to_string();
        let session_id = sub.session_id.clone();
        // Forget this subtree's ids now: the rest of it is stopped by the restart, and those
        // terminations are not new failures.
        if let Some(sub) = &mut state.subtree {
            sub.failed = true;
        }
        state.own().cast(
            &me,
            RuntimeMsg::Restart {
                session_id,
                actor,
                why,
            },
        );
        Ok(())
    }
}
