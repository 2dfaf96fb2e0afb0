//! Spawning and stopping one session's subtree, and telling or asking its extensions.

use std::path::{Path, PathBuf};

use ractor::{Actor, ActorCell, ActorRef};

use pith_events::{ExtensionEvent, StartReason};
use pith_store::Session;

use super::{Runtime, RuntimeEvent, RuntimeMsg, RuntimeState, Subtree};
use crate::RuntimeError;
use crate::agent::{Agent, AgentArgs, AgentMsg};
use crate::compactor::{Compactor, CompactorArgs};
use crate::envelope::{CALL_TIMEOUT, Envelope, Origin};
use crate::event::EventSink;
use crate::extension::Verdict;
use crate::extension_host::{Extensions, SessionSide};
use crate::projection::{Projection, ProjectionMsg, ProjectionRef};
use crate::settings::Settings;
use crate::tree_navigator::{LeafGuard, NavigatorArgs, TreeNavigator};
use crate::writer::{SessionWriter, Snapshot, WriterArgs, WriterRef};

impl Runtime {
    /// Spawns the actors of `session` linked to the Runtime, tells extensions
    /// `session_start {reason, previous_session_file}` and frontends `SessionStarted`.
    ///
    /// Errors: pi's session-start writes failed, or an actor could not be spawned.
    pub(super) async fn spawn_subtree(
        me: &ActorRef<Envelope<RuntimeMsg>>,
        state: &mut RuntimeState,
        from: &Origin,
        session: Session,
        reason: StartReason,
        previous: Option<PathBuf>,
    ) -> Result<(), RuntimeError> {
        // cwd-bound: read again for every session this runtime starts.
        let settings = Settings::load(&state.config.env.agent_dir, Path::new(session.cwd()));
        let chosen = crate::selection::choose(
            &session,
            &crate::selection::Current {
                provider: &state.config.provider,
                model: &state.config.model,
                thinking_level: state.config.thinking_level,
                selection: &state.config.selection,
            },
            &settings,
        );
        // `--thinking` is the first session's (pi calls `setThinkingLevel` once, after startup).
        state.config.selection.pinned_thinking = None;
        let mut writes = chosen.writes;
        if let Some(name) = state.config.session_name.take() {
            writes.insert(0, crate::writer::Append::SessionInfo { name });
        }
        if let Some(notice) = &chosen.notice {
            state.notify(RuntimeEvent::Notice(notice.clone()));
        }
        let cell: ActorCell = me.get_cell();
        let session_id = session.session_id().to_owned();
        let session_file = session.session_file().map(Path::to_owned);
        let session_dir = session.session_dir().map(Path::to_owned);
        let cwd = session.cwd().to_owned();
        let (projection, _) =
            Actor::spawn_linked(None, Projection, session_id.clone(), cell.clone()).await?;
        from.cast(
            &projection,
            ProjectionMsg::Load {
                tree: session.shared_tree(),
            },
        );
        let projection = ProjectionRef(projection);
        let (writer, _) = Actor::spawn_linked(
            None,
            SessionWriter,
            WriterArgs {
                session,
                projection: projection.0.clone(),
                ui: state.ui.clone(),
            },
            cell.clone(),
        )
        .await?;
        let writer = WriterRef(writer);
        for append in writes {
            writer.append(from, append).await?;
        }
        let side = SessionSide {
            writer: &writer,
            session_id: &session_id,
            session_file: session_file.clone(),
            cwd: PathBuf::from(&cwd),
            agent_dir: state.config.env.agent_dir.clone(),
            ui: state.ui.clone(),
            ids: from.cause().ids().clone(),
        };
        let extensions = Extensions::spawn(
            &state.config.extensions,
            &state.config.hosted,
            side,
            cell.clone(),
        )
        .await?;
        for problem in &settings.problems {
            state.notify(RuntimeEvent::Notice(format!("settings ignored: {problem}")));
        }
        let tools = state.config.tools.build(&settings);
        // A session of another directory may come with other MCP servers (its project's).
        tools.cwd_changed(Path::new(&cwd)).await;
        // Agent events reach extensions from the agent itself, frontends through the sink.
        let events = EventSink::to_ui(state.ui.clone());
        let leaf_guard = LeafGuard::default();
        let compactor_args = CompactorArgs {
            writer: writer.clone(),
            projection: projection.clone(),
            provider: chosen.provider.clone(),
            model: chosen.model.clone(),
            thinking_level: chosen.thinking_level,
            settings: settings.compaction(),
            retry: settings.retry(),
            extensions: extensions.clone(),
            events: events.clone(),
            leaf_guard: leaf_guard.clone(),
            session_id: session_id.clone(),
        };
        let (compactor, _) =
            Actor::spawn_linked(None, Compactor, compactor_args, cell.clone()).await?;
        let navigator_args = NavigatorArgs {
            writer: writer.clone(),
            provider: chosen.provider.clone(),
            model: chosen.model.clone(),
            branch_reserve_tokens: settings.branch_summary_reserve_tokens(),
            retry: settings.retry(),
            events: events.clone(),
            extensions: extensions.clone(),
            leaf_guard,
            session_id: session_id.clone(),
        };
        let (navigator, _) =
            Actor::spawn_linked(None, TreeNavigator, navigator_args, cell.clone()).await?;
        let agent_args =
            AgentArgs {
                writer: writer.clone(),
                projection: projection.clone(),
                provider: chosen.provider.clone(),
                model: chosen.model.clone(),
                thinking_level: chosen.thinking_level,
                system_prompt: state.config.system_prompt.as_ref().map(|build| {
                    build(Path::new(&cwd), &extensions.registry().prompt_tools(&tools))
                }),
                tools: tools.clone(),
                cwd: PathBuf::from(&cwd),
                events: events.clone(),
                clock: state.config.env.clock.clone(),
                session_id: session_id.clone(),
                settings: settings.clone(),
                extensions: extensions.clone(),
                compactor: compactor.clone(),
            };
        let (agent, _) = Actor::spawn_linked(None, Agent, agent_args, cell.clone()).await?;
        extensions.set_agent(agent.clone());
        // session_start, with the log so extensions can restore their state from it.
        let snapshot = writer.snapshot(from).await?;
        let started = ExtensionEvent::SessionStart {
            reason,
            previous_session_file: previous,
        };
        extensions.tell(from, started, snapshot.entries()).await;
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
            navigator,
            extensions,
            events,
            session_file,
            session_id,
            session_dir,
            cwd,
            tools,
            model: chosen.model,
            thinking_level: chosen.thinking_level,
            failed: false,
        });
        Ok(())
    }

    /// Stops the subtree (the run aborted first); the writer flushes and fsyncs in its
    /// `post_stop`. The log as it was, for a rebuild.
    pub(super) async fn stop_subtree(state: &mut RuntimeState, from: &Origin) -> Option<Snapshot> {
        // A summary of a session going away is moot.
        state.cancel_summaries();
        let sub = state.subtree.take()?;
        let _ = from
            .wait(&sub.agent, "agent", |reply| AgentMsg::Abort { reply })
            .await;
        let snapshot = sub.writer.snapshot(from).await.ok();
        let timeout = Some(CALL_TIMEOUT);
        let _ = sub.agent.stop_and_wait(None, timeout).await;
        let _ = sub.compactor.stop_and_wait(None, timeout).await;
        let _ = sub.navigator.stop_and_wait(None, timeout).await;
        sub.extensions.stop().await;
        let _ = sub.writer.0.stop_and_wait(None, timeout).await;
        let _ = sub.projection.0.stop_and_wait(None, timeout).await;
        sub.events.detach_ui();
        snapshot
    }

    /// Asks the extensions about a cancellable event; the reason of the first cancel.
    pub(super) async fn ask_extensions(
        state: &RuntimeState,
        from: &Origin,
        event: ExtensionEvent,
    ) -> Option<String> {
        let sub = state.subtree.as_ref()?;
        match sub.extensions.consult(from, event).await {
            Verdict::Cancel(reason) => Some(reason),
            _ => None,
        }
    }

    /// Tells the extensions about an event nobody can answer.
    pub(super) async fn tell_extensions(
        state: &RuntimeState,
        from: &Origin,
        event: ExtensionEvent,
    ) {
        if let Some(sub) = &state.subtree {
            sub.extensions.tell(from, event, &[]).await;
        }
    }
}
