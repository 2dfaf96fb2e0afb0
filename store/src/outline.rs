//! Session outlines: what opening a large session for one context learns from reading every
//! line (the header, each entry with its large message bodies left out, the skipped lines,
//! the file's tail facts), kept under pith's agent directory so that the next open of the
//! unchanged file reads the outline and then only the bodies its context needs (issue 17
//! item 4: reading and checking every line was nearly all of opening a 100 MiB session).
//!
//! The JSONL file stays the truth. An outline is used only while the file's device, inode,
//! size, mtime and ctime all equal what they were when it was read, and the bodies read back
//! for a context are checked against it (`session/context_view.rs`). Outlines are written
//! only for files whose mtime and ctime are [`SETTLED`] old (a change within the same
//! timestamp tick as the read would go unseen) and only when the file's stamp is the same
//! before and after the read. An outline carries a CRC-32 of its content and every offset in
//! it is checked against the file's size: a damaged outline is read past, never trusted. A missing, corrupt or other-format outline is ignored and replaced; one that cannot
//! be written is not kept. At most [`KEPT`] outlines are kept, the oldest removed first.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::entry::Entry;
use crate::header::Header;
use crate::load::{Elided, LoadedLog, Warning};
use crate::migrate::Migration;
use crate::reader::ReadSummary;

/// Files smaller than this (bytes) are read whole each time: the outline would save little.
pub const FROM_BYTES: u64 = 16 << 20;

/// How many outlines are kept (one per large session file).
pub const KEPT: usize = 8;

/// How long a file must have been unchanged (by mtime and ctime) before its outline is kept.
pub const SETTLED: Duration = Duration::from_secs(2);

/// Bumped whenever the outline's fields change meaning; another format is ignored.
const FORMAT: u32 = 1;

/// What identifies one version of a file: an outline holds for the file only while all of it
/// is unchanged. Times are (seconds, nanoseconds) since 1970.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    /// The stamp of a file's metadata (symbolic links followed, as `std::fs::metadata` does).
    pub fn of(meta: &Metadata) -> FileStamp {
        FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether both the mtime and the ctime are at least [`SETTLED`] before `now`: a change
    /// after that moves the ctime to a later tick, so it cannot go unseen, even where
    /// timestamps count whole seconds and the mtime was set back.
    pub fn settled(&self, now: SystemTime) -> bool {
        let Ok(since) = now.duration_since(SystemTime::UNIX_EPOCH) else {
            return false;
        };
        let old_enough = |(secs, nanos): (i64, i64)| {
            u64::try_from(secs).is_ok_and(|secs| {
                Duration::new(secs, u32::try_from(nanos).unwrap_or(0)) + SETTLED <= since
            })
        };
        old_enough(self.mtime) && old_enough(self.ctime)
    }
}

#[derive(Serialize, Deserialize)]
struct OutlineFile {
    format: u32,
    /// The file's canonical path (the outline's name is only its hash).
    path: String,
    stamp: FileStamp,
    header: String,
    /// Each entry's line number and text as loaded (large bodies cut, see
    /// [`crate::load::Bodies::Elided`]).
    entries: Vec<(usize, String)>,
    warnings: Vec<(usize, String)>,
    /// [`ReadSummary`]: bytes, ends_with_newline, has_content, lines, trimmed_last.
    summary: (u64, bool, bool, usize, bool),
    /// [`Elided`]: index, offset, len.
    elided: Vec<(usize, u64, usize)>,
}

/// Where the outline of the file at `path` lives: `<agent_dir>/index/outlines/<hash>.bin`,
/// the hash of its canonical path.
fn outline_path(agent_dir: &Path, canonical: &str) -> PathBuf {
    let hash = crate::dirs::path_hash(canonical);
    outlines_dir(agent_dir).join(format!("{hash:016x}.bin"))
}

fn outlines_dir(agent_dir: &Path) -> PathBuf {
    agent_dir.join("index").join("outlines")
}

fn canonical(path: &Path) -> Option<String> {
    Some(
        std::fs::canonicalize(path)
            .ok()?
            .to_string_lossy()
            .into_owned(),
    )
}

