//! When the Compactor compacts on its own (pi's `_checkCompaction`, compaction.md §3) and how
//! every compaction is announced (`compaction_start`/`compaction_end`, §8).

use tokio_util::sync::CancellationToken;

use pith_events::{
    AgentEvent, AgentMessage, AssistantMessage, CompactionResult, EntryType, StopReason,
};
use pith_llm::overflow::is_context_overflow;
use pith_store::Leaf;
use pith_store::compaction::{calculate_context_tokens, estimate_context_tokens, should_compact};

use super::{
    Compactor, CompactorArgs, NextStep, OVERFLOW_GAVE_UP, Refusal, TRUNCATION_GAVE_UP, Trigger,
};
use crate::envelope::Origin;
use crate::writer::{Append, Snapshot};

impl Compactor {
    /// [`Self::compact`] between `compaction_start` and `compaction_end` (compaction.md §8).
    pub(super) async fn announced(
        args: &CompactorArgs,
        from: &Origin,
        trigger: Trigger,
        will_retry: bool,
        snapshot: Snapshot,
        focus: Option<String>,
        abort: &CancellationToken,
    ) -> Result<(String, CompactionResult), Refusal> {
        // pi's `_runAutoCompaction` prepares first: with nothing to summarize an automatic
        // compaction is no compaction at all, and announces nothing (compaction.md §4 step 7).
        if trigger != Trigger::Manual && !Self::preparable(args, &snapshot) {
            return Err(Refusal::Nothing(false));
        }
        args.events.emit(AgentEvent::CompactionStart {
            reason: trigger.reason().to_owned(),
        });
        let outcome = Self::compact(args, from, trigger.reason(), snapshot, focus, abort).await;
        let (result, error_message) = match (&outcome, trigger) {
            (Ok((_, result)), _) => (Some(result.clone()), None),
            // pi reports a cancel as aborted, without an error.
            (Err(Refusal::Cancelled), _) => (None, None),
            (Err(e), Trigger::Manual) => (None, Some(format!("Compaction failed: {e}"))),
            // An automatic compaction with nothing to do ends quietly.
            (Err(Refusal::Nothing(_)), _) => (None, None),
            (Err(Refusal::Failed(e)), Trigger::Threshold) => {
                (None, Some(format!("Auto-compaction failed: {e}")))
            }
            (Err(Refusal::Failed(e)), Trigger::Overflow) => {
                (None, Some(format!("Context overflow recovery failed: {e}")))
            }
        };
        args.events.emit(AgentEvent::CompactionEnd {
            reason: trigger.reason().to_owned(),
            will_retry: will_retry && result.is_some(),
            aborted: matches!(outcome, Err(Refusal::Cancelled)),
            result,
            error_message,
        });
        outcome
    }

    /// Whether `snapshot` has something to summarize (`prepareCompaction` is defined).
    fn preparable(args: &CompactorArgs, snapshot: &Snapshot) -> bool {
        let Leaf::At(leaf) = snapshot.leaf() else {
            return false;
        };
        let path = snapshot.tree.path_to(leaf);
        pith_store::compaction::prepare_compaction(&snapshot.tree, &path, &args.settings).is_some()
    }

    /// pi's `_checkCompaction` (compaction.md §3): whether `reply` overflowed the context or
    /// crossed the threshold, and the snapshot to compact, unless a compaction on the branch
    /// is newer than the reply (or, for an error reply, than the usage its estimate starts
    /// from).
    async fn trigger(
        args: &CompactorArgs,
        from: &Origin,
        reply: &AssistantMessage,
        before_prompt: bool,
    ) -> Option<(Trigger, Snapshot)> {
        // After a run an aborted reply never triggers; before a prompt it may (pi's
        // skipAbortedCheck).
        if !args.settings.enabled || (!before_prompt && reply.stop_reason == StopReason::Aborted) {
            return None;
        }
        let window = args.provider.context_window(&args.model.id);
        // A reply from another model says nothing about this one's window.
        let same_model = reply.provider == args.model.provider && reply.model == args.model.id;
        let mut usage_timestamp = None;
        let trigger = if same_model
            && (is_context_overflow(reply, window.unwrap_or(0)) || recoverable_length(args, reply))
        {
            Trigger::Overflow
        } else {
            let window = window?;
            let tokens = if reply.stop_reason == StopReason::Error {
                // No usage in an error: estimate from the last reply that has one.
                let messages = args.projection.context(from).await.ok()?.messages;
                let estimate = estimate_context_tokens(&messages);
                let AgentMessage::Assistant(with_usage) = &messages[estimate.last_usage_index?]
                else {
                    return None;
                };
                usage_timestamp = Some(with_usage.timestamp);
                estimate.tokens
            } else {
                calculate_context_tokens(&reply.usage)
            };
            if !should_compact(tokens, window, &args.settings) {
                return None;
            }
            Trigger::Threshold
        };
        // Only now look at the log: the common turn costs no snapshot.
        let snapshot = Self::snapshot(args, from).await.ok()?;
        let Leaf::At(leaf) = snapshot.leaf() else {
            return None;
        };
        let tree = &snapshot.tree;
        let path: Vec<&pith_store::Entry> = tree
            .path_to(leaf)
            .into_iter()
            .map(|i| &tree.entries()[i])
            .collect();
        let Some(newest) = path
            .iter()
            .rposition(|e| e.kind() == &EntryType::Compaction)
        else {
            return Some((trigger, snapshot));
        };
        // pi asks whether a message is older than the newest compaction by comparing
        // millisecond timestamps (`<=`); pith answers it by position on the branch, which
        // says the same without the same-millisecond collisions a fast run produces. A
        // message is fresh when an entry after the compaction carries it.
        let after_compaction = |t: i64| {
            path[newest + 1..].iter().any(|e| {
                e.is_assistant_message()
                    && matches!(e.decode_message(), Some(Ok(AgentMessage::Assistant(a))) if a.timestamp == t)
            })
        };
        // Usage from before the newest compaction describes a context that is gone.
        if !after_compaction(reply.timestamp)
            || usage_timestamp.is_some_and(|t| !after_compaction(t))
        {
            return None;
        }
        Some((trigger, snapshot))
    }

