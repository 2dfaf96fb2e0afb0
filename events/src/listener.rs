//! Agent events as pi's session listeners get them: the JSON that `--mode json` and
//! `--mode rpc` print (spec: agent-and-events.md §1, §8, §9).
//!
//! pi's listeners receive pi-agent-core's events as they are, which differ from
//! [`AgentEvent`]'s own serialization in three places:
//!
//! - `turn_start` is `{"type":"turn_start"}` and `turn_end` has no `turnIndex`: the agent loop
//!   emits neither. `turnIndex` and `timestamp` belong to the *extension* events that
//!   AgentSession builds, which is why [`AgentEvent`] keeps them.
//! - `message_update` is `{type, assistantMessageEvent, message}`, and its
//!   `assistantMessageEvent` is pi-ai's stream event: `type, contentIndex`, then `delta`
//!   (deltas), `content` (`text_end`/`thinking_end`: the block's whole text) or `toolCall`
//!   (`toolcall_end`: the finished call), then `partial` (the message so far).
//! - Numbers are spelled as `JSON.stringify` spells them (`0`, not `0.0`).
//!
//! The agent sends each update with the message once; `partial`, `content` and `toolCall`
//! are read from it here, so only frontends that print events pay for writing them.

use serde::{Serialize, Serializer};

use crate::agent::{AgentEvent, StreamKind, StreamUpdate};
use crate::js::to_js_json;
use crate::message::{AgentMessage, ContentBlock};

impl AgentEvent {
    /// One line of JSON (no newline) as pi's `JSON.stringify(event)` writes this event for
    /// its session listeners (see the module doc for how it differs from `Serialize`).
    ///
    /// Errors: only what serialization of the carried JSON values reports, which
    /// `serde_json::Value` never does.
    pub fn to_listener_json(&self) -> Result<String, serde_json::Error> {
        to_js_json(&Listener(self))
    }
}

/// Serializes an [`AgentEvent`] in its listener shape.
struct Listener<'a>(&'a AgentEvent);

/// `{"type":"turn_start"}`.
#[derive(Serialize)]
struct TurnStart {
    #[serde(rename = "type")]
    kind: &'static str,
}

/// `{type, message, toolResults}`.
#[derive(Serialize)]
struct TurnEnd<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    message: &'a AgentMessage,
    #[serde(rename = "toolResults")]
    tool_results: &'a [AgentMessage],
}

/// `{type, assistantMessageEvent, message}`, the agent loop's member order.
#[derive(Serialize)]
struct MessageUpdate<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(rename = "assistantMessageEvent")]
    event: StreamEvent<'a>,
    message: &'a AgentMessage,
}

/// pi-ai's `AssistantMessageEvent` for a block event. At most one of `delta`, `content` and
/// `toolCall` is present, as each event type has at most one of them.
#[derive(Serialize)]
struct StreamEvent<'a> {
    #[serde(rename = "type")]
    kind: StreamKind,
    #[serde(rename = "contentIndex")]
    content_index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    delta: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(rename = "toolCall", skip_serializing_if = "Option::is_none")]
    tool_call: Option<&'a ContentBlock>,
    partial: &'a AgentMessage,
}

