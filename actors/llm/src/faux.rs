//! `faux`, the built-in offline model (spec: faux-model.md): deterministic replies, or the
//! replies of a `--faux-script` file in order.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use pith_events::clock::Clock;
use pith_events::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, StreamKind, StreamUpdate,
    TextContent, ThinkingContent, Usage,
};

use crate::provider::{Provider, ProviderEvent, ProviderRequest};

/// The faux model's id.
pub const FAUX_MODEL: &str = "faux-1";
/// Its context window in tokens.
pub const FAUX_CONTEXT_WINDOW: u64 = 128_000;

/// One scripted reply: the part of an AssistantMessage a model decides.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ScriptedReply {
    /// Content blocks: text, thinking, toolCall.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Default: `toolUse` with a tool call, `error` with an error message, else `stop`.
    #[serde(rename = "stopReason", default)]
    pub stop_reason: Option<StopReason>,
    /// The provider's error text.
    #[serde(rename = "errorMessage", default)]
    pub error_message: Option<String>,
    /// Wait this long (ms) before streaming starts.
    #[serde(rename = "delayMs", default)]
    pub delay_ms: Option<u64>,
    /// Usage to report.
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// Why a script file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file cannot be read.
    #[error("{path}: {reason}")]
    Io {
        /// The script file.
        path: String,
        /// The OS error (not a `source`: the message already says it, once).
        reason: std::io::Error,
    },
    /// The file is not a regular file or is over [`crate::config_file::SCRIPT_MAX_BYTES`].
    #[error(transparent)]
    Unreadable(#[from] crate::config_file::ConfigFileError),
    /// The file is not a JSON array of replies.
    #[error("{path}: line {line}, column {column}: {message}")]
    Json {
        /// The script file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What serde expected.
        message: String,
    },
}

