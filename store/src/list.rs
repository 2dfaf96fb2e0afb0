//! Listing sessions (`SessionManager.list`/`listAll`) and resolving `--session`/`--fork`
//! arguments (spec: lifecycle.md §4, §5.3, divergences.md "Reading").

use std::fs;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Map, Value};

use crate::entry::decode_json;
use crate::env::iso_from_ms;
use crate::error::{Error, Result};
use crate::header::Header;
use crate::reader::{LineEvent, read_lines};
use crate::scan;
use pith_events::js::{js_date_value, js_trim};

pub(crate) mod message_text;
use message_text::{ContentView, MessageView};

/// What the session picker shows for one file (pi's `SessionInfo`, lifecycle.md §4.1).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    /// The file.
    pub path: PathBuf,
    /// `header.id`.
    pub id: String,
    /// `header.cwd` when it is a string, else `""`.
    pub cwd: String,
    /// The latest `session_info` name in file order (trimmed; empty ⇒ none).
    pub name: Option<String>,
    /// `header.parentSession` as written (any JSON), when present.
    pub parent_session_path: Option<Value>,
    /// `new Date(header.timestamp)` in ms; NaN for an invalid date.
    pub created_ms: f64,
    /// Last activity in ms: the newest user/assistant message time, else the header time,
    /// else the file's mtime.
    pub modified_ms: f64,
    /// Records of type `message` (every role, `system` included, every branch; lifecycle.md
    /// §4.1).
    pub message_count: usize,
    /// Text of the first user message with text, or `"(no messages)"`.
    pub first_message: String,
    /// Texts of all user/assistant messages with text, in file order, joined by `" "`.
    pub all_messages_text: String,
}

impl SessionInfo {
    /// pi's JSON shape, with `created`/`modified` as `toISOString()` strings (`null` when
    /// invalid) and `name`/`parentSessionPath` omitted when absent.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "path".into(),
            Value::String(self.path.to_string_lossy().into_owned()),
        );
        m.insert("id".into(), Value::String(self.id.clone()));
        m.insert("cwd".into(), Value::String(self.cwd.clone()));
        if let Some(name) = &self.name {
            m.insert("name".into(), Value::String(name.clone()));
        }
        if let Some(p) = &self.parent_session_path {
            m.insert("parentSessionPath".into(), p.clone());
        }
        m.insert("created".into(), iso_value(self.created_ms));
        m.insert("modified".into(), iso_value(self.modified_ms));
        m.insert("messageCount".into(), Value::from(self.message_count));
        m.insert(
            "firstMessage".into(),
            Value::String(self.first_message.clone()),
        );
        m.insert(
            "allMessagesText".into(),
            Value::String(self.all_messages_text.clone()),
        );
        Value::Object(m)
    }
}

fn iso_value(ms: f64) -> Value {
    if ms.is_nan() {
        return Value::Null;
    }
    iso_from_ms(ms as i64).map_or(Value::Null, Value::String)
}

/// Why a file was left out of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why (not a session file, unreadable …).
    pub reason: String,
}

/// A listing: sessions newest first, plus every `*.jsonl` file that was left out and why
/// (pith never drops a file silently; spec: divergences.md "Reading").
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Sessions by `modified`, newest first; ties by file name, descending.
    pub sessions: Vec<SessionInfo>,
    /// Files that are not sessions or could not be read.
    pub skipped: Vec<Skipped>,
    /// Sessions folders that exist but could not be read (permissions, not a directory): an
    /// empty listing then means "unknown", never "no sessions".
    pub unreadable_folders: Vec<Skipped>,
}

/// `dir` when it exists but cannot be listed; a missing folder is simply empty.
pub(crate) fn folder_problem(dir: &Path) -> Option<Skipped> {
    match fs::read_dir(dir) {
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(Skipped {
            path: dir.to_owned(),
            reason: format!("cannot read the sessions folder: {e}"),
        }),
    }
}

