//! A session: header, tree and its file, with pi's factories and append API
//! (spec: lifecycle.md §1–3, tree-and-context.md §2, format.md §7, divergences.md "Writing").

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use pith_events::SessionHeader;

use crate::context::{SessionContext, build_session_context};
use crate::dirs;
use crate::entry::{BodySource, Entry};
use crate::env::SessionEnv;
use crate::error::{Error, Result};
use crate::header::Header;
use crate::load::{Loaded, Warning, load_file};
use crate::reader::{LineEvent, read_lines};
use crate::tree::{Leaf, SessionTree};
use crate::writer::{LogFile, Notice, atomic_write};

/// pi tries this many random 8-hex ids before falling back to a full UUID (format.md §4.1).
const ID_ATTEMPTS: usize = 100;

/// An open session (pi's `SessionManager`).
#[derive(Debug)]
pub struct Session {
    header: Header,
    /// Shared with the [`Session::shared_tree`]s handed out; a change while one is held
    /// copies the tree (`Arc::make_mut`), so a holder keeps what it was given.
    tree: Arc<SessionTree>,
    /// Working directory the session runs in (not always the header's, e.g. `--continue`).
    cwd: String,
    /// Directory new files of this session (new session, branches) go to; `None` in memory.
    session_dir: Option<PathBuf>,
    /// The file and what of it is on disk; `None` for in-memory sessions.
    log: Option<LogFile>,
    warnings: Vec<Warning>,
    notices: Vec<Notice>,
    env: SessionEnv,
}

/// How [`Session::open`] treats the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// As pi: a blank file gets a fresh header written, a legacy file is migrated on disk.
    Write,
    /// For inspection: a legacy file is still migrated on disk (as pi does on open), but a
    /// blank file is left as it is and the fresh header stays in memory.
    Inspect,
    /// Never touch the file: no lock, a legacy file is migrated in memory only, and the
    /// session is not persisted (`--read-only`, e.g. while another process writes it).
    ReadOnly,
}

fn process_cwd() -> String {
    std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "/".into())
}

impl Session {
    fn fresh(
        cwd: String,
        session_dir: Option<PathBuf>,
        env: SessionEnv,
        id: Option<String>,
        parent_session: Option<String>,
    ) -> Session {
        let mut s = Session {
            header: Header::from_new(&SessionHeader::new(
                String::new(),
                String::new(),
                String::new(),
                None,
            )),
            tree: Arc::default(),
            cwd,
            session_dir,
            log: None,
            warnings: Vec::new(),
            notices: Vec::new(),
            env,
        };
        s.new_session(id, parent_session);
        s
    }

    /// A new persisted session for `cwd` (`SessionManager.create`); the file
    /// `<dir>/<T>_<id>.jsonl` is created with the first assistant message.
    ///
    /// Errors: [`Error::Io`] when the default session directory cannot be created.
    pub fn create(cwd: &str, session_dir: Option<&Path>, env: &SessionEnv) -> Result<Session> {
        let dir = match session_dir {
            Some(d) => {
                dirs::ensure_dir(d)?;
                d.to_owned()
            }
            None => dirs::default_session_dir(&env.agent_dir, cwd)?,
        };
        Ok(Session::fresh(
            cwd.to_owned(),
            Some(dir),
            env.clone(),
            None,
            None,
        ))
    }

    /// A session rebuilt from a copy of its log (a writer's snapshot), for a restart or a fork
    /// when the file is not the whole truth (in memory, or not created yet). `file` is where
    /// it is (or will be) written: an existing file is treated as holding the tree's entries
    /// already. The leaf is the tree's.
    pub fn from_snapshot(
        header: Header,
        tree: Arc<SessionTree>,
        cwd: &str,
        session_dir: Option<&Path>,
        file: Option<&Path>,
        env: &SessionEnv,
    ) -> Session {
        let log = file.map(|f| {
            if f.exists() {
                LogFile::existing(f.to_owned(), tree.entries().len())
            } else {
                LogFile::new(f.to_owned())
            }
        });
        Session {
            header,
            tree,
            cwd: cwd.to_owned(),
            session_dir: session_dir.map(Path::to_owned),
            log,
            // Said when the log was first opened.
            warnings: Vec::new(),
            notices: Vec::new(),
            env: env.clone(),
        }
    }

    /// A session that is never written (`SessionManager.inMemory`).
    pub fn in_memory(cwd: &str, env: &SessionEnv) -> Session {
        Session::fresh(cwd.to_owned(), None, env.clone(), None, None)
    }

