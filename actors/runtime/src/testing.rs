//! Unit-test support: one session's SessionWriter, Projection, Compactor and Agent spawned
//! on their own (no Runtime, no extensions), so a test can send each actor its messages.

use std::path::Path;
use std::sync::Arc;

use ractor::{Actor, ActorRef};
use tokio::sync::mpsc::UnboundedReceiver;

use pith_events::{AgentEvent, ModelRef, ThinkingLevel};
use pith_llm::faux::{Faux, ScriptedReply};
use pith_store::env::{SequentialIds, SteppingClock};
use pith_store::{Session, SessionEnv};
use pith_tools::tool::Toolset;

use crate::agent::{Agent, AgentArgs, AgentMsg};
use crate::compactor::{Compactor, CompactorArgs, CompactorMsg};
use crate::envelope::{Envelope, Origin};
use crate::event::EventSink;
use crate::extension_host::Extensions;
use crate::projection::{Projection, ProjectionMsg, ProjectionRef};
use crate::settings::Settings;
use crate::trace::{ActorName, MessageIds, Trace};
use crate::tree_navigator::LeafGuard;
use crate::writer::{SessionWriter, WriterArgs, WriterRef};

/// The actors of one in-memory session in `/project` on the faux model.
pub struct Parts {
    pub writer: WriterRef,
    pub compactor: ActorRef<Envelope<CompactorMsg>>,
    pub agent: ActorRef<Envelope<AgentMsg>>,
    /// Every event the agent and the Compactor emit, in order.
    pub events: UnboundedReceiver<AgentEvent>,
    ids: MessageIds,
}

impl Parts {
    /// Spawns the actors on `replies`, with `settings_json` as the agent dir's settings.
    pub async fn spawn(tmp: &Path, replies: &str, settings_json: &str) -> Parts {
        let env = SessionEnv {
            agent_dir: tmp.join("agent"),
            clock: Arc::new(SteppingClock::new(1_764_000_000_000, 1000)),
            ids: Arc::new(SequentialIds::default()),
        };
        std::fs::create_dir_all(&env.agent_dir).expect("agent dir");
        std::fs::write(env.agent_dir.join("settings.json"), settings_json).expect("settings");
        let settings = Settings::load(&env.agent_dir, Path::new("/project"));
        let script: Vec<ScriptedReply> = serde_json::from_str(replies).expect("script");
        let provider = Arc::new(Faux::new(script, env.clock.clone()));
        let model = ModelRef::new("faux", "faux-1");
        let session = Session::in_memory("/project", &env);
        let (projection, _) = Actor::spawn(None, Projection, "test".to_owned())
            .await
            .expect("projection");
        let ids = MessageIds::default();
        let from = Origin::new(ActorName::Runtime, &Trace::root(&ids, ActorName::Runtime));
        from.cast(
            &projection,
            ProjectionMsg::Load {
                tree: session.shared_tree(),
            },
        );
        let (writer, _) = Actor::spawn(
            None,
            SessionWriter,
            WriterArgs {
                session,
                projection: projection.clone(),
                ui: crate::event::UiSink::default(),
            },
        )
        .await
        .expect("writer");
        let (writer, projection) = (WriterRef(writer), ProjectionRef(projection));
        let sink = EventSink::default();
        let events = sink.subscribe();
        let (compactor, _) = Actor::spawn(
            None,
            Compactor,
            CompactorArgs {
                writer: writer.clone(),
                projection: projection.clone(),
                provider: provider.clone(),
                model: model.clone(),
                thinking_level: ThinkingLevel::Off,
                settings: settings.compaction(),
                retry: settings.retry(),
                extensions: Extensions::default(),
                events: sink.clone(),
                leaf_guard: LeafGuard::default(),
                session_id: "test".into(),
            },
        )
        .await
        .expect("compactor");
        let (agent, _) = Actor::spawn(
            None,
            Agent,
            AgentArgs {
                writer: writer.clone(),
                projection: projection.clone(),
                provider,
                model,
                thinking_level: ThinkingLevel::Off,
                tools: Toolset::none(),
                cwd: "/project".into(),
                system_prompt: None,
                events: sink,
                clock: env.clock.clone(),
                session_id: "test".into(),
                settings,
                extensions: Extensions::default(),
                compactor: compactor.clone(),
            },
        )
        .await
        .expect("agent");
        Parts {
            writer,
            compactor,
            agent,
            events,
            ids,
        }
    }

    /// A test's message: the first of a new flow, sent as the Runtime would.
    pub fn from(&self) -> Origin {
        Origin::new(
            ActorName::Runtime,
            &Trace::root(&self.ids, ActorName::Runtime),
        )
    }

    /// The `type` of every event emitted so far.
    pub fn event_names(&mut self) -> Vec<&'static str> {
        let mut names = Vec::new();
        while let Ok(event) = self.events.try_recv() {
            names.push(event.name());
        }
        names
    }

    /// The kinds of the entries in the log (`message` entries by role).
    pub async fn log(&self) -> Vec<String> {
        let snapshot = self.writer.snapshot(&self.from()).await.expect("snapshot");
        snapshot
            .entries()
            .iter()
            .map(|e| match e.decode_message() {
                Some(Ok(m)) => m.role().to_owned(),
                _ => e.kind().as_str().to_owned(),
            })
            .collect()
    }
}
