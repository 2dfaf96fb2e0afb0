//! The status pi keeps under its editor, printed after each run: the directory (with git
//! branch and session name) and the token, cost and context stats with the model on the
//! right (pi's `FooterComponent`); and `/session`'s statistics (pi's `getSessionStats`).

use std::path::Path;

use pith_events::{AgentMessage, ContentBlock, EntryType, StopReason, Usage};
use pith_store::Session;
use pith_store::compaction::{calculate_context_tokens, estimate_context_tokens};
use pith_store::entry::Role;

use super::screen::{format_tokens, thousands, width};
use super::style;

/// Usage summed over assistant replies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Cache reads.
    pub cache_read: u64,
    /// Cache writes.
    pub cache_write: u64,
    /// Cost in USD.
    pub cost: f64,
}

impl Totals {
    fn add(&mut self, u: &Usage) {
        self.input += u.input;
        self.output += u.output;
        self.cache_read += u.cache_read;
        self.cache_write += u.cache_write;
        self.cost += u.cost.total;
    }

    /// Adds a usage object kept as JSON (summary and `usage` entries); a missing or
    /// non-numeric count adds 0 (pi would sum `NaN`), and anything but an object adds nothing.
    fn add_json(&mut self, u: &serde_json::Value) {
        let count = |k: &str| u[k].as_f64().filter(|n| *n > 0.0).map_or(0, |n| n as u64);
        self.input += count("input");
        self.output += count("output");
        self.cache_read += count("cacheRead");
        self.cache_write += count("cacheWrite");
        self.cost += u["cost"]["total"].as_f64().unwrap_or(0.0);
    }
}

/// pi's `getSessionStats` (footer and `/session` alike): message counts and usage over every
/// entry of the file, all branches. Usage comes from assistant replies, tool results that carry
/// one, `usage` entries (pi ≥ 1.6: cache warming and other model-attributed usage) and the
/// summary requests of compactions and branch summaries (pi ≥ 0.81).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionStats {
    /// User messages.
    pub user: usize,
    /// Assistant messages.
    pub assistant: usize,
    /// Tool calls in assistant messages.
    pub tool_calls: usize,
    /// Tool result messages.
    pub tool_results: usize,
    /// Message entries of any role.
    pub messages: usize,
    /// Summed usage.
    pub tokens: Totals,
}

/// Counts [`SessionStats`] over `session`'s entries.
pub fn session_stats(session: &Session) -> SessionStats {
    let mut stats = SessionStats::default();
    // Usage is in every assistant message: bodies a large session left in its file are read
    // in one pass, not one read each. One that cannot be read counts as its cut line (the
    // read logs why).
    let _ = session.tree().read_back_bodies();
    for entry in session.entries() {
        match entry.kind() {
            EntryType::Usage | EntryType::Compaction | EntryType::BranchSummary => {
                if let Ok(v) = entry.decode_as::<serde_json::Value>() {
                    stats.tokens.add_json(&v["usage"]);
                }
                continue;
            }
            EntryType::Message => {}
            EntryType::ThinkingLevelChange
            | EntryType::ModelChange
            | EntryType::Custom
            | EntryType::CustomMessage
            | EntryType::Label
            | EntryType::SessionInfo
            | EntryType::ContextEdit
            | EntryType::Unknown(_) => continue,
        }
        stats.messages += 1;
        match entry.role() {
            Some(Role::User) => stats.user += 1,
            Some(Role::ToolResult) => {
                stats.tool_results += 1;
                // Only extensions put usage on a tool result: skip the parse otherwise.
                if entry.message_raw().is_some_and(|m| m.contains("\"usage\""))
                    && let Ok(v) = entry.decode_as::<serde_json::Value>()
                {
                    stats.tokens.add_json(&v["message"]["usage"]);
                }
            }
            Some(Role::Assistant) => {
                stats.assistant += 1;
                if let Some(Ok(AgentMessage::Assistant(a))) = entry.decode_message() {
                    stats.tool_calls += a
                        .content
                        .iter()
                        .filter(|b| matches!(b, ContentBlock::ToolCall(_)))
                        .count();
                    stats.tokens.add(&a.usage);
                }
            }
            Some(Role::System | Role::BashExecution | Role::Custom | Role::Other(_)) | None => {}
        }
    }
    stats
}

/// pi's `getContextUsage`: `Some(tokens)` estimated from the context, or `None` right after
/// a compaction, until a reply reports usage again.
pub fn context_tokens(session: &Session, context: &[AgentMessage]) -> Option<u64> {
    let branch = session.tree().get_branch(None);
    if let Some(at) = branch
        .iter()
        .rposition(|e| e.kind() == &EntryType::Compaction)
    {
        let usable = branch[at + 1..].iter().rev().find_map(|e| {
            if !e.is_assistant_message() {
                return None;
            }
            match e.decode_message() {
                Some(Ok(AgentMessage::Assistant(a)))
                    if !matches!(a.stop_reason, StopReason::Aborted | StopReason::Error) =>
                {
                    Some(calculate_context_tokens(&a.usage) > 0)
                }
                _ => None,
            }
        });
        if usable != Some(true) {
            return None;
        }
    }
    Some(estimate_context_tokens(context).tokens)
}

