//! Compaction's pure half: token accounting, the cut point, the preparation and file-operation
//! tracking (spec: compaction.md §1–2, §4–6). Summary generation and the triggers belong to the
//! Compactor actor.

use std::collections::BTreeSet;

use serde_json::Value;

use pith_events::{AgentMessage, ContentBlock, EntryType, StopReason, Usage, UserContent};

use crate::context::build_session_context;
use crate::entry::{Entry, Role};
use crate::tree::{Leaf, SessionTree};

/// `compaction.*` settings with pi's defaults (spec: compaction.md §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionSettings {
    /// Auto-compaction on/off (`/compact` always works).
    pub enabled: bool,
    /// Tokens kept free in the context window.
    pub reserve_tokens: u64,
    /// Approximate size of the recent tail kept verbatim, in tokens.
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}

/// A JavaScript string's `length`: UTF-16 code units.
fn js_len(s: &str) -> u64 {
    s.encode_utf16().count() as u64
}

/// `calculateContextTokens(usage)`: `totalTokens` if non-zero, else the sum of its parts.
pub fn calculate_context_tokens(usage: &Usage) -> u64 {
    if usage.total_tokens != 0 {
        usage.total_tokens
    } else {
        usage.input + usage.output + usage.cache_read + usage.cache_write
    }
}

fn blocks_chars(blocks: &[ContentBlock], image_chars: u64) -> u64 {
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => js_len(&t.text),
            ContentBlock::Image(_) => image_chars,
            _ => 0,
        })
        .sum()
}

fn content_chars(content: &UserContent, image_chars: u64) -> u64 {
    match content {
        UserContent::Text(s) => js_len(s),
        UserContent::Blocks(blocks) => blocks_chars(blocks, image_chars),
    }
}

/// `estimateTokens(message)`: `ceil(chars / 4)` with pi's per-role character counts
/// (spec: compaction.md §2.2; images count 0 in user messages and 4800 chars elsewhere; a
/// system message counts its content, every section's text and its `toolsAdded` as JSON).
pub fn estimate_tokens(message: &AgentMessage) -> u64 {
    let chars = match message {
        AgentMessage::System(s) => {
            let sections: u64 = s
                .sections
                .iter()
                .flat_map(|m| m.values())
                .filter_map(Value::as_str)
                .map(js_len)
                .sum();
            let tools = s.tools_added.as_ref().map_or(0, |t| {
                js_len(&pith_events::js::to_js_json(t).unwrap_or_default())
            });
            content_chars(&s.content, 4800) + sections + tools
        }
        AgentMessage::User(u) => content_chars(&u.content, 0),
        AgentMessage::Assistant(a) => a
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => js_len(&t.text),
                ContentBlock::Thinking(t) => js_len(&t.thinking),
                ContentBlock::ToolCall(c) => {
                    js_len(&c.name)
                        + js_len(&pith_events::js::to_js_json(&c.arguments).unwrap_or_default())
                }
                _ => 0,
            })
            .sum(),
        AgentMessage::Custom(c) => content_chars(&c.content, 4800),
        AgentMessage::ToolResult(t) => blocks_chars(&t.content, 4800),
        AgentMessage::BashExecution(b) => js_len(&b.command) + js_len(&b.output),
        AgentMessage::BranchSummary(b) => js_len(&b.summary),
        AgentMessage::CompactionSummary(c) => js_len(&c.summary),
        AgentMessage::Unknown(_) => 0,
    };
    chars.div_ceil(4)
}

/// Result of [`estimate_context_tokens`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextTokens {
    /// The estimate.
    pub tokens: u64,
    /// Tokens reported by the last usable assistant's usage (0 without one).
    pub usage_tokens: u64,
    /// Estimated tokens of the messages after it.
    pub trailing_tokens: u64,
    /// Index of that assistant message.
    pub last_usage_index: Option<usize>,
}

/// `estimateContextTokens(messages)`: the last assistant reply that neither failed nor was
/// aborted gives the base (its usage), the messages after it are estimated; without one,
/// everything is estimated (spec: compaction.md §2.3).
pub fn estimate_context_tokens(messages: &[AgentMessage]) -> ContextTokens {
    let last = messages.iter().rposition(|m| {
        matches!(m, AgentMessage::Assistant(a) if !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted))
    });
    match last {
        None => {
            let tokens = messages.iter().map(estimate_tokens).sum();
            ContextTokens {
                tokens,
                usage_tokens: 0,
                trailing_tokens: tokens,
                last_usage_index: None,
            }
        }
        Some(i) => {
            let usage_tokens = match &messages[i] {
                AgentMessage::Assistant(a) => calculate_context_tokens(&a.usage),
                _ => 0,
            };
            let trailing_tokens = messages[i + 1..].iter().map(estimate_tokens).sum();
            ContextTokens {
                tokens: usage_tokens + trailing_tokens,
                usage_tokens,
                trailing_tokens,
                last_usage_index: Some(i),
            }
        }
    }
}

