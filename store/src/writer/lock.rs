//! The one-writer-per-file lock (spec: divergences.md "Writing") and the symlink-safe opens
//! the writer uses.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

use crate::error::{Error, Result};

/// Flags for every open of a file pith writes: never through a symlink at the last component,
/// never blocking on a FIFO put in its place.
pub(crate) fn nofollow_flags() -> i32 {
    // The bits fit an i32 on every platform rustix supports.
    (OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC).bits() as i32
}

/// Opens `path` read-write without following a symlink and without creating it.
pub(crate) fn open_nofollow_rw(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nofollow_flags())
        .open(path)
}

/// Whether an open failed because the last component is a symlink (`O_NOFOLLOW`'s `ELOOP`).
pub(crate) fn is_symlink_error(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
}

/// `path` with every symlink resolved: the file pith actually writes. A path whose file does
/// not exist yet resolves its directory; a dangling symlink resolves to its target.
pub fn resolve(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    if let Ok(target) = std::fs::read_link(&absolute) {
        let target = match absolute.parent() {
            Some(dir) if target.is_relative() => dir.join(target),
            _ => target,
        };
        return resolve_missing(&target);
    }
    resolve_missing(&absolute)
}

fn resolve_missing(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .map(|d| d.join(name))
            .unwrap_or_else(|_| path.to_owned()),
        _ => path.to_owned(),
    }
}

/// Refuses a session file with more than one hard link: another name for the same file would
/// have another lock file, so two writers could append to it at once.
///
/// Errors: [`Error::HardLinked`]; a missing file is fine.
pub fn refuse_hard_links(real: &Path) -> Result<()> {
    match std::fs::symlink_metadata(real) {
        Ok(m) if m.is_file() && m.nlink() > 1 => Err(Error::HardLinked {
            path: real.to_owned(),
            links: m.nlink(),
        }),
        _ => Ok(()),
    }
}

/// An exclusive advisory lock (`flock`) on `<session file>.lock`, which holds the holder's pid.
///
/// A sidecar file rather than the session file itself, so that atomic rewrites (which
/// replace the session file's inode) never drop the lock. The OS releases it when the holder
/// exits, however it exits, so a dead process's lock is simply taken over. A clean release
/// removes the sidecar; a lock is only valid while its path still names the locked inode, so
/// removal cannot let two writers in.
///
/// The sidecar is opened without following symlinks and only used when it is a regular file
/// with one link: a `shared.jsonl.lock` shipped as a symlink (or hard link) to one of the
/// user's files is refused, never truncated, written or removed.
#[derive(Debug)]
pub struct WriterLock {
    file: File,
    path: PathBuf,
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // Still holding the lock here, so nobody else can be relying on this inode; the path
        // is only removed while it still names it.
        if same_file(&self.path, &self.file) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn same_file(path: &Path, file: &File) -> bool {
    match (std::fs::symlink_metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl WriterLock {
    /// Takes the lock of `session_file` without waiting. Symlinks in `session_file` are
    /// resolved first: one lock per file, however it is reached.
    ///
    /// Errors: [`Error::Locked`] when another open file description holds it (another
    /// process, or another writer in this one); [`Error::HardLinked`] for a session file or
    /// lock file with several links; [`Error::Symlink`] for a lock file that is a symlink;
    /// [`Error::NotAFile`] for one that is not a regular file; [`Error::Io`].
    pub fn acquire(session_file: &Path) -> Result<WriterLock> {
        let real = resolve(session_file);
        refuse_hard_links(&real)?;
        let mut name = real.file_name().unwrap_or_default().to_owned();
        name.push(".lock");
        let path = real.with_file_name(name);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::dirs::ensure_dir(dir)?;
        }
        let io = |e| Error::io(&path, e);
        // A holder that releases between our open and our lock has removed the file we
        // opened; try again on the new one.
        for _ in 0..8 {
            let opened = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(nofollow_flags())
                .open(&path);
            let mut file = match opened {
                Ok(f) => f,
                Err(e) if is_symlink_error(&e) => return Err(Error::Symlink(path)),
                Err(e) => return Err(io(e)),
            };
            let meta = file.metadata().map_err(io)?;
            if !meta.is_file() {
                return Err(Error::NotAFile(path));
            }
            if meta.nlink() > 1 {
                return Err(Error::HardLinked {
                    path,
                    links: meta.nlink(),
                });
            }
            match file.try_lock() {
                Ok(()) => {
                    if !same_file(&path, &file) {
                        continue;
                    }
                    // The pid is for the error message of a second writer; a full disk must not
                    // keep this one from working, so writing it is best effort.
                    let _ = file.set_len(0);
                    let _ = file.write_all(std::process::id().to_string().as_bytes());
                    return Ok(WriterLock { file, path });
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    // A sweep (`sweep_leftovers`) holds a stale lock for an instant before
                    // removing it; a removed lock file is no holder.
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    if !same_file(&path, &file) {
                        continue;
                    }
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