/// What the footer shows.
pub struct Footer {
    /// The session's directory.
    pub cwd: String,
    /// The git branch checked out there ([`git_branch`]), read when the footer is made.
    pub branch: Option<String>,
    /// The session's name.
    pub name: Option<String>,
    /// Usage of the whole file.
    pub totals: Totals,
    /// Context tokens, `None` when unknown.
    pub context_tokens: Option<u64>,
    /// The model's context window.
    pub context_window: u64,
    /// Automatic compaction is on (`(auto)`).
    pub auto_compact: bool,
    /// `(provider, id)`.
    pub model: (String, String),
    /// `Some(level)` when the model reasons.
    pub thinking: Option<String>,
    /// Show the provider before the model (more than one provider has a key).
    pub show_provider: bool,
}

impl Footer {
    /// pi's two footer lines, `cols` wide, dimmed.
    pub fn lines(&self, cols: usize) -> Vec<String> {
        let mut pwd = super::tools::shorten_path(&self.cwd);
        if let Some(branch) = &self.branch {
            pwd = format!("{pwd} ({branch})");
        }
        if let Some(name) = &self.name {
            pwd = format!("{pwd} • {name}");
        }
        let t = &self.totals;
        let mut stats = Vec::new();
        for (n, prefix) in [
            (t.input, "↑"),
            (t.output, "↓"),
            (t.cache_read, "R"),
            (t.cache_write, "W"),
        ] {
            if n > 0 {
                stats.push(format!("{prefix}{}", format_tokens(n)));
            }
        }
        if t.cost > 0.0 {
            stats.push(format!("${:.3}", t.cost));
        }
        let auto = if self.auto_compact { " (auto)" } else { "" };
        let window = format_tokens(self.context_window);
        let percent = self
            .context_tokens
            .filter(|_| self.context_window > 0)
            .map(|tokens| tokens as f64 / self.context_window as f64 * 100.0);
        let context = match percent {
            Some(p) => format!("{p:.1}%/{window}{auto}"),
            None => format!("?/{window}{auto}"),
        };
        let context = match percent {
            Some(p) if p > 90.0 => style::error(&context),
            Some(p) if p > 70.0 => style::warning(&context),
            _ => style::dim(&context),
        };
        let left_plain = stats.join(" ");
        let left = if left_plain.is_empty() {
            context.clone()
        } else {
            format!("{} {context}", style::dim(&left_plain))
        };
        let left_width =
            width(&left_plain) + usize::from(!left_plain.is_empty()) + width(&strip(&context));
        let pwd = style::dim(&super::screen::truncate(&pwd, cols));
        if left_width > cols {
            // pi cuts the stats with "..." (its colours go with the cut).
            let cut = crate::text::truncate(&strip(&left), cols, "...");
            return vec![pwd, style::dim(&cut)];
        }
        let mut right = match self.thinking.as_deref() {
            Some("off") => format!("{} • thinking off", self.model.1),
            Some(level) => format!("{} • {level}", self.model.1),
            None => self.model.1.to_owned(),
        };
        if self.show_provider {
            let with = format!("({}) {right}", self.model.0);
            if left_width + 2 + width(&with) <= cols {
                right = with;
            }
        }
        // pi cuts the model side to the room left after two spaces, or drops it; the line
        // never wraps.
        let room = cols.saturating_sub(left_width + 2);
        if width(&right) > room {
            right = crate::text::truncate(&right, room, "");
        }
        let pad = if right.is_empty() {
            0
        } else {
            cols.saturating_sub(left_width + width(&right)).max(2)
        };
        vec![
            pwd,
            format!(
                "{left}{}",
                style::dim(&format!("{}{right}", " ".repeat(pad)))
            ),
        ]
    }
}

fn strip(styled: &str) -> String {
    let mut out = String::new();
    let mut in_escape = false;
    for c in styled.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
}

/// The branch checked out in the repository holding `dir` (`detached` without one).
pub fn git_branch(dir: &Path) -> Option<String> {
    let head = dir
        .ancestors()
        .map(|d| d.join(".git").join("HEAD"))
        .find(|p| p.is_file())?;
    let text = std::fs::read_to_string(head).ok()?;
    Some(match text.trim().strip_prefix("ref: refs/heads/") {
        Some(branch) => branch.to_owned(),
        None => "detached".to_owned(),
    })
}

