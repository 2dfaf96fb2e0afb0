//! Summaries through the current model (spec: compaction.md §7): the conversation serialized
//! as pi does, pi's request layout and section structure, pith's own wording.

use pith_events::{
    AgentEvent, AgentMessage, AssistantMessage, ContentBlock, ModelRef, StopReason, ThinkingLevel,
    Usage, UserContent,
};
use pith_store::compaction::estimate_tokens;
use pith_store::llm::convert_to_llm;
use tokio_util::sync::CancellationToken;

use pith_llm::overflow::is_context_overflow;
use pith_llm::provider::{Provider, ProviderEvent, ProviderRequest};
use pith_llm::retry::{RetrySettings, is_retryable};

use crate::event::EventSink;

/// System prompt of every summary request.
pub const SYSTEM_PROMPT: &str = "You condense coding-agent conversations into checkpoints another model will continue from. \
Reply with the structured summary only; never answer or continue the conversation itself.";

/// Instructions for a first history summary: pi's sections, in pi's order.
pub const HISTORY_INSTRUCTIONS: &str = "Write a checkpoint of the conversation above with these sections:\n\
## Goal\nWhat the user is trying to achieve.\n\
## Constraints & Preferences\nRequirements and preferences the user stated.\n\
## Progress\n### Done\n### In Progress\n### Blocked\n\
## Key Decisions\nChoices made and why.\n\
## Next Steps\nWhat should happen next, in order.\n\
## Critical Context\nFacts the next model cannot do without.\n\
Be brief. Keep exact file paths, names, commands and error messages.";

/// Instructions when a previous summary exists: merge, keep the sections.
pub const UPDATE_INSTRUCTIONS: &str = "Update the previous summary with the new conversation above. Keep its sections \
(Goal, Constraints & Preferences, Progress with Done / In Progress / Blocked, Key Decisions, Next Steps, Critical Context), \
move finished work to Done and rewrite Next Steps. Be brief. Keep exact file paths, names, commands and error messages.";

/// Instructions for a branch summary (`/tree` leaving a branch): pi's sections, without
/// Critical Context (compaction.md §9.3).
pub const BRANCH_INSTRUCTIONS: &str = "The conversation above is a branch the user is leaving to continue elsewhere. \
Write a checkpoint of it with these sections:\n\
## Goal\nWhat the user tried in this branch.\n\
## Constraints & Preferences\nRequirements and preferences the user stated.\n\
## Progress\n### Done\n### In Progress\n### Blocked\n\
## Key Decisions\nChoices made and why.\n\
## Next Steps\nWhat was about to happen next.\n\
Be brief. Keep exact file paths, names, commands and error messages.";

/// Instructions for the beginning of a turn that was cut in two: pi 1.6.0's sections
/// (compaction.md §7), sent under [`turn_prefix_text`]'s `# Instructions` heading.
pub const TURN_PREFIX_INSTRUCTIONS: &str = "The conversation above is the first part of a turn; its later messages are kept \
verbatim elsewhere and need not be rebuilt. Write a brief checkpoint of it with these sections:\n\
## Original Request\nWhat the user asked for.\n\
## Progress So Far\n- Decisions made and work done in these messages.\n\
## Context Needed to Continue\n- What the later messages need from these.\n\
Only use what the messages above say; keep exact paths and names.";

/// The request text of a split turn's prefix summary (pi ≥ 1.4): the conversation under
/// `# Conversation`, the instructions under `# Instructions`, custom instructions appended as
/// `Additional focus`.
pub fn turn_prefix_text(conversation: &str, focus: Option<&str>) -> String {
    let mut text =
        format!("# Conversation\n{conversation}\n\n# Instructions\n{TURN_PREFIX_INSTRUCTIONS}");
    if let Some(f) = focus.filter(|f| !f.trim().is_empty()) {
        text.push_str(&format!("\n\nAdditional focus: {f}"));
    }
    text
}

const TOOL_RESULT_LIMIT: usize = 2000;