/// [`folder_problem`] of a sessions root and of each project folder in it.
pub(crate) fn folder_problems_all(sessions_root: &Path) -> Vec<Skipped> {
    std::iter::once(sessions_root.to_owned())
        .chain(session_dirs(sessions_root))
        .filter_map(|d| folder_problem(&d))
        .collect()
}

/// The `SessionInfo` of one file, read in one streaming pass.
///
/// Errors: [`Error::Io`]; [`Error::NotASession`] when the first JSON value is not a header
/// with a string id (such files are left out of listings).
pub fn session_info(path: &Path) -> Result<SessionInfo> {
    read_info(path, true)
}

/// [`session_info`] without `allMessagesText` (left empty): what a listing table needs, at a
/// fraction of the memory.
///
/// Errors: as [`session_info`].
pub fn session_info_without_texts(path: &Path) -> Result<SessionInfo> {
    read_info(path, false)
}

fn read_info(path: &Path, collect_texts: bool) -> Result<SessionInfo> {
    // A FIFO named *.jsonl would block the listing forever; devices are not sessions.
    if !fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .is_file()
    {
        return Err(Error::NotAFile(path.to_owned()));
    }
    let file = fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mtime_ms = file
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(f64::NAN, |d| d.as_millis() as f64);
    let mut acc = InfoBuilder {
        collect_texts,
        ..InfoBuilder::default()
    };
    let summary = read_lines(file, |event| acc.line(event)).map_err(|e| Error::io(path, e))?;
    let _ = summary;
    if let Some((line, reason)) = acc.refusal {
        return Err(Error::NotASession {
            path: path.to_owned(),
            line,
            reason,
        });
    }
    let Some(header) = acc.header else {
        let (line, reason) = acc
            .first_invalid
            .unwrap_or((1, "the file holds no session header".into()));
        return Err(Error::NotASession {
            path: path.to_owned(),
            line,
            reason,
        });
    };
    let header_time = match header.timestamp() {
        Some(Value::String(s)) => pith_events::js::date_parse(s),
        _ => f64::NAN,
    };
    let modified_ms = modified_ms(acc.last_activity, header_time, mtime_ms);
    let created_ms = js_date_value(
        header
            .timestamp()
            .and_then(|t| pith_events::js::to_js_json(t).ok())
            .as_deref(),
    );
    Ok(SessionInfo {
        path: path.to_owned(),
        id: header.id().to_owned(),
        cwd: header.cwd().unwrap_or("").to_owned(),
        name: acc.name,
        parent_session_path: acc.parent_session,
        created_ms,
        modified_ms,
        message_count: acc.message_count,
        first_message: acc.first_message.unwrap_or_else(|| "(no messages)".into()),
        all_messages_text: acc.texts.join(" "),
    })
}

#[derive(Default)]
struct InfoBuilder {
    header: Option<Header>,
    parent_session: Option<Value>,
    refusal: Option<(usize, String)>,
    first_invalid: Option<(usize, String)>,
    name: Option<String>,
    message_count: usize,
    first_message: Option<String>,
    texts: Vec<String>,
    /// Whether to keep every message text (`allMessagesText`); listings for people do not.
    collect_texts: bool,
    last_activity: Option<f64>,
}

impl InfoBuilder {
    fn line(&mut self, event: LineEvent<'_>) -> ControlFlow<()> {
        let (text, scanned) = match event {
            LineEvent::Invalid { line, reason, .. } => {
                self.first_invalid.get_or_insert((line, reason));
                return ControlFlow::Continue(());
            }
            LineEvent::Parsed { line, scanned, .. } if !scanned.is_object => {
                if self.header.is_none() {
                    self.refusal = Some((line, "the first JSON line is not an object".into()));
                    return ControlFlow::Break(());
                }
                return ControlFlow::Continue(());
            }
            LineEvent::Parsed {
                line,
                text,
                scanned,
                ..
            } => {
                if self.header.is_none() {
                    match Header::parse(scanned.value.of(text)) {
                        Ok(h) => {
                            let fields: Map<String, Value> =
                                decode_json(scanned.value.of(text)).unwrap_or_default();
                            self.parent_session = fields.get("parentSession").cloned();
                            self.header = Some(h);
                            return ControlFlow::Continue(());
                        }
                        Err(bad) => {
                            self.refusal = Some((line, bad.to_string()));
                            return ControlFlow::Break(());
                        }
                    }
                }
                (text, scanned)
            }
        };
        let m = &scanned.members;
        let kind = m.kind.and_then(|s| scan::string_value(s.of(text)));
        match kind.as_deref() {
            Some("session_info") => self.session_info(scanned.value.of(text)),
            Some("message") => self.message(text, m),
            _ => {}
        }
        ControlFlow::Continue(())
    }

