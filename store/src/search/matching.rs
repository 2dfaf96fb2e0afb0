//! How one session matches one query token, and how well: pi 1.6.0's match tiers
//! (`session-selector-search.js`: `matchLiteralToken`, `matchFuzzyToken`, `matchPhraseToken`,
//! `matchRegex`) and pi-tui's `fuzzyMatch`. The in-memory picker and the search index both
//! score through here; they differ only in how they learn whether the messages contain a
//! token (a scan of the text, or the index).
//!
//! Tiers, best first; a token's score is `tier × 1,000,000` plus, for the name tiers, the
//! fuzzy score of the token in the name (lower is better), and a session's score is the sum
//! over its tokens:
//! - 0: the token is in the session's name;
//! - 1: it is in the session id, the messages or the cwd (a word anywhere in them, even
//!   inside another word, as `String.includes` finds it);
//! - 2 (bare words only): its characters appear in order in the name or the cwd.

use std::borrow::Cow;

use super::query::{Query, SearchRegex, Token, normalize};

/// Weight of one tier (pi's `TIER_WEIGHT`).
pub const TIER_WEIGHT: f64 = 1_000_000.0;
const TIER_NAME: f64 = 0.0;
const TIER_TEXT: f64 = TIER_WEIGHT;
const TIER_FUZZY: f64 = 2.0 * TIER_WEIGHT;

/// The short fields of a session, as pi's `SessionInfo` holds them.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    /// The session id (the header's `id`).
    pub id: &'a str,
    /// The session's name (its last `session_info` name), if it has one.
    pub name: Option<&'a str>,
    /// The header's cwd.
    pub cwd: &'a str,
}

/// What a token looks for in the messages, prepared once per query.
#[derive(Debug, Clone)]
pub enum Needle {
    /// A bare word, lower-cased: a substring of the lower-cased text.
    Word(String),
    /// A phrase, [`normalize`]d: a substring of the normalised text.
    Phrase(String),
    /// A regex, tested on the text as it is.
    Regex(SearchRegex),
}

impl Needle {
    /// The needle of a token.
    pub fn of_token(token: &Token) -> Needle {
        match token {
            Token::Fuzzy(w) => Needle::Word(w.to_lowercase()),
            Token::Phrase(p) => Needle::Phrase(normalize(p)),
        }
    }

    /// Whether `text` (one message, or all of them) holds the needle.
    pub fn found_in(&self, text: &str) -> bool {
        self.found_with(
            text,
            || text.to_lowercase().into(),
            || normalize(text).into(),
        )
    }

    /// [`Needle::found_in`] for a text whose lower-cased and [`normalize`]d forms the
    /// caller may keep: `lower` and `normalized` give them when asked.
    pub fn found_with<'a>(
        &self,
        text: &str,
        lower: impl FnOnce() -> Cow<'a, str>,
        normalized: impl FnOnce() -> Cow<'a, str>,
    ) -> bool {
        match self {
            Needle::Word(w) => lower().contains(w.as_str()),
            Needle::Phrase(p) => normalized().contains(p.as_str()),
            Needle::Regex(re) => re.is_match(text),
        }
    }

    /// An empty phrase, which pi skips (it matches every session and adds nothing).
    fn is_empty_phrase(&self) -> bool {
        matches!(self, Needle::Phrase(p) if p.is_empty())
    }
}

/// The needles of `query` that pi scores (`matchSession`): one per token, an empty phrase
/// left out (it matches every session and adds nothing), or the regex; `None` for an invalid
/// regex, which matches nothing. No needle at all means every session matches.
pub fn needles(query: &Query) -> Option<Vec<Needle>> {
    match query {
        Query::Invalid(_) => None,
        Query::Regex(re) => Some(vec![Needle::Regex(re.clone())]),
        Query::Tokens(tokens) => Some(
            tokens
                .iter()
                .map(Needle::of_token)
                .filter(|n| !n.is_empty_phrase())
                .collect(),
        ),
    }
}

/// The score of one needle for one session (pi's per-token matchers), `None` when it does not
/// match. `in_messages` tells whether the session's messages hold it; it is asked only when
/// the name and id do not already settle the answer.
pub fn needle_score(
    needle: &Needle,
    fields: &Fields<'_>,
    in_messages: impl FnOnce() -> bool,
) -> Option<f64> {
    let name = fields.name.unwrap_or("");
    match needle {
        Needle::Word(w) => {
            // `w` is lower-cased already (`Needle::of_token`).
            let name_lower = lower(name);
            if name_lower.contains(w.as_str()) {
                return Some(TIER_NAME + fuzzy_score_lower(w, &name_lower).unwrap_or(0.0));
            }
            let cwd_lower = lower(fields.cwd);
            if lower(fields.id).contains(w.as_str())
                || in_messages()
                || cwd_lower.contains(w.as_str())
            {
                return Some(TIER_TEXT);
            }
            [name_lower, cwd_lower]
                .iter()
                .filter_map(|field| fuzzy_score_lower(w, field))
                .min_by(f64::total_cmp)
                .map(|s| TIER_FUZZY + s)
        }
        Needle::Phrase(p) => {
            let name_norm = normalize(name);
            if name_norm.contains(p.as_str()) {
                return Some(TIER_NAME + fuzzy_score_lower(p, &name_norm).unwrap_or(0.0));
            }
            (lower(fields.id).contains(p.as_str())
                || in_messages()
                || normalize(fields.cwd).contains(p.as_str()))
            .then_some(TIER_TEXT)
        }
        Needle::Regex(re) => {
            if fields.name.is_some_and(|n| re.is_match(n)) {
                return Some(TIER_NAME);
            }
            (re.is_match(fields.id) || in_messages() || re.is_match(fields.cwd))
                .then_some(TIER_TEXT)
        }
    }
}

