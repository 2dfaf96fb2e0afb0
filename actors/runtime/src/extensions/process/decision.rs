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
        return Verdict::Continue;
    };
    let verdict = match event.name() {
        "tool_call" => match (d.block, d.input) {
            (Some(block), _) => Verdict::Block(block.reason),
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
    let content: Vec<ContentBlock> = result
        .get("content")
        .cloned()
        .and_then(|c| serde_json::from_value(c).ok())
        .unwrap_or_default();
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
    })
}