    /// `name?.trim() || undefined`, latest wins; a non-string name is ignored (pi throws and
    /// drops the whole file from the list).
    fn session_info(&mut self, raw: &str) {
        let Ok(fields) = decode_json::<Map<String, Value>>(raw) else {
            return;
        };
        if let Some(name) = session_info_name(&fields) {
            self.name = name;
        }
    }

    fn message(&mut self, text: &str, m: &scan::Members) {
        self.message_count += 1;
        let ts = m.timestamp;
        let role = m.role.and_then(|r| scan::string_value(r.of(text)));
        let is_user = role.as_deref() == Some("user");
        if !is_user && role.as_deref() != Some("assistant") {
            return;
        }
        let Some(message) = m.message else { return };
        // Text matters only for the first user message and allMessagesText; otherwise the
        // spans the scanner already found say all a table needs (presence of `content`, a
        // numeric `timestamp`) without reading the message a second time.
        let wants_text = self.collect_texts || (is_user && self.first_message.is_none());
        let view = if wants_text {
            MessageView::<true>::read(message.of(text)).map(|v| (v.content, v.timestamp))
        } else {
            let timestamp = m
                .message_timestamp
                .map(|s| s.of(text))
                .filter(|t| t.starts_with(|c: char| c == '-' || c.is_ascii_digit()))
                .and_then(|t| t.parse::<f64>().ok());
            Some((m.message_content.map(|_| ContentView::Other), timestamp))
        };
        let Some((content, timestamp)) = view else {
            return;
        };
        let Some(content) = content else { return };
        let entry_ts = ts.and_then(|s| scan::string_value(s.of(text)));
        if let Some(t) = activity_time(timestamp, entry_ts.as_deref()) {
            self.last_activity = Some(self.last_activity.unwrap_or(0.0).max(t));
        }
        let text = content.text();
        if text.is_empty() {
            return;
        }
        if is_user && self.first_message.is_none() {
            self.first_message = Some(text.clone());
        }
        if self.collect_texts {
            self.texts.push(text);
        }
    }
}

/// Most files read at once; bounded so a low open-file limit never loses sessions.
const LIST_THREADS: usize = 4;

/// Lists every `*.jsonl` directly in `dir`, whatever cwd its sessions belong to
/// (`SessionManager.listAll(dir)`, spec: lifecycle.md §4; pi 0.73.1's `list(dir, dir)`). A
/// missing directory lists nothing.
///
/// Errors: none; unreadable files and non-sessions are reported in [`Listing::skipped`].
pub fn list(dir: &Path) -> Listing {
    let files = jsonl_files(dir);
    let mut listing = finish(read_all(files));
    listing.unreadable_folders.extend(folder_problem(dir));
    listing
}

/// `SessionManager.list(cwd, dir)` (pi ≥ 0.77, spec: lifecycle.md §4): the sessions of `dir`;
/// when `dir` is a custom directory (`custom`: not `cwd`'s default one under the agent
/// directory), only those whose header `cwd` resolves to `cwd`.
pub fn list_for_cwd(cwd: &str, dir: &Path, custom: bool) -> Listing {
    let mut listing = list(dir);
    if custom {
        listing
            .sessions
            .retain(|s| session_cwd_matches(&s.cwd, cwd));
    }
    listing
}

