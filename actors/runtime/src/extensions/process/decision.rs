//! An extension's answers read as pith's values: an `intercept` decision as the [`Verdict`]
//! the event accepts, a `tool/call` answer as a tool result (spec: extensions.md §1.2 events
//! table, "Tools").

use serde_json::Value;

use pith_events::ext::Decision;
use pith_events::{ContentBlock, ExtensionEvent, UserContent};
use pith_tools::tool::{ToolError, ToolOutput};

use crate::extension::{InjectedMessage, Injection, ResultPatch, SuppliedSummary, Verdict};

/// A decision on the wire as the [`Verdict`] for `event`.
pub fn verdict_of(event: &ExtensionEvent, result: &Value) -> Verdict {
    let Ok(d) = serde_json::from_value::<Decision>(result.clone()) else {
        // A gate that answers something else than a decision blocks (fail closed).
        return match event.name() {
            "tool_call" => Verdict::Block(format!(
                "extension gate answered something that is not a decision: {result}"
            )),
            _ => Verdict::Continue,
        };
    };
    let verdict = match event.name() {
        "tool_call" => match (d.block_reason(), d.input) {
            (Some(reason), _) => Verdict::Block(reason),
            (None, Some(input)) => Verdict::ReplaceInput(input),
            (None, None) => Verdict::Continue,
        },
        "tool_result" => {
            let content = d
                .content
                .and_then(|c| serde_json::from_value::<Vec<ContentBlock>>(c).ok());
            if content.is_none() && d.details.is_none() && d.is_error.is_none() {
                Verdict::Continue
            } else {
                Verdict::PatchResult(ResultPatch {
                    content,
                    details: d.details,
                    is_error: d.is_error,
                })
            }
        }
        "input" => match d.action.as_deref() {
            Some("handled") => Verdict::Handled,
            Some("transform") => Verdict::Transform {
                text: d.text.unwrap_or_default(),
                images: d.images.and_then(|i| serde_json::from_value(i).ok()),
            },
            _ => Verdict::Continue,
        },
        "before_agent_start" => {
            let message = d.message.and_then(|m| {
                Some(InjectedMessage {
                    custom_type: m.get("customType")?.as_str()?.to_owned(),
                    content: serde_json::from_value::<UserContent>(m.get("content")?.clone())
                        .ok()?,
                    display: m.get("display").and_then(Value::as_bool).unwrap_or(true),
                    details: m.get("details").cloned(),
                })
            });
            if message.is_none() && d.append_system_prompt.is_none() && d.system_prompt.is_none() {
                Verdict::Continue
            } else {
                Verdict::Inject(Injection {
                    message,
                    append_system_prompt: d.append_system_prompt,
                    system_prompt: d.system_prompt,
                })
            }
        }
        _ => match (d.cancel, d.summary) {
            (Some(Value::Bool(false)) | None, Some(summary)) => Verdict::Summary(SuppliedSummary {
                summary,
                details: d.details,
            }),
            (Some(Value::String(reason)), _) => Verdict::Cancel(reason),
            (Some(Value::Bool(true)), _) => Verdict::Cancel("Cancelled by an extension".into()),
            _ => Verdict::Continue,
        },
    };
    if verdict.accepted_by(event) {
        verdict
    } else {
        Verdict::Continue
    }
}

/// A `tool/call` answer (`{content, details?, isError?}`) as a tool result.
pub(super) fn tool_output(result: &Value) -> Result<ToolOutput, ToolError> {
    let content: Vec<ContentBlock> = match result.get("content") {
        // A bare string is read as one text block.
        Some(Value::String(text)) => vec![ContentBlock::text(text.clone())],
        Some(c) => serde_json::from_value(c.clone()).unwrap_or_default(),
        None => Vec::new(),
    };
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text: Vec<String> = content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .collect();
        return Err(ToolError::Failed(text.join("\n")));
    }
    Ok(ToolOutput {
        content,
        details: result.get("details").cloned().unwrap_or(Value::Null),
        structured_content: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call() -> ExtensionEvent {
        ExtensionEvent::ToolCall {
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            input: json!({}),
            source: "builtin".into(),
            annotations: json!({}),
        }
    }

    #[test]
    fn a_gate_blocks_in_either_spelling_and_fails_closed_on_nonsense() {
        assert_eq!(
            verdict_of(&call(), &json!({"block": {"reason": "no"}})),
            Verdict::Block("no".into())
        );
        assert_eq!(
            verdict_of(&call(), &json!({"block": true, "reason": "pi"})),
            Verdict::Block("pi".into())
        );
        assert_eq!(verdict_of(&call(), &json!({})), Verdict::Continue);
        assert!(matches!(
            verdict_of(
                &call(),
                &json!({"block": "yes", "input": 3, "isError": "x"})
            ),
            Verdict::Block(_) | Verdict::ReplaceInput(_)
        ));
        assert!(matches!(
            verdict_of(&call(), &json!({"isError": "x"})),
            Verdict::Block(_)
        ));
    }

    #[test]
    fn a_tool_answer_with_a_string_content_is_one_text_block() {
        assert_eq!(
            tool_output(&json!({"content": "hi"})),
            Ok(ToolOutput {
                content: vec![ContentBlock::text("hi")],
                details: Value::Null,
                structured_content: None,
            })
        );
    }
}
