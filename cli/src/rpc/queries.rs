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
    let (mut tree, _) = SessionTree::new(snapshot.entries.clone());
    tree.set_leaf(snapshot.leaf);
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
pub fn fork_messages(snapshot: &Snapshot) -> Value {
    let messages: Vec<Value> = snapshot
        .entries
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
    json!({ "messages": messages })
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