/// pi's `sessionCwdMatches`: a non-empty session cwd that resolves (absolute, `.` and `..`
/// folded, as `path.resolve` does) to the same path as `cwd`.
pub fn session_cwd_matches(session_cwd: &str, cwd: &str) -> bool {
    !session_cwd.is_empty() && resolve_path(session_cwd) == resolve_path(cwd)
}

/// `path.resolve(p)`: absolute against the process's directory, `.`/`..` folded lexically,
/// no trailing separator.
fn resolve_path(p: &str) -> PathBuf {
    let absolute = std::path::absolute(p).unwrap_or_else(|_| PathBuf::from(p));
    let mut out = PathBuf::new();
    for c in absolute.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Lists every session in every sub-directory of `sessions_root` (`SessionManager.listAll()`).
pub fn list_all(sessions_root: &Path) -> Listing {
    let mut listing = finish(read_all(all_session_files(sessions_root)));
    listing.unreadable_folders = folder_problems_all(sessions_root);
    listing
}

/// The `*.jsonl` files of every project directory under a sessions root, in the order pi's
/// `listAll()` reads them: newest file mtime first, equal ones by file name descending, so
/// that sessions with equal `modified` keep that order (spec: lifecycle.md §4).
pub fn all_session_files(sessions_root: &Path) -> Vec<PathBuf> {
    all_session_files_stamped(sessions_root)
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

/// [`all_session_files`] with each file's [`Stamp`], read once for the order and the
/// listing index alike.
pub(crate) fn all_session_files_stamped(sessions_root: &Path) -> Vec<(PathBuf, Option<Stamp>)> {
    // Folder by folder on two threads: reading the folders one after the other was a third of
    // an indexed listing of 10,000 sessions, and the stats another third.
    let dirs = session_dirs(sessions_root);
    let per_folder = map_in_order(&dirs, 2, |dir| stamped_files(dir));
    let mut files: Vec<(f64, PathBuf, Option<Stamp>)> = per_folder
        .into_iter()
        .zip(&dirs)
        // Reading a folder cannot panic; if a thread did, the folder is read again here.
        .flat_map(|(listed, dir)| listed.unwrap_or_else(|| stamped_files(dir)))
        .map(|(p, stamp)| {
            // pi compares the mtime in seconds as a float; a file that cannot be read sorts last.
            let mtime = stamp.map_or(f64::NEG_INFINITY, |(_, ns)| {
                let secs = u64::try_from(ns / 1_000_000_000).unwrap_or(u64::MAX);
                let nanos = u32::try_from(ns % 1_000_000_000).unwrap_or(0);
                std::time::Duration::new(secs, nanos).as_secs_f64()
            });
            (mtime, p, stamp)
        })
        .collect();
    files.sort_by(|(ma, a, _), (mb, b, _)| {
        mb.total_cmp(ma)
            .then_with(|| b.file_name().cmp(&a.file_name()))
    });
    files.into_iter().map(|(_, p, s)| (p, s)).collect()
}

/// [`jsonl_files`] of `dir`, each with its [`Stamp`].
pub(crate) fn stamped_files(dir: &Path) -> Vec<(PathBuf, Option<Stamp>)> {
    let files = jsonl_files(dir);
    let stamps = stamps(&files);
    files.into_iter().zip(stamps).collect()
}

/// (size in bytes, mtime in ns) of a file: what the listing index keys on besides the path.
pub(crate) type Stamp = (u64, u128);

/// The [`Stamp`] of a file (symbolic links followed); `None` when it cannot be read or its
/// mtime is before 1970.
pub(crate) fn stamp(path: &Path) -> Option<Stamp> {
    stamp_of(&rustix::fs::stat(path).ok()?)
}

/// [`stamp`] of each of `files` (from [`stats_in_dirs`]).
pub(crate) fn stamps(files: &[PathBuf]) -> Vec<Option<Stamp>> {
    stats_in_dirs(files)
        .into_iter()
        .map(|st| stamp_of(&st?))
        .collect()
}

/// The [`Stamp`] in a `stat`; `None` for an mtime before 1970.
fn stamp_of(st: &rustix::fs::Stat) -> Option<Stamp> {
    let secs = u128::try_from(st.st_mtime).ok()?;
    let nanos = u128::from(st.st_mtime_nsec);
    Some((
        u64::try_from(st.st_size).ok()?,
        secs * 1_000_000_000 + nanos,
    ))
}

/// [`stats_of`] of `files`, on two threads when there are many: 10,000 stats are most of an
/// indexed listing and of a search's freshness check.
pub(crate) fn stats_in_dirs(files: &[PathBuf]) -> Vec<Option<rustix::fs::Stat>> {
    const SPLIT_FROM: usize = 512;
    if files.len() < SPLIT_FROM {
        return stats_of(files);
    }
    let (a, b) = files.split_at(files.len() / 2);
    std::thread::scope(|scope| {
        let second = scope.spawn(|| stats_of(b));
        let mut out = stats_of(a);
        // stat cannot panic; if the thread did, asking again here is the fallback.
        out.extend(second.join().unwrap_or_else(|_| stats_of(b)));
        out
    })
}

/// `stat` of each of `files` (symbolic links followed, as `std::fs::metadata` does), each
/// looked up by name in its folder, which stays open while the files that follow are in it
/// too: session files come folder by folder, and a whole-path lookup per file cost more than
/// the stat. `None`: cannot be read.
fn stats_of(files: &[PathBuf]) -> Vec<Option<rustix::fs::Stat>> {
    use rustix::fs::{AtFlags, CWD, Mode, OFlags, openat, stat, statat};
    let mut open: Option<(&Path, Option<std::os::fd::OwnedFd>)> = None;
    files
        .iter()
        .map(|f| {
            let (Some(dir), Some(name)) = (f.parent(), f.file_name()) else {
                return stat(f).ok();
            };
            if open.as_ref().is_none_or(|(d, _)| *d != dir) {
                let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
                open = Some((dir, openat(CWD, dir, flags, Mode::empty()).ok()));
            }
            match &open {
                Some((_, Some(fd))) => statat(fd, name, AtFlags::empty()).ok(),
                _ => stat(f).ok(),
            }
        })
        .collect()
}

/// The `*.jsonl` files of every project directory under a sessions root, in no particular
/// order and without reading their metadata (what a search index compares itself with).
pub fn all_session_paths(sessions_root: &Path) -> Vec<PathBuf> {
    session_dirs(sessions_root)
        .iter()
        .flat_map(|d| jsonl_files(d))
        .collect()
}

/// The project directories under a sessions root (symbolic links included, as pi's
/// `listAll()` takes them), in byte order of their names.
pub(crate) fn session_dirs(sessions_root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = match fs::read_dir(sessions_root) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_type()
                    .is_ok_and(|t| t.is_dir() || (t.is_symlink() && e.path().is_dir()))
            })
            .map(|e| e.path())
            .collect(),
        Err(_) => Vec::new(),
    };
    dirs.sort();
    dirs
}

