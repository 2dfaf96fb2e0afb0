//! One entry of the log as HTML, and its one-line text for the sidebar tree.
//!
//! Every entry gets an element, whatever its type, so that showing a branch is only a matter
//! of hiding the elements that are not on it. pi's export leaves settings entries, labels and
//! hidden custom messages out of the conversation; here they appear as quiet one-liners so the
//! page shows everything the file holds.

mod messages;

use std::collections::HashMap;
use std::io::{self, Write};

use pith_events::{AgentMessage, BashExecutionMessage, SessionEntry};
use pith_store::{Entry, SessionTree};
use serde_json::Value;

use super::html::{Esc, escaped};
use super::markdown::write_markdown;
use super::stats::Stats;
use super::tools::pretty;
use super::tree::Layout;
use crate::text::normalized_prefix;
use messages::{custom_row, write_custom_content};

/// Sidebar texts are cut at this many characters (pi's `truncate`).
const ROW_CHARS: usize = 100;

/// What the sidebar needs of an entry once the messages are written.
#[derive(Debug, Clone, Default)]
pub struct RowText {
    /// Escaped HTML of the row's text.
    pub html: String,
    /// Filter classes (`k-user`, `k-tool`, `k-set`, `k-quiet`).
    pub kinds: &'static str,
}

/// Writes entries in file order, collecting the sidebar texts and the totals on the way.
pub struct Renderer<'a> {
    tree: &'a SessionTree,
    layout: &'a Layout,
    /// Tool-call id → pi's description of the call; results come after their call in the file.
    calls: HashMap<String, String>,
    /// Totals over all entries.
    pub stats: Stats,
    /// Sidebar text per entry index.
    pub rows: Vec<RowText>,
}

