//! Totals over every entry of every branch, as pi's export header shows them (`computeStats`).

use pith_events::{AgentMessage, AssistantMessage, ContentBlock, SessionEntry};

/// Message counts, token and cost totals, and the models that answered.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Stats {
    /// `user` messages.
    pub user: u64,
    /// `assistant` messages.
    pub assistant: u64,
    /// `toolResult` messages.
    pub tool_results: u64,
    /// `custom_message` entries.
    pub custom: u64,
    /// `compaction` entries.
    pub compactions: u64,
    /// `branch_summary` entries.
    pub branch_summaries: u64,
    /// Tool-call blocks in assistant messages.
    pub tool_calls: u64,
    /// Input, output, cache-read and cache-write tokens.
    pub tokens: [u64; 4],
    /// USD for the same four categories; pi's total is their sum.
    pub cost: [f64; 4],
    /// `provider/model`, first use first.
    pub models: Vec<String>,
}

impl Stats {
    /// Counts one decoded entry.
    pub fn add(&mut self, entry: &SessionEntry) {
        match entry {
            SessionEntry::Message(m) => match &m.message {
                AgentMessage::User(_) => self.user += 1,
                AgentMessage::Assistant(a) => self.add_assistant(a),
                AgentMessage::ToolResult(_) => self.tool_results += 1,
                AgentMessage::System(_)
                | AgentMessage::BashExecution(_)
                | AgentMessage::Custom(_)
                | AgentMessage::BranchSummary(_)
                | AgentMessage::CompactionSummary(_)
                | AgentMessage::Unknown(_) => {}
            },
            SessionEntry::Compaction(_) => self.compactions += 1,
            SessionEntry::BranchSummary(_) => self.branch_summaries += 1,
            SessionEntry::CustomMessage(_) => self.custom += 1,
            SessionEntry::ThinkingLevelChange(_)
            | SessionEntry::ModelChange(_)
            | SessionEntry::Custom(_)
            | SessionEntry::Label(_)
            | SessionEntry::SessionInfo(_)
            // pi's export counts neither edits nor `usage` entries (its `computeStats`).
            | SessionEntry::ContextEdit(_)
            | SessionEntry::Usage(_)
            | SessionEntry::Unknown(_) => {}
        }
    }

    fn add_assistant(&mut self, a: &AssistantMessage) {
        self.assistant += 1;
        let model = if a.provider.is_empty() {
            a.model.clone()
        } else {
            format!("{}/{}", a.provider, a.model)
        };
        if !a.model.is_empty() && !self.models.contains(&model) {
            self.models.push(model);
        }
        let u = &a.usage;
        for (total, n) in
            self.tokens
                .iter_mut()
                .zip([u.input, u.output, u.cache_read, u.cache_write])
        {
            *total = total.saturating_add(n);
        }
        let c = &u.cost;
        for (total, x) in self
            .cost
            .iter_mut()
            .zip([c.input, c.output, c.cache_read, c.cache_write])
        {
            if x.is_finite() {
                *total += x;
            }
        }
        self.tool_calls += a
            .content
            .iter()
            .filter(|b| matches!(b, ContentBlock::ToolCall(_)))
            .count() as u64;
    }

    /// `↑input ↓output Rcache-read Wcache-write`, zero counts left out (pi's `tokenParts`).
    pub fn tokens_line(&self) -> String {
        let parts: Vec<String> = ["↑", "↓", "R", "W"]
            .iter()
            .zip(self.tokens)
            .filter(|(_, n)| *n > 0)
            .map(|(mark, n)| format!("{mark}{}", format_tokens(n)))
            .collect();
        if parts.is_empty() {
            "0".into()
        } else {
            parts.join(" ")
        }
    }

    /// `3 user, 5 assistant, …`, zero counts left out (pi's `msgParts`).
    pub fn messages_line(&self) -> String {
        let parts: Vec<String> = [
            (self.user, "user"),
            (self.assistant, "assistant"),
            (self.tool_results, "tool results"),
            (self.custom, "custom"),
            (self.compactions, "compactions"),
            (self.branch_summaries, "branch summaries"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if parts.is_empty() {
            "0".into()
        } else {
            parts.join(", ")
        }
    }

    /// Total cost in USD.
    pub fn total_cost(&self) -> f64 {
        self.cost.iter().sum()
    }
}

/// pi's `formatTokens`: `999`, `1.2k`, `12k`, `1.2M`.
pub fn format_tokens(n: u64) -> String {
    // Token counts stay far below 2^53, where f64 is exact.
    let x = n as f64;
    if n < 1_000 {
        n.to_string()
    } else if n < 10_000 {
        format!("{:.1}k", x / 1_000.0)
    } else if n < 1_000_000 {
        format!("{}k", (x / 1_000.0).round())
    } else {
        format!("{:.1}M", x / 1_000_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_format_like_pi() {
        assert_eq!(format_tokens(999), "999");
        assert_eq!(format_tokens(1_234), "1.2k");
        assert_eq!(format_tokens(98_765), "99k");
        assert_eq!(format_tokens(1_050_000), "1.1M");
    }

    #[test]
    fn empty_stats_read_zero() {
        let s = Stats::default();
        assert_eq!(s.tokens_line(), "0");
        assert_eq!(s.messages_line(), "0");
        assert_eq!(s.total_cost(), 0.0);
    }
}
