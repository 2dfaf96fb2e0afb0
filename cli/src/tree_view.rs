//! `pith session tree`: the session tree as text, shaped like pi's `/tree` view.
//!
//! A chain of single children stays at one indentation level; only branch points indent, so
//! a long linear session reads top to bottom. `*` marks entries on the active path, `@` the
//! leaf, and labels follow in brackets.
//!
//! Linear at any depth: a line's indentation is a list shared with its ancestors, and at most
//! [`MAX_LEVELS`] of its levels are printed (deeper lines start with `⋯`), so a session that
//! forks at each of 10 000 levels prints 10 000 short lines.

use std::collections::HashSet;
use std::io::Write;
use std::rc::Rc;

use pith_events::{AgentMessage, EntryType, SessionEntry, SystemMessage, UserContent};
use pith_store::{Entry, Session};

use crate::text::{first_line, printable};

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
    // (entry, prefix for its line, prefix for its descendants)
    let mut stack: Vec<(usize, Indent, Indent)> = Vec::new();
    push_siblings(&mut stack, &shape.roots, &None, shape.roots.len() > 1);
    while let Some((node, line_prefix, child_prefix)) = stack.pop() {
        let line_prefix = render(&line_prefix);
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
            .map(|l| format!("  [{}]", first_line(&l.text(), 40)))
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

/// Levels of indentation a line shows at most.
pub const MAX_LEVELS: usize = 40;

/// Indentation as a list of two-character segments, deepest first, shared between lines.
type Indent = Option<Rc<Segment>>;

struct Segment {
    text: &'static str,
    up: Indent,
}

fn push(indent: &Indent, text: &'static str) -> Indent {
    Some(Rc::new(Segment {
        text,
        up: indent.clone(),
    }))
}

/// The indentation's last [`MAX_LEVELS`] segments, root side first, after `⋯ ` when some
/// were left out.
fn render(indent: &Indent) -> String {
    let mut shown = Vec::new();
    let mut s = indent.as_deref();
    while let Some(seg) = s.filter(|_| shown.len() < MAX_LEVELS) {
        shown.push(seg.text);
        s = seg.up.as_deref();
    }
    let mut out = String::with_capacity(shown.len() * 6 + 4);
    if s.is_some() {
        out.push_str("⋯ ");
    }
    for text in shown.iter().rev() {
        out.push_str(text);
    }
    out
}

fn push_siblings(
    stack: &mut Vec<(usize, Indent, Indent)>,
    kids: &[usize],
    prefix: &Indent,
    branching: bool,
) {
    for (k, &kid) in kids.iter().enumerate().rev() {
        if branching {
            let last = k + 1 == kids.len();
            let line = push(prefix, if last { "└─" } else { "├─" });
            let child = push(prefix, if last { "  " } else { "│ " });
            stack.push((kid, line, child));
        } else {
            stack.push((kid, prefix.clone(), prefix.clone()));
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
            AgentMessage::System(s) => system_line(&s),
            AgentMessage::User(u) => {
                format!("user: {}", first_line(&u.content.joined_text(" "), WIDTH))
            }
            AgentMessage::Assistant(a) => {
                let text: Vec<&str> = a.texts().collect();
                let tools: Vec<&str> = a.tool_calls().map(|t| t.name.as_str()).collect();
                let text = first_line(&text.join(" "), WIDTH);
                let mut s = if text.is_empty() {
                    "assistant".to_owned()
                } else {
                    format!("assistant: {text}")
                };
                if !tools.is_empty() {
                    s.push_str(&format!(" → {}", tools.join(", ")));
                }
                if let Some(err) = a.error_message {
                    s.push_str(&format!(" (error: {})", first_line(&err, 40)));
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
            AgentMessage::BashExecution(b) => format!("! {}", first_line(&b.command, WIDTH)),
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
                first_line(&c.summary, 50)
            )
        }
        SessionEntry::BranchSummary(b) => {
            format!("[branch summary: {}]", first_line(&b.summary, 50))
        }
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
            format!("[name: {}]", first_line(&i.name.unwrap_or_default(), 50))
        }
        SessionEntry::ContextEdit(c) => match c.replacement {
            None => format!("[context edit: {} hidden]", c.target_id),
            Some(r) => format!(
                "[context edit: {} = {}]",
                c.target_id,
                first_line(&r.content.joined_text(" "), 40)
            ),
        },
        SessionEntry::Usage(u) => format!("[usage {}: {}/{}]", u.kind, u.provider, u.model),
        SessionEntry::Unknown(_) => match entry.kind() {
            EntryType::Unknown(t) if !t.is_empty() => format!("[{t}]"),
            k => format!("[{}]", k.as_str()),
        },
    }
}

/// A system message (pi ≥ 0.86): what it sets, since its text is mostly in `sections`.
fn system_line(s: &SystemMessage) -> String {
    let mut parts = Vec::new();
    let text = s.content.joined_text(" ");
    if !text.is_empty() {
        parts.push(first_line(&text, 40));
    }
    if let Some(sections) = &s.sections {
        let names: Vec<&str> = sections.keys().map(String::as_str).collect();
        parts.push(format!("sections {}", names.join(", ")));
    }
    let tools = |v: &Option<Vec<serde_json::Value>>| -> Vec<String> {
        v.iter()
            .flatten()
            .map(|t| {
                t.get("name")
                    .and_then(|n| n.as_str())
                    .unwrap_or("?")
                    .to_owned()
            })
            .collect()
    };
    let (added, removed) = (tools(&s.tools_added), tools(&s.tools_removed));
    if !added.is_empty() {
        parts.push(format!("+tools {}", added.join(", ")));
    }
    if !removed.is_empty() {
        parts.push(format!("-tools {}", removed.join(", ")));
    }
    if parts.is_empty() {
        "system".to_owned()
    } else {
        format!("system: {}", first_line(&parts.join("; "), 70))
    }
}

fn content_line(c: &UserContent) -> String {
    first_line(&c.joined_text(" "), 60)
}
