//! The read-only answers: `get_session_stats`, `get_fork_messages`, `get_last_assistant_text`,
//! computed from the context and the log as pi's AgentSession computes them (spec:
//! agent-and-events.md §9).

use serde_json::{Value, json};

use pith_actors::writer::Snapshot;
use pith_events::{AgentMessage, ContentBlock, EntryType, StopReason};
use pith_llm::model::Model;
use pith_store::SessionTree;
use pith_store::compaction::{calculate_context_tokens, estimate_context_tokens};

/// pi's `getSessionStats()`: counts over the context's `messages`, token and cost sums over
/// its assistant replies, and `contextUsage` (left out when the model has no window).
pub fn session_stats(snapshot: &Snapshot, messages: &[AgentMessage], model: &Model) -> Value {
    let count = |role: fn(&AgentMessage) -> bool| messages.iter().filter(|m| role(m)).count();
    let (mut tool_calls, mut input, mut output, mut cache_read, mut cache_write) = (0, 0, 0, 0, 0);
    let mut cost = 0.0;
    for m in messages {
        if let AgentMessage::Assistant(a) = m {
            tool_calls += a.tool_calls().count();
            input += a.usage.input;
            output += a.usage.output;
            cache_read += a.usage.cache_read;
            cache_write += a.usage.cache_write;
            cost += a.usage.cost.total;
        }
    }
    let mut stats = serde_json::Map::new();
    if let Some(file) = &snapshot.session_file {
        stats.insert("sessionFile".into(), json!(file.to_string_lossy()));
    }
    stats.insert("sessionId".into(), json!(snapshot.header.id()));
    stats.insert(
        "userMessages".into(),
        json!(count(|m| matches!(m, AgentMessage::User(_)))),
    );
    stats.insert(
        "assistantMessages".into(),
        json!(count(|m| matches!(m, AgentMessage::Assistant(_)))),
    );
    stats.insert("toolCalls".into(), json!(tool_calls));
    stats.insert(
        "toolResults".into(),
        json!(count(|m| matches!(m, AgentMessage::ToolResult(_)))),
    );
    stats.insert("totalMessages".into(), json!(messages.len()));
    stats.insert(
        "tokens".into(),
        json!({
            "input": input,
            "output": output,
            "cacheRead": cache_read,
            "cacheWrite": cache_write,
            "total": input + output + cache_read + cache_write,
        }),
    );
    stats.insert("cost".into(), json!(cost));
    if let Some(usage) = context_usage(snapshot, messages, model) {
        stats.insert("contextUsage".into(), usage);
    }
    Value::Object(stats)
}

/// pi's `getContextUsage()`: `{tokens, contextWindow, percent}`; after a compaction, tokens
/// and percent are `null` until a reply that neither failed nor was aborted reports usage.
fn context_usage(snapshot: &Snapshot, messages: &[AgentMessage], model: &Model) -> Option<Value> {
    let window = model.context_window;
    if window == 0 {
        return None;
    }
    let tree = &snapshot.tree;
    let branch = tree.get_branch(None);
    if let Some(at) = branch
        .iter()
        .rposition(|e| e.kind() == &EntryType::Compaction)
    {
        let usage_after = branch[at + 1..]
            .iter()
            .rev()
            .filter_map(|e| match e.decode_message() {
                Some(Ok(AgentMessage::Assistant(a))) => Some(a),
                _ => None,
            })
            .find(|a| !matches!(a.stop_reason, StopReason::Aborted | StopReason::Error))
            .is_some_and(|a| calculate_context_tokens(&a.usage) > 0);
        if !usage_after {
            return Some(json!({"tokens": null, "contextWindow": window, "percent": null}));
        }
    }
    let tokens = estimate_context_tokens(messages).tokens;
    Some(json!({
        "tokens": tokens,
        "contextWindow": window,
        "percent": tokens as f64 / window as f64 * 100.0,
    }))
}

/// pi's `getUserMessagesForForking()`: every user message of the log (all branches, file
/// order) with its text blocks joined, empty ones left out.
///
/// Errors: a body left in the session file could not be read back (see [`read_back`]).
pub fn fork_messages(snapshot: &Snapshot) -> Result<Value, String> {
    read_back(snapshot.entries())?;
    let messages: Vec<Value> = snapshot
        .entries()
        .iter()
        .filter(|e| e.kind() == &EntryType::Message)
        .filter_map(|e| match e.decode_message() {
            Some(Ok(AgentMessage::User(u))) => {
                let text = u.content.joined_text("");
                (!text.is_empty()).then(|| json!({"entryId": e.id(), "text": text}))
            }
            _ => None,
        })
        .collect();
    Ok(json!({ "messages": messages }))
}

