//! The search index database: SQLite with an FTS5 table of every searchable text, kept in
//! step with the session files by (path, size, mtime, inode) and by appends.
//!
//! Tables: `files` (one row per session file: its stamp, how far it is indexed, its rows'
//! next sequence number, its session id, name, cwd, header time and last activity), `entries`
//! (per text row: entry id and where its line is), `texts` (FTS5, contentless and without
//! positions: which rows hold each word of the normalised text, nothing else), `docs` (FTS5
//! likewise: the messages of one write of a file as one document, listed in `doc_ids`, so the
//! sessions holding a word are read from one entry each instead of one per message), `pairs`
//! (FTS5 likewise, one row per `texts` row: each two words that follow each other in the
//! row's text as one token, `pair_token`, so a phrase's rows are read from the short lists
//! of its word pairs instead of walking position lists of every occurrence of each of its
//! words) and `words` (every run of a text between ASCII separators, so a word found inside
//! another word can be looked up: FTS5 only finds tokens by their start). The FTS5 tables use
//! the `ascii` tokenizer: a token is exactly one of `words_of` (or a pair of them), so every
//! quoted word is one token and no query needs positions; a document holds each distinct
//! token once (`tokens::documents`, made on the threads that read the files). A row's id is
//! `file_id << 24 | seq`, and a document's is its first row's, so a match names its file
//! without a join. A message's text is indexed after the end of the messages before it
//! ([`super::rows::with_tail`]), so a phrase running from one message into the next is found
//! as pi finds it in the joined text.
//!
//! Crash safety is SQLite's: a file's rows and its new stamp are committed in one
//! transaction, so a killed build leaves every file either indexed as it was or not at all,
//! and the next sync carries on. A database SQLite reports as corrupt (or not a database) is
//! deleted and built again; the JSONL files stay the truth.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};

use super::rows::{FileRows, read_rows};
use super::tokens::{Documents, documents, is_word};
use crate::error::{Error, Result, is_broken};

/// File name of the database inside the folder's [`crate::dirs::index_dir`].
pub const DB_FILE: &str = "search.sqlite";
/// The lock a builder holds while it writes (one builder per database at a time).
const LOCK_FILE: &str = "search.lock";
/// Bumped whenever what is indexed changes meaning; a database of another format is rebuilt.
const FORMAT: i64 = 8;
/// Bits of a row id that number the rows of one file.
pub(crate) const SEQ_BITS: u32 = 24;
/// How many rows of one file the index holds: the row ids [`SEQ_BITS`] can number.
const MAX_ROWS: usize = 1 << SEQ_BITS;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    dir TEXT NOT NULL,
    session_id TEXT,
    name TEXT,
    cwd TEXT,
    header_ms REAL,
    activity_ms REAL,
    tail TEXT,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL DEFAULT 0,
    ino INTEGER NOT NULL,
    indexed INTEGER NOT NULL,
    checked INTEGER NOT NULL DEFAULT 0,
    torn INTEGER NOT NULL,
    next_seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS files_dir ON files(dir);
