//! The session picker's search over a listing, as pi 1.6.0's `session-selector-search.js`
//! defines it (spec: lifecycle.md §8 "Session picker").
//!
//! The query language (`re:`, `"phrases"`, bare words) and the scoring of one token (match
//! tiers: name, then id, messages or cwd, then the word's letters scattered in the name or
//! cwd) live in `pith_store::search`, shared with the search index; this module holds
//! pi's in-memory side: what a session is searched by, prepared once, and the filter and sort
//! of a listing. Every token must match; scores are summed (lower is better).
//!
//! Regexes read as JavaScript's (`pith_store::search::query::SearchRegex`); a pattern no
//! engine takes shows pi's "invalid regex" state, an empty list.

use std::borrow::Cow;
use std::sync::OnceLock;

use pith_store::list::SessionInfo;
use pith_store::search::matching::{Fields, Needle, needle_score, needles};
use pith_store::search::query::normalize;
pub use pith_store::search::query::{Query, parse_query};

/// What a session is searched by, prepared once: pi's `SessionInfo` fields, the messages'
/// text lower-cased (pi's `messageTextCache`) and, when a phrase asks, normalised.
#[derive(Debug, Clone, Default)]
pub struct SearchDoc {
    id: String,
    name: Option<String>,
    cwd: String,
    text: String,
    lower: String,
    normalized: OnceLock<String>,
}

impl SearchDoc {
    /// The searchable fields of `info`. A listing from the index has no `allMessagesText`;
    /// until the texts are loaded the first message stands in for them.
    pub fn new(info: &SessionInfo) -> SearchDoc {
        let text = if info.all_messages_text.is_empty() && info.first_message != "(no messages)" {
            info.first_message.clone()
        } else {
            info.all_messages_text.clone()
        };
        SearchDoc {
            id: info.id.clone(),
            name: info.name.clone(),
            cwd: info.cwd.clone(),
            lower: text.to_lowercase(),
            text,
            normalized: OnceLock::new(),
        }
    }

    fn in_messages(&self, needle: &Needle) -> bool {
        needle.found_with(
            &self.text,
            || Cow::Borrowed(self.lower.as_str()),
            || {
                Cow::Borrowed(
                    self.normalized
                        .get_or_init(|| normalize(&self.lower))
                        .as_str(),
                )
            },
        )
    }
}

/// pi's `matchSession`: `Some(score)` (lower is better) when `doc` matches `query`.
pub fn match_doc(doc: &SearchDoc, query: &Query) -> Option<f64> {
    let fields = Fields {
        id: &doc.id,
        name: doc.name.as_deref(),
        cwd: &doc.cwd,
    };
    let mut total = 0.0;
    for needle in needles(query)? {
        total += needle_score(&needle, &fields, || doc.in_messages(&needle))?;
    }
    Some(total)
}

/// How the list is ordered (pi's `sortMode`, cycled by Ctrl+S).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortMode {
    /// Forked sessions under their parent, newest first (a search sorts by relevance).
    Threaded,
    /// Newest first; a search only filters.
    Recent,
    /// By search score, then newest first.
    Relevance,
}

impl SortMode {
    /// The next mode: threaded → recent → relevance → threaded.
    pub fn next(self) -> SortMode {
        match self {
            SortMode::Threaded => SortMode::Recent,
            SortMode::Recent => SortMode::Relevance,
            SortMode::Relevance => SortMode::Threaded,
        }
    }

    /// The header's name for it.
    pub fn label(self) -> &'static str {
        match self {
            SortMode::Threaded => "Threaded",
            SortMode::Recent => "Recent",
            SortMode::Relevance => "Fuzzy",
        }
    }
}

/// pi's `filterAndSortSessions` for a non-empty `query` over `sessions` (newest first):
/// indices of the matches, kept in order for [`SortMode::Recent`], else sorted by score
/// (stable), ties newest first. An invalid regex matches nothing.
pub fn filter_and_sort(
    sessions: &[SessionInfo],
    docs: &[SearchDoc],
    candidates: impl Iterator<Item = usize>,
    query: &Query,
    sort: SortMode,
) -> Vec<usize> {
    let mut scored: Vec<(usize, f64)> = candidates
        .filter_map(|i| match_doc(&docs[i], query).map(|s| (i, s)))
        .collect();
    if sort != SortMode::Recent {
        scored.sort_by(|a, b| {
            a.1.total_cmp(&b.1).then_with(|| {
                sessions[b.0]
                    .modified_ms
                    .total_cmp(&sessions[a.0].modified_ms)
            })
        });
    }
    scored.into_iter().map(|(i, _)| i).collect()
}

#[cfg(test)]
mod tests;
