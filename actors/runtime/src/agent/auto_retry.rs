//! pi's auto-retry wait at `agent_end` (spec: agent-and-events.md §4).

use std::sync::atomic::Ordering;

use pith_events::{AgentEvent, AssistantMessage};

use super::Run;

impl Run {
    /// Whether [`Run::retry_later`] will start a retry wait for `reply`: pi's `willRetry` of
    /// `agent_end` (pi ≥ 0.75.4, §2): retry enabled, a retryable error, attempts left, no
    /// abort.
    pub(super) fn will_retry(&self, reply: &AssistantMessage) -> bool {
        let settings = self.args.settings.retry();
        let window = self
            .args
            .provider
            .context_window(&self.args.model.id)
            .unwrap_or(0);
        settings.enabled
            && !self.abort.is_cancelled()
            && pith_llm::retry::is_retryable(reply, window)
            && self.retry_attempt.load(Ordering::SeqCst) < settings.max_retries
    }

    /// pi's retry check at `agent_end` (agent-and-events.md §4): for a transient error,
    /// `auto_retry_start`, then the wait (`true` when it ran out and the context should be
    /// sent again); past `retry.maxRetries` or when the user aborts the wait,
    /// `auto_retry_end` and `false`, and the compaction check follows as in pi.
    pub(super) async fn retry_later(&self, reply: &AssistantMessage) -> bool {
        let settings = self.args.settings.retry();
        let window = self
            .args
            .provider
            .context_window(&self.args.model.id)
            .unwrap_or(0);
        if !settings.enabled || !pith_llm::retry::is_retryable(reply, window) {
            return false;
        }
        let attempt = self.retry_attempt.fetch_add(1, Ordering::SeqCst) + 1;
        if attempt > settings.max_retries {
            self.retry_attempt.store(0, Ordering::SeqCst);
            self.emit(AgentEvent::AutoRetryEnd {
                success: false,
                attempt: attempt - 1,
                final_error: reply.error_message.clone(),
            })
            .await;
            return false;
        }
        let delay_ms = settings.delay_ms(attempt);
        self.emit(AgentEvent::AutoRetryStart {
            attempt,
            max_attempts: settings.max_retries,
            delay_ms,
            error_message: reply
                .error_message
                .clone()
                .unwrap_or_else(|| "Unknown error".into()),
        })
        .await;
        // pi ≥ 0.87: the failed attempt stays in the file, hidden from every later request;
        // the retry's reply is a child of the edit.
        self.hide_attempt().await;
        let aborted = tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_millis(delay_ms)) => false,
            () = self.abort.cancelled() => true,
        };
        if aborted {
            self.retry_attempt.store(0, Ordering::SeqCst);
            self.emit(AgentEvent::AutoRetryEnd {
                success: false,
                attempt,
                final_error: Some("Retry cancelled".into()),
            })
            .await;
            return false;
        }
        true
    }
}
