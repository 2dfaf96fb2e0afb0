//! A session file opened for one context (`pith session context`): every line is read and
//! checked, the whole tree is built, but only the entries the context reads keep their
//! message bodies (spec: tree-and-context.md §7; the answer is the one [`Session::open`]
//! gives).
//!
//! A 100 MiB session holds ~20 MiB of context after its last compaction; holding every body
//! costs the file's size again in memory. Bodies left out on the first read are read back by
//! offset once the leaf is known.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use super::{Session, tree_of};
use crate::context::{SessionContext, build_session_context};
use crate::entry::Entry;
use crate::env::SessionEnv;
use crate::error::{Error, Result};
use crate::load::{Bodies, Elided, Loaded, Warning, load_file_with};
use crate::outline::{self, FileStamp};
use crate::session::OpenMode;
use crate::tree::{Leaf, SessionTree};

/// A session opened for the context at one leaf. Entries off the path to that leaf may lack
/// their message bodies, so only [`ContextView::context`] is offered, never the entries.
#[derive(Debug)]
pub struct ContextView {
    tree: SessionTree,
    leaf: Leaf,
    warnings: Vec<Warning>,
}

impl ContextView {
    /// Opens `path` and builds the context at the leaf `pick` chooses from the tree (the
    /// tree's entries hold ids, parents, types and roles; message bodies may be missing).
    /// A blank file has no entries. A file that needs a migration is opened as
    /// [`Session::open`] opens it with [`OpenMode::Inspect`] (and so migrated on disk).
    ///
    /// A file of [`outline::FROM_BYTES`] and more is read through its outline under
    /// `env.agent_dir` when one is kept for the unchanged file, and its outline is kept
    /// otherwise (see [`crate::outline`]): the next open reads only the bodies the context
    /// needs.
    ///
    /// Errors: as [`Session::open`]; `pick`'s error is returned as `Ok(Err(_))`. If the file
    /// changes under the second read, the whole file is read again with every body.
    pub fn open<E>(
        path: &Path,
        env: &SessionEnv,
        pick: impl FnOnce(&SessionTree) -> std::result::Result<Leaf, E>,
    ) -> Result<std::result::Result<ContextView, E>> {
        // A missing file is the load's error to report.
        let stamp = std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| FileStamp::of(&m));
        let Some(stamp) = stamp.filter(|s| s.size() >= outline::FROM_BYTES) else {
            let len = stamp.map_or(0, |s| s.size());
            return ContextView::open_with(path, env, Bodies::for_context(len), pick);
        };
        if let Some(log) = outline::read(&env.agent_dir, path, stamp) {
            return ContextView::from_loaded(path, env, Loaded::Log(Box::new(log)), pick);
        }
        if !stamp.settled(SystemTime::now()) {
            // Its outline would not be kept: read the last quarter's bodies at once.
            return ContextView::open_with(path, env, Bodies::for_context(stamp.size()), pick);
        }
        let loaded = load_file_with(path, Bodies::for_outline(), &mut || env.ids.entry_id())?;
        if let Loaded::Log(log) = &loaded
            && std::fs::metadata(path).is_ok_and(|m| FileStamp::of(&m) == stamp)
        {
            outline::keep(&env.agent_dir, path, stamp, log);
        }
        ContextView::from_loaded(path, env, loaded, pick)
    }

    /// [`ContextView::open`] leaving out the bodies `bodies` says (tests leave out every
    /// one; [`Bodies::Kept`] reads the file once, whole).
    ///
    /// Errors: as [`ContextView::open`].
    pub fn open_with<E>(
        path: &Path,
        env: &SessionEnv,
        bodies: Bodies,
        pick: impl FnOnce(&SessionTree) -> std::result::Result<Leaf, E>,
    ) -> Result<std::result::Result<ContextView, E>> {
        let loaded = load_file_with(path, bodies, &mut || env.ids.entry_id())?;
        ContextView::from_loaded(path, env, loaded, pick)
    }

    /// The view over `loaded`, the load of `path`, reading back the bodies it left out.
    fn from_loaded<E>(
        path: &Path,
        env: &SessionEnv,
        loaded: Loaded,
        pick: impl FnOnce(&SessionTree) -> std::result::Result<Leaf, E>,
    ) -> Result<std::result::Result<ContextView, E>> {
        let log = match loaded {
            Loaded::Blank(_) => {
                let tree = SessionTree::default();
                return Ok(pick(&tree).map(|leaf| ContextView {
                    tree,
                    leaf,
                    warnings: Vec::new(),
                }));
            }
            Loaded::Log(log) if log.rewrite.is_some() => return whole(path, env, pick),
            Loaded::Log(log) => *log,
        };
        let torn = !log.summary.ends_with_newline;
        let (mut tree, warnings) =
            tree_of(log.entries, log.warnings, torn.then_some(log.summary.lines));
        let leaf = match pick(&tree) {
            Ok(leaf) => leaf,
            Err(e) => return Ok(Err(e)),
        };
        if let Leaf::At(at) = leaf
            && !log.elided.is_empty()
            && !read_bodies(path, &mut tree, at, &log.elided)?
        {
            return whole(path, env, |_| Ok(leaf));
        }
        Ok(Ok(ContextView {
            tree,
            leaf,
            warnings,
        }))
    }

    /// The context at the chosen leaf.
    pub fn context(&self) -> SessionContext<'_> {
        build_session_context(&self.tree, self.leaf)
    }

    /// Lines that were skipped and problems of the tree, as [`Session::warnings`] has them.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }
}