    /// pi's check at the start of `prompt()` on the last reply in the context
    /// (compaction.md §3 (b)): a session that crossed the threshold while compaction was off,
    /// or was resumed that way, is compacted before the new prompt. Nothing is retried: the
    /// prompt is what comes next. Overflows are left to the run that hits them (pi keeps a
    /// "recovery attempted" flag across prompts for this; pith does not).
    pub(super) async fn before_prompt(
        args: &CompactorArgs,
        from: &Origin,
        abort: &CancellationToken,
    ) {
        let Ok(Some(reply)) = args.projection.last_reply(from).await else {
            return;
        };
        let reply = &reply;
        // An overflowed reply was dealt with after its run (compacted and retried, or given
        // up on); if the next request overflows, that run deals with it.
        if let Some((Trigger::Threshold, snapshot)) = Self::trigger(args, from, reply, true).await {
            let _ =
                Self::announced(args, from, Trigger::Threshold, false, snapshot, None, abort).await;
        }
    }

    pub(super) async fn after_run(
        args: &CompactorArgs,
        from: &Origin,
        reply: &AssistantMessage,
        retried: bool,
        attempt: &[String],
        abort: &CancellationToken,
    ) -> NextStep {
        let Some((trigger, mut snapshot)) = Self::trigger(args, from, reply, false).await else {
            return NextStep::Idle;
        };
        // A completed reply that overflowed is compacted but cannot be continued from.
        let will_retry = trigger == Trigger::Overflow && reply.stop_reason != StopReason::Stop;
        if will_retry && retried {
            let window = args.provider.context_window(&args.model.id).unwrap_or(0);
            let gave_up = if is_context_overflow(reply, window) {
                OVERFLOW_GAVE_UP
            } else {
                TRUNCATION_GAVE_UP
            };
            args.events.emit(AgentEvent::CompactionEnd {
                reason: trigger.reason().to_owned(),
                result: None,
                aborted: false,
                will_retry: false,
                error_message: Some(gave_up.to_owned()),
            });
            return NextStep::Idle;
        }
        if will_retry {
            // pi ≥ 0.87 hides the overflowed attempt for good (it stays in the file and the
            // tree), then compacts what is left; with nothing to summarize the run settles.
            for target_id in attempt {
                let edit = Append::ContextEdit {
                    target_id: target_id.clone(),
                    replacement: None,
                };
                if let Err(e) = args.writer.append(from, edit).await {
                    tracing::error!(
                        user_notified = true,
                        "could not hide the overflowed reply: {e}"
                    );
                }
            }
            if !attempt.is_empty() {
                match Self::snapshot(args, from).await {
                    Ok(s) => snapshot = s,
                    Err(_) => return NextStep::Idle,
                }
            }
        }
        match Self::announced(args, from, trigger, will_retry, snapshot, None, abort).await {
            Ok(_) if will_retry => NextStep::Retry,
            _ => NextStep::Idle,
        }
    }
}

/// pi's `isRecoverableLength` (compaction.md §3, pi ≥ 0.87): the reply stopped at `length`
/// with fewer output tokens than the model may write, so a smaller context can let it finish.
fn recoverable_length(args: &CompactorArgs, reply: &AssistantMessage) -> bool {
    reply.stop_reason == StopReason::Length
        && args
            .provider
            .max_tokens(&args.model.id)
            .is_some_and(|max| reply.usage.output < max)
}
