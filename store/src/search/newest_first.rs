//! Checking sessions newest first until a limit is filled: the order pi's ranking gives
//! sessions of one score (`modified`, then mtime, newest first, then file name descending),
//! so the first sessions found that match are the ones a limited search keeps.

use std::collections::HashMap;

use super::index::{SEQ_BITS, SearchIndex};
use super::matching::Needle;
use super::run::{Cand, FileFields, Rows, RowsOf, named_first};

/// Rows a regex's sessions are read newest first for (see
/// [`SearchIndex::rows_newest_first`]) before the rest are checked through their candidate
/// rows.
const NEWEST_FIRST_ROWS: usize = 2000;

/// A session's `modified` (ms) and mtime (ns), then the file id and what goes with it.
pub(super) type Keyed<T> = (f64, i64, (i64, T));

impl SearchIndex {
    /// [`SearchIndex::rows_for`] with a limit for a plan whose candidate rows are many (every
    /// row, or a regex's): listing them all (every row of 100,000 sessions, or every row
    /// holding a common word) costs more than reading the sessions newest first. The
    /// sessions to check are every one in scope (`Cand::All`) or those whose `docs` hold the
    /// expression (a regex matches within one message, and so within one document); each is
    /// read from its last row back. A regex whose sessions mostly fail the check stops after
    /// [`NEWEST_FIRST_ROWS`] rows and checks the rest through the candidate rows of `texts`.
    pub(super) fn rows_newest_first(
        &self,
        cand: &Cand,
        needle: &Needle,
        files: &HashMap<i64, FileFields>,
        scoped: bool,
        limit: usize,
    ) -> rusqlite::Result<Rows> {
        let (in_name, wanted) = named_first(needle, files, limit);
        let (sessions, budget): (Vec<(i64, RowsOf)>, _) = match cand {
            Cand::Expr(expr) => (
                self.sessions_holding(expr, files, scoped)?
                    .into_keys()
                    .filter(|f| !in_name.contains(f))
                    .map(|f| (f, RowsOf::Every))
                    .collect(),
                Some(NEWEST_FIRST_ROWS),
            ),
            _ => (
                files
                    .keys()
                    .filter(|f| !in_name.contains(f))
                    .map(|&f| (f, RowsOf::Every))
                    .collect(),
                None,
            ),
        };
        let keyed = Self::newest_first(files, sessions);
        let (mut out, rest) = self.check_newest_first(keyed, needle, wanted, budget)?;
        let Cand::Expr(expr) = cand else {
            return Ok(out);
        };
        if out.len() >= wanted || rest.is_empty() {
            return Ok(out);
        }
        // The rest, in the same order, through their candidate rows.
        let mut candidates: Vec<i64> = Vec::new();
        {
            let mut stmt = self
                .conn
                .prepare_cached("SELECT rowid FROM texts WHERE texts MATCH ?1")?;
            let mut rows = stmt.query([expr])?;
            while let Some(r) = rows.next()? {
                candidates.push(r.get(0)?);
            }
        }
        candidates.sort_unstable();
        let by_file: HashMap<i64, &[i64]> = candidates
            .chunk_by(|a, b| a >> SEQ_BITS == b >> SEQ_BITS)
            .map(|rows| (rows[0] >> SEQ_BITS, rows))
            .collect();
        let rest: Vec<Keyed<RowsOf>> = rest
            .into_iter()
            .filter_map(|(m, t, (f, _))| {
                by_file
                    .get(&f)
                    .map(|&rows| (m, t, (f, RowsOf::Listed(rows))))
            })
            .collect();
        let (more, _) = self.check_newest_first(rest, needle, wanted - out.len(), None)?;
        out.extend(more);
        Ok(out)
    }

    /// `items` (file id first) in the order the ranking gives sessions of one score (see
    /// `search_inner`): newest first, so the first sessions found that match are the ones it
    /// keeps. Ties are left for [`SearchIndex::check_newest_first`] to order as it goes.
    pub(super) fn newest_first<T>(
        files: &HashMap<i64, FileFields>,
        items: Vec<(i64, T)>,
    ) -> Vec<Keyed<T>> {
        // Keys looked up once per file, not per comparison (thousands of files for a regex).
        let mut keyed: Vec<Keyed<T>> = items
            .into_iter()
            .map(|item| {
                let ff = files.get(&item.0);
                (
                    ff.map_or(0.0, |ff| ff.modified_ms),
                    ff.map_or(0, |ff| ff.mtime_ns),
                    item,
                )
            })
            .collect();
        keyed.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| b.1.cmp(&a.1))
                .then(a.2.0.cmp(&b.2.0))
        });
        keyed
    }

    /// [`SearchIndex::check_in_order`] over `keyed` (sorted by [`SearchIndex::newest_first`]),
    /// ordering sessions of equal `modified` and mtime by name a stretch at a time, just
    /// before they are checked: ties are few in real use, but a folder of copies (hard links,
    /// one mtime) ties them all, and reading every name costs more than the search. Returns
    /// the sessions found, and those left unchecked when the `budget` of rows ran out, in
    /// the order reached (ties there may be out of order: a later call orders them).
    pub(super) fn check_newest_first<'r>(
        &self,
        mut keyed: Vec<Keyed<RowsOf<'r>>>,
        needle: &Needle,
        limit: usize,
        budget: Option<usize>,
    ) -> rusqlite::Result<(Rows, Vec<Keyed<RowsOf<'r>>>)> {
        let mut out = Rows::new();
        let mut done = 0;
        // Every run of ties that starts before this is in order (a run's end).
        let mut ordered = 0;
        let mut spent = 0;
        while done < keyed.len() && out.len() < limit && budget.is_none_or(|b| spent < b) {
            let stretch = (limit - out.len()).max(16);
            let end = (done + stretch).min(keyed.len());
            if ordered < end {
                ordered += self.order_ties_by_name(
                    &mut keyed[ordered..],
                    end - ordered,
                    |k| k.2.0,
                    |a, b| a.0.total_cmp(&b.0).is_eq() && a.1 == b.1,
                )?;
            }
            let part: Vec<(i64, RowsOf)> = keyed[done..end].iter().map(|k| k.2).collect();
            let (found, checked, read) = self.check_in_order(
                &part,
                needle,
                Some(limit - out.len()),
                budget.map(|b| b - spent),
            )?;
            out.extend(found);
            spent += read;
            done += checked;
            if checked < part.len() {
                break;
            }
        }
        keyed.drain(..done);
        Ok((out, keyed))
    }
}