impl<'a> Renderer<'a> {
    /// A renderer for `tree` laid out as `layout`.
    pub fn new(tree: &'a SessionTree, layout: &'a Layout) -> Renderer<'a> {
        Renderer {
            tree,
            layout,
            calls: HashMap::new(),
            stats: Stats::default(),
            rows: Vec::with_capacity(tree.entries().len()),
        }
    }

    /// Writes entry `i` (they must come in file order) and records its sidebar text.
    ///
    /// Errors: those of `out`.
    pub fn write_entry(&mut self, out: &mut dyn Write, i: usize) -> io::Result<()> {
        let entry = &self.tree.entries()[i];
        let decoded = entry.decode().ok();
        if let Some(d) = &decoded {
            self.stats.add(d);
        }
        let (kind, who) = match &decoded {
            Some(d) => kind_of(d),
            None => ("unknown", "Unreadable entry".into()),
        };
        let off = if self.layout.on_path[i] { "" } else { " off" };
        write!(
            out,
            r#"<div class="e {kind}{off}" id="e{i}"><div class="meta"><span class="who">{}</span>"#,
            Esc(&who)
        )?;
        if let Some(label) = self.tree.label(entry.id()) {
            write!(out, r#" <span class="label">{}</span>"#, Esc(&label.text()))?;
        }
        write!(out, r#" <span class="eid">{}</span>"#, Esc(entry.id()))?;
        if let Some(ts) = decoded
            .as_ref()
            .and_then(SessionEntry::base)
            .map(|b| b.timestamp)
        {
            write!(
                out,
                r#" <time title="{}">{}</time>"#,
                Esc(ts),
                Esc(short_time(ts))
            )?;
        }
        out.write_all(b"</div>")?;
        let row = match &decoded {
            Some(d) => self.write_body(out, d)?,
            None => {
                write_raw(out, entry)?;
                RowText {
                    html: format!(
                        r#"<span class="r-muted">[{}]</span>"#,
                        escaped(entry.kind().as_str())
                    ),
                    kinds: "",
                }
            }
        };
        self.rows.push(row);
        self.write_fork(out, i)?;
        out.write_all(b"</div>\n")
    }

    /// Buttons to switch branches where the tree forks below this entry.
    fn write_fork(&self, out: &mut dyn Write, i: usize) -> io::Result<()> {
        let kids = &self.layout.shape.children[i];
        if kids.len() < 2 {
            return Ok(());
        }
        write!(
            out,
            r#"<div class="fork"><span>{} branches continue here:</span>"#,
            kids.len()
        )?;
        let entries = self.tree.entries();
        for (n, &kid) in kids.iter().enumerate() {
            let leaf = self.layout.newest_leaf[kid];
            let cur = if self.layout.on_path[kid] { " cur" } else { "" };
            write!(
                out,
                r#" <button type="button" class="go{cur}" data-c="{kid}" data-leaf="{leaf}" title="via {} to {}">{}</button>"#,
                Esc(entries[kid].id()),
                Esc(entries[leaf].id()),
                n + 1
            )?;
        }
        out.write_all(b"</div>")
    }

    fn write_body(&mut self, out: &mut dyn Write, d: &SessionEntry) -> io::Result<RowText> {
        let muted = |text: String| RowText {
            html: format!(r#"<span class="r-muted">{}</span>"#, escaped(&text)),
            kinds: "k-set",
        };
        Ok(match d {
            SessionEntry::Message(m) => self.write_message(out, &m.message)?,
            SessionEntry::ThinkingLevelChange(t) => {
                write!(
                    out,
                    r#"<div class="note">Thinking level: <b>{}</b></div>"#,
                    Esc(&t.thinking_level)
                )?;
                muted(format!("[thinking: {}]", t.thinking_level))
            }
            SessionEntry::ModelChange(m) => {
                write!(
                    out,
                    r#"<div class="note">Switched to model: <b>{}/{}</b></div>"#,
                    Esc(&m.provider),
                    Esc(&m.model_id)
                )?;
                muted(format!("[model: {}]", m.model_id))
            }
            SessionEntry::Compaction(c) => {
                write!(
                    out,
                    r#"<details class="compaction"><summary>Compacted from {} tokens; kept from entry {}</summary><div class="md">"#,
                    c.tokens_before,
                    Esc(&c.first_kept_entry_id)
                )?;
                write_markdown(out, &c.summary)?;
                out.write_all(b"</div>")?;
                write_file_lists(out, c.details.as_ref())?;
                out.write_all(b"</details>")?;
                RowText {
                    html: format!(
                        r#"<span class="r-compaction">[compaction: {}k tokens]</span>"#,
                        (c.tokens_before as f64 / 1000.0).round()
                    ),
                    kinds: "",
                }
            }
            SessionEntry::BranchSummary(b) => {
                out.write_all(br#"<div class="md">"#)?;
                write_markdown(out, &b.summary)?;
                out.write_all(b"</div>")?;
                write_file_lists(out, b.details.as_ref())?;
                RowText {
                    html: format!(
                        r#"<span class="r-summary">[branch summary]:</span> {}"#,
                        escaped(&normalized_prefix(&b.summary, ROW_CHARS))
                    ),
                    kinds: "",
                }
            }
            SessionEntry::Custom(c) => {
                match &c.data {
                    Some(data) => write!(
                        out,
                        r#"<details class="data"><summary>Extension data</summary><pre class="args">{}</pre></details>"#,
                        Esc(&pretty(data))
                    )?,
                    None => {
                        out.write_all(br#"<div class="note">Extension entry without data</div>"#)?
                    }
                }
                muted(format!("[custom: {}]", c.custom_type))
            }
            SessionEntry::CustomMessage(c) => {
                write_custom_content(out, &c.content, c.display)?;
                custom_row(&c.custom_type, &c.content)
            }
            SessionEntry::Label(l) => {
                let target = self
                    .tree
                    .index_of(&l.target_id)
                    .map(|t| format!(r##" <a href="#e{t}" class="jump" data-go="{t}">(show)</a>"##))
                    .unwrap_or_default();
                match l.label.as_deref().filter(|s| !s.is_empty()) {
                    Some(label) => write!(
                        out,
                        r#"<div class="note">Label <span class="label">{}</span> set on entry {}{target}</div>"#,
                        Esc(label),
                        Esc(&l.target_id)
                    )?,
                    None => write!(
                        out,
                        r#"<div class="note">Label cleared on entry {}{target}</div>"#,
                        Esc(&l.target_id)
                    )?,
                }
                muted(format!("[label: {}]", l.label.as_deref().unwrap_or("")))
            }
            SessionEntry::SessionInfo(s) => {
                match s.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
                    Some(name) => write!(
                        out,
                        r#"<div class="note">Session named <b>{}</b></div>"#,
                        Esc(name)
                    )?,
                    None => out.write_all(br#"<div class="note">Session name cleared</div>"#)?,
                }
                RowText {
                    html: r#"<span class="r-muted">[session_info]</span>"#.into(),
                    kinds: "",
                }
            }
            SessionEntry::ContextEdit(c) => {
                let target = self
                    .tree
                    .index_of(&c.target_id)
                    .map(|t| format!(r##" <a href="#e{t}" class="jump" data-go="{t}">(show)</a>"##))
                    .unwrap_or_default();
                match &c.replacement {
                    None => write!(
                        out,
                        r#"<div class="note">Entry {} left out of the context{target}</div>"#,
                        Esc(&c.target_id)
                    )?,
                    Some(r) => write!(
                        out,
                        r#"<div class="note">Content of entry {} replaced{target}</div><pre class="args">{}</pre>"#,
                        Esc(&c.target_id),
                        Esc(&pretty(
                            &serde_json::to_value(&r.content).unwrap_or_default()
                        ))
                    )?,
                }
                muted(format!("[context edit: {}]", c.target_id))
            }
            SessionEntry::Usage(u) => {
                write!(
                    out,
                    r#"<div class="note">Usage ({}) by <b>{}/{}</b>{}</div>"#,
                    Esc(&u.kind),
                    Esc(&u.provider),
                    Esc(&u.model),
                    u.note
                        .as_deref()
                        .map(|n| format!(": {}", escaped(n)))
                        .unwrap_or_default()
                )?;
                muted(format!("[usage: {}]", u.kind))
            }
            SessionEntry::Unknown(v) => {
                write!(
                    out,
                    r#"<details class="data"><summary>Entry of an unknown type</summary><pre class="args">{}</pre></details>"#,
                    Esc(&pretty(v))
                )?;
                let t = v.get("type").and_then(Value::as_str).unwrap_or("");
                RowText {
                    html: format!(r#"<span class="r-muted">[{}]</span>"#, escaped(t)),
                    kinds: "",
                }
            }
        })
    }
}

/// The element class and the heading of an entry.
fn kind_of(d: &SessionEntry) -> (&'static str, String) {
    match d {
        SessionEntry::Message(m) => match &m.message {
            AgentMessage::System(_) => ("setting", "System prompt and tools".into()),
            AgentMessage::User(_) => ("user", "User".into()),
            AgentMessage::Assistant(_) => ("assistant", "Assistant".into()),
            AgentMessage::ToolResult(r) if r.is_error => ("tool-result err", "Tool result".into()),
            AgentMessage::ToolResult(_) => ("tool-result", "Tool result".into()),
            AgentMessage::BashExecution(b) if bash_failed(b) => {
                ("bash err", "User shell command".into())
            }
            AgentMessage::BashExecution(_) => ("bash", "User shell command".into()),
            AgentMessage::Custom(c) => (custom_class(c.display), format!("[{}]", c.custom_type)),
            AgentMessage::BranchSummary(_) => ("branch-summary", "Branch summary".into()),
            AgentMessage::CompactionSummary(_) => ("compaction-entry", "Compaction summary".into()),
            AgentMessage::Unknown(_) => ("unknown", format!("Message ({})", m.message.role())),
        },
        SessionEntry::ThinkingLevelChange(_) => ("setting", "Thinking level".into()),
        SessionEntry::ModelChange(_) => ("setting", "Model".into()),
        SessionEntry::Compaction(_) => ("compaction-entry", "Compaction".into()),
        SessionEntry::BranchSummary(b) => (
            "branch-summary",
            format!("Branch summary (from {})", b.from_id),
        ),
        SessionEntry::Custom(c) => ("setting", format!("Extension entry [{}]", c.custom_type)),
        SessionEntry::CustomMessage(c) => (custom_class(c.display), format!("[{}]", c.custom_type)),
        SessionEntry::Label(_) => ("setting", "Label".into()),
        SessionEntry::SessionInfo(_) => ("setting", "Session name".into()),
        SessionEntry::ContextEdit(_) => ("setting", "Context edit".into()),
        SessionEntry::Usage(_) => ("setting", "Usage".into()),
        SessionEntry::Unknown(v) => (
            "unknown",
            format!("[{}]", v.get("type").and_then(Value::as_str).unwrap_or("?")),
        ),
    }
}

fn custom_class(display: bool) -> &'static str {
    if display {
        "custom"
    } else {
        "custom hidden-msg"
    }
}

fn bash_failed(b: &BashExecutionMessage) -> bool {
    b.cancelled || b.exit_code.is_some_and(|c| c != 0)
}

/// The read and modified files a compaction or branch summary lists in its details.
fn write_file_lists(out: &mut dyn Write, details: Option<&Value>) -> io::Result<()> {
    let Some(details) = details else {
        return Ok(());
    };
    for (key, title) in [("readFiles", "Read"), ("modifiedFiles", "Modified")] {
        let Some(files) = details.get(key).and_then(Value::as_array) else {
            continue;
        };
        if files.is_empty() {
            continue;
        }
        write!(out, r#"<div class="files"><b>{title}:</b>"#)?;
        for f in files {
            let name = f.as_str().map_or_else(|| f.to_string(), str::to_owned);
            write!(out, " <code>{}</code>", Esc(&name))?;
        }
        out.write_all(b"</div>")?;
    }
    Ok(())
}

/// An entry whose JSON does not decode: its text as it is in the file.
fn write_raw(out: &mut dyn Write, entry: &Entry) -> io::Result<()> {
    write!(out, r#"<pre class="args">{}</pre>"#, Esc(entry.raw()))
}

/// `HH:MM:SS` of an ISO timestamp (pi shows the time of day); anything else as it is.
fn short_time(ts: &str) -> &str {
    match ts.get(11..19) {
        Some(t) if ts.as_bytes().get(10) == Some(&b'T') => t,
        _ => ts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_shortened_only_when_iso() {
        assert_eq!(short_time("2025-03-05T10:03:15.123Z"), "10:03:15");
        assert_eq!(short_time("yesterday"), "yesterday");
    }
}
