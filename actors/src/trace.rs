//! Message-flow tracing: every actor message is handled inside a span that names the actor,
//! the message kind, the session and the ids that link a prompt to its turns and appends.

/// Ids that travel with a message: `correlation` names the user action (a prompt, a switch)
/// everything else in its flow belongs to; `causation` names the message that caused this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TraceIds {
    /// The originating action.
    pub correlation: u64,
    /// The direct cause.
    pub causation: u64,
    /// The actor that sent the message (`Runtime`, `Agent`, …), for the message-flow picture.
    pub from: &'static str,
}

impl TraceIds {
    /// Ids for a new action started by `from`.
    pub fn root(id: u64, from: &'static str) -> TraceIds {
        TraceIds {
            correlation: id,
            causation: id,
            from,
        }
    }

    /// The same flow, sent on by another actor.
    pub fn sent_by(self, from: &'static str) -> TraceIds {
        TraceIds { from, ..self }
    }
}

/// A span for handling one message: `actor` (receiver), `from` (sender), `msg` (kind),
/// `session`, `entry`, `correlation` and `causation` fields, which the Chrome-trace and
/// Mermaid exports read.
#[macro_export]
macro_rules! message_span {
    ($actor:expr, $kind:expr, $session:expr, $ids:expr) => {
        tracing::info_span!(
            "message",
            actor = $actor,
            msg = $kind,
            session = %$session,
            entry = tracing::field::Empty,
            from = $ids.from,
            correlation = $ids.correlation,
            causation = $ids.causation,
        )
    };
}
