//! Session outlines: what opening a large session learns from reading every line (the
//! header, each entry with its large message bodies left out, the skipped lines, the file's
//! tail facts), kept under pith's agent directory so that the next open reads the outline,
//! then only the lines appended since and the bodies its context needs (issue 17 item 4:
//! reading and checking every line was nearly all of opening or resuming a 100 MiB session).
//!
//! The JSONL file stays the truth. An outline records the CRC-32 of the bytes it was read
//! from (computed as they were read) and holds for the same file (device and inode) while
//! the file still starts with those bytes: the checksum is compared, unless the file's size,
//! mtime and ctime are all what they were and were [`SETTLED`] when the outline was read (a
//! change after that moves the ctime to a later tick). A file that only grew (pi and pith
//! append) is read from where the outline ends. Bodies read back are checked to be the same
//! entries (`entry/body_in_file.rs`). An outline carries a
//! CRC-32 of its own content and every offset in it is checked against the bytes it covers:
//! a damaged outline is read past, never trusted. A missing, corrupt or other-format outline
//! is ignored and replaced; one that cannot be written is not kept. At most [`KEPT`]
//! outlines are kept, the oldest removed first.

use std::fs::{File, Metadata};
use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::entry::{Entry, Held};
use crate::header::Header;
use crate::load::{Bodies, Elided, Loaded, LoadedLog, Warning};
use crate::migrate::Migration;
use crate::reader::ReadSummary;

/// Files smaller than this (bytes) are read whole each time: the outline would save little.
pub const FROM_BYTES: u64 = 16 << 20;

/// How many outlines are kept (one per large session file).
pub const KEPT: usize = 8;

/// How long a file must have been unchanged (by mtime and ctime) for an unchanged stamp to
/// prove it unchanged, without comparing its checksum.
pub const SETTLED: Duration = Duration::from_secs(2);

/// Bumped whenever the outline's fields change meaning; another format is ignored.
const FORMAT: u32 = 3;

/// An outline that needed this many bytes (or more) appended to it read is kept again, so
/// that the next open reads only what comes after them.
pub const KEEP_AGAIN_FROM: u64 = 1 << 20;

/// A file's device, inode, size, mtime and ctime: an outline holds without its checksum
/// compared only while all of them are unchanged (see the module docs). Times are (seconds,
/// nanoseconds) since 1970.
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
struct OutlineFile<'a> {
    format: u32,
    /// The file's canonical path (the outline's name is only its hash).
    path: String,
    /// The file's stamp taken before it was read.
    stamp: FileStamp,
    /// Whether `stamp` was [`FileStamp::settled`] when it was taken: then a file with the
    /// same stamp is the same file, and the checksum need not be compared.
    settled: bool,
    /// CRC-32 of the `summary.0` bytes the entries were read from.
    checksum: u32,
    header: &'a str,
    /// Each entry as loaded (large bodies cut, see [`crate::load::Bodies::Elided`]), with
    /// its eager members.
    #[serde(borrow)]
    entries: Vec<Held<'a>>,
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

/// A large session file opened through its outline.
#[derive(Debug)]
pub struct Outlined {
    /// The load, with large bodies left out ([`crate::load::Bodies::for_outline`]); a file
    /// that needs a migration is loaded as it is, its rewrite still to be written.
    pub loaded: Loaded,
    /// The file the load was read from, for reading bodies back.
    pub file: File,
}

/// Opens `path` through its outline under `agent_dir` when one holds ([`read`]), else by
/// reading the file with large bodies left out and keeping its outline ([`keep`]); `None`
/// for a file under [`FROM_BYTES`] or not a regular file (or not there: the caller's own
/// load reports it).
///
/// Errors: as [`crate::load::load_file`].
pub fn open(
    agent_dir: &Path,
    path: &Path,
    new_id: &mut dyn FnMut() -> String,
) -> crate::Result<Option<Outlined>> {
    // Opening a FIFO would block: only a large regular file is opened here.
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() >= FROM_BYTES) {
        return Ok(None);
    }
    // Non-blocking: a FIFO put at the path since the check must not block the open (the
    // flag changes nothing for a regular file's reads).
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path);
    let Ok(file) = opened else {
        return Ok(None);
    };
    let Some(meta) = file
        .metadata()
        .ok()
        .filter(|m| m.is_file() && m.len() >= FROM_BYTES)
    else {
        return Ok(None);
    };
    let stamp = FileStamp::of(&meta);
    let settled = stamp.settled(SystemTime::now());
    if let Some(log) = read(agent_dir, path, &file, (stamp, settled)) {
        return Ok(Some(Outlined {
            loaded: Loaded::Log(Box::new(log)),
            file,
        }));
    }
    let loaded =
        crate::load::load_open_file(&file, stamp.size, path, Bodies::for_outline(), new_id)?;
    if let Loaded::Log(log) = &loaded {
        keep(agent_dir, path, (stamp, settled), log);
    }
    Ok(Some(Outlined { loaded, file }))
}

