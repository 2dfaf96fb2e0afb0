//! The append-only writer of one session file (spec: format.md §7, divergences.md "Writing").
//!
//! Appends whole lines with one `write` each on an `O_APPEND` descriptor; never writes a line
//! twice (it counts what is on disk); starts a new line after a torn fragment (its own, or a
//! file cut short by another program); notices when the file was deleted or replaced
//! underneath it: a deleted file is written again whole at its path, and when something else
//! now sits at the path the session is written beside it under a new name, the newcomer left
//! untouched. Rewrites (migration, branching) go through a temporary file, fsync and rename.
//!
//! Symlinks are resolved once, when the writer is made (`--session link.jsonl` writes the
//! file the link names); after that no open, rename or lock ever follows one, so nothing a
//! repository or another program puts at a path makes pith write into another file. Files are
//! created 0600; a session file with several hard links is refused.

mod lock;
mod replace;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub use lock::{WriterLock, refuse_hard_links, resolve};
pub use replace::{Replace, TEMP_PREFIX, TEMP_SUFFIX, atomic_write, replace_file, sweep_leftovers};

use crate::entry::Entry;
use crate::error::{Error, Result};
use crate::header::Header;

/// Something the writer did that the user should hear about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The file ended without `\n` (a torn last line); the next entry was started on a new
    /// line and the fragment left in place.
    TornTailSkipped {
        /// The session file.
        path: PathBuf,
    },
    /// The file was cut short (or grown) by another program while pith had it open; the next
    /// entry was started on a new line.
    ChangedUnderneath {
        /// The session file.
        path: PathBuf,
        /// Its length after pith's last write, in bytes.
        expected: u64,
        /// Its length now, in bytes.
        found: u64,
    },
    /// The file was deleted while pith had it open; the complete session was written to the
    /// path again.
    Recreated {
        /// The session file.
        path: PathBuf,
    },
    /// Something else now sits at the session's path (another file moved there, a symlink, a
    /// directory); it was left untouched and the complete session written to `now`, where it
    /// continues.
    MovedAside {
        /// The path the session had.
        path: PathBuf,
        /// What sits there now: `a symbolic link`, `another file`, `a directory`, ….
        what: &'static str,
        /// Where the session is now.
        now: PathBuf,
    },
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notice::TornTailSkipped { path } => write!(
                f,
                "{}: the last line was incomplete (torn write); it is kept and skipped, new entries start on the next line",
                path.display()
            ),
            Notice::ChangedUnderneath {
                path,
                expected,
                found,
            } => write!(
                f,
                "{}: another program changed the session file while pith was writing it ({expected} bytes became {found}); new entries start on a new line",
                path.display()
            ),
            Notice::Recreated { path } => write!(
                f,
                "{}: the session file was deleted while in use; the whole session was written to it again",
                path.display()
            ),
            Notice::MovedAside { path, what, now } => write!(
                f,
                "{}: the session file was replaced by {what} while in use; that is left untouched, and the whole session was written to {}, where it continues",
                path.display(),
                now.display()
            ),
        }
    }
}

/// What is at the session's path, compared with the file this writer wrote.
enum AtPath {
    Ours,
    Gone,
    Other(&'static str),
}

/// State of one session file on disk.
#[derive(Debug)]
pub struct LogFile {
    /// The path as the session knows it (what the user gave, or the path it was moved to).
    path: PathBuf,
    /// `path` with symlinks resolved, once: every open, rename and lock uses this one, and
    /// none of them follows a symlink.
    real: PathBuf,
    /// Open append handle, once something was written or the file was checked.
    file: Option<File>,
    /// (device, inode) of the file at `real`, to notice it being deleted or replaced.
    identity: Option<(u64, u64)>,
    /// The file's length after this writer's last write, to notice another program cutting
    /// it short.
    end: Option<u64>,
    /// Whether the header line is on disk.
    header_on_disk: bool,
    /// The advisory lock that makes this the file's only writer, taken before the first write.
    lock: Option<WriterLock>,
    /// The last write stopped in the middle of a line (a full disk): the next starts a new one.
    torn: bool,
    /// How many of the session's entries (in order) are on disk; the rest are pending.
    entries_on_disk: usize,
    /// Notices of rewrites (which return no notices themselves), handed out by the next
    /// [`LogFile::write_pending`] or [`LogFile::take_notices`].
    notices: Vec<Notice>,
}

impl LogFile {
    /// A file that does not exist yet; nothing is on disk.
    pub fn new(path: PathBuf) -> LogFile {
        let real = resolve(&path);
        LogFile {
            path,
            real,
            file: None,
            identity: None,
            end: None,
            header_on_disk: false,
            entries_on_disk: 0,
            lock: None,
            torn: false,
            notices: Vec::new(),
        }
    }