impl<'a> StreamEvent<'a> {
    fn new(update: &'a StreamUpdate, message: &'a AgentMessage) -> StreamEvent<'a> {
        // The block the event is about, in the message after the event: whole at `*_end`.
        let block = match message {
            AgentMessage::Assistant(a) => a.content.get(update.content_index),
            AgentMessage::System(_)
            | AgentMessage::User(_)
            | AgentMessage::ToolResult(_)
            | AgentMessage::BashExecution(_)
            | AgentMessage::Custom(_)
            | AgentMessage::BranchSummary(_)
            | AgentMessage::CompactionSummary(_)
            | AgentMessage::Unknown(_) => None,
        };
        let (mut delta, mut content, mut tool_call) = (None, None, None);
        match update.kind {
            StreamKind::TextStart | StreamKind::ThinkingStart | StreamKind::ToolCallStart => {}
            StreamKind::TextDelta | StreamKind::ThinkingDelta | StreamKind::ToolCallDelta => {
                delta = update.delta.as_deref();
            }
            // A block of another kind at the index would be a provider bug; like
            // `JSON.stringify` of an `undefined` member, the member is then left out.
            StreamKind::TextEnd => {
                content = match block {
                    Some(ContentBlock::Text(t)) => Some(t.text.as_str()),
                    _ => None,
                };
            }
            StreamKind::ThinkingEnd => {
                content = match block {
                    Some(ContentBlock::Thinking(t)) => Some(t.thinking.as_str()),
                    _ => None,
                };
            }
            StreamKind::ToolCallEnd => {
                tool_call = block.filter(|b| matches!(b, ContentBlock::ToolCall(_)));
            }
        }
        StreamEvent {
            kind: update.kind,
            content_index: update.content_index,
            delta,
            content,
            tool_call,
            partial: message,
        }
    }
}

