//! Message-flow tracing: who sent a message, which user action it belongs to, and which
//! message caused it. Every actor handles each message inside [`Trace::span`], so a `--trace`
//! file (and `pith trace mermaid`) shows the whole flow, actor by actor.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// An actor (or the frontend) by name, as traces show it: `Runtime`, `SessionWriter`,
/// `Projection`, `Agent`, `Compactor`, `TreeNavigator`, `Extension:<name>`, and `Frontend`
/// for calls from the CLI through the `RuntimeHandle`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActorName {
    /// A frontend (the CLI) calling the runtime.
    Frontend,
    /// The root supervisor.
    Runtime,
    /// The owner of the session file.
    SessionWriter,
    /// The context kept current.
    Projection,
    /// pi's agent loop.
    Agent,
    /// Compaction decisions.
    Compactor,
    /// `/tree`.
    TreeNavigator,
    /// One extension's actor, by the extension's name.
    Extension(Arc<str>),
}

impl fmt::Display for ActorName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ActorName::Frontend => f.write_str("Frontend"),
            ActorName::Runtime => f.write_str("Runtime"),
            ActorName::SessionWriter => f.write_str("SessionWriter"),
            ActorName::Projection => f.write_str("Projection"),
            ActorName::Agent => f.write_str("Agent"),
            ActorName::Compactor => f.write_str("Compactor"),
            ActorName::TreeNavigator => f.write_str("TreeNavigator"),
            ActorName::Extension(name) => write!(f, "Extension:{name}"),
        }
    }
}

/// Where message ids come from: one counter per runtime, carried inside every [`Trace`] so
/// that any actor can number the messages it sends without holding the counter itself.
#[derive(Debug, Clone, Default)]
pub struct MessageIds(Arc<AtomicU64>);

impl MessageIds {
    fn next(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed) + 1
    }
}

/// The trace of one message: its own id, the user action it belongs to (`correlation`: the id
/// of the message that started the flow, e.g. a prompt), the message that caused it
/// (`causation`; 0 when a frontend or the runtime itself started the flow) and its sender.
#[derive(Debug, Clone)]
pub struct Trace {
    /// This message.
    pub id: u64,
    /// The first message of the flow.
    pub correlation: u64,
    /// The message whose handling sent this one; 0 for the first.
    pub causation: u64,
    /// Who sent it.
    pub from: ActorName,
    ids: MessageIds,
}

impl Trace {
    /// The first message of a new flow, sent by `from`.
    pub fn root(ids: &MessageIds, from: ActorName) -> Trace {
        let id = ids.next();
        Trace {
            id,
            correlation: id,
            causation: 0,
            from,
            ids: ids.clone(),
        }
    }

    /// A message `from` sends while handling this one: same flow, caused by this message.
    pub fn caused(&self, from: ActorName) -> Trace {
        Trace {
            id: self.ids.next(),
            correlation: self.correlation,
            causation: self.id,
            from,
            ids: self.ids.clone(),
        }
    }

    /// The counter this flow numbers its messages with.
    pub fn ids(&self) -> &MessageIds {
        &self.ids
    }

    /// The span `actor` handles this message in: `actor`, `from`, `msg` (the message kind),
    /// `session`, `message`, `correlation`, `causation`, and an `entry` field the writer and
    /// the projection fill with the entry's id. The Chrome-trace and Mermaid exports read
    /// these fields.
    pub fn span(&self, actor: &ActorName, msg: &'static str, session: &str) -> tracing::Span {
        tracing::info_span!(
            "message",
            actor = %actor,
            msg,
            session,
            entry = tracing::field::Empty,
            from = %self.from,
            message = self.id,
            correlation = self.correlation,
            causation = self.causation,
        )
    }
}
