//! The append-only writer of one session file (spec: format.md §7, divergences.md "Writing").
//!
//! Appends whole lines with one `write` each on an `O_APPEND` descriptor; never writes a line
//! twice (it counts what is on disk); starts a new line if the file ends in a torn fragment;
//! notices when the file was deleted or replaced underneath it and then writes the whole
//! session again; rewrites (migration, branching) go through a temporary file, fsync and
//! rename. Files are created 0600.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

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
    /// The file was deleted or replaced while pith had it open; the complete session was
    /// written to the path again.
    Recreated {
        /// The session file.
        path: PathBuf,
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
            Notice::Recreated { path } => write!(
                f,
                "{}: the session file was deleted or replaced while in use; the whole session was written again",
                path.display()
            ),
        }
    }
}

/// State of one session file on disk.
#[derive(Debug)]
pub struct LogFile {
    path: PathBuf,
    /// Open append handle, once something was written or the file was checked.
    file: Option<File>,
    /// (device, inode) of `file`, to notice the path being deleted or replaced with one
    /// `stat` per write.
    identity: Option<(u64, u64)>,
    /// Whether the header line is on disk.
    header_on_disk: bool,
    /// The advisory lock that makes this the file's only writer, taken before the first write.
    lock: Option<WriterLock>,
    /// The last write stopped in the middle of a line (a full disk): the next starts a new one.
    torn: bool,
    /// How many of the session's entries (in order) are on disk; the rest are pending.
    entries_on_disk: usize,
}

impl LogFile {
    /// A file that does not exist yet; nothing is on disk.
    pub fn new(path: PathBuf) -> LogFile {
        LogFile {
            path,
            file: None,
            identity: None,
            header_on_disk: false,
            entries_on_disk: 0,
            lock: None,
            torn: false,
        }
    }