impl Serialize for Listener<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            AgentEvent::TurnStart { .. } => TurnStart { kind: "turn_start" }.serialize(s),
            AgentEvent::TurnEnd {
                message,
                tool_results,
                ..
            } => TurnEnd {
                kind: "turn_end",
                message,
                tool_results,
            }
            .serialize(s),
            AgentEvent::MessageUpdate { message, update } => MessageUpdate {
                kind: "message_update",
                event: StreamEvent::new(update, message),
                message,
            }
            .serialize(s),
            // These already have the agent loop's (or AgentSession's) shape.
            event @ (AgentEvent::AgentStart
            | AgentEvent::MessageStart { .. }
            | AgentEvent::MessageEnd { .. }
            | AgentEvent::ToolExecutionStart { .. }
            | AgentEvent::ToolExecutionUpdate { .. }
            | AgentEvent::ToolExecutionEnd { .. }
            | AgentEvent::AgentEnd { .. }
            | AgentEvent::QueueUpdate { .. }
            | AgentEvent::SessionInfoChanged { .. }
            | AgentEvent::ThinkingLevelChanged { .. }
            | AgentEvent::AutoRetryStart { .. }
            | AgentEvent::AutoRetryEnd { .. }
            | AgentEvent::CompactionStart { .. }
            | AgentEvent::CompactionEnd { .. }) => event.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{AssistantMessage, TextContent, ThinkingContent, ToolCall};

    const USAGE: &str = r#""usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;

    fn reply(content: Vec<ContentBlock>) -> AgentMessage {
        AgentMessage::Assistant(AssistantMessage::new("faux", "faux", "faux-1", content, 7))
    }

    fn update(kind: StreamKind, delta: Option<&str>, content: Vec<ContentBlock>) -> AgentEvent {
        AgentEvent::MessageUpdate {
            message: reply(content),
            update: StreamUpdate {
                kind,
                content_index: content_index(kind),
                delta: delta.map(str::to_owned),
            },
        }
    }

    /// Text at 0, thinking at 1, the tool call at 2 in these tests.
    fn content_index(kind: StreamKind) -> usize {
        match kind {
            StreamKind::TextStart | StreamKind::TextDelta | StreamKind::TextEnd => 0,
            StreamKind::ThinkingStart | StreamKind::ThinkingDelta | StreamKind::ThinkingEnd => 1,
            StreamKind::ToolCallStart | StreamKind::ToolCallDelta | StreamKind::ToolCallEnd => 2,
        }
    }

    fn message_json(content: &str) -> String {
        format!(
            r#"{{"role":"assistant","content":[{content}],"api":"faux","provider":"faux","model":"faux-1",{USAGE},"stopReason":"stop","timestamp":7}}"#
        )
    }

    fn text(t: &str) -> ContentBlock {
        ContentBlock::Text(TextContent {
            text: t.into(),
            text_signature: None,
        })
    }

    fn thinking(t: &str) -> ContentBlock {
        ContentBlock::Thinking(ThinkingContent {
            thinking: t.into(),
            thinking_signature: None,
            redacted: None,
        })
    }

    fn call(arguments: serde_json::Value) -> ContentBlock {
        ContentBlock::ToolCall(ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments,
            thought_signature: None,
        })
    }

    #[test]
    fn turn_events_have_the_agent_loops_shape() {
        let start = AgentEvent::TurnStart {
            turn_index: 3,
            timestamp: 9,
        };
        assert_eq!(
            start.to_listener_json().unwrap(),
            r#"{"type":"turn_start"}"#
        );
        let end = AgentEvent::TurnEnd {
            turn_index: 3,
            message: reply(vec![text("hi")]),
            tool_results: Vec::new(),
        };
        assert_eq!(
            end.to_listener_json().unwrap(),
            format!(
                r#"{{"type":"turn_end","message":{},"toolResults":[]}}"#,
                message_json(r#"{"type":"text","text":"hi"}"#)
            )
        );
    }

    #[test]
    fn message_updates_carry_pi_ais_stream_event() {
        let args = serde_json::json!({"path": "a", "n": 1.0});
        let whole = vec![text("hi there"), thinking("hmm"), call(args.clone())];
        let cases = [
            (
                update(StreamKind::TextStart, None, vec![text("")]),
                r#"{"type":"text_start","contentIndex":0"#.to_owned(),
                r#"{"type":"text","text":""}"#.to_owned(),
            ),
            (
                update(StreamKind::TextDelta, Some("hi "), vec![text("hi ")]),
                r#"{"type":"text_delta","contentIndex":0,"delta":"hi ""#.to_owned(),
                r#"{"type":"text","text":"hi "}"#.to_owned(),
            ),
            (
                update(StreamKind::TextEnd, None, vec![text("hi there")]),
                r#"{"type":"text_end","contentIndex":0,"content":"hi there""#.to_owned(),
                r#"{"type":"text","text":"hi there"}"#.to_owned(),
            ),
            (
                update(
                    StreamKind::ThinkingDelta,
                    Some("hm"),
                    vec![text("hi there"), thinking("hm")],
                ),
                r#"{"type":"thinking_delta","contentIndex":1,"delta":"hm""#.to_owned(),
                r#"{"type":"text","text":"hi there"},{"type":"thinking","thinking":"hm"}"#
                    .to_owned(),
            ),
            (
                update(
                    StreamKind::ThinkingEnd,
                    None,
                    vec![text("hi there"), thinking("hmm")],
                ),
                r#"{"type":"thinking_end","contentIndex":1,"content":"hmm""#.to_owned(),
                r#"{"type":"text","text":"hi there"},{"type":"thinking","thinking":"hmm"}"#
                    .to_owned(),
            ),
            (
                update(StreamKind::ToolCallEnd, None, whole),
                r#"{"type":"toolcall_end","contentIndex":2,"toolCall":{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a","n":1}}"#.to_owned(),
                r#"{"type":"text","text":"hi there"},{"type":"thinking","thinking":"hmm"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a","n":1}}"#.to_owned(),
            ),
        ];
        for (event, head, content) in cases {
            let message = message_json(&content);
            assert_eq!(
                event.to_listener_json().unwrap(),
                format!(
                    r#"{{"type":"message_update","assistantMessageEvent":{head},"partial":{message}}},"message":{message}}}"#
                )
            );
        }
    }

    #[test]
    fn other_events_keep_their_shape_with_js_numbers() {
        let end = AgentEvent::MessageEnd {
            message: reply(Vec::new()),
        };
        assert_eq!(
            end.to_listener_json().unwrap(),
            format!(r#"{{"type":"message_end","message":{}}}"#, message_json(""))
        );
    }
}