/// `shouldCompact`: enabled and over `context_window - reserve_tokens` (a window of 0 makes
/// every positive count trigger, as in pi).
pub fn should_compact(tokens: u64, context_window: u64, settings: &CompactionSettings) -> bool {
    settings.enabled
        && (tokens as i128) > (context_window as i128 - settings.reserve_tokens as i128)
}

/// Where a compaction cuts (spec: compaction.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutPoint {
    /// Index (into the path) of the first entry kept verbatim.
    pub first_kept_index: usize,
    /// Start of the turn the cut falls into, when it splits one.
    pub turn_start_index: Option<usize>,
    /// Whether the cut falls inside a turn (its beginning is summarized separately).
    pub is_split_turn: bool,
}

fn role_is(e: &Entry, roles: &[Role]) -> bool {
    e.kind() == &EntryType::Message && e.role().is_some_and(|r| roles.contains(r))
}

/// A place a compaction may start keeping: a message that is not a tool result (a cut never
/// separates a tool result from its call), a branch summary or a custom message.
fn is_cut_point(e: &Entry) -> bool {
    match e.kind() {
        EntryType::Message => match e.role() {
            // A system message is prompt state, not conversation (pi ≥ 0.86).
            Some(Role::ToolResult | Role::System) => false,
            Some(Role::Other(r)) => matches!(&**r, "branchSummary" | "compactionSummary"),
            Some(_) => true,
            None => false,
        },
        EntryType::BranchSummary | EntryType::CustomMessage => true,
        _ => false,
    }
}

/// `findCutPoint(entries, start, end, keepRecentTokens)` exactly as pi chooses it, including
/// its quirk of classifying a cut pulled onto a preceding metadata entry as a split turn.
/// `messages[i]` is entry `i`'s decoded message (for `message` entries).
///
/// pi ≥ 0.87 walks the projection (compaction.md §5.1): entries `hidden` by a context edit
/// are no cut points and weigh nothing, and when all that would be kept after the cut is a
/// hidden recovery attempt (the hidden reply, its results, their edits and metadata) the cut
/// moves one entry further, so the abandoned attempt's turn is summarized instead of kept.
pub fn find_cut_point(
    path: &[&Entry],
    messages: &[Option<AgentMessage>],
    hidden: &[bool],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
) -> CutPoint {
    let hidden_at = |i: usize| hidden.get(i).copied().unwrap_or(false);
    let cut_points: Vec<usize> = (start..end)
        .filter(|&i| is_cut_point(path[i]) && !hidden_at(i))
        .collect();
    let Some(&first) = cut_points.first() else {
        return CutPoint {
            first_kept_index: start,
            turn_start_index: None,
            is_split_turn: false,
        };
    };
    let mut cut = first;
    let mut total = 0;
    let mut reached = false;
    for i in (start..end).rev() {
        if path[i].kind() != &EntryType::Message || hidden_at(i) {
            continue;
        }
        total += messages[i].as_ref().map_or(0, estimate_tokens);
        if total >= keep_recent_tokens {
            if let Some(&c) = cut_points.iter().find(|&&c| c >= i) {
                cut = c;
            }
            reached = true;
            break;
        }
    }
    // Only a hidden attempt (and the entries that hid it) after the cut: keep from the
    // attempt, so the turn that led to it becomes the split turn's prefix.
    let only_hidden_after = (cut + 1..end).all(|i| {
        hidden_at(i)
            || !matches!(
                path[i].kind(),
                EntryType::Message
                    | EntryType::Compaction
                    | EntryType::CustomMessage
                    | EntryType::BranchSummary
            )
    });
    if reached && cut + 1 < end && only_hidden_after && (cut + 1..end).any(hidden_at) {
        cut += 1;
    }
    // The pull-back passes metadata and entries whose messages are hidden.
    while cut > start
        && (hidden_at(cut - 1)
            || !matches!(
                path[cut - 1].kind(),
                EntryType::Message | EntryType::Compaction
            ))
    {
        cut -= 1;
    }
    if role_is(path[cut], &[Role::User]) {
        return CutPoint {
            first_kept_index: cut,
            turn_start_index: None,
            is_split_turn: false,
        };
    }
    let turn_start = (start..=cut).rev().find(|&i| {
        let e = path[i];
        matches!(
            e.kind(),
            EntryType::BranchSummary | EntryType::CustomMessage
        ) || role_is(e, &[Role::User, Role::BashExecution])
    });
    CutPoint {
        first_kept_index: cut,
        turn_start_index: turn_start,
        is_split_turn: turn_start.is_some(),
    }
}

