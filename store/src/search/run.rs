//! Answering a query from the search index: candidate rows from FTS5, then every candidate
//! that may not match checked against its line in the session file (the truth), so results
//! equal a plain scan of the files; then pi 1.6.0's tiers (name, text, scattered: see
//! [`super::matching`]) rank the sessions.
//!
//! How each token finds its rows (a message is indexed normalised, see
//! [`super::query::normalize`], after the last characters of the messages before it, see
//! [`super::rows::with_tail`]; an FTS5 token is a run between ASCII separators, see
//! `words_of` in `tokens.rs`):
//!
//! - a bare word of letters and digits: the rows holding any indexed word (the `words`
//!   table) that contains it, as pi's `includes` finds it inside other words; exact;
//! - a phrase (or a bare word with other characters): the rows holding each two of its
//!   words that follow each other (the `pairs` table; a first word the phrase starts inside
//!   stands for the indexed words ending with it, a last one it ends inside for the words
//!   starting with it); a phrase without such a pair: the rows holding each of the runs
//!   that must be whole words in any text containing it (those between two ASCII
//!   separators), the last one as a prefix; a phrase inside one word looks its longest run up
//!   in the `words` table; then each row is checked;
//! - `re:`: what every match holds (the pattern's own literals, and the strings every match
//!   starts or ends with, any of several: `TODO|FIXME`), looked up the same way, then each
//!   row is checked with the regex; a pattern without such a literal reads every line.
//!   With a limit, a regex reads the sessions newest first instead of listing every
//!   candidate row first (the `docs` table names the sessions holding its literals), so a
//!   common literal or none costs the few sessions it takes to fill the limit
//!   (`newest_first.rs`).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use regex::RegexBuilder;
use rusqlite::{OptionalExtension, params};

use super::index::{SEQ_BITS, SearchIndex};
use super::matching::{Fields, Needle, TIER_WEIGHT, needle_score, needles};
use super::query::{Query, SearchRegex, normalize};
use super::regex_literals::{required_literals, required_pieces};
use super::rows::{TAIL_CHARS, row_at, tail_after, with_tail};
use super::tokens::{is_ascii_separator, is_word, pair_token};
use crate::error::Result;
use crate::list::modified_ms;

/// Most words ending with a phrase's first run that narrow its candidates.
const MAX_FIRST_WORDS: usize = 32;
/// Most hits whose rows are found by reading their sessions' messages (newest first) after
/// the `docs` table named the sessions; with more, one pass over the message rows names every
/// session's row at once, which costs less than reading that many sessions.
const MAX_SESSION_READS: usize = 100;
/// Most indexed words one infix lookup may expand to before the token reads every line.
const MAX_EXPANSION: usize = 2000;

/// From this many sessions on, reading their rows (each hit's shown row, or every
/// candidate row of a check with no limit) is split between two threads.
const SPLIT_HITS_FROM: usize = 512;

/// What finding the row shown for each hit needs (see [`SearchIndex::hits`]).
#[derive(Clone, Copy)]
struct Shown<'a> {
    files: &'a HashMap<i64, FileFields>,
    needles: &'a [Needle],
    rows: &'a [Rows],
    marks: &'a [Option<SearchRegex>],
}

/// One session that matches a query.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The session file.
    pub path: PathBuf,
    /// The header's session id, when the header was read.
    pub session_id: Option<String>,
    /// The entry whose text matched (`None`: only the name, id or cwd matched).
    pub entry_id: Option<String>,
    /// A short, single-line excerpt around the match.
    pub snippet: String,
    /// pi's relevance (see [`super::matching`]): per token, its tier × 1,000,000 plus, in the
    /// name, its fuzzy score; summed over the tokens. Lower is better.
    pub score: f64,
    /// pi's `modified` of the session in ms (its last message's time; ties between equal
    /// scores: newest first).
    pub modified_ms: f64,
}

/// The sessions whose messages hold one token: file id → where.
pub(super) type Rows = HashMap<i64, Found>;

/// Where a session's messages hold a token.
pub(super) enum Found {
    /// In row `rowid` (the last that matches, as far as the candidates tell), with its
    /// entry id and text when the check already read them.
    Row(i64, Option<RowText>),
    /// Somewhere: the `docs` table names the session only; the row shown is looked up for
    /// the sessions returned.
    Session,
}

/// A row's entry id and text, as [`row_at`] reads them (for a phrase across messages: the
/// text as indexed, see [`SearchIndex::matching_row`]).
type RowText = (Option<String>, String);

/// A session's short fields as the index holds them.
pub(super) struct FileFields {
    /// pi's `modified` (ms): what ties between equal scores are broken by, newest first.
    pub(super) modified_ms: f64,
    /// The file's mtime (ns): the order pi's listing read the files in, newest first, which
    /// its stable sort keeps among sessions of equal score and `modified`.
    pub(super) mtime_ns: i64,
    session_id: Option<String>,
    name: Option<String>,
    cwd: String,
}

