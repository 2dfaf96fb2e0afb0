//! Spawning and stopping one session's subtree, and asking its extensions.

use std::path::{Path, PathBuf};

use ractor::{Actor, ActorCell, ActorRef};

use pith_events::{ExtensionEvent, StartReason};
use pith_store::Session;

use super::*;

impl Runtime {
    pub(super) async fn spawn_subtree(
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
        // cwd-bound: read again for every session this runtime starts.
        let settings =
            crate::settings::Settings::load(&state.config.env.agent_dir, Path::new(&cwd));
        for problem in &settings.problems {
            state.notify(RuntimeEvent::Notice(format!("settings ignored: {problem}")));
        }
        // Agent events reach extensions from the agent itself, frontends through the sink.
        let events = EventSink::to_ui(state.ui.clone());
        let compactor_args = crate::compactor::CompactorArgs {
            writer: writer.clone(),
            projection: projection.clone(),
            provider: state.config.provider.clone(),
            model: state.config.model.clone(),
            thinking_level: state.config.thinking_level.clone(),
            settings: settings.compaction(),
            branch_reserve_tokens: settings.branch_summary_reserve_tokens(),
            extensions: extensions.clone(),
            events: events.clone(),
        };
        let (compactor, _) = Actor::spawn_linked(None, Compactor, compactor_args, cell.clone())
            .await
            .map_err(err)?;
        let agent_args = AgentArgs {
            writer: writer.clone(),
            projection: projection.clone(),
            provider: state.config.provider.clone(),
            model: state.config.model.clone(),
            thinking_level: state.config.thinking_level.clone(),
            tools: state.config.tools.clone(),
            cwd: PathBuf::from(&cwd),
            system_prompt: state
                .config
                .system_prompt
                .as_ref()
                .map(|build| build(Path::new(&cwd), &state.config.tools.specs())),
            events: events.clone(),
            clock: state.config.env.clock.clone(),
            session_id: session_id.clone(),
            settings: settings.clone(),
            extensions: subscriptions,
            compactor: compactor.clone(),
        };
        let (agent, _) = Actor::spawn_linked(None, Agent, agent_args, cell.clone())
            .await
            .map_err(err)?;
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
            events,
            session_file,
            session_id: session_id.clone(),
            session_dir,
            cwd,
            failed: false,
        });
        Ok(())
    }

    /// Stops the subtree; the writer flushes and fsyncs in its `post_stop`.
    pub(super) async fn stop_subtree(state: &mut RuntimeState) -> Option<Snapshot> {
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
        sub.events.detach_ui();
        snapshot
    }

    /// Asks every extension about a cancellable event; the first cancel wins.
    pub(super) async fn ask_extensions(
        state: &RuntimeState,
        event: ExtensionEvent,
    ) -> Option<String> {
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

    pub(super) async fn tell_extensions(state: &RuntimeState, event: ExtensionEvent) {
        let Some(sub) = state.subtree.as_ref() else {
            return;
        };
        let ids = state.ids();
        for ext in &sub.extensions {
            let ev = Box::new(event.clone());
            let _ = call(ext, |r| ExtensionMsg::Event(ids, ev, Vec::new(), r)).await;
        }
    }

    pub(super) fn session_dir_for(
        state: &RuntimeState,
        cwd: &str,
    ) -> Result<Option<PathBuf>, String> {
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
}
