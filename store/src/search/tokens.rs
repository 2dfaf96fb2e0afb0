//! What the FTS5 tables receive: the tokens of a normalised text (runs between ASCII
//! separators, as FTS5's `ascii` tokenizer splits), the word pairs of the `pairs` table, and
//! [`documents`], which turns a file's new rows into the documents a build writes.
//!
//! The tables keep no positions (`detail=none`): a document says which tokens a row holds and
//! nothing else, so [`documents`] writes each distinct token once. A session's text repeats
//! most of its words (agent-10k: 40% of a message's tokens are distinct, 7% of a session's),
//! and FTS5 spends a build's time on every token it is given, repeated or not.

use std::collections::HashSet;

use super::query::normalize;
use super::rows::{TextRow, tail_after, with_tail};

/// The runs of a normalised text between ASCII separators that hold a letter or digit: the
/// `words` table's entries, and each an FTS5 token of `texts` and `docs` (the `ascii`
/// tokenizer splits at every ASCII separator and nowhere else), so a run looked up as a
/// quoted FTS5 string finds the rows holding it.
pub(crate) fn words_of(text: &str) -> impl Iterator<Item = &str> {
    tokens(text).filter(|w| is_word(w))
}

/// Whether a run between ASCII separators is one of [`words_of`]: it holds a letter or digit.
pub(crate) fn is_word(run: &str) -> bool {
    run.chars().any(char::is_alphanumeric)
}

/// Bytes of the first and of the second word a `pair_token` keeps. Short cuts keep the
/// `pairs` table's vocabulary small (what its build time grows with) and still name few rows
/// besides those holding the pair; every row found is checked anyway.
const PAIR_FIRST_BYTES: usize = 8;
const PAIR_SECOND_BYTES: usize = 4;

/// The `pairs` token of two [`words_of`] a text that follow each other there: the first cut
/// to [`PAIR_FIRST_BYTES`] and the second to [`PAIR_SECOND_BYTES`] (at character
/// boundaries), joined by U+E000 (a private-use character, which the `ascii` tokenizer keeps
/// inside a token, as it keeps every non-ASCII character, while splitting at every ASCII
/// separator exactly as [`words_of`] does). The `bool` says whether `second` was cut: a word
/// that starts with an uncut `second` has a token that starts with this one.
pub(crate) fn pair_token(first: &str, second: &str) -> (String, bool) {
    let mut token = String::new();
    let was_cut = push_pair(&mut token, first, second);
    (token, was_cut)
}

/// Appends the `pair_token` of `first` and `second` to `out`; whether `second` was cut.
fn push_pair(out: &mut String, first: &str, second: &str) -> bool {
    let (second, was_cut) = cut(second, PAIR_SECOND_BYTES);
    out.push_str(cut(first, PAIR_FIRST_BYTES).0);
    out.push('\u{E000}');
    out.push_str(second);
    was_cut
}

/// The start of `s` of at most `bytes` bytes, ending at a character boundary, and whether
/// that is not all of it.
fn cut(s: &str, bytes: usize) -> (&str, bool) {
    let mut end = s.len().min(bytes);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s[..end], end < s.len())
}

/// The `pairs` row of a text: the `pair_token` of each two words that follow each other.
fn pairs_of(text: &str) -> String {
    let mut out = String::new();
    let mut words = words_of(text);
    let Some(mut first) = words.next() else {
        return out;
    };
    for second in words {
        push_pair(&mut out, first, second);
        out.push(' ');
        first = second;
    }
    out
}

/// An ASCII character other than a letter or digit: FTS5's `ascii` tokenizer splits tokens
/// there (and only there), so words, phrase runs and the FTS5 expressions built from them all
/// split there.
pub(crate) fn is_ascii_separator(c: char) -> bool {
    c.is_ascii() && !c.is_ascii_alphanumeric()
}

/// The documents of one row of a file: what its `texts` and `pairs` rows are given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowDocuments {
    /// The distinct tokens of the row's indexed text (the tail of the messages before it and
    /// the normalised message, [`with_tail`]), in first-seen order, joined by spaces.
    pub(crate) text: String,
    /// The distinct [`pair_token`]s of that text, likewise.
    pub(crate) pairs: String,
}

/// What a file's new rows put into the index, made where the rows are read so the thread
/// that writes the database only writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Documents {
    /// One per row given to [`documents`], in order.
    pub(crate) rows: Vec<RowDocuments>,
    /// The `docs` document of these rows: the distinct tokens of their normalised messages
    /// (without the tail), joined by spaces.
    pub(crate) doc: String,
    /// The tail after the last row ([`tail_after`]): what the next append's first row starts
    /// with.
    pub(crate) tail: String,
}