/// Files touched by tool calls, for the summary's `<read-files>`/`<modified-files>` tags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOps {
    read: BTreeSet<String>,
    written: BTreeSet<String>,
    edited: BTreeSet<String>,
}

impl FileOps {
    /// Adds every `read`/`write`/`edit` tool call with a non-empty string `path`.
    pub fn add_message(&mut self, message: &AgentMessage) {
        let AgentMessage::Assistant(a) = message else {
            return;
        };
        for c in a.tool_calls() {
            let Some(path) = c
                .arguments
                .get("path")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
            else {
                continue;
            };
            let set = match c.name.as_str() {
                "read" => &mut self.read,
                "write" => &mut self.written,
                "edit" => &mut self.edited,
                _ => continue,
            };
            set.insert(path.to_owned());
        }
    }

    /// Adds a previous summary's `details` (`readFiles` ⇒ read, `modifiedFiles` ⇒ edited).
    pub fn add_details(&mut self, details: &Value) {
        let names = |k: &str| -> Vec<String> {
            details
                .get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        self.read.extend(names("readFiles"));
        self.edited.extend(names("modifiedFiles"));
    }

    /// `(readFiles, modifiedFiles)`: modified = edited ∪ written; read = read − modified; both
    /// sorted by UTF-16 code units as JavaScript's default sort does.
    pub fn lists(&self) -> (Vec<String>, Vec<String>) {
        let js_sort = |mut v: Vec<String>| {
            v.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            v
        };
        let modified: BTreeSet<String> = self.edited.union(&self.written).cloned().collect();
        let read = self.read.difference(&modified).cloned().collect();
        (js_sort(read), js_sort(modified.into_iter().collect()))
    }

    /// The text appended to a summary: `\n\n` + the non-empty `<read-files>` and
    /// `<modified-files>` sections joined by `\n\n`; empty when both lists are.
    pub fn summary_suffix(&self) -> String {
        let (read, modified) = self.lists();
        let sections: Vec<String> = [("read-files", read), ("modified-files", modified)]
            .into_iter()
            .filter(|(_, files)| !files.is_empty())
            .map(|(tag, files)| format!("<{tag}>\n{}\n</{tag}>", files.join("\n")))
            .collect();
        if sections.is_empty() {
            String::new()
        } else {
            format!("\n\n{}", sections.join("\n\n"))
        }
    }

    /// `{"readFiles": […], "modifiedFiles": […]}` for the compaction entry's `details`.
    pub fn details(&self) -> Value {
        let (read, modified) = self.lists();
        serde_json::json!({ "readFiles": read, "modifiedFiles": modified })
    }
}

/// What a compaction works from (pi's `CompactionPreparation`, spec: compaction.md §4).
#[derive(Debug, Clone)]
pub struct CompactionPreparation {
    /// Id of the first entry kept verbatim.
    pub first_kept_entry_id: Option<String>,
    /// Messages the history summary covers.
    pub messages_to_summarize: Vec<AgentMessage>,
    /// For a split turn: the turn's beginning, summarized on its own.
    pub turn_prefix_messages: Vec<AgentMessage>,
    /// Whether the cut splits a turn.
    pub is_split_turn: bool,
    /// Estimated context tokens before compacting.
    pub tokens_before: u64,
    /// The previous compaction's summary, to be updated rather than restarted.
    pub previous_summary: Option<String>,
    /// Files read and modified, for the summary's tags and `details`.
    pub file_ops: FileOps,
}

/// The messages an entry contributes to a summary: its message, or the projection of a custom
/// message or branch summary (even an empty one); compactions and everything else none.
pub(crate) fn summary_message(tree: &SessionTree, index: usize) -> Option<AgentMessage> {
    let e = &tree.entries()[index];
    match e.kind() {
        EntryType::Message => e.decode_message().and_then(Result::ok),
        // The context drops empty branch summaries; a summary's input keeps them.
        EntryType::BranchSummary => {
            let fields: serde_json::Map<String, Value> = e.decode_as().ok()?;
            Some(AgentMessage::BranchSummary(
                pith_events::BranchSummaryMessage {
                    summary: fields
                        .get("summary")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    from_id: fields
                        .get("fromId")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    timestamp: Some(e.timestamp_ms())
                        .filter(|t| !t.is_nan())
                        .map(|t| t as i64),
                },
            ))
        }
        EntryType::CustomMessage => {
            let (one, _) = SessionTree::new(vec![e.clone()]);
            build_session_context(&one, Leaf::At(0))
                .messages
                .first()
                .and_then(|m| m.to_agent_message().ok())
        }
        _ => None,
    }
}

/// `prepareCompaction(pathEntries, settings)`: `None` when the path is empty or already ends
/// in a compaction (spec: compaction.md §4). `path` are indices of `tree` from the root to the
/// leaf.
pub fn prepare_compaction(
    tree: &SessionTree,
    path: &[usize],
    settings: &CompactionSettings,
) -> Option<CompactionPreparation> {
    let entries: Vec<&Entry> = path.iter().map(|&i| &tree.entries()[i]).collect();
    let last = *entries.last()?;
    if last.kind() == &EntryType::Compaction {
        return None;
    }
    let prev = entries
        .iter()
        .rposition(|e| e.kind() == &EntryType::Compaction);
    let prev_fields: Option<serde_json::Map<String, Value>> =
        prev.and_then(|p| entries[p].decode_as().ok());
    let previous_summary = prev_fields
        .as_ref()
        .and_then(|f| f.get("summary"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let boundary_start = match (prev, &prev_fields) {
        (Some(p), Some(f)) => {
            let kept = f.get("firstKeptEntryId").and_then(Value::as_str);
            entries
                .iter()
                .position(|e| Some(e.id()) == kept)
                .unwrap_or(p + 1)
        }
        (Some(p), None) => p + 1,
        (None, _) => 0,
    };
    let end = entries.len();
    let tokens_before = {
        let context = build_session_context(tree, Leaf::At(*path.last()?));
        let messages: Vec<AgentMessage> = context
            .messages
            .iter()
            .filter_map(|m| m.to_agent_message().ok())
            .collect();
        estimate_context_tokens(&messages).tokens
    };
    let messages: Vec<Option<AgentMessage>> =
        path.iter().map(|&i| summary_message(tree, i)).collect();
    let hidden_ids = crate::context::edits::hidden_ids(tree.entries(), path.iter().copied());
    let hidden: Vec<bool> = entries
        .iter()
        .map(|e| hidden_ids.contains(e.id()))
        .collect();
    let cut = find_cut_point(
        &entries,
        &messages,
        &hidden,
        boundary_start,
        end,
        settings.keep_recent_tokens,
    );
    let history_end = match (cut.is_split_turn, cut.turn_start_index) {
        (true, Some(t)) => t,
        _ => cut.first_kept_index,
    };
    // The projected messages: hidden ones are left out of what is summarized.
    let take = |range: std::ops::Range<usize>| -> Vec<AgentMessage> {
        range
            .filter(|&i| entries[i].kind() != &EntryType::Compaction && !hidden[i])
            .filter_map(|i| messages[i].clone())
            .collect()
    };
    let messages_to_summarize = take(boundary_start..history_end.max(boundary_start));
    let turn_prefix_messages = match (cut.is_split_turn, cut.turn_start_index) {
        (true, Some(t)) => take(t..cut.first_kept_index),
        _ => Vec::new(),
    };
    // pi ≥ 0.87: nothing to summarize is no compaction ("Nothing to compact (session too
    // small)"), not a summary of an empty conversation (spec: compaction.md §4 step 7).
    if messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        return None;
    }
    let mut file_ops = FileOps::default();
    if let Some(f) = &prev_fields
        && f.get("fromHook").and_then(Value::as_bool) != Some(true)
        && let Some(details) = f.get("details")
    {
        file_ops.add_details(details);
    }
    for m in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        file_ops.add_message(m);
    }
    Some(CompactionPreparation {
        first_kept_entry_id: entries.get(cut.first_kept_index).map(|e| e.id().to_owned()),
        messages_to_summarize,
        turn_prefix_messages,
        is_split_turn: cut.is_split_turn,
        tokens_before,
        previous_summary,
        file_ops,
    })
}

#[cfg(test)]
mod tests;
