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
}

impl TraceIds {
    /// Ids for a new action.
    pub fn root(id: u64) -> TraceIds {
        TraceIds {
            correlation: id,
            causation: id,
        }
    }

    /// Ids for a message caused by message `cause` in the same flow.
    pub fn caused_by(self, cause: u64) -> TraceIds {
        TraceIds {
            correlation: self.correlation,
            causation: cause,
        }
    }
}

/// A span for handling one message: `actor`, `msg` (kind), `session`, `entry`, `correlation`
/// and `causation` fields, which the Chrome-trace and Mermaid exports read.
#[macro_export]
macro_rules! message_span {
    ($actor:expr, $kind:expr, $session:expr, $ids:expr) => {
        tracing::info_span!(
            "message",
            actor = $actor,
            msg = $kind,
            session = %$session,
            entry = tracing::field::Empty,
            correlation = $ids.correlation,
            causation = $ids.causation,
        )
    };
}
