//! The status pi keeps under its editor, printed after each run: the directory (with git
//! branch and session name) and the token, cost and context stats with the model on the
//! right (pi's `FooterComponent`); and `/session`'s statistics (pi's `getSessionStats`).

use std::path::Path;

use pith_events::{AgentMessage, ContentBlock, EntryType, StopReason, Usage};
use pith_store::Session;
use pith_store::compaction::{calculate_context_tokens, estimate_context_tokens};

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
}

/// Usage of every assistant reply in the file, all branches (pi's footer counts them all).
pub fn session_totals(session: &Session) -> Totals {
    let mut t = Totals::default();
    for entry in session.entries() {
        if entry.is_assistant_message()
            && let Some(Ok(AgentMessage::Assistant(a))) = entry.decode_message()
        {
            t.add(&a.usage);
        }
    }
    t
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
pub struct Footer<'a> {
    /// The session's directory.
    pub cwd: &'a str,
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
    pub model: (&'a str, &'a str),
    /// `Some(level)` when the model reasons.
    pub thinking: Option<&'a str>,
    /// Show the provider before the model (more than one provider has a key).
    pub show_provider: bool,
}

impl Footer<'_> {
    /// pi's two footer lines, `cols` wide, dimmed.
    pub fn lines(&self, cols: usize) -> Vec<String> {
        let mut pwd = super::tools::shorten_path(self.cwd);
        if let Some(branch) = git_branch(Path::new(self.cwd)) {
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
        let mut right = match self.thinking {
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
        let pad = cols.saturating_sub(left_width + width(&right)).max(2);
        vec![
            style::dim(&super::screen::truncate(&pwd, cols)),
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
fn git_branch(dir: &Path) -> Option<String> {
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

/// `/session`: pi's "Session Info" (name, file, id, message counts over the current context,
/// token and cost sums over its replies).
pub fn session_info(
    name: Option<&str>,
    file: Option<&Path>,
    id: &str,
    context: &[AgentMessage],
) -> Vec<String> {
    let count = |role: &str| context.iter().filter(|m| m.role() == role).count();
    let mut t = Totals::default();
    let mut tool_calls = 0;
    for m in context {
        if let AgentMessage::Assistant(a) = m {
            tool_calls += a
                .content
                .iter()
                .filter(|b| matches!(b, ContentBlock::ToolCall(_)))
                .count();
            t.add(&a.usage);
        }
    }
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
    out.push(field("User:", count("user").to_string()));
    out.push(field("Assistant:", count("assistant").to_string()));
    out.push(field("Tool Calls:", tool_calls.to_string()));
    out.push(field("Tool Results:", count("toolResult").to_string()));
    out.push(field("Total:", context.len().to_string()));
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