    /// Opens the session file at `path` (`SessionManager.open`, spec: lifecycle.md §1,
    /// format.md §6.2).
    ///
    /// - missing file: a new session that will be written to exactly `path`;
    /// - blank file: a fresh header (written now in [`OpenMode::Write`]);
    /// - legacy file: migrated and rewritten atomically;
    /// - the leaf is the last entry. `cwd` is `cwd_override`, else the header's, else the
    ///   process's; new files go to `session_dir`, else `path`'s directory.
    ///
    /// Errors: [`Error::NotASession`] for a file with content but no valid header (the file is
    /// left untouched), [`Error::NotAFile`] for a device, FIFO or directory, [`Error::Locked`]
    /// when another process writes the file (modes that write), [`Error::Io`].
    ///
    /// A file of [`crate::outline::FROM_BYTES`] and more opened to run the session
    /// ([`OpenMode::Write`], [`OpenMode::ReadOnly`]) is read through its outline under
    /// `env.agent_dir` (see [`crate::outline`]): the entries on the path to the leaf hold
    /// their whole lines, the others' large message bodies stay in the file and are read
    /// back on first use ([`Entry::set_body_in`]). The answers are the whole file's, unless
    /// the file is changed in place while open: a body that can then no longer be read back
    /// stays cut (logged), and writing or copying it fails with [`Error::BodyChanged`].
    pub fn open(
        path: &Path,
        session_dir: Option<&Path>,
        cwd_override: Option<&str>,
        mode: OpenMode,
        env: &SessionEnv,
    ) -> Result<Session> {
        let outlined = matches!(mode, OpenMode::Write | OpenMode::ReadOnly);
        Session::open_from(path, session_dir, cwd_override, mode, env, outlined)
    }

    /// [`Session::open`], through the file's outline when `outlined` says so.
    fn open_from(
        path: &Path,
        session_dir: Option<&Path>,
        cwd_override: Option<&str>,
        mode: OpenMode,
        env: &SessionEnv,
        outlined: bool,
    ) -> Result<Session> {
        let path = std::path::absolute(path).map_err(|e| Error::io(path, e))?;
        let dir = session_dir
            .map(Path::to_owned)
            .or_else(|| path.parent().map(Path::to_owned))
            .unwrap_or_else(|| PathBuf::from("/"));
        let new_id = &mut || env.ids.entry_id();
        let through_outline = match outlined {
            true => crate::outline::open(&env.agent_dir, &path, new_id)?,
            false => None,
        };
        let (loaded, source) = match through_outline {
            Some(o) => (Ok(o.loaded), Some(BodySource::new(o.file, &path))),
            None => (load_file(&path, new_id), None),
        };
        let loaded = match loaded {
            Ok(loaded) => loaded,
            Err(Error::Io { cause, .. }) if cause.kind() == std::io::ErrorKind::NotFound => {
                let cwd = cwd_override.map_or_else(process_cwd, str::to_owned);
                let mut s = Session::fresh(cwd, Some(dir), env.clone(), None, None);
                let mut log = LogFile::new(path);
                if mode == OpenMode::Write {
                    // Taken now, not at the first write: a second process on the same new
                    // path is refused before either runs a prompt.
                    log.lock()?;
                }
                s.log = (mode != OpenMode::ReadOnly).then_some(log);
                return Ok(s);
            }
            Err(e) => return Err(e),
        };
        match loaded {
            Loaded::Blank(_) => {
                let cwd = cwd_override.map_or_else(process_cwd, str::to_owned);
                let mut s = Session::fresh(cwd, Some(dir), env.clone(), None, None);
                let mut log = LogFile::new(path);
                if mode == OpenMode::Write {
                    // Nothing to lose in a blank file; pi writes a header-only file here.
                    log.rewrite(&s.header, &[])?;
                }
                s.log = (mode != OpenMode::ReadOnly).then_some(log);
                Ok(s)
            }
            Loaded::Log(log) => {
                let log = *log;
                let torn = !log.summary.ends_with_newline && log.rewrite.is_none();
                let entries_len = log.entries.len();
                let mut entries = log.entries;
                if let Some(source) = &source {
                    left_in_file(&mut entries, &log.elided, source);
                }
                let (tree, warnings) =
                    tree_of(entries, log.warnings, torn.then_some(log.summary.lines));
                // The context at the leaf is read back at once: its bodies in a few reads,
                // on two threads, rather than one read each as they are asked for.
                if let Leaf::At(leaf) = tree.leaf()
                    && !read_back_context(&tree, leaf)?
                {
                    // Changed since it was read: read it whole.
                    return Session::open_from(&path, session_dir, cwd_override, mode, env, false);
                }
                let mut file = LogFile::existing(path.clone(), entries_len);
                // One writer per file: taken before any rewrite, held while open for writing.
                if mode == OpenMode::Write || (mode == OpenMode::Inspect && log.rewrite.is_some()) {
                    file.lock()?;
                }
                if let (Some(lines), false) = (&log.rewrite, mode == OpenMode::ReadOnly) {
                    atomic_write(file.real_path(), lines.iter().map(String::as_str))?;
                    file.file_replaced_by_us();
                }
                if mode == OpenMode::Inspect {
                    file.unlock();
                }
                let cwd = cwd_override
                    .map(str::to_owned)
                    .or_else(|| log.header.cwd().map(str::to_owned))
                    .unwrap_or_else(process_cwd);
                Ok(Session {
                    header: log.header,
                    tree: Arc::new(tree),
                    cwd,
                    session_dir: Some(dir),
                    log: (mode != OpenMode::ReadOnly).then_some(file),
                    warnings,
                    notices: Vec::new(),
                    env: env.clone(),
                })
            }
        }
    }