/// `serializeConversation(convertToLlm(messages))`: one part per message, parts joined by a
/// blank line. pi 1.6.0 writes no `[Assistant thinking]` part (0.73.1 did; compaction.md §7
/// still lists it, the real pi 1.6.0 does not send it).
pub fn serialize_conversation(messages: &[AgentMessage]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for m in convert_to_llm(messages) {
        match m {
            AgentMessage::User(u) => {
                let text = match &u.content {
                    UserContent::Text(t) => t.clone(),
                    blocks @ UserContent::Blocks(_) => blocks.joined_text(""),
                };
                if !text.is_empty() {
                    parts.push(format!("[User]: {text}"));
                }
            }
            AgentMessage::Assistant(a) => {
                let mut text = Vec::new();
                let mut calls = Vec::new();
                for b in &a.content {
                    match b {
                        // pi 1.6.0 leaves thinking out of what is summarized.
                        ContentBlock::Thinking(_) => {}
                        ContentBlock::Text(t) => text.push(t.text.as_str()),
                        ContentBlock::ToolCall(c) => {
                            let args: Vec<String> = c
                                .arguments
                                .as_object()
                                .map(|o| {
                                    o.iter()
                                        .map(|(k, v)| {
                                            format!(
                                                "{k}={}",
                                                pith_events::js::to_js_json(v).unwrap_or_default()
                                            )
                                        })
                                        .collect()
                                })
                                .unwrap_or_default();
                            calls.push(format!("{}({})", c.name, args.join(", ")));
                        }
                        ContentBlock::Image(_) | ContentBlock::Unknown(_) => {}
                    }
                }
                if !text.is_empty() {
                    parts.push(format!("[Assistant]: {}", text.join("\n")));
                }
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            AgentMessage::ToolResult(t) => {
                let text: String = t
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect();
                if text.is_empty() {
                    continue;
                }
                let units: Vec<u16> = text.encode_utf16().collect();
                let shown = if units.len() > TOOL_RESULT_LIMIT {
                    format!(
                        "{}\n\n[... {} more characters truncated]",
                        String::from_utf16_lossy(&units[..TOOL_RESULT_LIMIT]),
                        units.len() - TOOL_RESULT_LIMIT
                    )
                } else {
                    text
                };
                parts.push(format!("[Tool result]: {shown}"));
            }
            _ => {}
        }
    }
    parts.join("\n\n")
}

/// The request text: the conversation, the previous summary if any, then the instructions
/// (custom instructions appended as `Additional focus`).
pub fn request_text(
    conversation: &str,
    previous: Option<&str>,
    instructions: &str,
    focus: Option<&str>,
) -> String {
    let mut text = format!("<conversation>\n{conversation}\n</conversation>\n\n");
    if let Some(p) = previous {
        text.push_str(&format!("<previous-summary>\n{p}\n</previous-summary>\n\n"));
    }
    text.push_str(instructions);
    if let Some(f) = focus.filter(|f| !f.trim().is_empty()) {
        text.push_str(&format!("\n\nAdditional focus: {f}"));
    }
    text
}

/// How a summary is asked for: pi's `completeSimple` options (compaction.md §7, §9.3). pi
/// 1.6.0 passes no token limit (pi ≥ 1.4): the model's own output limit applies, and
/// `reserveTokens` only decides when compaction starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryOptions {
    /// pi sends the session's level only when the model can reason; pith sends it always,
    /// because the providers clamp a level the model cannot use to `off`, which yields the
    /// same request.
    pub thinking_level: ThinkingLevel,
}

impl SummaryOptions {
    /// A history summary or the prefix of a split turn: the session's thinking level.
    pub fn history(thinking_level: ThinkingLevel) -> SummaryOptions {
        SummaryOptions { thinking_level }
    }

    /// A branch summary: no reasoning (pi's `navigateTree` passes no thinking level to
    /// `generateBranchSummary`).
    pub fn branch() -> SummaryOptions {
        SummaryOptions {
            thinking_level: ThinkingLevel::Off,
        }
    }
}

/// Why a summary request failed; its text is the provider's error message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct SummaryFailure {
    /// The provider's error message.
    pub message: String,
    /// The request did not fit the model's context window ([`is_context_overflow`]).
    pub overflow: bool,
}

/// pi-ai's cap on one retry wait (`DEFAULT_MAX_AGENT_RETRY_DELAY_MS`), in ms.
const MAX_RETRY_DELAY_MS: u64 = 60_000;

/// How a summary request that failed transiently is retried and announced: pi-ai's
/// `retryAssistantCall` with AgentSession's `_summarizationRetryCallbacks` (spec:
/// agent-and-events.md §7).
#[derive(Clone)]
pub struct SummaryRetry {
    /// `retry.*`: whether, how often and after how long (`maxRetries`, `baseDelayMs`).
    pub settings: RetrySettings,
    /// Where `summarization_retry_*` go.
    pub events: EventSink,
    /// `compaction` or `branchSummary`: the `source` of `summarization_retry_attempt_start`.
    pub source: &'static str,
    /// The compaction's `reason` (`manual`, `threshold`, `overflow`); none for a branch
    /// summary.
    pub reason: Option<String>,
}

