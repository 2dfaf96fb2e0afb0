//! Agent events as pi's session listeners get them: the JSON that `--mode json` and
//! `--mode rpc` print (spec: agent-and-events.md §1, §8, §9).
//!
//! pi's listeners receive pi-agent-core's events as they are, which differ from
//! [`AgentEvent`]'s own serialization in two places:
//!
//! - `turn_start` is `{"type":"turn_start"}` and `turn_end` has no `turnIndex`: the agent loop
//!   emits neither. `turnIndex` and `timestamp` belong to the *extension* events that
//!   AgentSession builds, which is why [`AgentEvent`] keeps them.
//! - Numbers are spelled as `JSON.stringify` spells them (`0`, not `0.0`).
//!
//! `message_update` already has pi's wire form (pi ≥ 0.84, spec §8.1): `{type, usage,
//! assistantMessageEvent}`, the stream event without its cumulative `partial`, so a line
//! costs what the update added.

use serde::{Serialize, Serializer};

use crate::agent::AgentEvent;
use crate::js::to_js_json;
use crate::message::AgentMessage;

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
            // These already have the agent loop's (or AgentSession's) shape.
            event @ (AgentEvent::AgentStart
            | AgentEvent::MessageStart { .. }
            | AgentEvent::MessageUpdate { .. }
            | AgentEvent::MessageEnd { .. }
            | AgentEvent::ToolExecutionStart { .. }
            | AgentEvent::ToolExecutionUpdate { .. }
            | AgentEvent::ToolExecutionEnd { .. }
            | AgentEvent::AgentEnd { .. }
            | AgentEvent::AgentSettled { .. }
            | AgentEvent::EntryAppended { .. }
            | AgentEvent::BashExecutionUpdate { .. }
            | AgentEvent::SummarizationRetryScheduled { .. }
            | AgentEvent::SummarizationRetryAttemptStart { .. }
            | AgentEvent::SummarizationRetryFinished
            | AgentEvent::ExtensionError { .. }
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
    use crate::agent::{StreamKind, StreamUpdate};
    use crate::message::{AssistantMessage, ContentBlock, TextContent, ToolCall, Usage};

    const USAGE: &str = r#""usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;

    fn reply(content: Vec<ContentBlock>) -> AgentMessage {
        AgentMessage::Assistant(AssistantMessage::new("faux", "faux", "faux-1", content, 7))
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

    /// The lines pi 1.6.0 printed for the same stream (rpc mode against scripts/mock-llm.py).
    #[test]
    fn message_updates_are_pis_delta_only_wire_form() {
        let usage = Usage {
            input: 10,
            output: 5,
            total_tokens: 15,
            ..Usage::default()
        };
        let call = ToolCall {
            id: "call_1".into(),
            name: "bash".into(),
            arguments: serde_json::json!({"command": "echo hi"}),
            thought_signature: None,
        };
        let cases = [
            (
                StreamUpdate::new(StreamKind::TextStart, 0, None),
                r#"{"type":"text_start","contentIndex":0}"#,
            ),
            (
                StreamUpdate::new(StreamKind::TextDelta, 0, Some("Let ".into())),
                r#"{"type":"text_delta","contentIndex":0,"delta":"Let "}"#,
            ),
            (
                StreamUpdate::new(StreamKind::ToolCallStart, 1, None)
                    .with_tool("call_1".into(), "bash".into()),
                r#"{"type":"toolcall_start","contentIndex":1,"id":"call_1","toolName":"bash"}"#,
            ),
            (
                StreamUpdate::new(StreamKind::TextEnd, 0, None).with_content("Let me look.".into()),
                r#"{"type":"text_end","contentIndex":0,"content":"Let me look."}"#,
            ),
            (
                StreamUpdate::new(StreamKind::ToolCallEnd, 1, None).with_tool_call(call),
                r#"{"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"echo hi"}}}"#,
            ),
        ];
        let usage_json = r#"{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
        for (update, event) in cases {
            let line = AgentEvent::MessageUpdate {
                usage: usage.clone(),
                update: update.clone(),
            }
            .to_listener_json()
            .unwrap();
            assert_eq!(
                line,
                format!(
                    r#"{{"type":"message_update","usage":{usage_json},"assistantMessageEvent":{event}}}"#
                )
            );
            // And back: the wire form is the event.
            let back: AgentEvent = serde_json::from_str(&line).unwrap();
            assert_eq!(
                back,
                AgentEvent::MessageUpdate {
                    usage: usage.clone(),
                    update
                }
            );
        }
    }

    #[test]
    fn session_events_of_pi_1_6_have_its_shape() {
        let cases = [
            (
                AgentEvent::AgentEnd {
                    messages: Vec::new(),
                    will_retry: true,
                },
                r#"{"type":"agent_end","messages":[],"willRetry":true}"#,
            ),
            (
                AgentEvent::AgentSettled { aborted: false },
                r#"{"type":"agent_settled","aborted":false}"#,
            ),
            (
                AgentEvent::BashExecutionUpdate {
                    id: Some(serde_json::json!("b1")),
                    delta: "hi\n".into(),
                },
                r#"{"type":"bash_execution_update","id":"b1","delta":"hi\n"}"#,
            ),
            (
                AgentEvent::SummarizationRetryAttemptStart {
                    source: "compaction".into(),
                    reason: Some("manual".into()),
                },
                r#"{"type":"summarization_retry_attempt_start","source":"compaction","reason":"manual"}"#,
            ),
            (
                AgentEvent::SummarizationRetryFinished,
                r#"{"type":"summarization_retry_finished"}"#,
            ),
            (
                AgentEvent::ExtensionError {
                    extension_path: "/x/ext.ts".into(),
                    event: "turn_end".into(),
                    error: "boom".into(),
                },
                r#"{"type":"extension_error","extensionPath":"/x/ext.ts","event":"turn_end","error":"boom"}"#,
            ),
        ];
        for (event, line) in cases {
            assert_eq!(event.to_listener_json().unwrap(), line);
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