/// `/session`: pi's "Session Info" (name, file, id, then [`SessionStats`] of the whole file,
/// the same numbers the footer sums).
pub fn session_info(
    name: Option<&str>,
    file: Option<&Path>,
    id: &str,
    stats: &SessionStats,
) -> Vec<String> {
    let t = &stats.tokens;
    let field = |k: &str, v: String| format!("{} {v}", style::dim(k));
    let mut out = vec![String::new(), style::bold("Session Info"), String::new()];
    if let Some(name) = name {
        out.push(field("Name:", name.to_owned()));
    }
    out.push(field(
        "File:",
        file.map_or("In-memory".to_owned(), |f| f.display().to_string()),
    ));
    out.push(field("ID:", id.to_owned()));
    out.extend([String::new(), style::bold("Messages")]);
    out.push(field("User:", stats.user.to_string()));
    out.push(field("Assistant:", stats.assistant.to_string()));
    out.push(field("Tool Calls:", stats.tool_calls.to_string()));
    out.push(field("Tool Results:", stats.tool_results.to_string()));
    out.push(field("Total:", stats.messages.to_string()));
    out.extend([String::new(), style::bold("Tokens")]);
    out.push(field("Input:", thousands(t.input)));
    out.push(field("Output:", thousands(t.output)));
    if t.cache_read > 0 {
        out.push(field("Cache Read:", thousands(t.cache_read)));
    }
    if t.cache_write > 0 {
        out.push(field("Cache Write:", thousands(t.cache_write)));
    }
    out.push(field(
        "Total:",
        thousands(t.input + t.output + t.cache_read + t.cache_write),
    ));
    if t.cost > 0.0 {
        out.extend([String::new(), style::bold("Cost")]);
        out.push(field("Total:", format!("{:.4}", t.cost)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_store::SessionEnv;
    use pith_store::session::OpenMode;

    #[test]
    fn a_narrow_footer_cuts_the_model_side_as_pi_does_and_never_wraps() {
        let footer = Footer {
            cwd: "/w".into(),
            branch: None,
            name: None,
            totals: Totals {
                input: 10,
                output: 5,
                ..Totals::default()
            },
            context_tokens: Some(0),
            context_window: 128_000,
            auto_compact: true,
            model: ("mock".into(), "mock-model".into()),
            thinking: Some("medium".into()),
            show_provider: false,
        };
        let plain = |cols: usize| strip(&footer.lines(cols)[1]);
        // "↑10 ↓5 0.0%/128k (auto)" is 23 columns.
        assert_eq!(
            plain(60),
            format!(
                "↑10 ↓5 0.0%/128k (auto){}mock-model • medium",
                " ".repeat(18)
            )
        );
        assert_eq!(plain(32), "↑10 ↓5 0.0%/128k (auto)  mock-mo");
        assert_eq!(plain(25), "↑10 ↓5 0.0%/128k (auto)");
        assert_eq!(plain(20), "↑10 ↓5 0.0%/128k ...");
    }

    #[test]
    fn stats_count_every_branch_usage_entries_summaries_and_tool_results() {
        let usage = |input: u64, cost: f64| {
            format!(
                r#"{{"input":{input},"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":{cost}}}}}"#
            )
        };
        let assistant = |id: &str, parent: &str, input: u64, call: bool| {
            let content = if call {
                r#"[{"type":"toolCall","id":"c1","name":"ls","arguments":{}}]"#
            } else {
                r#"[{"type":"text","text":"a"}]"#
            };
            format!(
                r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"assistant","content":{content},"api":"x","provider":"p","model":"m","usage":{},"stopReason":"stop","timestamp":1}}}}"#,
                usage(input, 0.5)
            )
        };
        let user = |id: &str, parent: &str| {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":"q","timestamp":1}}}}"#
            )
        };
        let lines = [
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#.to_owned(),
            user("u1", "null"),
            assistant("a1", "u1", 10, true),
            format!(
                r#"{{"type":"message","id":"t1","parentId":"a1","timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"toolResult","toolCallId":"c1","toolName":"ls","content":[],"isError":false,"timestamp":1,"usage":{}}}}}"#,
                usage(100, 0.25)
            ),
            // A second branch from u1: counted too, as pi's footer counts the whole file.
            assistant("a2", "u1", 1000, false),
            format!(
                r#"{{"type":"usage","id":"w1","parentId":"a2","timestamp":"2026-01-01T00:00:00.000Z","kind":"cache_warm","provider":"p","model":"m","usage":{}}}"#,
                usage(10000, 1.0)
            ),
            r#"{"type":"compaction","id":"k1","parentId":"w1","timestamp":"2026-01-01T00:00:00.000Z","summary":"s","firstKeptEntryId":"a2","tokensBefore":5,"usage":{"input":100000}}"#.to_owned(),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let session =
            Session::open(&path, None, None, OpenMode::ReadOnly, &SessionEnv::system()).unwrap();
        let stats = session_stats(&session);
        assert_eq!(
            (
                stats.user,
                stats.assistant,
                stats.tool_calls,
                stats.tool_results,
                stats.messages
            ),
            (1, 2, 1, 1, 4)
        );
        assert_eq!(stats.tokens.input, 111_110);
        assert_eq!(stats.tokens.output, 8);
        assert!(
            (stats.tokens.cost - 2.25).abs() < 1e-9,
            "{}",
            stats.tokens.cost
        );
    }
}
