//! Tool-call pairing: the context sent to a provider never holds a toolResult without its
//! toolCall, nor a toolCall without its toolResult.
//!
//! Providers reject both (Anthropic: "tool_use ids were found without tool_result blocks").
//! Sessions break the pairing when a run crashed between a tool call and its result, when a
//! reply was aborted after its tools ran, or when a pi file was edited by hand. The file is
//! never touched: the repair happens on the messages of each request.
//!
//! pi-ai's `transformMessages` (second pass) does part of this: it skips `error`/`aborted`
//! assistant replies and inserts an `isError` result `No result provided` for every call left
//! unanswered when the next assistant or user message (or the end) comes. pith does the same
//! and also drops results that answer no call of the assistant right before them, and second
//! results for one call, which pi-ai passes on to the provider.

use std::collections::HashSet;

use pith_events::{AgentMessage, ContentBlock, StopReason, ToolResultMessage};

/// The text of a result pith adds for a call that was never answered (pi-ai's wording).
pub const NO_RESULT: &str = "No result provided";

/// Repairs tool-call pairing in provider-bound messages (the output of
/// `pith_store::llm::convert_to_llm`): `error`/`aborted` assistant replies are left out, results
/// that answer no pending call are left out, and unanswered calls get an `isError` result
/// [`NO_RESULT`] stamped with their assistant's timestamp. Well-paired input comes back as it
/// was.
pub fn pair_tool_calls(messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
    let mut out = Vec::with_capacity(messages.len());
    let mut open = OpenCalls::default();
    for message in messages {
        match message {
            AgentMessage::Assistant(a) => {
                open.close(&mut out);
                if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                    continue;
                }
                open.timestamp = a.timestamp;
                open.calls = a
                    .tool_calls()
                    .map(|c| (c.id.clone(), c.name.clone()))
                    .collect();
                out.push(AgentMessage::Assistant(a));
            }
            AgentMessage::ToolResult(r) => {
                let pending = open.calls.iter().any(|(id, _)| *id == r.tool_call_id);
                if pending && open.answered.insert(r.tool_call_id.clone()) {
                    out.push(AgentMessage::ToolResult(r));
                }
            }
            other => {
                open.close(&mut out);
                out.push(other);
            }
        }
    }
    open.close(&mut out);
    out
}

/// The tool calls of the last assistant reply and which of them have a result.
#[derive(Default)]
struct OpenCalls {
    calls: Vec<(String, String)>,
    answered: HashSet<String>,
    timestamp: i64,
}

