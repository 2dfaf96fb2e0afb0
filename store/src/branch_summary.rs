//! What a branch summary covers when `/tree` leaves a branch (spec: compaction.md §9,
//! tree-and-context.md §9): the abandoned entries and the messages worth summarizing within a
//! token budget.

use std::collections::HashSet;

use pith_events::{AgentMessage, CompactionSummaryMessage, EntryType};
use serde_json::Value;

use crate::compaction::{FileOps, estimate_tokens, summary_message};
use crate::tree::{Leaf, SessionTree};

/// pi's `BRANCH_SUMMARY_PREAMBLE`: what every generated branch summary starts with.
pub const BRANCH_SUMMARY_PREAMBLE: &str = "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n";

/// The summary text of a branch with nothing to summarize (no model call).
pub const NO_CONTENT: &str = "No content to summarize";

/// pi's `branchSummary.reserveTokens` default.
pub const DEFAULT_RESERVE_TOKENS: u64 = 16_384;

/// `collectEntriesForBranchSummary`: the entries left behind when the leaf moves from
/// `old_leaf` to `target`, oldest first, and their deepest common ancestor (compaction.md
/// §9.1). A root leaf leaves nothing behind; moving to a descendant of the old leaf neither.
pub fn collect_entries_for_branch_summary(
    tree: &SessionTree,
    old_leaf: Leaf,
    target: usize,
) -> (Vec<usize>, Option<usize>) {
    let Leaf::At(old) = old_leaf else {
        return (Vec::new(), None);
    };
    let old_path = tree.path_to(old);
    let on_old: HashSet<usize> = old_path.iter().copied().collect();
    let common = tree
        .path_to(target)
        .into_iter()
        .rev()
        .find(|i| on_old.contains(i));
    let from = match common {
        Some(c) => old_path.iter().position(|&i| i == c).map_or(0, |p| p + 1),
        None => 0,
    };
    (old_path[from..].to_vec(), common)
}

/// `prepareBranchEntries(entries, tokenBudget)` (compaction.md §9.2): the messages to
/// summarize, newest kept first within `token_budget` (0 = no limit), and the files they
/// touched (including earlier branch summaries' `details`). A compaction or branch summary
/// that would cross the budget is still taken while under 90% of it, since it stands for
/// much more history than its size.
pub fn prepare_branch_entries(
    tree: &SessionTree,
    entries: &[usize],
    token_budget: u64,
) -> (Vec<AgentMessage>, FileOps) {
    let mut file_ops = FileOps::default();
    for &i in entries {
        let e = &tree.entries()[i];
        if e.kind() != &EntryType::BranchSummary {
            continue;
        }
        if let Ok(fields) = e.decode_as::<serde_json::Map<String, Value>>()
            && fields.get("fromHook").and_then(Value::as_bool) != Some(true)
            && let Some(details) = fields.get("details")
        {
            file_ops.add_details(details);
        }
    }
    let mut newest_first = Vec::new();
    let mut total = 0u64;
    for &i in entries.iter().rev() {
        let Some(message) = branch_message(tree, i) else {
            continue;
        };
        file_ops.add_message(&message);
        let tokens = estimate_tokens(&message);
        if token_budget > 0 && total + tokens > token_budget {
            let summary_like = matches!(
                tree.entries()[i].kind(),
                EntryType::Compaction | EntryType::BranchSummary
            );
            if summary_like && (total as f64) < 0.9 * token_budget as f64 {
                newest_first.push(message);
            }
            break;
        }
        newest_first.push(message);
        total += tokens;
    }
    newest_first.reverse();
    (newest_first, file_ops)
}

