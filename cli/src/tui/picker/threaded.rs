//! The picker's threaded order (pi's `buildSessionTree` + `flattenSessionTree`): a session
//! forked from another listed session (header `parentSession`) is shown under it; siblings
//! and roots newest first.
//!
//! pith differs where pi would hide sessions: a session whose `parentSession` is itself, or
//! a cycle of sessions naming each other, makes pi skip them (or loop); here the sessions not
//! reachable from a root become roots themselves.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use pith_store::list::SessionInfo;

/// One line of the picker list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Index into the scope's sessions.
    pub index: usize,
    /// Nesting depth (0 for roots and in flat orders).
    pub depth: usize,
    /// Whether it is its parent's last child (draws `└─` instead of `├─`).
    pub is_last: bool,
    /// For each ancestor level below the root, whether a `│` continues there.
    pub ancestor_continues: Vec<bool>,
}

impl Row {
    /// A row of a flat (searched or recent) list.
    pub fn flat(index: usize) -> Row {
        Row {
            index,
            depth: 0,
            is_last: true,
            ancestor_continues: Vec::new(),
        }
    }

    /// pi's `buildTreePrefix`: `│  ` per continuing ancestor, then `├─ ` or `└─ `.
    pub fn prefix(&self) -> String {
        if self.depth == 0 {
            return String::new();
        }
        let mut s: String = self
            .ancestor_continues
            .iter()
            .map(|&c| if c { "│  " } else { "   " })
            .collect();
        s.push_str(if self.is_last { "└─ " } else { "├─ " });
        s
    }
}

/// Rows of `candidates` (indices into `sessions`) in threaded order. `canon[i]` is session
/// `i`'s real path and `parent[i]` its parent's, when it names one.
pub fn threaded_rows(
    sessions: &[SessionInfo],
    canon: &[PathBuf],
    parent: &[Option<PathBuf>],
    candidates: &[usize],
) -> Vec<Row> {
    let by_path: HashMap<&Path, usize> = candidates
        .iter()
        .enumerate()
        .map(|(k, &i)| (canon[i].as_path(), k))
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); candidates.len()];
    let mut roots = Vec::new();
    for (k, &i) in candidates.iter().enumerate() {
        match parent[i]
            .as_deref()
            .and_then(|p| by_path.get(p))
            .filter(|&&pk| pk != k)
        {
            Some(&pk) => children[pk].push(k),
            None => roots.push(k),
        }
    }
    let newest_first = |v: &mut Vec<usize>| {
        v.sort_by(|&a, &b| {
            sessions[candidates[b]]
                .modified_ms
                .total_cmp(&sessions[candidates[a]].modified_ms)
        });
    };
    newest_first(&mut roots);
    for kids in &mut children {
        newest_first(kids);
    }
    let mut rows = Vec::with_capacity(candidates.len());
    let mut seen = vec![false; candidates.len()];
    walk(&roots, &children, candidates, &mut seen, &mut rows);
    // Cycles: nothing reached them from a root.
    let mut orphans: Vec<usize> = (0..candidates.len()).filter(|&k| !seen[k]).collect();
    newest_first(&mut orphans);
    for k in orphans {
        if !seen[k] {
            walk(&[k], &children, candidates, &mut seen, &mut rows);
        }
    }
    rows
}

/// Pre-order walk without recursion (fork chains can be long).
fn walk(
    roots: &[usize],
    children: &[Vec<usize>],
    candidates: &[usize],
    seen: &mut [bool],
    rows: &mut Vec<Row>,
) {
    // (node, depth, ancestor_continues, is_last)
    let mut stack: Vec<(usize, usize, Vec<bool>, bool)> = roots
        .iter()
        .enumerate()
        .rev()
        .map(|(n, &k)| (k, 0, Vec::new(), n + 1 == roots.len()))
        .collect();
    while let Some((k, depth, continues, is_last)) = stack.pop() {
        if seen[k] {
            continue;
        }
        seen[k] = true;
        let kids = &children[k];
        for (n, &kid) in kids.iter().enumerate().rev() {
            let mut c = continues.clone();
            // Only non-root ancestors draw a continuation line.
            c.push(depth > 0 && !is_last);
            stack.push((kid, depth + 1, c, n + 1 == kids.len()));
        }
        rows.push(Row {
            index: candidates[k],
            depth,
            is_last,
            ancestor_continues: continues,
        });
    }
}
