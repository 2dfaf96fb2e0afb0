//! Auto-retry of failed replies (spec: agent-and-events.md §4): which errors are retried,
//! and after how long.

use std::sync::LazyLock;

use pith_events::{AssistantMessage, StopReason};
use regex::Regex;

use crate::overflow::is_context_overflow;

/// pi's pattern of transient errors (`_isRetryableError`), case-insensitive.
static RETRYABLE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|server.?error|internal.?error|network.?error|connection.?error|connection.?refused|connection.?lost|websocket.?closed|websocket.?error|other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up|ended without|http2 request did not get a response|timed? out|timeout|terminated|retry delay",
    )
    .ok()
});

/// `retry.*` settings with pi's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetrySettings {
    /// `retry.enabled` (default true).
    pub enabled: bool,
    /// `retry.maxRetries` (default 3): attempts after the first failure.
    pub max_retries: u32,
    /// `retry.baseDelayMs` (default 2000): the first wait; each next one doubles.
    pub base_delay_ms: u64,
}

impl Default for RetrySettings {
    fn default() -> Self {
        Self {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 2000,
        }
    }
}

impl RetrySettings {
    /// The wait before `attempt` (1-based): `baseDelayMs × 2^(attempt−1)` ms.
    pub fn delay_ms(&self, attempt: u32) -> u64 {
        self.base_delay_ms.saturating_mul(
            1u64.checked_shl(attempt.saturating_sub(1))
                .unwrap_or(u64::MAX),
        )
    }
}

/// `retry.provider.*` settings with pi's defaults: retries of one request inside the provider,
/// before the agent's own retry sees a failure (pi-ai's `retryProviderRequest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderRetrySettings {
    /// `retry.provider.maxRetries` (default 0 since pi 0.76: the SDKs no longer retry on
    /// their own).
    pub max_retries: u32,
    /// `retry.provider.maxRetryDelayMs` (default 60000): a longer `retry-after` fails the
    /// request at once; 0 means no limit.
    pub max_retry_delay_ms: u64,
    /// `retry.provider.timeoutMs`: the longest wait for a response head, in ms (default: the
    /// idle timeout; 0 means no limit).
    pub timeout_ms: Option<u64>,
    /// `httpIdleTimeoutMs` (default 300000): the longest silence of a streaming body (and the
    /// default of `timeout_ms`), in ms; 0 (or `"disabled"` in settings.json) means no limit.
    pub http_idle_timeout_ms: u64,
}

/// pi 1.6.0's default `httpIdleTimeoutMs`: 5 minutes.
pub const HTTP_IDLE_TIMEOUT_MS: u64 = 300_000;

impl Default for ProviderRetrySettings {
    fn default() -> Self {
        Self {
            max_retries: 0,
            max_retry_delay_ms: 60_000,
            timeout_ms: None,
            http_idle_timeout_ms: HTTP_IDLE_TIMEOUT_MS,
        }
    }
}

/// Whether `reply` failed in a way worth retrying: an `error` stop with a message that is not
/// a context overflow (compaction handles those) and matches pi's transient-error pattern.
/// `context_window` is the current model's (0 when unknown), as pi passes it.
pub fn is_retryable(reply: &AssistantMessage, context_window: u64) -> bool {
    if reply.stop_reason != StopReason::Error {
        return false;
    }
    let Some(err) = reply.error_message.as_deref().filter(|e| !e.is_empty()) else {
        return false;
    };
    if is_context_overflow(reply, context_window) {
        return false;
    }
    RETRYABLE.as_ref().is_some_and(|r| r.is_match(err))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> AssistantMessage {
        AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some(text.to_owned()),
            ..AssistantMessage::new("anthropic-messages", "anthropic", "m", Vec::new(), 0)
        }
    }

    #[test]
    fn retries_transient_errors_only() {
        for text in [
            "529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}",
            "429 Too Many Requests",
            "Rate limit reached",
            "502 Bad Gateway",
            "Connection error.",
            "fetch failed",
            "request timed out",
            "terminated",
            "stream ended without a message_stop",
        ] {
            assert!(is_retryable(&error(text), 200_000), "{text}");
        }
        for text in [
            "400 invalid_request_error: prompt is too long: 250000 tokens > 200000 maximum",
            "401 authentication_error: invalid x-api-key",
            "Request was aborted",
            "",
        ] {
            assert!(!is_retryable(&error(text), 200_000), "{text}");
        }
        let mut aborted = error("429");
        aborted.stop_reason = StopReason::Aborted;
        assert!(!is_retryable(&aborted, 200_000));
    }

    #[test]
    fn delays_double_from_the_base() {
        let s = RetrySettings::default();
        assert_eq!(
            [s.delay_ms(1), s.delay_ms(2), s.delay_ms(3)],
            [2000, 4000, 8000]
        );
        assert_eq!(s.delay_ms(200), u64::MAX);
    }
}
