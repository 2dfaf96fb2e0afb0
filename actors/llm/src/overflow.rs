//! Context overflow: whether a reply failed because the request did not fit the model's
//! context window (pi-ai `isContextOverflow`, spec: compaction.md §3).
//!
//! Providers say so in their own words; the patterns are pi-ai's, so a session that pi would
//! recover by compacting, pith recovers too.

use std::sync::LazyLock;

use pith_events::{AssistantMessage, StopReason};
use regex::RegexSet;

/// Error texts that mean "too long" (pi-ai's `OVERFLOW_PATTERNS`, case-insensitive).
static OVERFLOW: LazyLock<RegexSet> = LazyLock::new(|| {
    regex_set(&[
        r"prompt is too long",
        r"request_too_large",
        r"input is too long for requested model",
        r"exceeds the context window",
        r"input token count.*exceeds the maximum",
        r"maximum prompt length is \d+",
        r"reduce the length of the messages",
        r"maximum context length is \d+ tokens",
        r"exceeds the limit of \d+",
        r"exceeds the available context size",
        r"greater than the context length",
        r"context window exceeds limit",
        r"exceeded model token limit",
        r"too large for model with \d+ maximum context length",
        r"model_context_window_exceeded",
        r"prompt too long; exceeded (?:max )?context length",
        r"context[_ ]length[_ ]exceeded",
        r"too many tokens",
        r"token limit exceeded",
        r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)",
    ])
});

/// Error texts that look alike but are throttling (pi-ai's `NON_OVERFLOW_PATTERNS`).
static NOT_OVERFLOW: LazyLock<RegexSet> = LazyLock::new(|| {
    regex_set(&[
        r"^(Throttling error|Service unavailable):",
        r"rate limit",
        r"too many requests",
    ])
});

fn regex_set(patterns: &[&str]) -> RegexSet {
    let patterns = patterns.iter().map(|p| format!("(?i){p}"));
    // The patterns are constants checked by the tests below; an empty set would only make
    // overflow go unnoticed, never crash.
    RegexSet::new(patterns).unwrap_or_else(|_| RegexSet::empty())
}

/// Whether `reply` is a context overflow for a model with `context_window` tokens (0 when
/// unknown): an error whose message names an overflow and no throttling; or a `stop` reply
/// whose input (`input + cacheRead`) exceeds the window; or a `length` reply with no output
/// whose input fills at least 99% of it.
pub fn is_context_overflow(reply: &AssistantMessage, context_window: u64) -> bool {
    if reply.stop_reason == StopReason::Error
        && let Some(message) = reply.error_message.as_deref()
        && !NOT_OVERFLOW.is_match(message)
        && OVERFLOW.is_match(message)
    {
        return true;
    }
    let input = reply.usage.input + reply.usage.cache_read;
    match reply.stop_reason {
        StopReason::Stop if context_window > 0 => input > context_window,
        StopReason::Length if context_window > 0 && reply.usage.output == 0 => {
            input as f64 >= context_window as f64 * 0.99
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(stop: StopReason, error: Option<&str>, input: u64, output: u64) -> AssistantMessage {
        let mut a = AssistantMessage::new("faux", "faux", "faux-1", Vec::new(), 1);
        a.stop_reason = stop;
        a.error_message = error.map(str::to_owned);
        a.usage.input = input;
        a.usage.output = output;
        a
    }

    #[test]
    fn recognises_each_providers_overflow_and_not_throttling() {
        let overflow = [
            "prompt is too long: 213462 tokens > 200000 maximum",
            "400 {\"type\":\"error\",\"error\":{\"type\":\"request_too_large\"}}",
            "Your input exceeds the context window of this model",
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)",
            "This model's maximum context length is 128000 tokens. However, you requested 130000",
            "413 status code (no body)",
            "400 (no body)",
            "Context_Length_Exceeded",
            "prompt too long; exceeded max context length by 12 tokens",
        ];
        for text in overflow {
            assert!(
                is_context_overflow(&reply(StopReason::Error, Some(text), 0, 0), 0),
                "{text}"
            );
        }
        let not = [
            "Throttling error: too many tokens per minute",
            "rate limit reached: too many tokens",
            "429 Too Many Requests",
            "500 internal server error",
            "the request (no body) was 400",
        ];
        for text in not {
            assert!(
                !is_context_overflow(&reply(StopReason::Error, Some(text), 0, 0), 0),
                "{text}"
            );
        }
        // The pattern needs an error reply.
        assert!(!is_context_overflow(
            &reply(StopReason::Stop, Some("prompt is too long"), 0, 0),
            0
        ));
    }

    #[test]
    fn usage_over_the_window_is_an_overflow_only_when_the_window_is_known() {
        assert!(is_context_overflow(
            &reply(StopReason::Stop, None, 1001, 5),
            1000
        ));
        assert!(!is_context_overflow(
            &reply(StopReason::Stop, None, 1000, 5),
            1000
        ));
        assert!(!is_context_overflow(
            &reply(StopReason::Stop, None, 5000, 5),
            0
        ));
        assert!(is_context_overflow(
            &reply(StopReason::Length, None, 990, 0),
            1000
        ));
        assert!(!is_context_overflow(
            &reply(StopReason::Length, None, 989, 0),
            1000
        ));
        assert!(!is_context_overflow(
            &reply(StopReason::Length, None, 999, 1),
            1000
        ));
    }
}