CREATE TABLE IF NOT EXISTS entries(
    rowid INTEGER PRIMARY KEY,
    entry_id TEXT,
    offset INTEGER NOT NULL,
    len INTEGER NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS texts USING fts5(
    text, content='', contentless_delete=1, detail=none, tokenize='ascii'
);
CREATE TABLE IF NOT EXISTS words(word TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(
    text, content='', contentless_delete=1, detail=none, tokenize='ascii'
);
CREATE TABLE IF NOT EXISTS doc_ids(rowid INTEGER PRIMARY KEY);
CREATE VIRTUAL TABLE IF NOT EXISTS pairs USING fts5(
    text, content='', contentless_delete=1, detail=none, tokenize='ascii'
);
";

const KNOWN_SQL: &str =
    "SELECT path, id, size, mtime_ns, ino, indexed, torn, next_seq, ctime_ns, checked FROM files";

fn read_known(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, Known)> {
    Ok((
        r.get(0)?,
        Known {
            id: r.get(1)?,
            stamp: Stamp {
                size: r.get::<_, i64>(2)? as u64,
                mtime_ns: r.get(3)?,
                ctime_ns: r.get(8)?,
                ino: r.get::<_, i64>(4)? as u64,
            },
            indexed: r.get::<_, i64>(5)? as u64,
            torn: r.get(6)?,
            next_seq: r.get(7)?,
            checked: r.get::<_, i64>(9)? as u32,
        },
    ))
}

/// A session file's identity and size as last indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) size: u64,
    pub(crate) mtime_ns: i64,
    /// Any write moves it, and no one can set it back (an edit with the mtime put back).
    pub(crate) ctime_ns: i64,
    pub(crate) ino: u64,
}

impl Stamp {
    /// The stamp of a regular file, from its `stat`.
    fn of_stat(st: &rustix::fs::Stat) -> Option<Stamp> {
        if !rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() {
            return None;
        }
        Some(Stamp {
            size: u64::try_from(st.st_size).ok()?,
            mtime_ns: st
                .st_mtime
                .saturating_mul(1_000_000_000)
                .saturating_add(i64::try_from(st.st_mtime_nsec).ok()?),
            ctime_ns: st
                .st_ctime
                .saturating_mul(1_000_000_000)
                .saturating_add(i64::try_from(st.st_ctime_nsec).ok()?),
            ino: st.st_ino,
        })
    }

    /// The stamp of the regular file at `path` (symbolic links followed); `None` when it
    /// cannot be read or is not a regular file.
    pub(crate) fn of(path: &Path) -> Option<Stamp> {
        Stamp::of_stat(&rustix::fs::stat(path).ok()?)
    }
}

/// What the index holds of one file.
#[derive(Debug, Clone)]
struct Known {
    id: i64,
    stamp: Stamp,
    indexed: u64,
    torn: bool,
    next_seq: i64,
    /// [`ends_checksum`] of the first `indexed` bytes.
    checked: u32,
}

/// One file to (re)index.
#[derive(Debug, Clone)]
struct Work {
    path: PathBuf,
    known: Option<Known>,
    /// Where to start reading: 0, or where the last read stopped (the file only grew).
    from: u64,
}

/// What a sync would do: files to read and files that are gone.
#[derive(Debug, Default)]
pub struct Plan {
    work: Vec<Work>,
    gone: Vec<i64>,
    /// Session files in scope.
    pub total: usize,
}

impl Plan {
    /// Files that are not (fully) indexed yet.
    pub fn stale(&self) -> usize {
        self.work.len()
    }

    /// Whether the index already answers for every file in scope.
    pub fn is_current(&self) -> bool {
        self.work.is_empty() && self.gone.is_empty()
    }
}

/// How much of a scope the index covers: `indexed` of `total` session files are current.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Coverage {
    /// Files whose every line is indexed.
    pub indexed: usize,
    /// Files in scope.
    pub total: usize,
}

impl Coverage {
    /// Whether every file is indexed.
    pub fn complete(&self) -> bool {
        self.indexed >= self.total
    }
}

/// An open search index (one SQLite database).
pub struct SearchIndex {
    pub(crate) conn: Connection,
    db: PathBuf,
}

/// Whether `e` says the database file is damaged (then it is rebuilt).
fn db_error(db: &Path, e: rusqlite::Error) -> Error {
    Error::Index {
        path: db.to_owned(),
        cause: e,
    }
}

fn remove_db(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

fn connect(db: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(db)?;
    conn.busy_timeout(Duration::from_secs(30))?;
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let format: Option<i64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
            r.get(0)
        })
        .optional()
        .or_else(|e| match e {
            rusqlite::Error::SqliteFailure(_, Some(ref m)) if m.contains("no such table") => {
                Ok(None)
            }
            other => Err(other),
        })?;
    if format != Some(FORMAT) {
        // IMMEDIATE: two processes creating the schema at once take turns.
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let again: Option<i64> = conn
            .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
                r.get(0)
            })
            .optional()
            .unwrap_or(None);
        if again != Some(FORMAT) {
            conn.execute_batch(
                "DROP TABLE IF EXISTS vocab; DROP TABLE IF EXISTS words; DROP TABLE IF EXISTS texts;
                 DROP TABLE IF EXISTS docs; DROP TABLE IF EXISTS doc_ids;
                 DROP TABLE IF EXISTS pairs;
                 DROP TABLE IF EXISTS entries; DROP TABLE IF EXISTS files;
                 DROP TABLE IF EXISTS meta;",
            )?;
            conn.execute_batch(SCHEMA)?;
            // 16 MiB of pending tokens before FTS5 writes a segment (its default: 1 MiB):
            // fewer, larger segments to merge while a build writes (with the commits of
            // `apply`, the build without pairs took 20.5 s instead of 32 s).
            conn.execute_batch(
                "INSERT INTO texts(texts, rank) VALUES ('hashsize', 16777216);
                 INSERT INTO docs(docs, rank) VALUES ('hashsize', 16777216);
                 INSERT INTO pairs(pairs, rank) VALUES ('hashsize', 16777216);",
            )?;
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('format', ?1)",
                params![FORMAT],
            )?;
        }
        conn.execute_batch("COMMIT")?;
    }
    Ok(conn)
}