/// pi-tui's `fuzzyMatch(query, text)`: `Some(score)` when the characters of `query` appear in
/// order in `text` (both compared lower-cased); consecutive and word-start matches score
/// better (lower), gaps and late matches worse. `ab12` also tries `12ab` (and the reverse), +5.
/// Positions count Unicode scalar values where JavaScript counts UTF-16 units.
pub fn fuzzy_match(query: &str, text: &str) -> Option<f64> {
    fuzzy_score_lower(&lower(query), &lower(text))
}

/// `text.to_lowercase()` (JavaScript's `toLowerCase()` for what pi compares), borrowed when
/// that changes nothing: most ids, cwds and names are lower-case ASCII, and a search scores
/// every session's fields.
fn lower(text: &str) -> Cow<'_, str> {
    if !text.is_ascii() {
        Cow::Owned(text.to_lowercase())
    } else if text.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(text.to_ascii_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

/// pi-tui's `fuzzyFilter`: the indices of `texts` that every token of `query` (split at
/// whitespace and `/`) [`fuzzy_match`]es, best total score first (ties keep their order);
/// every index for a blank query.
pub fn fuzzy_filter<'a>(texts: impl IntoIterator<Item = &'a str>, query: &str) -> Vec<usize> {
    let tokens: Vec<&str> = query
        .split(|c: char| c.is_whitespace() || c == '/')
        .filter(|t| !t.is_empty())
        .collect();
    let mut found: Vec<(usize, f64)> = texts
        .into_iter()
        .enumerate()
        .filter_map(|(i, text)| {
            let mut total = 0.0;
            for token in &tokens {
                total += fuzzy_match(token, text)?;
            }
            Some((i, total))
        })
        .collect();
    found.sort_by(|a, b| a.1.total_cmp(&b.1));
    found.into_iter().map(|(i, _)| i).collect()
}

fn fuzzy_score_lower(query: &str, text: &str) -> Option<f64> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn lower_is_to_lowercase_and_borrows_what_it_keeps() {
        for text in [
            "",
            "/home/dev/projects/p00-api-gateway",
            "Fix the LOCK",
            "ΣΟΦΟΣ ΟΔΟΣ",
            "İstanbul",
            "ſtop ẞ",
            "a\u{0}B",
        ] {
            assert_eq!(lower(text), text.to_lowercase(), "{text:?}");
        }
        assert!(matches!(lower("already lower-case 42"), Cow::Borrowed(_)));
        assert!(matches!(lower("Upper"), Cow::Owned(_)));
    }

    /// Expected values from pi-tui's `fuzzyMatch` under node on the same inputs.
    #[test]
    fn fuzzy_scores_are_pis() {
        let cases = [
            ("abc", "abc", -139.7),
            ("abc", "a-b-c", -30.4),
            ("fb", "foo bar", -18.6),
            ("ts", "typescript", -8.6),
            ("a1", "1a", -119.9),
            ("node", "my node-cve fix", -38.2),
            ("cve", "my node-cve fix", -22.3),
        ];
        for (q, t, want) in cases {
            let got = fuzzy_match(q, t);
            assert!(close(got, want), "{q:?} in {t:?}: {got:?}, pi says {want}");
        }
        assert_eq!(fuzzy_match("abc", "xyz"), None);
        assert_eq!(fuzzy_match("abcd", "abc"), None);
    }

    #[test]
    fn tiers_name_then_text_then_scattered() {
        let fields = Fields {
            id: "0195-abc",
            name: Some("Release notes"),
            cwd: "/home/dev/node-app",
        };
        let word = |w: &str, text: bool| needle_score(&Needle::Word(w.into()), &fields, || text);
        // In the name: tier 0 with the name's fuzzy score.
        assert!(word("notes", false).is_some_and(|s| s < TIER_TEXT));
        // Inside a word of the messages: tier 1.
        assert_eq!(word("uffer", true), Some(TIER_TEXT));
        // In the id: tier 1 without asking the messages; in the cwd: tier 1.
        let id_word = Needle::Word("abc".into());
        assert_eq!(
            needle_score(&id_word, &fields, || panic!("asked")),
            Some(TIER_TEXT)
        );
        assert_eq!(word("node", false), Some(TIER_TEXT));
        // Scattered in the cwd: tier 2; nowhere: no match.
        assert!(word("hdna", false).is_some_and(|s| s > TIER_FUZZY - TIER_WEIGHT / 2.0));
        assert_eq!(word("zzz", false), None);
        // Phrases and regexes have no scattered tier.
        let phrase = Needle::Phrase("dev node".into());
        assert_eq!(needle_score(&phrase, &fields, || false), None);
        let re = Needle::Regex(SearchRegex::new("release").expect("regex"));
        assert_eq!(needle_score(&re, &fields, || false), Some(TIER_NAME));
    }
}