/// The load of `path`, open as `file` with `stamp` (taken before anything was read), from
/// its outline (without a migration, large bodies left out as
/// [`crate::load::Bodies::for_outline`] leaves them out); `None` when no outline holds.
///
/// `settled` says whether `stamp` was [`FileStamp::settled`] when taken.
///
/// An outline holds for the same file (device and inode) when its stamp is unchanged and
/// was settled when taken, or else when the file still starts with the bytes the outline
/// was read from (their CRC-32 compared): then only the lines appended after them are
/// read. The outline is kept again when those were [`KEEP_AGAIN_FROM`] bytes or more.
pub fn read(
    agent_dir: &Path,
    path: &Path,
    file: &File,
    (stamp, settled): (FileStamp, bool),
) -> Option<LoadedLog> {
    let canonical = canonical(path)?;
    let bytes = std::fs::read(outline_path(agent_dir, &canonical)).ok()?;
    let (content, sum) = bytes.split_last_chunk::<4>()?;
    if crc32fast::hash(content) != u32::from_le_bytes(*sum) {
        return None;
    }
    let (outline, _) = bincode::serde::borrow_decode_from_slice::<OutlineFile<'_>, _>(
        content,
        bincode::config::standard(),
    )
    .ok()?;
    if outline.format != FORMAT
        || outline.path != canonical
        || (outline.stamp.dev, outline.stamp.ino) != (stamp.dev, stamp.ino)
    {
        return None;
    }
    let (covered, ends_with_newline, has_content, lines, trimmed_last) = outline.summary;
    let unchanged = outline.settled && outline.stamp == stamp;
    // Lines after the outline's are read as a part of the file read from a line boundary,
    // which a torn or trimmed last line is not.
    let grown = stamp.size > covered;
    if !unchanged && (stamp.size < covered || (grown && (!ends_with_newline || trimmed_last))) {
        return None;
    }
    let in_file = |&(index, offset, len): &(usize, u64, usize)| {
        index < outline.entries.len()
            && u64::try_from(len)
                .ok()
                .and_then(|len| offset.checked_add(len))
                .is_some_and(|end| end <= covered)
    };
    if !outline.elided.iter().all(in_file) {
        return None;
    }
    let header = Header::parse(outline.header).ok()?;
    // Comparing the checksum reads the whole covered part: on its own thread, beside
    // reading the entries back.
    let (entries, same) = std::thread::scope(|scope| {
        let same = (!unchanged).then(|| scope.spawn(|| checksum_of(file, covered)));
        let entries = entries_of(&outline.entries);
        let same = same.is_none_or(|t| {
            t.join()
                .ok()
                .and_then(Result::ok)
                .is_some_and(|sum| sum == outline.checksum)
        });
        (entries, same)
    });
    if !same {
        return None;
    }
    let mut log = LoadedLog {
        header,
        entries: entries?,
        warnings: outline
            .warnings
            .into_iter()
            .map(|(line, problem)| Warning { line, problem })
            .collect(),
        summary: ReadSummary {
            bytes: covered,
            ends_with_newline,
            has_content,
            lines,
            trimmed_last,
        },
        migration: Migration::default(),
        rewrite: None,
        elided: outline
            .elided
            .into_iter()
            .map(|(index, offset, len)| Elided { index, offset, len })
            .collect(),
        checksum: Some(outline.checksum),
    };
    if !unchanged && grown {
        let part = crate::load::read_part(file, covered, stamp.size, Bodies::for_outline()).ok()?;
        let head = crc32fast::Hasher::new_with_initial_len(outline.checksum, covered);
        crate::load::append_part(&mut log, Some(head), part, covered);
        if stamp.size - covered >= KEEP_AGAIN_FROM {
            keep(agent_dir, path, (stamp, settled), &log);
        }
    }
    Some(log)
}

/// The CRC-32 of the first `len` bytes of `file`.
fn checksum_of(file: &File, len: u64) -> std::io::Result<u32> {
    let mut hasher = crc32fast::Hasher::new();
    // Small enough to stay in the cache between the read's copy and the sum.
    let mut buf = vec![0u8; 256 << 10];
    let mut pos = 0;
    while pos < len {
        let want = usize::try_from(len - pos).map_or(buf.len(), |left| left.min(buf.len()));
        let n = file.read_at(&mut buf[..want], pos)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        hasher.update(&buf[..n]);
        pos += n as u64;
    }
    Ok(hasher.finalize())
}

/// The entries an outline held, on two threads (reading them back was most of reading an
/// outline); `None` if one is damaged.
fn entries_of(held: &[Held<'_>]) -> Option<Vec<Entry>> {
    let make =
        |part: &[Held<'_>]| -> Option<Vec<Entry>> { part.iter().map(Entry::from_held).collect() };
    let (first, second) = held.split_at(held.len() / 2);
    let (a, b) = std::thread::scope(|scope| {
        let b = scope.spawn(|| make(second));
        let a = make(first);
        // Making entries cannot panic; if it did, making them here again is the fallback.
        (a, b.join().unwrap_or_else(|_| make(second)))
    });
    let (a, b) = (a?, b?);
    // Sized once, with the tree's room to grow.
    let mut all = Vec::with_capacity(held.len() + crate::tree::headroom(held.len()));
    all.extend(a);
    all.extend(b);
    Some(all)
}

/// Keeps the outline of `log`, the load of `path` (its `stamp` taken before the read, and
/// whether it was [`FileStamp::settled`] then) without a migration, with large bodies left
/// out and with its [`LoadedLog::checksum`]; then removes the oldest outlines beyond
/// [`KEPT`]. Failing to write loses nothing: the next open reads the file again.
pub fn keep(agent_dir: &Path, path: &Path, (stamp, settled): (FileStamp, bool), log: &LoadedLog) {
    let Some(checksum) = log.checksum else {
        return;
    };
    if log.rewrite.is_some() || log.migration.ran() {
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
        settled,
        checksum,
        header: log.header.raw(),
        entries: log.entries.iter().map(Entry::held).collect(),
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
