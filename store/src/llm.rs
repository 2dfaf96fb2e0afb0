//! `convertToLlm`: context messages as the model sees them (spec: tree-and-context.md §7.3).

use pith_events::{AgentMessage, BashExecutionMessage, ContentBlock, UserContent, UserMessage};

/// pi's `COMPACTION_SUMMARY_PREFIX`.
pub const COMPACTION_SUMMARY_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// pi's `COMPACTION_SUMMARY_SUFFIX`.
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
/// pi's `BRANCH_SUMMARY_PREFIX`.
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
/// pi's `BRANCH_SUMMARY_SUFFIX`.
pub const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// The text a user `!command` contributes (`bashExecutionToText`).
pub fn bash_execution_text(b: &BashExecutionMessage) -> String {
    let mut text = format!("Ran `{}`\n", b.command);
    if b.output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!("```\n{}\n```", b.output));
    }
    if b.cancelled {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = b.exit_code.filter(|c| *c != 0) {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if let (true, Some(path)) = (b.truncated, &b.full_output_path) {
        text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
    }
    text
}

fn user_text(text: String, timestamp: i64) -> AgentMessage {
    AgentMessage::User(UserMessage {
        content: UserContent::Blocks(vec![ContentBlock::text(text)]),
        timestamp,
    })
}

/// Converts context messages to the messages a provider accepts: system, user, assistant
/// and toolResult messages pass unchanged (a provider that takes no system message in the
/// middle of a conversation replays them, spec: tree-and-context.md §7.3); bash executions
/// and summaries become user text, custom messages become user messages, `!!` executions and
/// unknown roles are dropped.
pub fn convert_to_llm(messages: &[AgentMessage]) -> Vec<AgentMessage> {
    messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::System(_)
            | AgentMessage::User(_)
            | AgentMessage::Assistant(_)
            | AgentMessage::ToolResult(_) => Some(m.clone()),
            AgentMessage::BashExecution(b) => (b.exclude_from_context != Some(true))
                .then(|| user_text(bash_execution_text(b), b.timestamp)),
            AgentMessage::Custom(c) => Some(AgentMessage::User(UserMessage {
                content: match &c.content {
                    UserContent::Text(t) => {
                        UserContent::Blocks(vec![ContentBlock::text(t.clone())])
                    }
                    blocks => blocks.clone(),
                },
                timestamp: c.timestamp.unwrap_or(0),
            })),
            AgentMessage::BranchSummary(b) => Some(user_text(
                format!(
                    "{BRANCH_SUMMARY_PREFIX}{}{BRANCH_SUMMARY_SUFFIX}",
                    b.summary
                ),
                b.timestamp.unwrap_or(0),
            )),
            AgentMessage::CompactionSummary(c) => Some(user_text(
                format!(
                    "{COMPACTION_SUMMARY_PREFIX}{}{COMPACTION_SUMMARY_SUFFIX}",
                    c.summary
                ),
                c.timestamp.unwrap_or(0),
            )),
            AgentMessage::Unknown(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_rendering_matches_pi() {
        // tree-and-context.md §7.3, verified against pi.
        let b = BashExecutionMessage {
            command: "echo hi; exit 3".into(),
            output: "hi\n".into(),
            exit_code: Some(3),
            cancelled: false,
            truncated: false,
            full_output_path: None,
            timestamp: 1,
            exclude_from_context: None,
        };
        assert_eq!(
            bash_execution_text(&b),
            "Ran `echo hi; exit 3`\n```\nhi\n\n```\n\nCommand exited with code 3"
        );
        let hidden = BashExecutionMessage {
            exclude_from_context: Some(true),
            ..b
        };
        assert!(convert_to_llm(&[AgentMessage::BashExecution(hidden)]).is_empty());
    }
}
