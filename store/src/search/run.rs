//! Answering a query from the search index: candidate rows from FTS5, then every phrase and
//! regex candidate checked against its line in the session file (the truth), so results
//! equal a plain scan of the files.
//!
//! How each token finds its rows (texts are indexed normalised, see
//! [`super::query::normalize`]; FTS5's `unicode61` tokens are runs of letters and digits):
//!
//! - a fuzzy word: rows with a word starting with it (each of its letter/digit runs);
//! - a phrase: the runs that must be whole words in any text containing the phrase (those
//!   between two ASCII separators) as an FTS5 phrase, the last one as a prefix; a phrase
//!   inside one word looks the word up in the index's vocabulary; then each row is checked;
//! - `re:`: the literal runs the pattern requires, looked up the same way, then each row is
//!   checked with the regex; a pattern without a literal reads every line.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use regex::{Regex, RegexBuilder};
use rusqlite::params;

use super::index::{SEQ_BITS, SearchIndex};
use super::query::{Query, Token, normalize};
use super::rows::row_at;
use crate::error::Result;

/// Most vocabulary words one infix lookup may expand to before the token reads every line.
const MAX_EXPANSION: usize = 2000;

/// One session that matches a query.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The session file.
    pub path: PathBuf,
    /// The header's id, when the header was indexed.
    pub session_id: Option<String>,
    /// The entry whose text matched first (`None`: the header's id or cwd matched).
    pub entry_id: Option<String>,
    /// A short, single-line excerpt around the match.
    pub snippet: String,
    /// Relevance: minus the number of the session's entries that match, summed over the
    /// query's words (for a phrase or a regex: the entries holding its words); lower is
    /// better, as with FTS5's bm25.
    pub score: f64,
    /// The file's mtime in ns (ties: newest first).
    pub mtime_ns: i64,
}

/// The sessions that matched one token: file id → (score, the row shown).
type Rows = HashMap<i64, (f64, i64)>;

/// A session's score from its matching rows (see [`Hit::score`]).
fn score(rows: &[i64]) -> f64 {
    -(rows.len() as f64)
}

enum Plan {
    /// Rows of this FTS5 expression match as they are.
    Exact(String),
    /// These rows may match; check each.
    Check(Cand, Check),
}

/// Candidate rows of a token that needs checking.
enum Cand {
    /// The rows of an FTS5 expression.
    Expr(String),
    /// Every row (nothing narrows the search down).
    All,
    /// No row can match.
    Nothing,
}

enum Check {
    Phrase(String),
    Regex(Regex),
}

impl Check {
    fn matches(&self, text: &str) -> bool {
        match self {
            Check::Phrase(p) => normalize(text).contains(p.as_str()),
            Check::Regex(re) => re.is_match(text),
        }
    }
}

/// A maximal run of characters that are not ASCII separators, in a normalised text.
struct Run<'a> {
    text: &'a str,
    /// Only ASCII letters and digits: certainly one FTS5 token piece.
    clean: bool,
    /// An ASCII separator precedes / follows it inside the phrase.
    left: bool,
    right: bool,
}