    /// A file read from disk that holds the header and the first `entries_on_disk` entries.
    pub fn existing(path: PathBuf, entries_on_disk: usize) -> LogFile {
        let identity = identity_of(&path);
        LogFile {
            path,
            file: None,
            identity,
            header_on_disk: true,
            entries_on_disk,
            lock: None,
            torn: false,
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many entries are on disk.
    pub fn entries_on_disk(&self) -> usize {
        self.entries_on_disk
    }

    /// Whether the header is on disk.
    pub fn exists_on_disk(&self) -> bool {
        self.header_on_disk
    }

    /// Writes what is not on disk yet: the header if needed, then `entries[entries_on_disk..]`.
    /// Returns notices about a torn tail or a replaced file.
    ///
    /// Errors: [`Error::Io`]; nothing is counted as written unless the write succeeded, so a
    /// later call writes the same lines again (e.g. once disk space is back).
    pub fn write_pending(&mut self, header: &Header, entries: &[Entry]) -> Result<Vec<Notice>> {
        let mut notices = Vec::new();
        self.lock()?;
        if self.header_on_disk && self.replaced()? {
            notices.push(Notice::Recreated {
                path: self.path.clone(),
            });
            self.rewrite(header, entries)?;
            return Ok(notices);
        }
        if self.header_on_disk && self.entries_on_disk == entries.len() {
            return Ok(notices);
        }
        // One buffer, one write in the normal case; line ends are kept so that a write that
        // stops part-way (a full disk) counts exactly the lines that made it.
        let mut buf = Vec::with_capacity(1024);
        if self.torn {
            // A previous write stopped mid-line: the fragment stays, the next line starts fresh.
            buf.push(b'\n');
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
        let file = self.open(&mut notices)?;
        let mut written = 0;
        let result = loop {
            if written == buf.len() {
                break Ok(());
            }
            match file.write(&buf[written..]) {
                Ok(0) => break Err(std::io::Error::from(std::io::ErrorKind::WriteZero)),
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
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

    /// Replaces the file with exactly `header` and `entries`, atomically.
    ///
    /// Errors: [`Error::Io`].
    pub fn rewrite(&mut self, header: &Header, entries: &[Entry]) -> Result<()> {
        self.lock()?;
        let lines = std::iter::once(header.raw()).chain(entries.iter().map(Entry::raw));
        atomic_write(&self.path, lines)?;
        self.file_replaced_by_us();
        self.header_on_disk = true;
        self.entries_on_disk = entries.len();
        Ok(())
    }

    /// Takes the file's writer lock if this writer does not hold it yet.
    ///
    /// Errors: [`Error::Locked`] naming the holder's pid when another process writes the
    /// file; [`Error::Io`].
    pub fn lock(&mut self) -> Result<()> {
        if self.lock.is_none() {
            self.lock = Some(WriterLock::acquire(&self.path)?);
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
        self.identity = identity_of(&self.path);
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

    /// Whether the path no longer names the file this writer has open.
    ///
    /// With the file open, one `fstat` answers it: deleting the path or renaming another file
    /// over it leaves our inode with no links. Before the first write, the path is checked.
    fn replaced(&self) -> Result<bool> {
        let Some(file) = &self.file else {
            return match std::fs::metadata(&self.path) {
                Ok(now) => Ok(self
                    .identity
                    .is_some_and(|(dev, ino)| now.dev() != dev || now.ino() != ino)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
                Err(e) => Err(Error::io(&self.path, e)),
            };
        };
        let ours = file.metadata().map_err(|e| Error::io(&self.path, e))?;
        Ok(ours.nlink() == 0)
    }

    fn open(&mut self, notices: &mut Vec<Notice>) -> Result<&mut File> {
        if self.file.is_none() {
            if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
                crate::dirs::ensure_dir(dir)?;
            }
            // A file this writer has not written a header to must not exist yet: appending to
            // somebody else's file would graft this session onto it.
            let fresh = !self.header_on_disk;
            let file = OpenOptions::new()
                .read(true)
                .append(true)
                .create(fresh)
                .create_new(fresh)
                .mode(0o600)
                .open(&self.path)
                .map_err(|e| Error::io(&self.path, e))?;
            let meta = file.metadata().map_err(|e| Error::io(&self.path, e))?;
            self.identity = Some((meta.dev(), meta.ino()));
            let len = meta.len();
            if len > 0 {
                let mut last = [0u8; 1];
                file.read_exact_at(&mut last, len - 1)
                    .map_err(|e| Error::io(&self.path, e))?;
                if last[0] != b'\n' {
                    (&file)
                        .write_all(b"\n")
                        .map_err(|e| Error::io(&self.path, e))?;
                    notices.push(Notice::TornTailSkipped {
                        path: self.path.clone(),
                    });
                }
            }
            self.file = Some(file);
        }
        match &mut self.file {
            Some(f) => Ok(f),
            None => Err(Error::io(
                &self.path,
                std::io::Error::other("file not open"),
            )),
        }
    }
}

/// An exclusive advisory lock (`flock`) on `<session file>.lock`, which holds the holder's pid.
///
/// A sidecar file rather than the session file itself, so that atomic rewrites (which
/// replace the session file's inode) never drop the lock. The OS releases it when the holder
/// exits, however it exits, so a dead process's lock is simply taken over. A clean release
/// removes the sidecar; a lock is only valid while its path still names the locked inode, so
/// removal cannot let two writers in.
#[derive(Debug)]
pub struct WriterLock {
    file: File,
    path: PathBuf,
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // Still holding the lock here, so nobody else can be relying on this inode.
        let _ = std::fs::remove_file(&self.path);
    }
}

impl WriterLock {
    /// Takes the lock of `session_file` without waiting.
    ///
    /// Errors: [`Error::Locked`] when another open file description holds it (another
    /// process, or another writer in this one); [`Error::Io`].
    pub fn acquire(session_file: &Path) -> Result<WriterLock> {
        // One lock per file, however it is reached (symlinks, relative paths).
        let canonical =
            std::fs::canonicalize(session_file).unwrap_or_else(|_| session_file.to_owned());
        let mut name = canonical.file_name().unwrap_or_default().to_owned();
        name.push(".lock");
        let path = canonical.with_file_name(name);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::dirs::ensure_dir(dir)?;
        }
        let io = |e| Error::io(&path, e);
        // A holder that releases between our open and our lock has removed the file we
        // opened; try again on the new one.
        for _ in 0..8 {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&path)
                .map_err(io)?;
            match file.try_lock() {
                Ok(()) => {
                    let ours = file.metadata().map_err(io)?;
                    if identity_of(&path) != Some((ours.dev(), ours.ino())) {
                        continue;
                    }
                    // The pid is for the error message of a second writer; a full disk must not
                    // keep this one from working, so writing it is best effort.
                    let _ = file.set_len(0);
                    let _ = file.write_all(std::process::id().to_string().as_bytes());
                    return Ok(WriterLock { file, path });
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut pid = String::new();
                    let _ = std::io::Read::read_to_string(&mut file, &mut pid);
                    return Err(Error::Locked {
                        path: session_file.to_owned(),
                        pid: pid.trim().parse().ok(),
                    });
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
            }
        }
        Err(io(std::io::Error::other(
            "the lock file kept changing while taking it",
        )))
    }

    /// The sidecar lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open lock file.
    pub fn file(&self) -> &File {
        &self.file
    }
}

/// (device, inode) of the file at `path`, if it exists.
fn identity_of(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Writes `lines` (each followed by `\n`) to a temporary file in `path`'s directory, fsyncs
/// it, renames it over `path` and fsyncs the directory: readers see the old or the new file,
/// never a mix (spec: divergences.md "Writing", migration rewrite). The file is 0600.
///
/// Errors: [`Error::Io`]; `path` is untouched when any step before the rename fails.
pub fn atomic_write<'a>(path: &Path, lines: impl IntoIterator<Item = &'a str>) -> Result<()> {
    // A symlinked session file is rewritten where it points; renaming over the link itself
    // would replace the link with a copy and leave its target unmigrated.
    let resolved;
    let path = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            resolved = std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?;
            resolved.as_path()
        }
        _ => path,
    };
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Err(Error::NotAFile(path.to_owned()));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    crate::dirs::ensure_dir(&dir)?;
    let io = |e| Error::io(path, e);
    let tmp = tempfile::Builder::new()
        .prefix(".pith-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(io)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(io)?;
    {
        let mut w = BufWriter::with_capacity(1 << 16, tmp.as_file());
        for line in lines {
            w.write_all(line.as_bytes()).map_err(io)?;
            w.write_all(b"\n").map_err(io)?;
        }
        w.flush().map_err(io)?;
    }
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    File::open(&dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(&dir, e))?;
    Ok(())
}