    /// A file read from disk that holds the header and the first `entries_on_disk` entries.
    pub fn existing(path: PathBuf, entries_on_disk: usize) -> LogFile {
        let real = resolve(&path);
        let identity = identity_of(&real);
        LogFile {
            path,
            real,
            file: None,
            identity,
            end: None,
            header_on_disk: true,
            entries_on_disk,
            lock: None,
            torn: false,
            notices: Vec::new(),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file pith writes: [`LogFile::path`] with symlinks resolved when the writer was made.
    pub fn real_path(&self) -> &Path {
        &self.real
    }

    /// How many entries are on disk.
    pub fn entries_on_disk(&self) -> usize {
        self.entries_on_disk
    }

    /// Whether the header is on disk.
    pub fn exists_on_disk(&self) -> bool {
        self.header_on_disk
    }

    /// Notices from rewrites since the last call.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    /// Writes what is not on disk yet: the header if needed, then `entries[entries_on_disk..]`.
    /// Returns notices about a torn tail or a replaced file.
    ///
    /// Errors: [`Error::Io`]; nothing is counted as written unless the write succeeded, so a
    /// later call writes the same lines again (e.g. once disk space is back).
    /// [`Error::BodyChanged`] when an entry to write has its body left in a file that was
    /// changed in place since (it is never written cut).
    pub fn write_pending(&mut self, header: &Header, entries: &[Entry]) -> Result<Vec<Notice>> {
        self.lock()?;
        // With the file open, one `fstat` answers the common case: deleting the path or
        // renaming anything over it leaves our inode without links. Only then is the path
        // looked at (`lstat`) to tell a deleted file from a replaced one.
        let still_linked = self
            .file
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .is_some_and(|m| m.nlink() > 0);
        if self.header_on_disk && !still_linked {
            match self.at_path()? {
                AtPath::Ours => {}
                AtPath::Gone => {
                    self.recreate(header, entries)?;
                    return Ok(self.take_notices());
                }
                AtPath::Other(what) => {
                    self.move_aside(header, entries, what)?;
                    return Ok(self.take_notices());
                }
            }
        }
        let mut notices = self.take_notices();
        if self.header_on_disk && self.entries_on_disk == entries.len() {
            return Ok(notices);
        }
        // A copied entry whose body is left in a file changed since must not be written cut.
        read_back(entries.get(self.entries_on_disk..).unwrap_or_default())?;
        self.open(&mut notices)?;
        let Some(file) = self.file.as_ref() else {
            return Err(Error::io(
                &self.path,
                std::io::Error::other("file not open"),
            ));
        };
        let len = file.metadata().map_err(|e| Error::io(&self.real, e))?.len();
        // One buffer, one write in the normal case; line ends are kept so that a write that
        // stops part-way (a full disk) counts exactly the lines that made it.
        let mut buf = Vec::with_capacity(1024);
        if self.torn {
            // A previous write stopped mid-line: the fragment stays, the next line starts fresh.
            buf.push(b'\n');
        } else if let Some(expected) = self.end.filter(|&e| e != len) {
            notices.push(Notice::ChangedUnderneath {
                path: self.path.clone(),
                expected,
                found: len,
            });
            if len > 0 && !ends_with_newline(file, len).map_err(|e| Error::io(&self.real, e))? {
                buf.push(b'\n');
            }
        }
        let lead = buf.len();
        let mut ends = Vec::new();
        if !self.header_on_disk {
            buf.extend_from_slice(header.raw().as_bytes());
            buf.push(b'\n');
            ends.push(buf.len());
        }
        for entry in &entries[self.entries_on_disk..] {
            buf.extend_from_slice(entry.raw().as_bytes());
            buf.push(b'\n');
            ends.push(buf.len());
        }
        let mut written = 0;
        let result = loop {
            if written == buf.len() {
                break Ok(());
            }
            match std::io::Write::write(&mut &*file, &buf[written..]) {
                Ok(0) => break Err(std::io::Error::from(std::io::ErrorKind::WriteZero)),
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.end = Some(len + written as u64);
        let complete = ends.iter().filter(|&&end| end <= written).count();
        if complete > 0 && !self.header_on_disk {
            self.header_on_disk = true;
            self.entries_on_disk += complete - 1;
        } else {
            self.entries_on_disk += complete;
        }
        self.torn = if written < lead {
            self.torn
        } else {
            written != lead && !ends.contains(&written)
        };
        result.map_err(|e| Error::io(&self.path, e))?;
        Ok(notices)
    }

    /// Replaces the file with exactly `header` and `entries`, atomically. When something other
    /// than this writer's file now sits at the path, it is left alone and the session is
    /// written beside it instead ([`Notice::MovedAside`], from [`LogFile::take_notices`]).
    ///
    /// Errors: [`Error::Io`], [`Error::Symlink`], [`Error::NotAFile`],
    /// [`Error::BodyChanged`] as [`LogFile::write_pending`].
    pub fn rewrite(&mut self, header: &Header, entries: &[Entry]) -> Result<()> {
        self.lock()?;
        read_back(entries)?;
        if self.header_on_disk
            && let AtPath::Other(what) = self.at_path()?
        {
            return self.move_aside(header, entries, what);
        }
        let lines = std::iter::once(header.raw()).chain(entries.iter().map(Entry::raw));
        atomic_write(&self.real, lines)?;
        self.written_whole(entries.len());
        Ok(())
    }

    /// Takes the file's writer lock if this writer does not hold it yet.
    ///
    /// Errors: [`Error::Locked`] naming the holder's pid when another process writes the
    /// file; [`Error::HardLinked`], [`Error::Symlink`] (see [`WriterLock::acquire`]);
    /// [`Error::Io`].
    pub fn lock(&mut self) -> Result<()> {
        if self.lock.is_none() {
            self.lock = Some(WriterLock::acquire(&self.real)?);
        }
        Ok(())
    }

    /// Releases the writer lock (an inspecting reader that only had to migrate the file).
    pub fn unlock(&mut self) {
        self.lock = None;
    }

    /// Records that the path now names a file this process wrote (after an atomic rewrite
    /// done outside this writer), so it is not mistaken for a replacement.
    pub fn file_replaced_by_us(&mut self) {
        self.file = None;
        self.identity = identity_of(&self.real);
        self.end = None;
        self.torn = false;
    }

    /// fsyncs what was written (durability at turn end and shutdown).
    ///
    /// Errors: [`Error::Io`].
    pub fn sync(&mut self) -> Result<()> {
        match &self.file {
            Some(f) => f.sync_data().map_err(|e| Error::io(&self.path, e)),
            None => Ok(()),
        }
    }

    fn written_whole(&mut self, entries: usize) {
        self.file_replaced_by_us();
        self.header_on_disk = true;
        self.entries_on_disk = entries;
    }

    /// What sits at the path now. One `lstat`: never follows a symlink put there.
    fn at_path(&self) -> Result<AtPath> {
        match std::fs::symlink_metadata(&self.real) {
            Ok(m) => {
                let t = m.file_type();
                Ok(if t.is_symlink() {
                    AtPath::Other("a symbolic link")
                } else if t.is_dir() {
                    AtPath::Other("a directory")
                } else if !t.is_file() {
                    AtPath::Other("a special file")
                } else if self.identity != Some((m.dev(), m.ino())) {
                    AtPath::Other("another file")
                } else {
                    AtPath::Ours
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(AtPath::Gone),
            Err(e) => Err(Error::io(&self.real, e)),
        }
    }

    /// The path is gone: the whole session goes back to it, unless something appears there
    /// meanwhile (then beside it).
    fn recreate(&mut self, header: &Header, entries: &[Entry]) -> Result<()> {
        read_back(entries)?;
        let lines = std::iter::once(header.raw()).chain(entries.iter().map(Entry::raw));
        match replace_file(&self.real, Replace::Nothing, |w| {
            replace::write_lines(w, lines)
        }) {
            Ok(()) => {
                self.written_whole(entries.len());
                self.notices.push(Notice::Recreated {
                    path: self.path.clone(),
                });
                Ok(())
            }
            Err(Error::Io { cause, .. }) if cause.kind() == std::io::ErrorKind::AlreadyExists => {
                self.move_aside(header, entries, "another file")
            }
            Err(e) => Err(e),
        }
    }

    /// Something else sits at the path: the whole session is written to the first free
    /// `<stem>.recovered[-N].jsonl` beside it, which becomes this writer's file and lock.
    fn move_aside(&mut self, header: &Header, entries: &[Entry], what: &'static str) -> Result<()> {
        read_back(entries)?;
        let name = self.real.file_name().map_or_else(
            || "session.jsonl".to_owned(),
            |n| n.to_string_lossy().into_owned(),
        );
        let stem = name.strip_suffix(".jsonl").unwrap_or(&name).to_owned();
        for n in 1..=1000 {
            let candidate = if n == 1 {
                format!("{stem}.recovered.jsonl")
            } else {
                format!("{stem}.recovered-{n}.jsonl")
            };
            let target = self.real.with_file_name(candidate);
            if std::fs::symlink_metadata(&target).is_ok() {
                continue;
            }
            let Ok(lock) = WriterLock::acquire(&target) else {
                continue;
            };
            let lines = std::iter::once(header.raw()).chain(entries.iter().map(Entry::raw));
            match replace_file(&target, Replace::Nothing, |w| {
                replace::write_lines(w, lines)
            }) {
                Ok(()) => {
                    self.notices.push(Notice::MovedAside {
                        path: self.path.clone(),
                        what,
                        now: target.clone(),
                    });
                    self.path = target.clone();
                    self.real = target;
                    self.lock = Some(lock);
                    self.written_whole(entries.len());
                    return Ok(());
                }
                Err(Error::Io { cause, .. })
                    if cause.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Err(Error::io(
            &self.real,
            std::io::Error::other("no free name beside the replaced session file"),
        ))
    }

    fn open(&mut self, notices: &mut Vec<Notice>) -> Result<()> {
        if self.file.is_none() {
            if let Some(dir) = self.real.parent().filter(|d| !d.as_os_str().is_empty()) {
                crate::dirs::ensure_dir(dir)?;
            }
            // A file this writer has not written a header to must not exist yet: appending to
            // somebody else's file would graft this session onto it. Never through a symlink.
            let fresh = !self.header_on_disk;
            let file = OpenOptions::new()
                .read(true)
                .append(true)
                .create_new(fresh)
                .mode(0o600)
                .custom_flags(lock::nofollow_flags())
                .open(&self.real)
                .map_err(|e| {
                    if lock::is_symlink_error(&e) {
                        Error::Symlink(self.real.clone())
                    } else {
                        Error::io(&self.path, e)
                    }
                })?;
            let meta = file.metadata().map_err(|e| Error::io(&self.path, e))?;
            if !meta.is_file() {
                return Err(Error::NotAFile(self.real.clone()));
            }
            self.identity = Some((meta.dev(), meta.ino()));
            let len = meta.len();
            if len > 0 && !ends_with_newline(&file, len).map_err(|e| Error::io(&self.path, e))? {
                std::io::Write::write_all(&mut &file, b"\n")
                    .map_err(|e| Error::io(&self.path, e))?;
                notices.push(Notice::TornTailSkipped {
                    path: self.path.clone(),
                });
            }
            self.end = Some(file.metadata().map_err(|e| Error::io(&self.path, e))?.len());
            self.file = Some(file);
        }
        Ok(())
    }
}

fn ends_with_newline(file: &File, len: u64) -> std::io::Result<bool> {
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] == b'\n')
}

/// (device, inode) of whatever is at `path` itself (a symlink is not followed).
fn identity_of(path: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// Reads back the bodies `entries` left in their file (see [`Entry::set_body_in`]), so
/// none is written with its body cut.
///
/// Errors: [`Error::BodyChanged`].
fn read_back(entries: &[Entry]) -> Result<()> {
    entries.iter().try_for_each(Entry::read_back)
}