/// What an entry contributes to a branch summary: messages except tool results, custom
/// messages, branch summaries, and compactions as their summary.
fn branch_message(tree: &SessionTree, index: usize) -> Option<AgentMessage> {
    let e = &tree.entries()[index];
    match e.kind() {
        EntryType::Compaction => {
            let fields: serde_json::Map<String, Value> = e.decode_as().ok()?;
            Some(AgentMessage::CompactionSummary(CompactionSummaryMessage {
                summary: fields
                    .get("summary")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                tokens_before: fields
                    .get("tokensBefore")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                timestamp: Some(e.timestamp_ms())
                    .filter(|t| !t.is_nan())
                    .map(|t| t as i64),
            }))
        }
        _ => summary_message(tree, index).filter(|m| !matches!(m, AgentMessage::ToolResult(_))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::entry::Entry;

    /// A tree from `(id, parent, json body)`; bodies are message/branch_summary/compaction.
    fn tree(lines: &[(&str, Option<&str>, &str)]) -> SessionTree {
        let entries: Vec<Entry> = lines
            .iter()
            .enumerate()
            .map(|(n, (id, parent, body))| {
                let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
                let line = format!(
                    r#"{{"id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:0{}.000Z",{body}}}"#,
                    n % 10
                );
                Entry::parse(&line, n + 2).expect("entry")
            })
            .collect();
        SessionTree::new(entries).0
    }

    fn user(text: &str) -> String {
        format!(r#""type":"message","message":{{"role":"user","content":"{text}","timestamp":1}}"#)
    }

    fn assistant_reading(path: &str) -> String {
        format!(
            r#""type":"message","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"c","name":"read","arguments":{{"path":"{path}"}}}}],"api":"a","provider":"p","model":"m","usage":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"toolUse","timestamp":2}}"#
        )
    }

    const RESULT: &str = r#""type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":"contents"}],"isError":false,"timestamp":3}"#;

    //   a ─ b ─ c ─ d        (old leaf d)
    //        └─ e            (target e)
    fn forked() -> SessionTree {
        tree(&[
            ("a", None, &user("start")),
            ("b", Some("a"), &assistant_reading("x.rs")),
            ("c", Some("b"), RESULT),
            ("d", Some("c"), &user("abandoned idea")),
            ("e", Some("b"), &user("other way")),
        ])
    }

    #[test]
    fn the_abandoned_tail_is_what_lies_below_the_common_ancestor() {
        let t = forked();
        let ids = |v: Vec<usize>| -> Vec<String> {
            v.into_iter()
                .map(|i| t.entries()[i].id().to_owned())
                .collect()
        };
        let at = |id: &str| t.index_of(id).unwrap();
        let (entries, common) = collect_entries_for_branch_summary(&t, Leaf::At(at("d")), at("e"));
        assert_eq!(
            (ids(entries), common),
            (vec!["c".into(), "d".into()], Some(at("b")))
        );
        // To an ancestor: the tail below it.
        let (entries, common) = collect_entries_for_branch_summary(&t, Leaf::At(at("d")), at("a"));
        assert_eq!(
            (ids(entries), common),
            (vec!["b".into(), "c".into(), "d".into()], Some(at("a")))
        );
        // To a descendant, or from the root: nothing.
        let (entries, _) = collect_entries_for_branch_summary(&t, Leaf::At(at("b")), at("d"));
        assert!(entries.is_empty());
        assert_eq!(
            collect_entries_for_branch_summary(&t, Leaf::Root, at("d")),
            (vec![], None)
        );
    }

    #[test]
    fn tool_results_are_left_out_and_files_are_tracked() {
        let t = forked();
        let all: Vec<usize> = (0..4).collect();
        let (messages, files) = prepare_branch_entries(&t, &all, 0);
        let roles: Vec<&str> = messages.iter().map(|m| m.role()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(
            files.details(),
            serde_json::json!({"readFiles":["x.rs"],"modifiedFiles":[]})
        );
    }

    #[test]
    fn the_budget_keeps_the_newest_and_lets_a_summary_in_under_ninety_percent() {
        let long = "w".repeat(400); // 100 tokens
        let summary = format!(
            r#""type":"branch_summary","fromId":"a","summary":"{}","details":{{"readFiles":["old.rs"],"modifiedFiles":["m.rs"]}}"#,
            "S".repeat(160) // 40 tokens
        );
        let t = tree(&[
            ("a", None, &user(&long)),
            ("s", Some("a"), &summary),
            ("b", Some("s"), &user(&long)),
        ]);
        let all = [0, 1, 2];
        let roles = |budget| -> Vec<String> {
            prepare_branch_entries(&t, &all, budget)
                .0
                .iter()
                .map(|m| m.role().to_owned())
                .collect()
        };
        // 100 + 40 crosses 120, but 100 < 108 (90%): the summary comes in, then it stops.
        assert_eq!(roles(120), ["branchSummary", "user"]);
        // 100 < 94.5 is false: the summary stays out.
        assert_eq!(roles(105), ["user"]);
        assert_eq!(roles(250), ["user", "branchSummary", "user"]);
        assert_eq!(roles(0), ["user", "branchSummary", "user"]);
        // The files of a summary count even when the budget leaves it out.
        let (_, files) = prepare_branch_entries(&t, &all, 105);
        assert_eq!(
            files.details(),
            serde_json::json!({"readFiles":["old.rs"],"modifiedFiles":["m.rs"]})
        );
    }
}