/// Reads a `--faux-script` file: a JSON array of [`ScriptedReply`].
///
/// Errors: [`ScriptError`] naming the file, line and column.
pub fn read_script(path: &Path) -> Result<Vec<ScriptedReply>, ScriptError> {
    let p = path.display().to_string();
    let text = crate::config_file::read_text_limited(path, crate::config_file::SCRIPT_MAX_BYTES)?
        .ok_or_else(|| ScriptError::Io {
        path: p.clone(),
        reason: std::io::Error::from(std::io::ErrorKind::NotFound),
    })?;
    serde_json::from_str(&text).map_err(|e| ScriptError::Json {
        path: p,
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

/// The faux provider. Cheap to clone; clones share the script.
#[derive(Clone)]
pub struct Faux {
    script: Arc<Mutex<VecDeque<ScriptedReply>>>,
    clock: Arc<dyn Clock>,
}

impl Faux {
    /// A faux model that plays `script` first, then answers deterministically.
    pub fn new(script: Vec<ScriptedReply>, clock: Arc<dyn Clock>) -> Faux {
        Faux {
            script: Arc::new(Mutex::new(script.into())),
            clock,
        }
    }

    /// The next scripted reply (zero usage unless the script gives one, as faux-model.md
    /// says), or the unscripted answer (usage estimated at chars/4).
    fn next_reply(&self, request: &ProviderRequest) -> ScriptedReply {
        let scripted = self.script.lock().ok().and_then(|mut s| s.pop_front());
        match scripted {
            Some(mut reply) => {
                reply.usage.get_or_insert_with(Usage::default);
                reply
            }
            None => default_reply(request),
        }
    }
}

/// How much of the last user text the unscripted answer repeats, in characters.
pub const ECHO_MAX_CHARS: usize = 200;

/// The unscripted answer: names the model and echoes the start of the last user text
/// (deterministic). Bounded: a compaction or branch summary request carries the whole
/// conversation as its user text, and echoing all of it would make every compaction on the
/// default model grow the session instead of shrinking it.
fn default_reply(request: &ProviderRequest) -> ScriptedReply {
    let last_user = request.messages.iter().rev().find_map(|m| match m {
        AgentMessage::User(u) => Some(u.content.joined_text(" ")),
        _ => None,
    });
    let text = match last_user {
        Some(t) => {
            let t = t.trim();
            match t.char_indices().nth(ECHO_MAX_CHARS) {
                Some((cut, _)) => format!(
                    "faux-1 (offline) heard: {}… ({} more characters)",
                    &t[..cut],
                    t[cut..].chars().count()
                ),
                None => format!("faux-1 (offline) heard: {t}"),
            }
        }
        None => "faux-1 (offline) is listening.".to_owned(),
    };
    ScriptedReply {
        content: vec![ContentBlock::text(text)],
        stop_reason: None,
        error_message: None,
        delay_ms: None,
        usage: None,
    }
}

/// Streams one step of a content block: its kind, position and text added, read against
/// the message after the step ([`StreamUpdate::of`]).
async fn send_update(
    tx: &mpsc::Sender<ProviderEvent>,
    kind: StreamKind,
    content_index: usize,
    delta: Option<String>,
    partial: &AssistantMessage,
) {
    let _ = tx
        .send(ProviderEvent::Update {
            update: StreamUpdate::of(kind, content_index, delta, partial),
            usage: partial.usage.clone(),
        })
        .await;
}

fn chars_over_4(n: usize) -> u64 {
    n.div_ceil(4) as u64
}

impl Provider for Faux {
    fn name(&self) -> &str {
        "faux"
    }

    fn context_window(&self, _model: &str) -> Option<u64> {
        Some(FAUX_CONTEXT_WINDOW)
    }

    fn stream(
        &self,
        request: ProviderRequest,
        abort: CancellationToken,
    ) -> mpsc::Receiver<ProviderEvent> {
        let (tx, rx) = mpsc::channel(64);
        let reply = self.next_reply(&request);
        let clock = self.clock.clone();
        let input_chars: usize = request
            .messages
            .iter()
            .map(|m| serde_json::to_string(m).map_or(0, |s| s.len()))
            .sum();
        tokio::spawn(async move {
            let mut msg =
                AssistantMessage::new("faux", "faux", FAUX_MODEL, Vec::new(), clock.now_ms());
            let aborted = |m: &mut AssistantMessage| {
                m.stop_reason = StopReason::Aborted;
                m.error_message = Some("Request was aborted".into());
            };
            if let Some(ms) = reply.delay_ms {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
                    () = abort.cancelled() => {
                        aborted(&mut msg);
                        let _ = tx.send(ProviderEvent::Done(msg)).await;
                        return;
                    }
                }
            }
            let _ = tx.send(ProviderEvent::Start(msg.clone())).await;
            let has_tool_call = reply
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolCall(_)));
            let mut output_chars = 0;
            for (index, block) in reply.content.into_iter().enumerate() {
                if abort.is_cancelled() {
                    aborted(&mut msg);
                    let _ = tx.send(ProviderEvent::Done(msg)).await;
                    return;
                }
                let (start, delta, end, text) = match &block {
                    ContentBlock::Text(t) => (
                        StreamKind::TextStart,
                        StreamKind::TextDelta,
                        StreamKind::TextEnd,
                        t.text.clone(),
                    ),
                    ContentBlock::Thinking(t) => (
                        StreamKind::ThinkingStart,
                        StreamKind::ThinkingDelta,
                        StreamKind::ThinkingEnd,
                        t.thinking.clone(),
                    ),
                    ContentBlock::ToolCall(c) => (
                        StreamKind::ToolCallStart,
                        StreamKind::ToolCallDelta,
                        StreamKind::ToolCallEnd,
                        c.arguments.to_string(),
                    ),
                    _ => (
                        StreamKind::TextStart,
                        StreamKind::TextDelta,
                        StreamKind::TextEnd,
                        String::new(),
                    ),
                };
                output_chars += text.len();
                // Blocks grow as they stream: empty at the start, whole at the end.
                msg.content.push(empty_like(&block));
                send_update(&tx, start, index, None, &msg).await;
                for piece in split_words(&text).map(str::to_owned) {
                    // Checked per delta, as a real stream's reads are: an abort ends a long
                    // reply at once, keeping what streamed so far.
                    if abort.is_cancelled() {
                        aborted(&mut msg);
                        let _ = tx.send(ProviderEvent::Done(msg)).await;
                        return;
                    }
                    grow(&mut msg.content[index], &piece);
                    send_update(&tx, delta, index, Some(piece), &msg).await;
                }
                msg.content[index] = block;
                send_update(&tx, end, index, None, &msg).await;
            }
            msg.usage = reply.usage.unwrap_or_else(|| {
                let (input, output) = (chars_over_4(input_chars), chars_over_4(output_chars));
                Usage {
                    input,
                    output,
                    total_tokens: input + output,
                    ..Usage::default()
                }
            });
            msg.error_message = reply.error_message.clone();
            msg.stop_reason = reply.stop_reason.unwrap_or(if has_tool_call {
                StopReason::ToolUse
            } else if reply.error_message.is_some() {
                StopReason::Error
            } else {
                StopReason::Stop
            });
            let _ = tx.send(ProviderEvent::Done(msg)).await;
        });
        rx
    }
}