impl FileFields {
    fn fields(&self) -> Fields<'_> {
        Fields {
            id: self.session_id.as_deref().unwrap_or(""),
            name: self.name.as_deref(),
            cwd: &self.cwd,
        }
    }
}

enum Plan {
    /// Rows of this FTS5 expression match as they are (and so do `docs` documents).
    Exact(String),
    /// These rows may match; check each against its line.
    Check(Cand),
}

/// Which rows of a session [`SearchIndex::check_in_order`] checks.
#[derive(Clone, Copy)]
pub(super) enum RowsOf<'a> {
    /// These candidate rows, in rowid order.
    Listed(&'a [i64]),
    /// Every row the session has (read from the `entries` table when it is checked).
    Every,
}

/// Candidate rows of a token that needs checking.
pub(super) enum Cand {
    /// The rows of an FTS5 expression.
    Expr(String),
    /// The rows of an FTS5 expression of word pairs (the `pairs` table).
    Pairs(String),
    /// Every row (nothing narrows the search down).
    All,
    /// No row can match.
    Nothing,
}

/// A maximal run of characters that are not ASCII separators, in a normalised text.
pub(super) struct Run<'a> {
    pub(super) text: &'a str,
    /// Only ASCII letters and digits: what [`SearchIndex::infix`] looks up inside words.
    pub(super) clean: bool,
    /// An ASCII separator precedes / follows it inside the phrase.
    left: bool,
    right: bool,
}

/// The [`Run`]s of `s`, in order.
pub(super) fn runs(s: &str) -> Vec<Run<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices().chain(std::iter::once((s.len(), ' '))) {
        let sep = i == s.len() || is_ascii_separator(c);
        match (start, sep) {
            (None, false) => start = Some(i),
            (Some(st), true) => {
                let text = &s[st..i];
                out.push(Run {
                    text,
                    clean: text.bytes().all(|b| b.is_ascii_alphanumeric()),
                    left: st > 0,
                    right: i < s.len(),
                });
                start = None;
            }
            _ => {}
        }
    }
    out
}