/// Reads back at once the bodies a large session left in its file (one pass, not one read
/// per entry), before a walk that shows or returns them whole.
///
/// Errors: the file was changed in place since it was read (`BodyChanged`), or an I/O error.
fn read_back(entries: &[pith_store::Entry]) -> Result<(), String> {
    pith_store::entry::read_back_bodies(entries).map_err(|e| e.to_string())
}

/// pi's `getLastAssistantText()`: the last assistant message of the context, skipping
/// aborted ones without content; its text blocks joined and trimmed; `None` when empty
/// (then pi's `{text: undefined}` serializes as `{}`).
pub fn last_assistant_text(messages: &[AgentMessage]) -> Option<String> {
    let last = messages.iter().rev().find_map(|m| match m {
        AgentMessage::Assistant(a)
            if !(a.stop_reason == StopReason::Aborted && a.content.is_empty()) =>
        {
            Some(a)
        }
        _ => None,
    })?;
    let text: String = last
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    let trimmed = pith_events::js::js_trim(&text);
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// An entry as stored, as JSON (pi prints its in-memory entry, which is the stored line).
fn entry_json(entry: &pith_store::Entry) -> Value {
    serde_json::from_str(&entry.js_raw()).unwrap_or(Value::Null)
}

/// The leaf's id, `null` before the first entry.
fn leaf_id(tree: &SessionTree) -> Value {
    tree.leaf_id().map_or(Value::Null, |id| json!(id))
}

/// `get_entries {since?}` (pi ≥ 0.80.3): `{entries, leafId}`, every entry in file order
/// (header excluded), or only those after the entry `since`.
///
/// Errors: `Entry not found: <id>` for an unknown `since`; as [`fork_messages`].
pub fn entries(snapshot: &Snapshot, since: Option<&str>) -> Result<Value, String> {
    let tree = &snapshot.tree;
    let start = match since {
        None => 0,
        Some(id) => {
            tree.index_of(id)
                .ok_or_else(|| format!("Entry not found: {id}"))?
                + 1
        }
    };
    let entries = &tree.entries()[start..];
    read_back(entries)?;
    let entries: Vec<Value> = entries.iter().map(entry_json).collect();
    Ok(json!({"entries": entries, "leafId": leaf_id(tree)}))
}

/// `get_tree` (pi ≥ 0.80.3): `{tree, leafId}`, root nodes `{entry, children, label?,
/// labelTimestamp?}` in file order, children by timestamp. Built without recursion, so a
/// session thousands of entries deep costs no stack.
///
/// Errors: as [`fork_messages`].
pub fn tree(snapshot: &Snapshot) -> Result<Value, String> {
    let tree = &snapshot.tree;
    read_back(tree.entries())?;
    let shape = tree.get_tree();
    let entries = tree.entries();
    // Nodes are finished children first: post-order over an explicit stack.
    let mut done: Vec<Option<Value>> = vec![None; entries.len()];
    let mut stack: Vec<(usize, bool)> = shape.roots.iter().rev().map(|&r| (r, false)).collect();
    while let Some((i, expanded)) = stack.pop() {
        if !expanded {
            stack.push((i, true));
            stack.extend(shape.children[i].iter().rev().map(|&c| (c, false)));
            continue;
        }
        let children: Vec<Value> = shape.children[i]
            .iter()
            .filter_map(|&c| done[c].take())
            .collect();
        let mut node = serde_json::Map::new();
        node.insert("entry".into(), entry_json(&entries[i]));
        node.insert("children".into(), Value::Array(children));
        if let Some(label) = tree.label(entries[i].id()) {
            node.insert(
                "label".into(),
                serde_json::from_str(&label.value).unwrap_or(Value::Null),
            );
            if let Some(ts) = &label.timestamp {
                node.insert(
                    "labelTimestamp".into(),
                    serde_json::from_str(ts).unwrap_or(Value::Null),
                );
            }
        }
        done[i] = Some(Value::Object(node));
    }
    let roots: Vec<Value> = shape.roots.iter().filter_map(|&r| done[r].take()).collect();
    Ok(json!({"tree": roots, "leafId": leaf_id(tree)}))
}
