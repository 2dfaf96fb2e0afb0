//! `faux`, the built-in offline model (spec: faux-model.md): deterministic replies, or the
//! replies of a `--faux-script` file in order.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use pith_events::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, StreamKind, StreamUpdate,
    TextContent, ThinkingContent, Usage,
};
use pith_store::env::Clock;

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
    let text = std::fs::read_to_string(path).map_err(|reason| ScriptError::Io {
        path: p.clone(),
        reason,
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

/// The unscripted answer: names the model and echoes the last user text (deterministic).
fn default_reply(request: &ProviderRequest) -> ScriptedReply {
    let last_user = request.messages.iter().rev().find_map(|m| match m {
        AgentMessage::User(u) => Some(u.content.joined_text(" ")),
        _ => None,
    });
    let text = match last_user {
        Some(t) => format!("faux-1 (offline) heard: {}", t.trim()),
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

/// Streams one step of a content block: its kind, position, text added, and the message so far.
async fn send_update(
    tx: &mpsc::Sender<ProviderEvent>,
    kind: StreamKind,
    content_index: usize,
    delta: Option<String>,
    partial: &AssistantMessage,
) {
    let _ = tx
        .send(ProviderEvent::Update {
            update: StreamUpdate {
                kind,
                content_index,
                delta,
            },
            partial: partial.clone(),
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
        mut abort: watch::Receiver<bool>,
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
                    _ = aborted_signal(&mut abort) => {
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
                if *abort.borrow() {
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
                for piece in split_words(&text) {
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

/// Splits text into word-sized deltas that concatenate back to it.
fn split_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        cur.push(c);
        if c == ' ' || c == '\n' {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Resolves once `abort` is `true`; never if the sender is gone without aborting.
pub(crate) async fn aborted_signal(abort: &mut watch::Receiver<bool>) {
    loop {
        if *abort.borrow_and_update() {
            return;
        }
        if abort.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