fn quote(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// The `pairs` expression every row holding a phrase (its runs `rs`) matches: for each two
/// runs with a letter or digit that follow each other, the [`pair_token`] of the words a text
/// holding the phrase has there. The second run is a whole word when a separator follows it
/// in the phrase, else the start of one; the first is a whole word when one precedes it, else
/// (the phrase's first run) the end of one: `first_words` lists the indexed words ending with
/// it (`None`: too many, and that pair is left out). `None` when no pair is left.
fn pair_expr(rs: &[Run<'_>], first_words: Option<&[String]>) -> Option<String> {
    let mut clauses = Vec::new();
    for two in rs.windows(2) {
        let (a, b) = (&two[0], &two[1]);
        if !is_word(a.text) || !is_word(b.text) {
            continue;
        }
        let firsts: Vec<&str> = if a.left {
            vec![a.text]
        } else if let Some(words) = first_words {
            words.iter().map(String::as_str).collect()
        } else {
            continue;
        };
        let mut terms: Vec<String> = firsts
            .iter()
            .map(|first| {
                let (token, cut) = pair_token(first, b.text);
                // Only a second word the text may go on past, and not cut, is a prefix.
                if b.right || cut {
                    quote(&token)
                } else {
                    format!("{}*", quote(&token))
                }
            })
            .collect();
        // Words ending alike may share a cut start.
        terms.sort_unstable();
        terms.dedup();
        if terms.len() == 1 {
            clauses.extend(terms);
        } else {
            clauses.push(format!("({})", terms.join(" OR ")));
        }
    }
    (!clauses.is_empty()).then(|| clauses.join(" AND "))
}

impl SearchIndex {
    /// Sessions matching `query` as pi 1.6.0's picker matches them (see
    /// [`super::matching`]), best first (pi's score, then newest first), each with the entry
    /// that matched and a snippet. `dirs` limits the answer to sessions directly in those
    /// folders; `limit` caps how many hits are returned.
    ///
    /// A phrase runs from one message into the next as in pi's `allMessagesText` (every
    /// message joined by spaces; up to [`TAIL_CHARS`] characters before the boundary it
    /// crosses last); a regex matches within one message, so each hit can name its entry.
    ///
    /// The answer covers what is indexed; pair it with [`SearchIndex::coverage`] while a build
    /// runs. An invalid query matches nothing; one without a needle (`""`) every session.
    ///
    /// Errors: [`crate::Error::Index`].
    pub fn search(
        &self,
        query: &Query,
        dirs: Option<&[PathBuf]>,
        limit: Option<usize>,
    ) -> Result<Vec<Hit>> {
        // One read transaction: every lookup sees the same snapshot, and SQLite takes its
        // read lock once instead of per statement (thousands of hits read thousands of rows).
        let read = || -> rusqlite::Result<Vec<Hit>> {
            let tx = self.conn.unchecked_transaction()?;
            let hits = self.search_inner(query, dirs, limit)?;
            tx.finish()?;
            Ok(hits)
        };
        read().map_err(|e| self.fail(e))
    }

    fn search_inner(
        &self,
        query: &Query,
        dirs: Option<&[PathBuf]>,
        limit: Option<usize>,
    ) -> rusqlite::Result<Vec<Hit>> {
        // An invalid regex matches nothing; a query with no needle (blank, or only empty
        // phrases) matches every session, newest first, as pi's filter keeps them all.
        let Some(needles) = needles(query) else {
            return Ok(Vec::new());
        };
        let marks: Vec<Option<SearchRegex>> = needles.iter().map(mark_regex).collect();
        let scope = self.scope(dirs)?;
        let files = self.file_fields(scope.as_ref())?;
        let mut rows = Vec::with_capacity(needles.len());
        for needle in &needles {
            let plan = self.plan_needle(needle)?;
            // One token and a limit: messages are checked newest first until the best
            // `limit` sessions are known.
            let lazy = if needles.len() == 1 { limit } else { None };
            // Few hits to show: a session's row is found by reading its messages, after
            // the `docs` table named the sessions.
            let few = limit.is_some_and(|n| n <= MAX_SESSION_READS);
            rows.push(self.rows_for(&plan, needle, &files, scope.is_some(), lazy, few)?);
        }
        // pi's score of every session in scope.
        let mut ranked: Vec<(i64, f64, f64)> = files
            .iter()
            .filter_map(|(&f, ff)| {
                let fields = ff.fields();
                let mut total = 0.0;
                for (needle, rows) in needles.iter().zip(&rows) {
                    total += needle_score(needle, &fields, || rows.contains_key(&f))?;
                }
                Some((f, total, ff.modified_ms))
            })
            .collect();
        let mtime = |f: &i64| files.get(f).map_or(0, |ff| ff.mtime_ns);
        ranked.sort_by(|a, b| {
            a.1.total_cmp(&b.1)
                .then_with(|| b.2.total_cmp(&a.2))
                .then_with(|| mtime(&b.0).cmp(&mtime(&a.0)))
                .then_with(|| a.0.cmp(&b.0))
        });
        self.order_ties_by_name(
            &mut ranked,
            limit.unwrap_or(usize::MAX),
            |r| r.0,
            |a, b| a.1 == b.1 && a.2.total_cmp(&b.2).is_eq() && mtime(&a.0) == mtime(&b.0),
        )?;
        if let Some(n) = limit {
            ranked.truncate(n);
        }
        let shown = Shown {
            files: &files,
            needles: &needles,
            rows: &rows,
            marks: &marks,
        };
        // Each hit reads its message from its file: thousands are read on two threads.
        self.halves(&ranked, |index, part| index.hits(part, &shown))
    }

    /// `run` over the two halves of `items` on two threads, the second through a connection
    /// of its own (one is not shared by threads) in its own read transaction; the answers
    /// joined in order. Fewer than [`SPLIT_HITS_FROM`] items, or no second connection: this
    /// one runs them all.
    ///
    /// That transaction may see a later commit than this one's (SQLite offers no shared
    /// snapshot here): `items` were chosen in this one's, and for a file re-indexed in
    /// between (rewritten, not appended to: appends keep every row id) the second reads the
    /// file's rows as they are now, checked against the file as it is now.
    fn halves<T: Sync, R>(
        &self,
        items: &[T],
        run: impl Fn(&SearchIndex, &[T]) -> rusqlite::Result<R> + Sync,
    ) -> rusqlite::Result<R>
    where
        R: Send + IntoIterator + Extend<<R as IntoIterator>::Item>,
    {
        if items.len() < SPLIT_HITS_FROM {
            return run(self, items);
        }
        let (first, second) = items.split_at(items.len() / 2);
        let other = self.another().ok();
        let run = &run;
        let (out, rest) = std::thread::scope(|threads| {
            let rest = threads.spawn(move || -> Option<rusqlite::Result<R>> {
                let other = other?;
                let read = || {
                    let tx = other.conn.unchecked_transaction()?;
                    let out = run(&other, second)?;
                    tx.finish()?;
                    Ok(out)
                };
                Some(read())
            });
            (run(self, first), rest.join())
        });
        let mut out = out?;
        match rest {
            Ok(Some(rest)) => out.extend(rest?),
            // No second connection (or a panic, a bug): this one runs them too.
            Ok(None) | Err(_) => out.extend(run(self, second)?),
        }
        Ok(out)
    }

    /// The hits of `ranked` (file id, score, in order), each with the row shown for it.
    fn hits(&self, ranked: &[(i64, f64, f64)], shown: &Shown<'_>) -> rusqlite::Result<Vec<Hit>> {
        let Shown {
            files,
            needles,
            rows,
            marks,
        } = *shown;
        let mark = marks.first().and_then(Option::as_ref);
        let mut path_stmt = self
            .conn
            .prepare_cached("SELECT path FROM files WHERE id = ?1")?;
        let mut out = Vec::with_capacity(ranked.len());
        for &(file, score, _) in ranked {
            let path: String = path_stmt.query_row(params![file], |r| r.get(0))?;
            let ff = &files[&file];
            let mut hit = Hit {
                path: PathBuf::from(path),
                session_id: ff.session_id.clone(),
                entry_id: None,
                // Only the name, id or cwd matched: show the name, else the cwd.
                snippet: snippet(ff.name.as_deref().unwrap_or(&ff.cwd), mark),
                score,
                modified_ms: ff.modified_ms,
            };
            // The first token found in the messages names the entry and marks the snippet.
            let shown = needles
                .iter()
                .zip(rows.iter())
                .zip(marks.iter())
                .find_map(|((n, r), m)| r.get(&file).map(|shown| (n, shown, m.as_ref())));
            let read = match shown {
                Some((_, Found::Row(_, Some(read)), m)) => Some((read.clone(), m)),
                Some((needle, Found::Row(rowid, None), m)) => self
                    .shown_row(&hit.path, *rowid, needle)?
                    .map(|read| (read, m)),
                Some((needle, Found::Session, m)) => self
                    .last_matching_row(&hit.path, file, needle)?
                    .map(|read| (read, m)),
                None => None,
            };
            if let Some(((entry_id, text), m)) = read {
                hit.entry_id = entry_id;
                hit.snippet = snippet(&text, m);
            }
            out.push(hit);
        }
        Ok(out)
    }

    /// Sessions of equal score, `modified` and mtime come out of pi's listing by file name,
    /// descending: orders each run of `items` (sorted but for that) whose neighbours are
    /// `tied`, among the first `upto` (rare, so the names are read only for them). `file`:
    /// an item's file id. Returns where the last run ordered ends (at least `upto`, or the
    /// length): the runs from there on are left as they were.
    pub(super) fn order_ties_by_name<T: Copy>(
        &self,
        items: &mut [T],
        upto: usize,
        file: impl Fn(&T) -> i64,
        tied: impl Fn(&T, &T) -> bool,
    ) -> rusqlite::Result<usize> {
        let cut = upto.min(items.len());
        let mut path_stmt = self
            .conn
            .prepare_cached("SELECT path FROM files WHERE id = ?1")?;
        let mut start = 0;
        while start < cut {
            let first = items[start];
            let end = start
                + items[start..]
                    .iter()
                    .take_while(|x| tied(x, &first))
                    .count();
            if end - start > 1 {
                let mut named = Vec::with_capacity(end - start);
                for item in &items[start..end] {
                    let path: String = path_stmt.query_row(params![file(item)], |r| r.get(0))?;
                    let name = Path::new(&path).file_name().map(|n| n.to_owned());
                    named.push((name, path, *item));
                }
                // pi's listing leaves files of one name (in several folders) in the order
                // the folders are read from disk; by path, the answer does not hang on the
                // order files were indexed in.
                named.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
                for (slot, (_, _, item)) in items[start..end].iter_mut().zip(named) {
                    *slot = item;
                }
            }
            start = end.max(start + 1);
        }
        Ok(start)
    }

    /// The short fields of every indexed file in scope (`None`: all), by file id.
    fn file_fields(
        &self,
        scope: Option<&HashSet<i64>>,
    ) -> rusqlite::Result<HashMap<i64, FileFields>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, mtime_ns, session_id, name, cwd, header_ms, activity_ms FROM files",
        )?;
        let mut out = HashMap::new();
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            if scope.is_some_and(|s| !s.contains(&id)) {
                continue;
            }
            let mtime_ns: i64 = r.get(1)?;
            let header_ms: Option<f64> = r.get(5)?;
            out.insert(
                id,
                FileFields {
                    modified_ms: modified_ms(
                        r.get(6)?,
                        header_ms.unwrap_or(f64::NAN),
                        mtime_ns as f64 / 1e6,
                    ),
                    mtime_ns,
                    session_id: r.get(2)?,
                    name: r.get(3)?,
                    cwd: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                },
            );
        }
        Ok(out)
    }

    /// File ids in scope (`None`: all).
    fn scope(&self, dirs: Option<&[PathBuf]>) -> rusqlite::Result<Option<HashSet<i64>>> {
        let Some(dirs) = dirs else { return Ok(None) };
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM files WHERE dir = ?1")?;
        let mut ids = HashSet::new();
        for d in dirs {
            for id in stmt.query_map([d.to_string_lossy()], |r| r.get::<_, i64>(0))? {
                ids.insert(id?);
            }
        }
        Ok(Some(ids))
    }

    fn plan_needle(&self, needle: &Needle) -> rusqlite::Result<Plan> {
        match needle {
            Needle::Word(w) => {
                let norm = normalize(w);
                let rs = runs(&norm);
                if let [only] = rs.as_slice()
                    && only.clean
                    && !only.left
                    && !only.right
                {
                    // Letters and digits only: the rows with a word containing it, exactly.
                    return Ok(match self.infix(Some(only.text))? {
                        Cand::Expr(e) => Plan::Exact(e),
                        other => Plan::Check(other),
                    });
                }
                self.plan_phrase(&norm)
            }
            Needle::Phrase(p) => self.plan_phrase(p),
            Needle::Regex(re) => self.plan_regex(re),
        }
    }

    fn plan_phrase(&self, phrase: &str) -> rusqlite::Result<Plan> {
        let rs = runs(phrase);
        // A first run the phrase goes on past ends some word of the text: when few indexed
        // words end with it, they narrow the candidates (most would fail the check otherwise).
        let first_words = match rs.first() {
            Some(r0) if !r0.left && r0.right && is_word(r0.text) => self.words_ending(r0.text)?,
            _ => None,
        };
        if first_words.as_ref().is_some_and(Vec::is_empty) {
            // No word ends with it, so no text holds the phrase.
            return Ok(Plan::Check(Cand::Nothing));
        }
        if let Some(pairs) = pair_expr(&rs, first_words.as_deref()) {
            return Ok(Plan::Check(Cand::Pairs(pairs)));
        }
        // No pair: the rows holding every run that must be a whole word (or, last, a word's
        // start), and one of the words the first run may end.
        let mut clauses: Vec<String> = rs
            .iter()
            .filter(|r| r.left && is_word(r.text))
            .map(|r| {
                if r.right {
                    quote(r.text)
                } else {
                    format!("{}*", quote(r.text))
                }
            })
            .collect();
        if let Some(words) = first_words {
            let each: Vec<String> = words.iter().map(|w| quote(w)).collect();
            clauses.push(format!("({})", each.join(" OR ")));
        }
        if !clauses.is_empty() {
            return Ok(Plan::Check(Cand::Expr(clauses.join(" AND "))));
        }
        // Inside one word: the longest clean run is part of some indexed word.
        let longest = rs.iter().filter(|r| r.clean).max_by_key(|r| r.text.len());
        Ok(Plan::Check(self.infix(longest.map(|r| r.text))?))
    }

    /// The indexed words ending with `tail` (a run of a normalised text with a letter or
    /// digit); `None` when more than [`MAX_FIRST_WORDS`] do.
    fn words_ending(&self, tail: &str) -> rusqlite::Result<Option<Vec<String>>> {
        // A run holds no ASCII separator, so none of GLOB's `*?[`.
        let mut stmt = self
            .conn
            .prepare_cached("SELECT word FROM words WHERE word GLOB '*' || ?1 LIMIT ?2")?;
        let words: Vec<String> = stmt
            .query_map(params![tail, (MAX_FIRST_WORDS + 1) as i64], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok((words.len() <= MAX_FIRST_WORDS).then_some(words))
    }

    /// The rows with a word (see [`super::tokens::words_of`]) containing `piece` (lower-case
    /// ASCII letters and digits); every row when there is no piece or the words containing it
    /// need more than [`MAX_EXPANSION`] terms.
    ///
    /// A word starting with a word that contains `piece` contains it too, so the expression
    /// is `piece` and the shortest such words, each as an FTS5 prefix: what FTS5 reads
    /// fastest, and still exactly the rows holding `piece`.
    fn infix(&self, piece: Option<&str>) -> rusqlite::Result<Cand> {
        let Some(piece) = piece else {
            return Ok(Cand::All);
        };
        let mut stmt = self
            .conn
            .prepare_cached("SELECT word FROM words WHERE instr(word, ?1) > 1 ORDER BY word")?;
        let mut prefixes: Vec<String> = Vec::new();
        let mut rows = stmt.query(params![piece])?;
        while let Some(r) = rows.next()? {
            let word: String = r.get(0)?;
            // Sorted: a word that starts with the last prefix kept comes right after it.
            if prefixes
                .last()
                .is_some_and(|p| word.starts_with(p.as_str()))
            {
                continue;
            }
            if prefixes.len() == MAX_EXPANSION {
                return Ok(Cand::All);
            }
            prefixes.push(word);
        }
        let starting: Option<String> = self
            .conn
            .prepare_cached(
                "SELECT word FROM words WHERE word >= ?1 AND word < ?1 || x'ff' LIMIT 1",
            )?
            .query_row(params![piece], |r| r.get(0))
            .optional()?;
        if prefixes.is_empty() && starting.is_none() {
            // No word contains it, so no text does.
            return Ok(Cand::Nothing);
        }
        let terms = std::iter::once(piece)
            .filter(|_| starting.is_some())
            .chain(prefixes.iter().map(String::as_str));
        Ok(Cand::Expr(
            terms
                .map(|t| format!("{}*", quote(t)))
                .collect::<Vec<_>>()
                .join(" OR "),
        ))
    }

    fn plan_regex(&self, re: &SearchRegex) -> rusqlite::Result<Plan> {
        let mut exprs = Vec::new();
        for pieces in required_pieces(required_literals(re.as_str())) {
            // The rows holding one of the pieces.
            let mut any_of = Vec::new();
            let mut every_row = false;
            for piece in &pieces {
                match self.infix(Some(piece))? {
                    Cand::Expr(expr) => any_of.push(format!("({expr})")),
                    Cand::Nothing => {}
                    // Too many words hold it (`infix` names no pairs).
                    Cand::All | Cand::Pairs(_) => {
                        every_row = true;
                        break;
                    }
                }
            }
            if every_row {
                continue;
            }
            if any_of.is_empty() {
                // No word holds any of them: no text matches.
                return Ok(Plan::Check(Cand::Nothing));
            }
            exprs.push(format!("({})", any_of.join(" OR ")));
        }
        let cand = if exprs.is_empty() {
            Cand::All
        } else {
            Cand::Expr(exprs.join(" AND "))
        };
        Ok(Plan::Check(cand))
    }

    /// The sessions in `files` whose messages hold `needle` (rows of `plan`), each with the
    /// last row that matches, or, for an exact plan and `by_session`, only the sessions (from
    /// the `docs` table). With `limit`, checking stops once the best `limit` sessions
    /// are known: sessions whose name holds the needle rank first whatever their messages
    /// hold, and the rest are checked newest first, so the sessions never checked are ones
    /// that could only rank below those found. `scoped`: `files` is a subset of the index
    /// (rows of other files are left out).
    fn rows_for(
        &self,
        plan: &Plan,
        needle: &Needle,
        files: &HashMap<i64, FileFields>,
        scoped: bool,
        limit: Option<usize>,
        by_session: bool,
    ) -> rusqlite::Result<Rows> {
        if let Plan::Exact(expr) = plan
            && by_session
        {
            return self.sessions_holding(expr, files, scoped);
        }
        if let (Some(n), Plan::Check(cand @ (Cand::All | Cand::Expr(_)))) = (limit, plan)
            && (matches!(cand, Cand::All) || matches!(needle, Needle::Regex(_)))
        {
            return self.rows_newest_first(cand, needle, files, scoped, n);
        }
        let (sql, expr) = match plan {
            Plan::Exact(e) | Plan::Check(Cand::Expr(e)) => {
                ("SELECT rowid FROM texts WHERE texts MATCH ?1", Some(e))
            }
            Plan::Check(Cand::Pairs(e)) => {
                ("SELECT rowid FROM pairs WHERE pairs MATCH ?1", Some(e))
            }
            Plan::Check(Cand::Nothing) => return Ok(Rows::new()),
            Plan::Check(Cand::All) => ("SELECT rowid FROM entries", None),
        };
        let mut candidates: Vec<i64> = Vec::new();
        {
            let mut stmt = self.conn.prepare_cached(sql)?;
            let mut rows = match expr {
                Some(expr) => stmt.query([expr])?,
                None => stmt.query([])?,
            };
            while let Some(r) = rows.next()? {
                let rowid: i64 = r.get(0)?;
                if !scoped || files.contains_key(&(rowid >> SEQ_BITS)) {
                    candidates.push(rowid);
                }
            }
        }
        // Each file's candidates together (FTS5 and the entries table give them in rowid
        // order already).
        candidates.sort_unstable();
        let mut by_file: Vec<(i64, &[i64])> = candidates
            .chunk_by(|a, b| a >> SEQ_BITS == b >> SEQ_BITS)
            .map(|rows| (rows[0] >> SEQ_BITS, rows))
            .collect();
        if matches!(plan, Plan::Exact(_)) {
            return Ok(by_file
                .into_iter()
                .map(|(file, rows)| (file, Found::Row(rows[rows.len() - 1], None)))
                .collect());
        }
        let Some(n) = limit else {
            // Every file is checked.
            let by_file: Vec<(i64, RowsOf)> = by_file
                .into_iter()
                .map(|(f, rows)| (f, RowsOf::Listed(rows)))
                .collect();
            return self.halves(&by_file, |index, part| {
                Ok(index.check_in_order(part, needle, None, None)?.0)
            });
        };
        let (in_name, wanted) = named_first(needle, files, n);
        by_file.retain(|(f, _)| !in_name.contains(f));
        let by_file: Vec<(i64, RowsOf)> = by_file
            .into_iter()
            .map(|(f, rows)| (f, RowsOf::Listed(rows)))
            .collect();
        let keyed = Self::newest_first(files, by_file);
        Ok(self.check_newest_first(keyed, needle, wanted, None)?.0)
    }

    /// The sessions in `files` whose `docs` documents match the FTS5 expression `expr`: one
    /// entry per session (and write) to read instead of one per message. `scoped` as in
    /// [`SearchIndex::rows_for`].
    pub(super) fn sessions_holding(
        &self,
        expr: &str,
        files: &HashMap<i64, FileFields>,
        scoped: bool,
    ) -> rusqlite::Result<Rows> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT rowid FROM docs WHERE docs MATCH ?1")?;
        let mut out = Rows::new();
        let mut rows = stmt.query([expr])?;
        while let Some(r) = rows.next()? {
            let file = r.get::<_, i64>(0)? >> SEQ_BITS;
            if !scoped || files.contains_key(&file) {
                out.insert(file, Found::Session);
            }
        }
        Ok(out)
    }

    /// Checks the rows of each file (`(file id, which rows)`, files in their order) against
    /// their lines, last row first, and keeps the first that passes, until `limit` files have
    /// one, or (with a `budget`) once that many rows were read. One file is open at a time.
    /// Returns the files found, how many of `files` were checked and how many rows read.
    pub(super) fn check_in_order(
        &self,
        files: &[(i64, RowsOf<'_>)],
        needle: &Needle,
        limit: Option<usize>,
        budget: Option<usize>,
    ) -> rusqlite::Result<(Rows, usize, usize)> {
        let mut out = Rows::new();
        let mut file_stmt = self
            .conn
            .prepare_cached("SELECT path FROM files WHERE id = ?1")?;
        // A whole session's rows come with where their lines are: one query, not one per row.
        let mut every_stmt = self.conn.prepare_cached(
            "SELECT rowid, offset, len FROM entries WHERE rowid >= ?1 AND rowid < ?2 \
             ORDER BY rowid DESC",
        )?;
        let mut read = 0;
        for (checked, &(file_id, rows)) in files.iter().enumerate() {
            if limit.is_some_and(|n| out.len() >= n) || budget.is_some_and(|b| read >= b) {
                return Ok((out, checked, read));
            }
            let path: String = file_stmt.query_row(params![file_id], |r| r.get(0))?;
            let Ok(file) = File::open(path) else {
                continue;
            };
            // Newest first: each row, and where its line is when already known.
            let newest_first: Vec<(i64, Option<(u64, u32)>)> = match rows {
                RowsOf::Listed(rows) => rows.iter().rev().map(|&r| (r, None)).collect(),
                RowsOf::Every => every_stmt
                    .query_map(
                        params![file_id << SEQ_BITS, (file_id + 1) << SEQ_BITS],
                        |r| {
                            let (offset, len): (i64, i64) = (r.get(1)?, r.get(2)?);
                            Ok((r.get(0)?, Some((offset as u64, len as u32))))
                        },
                    )?
                    .collect::<rusqlite::Result<_>>()?,
            };
            for (rowid, at) in newest_first {
                if budget.is_some_and(|b| read >= b) {
                    // This file is left unchecked, whole.
                    return Ok((out, checked, read));
                }
                read += 1;
                let message = match at {
                    Some((offset, len)) => row_at(&file, offset, len),
                    None => self.read_message(&file, rowid)?,
                };
                if let Some(text) = self.matching_message(&file, rowid, message, needle)? {
                    // Kept for the snippet only when few are wanted: memory stays small.
                    out.insert(file_id, Found::Row(rowid, limit.is_some().then_some(text)));
                    break;
                }
            }
        }
        Ok((out, files.len(), read))
    }

    /// The row shown for a session whose row `rowid` matched `needle` without a check: that
    /// row, or, when the needle is only in the tail of earlier messages the row starts with,
    /// the earlier row that holds it.
    fn shown_row(
        &self,
        path: &Path,
        rowid: i64,
        needle: &Needle,
    ) -> rusqlite::Result<Option<RowText>> {
        let Ok(file) = File::open(path) else {
            return Ok(None);
        };
        let first = (rowid >> SEQ_BITS) << SEQ_BITS;
        // A tail is shorter than most messages: the holder is a row or two back.
        for r in (first.max(rowid - 8)..=rowid).rev() {
            if let Some(read) = self.matching_row(&file, r, needle)? {
                return Ok(Some(read));
            }
        }
        self.read_message(&file, rowid)
    }

    /// The last row of session `file_id` (at `path`) whose message holds `needle`, read from
    /// the file: most sessions that hold a word hold it in a late message, so few are read.
    fn last_matching_row(
        &self,
        path: &Path,
        file_id: i64,
        needle: &Needle,
    ) -> rusqlite::Result<Option<RowText>> {
        let Ok(file) = File::open(path) else {
            return Ok(None);
        };
        let rowids: Vec<i64> = self
            .conn
            .prepare_cached(
                "SELECT rowid FROM entries WHERE rowid >= ?1 AND rowid < ?2 ORDER BY rowid DESC",
            )?
            .query_map(
                params![file_id << SEQ_BITS, (file_id + 1) << SEQ_BITS],
                |r| r.get(0),
            )?
            .collect::<rusqlite::Result<_>>()?;
        for rowid in rowids {
            if let Some(read) = self.matching_row(&file, rowid, needle)? {
                return Ok(Some(read));
            }
        }
        Ok(None)
    }

    /// Row `rowid` of `file` read again from the file (the truth) when `needle` is in it:
    /// the message's entry id and the text it was found in. That is the message as written,
    /// or, for a phrase that runs into this message from the ones before (and is not wholly
    /// inside them, where an earlier row names the entry), the normalised message after
    /// their tail ([`with_tail`]), as the row was indexed.
    fn matching_row(
        &self,
        file: &File,
        rowid: i64,
        needle: &Needle,
    ) -> rusqlite::Result<Option<RowText>> {
        let message = self.read_message(file, rowid)?;
        self.matching_message(file, rowid, message, needle)
    }

    /// [`SearchIndex::matching_row`] of row `rowid` whose message (entry id and text, as
    /// [`row_at`] reads it) was read already.
    fn matching_message(
        &self,
        file: &File,
        rowid: i64,
        message: Option<RowText>,
        needle: &Needle,
    ) -> rusqlite::Result<Option<RowText>> {
        let Some((entry_id, text)) = message else {
            return Ok(None);
        };
        if needle.found_in(&text) {
            return Ok(Some((entry_id, text)));
        }
        if !matches!(needle, Needle::Phrase(_)) {
            return Ok(None);
        }
        let tail = self.tail_before(file, rowid)?;
        if needle.found_in(&tail) {
            return Ok(None);
        }
        let joined = with_tail(&tail, &normalize(&text));
        Ok(needle.found_in(&joined).then_some((entry_id, joined)))
    }

    /// The entry id and text of the message of row `rowid`.
    fn read_message(&self, file: &File, rowid: i64) -> rusqlite::Result<Option<RowText>> {
        let mut at = self
            .conn
            .prepare_cached("SELECT offset, len FROM entries WHERE rowid = ?1")?;
        let Some((offset, len)) = at
            .query_row(params![rowid], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
            })
            .optional()?
        else {
            return Ok(None);
        };
        Ok(row_at(file, offset as u64, len as u32))
    }

    /// The tail of the messages before row `rowid` ([`tail_after`]), read again from `file`.
    fn tail_before(&self, file: &File, rowid: i64) -> rusqlite::Result<String> {
        let first = (rowid >> SEQ_BITS) << SEQ_BITS;
        let mut before: Vec<String> = Vec::new();
        let mut chars = 0;
        for r in (first..rowid).rev() {
            if chars > TAIL_CHARS {
                break;
            }
            let Some((_, text)) = self.read_message(file, r)? else {
                continue;
            };
            let norm = normalize(&text);
            if !norm.is_empty() {
                chars += norm.chars().count() + 1;
                before.push(norm);
            }
        }
        Ok(before
            .iter()
            .rev()
            .fold(String::new(), |tail, m| tail_after(&tail, m)))
    }
}

