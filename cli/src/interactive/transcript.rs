//! The agent's events as transcript lines, as pi's chat shows them: replies streamed row by
//! row as their text arrives (thinking dimmed), tool calls with their arguments and results,
//! errors in red, retries and compactions as status lines.
//!
//! Text streams a row at a time: a row is printed when its line ends or when it no longer
//! fits the terminal, because the line editor prints whole lines above the prompt.

use std::collections::{HashMap, HashSet, VecDeque};

use pith_events::{
    AgentEvent, AgentMessage, AssistantMessage, ContentBlock, StreamKind, StreamUpdate,
};

use super::messages::{
    HIDDEN_THINKING, compaction_lines, message_lines, stop_lines, user_lines, user_text, wrap,
};
use pith_tools::sanitize::{for_terminal, split_incomplete_ansi_suffix};

use super::markdown::{self, Markdown};
use super::screen::split_row;
use super::{style, tools};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Thinking,
}

/// What the transcript keeps between events.
#[derive(Default)]
pub struct Transcript {
    /// The streamed block's text after its last printed row (already made safe for the
    /// terminal).
    partial: String,
    /// An escape sequence still unfinished at the end of the last delta: held back so that it
    /// is removed whole once the next delta completes it.
    pending_escape: String,
    /// The block streaming now.
    block: Option<Block>,
    /// Content indices of the streaming reply already shown (the rest is shown at its end).
    shown: HashSet<usize>,
    /// Tool calls already announced, by call id, with name and arguments: a call is shown
    /// once, when its arguments are complete or when it starts executing, whichever comes
    /// first.
    calls: HashMap<String, (String, serde_json::Value)>,
    /// The call whose lines were printed last: a result that does not follow its own call
    /// (parallel calls) repeats the call's first line so it can be told apart.
    last_call: Option<String>,
    /// Prompts typed at the editor: the typed line is on screen already, so their user
    /// message is not printed again.
    typed: VecDeque<String>,
    /// A manual compaction's failure was shown (its caller need not repeat it).
    compaction_error_shown: bool,
    /// The streaming text block's markdown state (an open code fence, a table's rows).
    markdown: Markdown,
    /// Ctrl-T: thinking blocks are shown as pi's `Thinking...` label only.
    pub hide_thinking: bool,
    /// Ctrl-O turned expansion on: tool results are shown in full (pi's
    /// `toolOutputExpanded`; what is printed already is laid out again, see
    /// [`super::scrollback`]).
    pub expand_tools: bool,
}

impl Transcript {
    /// The call (name and arguments) to repeat above the result of call `id`: a result that
    /// does not follow its own call (parallel calls) names it again; `None` when it follows.
    pub fn repeated_call(&self, id: &str) -> Option<(String, serde_json::Value)> {
        if self.last_call.as_deref() == Some(id) {
            return None;
        }
        self.calls.get(id).cloned()
    }

    /// A prompt typed at the editor is about to be sent.
    pub fn typed(&mut self, text: &str) {
        self.typed.push_back(text.to_owned());
    }

    /// A typed prompt was not sent after all.
    pub fn not_sent(&mut self, text: &str) {
        if let Some(i) = self.typed.iter().rposition(|t| t == text) {
            self.typed.remove(i);
        }
    }

    /// Whether a manual compaction's failure was shown since the last call (and forgets it).
    pub fn take_compaction_error_shown(&mut self) -> bool {
        std::mem::take(&mut self.compaction_error_shown)
    }