/// A summary: the reply's text blocks joined by `\n`, and what the request cost.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryReply {
    /// The summary text.
    pub text: String,
    /// The final reply's usage (pi records it on the compaction or branch summary entry,
    /// pi ≥ 0.81).
    pub usage: Usage,
}

/// Asks `provider` for a summary with `options`; the reply's text blocks joined by `\n`.
/// Cancelling `abort` ends the request at once; the caller tells a cancel by the token.
/// A reply with a transient error (pith_llm's `is_retryable`) is asked again up to
/// `retry.maxRetries` times after `baseDelayMs × 2^(n−1)` ms (at most 60 s), announced with
/// `summarization_retry_scheduled`, `summarization_retry_attempt_start` and, once retries
/// were scheduled, `summarization_retry_finished` whatever the outcome.
///
/// Errors: the provider's error message (`Unknown error` without one) when the (last) reply
/// is an error; `Request was aborted` when `abort` was cancelled.
pub async fn summarize(
    provider: &dyn Provider,
    model: &ModelRef,
    options: &SummaryOptions,
    text: String,
    abort: CancellationToken,
    retry: Option<&SummaryRetry>,
) -> Result<SummaryReply, SummaryFailure> {
    let max_attempts = retry
        .filter(|r| r.settings.enabled)
        .map_or(0, |r| r.settings.max_retries);
    let window = provider.context_window(&model.id).unwrap_or(0);
    let mut attempt = 0;
    let finished = |scheduled: bool| {
        if let Some(r) = retry.filter(|_| scheduled) {
            r.events.emit(AgentEvent::SummarizationRetryFinished);
        }
    };
    loop {
        let reply = match ask(provider, model, options, text.clone(), abort.clone()).await {
            Ok(reply) => reply,
            Err(failure) => {
                finished(attempt > 0);
                return Err(failure);
            }
        };
        // Only an error fails, as in pi: an aborted reply's text is still a summary.
        if reply.stop_reason != StopReason::Error {
            finished(attempt > 0);
            return Ok(SummaryReply {
                text: reply.texts().collect::<Vec<_>>().join("\n"),
                usage: reply.usage,
            });
        }
        let overflow = is_context_overflow(&reply, window);
        let message = reply
            .error_message
            .clone()
            .unwrap_or_else(|| "Unknown error".into());
        let Some(r) = retry.filter(|_| attempt < max_attempts && is_retryable(&reply, window))
        else {
            finished(attempt > 0);
            return Err(SummaryFailure { message, overflow });
        };
        attempt += 1;
        let delay_ms = r.settings.delay_ms(attempt).min(MAX_RETRY_DELAY_MS);
        r.events.emit(AgentEvent::SummarizationRetryScheduled {
            attempt,
            max_attempts,
            delay_ms,
            error_message: message,
        });
        tokio::select! {
            biased;
            () = abort.cancelled() => {
                finished(true);
                return Err(SummaryFailure {
                    message: "Request was aborted".into(),
                    overflow: false,
                });
            }
            () = tokio::time::sleep(std::time::Duration::from_millis(delay_ms)) => {}
        }
        r.events.emit(AgentEvent::SummarizationRetryAttemptStart {
            source: r.source.to_owned(),
            reason: r.reason.clone(),
        });
    }
}

/// One summary request: the final reply, or why there is none (`Request was aborted`, a
/// stream without a final message).
async fn ask(
    provider: &dyn Provider,
    model: &ModelRef,
    options: &SummaryOptions,
    text: String,
    abort: CancellationToken,
) -> Result<AssistantMessage, SummaryFailure> {
    let request = ProviderRequest {
        provider: model.provider.clone(),
        model: model.id.clone(),
        thinking_level: options.thinking_level,
        system_prompt: Some(SYSTEM_PROMPT.to_owned()),
        messages: vec![AgentMessage::user_text(text, 0)],
        tools: Vec::new(),
        max_tokens: None,
        // pi 1.6.0 forwards a routing id here too (compaction.js `createSummarizationOptions`);
        // pith's summaries do not use one yet.
        session_id: None,
    };
    let mut events = provider.stream(request, abort.clone());
    loop {
        // A cancelled summary ends now, whether or not the provider notices the abort.
        let event = tokio::select! {
            biased;
            () = abort.cancelled() => {
                return Err(SummaryFailure {
                    message: "Request was aborted".into(),
                    overflow: false,
                });
            }
            event = events.recv() => event,
        };
        let Some(event) = event else { break };
        if let ProviderEvent::Done(reply) = event {
            return Ok(reply);
        }
    }
    Err(SummaryFailure {
        message: "the provider's stream ended without a reply".into(),
        overflow: false,
    })
}