/// Sessions whose name holds `needle` rank first whatever their messages hold, so with a
/// `limit` they are left out of the check: those sessions, and how many others are wanted.
pub(super) fn named_first(
    needle: &Needle,
    files: &HashMap<i64, FileFields>,
    limit: usize,
) -> (HashSet<i64>, usize) {
    let in_name: HashSet<i64> = files
        .iter()
        .filter(|(_, ff)| {
            needle_score(needle, &ff.fields(), || false).is_some_and(|s| s < TIER_WEIGHT)
        })
        .map(|(&f, _)| f)
        .collect();
    let wanted = limit.saturating_sub(in_name.len());
    (in_name, wanted)
}

/// A regex that finds a needle in raw text, for the snippet.
fn mark_regex(needle: &Needle) -> Option<SearchRegex> {
    let pattern = match needle {
        Needle::Regex(re) => return Some(re.clone()),
        Needle::Word(w) => regex::escape(w),
        Needle::Phrase(p) => p
            .split(' ')
            .map(regex::escape)
            .collect::<Vec<_>>()
            .join(r"\s+"),
    };
    RegexBuilder::new(&pattern)
        .case_insensitive(true)
        .build()
        .ok()
        .map(SearchRegex::plain)
}

/// Up to ~100 characters of `text` around the first match of `mark`, on one line.
pub(crate) fn snippet(text: &str, mark: Option<&SearchRegex>) -> String {
    const BEFORE: usize = 30;
    const WIDTH: usize = 100;
    let at = mark.and_then(|m| m.find_start(text)).unwrap_or(0);
    let start = text[..at]
        .char_indices()
        .rev()
        .nth(BEFORE.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    let mut n = 0;
    let mut last_space = false;
    let mut cut = false;
    for c in text[start..].chars() {
        if n >= WIDTH {
            cut = true;
            break;
        }
        if c.is_whitespace() || c.is_control() {
            if !last_space {
                out.push(' ');
                n += 1;
            }
            last_space = true;
        } else {
            out.push(c);
            n += 1;
            last_space = false;
        }
    }
    if cut {
        out.push('…');
    }
    out
}