/// `*.jsonl` names directly in `dir`, by file name **descending**: pi sorts the names with
/// `localeCompare` before its stable sort by `modified`, so ties come out in that order
/// (pi > 0.73.1; for the names pi writes, `localeCompare` is byte order, spec README).
pub fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut names: Vec<_> = match fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .filter(|n| n.to_string_lossy().ends_with(".jsonl"))
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort_by(|a, b| b.cmp(a));
    names.into_iter().map(|n| dir.join(n)).collect()
}

/// Reads the full [`SessionInfo`] (with `allMessagesText`) of each of `paths` and hands them
/// to `f` in order, with their index, until it breaks. Two threads read ahead of `f` by at
/// most [`STREAM_AHEAD`] files, so memory holds a few sessions' texts, never all of them
/// (`pith session list --json`).
pub fn for_each_info(
    paths: &[PathBuf],
    f: &mut dyn FnMut(usize, Result<SessionInfo>) -> ControlFlow<()>,
) {
    let next = AtomicUsize::new(0);
    let consumed = (Mutex::new(0usize), std::sync::Condvar::new());
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<SessionInfo>)>();
    std::thread::scope(|scope| {
        for _ in 0..2.min(paths.len()) {
            let tx = tx.clone();
            let (next, consumed, stop) = (&next, &consumed, &stop);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = paths.get(i) else { break };
                    // Wait until the consumer is close enough.
                    let (lock, cv) = consumed;
                    let mut done = lock.lock().unwrap_or_else(|p| p.into_inner());
                    while i >= *done + STREAM_AHEAD && !stop.load(Ordering::Relaxed) {
                        done = cv.wait(done).unwrap_or_else(|p| p.into_inner());
                    }
                    drop(done);
                    if stop.load(Ordering::Relaxed) || tx.send((i, session_info(path))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut waiting: std::collections::BTreeMap<usize, Result<SessionInfo>> =
            std::collections::BTreeMap::new();
        let mut want = 0;
        'recv: for (i, info) in rx.iter() {
            waiting.insert(i, info);
            while let Some(info) = waiting.remove(&want) {
                let flow = f(want, info);
                want += 1;
                let (lock, cv) = &consumed;
                *lock.lock().unwrap_or_else(|p| p.into_inner()) = want;
                cv.notify_all();
                if flow.is_break() {
                    stop.store(true, Ordering::Relaxed);
                    break 'recv;
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        consumed.1.notify_all();
    });
}

/// How many files [`for_each_info`] reads ahead of its consumer. With 2, a reader that
/// finished a small file waited for a large one ahead of it to be printed, and the two
/// threads kept 1.3 cores busy (agent-10k `--json`: 4.9 s); with 8, 3.2 s, and memory still
/// holds at most that many sessions' texts (23 MiB peak there either way).
pub const STREAM_AHEAD: usize = 8;

fn read_all(files: Vec<PathBuf>) -> Vec<Result<SessionInfo>> {
    read_all_with(files, session_info, &|_| {})
}

/// Reads `files` with `read` on a bounded number of threads, results in `files` order.
/// `read_one` is called (from the reading threads) after each file, for progress bars.
pub(crate) fn read_all_with(
    files: Vec<PathBuf>,
    read: fn(&Path) -> Result<SessionInfo>,
    read_one: &(dyn Fn(&Path) + Sync),
) -> Vec<Result<SessionInfo>> {
    map_in_order(&files, LIST_THREADS, |path| {
        let info = read(path);
        read_one(path);
        info
    })
    .into_iter()
    .zip(&files)
    .map(|(result, path)| {
        result.unwrap_or_else(|| {
            Err(Error::io(
                path,
                std::io::Error::other("listing thread failed"),
            ))
        })
    })
    .collect()
}

/// `f` of each of `items` on up to `threads` threads, each taking the next item when it is
/// free; results in `items` order, `None` where `f` panicked.
fn map_in_order<I: Sync, T: Send>(
    items: &[I],
    threads: usize,
    f: impl Fn(&I) -> T + Sync,
) -> Vec<Option<T>> {
    let results: Vec<Mutex<Option<T>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            let value = f(item);
            if let Ok(mut slot) = results[i].lock() {
                *slot = Some(value);
            }
        }
    };
    std::thread::scope(|scope| {
        // The calling thread is one of the workers.
        for _ in 1..threads.min(items.len()) {
            scope.spawn(work);
        }
        work();
    });
    results
        .into_iter()
        .map(|slot| slot.into_inner().ok().flatten())
        .collect()
}

fn finish(results: Vec<Result<SessionInfo>>) -> Listing {
    let mut listing = Listing::default();
    for r in results {
        match r {
            Ok(info) => listing.sessions.push(info),
            Err(e) => {
                let path = match &e {
                    Error::Io { path, .. }
                    | Error::NotASession { path, .. }
                    | Error::NotAFile(path) => path.clone(),
                    _ => PathBuf::new(),
                };
                listing.skipped.push(Skipped {
                    path,
                    reason: e.to_string(),
                });
            }
        }
    }
    sort_newest_first(&mut listing.sessions);
    listing
}

/// By `modified`, newest first; stable, so equal times keep the order the files were read in
/// (names descending), as pi's stable sort does.
pub(crate) fn sort_newest_first(sessions: &mut [SessionInfo]) {
    sessions.sort_by(|a, b| b.modified_ms.total_cmp(&a.modified_ms));
}

/// What a `--session`/`--fork` argument names (spec: lifecycle.md §5.3).
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// The argument is a path (it contains `/` or `\`, or ends with `.jsonl`); it may not exist.
    Path(PathBuf),
    /// A session of the current project whose id starts with the argument.
    Local(PathBuf),
    /// A session of another project; `cwd` is that session's.
    Global {
        /// The session file.
        path: PathBuf,
        /// Its working directory.
        cwd: String,
    },
}

