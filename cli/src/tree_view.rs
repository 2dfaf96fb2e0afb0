//! `pith session tree`: the session tree as text, shaped like pi's `/tree` view.
//!
//! A chain of single children stays at one indentation level; only branch points indent, so
//! a long linear session reads top to bottom. `*` marks entries on the active path, `@` the
//! leaf, and labels follow in brackets.

use std::collections::HashSet;
use std::io::Write;

use pith_events::{AgentMessage, EntryType, SessionEntry, UserContent};
use pith_store::{Entry, Session};

use crate::session_cmd::{one_line, printable};

/// Writes the tree of `session` to `out`.
pub fn write(out: &mut impl Write, session: &Session) -> std::io::Result<()> {
    let tree = session.tree();
    let shape = tree.get_tree();
    let leaf = tree.leaf_id().and_then(|id| tree.index_of(id));
    let active: HashSet<usize> = match leaf {
        Some(l) => tree.path_to(l).into_iter().collect(),
        None => HashSet::new(),
    };
    if shape.roots.is_empty() {
        writeln!(out, "(empty session)")?;
        return Ok(());
    }
    // (entry, prefix for its line, prefix for its descendants, connector)
    let mut stack: Vec<(usize, String, String)> = Vec::new();
    push_siblings(&mut stack, &shape.roots, "", shape.roots.len() > 1);
    while let Some((node, line_prefix, child_prefix)) = stack.pop() {
        let entry = &tree.entries()[node];
        let mark = if Some(node) == leaf {
            "@"
        } else if active.contains(&node) {
            "*"
        } else {
            " "
        };
        let label = tree
            .label(entry.id())
            .map(|l| format!("  [{}]", one_line(&l.text(), 40)))
            .unwrap_or_default();
        writeln!(
            out,
            "{line_prefix}{mark} {} {}{label}",
            printable(entry.id()),
            describe(entry)
        )?;
        let kids = &shape.children[node];
        push_siblings(&mut stack, kids, &child_prefix, kids.len() > 1);
    }
    Ok(())
}

fn push_siblings(
    stack: &mut Vec<(usize, String, String)>,
    kids: &[usize],
    prefix: &str,
    branching: bool,
) {
    for (k, &kid) in kids.iter().enumerate().rev() {
        if branching {
            let last = k + 1 == kids.len();
            let line = format!("{prefix}{}", if last { "└─" } else { "├─" });
            let child = format!("{prefix}{}", if last { "  " } else { "│ " });
            stack.push((kid, line, child));
        } else {
            stack.push((kid, prefix.to_owned(), prefix.to_owned()));
        }
    }
}

/// One line describing an entry: role and text for messages, the setting for the rest.
fn describe(entry: &Entry) -> String {
    const WIDTH: usize = 70;
    let Ok(decoded) = entry.decode() else {
        return format!("[{}]", entry.kind().as_str());
    };
    match decoded {
        SessionEntry::Message(m) => match m.message {
            AgentMessage::User(u) => {
                format!("user: {}", one_line(&u.content.joined_text(" "), WIDTH))
            }
            AgentMessage::Assistant(a) => {
                let text: Vec<&str> = a.texts().collect();
                let tools: Vec<&str> = a.tool_calls().map(|t| t.name.as_str()).collect();
                let text = one_line(&text.join(" "), WIDTH);
                let mut s = if text.is_empty() {
                    "assistant".to_owned()
                } else {
                    format!("assistant: {text}")
                };
                if !tools.is_empty() {
                    s.push_str(&format!(" → {}", tools.join(", ")));
                }
                if let Some(err) = a.error_message {
                    s.push_str(&format!(" (error: {})", one_line(&err, 40)));
                }
                s
            }
            AgentMessage::ToolResult(t) => {
                format!(
                    "tool result {}{}",
                    t.tool_name,
                    if t.is_error { " (error)" } else { "" }
                )
            }
            AgentMessage::BashExecution(b) => format!("! {}", one_line(&b.command, WIDTH)),
            AgentMessage::Custom(c) => {
                format!("custom {}: {}", c.custom_type, content_line(&c.content))
            }
            other => format!("{} message", other.role()),
        },
        SessionEntry::ThinkingLevelChange(t) => format!("[thinking: {}]", t.thinking_level),
        SessionEntry::ModelChange(m) => format!("[model: {}/{}]", m.provider, m.model_id),
        SessionEntry::Compaction(c) => {
            format!(
                "[compaction, {} tokens before: {}]",
                c.tokens_before,
                one_line(&c.summary, 50)
            )
        }
        SessionEntry::BranchSummary(b) => format!("[branch summary: {}]", one_line(&b.summary, 50)),
        SessionEntry::Custom(c) => format!("[custom {}]", c.custom_type),
        SessionEntry::CustomMessage(c) => format!(
            "custom message {}: {}",
            c.custom_type,
            content_line(&c.content)
        ),
        SessionEntry::Label(l) => match l.label {
            Some(label) if !label.is_empty() => format!("[label {} = {label}]", l.target_id),
            _ => format!("[label {} cleared]", l.target_id),
        },
        SessionEntry::SessionInfo(i) => {
            format!("[name: {}]", one_line(&i.name.unwrap_or_default(), 50))
        }
        SessionEntry::Unknown(_) => match entry.kind() {
            EntryType::Unknown(t) if !t.is_empty() => format!("[{t}]"),
            k => format!("[{}]", k.as_str()),
        },
    }
}

fn content_line(c: &UserContent) -> String {
    one_line(&c.joined_text(" "), 60)
}
