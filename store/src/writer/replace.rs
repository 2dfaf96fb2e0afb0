//! Whole-file writes that never go through a symlink: a temporary file beside the target,
//! fsync, rename, fsync of the directory (spec: divergences.md "Writing", migration rewrite).
//! Also the sweep of what a killed writer leaves behind.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};

/// Prefix of pith's temporary files; [`sweep_leftovers`] removes abandoned ones.
pub const TEMP_PREFIX: &str = ".pith-";
/// Suffix of pith's temporary files.
pub const TEMP_SUFFIX: &str = ".tmp";

/// What [`replace_file`] may find at the target before renaming onto it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// Nothing, or a regular file (an export overwriting an older export, a migration of the
    /// session's own file). A symlink is refused.
    RegularOrNothing,
    /// Nothing at all: the rename fails with [`Error::Io`] (`AlreadyExists`) when anything is
    /// there, even when it appeared during the write.
    Nothing,
}

/// Writes a new file at `path` through `write` (into a buffered temporary file beside it),
/// fsyncs it, renames it onto `path` and fsyncs the directory: readers see the old or the new
/// file, never a mix. The file is 0600. The temporary file holds an advisory lock while it is
/// written, so [`sweep_leftovers`] never removes one in use.
///
/// `path` itself is never followed: a symlink there is refused ([`Error::Symlink`]), as is a
/// directory, FIFO or device ([`Error::NotAFile`]); `replace` says whether an existing regular
/// file may be replaced.
///
/// Errors: those above, [`Error::Io`] (also for what `write` returns); `path` is untouched
/// whenever an error is returned.
pub fn replace_file(
    path: &Path,
    replace: Replace,
    write: impl FnOnce(&mut BufWriter<&File>) -> std::io::Result<()>,
) -> Result<()> {
    check_target(path)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    crate::dirs::ensure_dir(&dir)?;
    let io = |e| Error::io(path, e);
    // tempfile creates with O_CREAT|O_EXCL, which never follows a symlink.
    let tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .tempfile_in(&dir)
        .map_err(io)?;
    // Best effort: a file system without flock still gets the write, and the sweep's age
    // check keeps young files.
    let _ = tmp.as_file().try_lock();
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(io)?;
    {
        let mut w = BufWriter::with_capacity(1 << 16, tmp.as_file());
        write(&mut w).map_err(io)?;
        w.flush().map_err(io)?;
    }
    tmp.as_file().sync_all().map_err(io)?;
    match replace {
        Replace::RegularOrNothing => {
            // Checked again just before the rename: rename replaces a symlink rather than
            // following it, so the worst a race can do is replace the link itself.
            check_target(path)?;
            tmp.persist(path).map_err(|e| io(e.error))?;
        }
        Replace::Nothing => {
            tmp.persist_noclobber(path).map_err(|e| io(e.error))?;
        }
    }
    File::open(&dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(&dir, e))?;
    Ok(())
}

/// Writes `lines` (each followed by `\n`) as [`replace_file`] does, replacing a regular file.
///
/// Errors: as [`replace_file`].
pub fn atomic_write<'a>(path: &Path, lines: impl IntoIterator<Item = &'a str>) -> Result<()> {
    replace_file(path, Replace::RegularOrNothing, |w| write_lines(w, lines))
}

/// `lines`, each followed by `\n`.
pub(crate) fn write_lines<'a>(
    w: &mut impl Write,
    lines: impl IntoIterator<Item = &'a str>,
) -> std::io::Result<()> {
    for line in lines {
        w.write_all(line.as_bytes())?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

fn check_target(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(Error::Symlink(path.to_owned())),
        Ok(m) if !m.is_file() => Err(Error::NotAFile(path.to_owned())),
        _ => Ok(()),
    }
}

/// How old an unlocked temporary file must be before [`sweep_leftovers`] removes it: the
/// window between its creation and its lock is far shorter.
const TEMP_GRACE: Duration = Duration::from_secs(60);

/// Removes what killed pith processes left in `dir`: temporary files of [`replace_file`]
/// (`.pith-*.tmp`) that nobody holds and that are older than a minute, and writer lock files
/// (`*.jsonl.lock`) that nobody holds. Only regular files with one link, owned by this user,
/// are removed; nothing else in `dir` is looked at twice. Returns how many were removed.
///
/// Best effort: errors only mean less is removed.
pub fn sweep_leftovers(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let uid = rustix::process::geteuid().as_raw();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let temp = name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX);
        let lock = name.ends_with(".jsonl.lock");
        if !temp && !lock {
            continue;
        }
        let path = entry.path();
        let Ok(file) = super::lock::open_nofollow_rw(&path) else {
            continue;
        };
        let Ok(meta) = file.metadata() else { continue };
        if !meta.is_file() || meta.nlink() != 1 || meta.uid() != uid {
            continue;
        }
        if temp
            && meta
                .modified()
                .ok()
                .and_then(|m| SystemTime::now().duration_since(m).ok())
                .is_none_or(|age| age < TEMP_GRACE)
        {
            continue;
        }
        if file.try_lock().is_err() {
            continue;
        }
        // Holding the lock, and the path still names this inode: nobody is using it.
        if std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.ino() == meta.ino() && m.dev() == meta.dev())
            && std::fs::remove_file(&path).is_ok()
        {
            removed += 1;
        }
    }
    removed
}
