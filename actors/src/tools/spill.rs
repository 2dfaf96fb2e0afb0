//! The file that keeps a command's whole output once it is too long to show: pi names it
//! `<tmpdir>/pi-bash-<16 hex>.log`, and pith keeps that name so users recognise it.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// An open spill file.
#[derive(Debug)]
pub struct SpillFile {
    path: PathBuf,
    /// `None` after a write failed: the output is still shown, only the copy is incomplete.
    file: Option<BufWriter<File>>,
}

impl SpillFile {
    /// Creates `<tmpdir>/<prefix>-<16 random hex digits>.log` (a fresh name; never an
    /// existing file).
    ///
    /// Errors: the temp directory is not writable.
    pub fn create(prefix: &str) -> io::Result<Self> {
        let dir = std::env::temp_dir();
        loop {
            let path = dir.join(format!("{prefix}-{:016x}.log", fastrand::u64(..)));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => {
                    return Ok(Self {
                        path,
                        file: Some(BufWriter::new(file)),
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