/// Resolves a `--session`/`--fork` argument: a path, else a prefix of a session id in
/// `local_dir`, else in any project under `sessions_root`. An exact id wins; unlike pi
/// (which silently takes the newest) several prefix matches are an error.
///
/// Errors: [`Error::NoSessionMatch`], [`Error::AmbiguousSession`].
pub fn resolve_session_arg(arg: &str, local_dir: &Path, sessions_root: &Path) -> Result<Resolved> {
    if arg.contains(['/', '\\']) || arg.ends_with(".jsonl") {
        return Ok(Resolved::Path(PathBuf::from(arg)));
    }
    let pick = |listing: Listing| -> Result<Option<SessionInfo>> {
        let matches: Vec<SessionInfo> = listing
            .sessions
            .into_iter()
            .filter(|s| s.id.starts_with(arg))
            .collect();
        if let Some(exact) = matches.iter().find(|s| s.id == arg) {
            return Ok(Some(exact.clone()));
        }
        match matches.len() {
            0 => Ok(None),
            1 => Ok(matches.into_iter().next()),
            n => Err(Error::AmbiguousSession {
                arg: arg.to_owned(),
                count: n,
                candidates: matches
                    .iter()
                    .take(5)
                    .map(|s| format!("{} ({})", s.id, s.path.display()))
                    .collect(),
            }),
        }
    };
    if let Some(info) = pick(list(local_dir))? {
        return Ok(Resolved::Local(info.path));
    }
    if let Some(info) = pick(list_all(sessions_root))? {
        return Ok(Resolved::Global {
            path: info.path,
            cwd: info.cwd,
        });
    }
    Err(Error::NoSessionMatch(arg.to_owned()))
}
/// A `session_info` entry's name as pi reads it (`name?.trim() || undefined`, latest wins):
/// `Some(Some(name))` sets it, `Some(None)` clears it (missing, null or blank), `None` leaves
/// it as it was (not a string: pi throws and drops the whole file from the list).
pub(crate) fn session_info_name(fields: &Map<String, Value>) -> Option<Option<String>> {
    match fields.get("name") {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(s)) => {
            let t = js_trim(s);
            Some((!t.is_empty()).then(|| t.to_owned()))
        }
        Some(_) => None,
    }
}

/// pi's `modified` of a session: its last activity time when positive, else the header's
/// time (`NaN`: none), else the file's mtime; all in ms since the epoch.
pub(crate) fn modified_ms(last_activity: Option<f64>, header_time: f64, mtime_ms: f64) -> f64 {
    match last_activity {
        Some(t) if t > 0.0 => t,
        _ if !header_time.is_nan() => header_time,
        _ => mtime_ms,
    }
}

/// A user or assistant message's activity time in ms (pi's `getMessageActivityTime`, for a
/// message with content): its numeric `message.timestamp`, else the entry's `timestamp`
/// parsed as a date; `None` when neither gives one.
pub(crate) fn activity_time(
    message_timestamp: Option<f64>,
    entry_timestamp: Option<&str>,
) -> Option<f64> {
    match message_timestamp {
        Some(n) => Some(n),
        None => entry_timestamp
            .map(pith_events::js::date_parse)
            .filter(|t| !t.is_nan()),
    }
}