    /// The lines `event` adds, for a terminal `cols` wide.
    pub fn event(&mut self, event: &AgentEvent, cols: usize) -> Vec<String> {
        let mut out = Vec::new();
        match event {
            AgentEvent::MessageStart { message } => self.message_start(message, cols, &mut out),
            AgentEvent::MessageUpdate { update, .. } => self.update(update, cols, &mut out),
            AgentEvent::MessageEnd {
                message: AgentMessage::Assistant(a),
            } => self.reply_end(a, cols, &mut out),
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => self.announce(tool_call_id, tool_name, args, cols, &mut out),
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                duration_ms,
            } => {
                let lines = tools::result_view(
                    tool_name,
                    result,
                    *is_error,
                    self.expand_tools,
                    cols,
                    *duration_ms,
                );
                if let Some((name, args)) = self.repeated_call(tool_call_id)
                    && !lines.is_empty()
                {
                    out.push(String::new());
                    out.extend(tools::call_lines(&name, &args, cols).into_iter().take(1));
                }
                out.extend(lines);
                self.last_call = Some(tool_call_id.clone());
            }
            AgentEvent::AgentEnd { .. } => {
                self.flush(cols, &mut out);
                self.calls.clear();
            }
            AgentEvent::AutoRetryEnd {
                success: false,
                attempt,
                final_error,
            } => {
                let error = for_terminal(final_error.as_deref().unwrap_or("Unknown error"));
                self.status_line(
                    style::error(&format!(
                        "Error: Retry failed after {attempt} attempts: {error}"
                    )),
                    &mut out,
                );
            }
            AgentEvent::CompactionStart { reason } => {
                self.flush(cols, &mut out);
                let text = match reason.as_str() {
                    "manual" => "Compacting context...",
                    "overflow" => "Context overflow detected, Auto-compacting...",
                    _ => "Auto-compacting...",
                };
                self.status_line(style::muted(text), &mut out);
            }
            AgentEvent::CompactionEnd {
                reason,
                result,
                aborted,
                error_message,
                ..
            } => self.compaction_end(
                reason == "manual",
                result.as_ref().map(|r| (r.tokens_before, r.summary.as_str())),
                *aborted,
                error_message.as_deref().map(for_terminal).as_deref(),
                cols,
                &mut out,
            ),
            AgentEvent::AgentStart
            | AgentEvent::TurnStart { .. }
            | AgentEvent::TurnEnd { .. }
            | AgentEvent::MessageEnd { .. }
            | AgentEvent::ToolExecutionUpdate { .. }
            | AgentEvent::AgentSettled { .. }
            | AgentEvent::EntryAppended { .. }
            | AgentEvent::BashExecutionUpdate { .. }
            | AgentEvent::SummarizationRetryScheduled { .. }
            | AgentEvent::SummarizationRetryAttemptStart { .. }
            | AgentEvent::SummarizationRetryFinished
            | AgentEvent::ExtensionError { .. }
            | AgentEvent::AutoRetryEnd { .. }
            // The editor's status line counts the retry down (pi's `RetryStatusIndicator`).
            | AgentEvent::AutoRetryStart { .. }
            | AgentEvent::QueueUpdate { .. }
            | AgentEvent::SessionInfoChanged { .. }
            | AgentEvent::ThinkingLevelChanged { .. } => {}
        }
        out
    }

    fn message_start(&mut self, message: &AgentMessage, cols: usize, out: &mut Vec<String>) {
        match message {
            AgentMessage::User(u) => {
                let text = user_text(&u.content);
                if self.typed.front() == Some(&text) {
                    self.typed.pop_front();
                } else {
                    out.push(String::new());
                    out.extend(user_lines(&text, cols));
                    self.last_call = None;
                }
            }
            AgentMessage::Custom(_) => {
                out.extend(message_lines(
                    message,
                    cols,
                    self.expand_tools,
                    self.hide_thinking,
                ));
                self.last_call = None;
            }
            AgentMessage::Assistant(_) => {
                self.flush(cols, out);
                self.shown.clear();
                self.block = None;
                out.push(String::new());
            }
            // Results, commands and summaries are shown by their own events or commands;
            // system messages are never shown.
            AgentMessage::System(_)
            | AgentMessage::ToolResult(_)
            | AgentMessage::BashExecution(_)
            | AgentMessage::BranchSummary(_)
            | AgentMessage::CompactionSummary(_)
            | AgentMessage::Unknown(_) => {}
        }
    }

    fn update(&mut self, update: &StreamUpdate, cols: usize, out: &mut Vec<String>) {
        match update.kind {
            StreamKind::TextStart | StreamKind::ThinkingStart => {
                self.flush(cols, out);
                if !self.shown.is_empty() {
                    out.push(String::new());
                }
                self.shown.insert(update.content_index);
                self.block = Some(if update.kind == StreamKind::TextStart {
                    Block::Text
                } else {
                    Block::Thinking
                });
                if self.hide_thinking && update.kind == StreamKind::ThinkingStart {
                    out.push(style::thinking(HIDDEN_THINKING));
                }
            }
            StreamKind::ThinkingDelta if self.hide_thinking => {}
            StreamKind::TextDelta | StreamKind::ThinkingDelta => {
                if let Some(delta) = &update.delta {
                    self.shown.insert(update.content_index);
                    self.push(delta, cols, out);
                }
            }
            StreamKind::TextEnd | StreamKind::ThinkingEnd => {
                self.flush(cols, out);
                self.block = None;
            }
            StreamKind::ToolCallStart | StreamKind::ToolCallDelta => {}
            StreamKind::ToolCallEnd => {
                self.flush(cols, out);
                if let Some(call) = &update.tool_call {
                    self.shown.insert(update.content_index);
                    self.announce(&call.id, &call.name, &call.arguments, cols, out);
                }
            }
        }
    }

    /// A reply is complete: what did not stream is shown whole, then how it failed, if it did.
    fn reply_end(&mut self, reply: &AssistantMessage, cols: usize, out: &mut Vec<String>) {
        self.flush(cols, out);
        self.block = None;
        let mut first = self.shown.is_empty();
        for (i, block) in reply.content.iter().enumerate() {
            if self.shown.contains(&i) {
                continue;
            }
            let lines = match block {
                ContentBlock::ToolCall(call) => {
                    self.announce(&call.id, &call.name, &call.arguments, cols, out);
                    continue;
                }
                ContentBlock::Text(t) => markdown::render(&for_terminal(t.text.trim()), cols),
                ContentBlock::Thinking(_) if self.hide_thinking => {
                    vec![style::thinking(HIDDEN_THINKING)]
                }
                ContentBlock::Thinking(t) => wrap(t.thinking.trim(), cols, &style::thinking),
                ContentBlock::Image(_) | ContentBlock::Unknown(_) => continue,
            };
            if !first {
                out.push(String::new());
            }
            first = false;
            out.extend(lines);
            self.last_call = None;
        }
        self.shown.clear();
        let stop = stop_lines(reply.stop_reason, reply.error_message.as_deref());
        if !stop.is_empty() {
            self.last_call = None;
        }
        out.extend(stop);
    }

    /// pi's `compaction_end` handling: the summary's size, or why there is none.
    fn compaction_end(
        &mut self,
        manual: bool,
        compacted: Option<(u64, &str)>,
        aborted: bool,
        error: Option<&str>,
        cols: usize,
        out: &mut Vec<String>,
    ) {
        self.last_call = None;
        out.push(String::new());
        if aborted {
            // The caller of a manual compaction hears of the cancel here, once.
            self.compaction_error_shown |= manual;
            out.push(if manual {
                style::error("Error: Compaction cancelled")
            } else {
                style::dim("Auto-compaction cancelled")
            });
        } else if let Some((tokens, summary)) = compacted {
            out.extend(compaction_lines(tokens, summary, self.expand_tools, cols));
        } else if let Some(e) = error {
            if manual {
                self.compaction_error_shown = true;
                out.push(style::error(&format!("Error: {e}")));
            } else {
                out.push(style::error(e));
            }
        }
    }

    /// A status line of its own (retries, compactions).
    fn status_line(&mut self, line: String, out: &mut Vec<String>) {
        self.last_call = None;
        out.push(String::new());
        out.push(line);
    }

    fn announce(
        &mut self,
        id: &str,
        name: &str,
        args: &serde_json::Value,
        cols: usize,
        out: &mut Vec<String>,
    ) {
        if self.calls.contains_key(id) {
            return;
        }
        self.calls
            .insert(id.to_owned(), (name.to_owned(), args.clone()));
        out.push(String::new());
        out.extend(tools::call_lines(name, args, cols));
        self.last_call = Some(id.to_owned());
    }

    /// Adds streamed text: every finished line, then (thinking only) every row that no longer
    /// fits. Reply text is markdown, rendered a whole line at a time.
    fn push(&mut self, delta: &str, cols: usize, out: &mut Vec<String>) {
        self.last_call = None;
        // Model text: escape sequences and control characters never reach the terminal, even
        // when one is split across deltas.
        let mut text = std::mem::take(&mut self.pending_escape);
        text.push_str(delta);
        let (complete, pending) = split_incomplete_ansi_suffix(&text);
        self.partial.push_str(&for_terminal(complete));
        self.pending_escape = pending.to_owned();
        if self.block == Some(Block::Text) {
            while let Some(i) = self.partial.find('\n') {
                let line: String = self.partial.drain(..=i).collect();
                out.extend(self.markdown.line(line.trim_end_matches('\n'), cols));
            }
            // A line longer than the live rows show: its first words go to the transcript
            // now, so none of it is out of sight while it streams.
            while let Some((head, rest)) =
                self.markdown
                    .split_long(&self.partial, cols, super::editor::render::LIVE_ROWS)
            {
                out.extend(self.markdown.line(&head, cols));
                self.partial = rest;
            }
            return;
        }
        // One column spare: a row exactly as wide as the terminal wraps early in some.
        let cols = cols.saturating_sub(1);
        while let Some(i) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=i).collect();
            let mut rest = line.trim_end_matches('\n').to_owned();
            while let Some((row, more)) = split_row(&rest, cols) {
                out.push(self.styled(&row));
                rest = more;
            }
            out.push(self.styled(&rest));
        }
        while let Some((row, more)) = split_row(&self.partial, cols) {
            out.push(self.styled(&row));
            self.partial = more;
        }
    }

    /// The streaming reply's line that has not ended yet (already safe for the terminal):
    /// shown live below the transcript, since the transcript prints whole lines; empty when
    /// no reply text is streaming.
    pub fn live(&self) -> String {
        if self.block == Some(Block::Text) && !self.partial.is_empty() {
            // Inside a code block the line is indented as its rows will be.
            format!("{}{}", self.markdown.live_indent(), self.partial)
        } else {
            String::new()
        }
    }

    /// The rows of a table the streaming reply is still sending, drawn as if it ended here
    /// (pi redraws a growing table as it streams); empty otherwise.
    pub fn held_rows(&self, cols: usize) -> Vec<String> {
        if self.block == Some(Block::Text) {
            self.markdown.held_rows(cols)
        } else {
            Vec::new()
        }
    }

    /// Prints what is left of the streamed block.
    fn flush(&mut self, cols: usize, out: &mut Vec<String>) {
        let pending = std::mem::take(&mut self.pending_escape);
        self.partial.push_str(&for_terminal(&pending));
        if self.block == Some(Block::Text) {
            let rest = std::mem::take(&mut self.partial);
            if !rest.is_empty() {
                out.extend(self.markdown.line(&rest, cols));
            }
            out.extend(self.markdown.finish(cols));
            return;
        }
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            out.push(self.styled(&rest));
        }
    }

    fn styled(&self, row: &str) -> String {
        match self.block {
            Some(Block::Thinking) => style::thinking(row),
            Some(Block::Text) | None => row.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interactive::screen::width;
    use pith_events::{StopReason, ToolCall};

    fn reply(content: Vec<ContentBlock>) -> AssistantMessage {
        AssistantMessage::new("faux", "faux", "faux-1", content, 0)
    }

    /// A transcript in the middle of a reply's first text block, `cols` wide.
    fn text_streaming(cols: usize) -> Transcript {
        let mut t = Transcript::default();
        t.event(
            &AgentEvent::MessageStart {
                message: AgentMessage::Assistant(reply(Vec::new())),
            },
            cols,
        );
        t.event(&update(StreamKind::TextStart, 0, None), cols);
        t
    }

    fn update(kind: StreamKind, index: usize, delta: Option<&str>) -> AgentEvent {
        AgentEvent::MessageUpdate {
            usage: pith_events::Usage::default(),
            update: StreamUpdate::new(kind, index, delta.map(str::to_owned)),
        }
    }

    #[test]
    fn a_cut_tool_output_hints_at_ctrl_o_and_expansion_shows_the_next_ones_whole() {
        let text: String = (1..=30).map(|i| format!("row {i}\n")).collect();
        let end = |id: &str| AgentEvent::ToolExecutionEnd {
            tool_call_id: id.into(),
            tool_name: "mytool".into(),
            result: serde_json::json!({"content": [{"type": "text", "text": text}]}),
            is_error: false,
            duration_ms: None,
        };
        let plain = |rows: Vec<String>| -> String {
            let sgr = regex::Regex::new("\x1b\\[[0-9;]*m").unwrap_or_else(|e| panic!("{e}"));
            sgr.replace_all(&rows.join("\n"), "").into_owned()
        };
        let mut t = Transcript::default();
        let collapsed = plain(t.event(&end("a"), 80));
        assert!(
            collapsed.contains("... (10 more lines, ctrl+o to expand)"),
            "{collapsed}"
        );
        assert!(!collapsed.contains("row 30"), "{collapsed}");
        t.expand_tools = true;
        let expanded = plain(t.event(&end("b"), 80));
        assert!(expanded.contains("row 30"), "{expanded}");
        assert!(!expanded.contains("more lines"), "{expanded}");
    }

    #[test]
    fn an_escape_sequence_split_across_deltas_is_removed_whole() {
        let mut t = text_streaming(40);
        let mut rows = Vec::new();
        for delta in [
            "copy\u{1b}]5",
            "2;c;cHduZWQ=",
            "\u{7}done \u{1b}[3",
            "8;5;201mpink\n",
        ] {
            rows.extend(t.event(&update(StreamKind::TextDelta, 0, Some(delta)), 40));
        }
        rows.extend(t.event(&update(StreamKind::TextEnd, 0, None), 40));
        assert_eq!(rows, ["copydone pink"]);
    }

    #[test]
    fn reply_text_streams_a_line_at_a_time_as_markdown() {
        let mut t = Transcript::default();
        let start = AgentEvent::MessageStart {
            message: AgentMessage::Assistant(reply(Vec::new())),
        };
        assert_eq!(t.event(&start, 20), [""]);
        assert!(
            t.event(&update(StreamKind::TextStart, 0, None), 20)
                .is_empty()
        );
        assert!(
            t.event(&update(StreamKind::TextDelta, 0, Some("Hello wor")), 20)
                .is_empty()
        );
        assert_eq!(
            t.event(
                &update(StreamKind::TextDelta, 0, Some("ld\nthe rest of it goes on")),
                20
            ),
            ["Hello world"]
        );
        assert!(
            t.event(
                &update(StreamKind::TextDelta, 0, Some("\n\n**bold** end")),
                20
            ) == ["the rest of it goes", "on", ""]
        );
        assert_eq!(
            t.event(&update(StreamKind::TextEnd, 0, None), 20),
            ["\x1b[1mbold\x1b[0m end"]
        );
        let end = AgentEvent::MessageEnd {
            message: AgentMessage::Assistant(reply(vec![ContentBlock::text(
                "Hello world\nthe rest of it goes on\n\n**bold** end",
            )])),
        };
        assert!(t.event(&end, 20).is_empty());
    }

    #[test]
    fn a_line_streaming_in_a_code_block_is_indented_as_its_rows_will_be() {
        let mut t = text_streaming(40);
        t.event(
            &update(StreamKind::TextDelta, 0, Some("```\n    let b")),
            40,
        );
        assert_eq!(t.live(), "      let b");
        let rows = t.event(&update(StreamKind::TextDelta, 0, Some(" = 2;\n")), 40);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert!(
            rows[0].starts_with("  ") && rows[0].contains("    let b = 2;"),
            "{rows:?}"
        );
        t.event(&update(StreamKind::TextDelta, 0, Some("```\nafter")), 40);
        assert_eq!(t.live(), "after");
    }

    #[test]
    fn a_long_unfinished_line_goes_to_the_transcript_a_few_rows_at_a_time() {
        let mut t = text_streaming(40);
        let words: Vec<String> = (0..200).map(|i| format!("w{i:03}")).collect();
        let mut rows = Vec::new();
        for w in &words {
            rows.extend(t.event(
                &update(StreamKind::TextDelta, 0, Some(&format!("{w} "))),
                40,
            ));
        }
        // Most of the line is in the transcript before it ends; what is left fits the live
        // rows.
        assert!(rows.len() >= 17, "{rows:?}");
        // Whole rows: every row but the last is full (eight words of 40 columns).
        assert!(
            rows.iter().all(|r| r.split_whitespace().count() == 8),
            "{rows:?}"
        );
        assert!(rows.iter().all(|r| width(r) <= 40), "{rows:?}");
        assert!(t.live().len() <= 39 * 8, "{}", t.live());
        rows.extend(t.event(&update(StreamKind::TextEnd, 0, None), 40));
        // Every word exactly once, in order.
        let shown: Vec<&str> = rows.iter().flat_map(|r| r.split_whitespace()).collect();
        assert_eq!(shown, words.iter().map(String::as_str).collect::<Vec<_>>());
    }

    #[test]
    fn a_reply_that_did_not_stream_is_shown_whole_with_its_error() {
        let mut t = Transcript::default();
        let mut failed = reply(vec![ContentBlock::ToolCall(ToolCall {
            id: "c1".into(),
            name: "ls".into(),
            arguments: serde_json::json!({}),
            thought_signature: None,
        })]);
        failed.stop_reason = StopReason::Error;
        failed.error_message = Some("boom".into());
        let end = AgentEvent::MessageEnd {
            message: AgentMessage::Assistant(failed),
        };
        let lines = t.event(&end, 40);
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(lines[1].contains("ls"));
        assert!(lines[3].contains("Error: boom"));
    }

    #[test]
    fn typed_prompts_are_not_repeated() {
        let mut t = Transcript::default();
        t.typed("hi");
        let start = |text: &str| AgentEvent::MessageStart {
            message: AgentMessage::user_text(text, 0),
        };
        assert!(t.event(&start("hi"), 40).is_empty());
        assert_eq!(t.event(&start("steer"), 40).len(), 2);
    }
}