    /// Opens the most recently modified valid session in the directory, or creates a new one
    /// (`SessionManager.continueRecent`, spec: lifecycle.md §1). The session's cwd is `cwd`.
    /// Unlike pi, a header longer than 512 bytes or behind a BOM does not hide a session
    /// (spec: divergences.md "Reading").
    ///
    /// Errors: as [`Session::open`] and [`Session::create`].
    pub fn continue_recent(
        cwd: &str,
        session_dir: Option<&Path>,
        env: &SessionEnv,
    ) -> Result<Session> {
        let dir = match session_dir {
            Some(d) => d.to_owned(),
            None => dirs::default_session_dir(&env.agent_dir, cwd)?,
        };
        // In a custom directory only this cwd's sessions count (pi ≥ 0.77, lifecycle.md §1).
        let default = dirs::sessions_root(&env.agent_dir).join(dirs::encode_cwd(cwd));
        let filter = session_dir.is_some() && default != dir;
        match most_recent_session_of(&dir, filter.then_some(cwd)) {
            Some(path) => Session::open(&path, Some(&dir), Some(cwd), OpenMode::Write, env),
            None => Session::create(cwd, Some(&dir), env),
        }
    }

    /// Copies the session in `source` into a new file for `target_cwd` and opens it
    /// (`SessionManager.forkFrom`, spec: lifecycle.md §3). The new header's `parentSession` is
    /// `source` as given. A legacy source is migrated in memory first (pi copies it raw); the
    /// source file is not touched.
    ///
    /// Errors: [`Error::EmptyForkSource`] for a missing or blank source,
    /// [`Error::NotASession`], [`Error::Io`].
    pub fn fork_from(
        source: &Path,
        target_cwd: &str,
        session_dir: Option<&Path>,
        env: &SessionEnv,
    ) -> Result<Session> {
        Session::fork_from_with_id(source, target_cwd, session_dir, None, env)
    }