/// The view over a session read whole.
fn whole<E>(
    path: &Path,
    env: &SessionEnv,
    pick: impl FnOnce(&SessionTree) -> std::result::Result<Leaf, E>,
) -> Result<std::result::Result<ContextView, E>> {
    let session = Session::open(path, None, None, OpenMode::Inspect, env)?;
    let leaf = match pick(&session.tree) {
        Ok(leaf) => leaf,
        Err(e) => return Ok(Err(e)),
    };
    Ok(Ok(ContextView {
        tree: Arc::unwrap_or_clone(session.tree),
        leaf,
        warnings: session.warnings,
    }))
}

/// Reads back the whole lines of the elided entries the context at `leaf` reads and puts
/// them in the tree; `false` when a line is no longer what the first read saw (the file changed).
fn read_bodies(
    path: &Path,
    tree: &mut SessionTree,
    leaf: usize,
    elided: &[Elided],
) -> Result<bool> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut needed = crate::context::entries_read(tree, leaf);
    needed.sort_unstable();
    let wanted: Vec<&Elided> = elided
        .iter()
        .filter(|at| needed.binary_search(&at.index).is_ok())
        .collect();
    // Checking a body is most of the time here (a context can hold 20 MiB of them): on two
    // threads when there is much to read, split where half of the bytes are.
    let bytes: usize = wanted.iter().map(|at| at.len).sum();
    let split = if bytes >= TWO_THREADS_FROM {
        let mut seen = 0;
        wanted
            .iter()
            .position(|at| {
                seen += at.len;
                seen >= bytes / 2
            })
            .map_or(wanted.len(), |i| i + 1)
    } else {
        wanted.len()
    };
    let (first, second) = wanted.split_at(split);
    let entries: &SessionTree = tree;
    let (a, b) = std::thread::scope(|scope| {
        let b = (!second.is_empty()).then(|| scope.spawn(|| bodies_of(&file, entries, second)));
        let a = bodies_of(&file, entries, first);
        // The thread only reads; a panic there is a bug to surface, not to hide.
        let b = b.map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        (a, b.unwrap_or(Ok(Some(Vec::new()))))
    });
    let (Some(a), Some(b)) = (
        a.map_err(|e| Error::io(path, e))?,
        b.map_err(|e| Error::io(path, e))?,
    ) else {
        return Ok(false);
    };
    for (index, entry) in a.into_iter().chain(b) {
        tree.replace_body(index, entry);
    }
    Ok(true)
}

/// Most bytes one read of several bodies spans.
const READ_RUN_BYTES: u64 = 1 << 20;
/// Most bytes between two bodies read in one go (read and dropped).
const READ_GAP_BYTES: u64 = 16 << 10;

/// Bodies of this many bytes and more are read back on two threads.
const TWO_THREADS_FROM: usize = 4 << 20;

/// The whole entries at `wanted` (in file order), each checked against what the tree holds
/// of it; `None` when one is no longer what the first read saw.
///
/// Entries close together are read in one go ([`READ_RUN_BYTES`] at most, gaps under
/// [`READ_GAP_BYTES`]): a context's bodies mostly follow each other in the file, and one
/// read per body was thousands of system calls for a 100 MiB session.
fn bodies_of(
    file: &File,
    tree: &SessionTree,
    wanted: &[&Elided],
) -> std::io::Result<Option<Vec<(usize, Entry)>>> {
    let mut out = Vec::with_capacity(wanted.len());
    let mut buf = Vec::new();
    let mut rest = wanted;
    while let Some(first) = rest.first() {
        // The run: entries from `first` on that start soon after the previous one ends.
        let mut end = first.offset + first.len as u64;
        let mut n = 1;
        while let Some(next) = rest.get(n) {
            let next_end = next.offset + next.len as u64;
            if next.offset < end
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
        match file.read_exact_at(&mut buf, first.offset) {
            Ok(()) => {}
            // Shorter than the first read saw: it changed.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        for at in run {
            let from = usize::try_from(at.offset - first.offset).unwrap_or(usize::MAX);
            let Some(bytes) = buf.get(from..from.saturating_add(at.len)) else {
                return Ok(None);
            };
            let Some(old) = tree.entries().get(at.index) else {
                return Ok(None);
            };
            let Ok(text) = std::str::from_utf8(bytes) else {
                return Ok(None);
            };
            let Ok(entry) = Entry::parse(text, old.line()) else {
                return Ok(None);
            };
            if entry.id() != old.id()
                || entry.parent() != old.parent()
                || entry.kind() != old.kind()
            {
                return Ok(None);
            }
            out.push((at.index, entry));
        }
    }
    Ok(Some(out))
}