/// [`summarize`] over `request(messages)`; when the request itself overflows the model's
/// context, the oldest messages worth half the estimated tokens are left out and it is asked
/// again, until one message is left. The newest history matters most to the next model.
///
/// Errors: the last failure.
pub async fn summarize_trimming(
    provider: &dyn Provider,
    model: &ModelRef,
    options: &SummaryOptions,
    messages: &[AgentMessage],
    request: impl Fn(&[AgentMessage]) -> String,
    abort: CancellationToken,
    retry: Option<&SummaryRetry>,
) -> Result<SummaryReply, SummaryFailure> {
    let mut start = 0;
    loop {
        let rest = &messages[start..];
        match summarize(
            provider,
            model,
            options,
            request(rest),
            abort.clone(),
            retry,
        )
        .await
        {
            Ok(summary) => return Ok(summary),
            Err(failure) if failure.overflow && rest.len() > 1 => {
                start += oldest_half(rest);
                tracing::info!(left_out = start, "summary request overflowed; trimming");
            }
            Err(failure) => return Err(failure),
        }
    }
}

/// How many of the oldest `messages` hold half their estimated tokens: at least one, and
/// never all of them.
fn oldest_half(messages: &[AgentMessage]) -> usize {
    let tokens: Vec<u64> = messages.iter().map(estimate_tokens).collect();
    let half = tokens.iter().sum::<u64>() / 2;
    let mut dropped = 0;
    let mut n = 0;
    while n < messages.len() - 1 && (n == 0 || dropped < half) {
        dropped += tokens[n];
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversations_serialize_as_pi_does() {
        let msgs: Vec<AgentMessage> = [
            r#"{"role":"user","content":[{"type":"text","text":"fix "},{"type":"text","text":"it"}],"timestamp":1}"#,
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"ok"},{"type":"toolCall","id":"c","name":"read","arguments":{"path":"a.txt","limit":5}}],"api":"x","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":2}"#,
        ]
        .iter()
        .map(|l| serde_json::from_str(l).expect("message"))
        .collect();
        let long = "y".repeat(2005);
        let mut all = msgs;
        all.push(serde_json::from_str(&format!(r#"{{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{{"type":"text","text":"{long}"}}],"isError":false,"timestamp":3}}"#)).expect("result"));
        let text = serialize_conversation(&all);
        let parts: Vec<&str> = text.split("\n\n").collect();
        assert_eq!(parts[0], "[User]: fix it");
        // pi 1.6.0 leaves the thinking out.
        assert_eq!(parts[1], "[Assistant]: ok");
        assert_eq!(
            parts[2],
            r#"[Assistant tool calls]: read(path="a.txt", limit=5)"#
        );
        assert!(parts[3].starts_with("[Tool result]: yyyy") && parts[3].ends_with('y'));
        assert_eq!(parts[4], "[... 5 more characters truncated]");
        let req = request_text("C", Some("P"), "I", Some("tests"));
        assert_eq!(
            req,
            "<conversation>\nC\n</conversation>\n\n<previous-summary>\nP\n</previous-summary>\n\nI\n\nAdditional focus: tests"
        );
    }

    /// Answers with the conversation's first line, or overflows when the request is longer
    /// than `max` characters.
    struct Limited {
        max: usize,
        asked: std::sync::Mutex<Vec<usize>>,
    }

    impl Provider for Limited {
        fn name(&self) -> &str {
            "limited"
        }

        fn stream(
            &self,
            request: ProviderRequest,
            _abort: CancellationToken,
        ) -> tokio::sync::mpsc::Receiver<ProviderEvent> {
            let text = match &request.messages[0] {
                AgentMessage::User(u) => u.content.joined_text(""),
                _ => String::new(),
            };
            if let Ok(mut asked) = self.asked.lock() {
                asked.push(text.len());
            }
            let mut reply = pith_events::AssistantMessage::new("x", "limited", "m", Vec::new(), 0);
            if text.len() > self.max {
                reply.stop_reason = StopReason::Error;
                reply.error_message = Some("prompt is too long: 9 tokens > 8 maximum".into());
            } else {
                let first = text.lines().nth(1).unwrap_or("").to_owned();
                reply.content = vec![ContentBlock::text(first)];
            }
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            let _ = tx.try_send(ProviderEvent::Done(reply));
            rx
        }
    }

    fn users(n: usize) -> Vec<AgentMessage> {
        (0..n)
            .map(|i| AgentMessage::user_text(format!("message {i} {}", "x".repeat(40)), 0))
            .collect()
    }

    #[tokio::test]
    async fn an_overflowing_summary_request_leaves_out_the_oldest_half_and_asks_again() {
        let provider = Limited {
            max: 250,
            asked: Default::default(),
        };
        let model = ModelRef::new("limited", "m");
        let abort = CancellationToken::new();
        let request =
            |m: &[AgentMessage]| request_text(&serialize_conversation(m), None, "I", None);
        let options = SummaryOptions::branch();
        let summary = summarize_trimming(
            &provider,
            &model,
            &options,
            &users(8),
            request,
            abort.clone(),
            None,
        )
        .await
        .expect("summary")
        .text;
        // 8 messages overflow, then 4, the newest 2 fit: the summary starts at message 6.
        assert_eq!(
            summary,
            "[User]: message 6 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
        );
        assert_eq!(provider.asked.lock().unwrap().len(), 3);

        // One message that alone overflows: the provider's error, not a loop.
        let tiny = Limited {
            max: 10,
            asked: Default::default(),
        };
        let err = summarize_trimming(&tiny, &model, &options, &users(3), request, abort, None)
            .await
            .unwrap_err();
        assert_eq!(err.message, "prompt is too long: 9 tokens > 8 maximum");
        // All three, then the newest one alone.
        assert_eq!(tiny.asked.lock().unwrap().len(), 2);
    }

    #[test]
    fn a_turn_prefix_request_has_pi_1_6s_headings() {
        assert_eq!(
            turn_prefix_text("[User]: hi", Some("tests")),
            format!(
                "# Conversation\n[User]: hi\n\n# Instructions\n{TURN_PREFIX_INSTRUCTIONS}\n\nAdditional focus: tests"
            )
        );
        for section in [
            "## Original Request",
            "## Progress So Far",
            "## Context Needed to Continue",
        ] {
            assert!(TURN_PREFIX_INSTRUCTIONS.contains(section), "{section}");
        }
    }

    #[test]
    fn the_oldest_half_is_at_least_one_message_and_never_all() {
        assert_eq!(oldest_half(&users(1)), 0);
        assert_eq!(oldest_half(&users(2)), 1);
        assert_eq!(oldest_half(&users(8)), 4);
    }

    /// Replies with the same message every time.
    struct Fixed(pith_events::AssistantMessage);

    impl Provider for Fixed {
        fn name(&self) -> &str {
            "fixed"
        }

        fn stream(
            &self,
            _request: ProviderRequest,
            _abort: CancellationToken,
        ) -> tokio::sync::mpsc::Receiver<ProviderEvent> {
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            let _ = tx.try_send(ProviderEvent::Done(self.0.clone()));
            rx
        }
    }

    #[tokio::test]
    async fn only_an_error_reply_fails_a_summary() {
        let model = ModelRef::new("fixed", "m");
        let reply = |stop: StopReason| {
            let mut a = pith_events::AssistantMessage::new(
                "x",
                "fixed",
                "m",
                vec![ContentBlock::text("partial")],
                0,
            );
            a.stop_reason = stop;
            a
        };
        let abort = CancellationToken::new();
        let options = SummaryOptions::branch();
        let aborted = summarize(
            &Fixed(reply(StopReason::Aborted)),
            &model,
            &options,
            "t".into(),
            abort.clone(),
            None,
        )
        .await;
        assert_eq!(aborted.map(|r| r.text), Ok("partial".to_owned()));
        let failed = summarize(
            &Fixed(reply(StopReason::Error)),
            &model,
            &options,
            "t".into(),
            abort,
            None,
        )
        .await;
        assert_eq!(
            failed.map(|r| r.text),
            Err(SummaryFailure {
                message: "Unknown error".into(),
                overflow: false
            })
        );
    }
}