impl SearchIndex {
    /// Opens (creating it when missing) the search index of the sessions in `folder`, kept
    /// under `agent_dir` ([`index_folder`] says which folder's index that is).
    ///
    /// Errors: [`Error::Io`] when the index directory cannot be created, [`Error::Index`]
    /// when SQLite fails for another reason than a damaged file (which is rebuilt).
    pub fn open(agent_dir: &Path, folder: &Path) -> Result<SearchIndex> {
        let dir = crate::dirs::index_dir(agent_dir, &index_folder(agent_dir, folder));
        crate::dirs::ensure_dir(&dir)?;
        SearchIndex::open_at(&dir.join(DB_FILE))
    }

    /// Opens the database file `db` itself (see [`SearchIndex::open`]).
    ///
    /// Errors: as [`SearchIndex::open`].
    pub fn open_at(db: &Path) -> Result<SearchIndex> {
        let conn = match connect(db) {
            Ok(c) => c,
            Err(e) if is_broken(&e) => {
                tracing::warn!("search index {} is damaged; rebuilding it", db.display());
                remove_db(db);
                connect(db).map_err(|e| db_error(db, e))?
            }
            Err(e) => return Err(db_error(db, e)),
        };
        Ok(SearchIndex {
            conn,
            db: db.to_owned(),
        })
    }

