//! The session picker's search, as pi's `session-selector-search.js` and pi-tui's
//! `fuzzyMatch` define it (spec: lifecycle.md §8 "Session picker").
//!
//! The query language itself (`re:`, `"phrases"`, fuzzy words) lives in
//! `pith_store::search::query`, shared with the search index; this module is pi's in-memory
//! matcher over a listing: fuzzy tokens match when their characters appear in order, every
//! token must match, and scores are pi's (lower is better). The text searched is
//! `id name allMessagesText cwd`.
//!
//! Differences from pi, both invisible in practice: positions count Unicode scalar values
//! where JavaScript counts UTF-16 units (only scores of text with emoji and other astral
//! characters differ), and the regex dialect is Rust's `regex` (no look-around or
//! back-references; such a pattern shows pi's "invalid regex" state, an empty list).

use pith_store::list::SessionInfo;
pub use pith_store::search::query::{Query, Token, parse_query};

/// What a session is searched by, prepared once: pi's `id name allMessagesText cwd`.
#[derive(Debug, Clone, Default)]
pub struct SearchDoc {
    raw: String,
    lower: String,
}

impl SearchDoc {
    /// The searchable text of `info`. A listing from the index has no `allMessagesText`;
    /// until the texts are loaded the first message stands in for them.
    pub fn new(info: &SessionInfo) -> SearchDoc {
        let texts = if info.all_messages_text.is_empty() && info.first_message != "(no messages)" {
            info.first_message.as_str()
        } else {
            info.all_messages_text.as_str()
        };
        let raw = format!(
            "{} {} {} {}",
            info.id,
            info.name.as_deref().unwrap_or(""),
            texts,
            info.cwd
        );
        SearchDoc {
            lower: raw.to_lowercase(),
            raw,
        }
    }
}

/// pi's `matchSession`: `Some(score)` (lower is better) when `doc` matches `query`.
pub fn match_doc(doc: &SearchDoc, query: &Query) -> Option<f64> {
    match query {
        Query::Invalid(_) => None,
        Query::Regex(re) => re
            .find(&doc.raw)
            .map(|m| doc.raw[..m.start()].chars().count() as f64 * 0.1),
        Query::Tokens(tokens) => {
            let mut total = 0.0;
            let mut normalized: Option<String> = None;
            for token in tokens {
                match token {
                    Token::Phrase(p) => {
                        let phrase = normalize_whitespace_lower(p);
                        if phrase.is_empty() {
                            continue;
                        }
                        let text =
                            normalized.get_or_insert_with(|| normalize_whitespace_lower(&doc.raw));
                        let at = text.find(&phrase)?;
                        total += text[..at].chars().count() as f64 * 0.1;
                    }
                    Token::Fuzzy(f) => total += fuzzy_match_lower(&f.to_lowercase(), &doc.lower)?,
                }
            }
            Some(total)
        }
    }
}

fn normalize_whitespace_lower(s: &str) -> String {
    pith_store::search::query::normalize(s)
}

/// pi-tui's `fuzzyMatch(query, text)`: `Some(score)` when the characters of `query` appear in
/// order in `text` (both compared lower-cased); consecutive and word-start matches score
/// better, gaps and late matches worse. `ab12` also tries `12ab` (and the reverse), +5.
#[cfg(test)]
pub fn fuzzy_match(query: &str, text: &str) -> Option<f64> {
    fuzzy_match_lower(&query.to_lowercase(), &text.to_lowercase())
}

fn fuzzy_match_lower(query: &str, text: &str) -> Option<f64> {
    if let Some(score) = fuzzy_score(query, text) {
        return Some(score);
    }
    let swapped = swap_letters_digits(query)?;
    fuzzy_score(&swapped, text).map(|s| s + 5.0)
}

/// `^[a-z]+[0-9]+$` ⇒ digits then letters, and the reverse.
fn swap_letters_digits(q: &str) -> Option<String> {
    let split = q.find(|c: char| !c.is_ascii_lowercase())?;
    let (a, b) = q.split_at(split);
    if !a.is_empty() && !b.is_empty() && b.chars().all(|c| c.is_ascii_digit()) {
        return Some(format!("{b}{a}"));
    }
    let split = q.find(|c: char| !c.is_ascii_digit())?;
    let (a, b) = q.split_at(split);
    if !a.is_empty() && !b.is_empty() && b.chars().all(|c| c.is_ascii_lowercase()) {
        return Some(format!("{b}{a}"));
    }
    None
}

fn fuzzy_score(query: &str, text: &str) -> Option<f64> {
    let q: Vec<char> = query.chars().collect();
    let mut qi = 0;
    let mut score = 0.0;
    // pi starts `lastMatchIndex` at -1, so a match at index 0 counts as consecutive.
    let mut last: isize = -1;
    let mut consecutive = 0.0;
    let mut prev: Option<char> = None;
    for (i, c) in text.chars().enumerate() {
        if qi == q.len() {
            break;
        }
        if c == q[qi] {
            let i = i as isize;
            let boundary = prev.is_none_or(|p| p.is_whitespace() || "-_./:".contains(p));
            if last == i - 1 {
                consecutive += 1.0;
                score -= consecutive * 5.0;
            } else {
                consecutive = 0.0;
                if last >= 0 {
                    score += (i - last - 1) as f64 * 2.0;
                }
            }
            if boundary {
                score -= 10.0;
            }
            score += i as f64 * 0.1;
            last = i;
            qi += 1;
        }
        prev = Some(c);
    }
    if qi < q.len() {
        return None;
    }
    if query == text {
        score -= 100.0;
    }
    Some(score)
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