/// The load of `path` (without a migration, large bodies left out as
/// [`crate::load::Bodies::for_outline`] leaves them out) from its outline, when one is kept
/// for exactly this `stamp`; `None` otherwise.
pub fn read(agent_dir: &Path, path: &Path, stamp: FileStamp) -> Option<LoadedLog> {
    let canonical = canonical(path)?;
    let bytes = std::fs::read(outline_path(agent_dir, &canonical)).ok()?;
    let (content, sum) = bytes.split_last_chunk::<4>()?;
    if crc32fast::hash(content) != u32::from_le_bytes(*sum) {
        return None;
    }
    let (file, _) =
        bincode::serde::decode_from_slice::<OutlineFile, _>(content, bincode::config::standard())
            .ok()?;
    if file.format != FORMAT || file.path != canonical || file.stamp != stamp {
        return None;
    }
    drop(bytes);
    let in_file = |&(index, offset, len): &(usize, u64, usize)| {
        index < file.entries.len()
            && u64::try_from(len)
                .ok()
                .and_then(|len| offset.checked_add(len))
                .is_some_and(|end| end <= stamp.size)
    };
    if !file.elided.iter().all(in_file) {
        return None;
    }
    let header = Header::parse(&file.header).ok()?;
    let entries = entries_of(&file.entries)?;
    let (bytes, ends_with_newline, has_content, lines, trimmed_last) = file.summary;
    Some(LoadedLog {
        header,
        entries,
        warnings: file
            .warnings
            .into_iter()
            .map(|(line, problem)| Warning { line, problem })
            .collect(),
        summary: ReadSummary {
            bytes,
            ends_with_newline,
            has_content,
            lines,
            trimmed_last,
        },
        migration: Migration::default(),
        rewrite: None,
        elided: file
            .elided
            .into_iter()
            .map(|(index, offset, len)| Elided { index, offset, len })
            .collect(),
    })
}

/// The entries of an outline's texts, on two threads (scanning them again was most of
/// reading an outline); `None` if one is not an entry (the outline is damaged).
fn entries_of(texts: &[(usize, String)]) -> Option<Vec<Entry>> {
    let parse = |part: &[(usize, String)]| -> Option<Vec<Entry>> {
        part.iter()
            .map(|(line, text)| Entry::parse(text, *line).ok())
            .collect()
    };
    let (first, second) = texts.split_at(texts.len() / 2);
    let (a, b) = std::thread::scope(|scope| {
        let b = scope.spawn(|| parse(second));
        let a = parse(first);
        // Parsing cannot panic on any text; if it did, parsing here again is the fallback.
        (a, b.join().unwrap_or_else(|_| parse(second)))
    });
    let (mut a, b) = (a?, b?);
    a.extend(b);
    Some(a)
}

/// Keeps the outline of `log`, the load of `path` at `stamp` without a migration and with
/// large bodies left out, unless `stamp` is not [`FileStamp::settled`]; then removes the
/// oldest outlines beyond [`KEPT`]. Failing to write loses nothing: the next open reads the
/// file again.
pub fn keep(agent_dir: &Path, path: &Path, stamp: FileStamp, log: &LoadedLog) {
    if log.rewrite.is_some() || log.migration.ran() || !stamp.settled(SystemTime::now()) {
        return;
    }
    let Some(canonical) = canonical(path) else {
        return;
    };
    let s = &log.summary;
    let file = OutlineFile {
        format: FORMAT,
        path: canonical.clone(),
        stamp,
        header: log.header.raw().to_owned(),
        entries: log
            .entries
            .iter()
            .map(|e| (e.line(), e.raw().to_owned()))
            .collect(),
        warnings: log
            .warnings
            .iter()
            .map(|w| (w.line, w.problem.clone()))
            .collect(),
        summary: (
            s.bytes,
            s.ends_with_newline,
            s.has_content,
            s.lines,
            s.trimmed_last,
        ),
        elided: log
            .elided
            .iter()
            .map(|e| (e.index, e.offset, e.len))
            .collect(),
    };
    let Ok(mut bytes) = bincode::serde::encode_to_vec(&file, bincode::config::standard()) else {
        return;
    };
    let sum = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&sum.to_le_bytes());
    if crate::dirs::keep_cache(&outline_path(agent_dir, &canonical), &bytes) {
        prune(&outlines_dir(agent_dir));
    }
}

/// Removes the least recently written outlines beyond [`KEPT`], and temporary files a
/// killed writer left behind ([`crate::dirs::CACHE_TEMP_PREFIX`], an hour old).
fn prune(dir: &Path) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    let mut outlines: Vec<(SystemTime, PathBuf)> = Vec::new();
    for e in read.filter_map(Result::ok) {
        let Some(modified) = e.metadata().ok().and_then(|m| m.modified().ok()) else {
            continue;
        };
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".bin") {
            outlines.push((modified, e.path()));
        } else if name.starts_with(crate::dirs::CACHE_TEMP_PREFIX)
            && now
                .duration_since(modified)
                .is_ok_and(|age| age > Duration::from_secs(3600))
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
    if outlines.len() <= KEPT {
        return;
    }
    outlines.sort_by_key(|o| std::cmp::Reverse(o.0));
    for (_, path) in outlines.drain(KEPT..) {
        let _ = std::fs::remove_file(path);
    }
}