    /// [`Session::fork_from`] with the copy's id given (`forkFrom(…, {id})`, CLI `--fork …
    /// --session-id`); `None` = a new UUIDv7. The id is the caller's to check (format.md §4.2,
    /// [`crate::dirs::valid_session_id`]).
    ///
    /// Errors: as [`Session::fork_from`]; [`Error::Io`] when a file with that name exists.
    pub fn fork_from_with_id(
        source: &Path,
        target_cwd: &str,
        session_dir: Option<&Path>,
        id: Option<String>,
        env: &SessionEnv,
    ) -> Result<Session> {
        let log = match load_file(source, &mut || env.ids.entry_id()) {
            Ok(Loaded::Log(log)) => log,
            Ok(Loaded::Blank(_)) => return Err(Error::EmptyForkSource(source.to_owned())),
            Err(Error::Io { cause: e, .. }) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::EmptyForkSource(source.to_owned()));
            }
            Err(e) => return Err(e),
        };
        let dir = match session_dir {
            Some(d) => {
                dirs::ensure_dir(d)?;
                d.to_owned()
            }
            None => dirs::default_session_dir(&env.agent_dir, target_cwd)?,
        };
        let timestamp = env.now_iso();
        let id = id.unwrap_or_else(|| env.ids.session_id());
        let header = Header::from_new(&SessionHeader::new(
            id.clone(),
            timestamp.clone(),
            target_cwd.to_owned(),
            Some(source.to_string_lossy().into_owned()),
        ));
        let path = dir.join(dirs::session_file_name(&timestamp, &id));
        let lines = std::iter::once(header.raw()).chain(log.entries.iter().map(Entry::raw));
        atomic_write(&path, lines)?;
        Session::open(&path, Some(&dir), Some(target_cwd), OpenMode::Write, env)
    }

    /// Starts a new session in this manager (`newSession`, spec: lifecycle.md §1.1): new id
    /// (or `id`), empty tree, leaf at the root; when persisted, a new file path in the session
    /// directory (the previous file is untouched). Returns the new path.
    pub fn new_session(
        &mut self,
        id: Option<String>,
        parent_session: Option<String>,
    ) -> Option<PathBuf> {
        let id = id.unwrap_or_else(|| self.env.ids.session_id());
        let timestamp = self.env.now_iso();
        self.header = Header::from_new(&SessionHeader::new(
            id.clone(),
            timestamp.clone(),
            self.cwd.clone(),
            parent_session,
        ));
        self.tree = Arc::default();
        self.log = self
            .session_dir
            .as_ref()
            .map(|dir| LogFile::new(dir.join(dirs::session_file_name(&timestamp, &id))));
        self.warnings.clear();
        self.session_file().map(Path::to_owned)
    }

    /// The header (after migration).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        self.header.id()
    }

    /// The tree: entries, index, labels and leaf.
    pub fn tree(&self) -> &SessionTree {
        &self.tree
    }

    /// The tree as it is now, shared: no copy is made until the session changes while the
    /// returned tree is still held (a snapshot of a 100 MiB session was 40,000 entries
    /// copied each time).
    pub fn shared_tree(&self) -> Arc<SessionTree> {
        Arc::clone(&self.tree)
    }

    /// Every entry in file order. In a large session opened to run it, entries off the path
    /// to the leaf may have their bodies left in the file, read back on first use (see
    /// [`Session::open`]; [`SessionTree::read_back_bodies`] reads them all in one pass).
    pub fn entries(&self) -> &[Entry] {
        self.tree.entries()
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// Where new files of this session go; `None` in memory.
    pub fn session_dir(&self) -> Option<&Path> {
        self.session_dir.as_deref()
    }

    /// Tells the search index of the session's folder, when there is one, that the file
    /// grew, so searches find the new entries at once (`crate::search::note_appended`; the
    /// SessionWriter calls it after each append). Never fails.
    pub fn note_appended(&self) {
        if let Some(path) = self.session_file() {
            crate::search::note_appended(&self.env.agent_dir, path);
        }
    }

    /// The session file; `None` in memory. It may not exist yet (deferred creation).
    pub fn session_file(&self) -> Option<&Path> {
        self.log.as_ref().map(LogFile::path)
    }

    /// Whether the session is written to a file.
    pub fn is_persisted(&self) -> bool {
        self.log.is_some()
    }

    /// Lines skipped on load and tree repairs, with line numbers.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Takes what the writer reported since the last call (a torn tail, a replaced file).
    pub fn take_notices(&mut self) -> Vec<Notice> {
        if let Some(log) = &mut self.log {
            self.notices.extend(log.take_notices());
        }
        std::mem::take(&mut self.notices)
    }

    /// The context at the current leaf.
    pub fn build_context(&self) -> SessionContext<'_> {
        build_session_context(&self.tree, self.tree.leaf())
    }

    /// The current leaf id; `None` at the root.
    pub fn leaf_id(&self) -> Option<&str> {
        self.tree.leaf_id()
    }

    /// `getSessionName()`.
    pub fn session_name(&self) -> Option<String> {
        self.tree.session_name()
    }

    /// Moves the leaf (nothing is written).
    ///
    /// Errors: [`Error::EntryNotFound`].
    pub fn branch(&mut self, id: &str) -> Result<()> {
        Arc::make_mut(&mut self.tree).branch(id)
    }

    /// Moves the leaf before the first entry (nothing is written).
    pub fn reset_leaf(&mut self) {
        Arc::make_mut(&mut self.tree).reset_leaf();
    }

    /// fsyncs the session file (at each turn end and on shutdown).
    ///
    /// Errors: [`Error::Io`].
    pub fn sync(&mut self) -> Result<()> {
        match &mut self.log {
            Some(log) => log.sync(),
            None => Ok(()),
        }
    }

    /// Writes whatever is pending (after an earlier write failed, e.g. on a full disk).
    ///
    /// Errors: [`Error::Io`]; the entries stay in memory and pending. [`Error::BodyChanged`]
    /// as [`LogFile::write_pending`].
    pub fn flush(&mut self) -> Result<()> {
        let Some(log) = &mut self.log else {
            return Ok(());
        };
        // Deferred creation (spec: format.md §7.1): a new file appears with the first user or
        // assistant message, holding everything so far; a file on disk only ever appends.
        if !log.exists_on_disk() && !self.tree.has_conversation() {
            return Ok(());
        }
        let notices = log.write_pending(&self.header, self.tree.entries())?;
        self.notices.extend(notices);
        Ok(())
    }

    /// The context at any leaf (for `--at` and `contexts_at`).
    pub fn context_at(&self, leaf: Leaf) -> SessionContext<'_> {
        build_session_context(&self.tree, leaf)
    }
}