/// The documents of the first `max_rows` of `rows`, the first following the messages that end
/// in `tail` (empty when the file is read from its start).
pub(crate) fn documents(tail: &str, rows: &[TextRow], max_rows: usize) -> Documents {
    let mut tail = tail.to_owned();
    let mut out = Vec::with_capacity(rows.len().min(max_rows));
    // The session's distinct tokens, owned: a message's text is dropped once its row is made.
    let mut doc_seen: HashSet<String> = HashSet::new();
    let mut doc = String::new();
    for row in rows.iter().take(max_rows) {
        let norm = normalize(&row.text);
        // A blank message vanishes from pi's joined text: nothing to find in its row.
        let indexed = if norm.is_empty() {
            String::new()
        } else {
            with_tail(&tail, &norm)
        };
        out.push(RowDocuments {
            text: distinct_tokens(&indexed),
            pairs: distinct_tokens(&pairs_of(&indexed)),
        });
        for token in tokens(&norm) {
            if !doc_seen.contains(token) {
                doc_seen.insert(token.to_owned());
                push_token(&mut doc, token);
            }
        }
        tail = tail_after(&tail, &norm);
    }
    Documents {
        rows: out,
        doc,
        tail,
    }
}

/// The tokens of `text` as FTS5's `ascii` tokenizer reads them: the non-empty runs between
/// ASCII separators (words, and runs of other non-ASCII characters).
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(is_ascii_separator).filter(|t| !t.is_empty())
}

/// Every one of the [`tokens`] of `text` once, in first-seen order, joined by spaces: the
/// same tokens FTS5 reads from `text` itself.
fn distinct_tokens(text: &str) -> String {
    let mut seen = HashSet::new();
    let mut out = String::new();
    for token in tokens(text) {
        if seen.insert(token) {
            push_token(&mut out, token);
        }
    }
    out
}

/// Appends `token` to a document of tokens joined by spaces.
fn push_token(doc: &mut String, token: &str) {
    if !doc.is_empty() {
        doc.push(' ');
    }
    doc.push_str(token);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_keeps_the_start_of_each_word_at_a_character_boundary() {
        assert_eq!(
            pair_token("check", "buffer"),
            ("check\u{E000}buff".to_owned(), true)
        );
        assert_eq!(
            pair_token("tokenizers", "a"),
            ("tokenize\u{E000}a".to_owned(), false)
        );
        // `ö` is two bytes: the first word stops before it, not inside it.
        assert_eq!(
            pair_token("übergrößen", "éé"),
            ("übergr\u{E000}éé".to_owned(), false)
        );
        assert_eq!(
            pairs_of("check  buffer-type . x"),
            "check\u{E000}buff buffer\u{E000}type type\u{E000}x "
        );
        assert_eq!(pairs_of("alone."), "");
    }

    fn row(text: &str) -> TextRow {
        TextRow {
            entry_id: None,
            text: text.to_owned(),
            offset: 0,
            len: 0,
        }
    }

    #[test]
    fn documents_hold_each_token_fts5_would_read_once() {
        let rows = [
            row("Check the Buffer, check the—TYPE"),
            row("   "),
            row("type check"),
        ];
        let d = documents("", &rows, usize::MAX);
        let doc = |text: &str, pairs: &str| RowDocuments {
            text: text.to_owned(),
            pairs: pairs.to_owned(),
        };
        // `—` is not ASCII: it stays inside its token, and a cut never splits it.
        assert_eq!(
            d.rows,
            vec![
                doc(
                    "check the buffer the—type",
                    "check\u{E000}the the\u{E000}buff buffer\u{E000}chec"
                ),
                doc("", ""),
                doc(
                    "check the buffer the—type type",
                    "check\u{E000}the the\u{E000}buff buffer\u{E000}chec \
                     the—ty\u{E000}type type\u{E000}chec"
                ),
            ]
        );
        assert_eq!(d.doc, "check the buffer the—type type");
        assert_eq!(d.tail, "check the buffer, check the—type type check");
        // An append starts after the tail it is given, and stops at `max_rows`.
        let more = documents(&d.tail, &[row("Buffer zebra"), row("never")], 1);
        assert_eq!(
            more.rows,
            vec![doc(
                "check the buffer the—type type zebra",
                "check\u{E000}the the\u{E000}buff buffer\u{E000}chec \
                 the—ty\u{E000}type type\u{E000}chec check\u{E000}buff buffer\u{E000}zebr"
            )]
        );
        assert_eq!(more.doc, "buffer zebra");
    }
}