impl OpenCalls {
    fn close(&mut self, out: &mut Vec<AgentMessage>) {
        for (id, name) in self.calls.drain(..) {
            if !self.answered.contains(&id) {
                out.push(AgentMessage::ToolResult(ToolResultMessage {
                    tool_call_id: id,
                    tool_name: name,
                    content: vec![ContentBlock::text(NO_RESULT)],
                    details: None,
                    is_error: true,
                    duration_ms: None,
                    timestamp: self.timestamp,
                }));
            }
        }
        self.answered.clear();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pith_events::AssistantMessage;
    use serde_json::json;

    fn assistant(calls: &[&str], stop: StopReason) -> AgentMessage {
        let mut content = vec![ContentBlock::text("x")];
        for id in calls {
            content.push(
                serde_json::from_value(
                    json!({"type":"toolCall","id":id,"name":format!("tool-{id}"),"arguments":{}}),
                )
                .unwrap(),
            );
        }
        let mut a = AssistantMessage::new("faux", "faux", "faux-1", content, 7);
        a.stop_reason = stop;
        AgentMessage::Assistant(a)
    }

    fn result(id: &str) -> AgentMessage {
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: format!("tool-{id}"),
            content: vec![ContentBlock::text("ok")],
            details: None,
            is_error: false,
            duration_ms: None,
            timestamp: 8,
        })
    }

    fn user() -> AgentMessage {
        AgentMessage::user_text("u", 1)
    }

    /// `U`, `A(ids)`, `A!` (aborted), `R(id)`, `R?(id)` (synthetic).
    fn shape(messages: &[AgentMessage]) -> Vec<String> {
        messages
            .iter()
            .map(|m| match m {
                AgentMessage::User(_) => "U".to_owned(),
                AgentMessage::Assistant(a) => {
                    let ids: Vec<&str> = a.tool_calls().map(|c| c.id.as_str()).collect();
                    let mark = if a.stop_reason == StopReason::Aborted {
                        "!"
                    } else {
                        ""
                    };
                    format!("A{mark}({})", ids.join(","))
                }
                AgentMessage::ToolResult(r) => {
                    let synthetic = r.content == vec![ContentBlock::text(NO_RESULT)];
                    let mark = if synthetic { "?" } else { "" };
                    format!("R{mark}({})", r.tool_call_id)
                }
                _ => "other".to_owned(),
            })
            .collect()
    }

    #[test]
    fn repairs_each_way_a_pairing_breaks() {
        use StopReason::{Aborted, Stop, ToolUse};
        let cases: Vec<(Vec<AgentMessage>, &[&str])> = vec![
            // Well paired: unchanged.
            (
                vec![
                    user(),
                    assistant(&["a", "b"], ToolUse),
                    result("a"),
                    result("b"),
                    assistant(&[], Stop),
                ],
                &["U", "A(a,b)", "R(a)", "R(b)", "A()"],
            ),
            // Crashed before the results: synthetic ones at the end, in call order.
            (
                vec![user(), assistant(&["a", "b"], ToolUse)],
                &["U", "A(a,b)", "R?(a)", "R?(b)"],
            ),
            // One of two answered, then the user spoke: the other is filled in before them.
            (
                vec![assistant(&["a", "b"], ToolUse), result("b"), user()],
                &["A(a,b)", "R(b)", "R?(a)", "U"],
            ),
            // An aborted reply leaves with the results of its calls.
            (
                vec![user(), assistant(&["a"], Aborted), result("a"), user()],
                &["U", "U"],
            ),
            // A result answering nothing, and a second result for one call.
            (
                vec![
                    user(),
                    result("z"),
                    assistant(&["a"], ToolUse),
                    result("a"),
                    result("a"),
                    result("q"),
                ],
                &["U", "A(a)", "R(a)"],
            ),
            // A result that arrives after the user interrupted answers nothing any more.
            (
                vec![assistant(&["a"], ToolUse), user(), result("a")],
                &["A(a)", "R?(a)", "U"],
            ),
        ];
        for (input, want) in cases {
            let before = shape(&input);
            assert_eq!(shape(&pair_tool_calls(input)), want, "from {before:?}");
        }
    }

    #[test]
    fn synthetic_results_carry_the_call_name_and_its_replys_time() {
        let out = pair_tool_calls(vec![assistant(&["a"], StopReason::ToolUse)]);
        let AgentMessage::ToolResult(r) = &out[1] else {
            panic!("{out:?}")
        };
        assert_eq!(
            (r.tool_name.as_str(), r.is_error, r.timestamp),
            ("tool-a", true, 7)
        );
    }

    /// Every sequence of up to 5 messages from a small alphabet comes out paired.
    #[test]
    fn every_short_sequence_comes_out_paired() {
        let alphabet = [
            user(),
            assistant(&[], StopReason::Stop),
            assistant(&["a"], StopReason::ToolUse),
            assistant(&["a", "b"], StopReason::ToolUse),
            assistant(&["b"], StopReason::Aborted),
            result("a"),
            result("b"),
        ];
        let n = alphabet.len();
        let mut checked = 0;
        for len in 0..=5u32 {
            for code in 0..n.pow(len) {
                let mut c = code;
                let input: Vec<AgentMessage> = (0..len)
                    .map(|_| {
                        let m = alphabet[c % n].clone();
                        c /= n;
                        m
                    })
                    .collect();
                let out = pair_tool_calls(input.clone());
                assert_paired(&out, &input);
                assert_eq!(
                    pair_tool_calls(out.clone()),
                    out,
                    "idempotent for {:?}",
                    shape(&input)
                );
                checked += 1;
            }
        }
        assert_eq!(checked, (0..=5).map(|l| 7usize.pow(l)).sum::<usize>());
    }

    fn assert_paired(out: &[AgentMessage], input: &[AgentMessage]) {
        let mut i = 0;
        while i < out.len() {
            match &out[i] {
                AgentMessage::ToolResult(_) => panic!(
                    "result without its call: {:?} from {:?}",
                    shape(out),
                    shape(input)
                ),
                AgentMessage::Assistant(a) => {
                    assert!(!matches!(
                        a.stop_reason,
                        StopReason::Error | StopReason::Aborted
                    ));
                    let mut calls: Vec<&str> = a.tool_calls().map(|c| c.id.as_str()).collect();
                    let mut results = Vec::new();
                    while let Some(AgentMessage::ToolResult(r)) = out.get(i + 1) {
                        results.push(r.tool_call_id.as_str());
                        i += 1;
                    }
                    calls.sort_unstable();
                    results.sort_unstable();
                    assert_eq!(calls, results, "{:?} from {:?}", shape(out), shape(input));
                }
                _ => {}
            }
            i += 1;
        }
    }
}
