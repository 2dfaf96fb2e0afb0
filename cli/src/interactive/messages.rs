//! Whole messages as the transcript shows them: the history printed when a session is opened,
//! resumed, forked or navigated (pi's `renderInitialMessages`), and the messages that arrive
//! whole (prompts the user did not type here, custom messages, replies that did not stream).

use pith_events::{AgentMessage, BashExecutionMessage, ContentBlock, StopReason, UserContent};
use serde_json::json;

use pith_tools::sanitize::for_terminal;

use super::screen::{split_row, thousands, truncate};
use super::{style, tools};

/// What a hidden thinking block shows (pi's `hiddenThinkingLabel`).
pub const HIDDEN_THINKING: &str = "Thinking...";

/// pi's `PREVIEW_LINES` of a user command's output.
const COMMAND_PREVIEW: usize = 20;

/// The lines of `message`, starting with a blank line (pi's `Spacer(1)`); empty for messages
/// pi does not show (hidden custom messages, system messages, unknown roles). `expanded`
/// (Ctrl+O) shows tool output, compaction and branch summaries whole; `hide_thinking`
/// (Ctrl+T) shows thinking blocks as [`HIDDEN_THINKING`].
pub fn message_lines(
    message: &AgentMessage,
    cols: usize,
    expanded: bool,
    hide_thinking: bool,
) -> Vec<String> {
    let mut out = vec![String::new()];
    match message {
        AgentMessage::User(u) => out.extend(user_lines(&u.content.joined_text(""), cols)),
        AgentMessage::Assistant(a) => {
            let mut first = true;
            for block in &a.content {
                if !first {
                    out.push(String::new());
                }
                first = false;
                match block {
                    ContentBlock::Text(t) => {
                        out.extend(super::markdown::render(&for_terminal(t.text.trim()), cols))
                    }
                    ContentBlock::Thinking(_) if hide_thinking => {
                        out.push(style::thinking(HIDDEN_THINKING))
                    }
                    ContentBlock::Thinking(t) => {
                        out.extend(wrap(t.thinking.trim(), cols, &style::thinking))
                    }
                    ContentBlock::ToolCall(c) => {
                        out.extend(tools::call_lines(&c.name, &c.arguments, cols))
                    }
                    ContentBlock::Image(_) => out.push(style::muted("[image]")),
                    ContentBlock::Unknown(_) => first = true,
                }
            }
            out.extend(stop_lines(a.stop_reason, a.error_message.as_deref()));
        }
        AgentMessage::ToolResult(r) => {
            let result = json!({"content": r.content, "details": r.details});
            let lines = tools::result_view(
                &r.tool_name,
                &result,
                r.is_error,
                expanded,
                cols,
                r.duration_ms,
            );
            if lines.is_empty() {
                return Vec::new();
            }
            // Results follow their call directly, as in pi's tool box.
            out = lines;
        }
        AgentMessage::BashExecution(b) => out.extend(user_command_lines(b, cols)),
        AgentMessage::Custom(c) => {
            if !c.display {
                return Vec::new();
            }
            out.push(style::label(&style::bold(&format!(
                "[{}]",
                for_terminal(&c.custom_type)
            ))));
            out.extend(wrap(&c.content.joined_text("\n"), cols, &|s| s.into()));
        }
        AgentMessage::BranchSummary(b) => out.extend(summary_lines(
            "[branch]",
            "Branch summary",
            "Branch Summary",
            &b.summary,
            expanded,
            cols,
        )),
        AgentMessage::CompactionSummary(c) => out.extend(compaction_lines(
            c.tokens_before,
            &c.summary,
            expanded,
            cols,
        )),
        // pi's transcript does not show the prompt and tool state it records.
        AgentMessage::System(_) | AgentMessage::Unknown(_) => return Vec::new(),
    }
    out
}

/// A prompt, shown as it was typed at the editor (`> ` and the text).
pub fn user_lines(text: &str, cols: usize) -> Vec<String> {
    wrap(text, cols.saturating_sub(2), &|s| s.into())
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                style::bold(&format!("> {l}"))
            } else {
                style::bold(&format!("  {l}"))
            }
        })
        .collect()
}

/// The end of a failed or aborted reply (pi's assistant message component).
pub fn stop_lines(stop: StopReason, error: Option<&str>) -> Vec<String> {
    let error = error.map(for_terminal);
    let error = error.as_deref();
    match stop {
        StopReason::Aborted => {
            let text = match error {
                Some(e) if e != "Request was aborted" => e,
                _ => "Operation aborted",
            };
            vec![String::new(), style::error(text)]
        }
        StopReason::Error => vec![
            String::new(),
            style::error(&format!("Error: {}", error.unwrap_or("Unknown error"))),
        ],
        _ => Vec::new(),
    }
}