fn empty_like(block: &ContentBlock) -> ContentBlock {
    match block {
        ContentBlock::Text(t) => ContentBlock::Text(TextContent {
            text: String::new(),
            text_signature: t.text_signature.clone(),
        }),
        ContentBlock::Thinking(t) => ContentBlock::Thinking(ThinkingContent {
            thinking: String::new(),
            ..t.clone()
        }),
        ContentBlock::ToolCall(c) => ContentBlock::ToolCall(pith_events::ToolCall {
            arguments: Value::Object(Default::default()),
            ..c.clone()
        }),
        other => other.clone(),
    }
}

fn grow(block: &mut ContentBlock, piece: &str) {
    match block {
        ContentBlock::Text(t) => t.text.push_str(piece),
        ContentBlock::Thinking(t) => t.thinking.push_str(piece),
        _ => {}
    }
}

/// Splits text into word-sized deltas that concatenate back to it (each ends with its space
/// or line break), lazily: a reply of n words never holds n pieces at once.
fn split_words(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive([' ', '\n'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(text: &str) -> ProviderRequest {
        ProviderRequest {
            provider: "faux".into(),
            model: "faux-1".into(),
            thinking_level: pith_events::ThinkingLevel::Off,
            system_prompt: None,
            messages: vec![AgentMessage::user_text(text, 1)],
            tools: Vec::new(),
            max_tokens: None,
            session_id: None,
        }
    }

    fn text_of(reply: &ScriptedReply) -> String {
        match reply.content.as_slice() {
            [ContentBlock::Text(t)] => t.text.clone(),
            other => panic!("one text block expected, got {other:?}"),
        }
    }

    #[test]
    fn short_prompts_are_echoed_whole() {
        assert_eq!(
            text_of(&default_reply(&request("  hello  "))),
            "faux-1 (offline) heard: hello"
        );
    }

    #[test]
    fn a_summary_request_of_a_huge_conversation_gets_a_bounded_reply() {
        // A compaction request carries the whole conversation as its user text (19 MB in the
        // issue); the summary must not be as large, or compaction would grow the session.
        let conversation = "é".repeat(5_000_000);
        let text = text_of(&default_reply(&request(&conversation)));
        assert!(
            text.chars().count() < 300,
            "{} characters",
            text.chars().count()
        );
        assert!(text.starts_with(&format!(
            "faux-1 (offline) heard: {}…",
            "é".repeat(ECHO_MAX_CHARS)
        )));
        assert!(text.ends_with("(4999800 more characters)"), "{text}");
    }
}
