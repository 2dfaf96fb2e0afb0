//! Reading the small files pith takes configuration and context from (`settings.json`,
//! `models.json`, `auth.json`, `AGENTS.md`/`CLAUDE.md`, a `--faux-script`), with a size limit
//! and regular files only.
//!
//! These files can come from a repository the user just cloned: a symlink to `/dev/zero`
//! would otherwise grow memory without bound, and a FIFO would hang startup. So the path is
//! checked with `stat` (symlinks resolved) before it is opened, opened with `O_NONBLOCK` (a
//! FIFO swapped in between cannot block the open), checked again with `fstat` on what was
//! opened, and read up to the limit only.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

/// Limit for `settings.json`, `models.json` and `auth.json`: 4 MiB.
pub const CONFIG_MAX_BYTES: u64 = 4 << 20;
/// Limit for one context file (`AGENTS.md`, `CLAUDE.md`): 1 MiB, far more than any model's
/// context window holds anyway.
pub const CONTEXT_MAX_BYTES: u64 = 1 << 20;
/// Limit for a `--faux-script` replay: 64 MiB.
pub const SCRIPT_MAX_BYTES: u64 = 64 << 20;

/// Why a configuration or context file was not read. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The path (after resolving symlinks) is not a regular file.
    #[error("{}: not a regular file (a {kind}); pith reads configuration and context only from regular files", path.display())]
    NotAFile {
        /// The file.
        path: PathBuf,
        /// `directory`, `FIFO`, `character device`, `block device` or `socket`.
        kind: &'static str,
    },
    /// The file is larger than its limit.
    #[error("{}: larger than the {max}-byte limit for this file ({size} bytes or more); it is not read", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes (at least this many when it grew while being read).
        size: u64,
        /// The limit in bytes.
        max: u64,
    },
}

/// Reads the regular file at `path` (symlinks followed) if it exists, up to `max` bytes.
///
/// Returns `Ok(None)` when nothing exists at `path` (a dangling symlink included).
///
/// Errors: [`ConfigFileError::NotAFile`] for a directory, FIFO, device or socket (never opened
/// in a way that blocks), [`ConfigFileError::TooLarge`] past `max` bytes,
/// [`ConfigFileError::Io`] otherwise.
pub fn read_limited(path: &Path, max: u64) -> Result<Option<Vec<u8>>, ConfigFileError> {
    let io = |source: std::io::Error| ConfigFileError::Io {
        path: path.to_owned(),
        source,
    };
    match std::fs::metadata(path) {
        Ok(meta) => check_kind(path, &meta)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    }
    let fd = match rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(e) if e == rustix::io::Errno::NOENT => return Ok(None),
        Err(e) => return Err(io(e.into())),
    };
    let file = File::from(fd);
    let meta = file.metadata().map_err(io)?;
    check_kind(path, &meta)?;
    if meta.len() > max {
        return Err(ConfigFileError::TooLarge {
            path: path.to_owned(),
            size: meta.len(),
            max,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > max {
        return Err(ConfigFileError::TooLarge {
            path: path.to_owned(),
            size: bytes.len() as u64,
            max,
        });
    }
    Ok(Some(bytes))
}

/// [`read_limited`] as text; invalid UTF-8 becomes U+FFFD (as `String::from_utf8_lossy`).
///
/// Errors: as [`read_limited`].
pub fn read_text_limited(path: &Path, max: u64) -> Result<Option<String>, ConfigFileError> {
    Ok(
        read_limited(path, max)?.map(|b| match String::from_utf8(b) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }),
    )
}

fn check_kind(path: &Path, meta: &std::fs::Metadata) -> Result<(), ConfigFileError> {
    let t = meta.file_type();
    let kind = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    };
    Err(ConfigFileError::NotAFile {
        path: path.to_owned(),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_whole_and_missing_ones_are_none() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(
            read_limited(&file, 10).unwrap().as_deref(),
            Some(&b"{}"[..])
        );
        assert!(
            read_limited(&dir.path().join("none"), 10)
                .unwrap()
                .is_none()
        );
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("gone"), &dangling).unwrap();
        assert!(read_limited(&dangling, 10).unwrap().is_none());
    }

    #[test]
    fn a_symlink_to_dev_zero_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("AGENTS.md");
        std::os::unix::fs::symlink("/dev/zero", &file).unwrap();
        let err = read_limited(&file, CONTEXT_MAX_BYTES).unwrap_err();
        assert!(matches!(
            err,
            ConfigFileError::NotAFile {
                kind: "character device",
                ..
            }
        ));
        assert!(
            err.to_string()
                .starts_with(&format!("{}: not a regular file", file.display()))
        );
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &file,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let err = read_limited(&file, CONFIG_MAX_BYTES).unwrap_err();
        assert!(
            matches!(err, ConfigFileError::NotAFile { kind: "FIFO", .. }),
            "{err}"
        );
    }

    #[test]
    fn a_file_over_the_limit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("models.json");
        std::fs::write(&file, vec![b' '; 11]).unwrap();
        let err = read_limited(&file, 10).unwrap_err();
        assert!(matches!(
            err,
            ConfigFileError::TooLarge {
                size: 11,
                max: 10,
                ..
            }
        ));
        assert_eq!(read_limited(&file, 11).unwrap().map(|b| b.len()), Some(11));
    }
}
