//! A session's extensions as one value: every fan-out to them (agent events, lifecycle
//! events, `session_before_*` questions, slash commands) goes through [`Extensions`], in load
//! order, each awaited, and only to the extensions that subscribed to the event (so events
//! nobody subscribed to cost nothing).

use std::sync::Arc;

use ractor::{Actor, ActorCell, ActorId, ActorRef, SpawnErr};

use pith_events::{AgentEvent, ExtensionEvent};
use pith_store::Entry;

use crate::envelope::{Envelope, Origin};
use crate::extension::{
    Extension, ExtensionActor, ExtensionArgs, ExtensionMsg, SlashCommand, Verdict,
};
use crate::trace::ActorName;
use crate::writer::WriterRef;

/// Builds a fresh extension for every session subtree.
pub type ExtensionFactory = Arc<dyn Fn() -> Box<dyn Extension> + Send + Sync>;

struct Member {
    actor: ActorRef<Envelope<ExtensionMsg>>,
    name: ActorName,
    subscriptions: Vec<String>,
}

/// The extension actors of one session, in load order. Cloning shares them.
#[derive(Clone, Default)]
pub struct Extensions {
    members: Arc<[Member]>,
}

impl Extensions {
    /// Spawns one actor per factory, linked to `supervisor`, in load order.
    ///
    /// Errors: an actor that cannot be spawned.
    pub async fn spawn(
        factories: &[ExtensionFactory],
        writer: &WriterRef,
        session_id: &str,
        supervisor: ActorCell,
    ) -> Result<Extensions, SpawnErr> {
        let mut members = Vec::with_capacity(factories.len());
        for factory in factories {
            let extension = factory();
            let name = ActorName::Extension(Arc::from(extension.name()));
            let subscriptions = extension
                .subscriptions()
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
            let args = ExtensionArgs {
                extension,
                writer: writer.clone(),
                session_id: session_id.to_owned(),
            };
            let (actor, _) =
                Actor::spawn_linked(None, ExtensionActor, args, supervisor.clone()).await?;
            members.push(Member {
                actor,
                name,
                subscriptions,
            });
        }
        Ok(Extensions {
            members: members.into(),
        })
    }

    /// The name of the extension actor with this id, if it is one of them.
    pub fn name_of(&self, id: ActorId) -> Option<&ActorName> {
        self.members
            .iter()
            .find(|m| m.actor.get_id() == id)
            .map(|m| &m.name)
    }

    /// Their actor ids.
    pub fn ids(&self) -> impl Iterator<Item = ActorId> + '_ {
        self.members.iter().map(|m| m.actor.get_id())
    }

    /// Stops each and waits for it.
    pub async fn stop(&self) {
        for m in self.members.iter() {
            let _ = m
                .actor
                .stop_and_wait(None, Some(crate::envelope::CALL_TIMEOUT))
                .await;
        }
    }

    fn subscribed<'a>(&'a self, event: &'a str) -> impl Iterator<Item = &'a Member> + 'a {
        self.members
            .iter()
            .filter(move |m| m.subscriptions.iter().any(|s| s == event))
    }

    /// Tells the subscribed extensions about an event nobody can answer, `entries` being the
    /// log for `session_start` (empty otherwise).
    pub async fn tell(&self, from: &Origin, event: ExtensionEvent, entries: &[Entry]) {
        for m in self.subscribed(event.name()) {
            let event = Box::new(event.clone());
            let entries = entries.to_vec();
            let _ = from
                .call(&m.actor, "extension", |reply| ExtensionMsg::Event {
                    event,
                    entries,
                    reply,
                })
                .await;
        }
    }

    /// An agent event, to the extensions that subscribed to it (before frontends get it).
    /// Nothing is built for an event nobody subscribed to: this runs for every streamed delta.
    pub async fn agent_event(&self, from: &Origin, event: &AgentEvent) {
        for m in self.subscribed(event.name()) {
            let event = Box::new(ExtensionEvent::Agent(Box::new(event.clone())));
            let _ = from
                .call(&m.actor, "extension", |reply| ExtensionMsg::Event {
                    event,
                    entries: Vec::new(),
                    reply,
                })
                .await;
        }
    }

    /// Asks about a `session_before_*` event: in load order, each answer other than Continue
    /// replaces the one before, and a cancel wins at once (compaction.md §10). An extension
    /// that does not answer does not cancel (pi reports it and goes on).
    pub async fn consult(&self, from: &Origin, event: ExtensionEvent) -> Verdict {
        let mut verdict = Verdict::Continue;
        for m in self.subscribed(event.name()) {
            let asked = Box::new(event.clone());
            let answer = from
                .call(&m.actor, "extension", |reply| ExtensionMsg::Event {
                    event: asked,
                    entries: Vec::new(),
                    reply,
                })
                .await;
            match answer {
                Ok(v @ Verdict::Cancel(_)) => return v,
                Ok(Verdict::Continue) => {}
                Ok(v) => verdict = v,
                Err(e) => tracing::warn!("{} did not answer {}: {e}", m.name, event.name()),
            }
        }
        verdict
    }

    /// Every extension's slash commands, in load order.
    pub async fn commands(&self, from: &Origin) -> Vec<SlashCommand> {
        let mut all = Vec::new();
        for m in self.members.iter() {
            if let Ok(commands) = from
                .call(&m.actor, "extension", |reply| ExtensionMsg::Commands {
                    reply,
                })
                .await
            {
                all.extend(commands);
            }
        }
        all
    }

    /// Runs slash command `name` on the first extension that registers it; `None` when none
    /// does (or it did not answer).
    pub async fn command(&self, from: &Origin, name: &str, args: &str) -> Option<String> {
        for m in self.members.iter() {
            let commands = from
                .call(&m.actor, "extension", |reply| ExtensionMsg::Commands {
                    reply,
                })
                .await
                .unwrap_or_default();
            if commands.iter().any(|c| c.name == name) {
                let (name, args) = (name.to_owned(), args.to_owned());
                return from
                    .call(&m.actor, "extension", |reply| ExtensionMsg::Command {
                        name,
                        args,
                        reply,
                    })
                    .await
                    .ok();
            }
        }
        None
    }
}