    /// Another connection to the same database (one connection is not shared by threads);
    /// unlike [`SearchIndex::open_at`], never deletes a damaged file.
    pub(crate) fn another(&self) -> rusqlite::Result<SearchIndex> {
        Ok(SearchIndex {
            conn: connect(&self.db)?,
            db: self.db.clone(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.db
    }

    /// Deletes the database and opens a new, empty one (after SQLite reported damage).
    ///
    /// Errors: as [`SearchIndex::open`].
    pub fn rebuild(self) -> Result<SearchIndex> {
        let db = self.db.clone();
        drop(self);
        remove_db(&db);
        SearchIndex::open_at(&db)
    }

    pub(crate) fn fail(&self, e: rusqlite::Error) -> Error {
        db_error(&self.db, e)
    }

    /// Takes the builder lock, without waiting: `None` while another process (or thread)
    /// builds this index.
    pub fn try_lock(&self) -> Option<BuildLock> {
        let lock = self.db.with_file_name(LOCK_FILE);
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock)
            .ok()?;
        file.try_lock().ok()?;
        Some(BuildLock { _file: file })
    }

    /// Compares the index with `files` (every session file of the scope `dirs`, or of the
    /// whole index when `dirs` is `None`) and says what a sync would read or drop.
    ///
    /// Errors: [`Error::Index`].
    pub fn plan(&self, files: &[PathBuf], dirs: Option<&[PathBuf]>) -> Result<Plan> {
        let known = self.known(dirs).map_err(|e| self.fail(e))?;
        Ok(plan_against(files, known, true))
    }

    /// [`SearchIndex::plan`] for the files `list` returns, listed on another thread while
    /// this one reads what the index holds (a search's freshness check does both each time).
    /// Returns the files too.
    ///
    /// Errors: [`Error::Index`].
    pub fn plan_listed(
        &self,
        list: impl FnOnce() -> Vec<PathBuf> + Send,
        dirs: Option<&[PathBuf]>,
    ) -> Result<(Vec<PathBuf>, Plan)> {
        let (files, known) = std::thread::scope(|scope| {
            let files = scope.spawn(list);
            let known = self.known(dirs);
            (files.join(), known)
        });
        let files = files.unwrap_or_default();
        let known = known.map_err(|e| self.fail(e))?;
        let plan = plan_against(&files, known, true);
        Ok((files, plan))
    }

    /// [`SearchIndex::plan`] for just these files (what the writer's hook needs): files the
    /// index has elsewhere are left alone.
    ///
    /// Errors: [`Error::Index`].
    pub fn plan_files(&self, files: &[PathBuf]) -> Result<Plan> {
        let mut known = Vec::new();
        let run = |known: &mut Vec<(String, Known)>| -> rusqlite::Result<()> {
            let mut stmt = self
                .conn
                .prepare_cached(&format!("{KNOWN_SQL} WHERE path = ?1"))?;
            for f in files {
                if let Some(k) = stmt
                    .query_row([f.to_string_lossy()], read_known)
                    .optional()?
                {
                    known.push(k);
                }
            }
            Ok(())
        };
        run(&mut known).map_err(|e| self.fail(e))?;
        Ok(plan_against(files, known, false))
    }

    /// How much of `files` (the scope `dirs`) the index covers now.
    ///
    /// Errors: [`Error::Index`].
    pub fn coverage(&self, files: &[PathBuf], dirs: Option<&[PathBuf]>) -> Result<Coverage> {
        let plan = self.plan(files, dirs)?;
        Ok(Coverage {
            indexed: plan.total - plan.stale(),
            total: plan.total,
        })
    }

    fn known(&self, dirs: Option<&[PathBuf]>) -> rusqlite::Result<Vec<(String, Known)>> {
        let sql = KNOWN_SQL;
        let read = read_known;
        match dirs {
            None => {
                let mut stmt = self.conn.prepare(sql)?;
                stmt.query_map([], read)?.collect()
            }
            Some(dirs) => {
                let mut stmt = self.conn.prepare(&format!("{sql} WHERE dir = ?1"))?;
                let mut out = Vec::new();
                for d in dirs {
                    let rows = stmt.query_map([d.to_string_lossy()], read)?;
                    for r in rows {
                        out.push(r?);
                    }
                }
                Ok(out)
            }
        }
    }

    /// Carries out `plan`: reads the stale files (newest first, on two threads) and writes
    /// their rows, committing every few files so searches see the index grow and a kill
    /// loses at most the files in flight. `progress(done, total)` counts files of the scope.
    /// Hold a [`BuildLock`] while calling this.
    ///
    /// Errors: [`Error::Index`] (a damaged database: call [`SearchIndex::rebuild`]).
    pub fn apply(&mut self, plan: Plan, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<()> {
        let Plan {
            mut work,
            gone,
            total,
        } = plan;
        let base = total - work.len();
        progress(base, total);
        if !gone.is_empty() {
            let tx = self.conn.transaction().map_err(|e| db_error(&self.db, e))?;
            for id in gone {
                delete_file(&tx, id).map_err(|e| db_error(&self.db, e))?;
            }
            tx.commit().map_err(|e| db_error(&self.db, e))?;
        }
        // Newest first: a search during the build finds recent sessions soonest.
        let mtime = |w: &Work| Stamp::of(&w.path).map_or(0, |s| s.mtime_ns);
        work.sort_by_cached_key(|w| std::cmp::Reverse(mtime(w)));
        let next = AtomicUsize::new(0);
        let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Option<Read>)>(2);
        let work_ref = &work;
        let failed: Mutex<Option<Error>> = Mutex::new(None);
        std::thread::scope(|scope| {
            for _ in 0..2 {
                let tx = tx.clone();
                let next = &next;
                scope.spawn(move || {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(w) = work_ref.get(i) else { break };
                        if tx.send((i, read_work(w))).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(tx);
            let mut done = base;
            let mut seen_words = HashSet::new();
            let mut batch_started = Instant::now();
            let mut pending = 0usize;
            let mut txn = match self.conn.unchecked_transaction() {
                Ok(t) => t,
                Err(e) => {
                    *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(db_error(&self.db, e));
                    return;
                }
            };
            for (i, read) in rx {
                let w = &work_ref[i];
                let result = match read {
                    Some(read) => write_file(&txn, w, read, &mut seen_words),
                    None => match &w.known {
                        Some(k) => delete_file(&txn, k.id),
                        None => Ok(()),
                    },
                };
                if let Err(e) = result {
                    *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(db_error(&self.db, e));
                    // Stop the readers: dropping rx happens when this loop ends.
                    next.store(usize::MAX / 2, Ordering::Relaxed);
                    return;
                }
                done += 1;
                pending += 1;
                // Every 1,024 files or 2 s: what a search during the build sees, and where a
                // killed build resumes.
                if pending >= 1024 || batch_started.elapsed() > Duration::from_millis(2000) {
                    let commit = txn
                        .commit()
                        .and_then(|()| self.conn.unchecked_transaction());
                    match commit {
                        Ok(t) => txn = t,
                        Err(e) => {
                            *failed.lock().unwrap_or_else(|p| p.into_inner()) =
                                Some(db_error(&self.db, e));
                            next.store(usize::MAX / 2, Ordering::Relaxed);
                            return;
                        }
                    }
                    pending = 0;
                    batch_started = Instant::now();
                }
                progress(done, total);
            }
            if let Err(e) = txn.commit() {
                *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(db_error(&self.db, e));
            }
        });
        match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Brings the index up to date for `files` (scope `dirs`), as [`SearchIndex::plan`] and
    /// [`SearchIndex::apply`] do, rebuilding a damaged database once.
    ///
    /// Errors: [`Error::Index`].
    pub fn sync(
        mut self,
        files: &[PathBuf],
        dirs: Option<&[PathBuf]>,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<SearchIndex> {
        let run = |index: &mut SearchIndex| -> Result<()> {
            let plan = index.plan(files, dirs)?;
            if plan.is_current() {
                progress(plan.total, plan.total);
                return Ok(());
            }
            index.apply(plan, progress)
        };
        match run(&mut self) {
            Ok(()) => Ok(self),
            Err(Error::Index { ref cause, .. }) if is_broken(cause) => {
                let mut fresh = self.rebuild()?;
                run(&mut fresh)?;
                Ok(fresh)
            }
            Err(e) => Err(e),
        }
    }
}

fn plan_against(files: &[PathBuf], known: Vec<(String, Known)>, drop_unseen: bool) -> Plan {
    let mut seen = vec![false; known.len()];
    let by_path: HashMap<&str, usize> = known
        .iter()
        .enumerate()
        .map(|(i, (p, _))| (p.as_str(), i))
        .collect();
    let mut plan = Plan {
        total: files.len(),
        ..Plan::default()
    };
    let stats = crate::list::stats_in_dirs(files);
    for (path, stat) in files.iter().zip(stats) {
        let key = path.to_string_lossy();
        let hit = by_path.get(key.as_ref()).copied();
        if let Some(i) = hit {
            seen[i] = true;
        }
        let Some(stamp) = stat.as_ref().and_then(Stamp::of_stat) else {
            // Vanished or not a regular file: drop what the index had.
            if let Some(i) = hit {
                plan.gone.push(known[i].1.id);
            }
            continue;
        };
        let known = hit.map(|i| known[i].1.clone());
        let from = match &known {
            Some(k) if k.stamp == stamp => continue,
            // Appended to: same file, grown, the last read ended on a line end. A file that
            // changed without growing was rewritten: read again whole.
            Some(k) if k.stamp.ino == stamp.ino && stamp.size > k.indexed && !k.torn => k.indexed,
            _ => 0,
        };
        plan.work.push(Work {
            path: path.clone(),
            known,
            from,
        });
    }
    for (i, (_, k)) in known.iter().enumerate() {
        if drop_unseen && !seen[i] {
            plan.gone.push(k.id);
        }
    }
    plan
}

/// Held while building; dropping it lets another builder in.
pub struct BuildLock {
    _file: File,
}

/// The folder whose index holds the sessions of `folder`: the sessions root for any folder
/// under `<agent_dir>/sessions` (one index serves every project and the all-projects view),
/// else `folder` itself (a `--session-dir`).
pub fn index_folder(agent_dir: &Path, folder: &Path) -> PathBuf {
    let root = crate::dirs::sessions_root(agent_dir);
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    if real(folder).starts_with(real(&root)) {
        root
    } else {
        folder.to_owned()
    }
}

/// Bytes at each end of what was read that an append must leave as they were.
const CHECK_BYTES: u64 = 4096;

/// CRC-32 of the first and the last [`CHECK_BYTES`] of the first `len` bytes of `file`: an
/// append keeps them; a rewrite that only looks like one (same inode, grown) almost never
/// does. `None`: the file is shorter than `len` now.
fn ends_checksum(file: &File, len: u64) -> Option<u32> {
    use std::os::unix::fs::FileExt;
    let head = len.min(CHECK_BYTES);
    let tail_from = len.saturating_sub(CHECK_BYTES).max(head);
    let mut buf = vec![0u8; usize::try_from(head + (len - tail_from)).ok()?];
    let (first, last) = buf.split_at_mut(usize::try_from(head).ok()?);
    file.read_exact_at(first, 0).ok()?;
    file.read_exact_at(last, tail_from).ok()?;
    Some(crc32fast::hash(&buf))
}

/// Reads what `w` asks for.
fn read_work(w: &Work) -> Option<Read> {
    // Stamped before reading: a line appended while reading is read again next time, never
    // missed.
    let stamp = Stamp::of(&w.path)?;
    let mut file = File::open(&w.path).ok()?;
    let mut from = w.from;
    if from > 0 {
        // Only an append keeps the bytes before `from`: the line end there must still be one,
        // and both ends of them what they were.
        let mut b = [0u8; 1];
        if std::os::unix::fs::FileExt::read_exact_at(&file, &mut b, from - 1).is_err()
            || b[0] != b'\n'
            || ends_checksum(&file, from) != w.known.as_ref().map(|k| k.checked)
        {
            from = 0;
        }
    }
    let rows = read_rows(&mut file, from).ok()?;
    let checked = ends_checksum(&file, rows.indexed_to).unwrap_or(0);
    // Read from the start, the rows follow no tail: their documents can be made here, off
    // the writer's thread. An append's follow the tail the database holds.
    let documents = (from == 0).then(|| documents("", &rows.rows, MAX_ROWS));
    Some(Read {
        stamp,
        from,
        rows,
        checked,
        documents,
    })
}

/// What [`read_work`] read of a file.
struct Read {
    /// The file's stamp, taken before reading.
    stamp: Stamp,
    /// Where the read started: 0, or the end of what is indexed (an append).
    from: u64,
    rows: FileRows,
    /// The [`ends_checksum`] of what was read.
    checked: u32,
    /// The rows' documents, when `from` is 0.
    documents: Option<Documents>,
}

fn delete_file(tx: &Connection, id: i64) -> rusqlite::Result<()> {
    delete_rows(tx, id)?;
    tx.execute("DELETE FROM files WHERE id = ?1", params![id])?;
    Ok(())
}

fn delete_rows(tx: &Connection, id: i64) -> rusqlite::Result<()> {
    let (lo, hi) = (id << SEQ_BITS, (id + 1) << SEQ_BITS);
    delete_indexed(tx, "entries", &["texts", "pairs"], lo, hi)?;
    delete_indexed(tx, "doc_ids", &["docs"], lo, hi)
}

/// Deletes the rows with ids in `lo..hi` from the contentless FTS5 tables `fts` (which can
/// only delete by rowid, so the ids come from the table `ids` that lists them), then from
/// `ids`. `ids` and `fts` are this module's table names.
fn delete_indexed(
    tx: &Connection,
    ids: &str,
    fts: &[&str],
    lo: i64,
    hi: i64,
) -> rusqlite::Result<()> {
    let rowids: Vec<i64> = tx
        .prepare_cached(&format!(
            "SELECT rowid FROM {ids} WHERE rowid >= ?1 AND rowid < ?2"
        ))?
        .query_map(params![lo, hi], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for table in fts {
        let mut del = tx.prepare_cached(&format!("DELETE FROM {table} WHERE rowid = ?1"))?;
        for &r in &rowids {
            del.execute(params![r])?;
        }
    }
    tx.execute(
        &format!("DELETE FROM {ids} WHERE rowid >= ?1 AND rowid < ?2"),
        params![lo, hi],
    )?;
    Ok(())
}

/// Words already written to the `words` table in this run of [`SearchIndex::apply`]; cleared
/// when it holds this many, to bound memory (the table ignores repeats anyway).
const MAX_SEEN_WORDS: usize = 1 << 20;

fn write_file(
    tx: &Connection,
    w: &Work,
    read: Read,
    seen_words: &mut HashSet<String>,
) -> rusqlite::Result<()> {
    let Read {
        stamp,
        from,
        rows,
        checked,
        documents: made,
    } = read;
    let path = w.path.to_string_lossy();
    let dir = w
        .path
        .parent()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let full = from == 0;
    let (id, mut seq) = match &w.known {
        Some(k) if !full => (k.id, k.next_seq),
        Some(k) => {
            delete_rows(tx, k.id)?;
            (k.id, 0)
        }
        None => {
            tx.execute(
                "INSERT INTO files(path, dir, size, mtime_ns, ino, indexed, torn, next_seq)
                 VALUES (?1, ?2, 0, 0, 0, 0, 0, 0)",
                params![path, dir],
            )?;
            (tx.last_insert_rowid(), 0)
        }
    };
    let made = match made {
        Some(made) => made,
        None => {
            let tail: String = if seq == 0 {
                String::new()
            } else {
                tx.query_row("SELECT tail FROM files WHERE id = ?1", params![id], |r| {
                    r.get::<_, Option<String>>(0)
                })?
                .unwrap_or_default()
            };
            let room = usize::try_from(MAX_ROWS as i64 - seq).unwrap_or(0);
            documents(&tail, &rows.rows, room)
        }
    };
    {
        let mut text = tx.prepare_cached("INSERT INTO texts(rowid, text) VALUES (?1, ?2)")?;
        // Every row, even without a pair: a row is deleted from both tables alike.
        let mut pair = tx.prepare_cached("INSERT INTO pairs(rowid, text) VALUES (?1, ?2)")?;
        let mut entry = tx.prepare_cached(
            "INSERT INTO entries(rowid, entry_id, offset, len) VALUES (?1, ?2, ?3, ?4)",
        )?;
        let mut word = tx.prepare_cached("INSERT OR IGNORE INTO words(word) VALUES (?1)")?;
        let first_seq = seq;
        // `made` holds no more rows than the file has room for.
        for (row, docs) in rows.rows.iter().zip(&made.rows) {
            let rowid = (id << SEQ_BITS) | seq;
            for w in docs.text.split(' ').filter(|w| is_word(w)) {
                if !seen_words.contains(w) {
                    if seen_words.len() >= MAX_SEEN_WORDS {
                        seen_words.clear();
                    }
                    word.execute(params![w])?;
                    seen_words.insert(w.to_owned());
                }
            }
            text.execute(params![rowid, docs.text])?;
            pair.execute(params![rowid, docs.pairs])?;
            entry.execute(params![rowid, row.entry_id, row.offset as i64, row.len])?;
            seq += 1;
        }
        // The messages written now, as one document of the `docs` table: which sessions
        // hold a word is read there, from one entry per session instead of one per message.
        if seq > first_seq {
            let rowid = (id << SEQ_BITS) | first_seq;
            tx.prepare_cached("INSERT INTO docs(rowid, text) VALUES (?1, ?2)")?
                .execute(params![rowid, made.doc])?;
            tx.prepare_cached("INSERT INTO doc_ids(rowid) VALUES (?1)")?
                .execute(params![rowid])?;
        }
    }
    let tail = made.tail;
    // A torn tail is indexed as it is now and read again from the start once it grows.
    tx.execute(
        "UPDATE files SET dir = ?2, size = ?3, mtime_ns = ?4, ino = ?5, indexed = ?6, torn = ?7,
             next_seq = ?8,
             session_id = CASE WHEN ?12 THEN ?9 ELSE COALESCE(?9, session_id) END,
             cwd = CASE WHEN ?12 THEN ?10 ELSE COALESCE(?10, cwd) END,
             name = CASE WHEN ?11 IS NULL THEN name ELSE NULLIF(?11, '') END,
             header_ms = CASE WHEN ?12 THEN ?13 ELSE COALESCE(?13, header_ms) END,
             activity_ms = CASE WHEN ?12 OR activity_ms IS NULL THEN ?14
                                ELSE max(activity_ms, COALESCE(?14, activity_ms)) END,
             tail = ?15, ctime_ns = ?16, checked = ?17
             WHERE id = ?1",
        params![
            id,
            dir,
            stamp.size as i64,
            stamp.mtime_ns,
            stamp.ino as i64,
            rows.indexed_to as i64,
            rows.torn,
            seq,
            rows.session_id,
            rows.cwd,
            // A file read from its start has no name unless one was read.
            rows.name.or_else(|| full.then(String::new)),
            full,
            rows.header_ms,
            rows.activity_ms,
            tail,
            stamp.ctime_ns,
            i64::from(checked)
        ],
    )?;
    Ok(())
}