/// The newest valid session file in `dir` by mtime (`findMostRecentSession`); ties keep
/// name order. A file counts when its first JSON line is a valid header.
pub fn most_recent_session(dir: &Path) -> Option<PathBuf> {
    most_recent_session_of(dir, None)
}

/// [`most_recent_session`] among the files whose header `cwd` resolves to `cwd` (pi's
/// `findMostRecentSession(dir, cwd)` for a custom `--session-dir`); `None` takes every file.
pub fn most_recent_session_of(dir: &Path, cwd: Option<&str>) -> Option<PathBuf> {
    let mut names: Vec<_> = fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().ends_with(".jsonl"))
        .collect();
    names.sort();
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for name in names {
        let path = dir.join(name);
        match (cwd, header_cwd(&path)) {
            (_, None) => continue,
            (Some(want), Some(Some(have))) if Path::new(&have) == Path::new(want) => {}
            (Some(_), Some(_)) => continue,
            (None, Some(_)) => {}
        }
        let Ok(mtime) = fs::metadata(&path).and_then(|m| m.modified()) else {
            continue;
        };
        if best.as_ref().is_none_or(|(t, _)| mtime > *t) {
            best = Some((mtime, path));
        }
    }
    best.map(|(_, p)| p)
}

/// The `cwd` of the file's header: `None` when the file has no valid header, `Some(None)`
/// when the header has no string `cwd`.
fn header_cwd(path: &Path) -> Option<Option<String>> {
    if !fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let file = fs::File::open(path).ok()?;
    let mut found = None;
    let _ = read_lines(file, |event| {
        if let LineEvent::Parsed { text, scanned, .. } = event {
            found = Header::parse(scanned.value.of(text))
                .ok()
                .map(|h| h.cwd().map(str::to_owned));
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    });
    found
}

/// Whether the first JSON value in the file is a session header (reads only up to it).
pub fn has_valid_header(path: &Path) -> bool {
    // Opening a FIFO would block; only regular files can be sessions.
    if !fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(file) = fs::File::open(path) else {
        return false;
    };
    let mut valid = false;
    let _ = read_lines(file, |event| {
        if let LineEvent::Parsed { text, scanned, .. } = event {
            valid = Header::parse(scanned.value.of(text)).is_ok();
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    });
    valid
}

/// Makes the entries `elided` names stand for their whole lines in `source`
/// ([`Entry::set_body_in`]).
fn left_in_file(entries: &mut [Entry], elided: &[crate::load::Elided], source: &Arc<BodySource>) {
    for at in elided {
        if let Some(slot) = entries.get_mut(at.index) {
            slot.set_body_in(Arc::clone(source), at.offset, at.len);
        }
    }
}

/// Reads back at once the bodies left in the file of the entries the context at `leaf`
/// reads; `false` when one is no longer as it was read (the file changed).
///
/// Errors: [`Error::Io`] reading the file.
fn read_back_context(tree: &SessionTree, leaf: usize) -> Result<bool> {
    let entries = crate::context::entries_read(tree, leaf);
    crate::entry::read_back_all(entries.iter().filter_map(|&i| tree.entries().get(i)))
}

/// The tree of a loaded file's entries, with the load's warnings, the tree's, and (when the
/// file's last line is torn, on line `torn`) the torn-line warning.
fn tree_of(
    entries: Vec<Entry>,
    mut warnings: Vec<Warning>,
    torn: Option<usize>,
) -> (SessionTree, Vec<Warning>) {
    let (tree, mut tree_warnings) = SessionTree::new(entries);
    warnings.append(&mut tree_warnings);
    if let Some(line) = torn {
        warnings.push(Warning {
            line,
            problem: "the file ends without a newline (torn last line); the next entry starts on a new line".into(),
        });
    }
    (tree, warnings)
}

mod append;
pub use append::stored_session_name;
mod context_view;
pub use context_view::ContextView;
mod branch;

#[cfg(test)]
mod tests;
