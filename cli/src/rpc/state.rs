//! What the rpc mode learns from the event stream about the session, for `get_state` and
//! `abort_retry` (spec: agent-and-events.md §7, §9).

use pith_events::AgentEvent;

/// State the runtime has no call for, kept from the events the client is sent anyway.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tracked {
    /// A run is on: from an accepted prompt or `agent_start` to `agent_end` (pi's
    /// `isStreaming`, which ends with the run's last event as far as a client can tell).
    pub streaming: bool,
    /// Between `compaction_start` and `compaction_end` (pi's `isCompacting`).
    pub compacting: bool,
    /// Queued steering and follow-up texts, from the last `queue_update`
    /// (pi's `pendingMessageCount`).
    pub pending: usize,
    /// Waiting before a retry: from `auto_retry_start` until the retry starts or the chain
    /// ends. Only then does `abort_retry` have something to cancel.
    pub retry_waiting: bool,
}

impl Tracked {
    /// Takes in one event of the current session.
    pub fn observe(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::CompactionStart { .. } => self.compacting = true,
            AgentEvent::CompactionEnd { .. } => self.compacting = false,
            AgentEvent::QueueUpdate {
                steering,
                follow_up,
            } => self.pending = steering.len() + follow_up.len(),
            AgentEvent::AutoRetryStart { .. } => self.retry_waiting = true,
            AgentEvent::AgentStart => {
                self.streaming = true;
                self.retry_waiting = false;
            }
            AgentEvent::AgentEnd { .. } => self.streaming = false,
            AgentEvent::AutoRetryEnd { .. } => self.retry_waiting = false,
            AgentEvent::TurnStart { .. }
            | AgentEvent::MessageStart { .. }
            | AgentEvent::MessageUpdate { .. }
            | AgentEvent::MessageEnd { .. }
            | AgentEvent::ToolExecutionStart { .. }
            | AgentEvent::ToolExecutionUpdate { .. }
            | AgentEvent::ToolExecutionEnd { .. }
            | AgentEvent::TurnEnd { .. }
            | AgentEvent::SessionInfoChanged { .. }
            | AgentEvent::ThinkingLevelChanged { .. }
            | AgentEvent::AgentSettled { .. }
            | AgentEvent::EntryAppended { .. }
            | AgentEvent::BashExecutionUpdate { .. }
            | AgentEvent::SummarizationRetryScheduled { .. }
            | AgentEvent::SummarizationRetryAttemptStart { .. }
            | AgentEvent::SummarizationRetryFinished
            | AgentEvent::ExtensionError { .. } => {}
        }
    }

    /// A new session subtree started: its agent has no queue, run or compaction yet.
    pub fn reset(&mut self) {
        *self = Tracked::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_move_the_flags() {
        let mut t = Tracked::default();
        t.observe(&AgentEvent::QueueUpdate {
            steering: vec!["a".into()],
            follow_up: vec!["b".into(), "c".into()],
        });
        t.observe(&AgentEvent::CompactionStart {
            reason: "manual".into(),
        });
        t.observe(&AgentEvent::AutoRetryStart {
            attempt: 1,
            max_attempts: 3,
            delay_ms: 2000,
            error_message: "overloaded".into(),
        });
        assert_eq!(
            t,
            Tracked {
                streaming: false,
                compacting: true,
                pending: 3,
                retry_waiting: true
            }
        );
        t.observe(&AgentEvent::AgentStart);
        assert!(t.streaming && !t.retry_waiting);
        t.observe(&AgentEvent::AgentEnd {
            messages: Vec::new(),
            will_retry: false,
        });
        assert!(!t.streaming);
        t.reset();
        assert_eq!(t, Tracked::default());
    }
}
