//! Files that keep a command's whole output once it is too long to show (the bash tool's
//! `fullOutputPath`, user bash's `fullOutputPath`).
//!
//! pi writes them as `<tmpdir>/pi-bash-<16 hex>.log` and never removes them. pith writes them
//! into a folder of its own, one per process ([`OutputDir`]):
//!
//! - the folder is `<tmpdir>/pith-<pid>-<8 hex>/`, created on first use with mode 0700 (never
//!   an existing folder or link);
//! - each file is `pi-bash-<16 hex>.log` inside it (the name users know from pi), created
//!   with mode 0600, only if no file or link of that name exists (`O_CREAT|O_EXCL`,
//!   `O_NOFOLLOW`);
//! - **the folder and its files are removed when the process ends normally** (when the last
//!   [`OutputDir`] handle is dropped, i.e. when the session's tools go away). During the
//!   process the model can `read` a path from a result, as in pi; after it ends, paths in
//!   older session entries no longer exist. A pith killed by a signal leaves its folder,
//!   readable only by its user.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The folder a process's output files go to; cheap to clone (clones share the folder).
///
/// Created lazily by the first [`SpillFile::create`]; removed with everything in it when the
/// last clone is dropped.
#[derive(Debug, Clone)]
pub struct OutputDir {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Where the folder is made (the system temp directory, or a test's).
    parent: PathBuf,
    /// The folder, once made.
    made: Mutex<Option<PathBuf>>,
}

impl Default for OutputDir {
    fn default() -> Self {
        Self::new()
    }
}

impl OutputDir {
    /// A folder in the system temp directory (`$TMPDIR`, else `/tmp`).
    pub fn new() -> Self {
        Self::in_dir(std::env::temp_dir())
    }

    /// A folder in `parent` instead of the temp directory.
    pub fn in_dir(parent: impl Into<PathBuf>) -> Self {
        Self {
            inner: Arc::new(Inner {
                parent: parent.into(),
                made: Mutex::new(None),
            }),
        }
    }

    /// The folder, if a file was put in it already.
    pub fn path(&self) -> Option<PathBuf> {
        self.inner.made.lock().ok().and_then(|m| m.clone())
    }

    /// The folder, made now if needed.
    ///
    /// Errors: the parent is not writable, or (after retries) every fresh name was taken.
    fn ensure(&self) -> io::Result<PathBuf> {
        let mut made = self
            .inner
            .made
            .lock()
            .map_err(|_| io::Error::other("the output folder lock was poisoned"))?;
        if let Some(dir) = made.as_ref() {
            return Ok(dir.clone());
        }
        let pid = std::process::id();
        for _ in 0..16 {
            let dir = self
                .inner
                .parent
                .join(format!("pith-{pid}-{:08x}", fastrand::u32(..)));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    *made = Some(dir.clone());
                    return Ok(dir);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "no free name for the output folder",
        ))
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let Some(dir) = self.made.get_mut().ok().and_then(|m| m.take()) else {
            return;
        };
        // Only the folder this process made: a real directory (not a link) owned by us.
        let ours = std::fs::symlink_metadata(&dir)
            .is_ok_and(|m| m.is_dir() && m.uid() == rustix::process::geteuid().as_raw());
        if ours && let Err(e) = std::fs::remove_dir_all(&dir) {
            tracing::warn!(path = %dir.display(), error = %e, "could not remove the output folder");
        }
    }
}

/// An open output file.
#[derive(Debug)]
pub struct SpillFile {
    path: PathBuf,
    /// `None` after a write failed: the output is still shown, only the copy is incomplete.
    file: Option<BufWriter<File>>,
    /// Keeps the folder alive while the file is written.
    _dir: OutputDir,
}

impl SpillFile {
    /// Creates `<output dir>/<prefix>-<16 random hex digits>.log`, mode 0600, a fresh name
    /// (never an existing file, never through a link).
    ///
    /// Errors: the folder cannot be made or the file cannot be created.
    pub fn create(dir: &OutputDir, prefix: &str) -> io::Result<Self> {
        let folder = dir.ensure()?;
        loop {
            let path = folder.join(format!("{prefix}-{:016x}.log", fastrand::u64(..)));
            let opened = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
                .open(&path);
            match opened {
                Ok(file) => {
                    return Ok(Self {
                        path,
                        file: Some(BufWriter::new(file)),
                        _dir: dir.clone(),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `bytes`; a failure is logged once and later writes are skipped.
    pub fn write(&mut self, bytes: &[u8]) {
        if let Some(f) = self.file.as_mut()
            && let Err(e) = f.write_all(bytes)
        {
            tracing::warn!(path = %self.path.display(), error = %e, "could not write the full output file");
            self.file = None;
        }
    }

    /// Flushes what was written.
    pub fn close(&mut self) {
        if let Some(mut f) = self.file.take()
            && let Err(e) = f.flush()
        {
            tracing::warn!(path = %self.path.display(), error = %e, "could not write the full output file");
        }
    }
}
