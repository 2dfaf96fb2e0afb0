//! A message body left in the session file: an entry opened without it (issue 17 item 4:
//! holding every body of a 100 MiB session costs the file's size again in memory, and a
//! resumed session's context reads only those on its path) reads it back on first use.
//!
//! The file stays open while any entry refers to it, so a file replaced by a rename (pi's
//! and pith's atomic rewrites) still reads as it was; a body read back is checked to be the
//! same entry (id, parent and type), so a file changed in place is noticed, never trusted.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::{Entry, same_entry};

/// The open session file the bodies of a session's entries are read back from.
#[derive(Debug)]
pub struct BodySource {
    file: File,
    path: PathBuf,
}

impl BodySource {
    /// `file`, opened from `path` (which only names it in errors).
    pub fn new(file: File, path: &Path) -> Arc<BodySource> {
        Arc::new(BodySource {
            file,
            path: path.to_owned(),
        })
    }
}

/// Where one entry's whole line is, and the line once read back.
#[derive(Debug)]
pub(super) struct BodyInFile {
    source: Arc<BodySource>,
    offset: u64,
    len: usize,
    /// The whole entry; `None` when reading it back failed. Boxed: most bodies are never
    /// read back, and a resume makes one of these for most entries of a large session.
    whole: OnceLock<Option<Box<Entry>>>,
}

impl BodyInFile {
    pub(super) fn new(source: Arc<BodySource>, offset: u64, len: usize) -> BodyInFile {
        BodyInFile {
            source,
            offset,
            len,
            whole: OnceLock::new(),
        }
    }

    /// The whole entry `cut` stands for, read back on the first call.
    pub(super) fn whole(&self, cut: &Entry) -> Option<&Entry> {
        self.whole
            .get_or_init(|| {
                let whole = self.read(cut);
                if whole.is_none() {
                    tracing::warn!(
                        path = %self.source.path.display(),
                        line = cut.line(),
                        "a message body is no longer in the session file as it was read"
                    );
                }
                whole.map(Box::new)
            })
            .as_deref()
    }

    fn read(&self, cut: &Entry) -> Option<Entry> {
        let mut buf = vec![0u8; self.len];
        self.source.file.read_exact_at(&mut buf, self.offset).ok()?;
        whole_of(&buf, cut)
    }

    pub(super) fn is_read(&self) -> bool {
        self.whole.get().is_some()
    }

    fn source_id(&self) -> *const BodySource {
        Arc::as_ptr(&self.source)
    }

    pub(super) fn changed(&self) -> crate::Error {
        crate::Error::BodyChanged {
            path: self.source.path.clone(),
            offset: self.offset,
        }
    }
}

/// Most bytes one read of several bodies spans.
const READ_RUN_BYTES: u64 = 1 << 20;
/// Most bytes between two bodies read in one go (read and dropped).
const READ_GAP_BYTES: u64 = 16 << 10;
/// Bodies of this many bytes and more are read back on two threads.
const TWO_THREADS_FROM: usize = 4 << 20;

/// Reads back at once the bodies of `entries` that are still in their file: nearby lines
/// in one read ([`READ_RUN_BYTES`] at most, gaps under [`READ_GAP_BYTES`]), and on two
/// threads when there is much to read (checking a body is most of the time: a context can
/// hold 20 MiB of them). One read per body was thousands of system calls for a 100 MiB
/// session. Returns `false` when one is no longer in the file as it was read.
///
/// Errors: [`crate::Error::Io`] reading the file.
pub(crate) fn read_back_all<'a>(
    entries: impl IntoIterator<Item = &'a Entry>,
) -> crate::Result<bool> {
    let mut wanted: Vec<(&BodyInFile, &Entry)> = entries
        .into_iter()
        .filter_map(|e| {
            e.in_file
                .as_deref()
                .filter(|b| !b.is_read())
                .map(|b| (b, e))
        })
        .collect();
    wanted.sort_by_key(|(b, _)| (b.source_id(), b.offset));
    let bytes: usize = wanted.iter().map(|(b, _)| b.len).sum();
    let split = if bytes >= TWO_THREADS_FROM {
        let mut seen = 0;
        wanted
            .iter()
            .position(|(b, _)| {
                seen += b.len;
                seen >= bytes / 2
            })
            .map_or(wanted.len(), |i| i + 1)
    } else {
        wanted.len()
    };
    let (first, second) = wanted.split_at(split);
    std::thread::scope(|scope| {
        let b = (!second.is_empty()).then(|| scope.spawn(|| read_runs(second)));
        let a = read_runs(first);
        // The thread only reads; a panic there is a bug to surface, not to hide.
        let b = b.map_or(Ok(true), |t| {
            t.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        });
        Ok(a? && b?)
    })
}

/// [`read_back_all`] on one thread, `wanted` in file order.
fn read_runs(wanted: &[(&BodyInFile, &Entry)]) -> crate::Result<bool> {
    let mut buf = Vec::new();
    let mut rest = wanted;
    while let Some((first, _)) = rest.first() {
        // The run: bodies from `first` on that start soon after the previous one ends.
        let mut end = first.offset + first.len as u64;
        let mut n = 1;
        while let Some((next, _)) = rest.get(n) {
            let next_end = next.offset + next.len as u64;
            if next.source_id() != first.source_id()
                || next.offset < end
                || next.offset - end > READ_GAP_BYTES
                || next_end - first.offset > READ_RUN_BYTES
            {
                break;
            }
            end = next_end;
            n += 1;
        }
        let (run, after) = rest.split_at(n);
        rest = after;
        buf.resize(usize::try_from(end - first.offset).unwrap_or(usize::MAX), 0);
        match first.source.file.read_exact_at(&mut buf, first.offset) {
            Ok(()) => {}
            // Shorter than the first read saw: it changed.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
            Err(e) => return Err(crate::Error::io(&first.source.path, e)),
        }
        for (body, cut) in run {
            let from = usize::try_from(body.offset - first.offset).unwrap_or(usize::MAX);
            let whole = buf
                .get(from..from.saturating_add(body.len))
                .and_then(|bytes| whole_of(bytes, cut));
            let Some(whole) = whole else {
                return Ok(false);
            };
            let _ = body.whole.set(Some(Box::new(whole)));
        }
    }
    Ok(true)
}

/// The entry `bytes` (a line read back) hold, when it is the entry `cut` stands for.
fn whole_of(bytes: &[u8], cut: &Entry) -> Option<Entry> {
    let text = std::str::from_utf8(bytes).ok()?;
    let whole = Entry::parse(text, cut.line()).ok()?;
    same_entry(cut, &whole).then_some(whole)
}