fn runs(s: &str) -> Vec<Run<'_>> {
    let is_sep = |c: char| c.is_ascii() && !c.is_ascii_alphanumeric();
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices().chain(std::iter::once((s.len(), ' '))) {
        let sep = i == s.len() || is_sep(c);
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

impl SearchIndex {
    /// Sessions matching `query` (see the module docs), best first, each with the entry that
    /// matched and a snippet. `dirs` limits the answer to sessions directly in those folders;
    /// `limit` caps how many hits get a snippet and are returned.
    ///
    /// The answer covers what is indexed; pair it with [`SearchIndex::coverage`] while a build
    /// runs. An empty or invalid query matches nothing.
    ///
    /// Errors: [`crate::Error::Index`].
    pub fn search(
        &self,
        query: &Query,
        dirs: Option<&[PathBuf]>,
        limit: Option<usize>,
    ) -> Result<Vec<Hit>> {
        self.search_inner(query, dirs, limit)
            .map_err(|e| self.fail(e))
    }

    fn search_inner(
        &self,
        query: &Query,
        dirs: Option<&[PathBuf]>,
        limit: Option<usize>,
    ) -> rusqlite::Result<Vec<Hit>> {
        let (plans, marks): (Vec<Plan>, Vec<Option<Regex>>) = match query {
            Query::Invalid(_) => return Ok(Vec::new()),
            Query::Tokens(tokens) if tokens.is_empty() => return Ok(Vec::new()),
            Query::Tokens(tokens) => {
                let mut plans = Vec::new();
                let mut marks = Vec::new();
                for t in tokens {
                    plans.push(self.plan_token(t)?);
                    marks.push(mark_regex(t));
                }
                (plans, marks)
            }
            Query::Regex(re) => (vec![self.plan_regex(re)?], vec![Some(re.clone())]),
        };
        let scope = self.scope(dirs)?;
        let mtimes = self.mtimes()?;
        let mut acc: Option<HashMap<i64, (f64, i64)>> = None;
        // One token and a limit: rows are checked best first until `limit` sessions pass.
        let lazy = if plans.len() == 1 { limit } else { None };
        for plan in &plans {
            let by_file = self.rows_for(plan, scope.as_ref(), &mtimes, lazy)?;
            acc = Some(match acc {
                None => by_file,
                Some(prev) => prev
                    .into_iter()
                    .filter_map(|(f, (s, r))| by_file.get(&f).map(|(s2, _)| (f, (s + s2, r))))
                    .collect(),
            });
            if acc.as_ref().is_some_and(HashMap::is_empty) {
                break;
            }
        }
        let acc = acc.unwrap_or_default();
        // Rank on (score, mtime, file id) first; paths and snippets only for what is kept.
        let mut ranked: Vec<(i64, f64, i64, i64)> = acc
            .iter()
            .map(|(&f, &(score, rowid))| (f, score, mtimes.get(&f).copied().unwrap_or(0), rowid))
            .collect();
        ranked.sort_by(|a, b| {
            a.1.total_cmp(&b.1)
                .then_with(|| b.2.cmp(&a.2))
                .then_with(|| a.0.cmp(&b.0))
        });
        if let Some(n) = limit {
            ranked.truncate(n);
        }
        let mark = marks.first().and_then(Option::as_ref);
        let mut file_stmt = self
            .conn
            .prepare_cached("SELECT path, session_id FROM files WHERE id = ?1")?;
        let mut out = Vec::with_capacity(ranked.len());
        for (file, score, mtime_ns, rowid) in ranked {
            let (path, session_id): (String, Option<String>) =
                file_stmt.query_row(params![file], |r| Ok((r.get(0)?, r.get(1)?)))?;
            let mut hit = Hit {
                path: PathBuf::from(path),
                session_id,
                entry_id: None,
                snippet: String::new(),
                score,
                mtime_ns,
            };
            if let Some((entry_id, text)) = self.row_text(&hit.path, rowid)? {
                hit.entry_id = entry_id;
                hit.snippet = snippet(&text, mark);
            }
            out.push(hit);
        }
        Ok(out)
    }

    /// Every indexed file's mtime in ns, by file id (ties of relevance: newest first).
    fn mtimes(&self) -> rusqlite::Result<HashMap<i64, i64>> {
        let mut stmt = self.conn.prepare_cached("SELECT id, mtime_ns FROM files")?;
        stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))?
            .collect()
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

    fn plan_token(&self, token: &Token) -> rusqlite::Result<Plan> {
        match token {
            Token::Fuzzy(w) => {
                let norm = normalize(w);
                let rs = runs(&norm);
                if !rs.is_empty() && rs.iter().all(|r| r.clean) {
                    let expr = rs
                        .iter()
                        .map(|r| format!("{}*", quote(r.text)))
                        .collect::<Vec<_>>()
                        .join(" AND ");
                    return Ok(Plan::Exact(expr));
                }
                self.plan_phrase(&norm)
            }
            Token::Phrase(p) => self.plan_phrase(&normalize(p)),
        }
    }

    fn plan_phrase(&self, phrase: &str) -> rusqlite::Result<Plan> {
        let check = Check::Phrase(phrase.to_owned());
        let rs = runs(phrase);
        // Runs that must be whole words (or, last, a word's start), grouped where adjacent:
        // (index of the group's first run, its FTS5 phrase pieces).
        let mut groups: Vec<(usize, Vec<String>)> = Vec::new();
        let mut current: Option<(usize, Vec<String>)> = None;
        for (k, r) in rs.iter().enumerate() {
            let usable = r.clean && r.left;
            if usable {
                let piece = if r.right {
                    quote(r.text)
                } else {
                    format!("{} *", quote(r.text))
                };
                current.get_or_insert_with(|| (k, Vec::new())).1.push(piece);
                if r.right {
                    continue;
                }
            }
            if let Some(g) = current.take() {
                groups.push(g);
            }
        }
        if let Some(g) = current.take() {
            groups.push(g);
        }
        let clauses: Vec<String> = groups.iter().map(|(_, g)| g.join(" + ")).collect();
        // A first run that ends at a separator is the end of some word; looking those words
        // up would scan the whole vocabulary (fts5vocab reads every doclist), which costs more
        // than checking the extra candidates, so it only narrows nothing here.
        if !clauses.is_empty() {
            return Ok(Plan::Check(Cand::Expr(clauses.join(" AND ")), check));
        }
        // Inside one word: the longest clean run is part of some indexed word.
        let longest = rs.iter().filter(|r| r.clean).max_by_key(|r| r.text.len());
        Ok(Plan::Check(self.infix(longest.map(|r| r.text))?, check))
    }

    /// Indexed words matching the GLOB `pattern`; `None` when more than `max` do.
    fn vocab(&self, pattern: &str, max: usize) -> rusqlite::Result<Option<Vec<String>>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT term FROM vocab WHERE term GLOB ?1 LIMIT ?2")?;
        let terms: Vec<String> = stmt
            .query_map(params![pattern, (max + 1) as i64], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok((terms.len() <= max).then_some(terms))
    }

    /// The rows with an indexed word containing `piece` (ASCII letters and digits); every
    /// row when there is no piece or too many words contain it.
    fn infix(&self, piece: Option<&str>) -> rusqlite::Result<Cand> {
        let Some(piece) = piece else {
            return Ok(Cand::All);
        };
        Ok(match self.vocab(&format!("*{piece}*"), MAX_EXPANSION)? {
            None => Cand::All,
            // No word contains it, so no text does.
            Some(terms) if terms.is_empty() => Cand::Nothing,
            Some(terms) => Cand::Expr(
                terms
                    .iter()
                    .map(|t| quote(t))
                    .collect::<Vec<_>>()
                    .join(" OR "),
            ),
        })
    }
    fn plan_regex(&self, re: &Regex) -> rusqlite::Result<Plan> {
        let pieces = required_literals(re.as_str());
        let mut exprs = Vec::new();
        let mut nothing = false;
        for lit in pieces {
            let norm = normalize(&lit);
            let longest = runs(&norm)
                .into_iter()
                .filter(|r| r.clean && r.text.len() >= 3)
                .max_by_key(|r| r.text.len())
                .map(|r| r.text.to_owned());
            if let Some(piece) = longest {
                match self.infix(Some(&piece))? {
                    Cand::Expr(expr) => exprs.push(format!("({expr})")),
                    Cand::Nothing => nothing = true,
                    Cand::All => {}
                }
            }
        }
        let cand = if nothing {
            Cand::Nothing
        } else if exprs.is_empty() {
            Cand::All
        } else {
            Cand::Expr(exprs.join(" AND "))
        };
        Ok(Plan::Check(cand, Check::Regex(re.clone())))
    }

    /// The sessions with rows matching `plan`, each with its score and the row shown: the
    /// last row that matches (for a check, the last that passes). With `limit`, a check
    /// stops once the best `limit` sessions (by score, then `mtimes`, newest first) have a
    /// row that passes: the same sessions a full check ranks first, at a fraction of the
    /// reads.
    ///
    /// Relevance is counted, not FTS5's bm25: bm25 looks up every matching row's size in
    /// the index, most of the time of a search for a common word, with no top-k pruning.
    fn rows_for(
        &self,
        plan: &Plan,
        scope: Option<&HashSet<i64>>,
        mtimes: &HashMap<i64, i64>,
        limit: Option<usize>,
    ) -> rusqlite::Result<Rows> {
        let in_scope = |rowid: i64| scope.is_none_or(|s| s.contains(&(rowid >> SEQ_BITS)));
        let (expr, check) = match plan {
            Plan::Exact(e) => (Some(e.as_str()), None),
            Plan::Check(Cand::Nothing, _) => return Ok(Rows::new()),
            Plan::Check(Cand::Expr(e), c) => (Some(e.as_str()), Some(c)),
            Plan::Check(Cand::All, c) => (None, Some(c)),
        };
        let mut candidates: Vec<i64> = Vec::new();
        {
            let mut stmt = match expr {
                Some(_) => self
                    .conn
                    .prepare_cached("SELECT rowid FROM texts WHERE texts MATCH ?1")?,
                None => self.conn.prepare_cached("SELECT rowid FROM entries")?,
            };
            let mut rows = match expr {
                Some(expr) => stmt.query([expr])?,
                None => stmt.query([])?,
            };
            while let Some(r) = rows.next()? {
                let rowid: i64 = r.get(0)?;
                if in_scope(rowid) {
                    candidates.push(rowid);
                }
            }
        }
        // Each file's candidates together (FTS5 and the entries table give them in rowid
        // order already).
        candidates.sort_unstable();
        let mut files: Vec<(i64, &[i64])> = candidates
            .chunk_by(|a, b| a >> SEQ_BITS == b >> SEQ_BITS)
            .map(|rows| (rows[0] >> SEQ_BITS, rows))
            .collect();
        let Some(check) = check else {
            return Ok(files
                .into_iter()
                .map(|(file, rows)| (file, (score(rows), rows[rows.len() - 1])))
                .collect());
        };
        // Only the best `limit` wanted: files in the final ranking's order (most candidates,
        // newest, lowest id).
        if limit.is_some() {
            files.sort_by(|(fa, ra), (fb, rb)| {
                rb.len()
                    .cmp(&ra.len())
                    .then_with(|| mtimes.get(fb).cmp(&mtimes.get(fa)))
                    .then(fa.cmp(fb))
            });
        }
        self.check_in_order(&files, check, limit)
    }

    /// Checks each file's candidate rows (`(file id, its rows in rowid order)`, files in
    /// their order) against their lines, last row first, and keeps the first that passes,
    /// until `limit` files have one. One file is open at a time.
    fn check_in_order(
        &self,
        files: &[(i64, &[i64])],
        check: &Check,
        limit: Option<usize>,
    ) -> rusqlite::Result<Rows> {
        let mut out = Rows::new();
        let mut file_stmt = self
            .conn
            .prepare_cached("SELECT path FROM files WHERE id = ?1")?;
        let mut row_stmt = self
            .conn
            .prepare_cached("SELECT offset, len FROM entries WHERE rowid = ?1")?;
        for &(file_id, rows) in files {
            if limit.is_some_and(|n| out.len() >= n) {
                break;
            }
            let path: String = file_stmt.query_row(params![file_id], |r| r.get(0))?;
            let Ok(file) = File::open(path) else {
                continue;
            };
            for &rowid in rows.iter().rev() {
                let (offset, len): (i64, i64) =
                    row_stmt.query_row(params![rowid], |r| Ok((r.get(0)?, r.get(1)?)))?;
                if let Some((_, text)) = row_at(&file, offset as u64, len as u32)
                    && check.matches(&text)
                {
                    out.insert(file_id, (score(rows), rowid));
                    break;
                }
            }
        }
        Ok(out)
    }

    /// The entry id and text of row `rowid`, read again from `path`.
    fn row_text(
        &self,
        path: &Path,
        rowid: i64,
    ) -> rusqlite::Result<Option<(Option<String>, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT offset, len FROM entries WHERE rowid = ?1")?;
        let (offset, len): (i64, i64) =
            stmt.query_row(params![rowid], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(File::open(path)
            .ok()
            .and_then(|f| row_at(&f, offset as u64, len as u32)))
    }
}

/// Literal strings every match of `pattern` contains (top-level concatenated literals of
/// the pattern as written); none when the pattern cannot be split that way.
fn required_literals(pattern: &str) -> Vec<String> {
    use regex_syntax::hir::{Hir, HirKind};
    let Ok(hir) = regex_syntax::Parser::new().parse(pattern) else {
        return Vec::new();
    };
    let lit = |h: &Hir| match h.kind() {
        HirKind::Literal(l) => String::from_utf8(l.0.to_vec()).ok(),
        _ => None,
    };
    match hir.kind() {
        HirKind::Literal(_) => lit(&hir).into_iter().collect(),
        HirKind::Concat(parts) => parts.iter().filter_map(lit).collect(),
        HirKind::Capture(c) => match c.sub.kind() {
            HirKind::Literal(_) => lit(&c.sub).into_iter().collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// A regex that finds a token in raw text, for the snippet.
fn mark_regex(token: &Token) -> Option<Regex> {
    let pattern = match token {
        Token::Fuzzy(w) => regex::escape(w),
        Token::Phrase(p) => normalize(p)
            .split(' ')
            .map(regex::escape)
            .collect::<Vec<_>>()
            .join(r"\s+"),
    };
    RegexBuilder::new(&pattern)
        .case_insensitive(true)
        .build()
        .ok()
}

/// Up to ~100 characters of `text` around the first match of `mark`, on one line.
pub(crate) fn snippet(text: &str, mark: Option<&Regex>) -> String {
    const BEFORE: usize = 30;
    const WIDTH: usize = 100;
    let at = mark.and_then(|m| m.find(text)).map_or(0, |m| m.start());
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