/// pi's compaction summary component: collapsed with pi's hint, or (`expanded`) its header
/// and the summary rendered as markdown.
pub fn compaction_lines(
    tokens_before: u64,
    summary: &str,
    expanded: bool,
    cols: usize,
) -> Vec<String> {
    let size = format!("Compacted from {} tokens", thousands(tokens_before));
    summary_lines("[compaction]", &size, &size, summary, expanded, cols)
}

/// A summary component of pi's (compaction, branch): the `label` row, then `collapsed` with
/// the Ctrl+O hint, or `header` in bold and the summary as markdown.
fn summary_lines(
    label: &str,
    collapsed: &str,
    header: &str,
    summary: &str,
    expanded: bool,
    cols: usize,
) -> Vec<String> {
    let mut out = vec![style::label(&style::bold(label))];
    if expanded {
        out.push(style::bold(header));
        out.push(String::new());
        out.extend(super::markdown::render(&for_terminal(summary), cols));
    } else {
        out.push(format!("{collapsed} {}", style::dim("(ctrl+o to expand)")));
    }
    out
}

/// A `!command` and its output (pi's bash execution component, collapsed): `$ command`, the
/// last 20 lines, then `(cancelled)`, `(exit N)` and where the full output is.
pub fn user_command_lines(run: &BashExecutionMessage, cols: usize) -> Vec<String> {
    let header = format!("$ {}", for_terminal(&run.command));
    let mut out = vec![if run.exclude_from_context == Some(true) {
        style::bold(&style::muted(&truncate(&header, cols)))
    } else {
        style::bold(&truncate(&header, cols))
    }];
    // Stripped when it was recorded by pith; a session file can hold anything.
    let output = for_terminal(&run.output);
    let output = output.trim_end();
    let lines: Vec<&str> = if output.is_empty() {
        Vec::new()
    } else {
        output.lines().collect()
    };
    let hidden = lines.len().saturating_sub(COMMAND_PREVIEW);
    out.extend(
        lines[hidden..]
            .iter()
            .map(|l| style::muted(&truncate(l, cols))),
    );
    let mut status = Vec::new();
    if hidden > 0 {
        status.push(style::muted(&format!("... {hidden} more lines")));
    }
    if run.cancelled {
        status.push(style::warning("(cancelled)"));
    } else if let Some(code) = run.exit_code.filter(|c| *c != 0) {
        status.push(style::error(&format!("(exit {code})")));
    }
    if let Some(path) = &run.full_output_path {
        status.push(style::warning(&format!(
            "Output truncated. Full output: {}",
            for_terminal(path)
        )));
    }
    if !status.is_empty() {
        out.push(status.join(" "));
    }
    out
}

/// `text` broken into rows for a terminal `cols` wide (at spaces where possible), each styled.
/// One column stays free: a row exactly as wide as the terminal wraps early in some.
///
/// The text comes from a model, a session file or a user: escape sequences and control
/// characters are removed first (`pith_tools::sanitize::for_terminal`).
pub fn wrap(text: &str, cols: usize, styled: &dyn Fn(&str) -> String) -> Vec<String> {
    let cols = cols.saturating_sub(1);
    let mut out = Vec::new();
    for line in for_terminal(text).split('\n') {
        let mut rest = line.to_owned();
        while let Some((row, more)) = split_row(&rest, cols) {
            out.push(styled(&row));
            rest = more;
        }
        out.push(styled(&rest));
    }
    out
}

/// The text of a user message for comparisons (pi joins text blocks with `""`).
pub fn user_text(content: &UserContent) -> String {
    content.joined_text("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(rows: &[String]) -> String {
        let sgr = regex::Regex::new("\x1b\\[[0-9;]*m").unwrap_or_else(|e| panic!("{e}"));
        sgr.replace_all(&rows.join("\n"), "").into_owned()
    }

    #[test]
    fn summaries_are_collapsed_with_pis_hint_and_expanded_whole() {
        let summary = "## Goal\nFix the **lock**.";
        let collapsed = plain(&compaction_lines(13_000, summary, false, 60));
        assert_eq!(
            collapsed,
            "[compaction]\nCompacted from 13,000 tokens (ctrl+o to expand)"
        );
        let expanded = plain(&compaction_lines(13_000, summary, true, 60));
        assert!(
            expanded.starts_with("[compaction]\nCompacted from 13,000 tokens\n"),
            "{expanded}"
        );
        assert!(
            expanded.contains("Goal") && expanded.contains("lock"),
            "{expanded}"
        );
        assert!(!expanded.contains("**"), "{expanded}");
        let branch = plain(&summary_lines(
            "[branch]",
            "Branch summary",
            "Branch Summary",
            "tried X",
            false,
            60,
        ));
        assert_eq!(branch, "[branch]\nBranch summary (ctrl+o to expand)");
    }
}
