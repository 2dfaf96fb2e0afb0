//! A session file opened for one context (`pith session context`): every line is read and
//! checked, the whole tree is built, but only the entries the context reads keep their
//! message bodies (spec: tree-and-context.md §7; the answer is the one [`Session::open`]
//! gives).
//!
//! A 100 MiB session holds ~20 MiB of context after its last compaction; holding every body
//! costs the file's size again in memory. Bodies left out on the first read are read back by
//! offset once the leaf is known.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use super::{Session, left_in_file, read_back_context, tree_of};
use crate::context::{SessionContext, build_session_context};
use crate::entry::BodySource;
use crate::env::SessionEnv;
use crate::error::{Error, Result};
use crate::load::{Bodies, Loaded, Warning, load_file_with};
use crate::outline;
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
    /// `env.agent_dir` when one holds for it (then only lines appended since are read), and
    /// its outline is kept otherwise (see [`crate::outline::open`]): the next open reads
    /// only the bodies the context needs.
    ///
    /// Errors: as [`Session::open`]; `pick`'s error is returned as `Ok(Err(_))`. If the file
    /// changes under the second read, the whole file is read again with every body.
    pub fn open<E>(
        path: &Path,
        env: &SessionEnv,
        pick: impl FnOnce(&SessionTree) -> std::result::Result<Leaf, E>,
    ) -> Result<std::result::Result<ContextView, E>> {
        if let Some(outlined) = outline::open(&env.agent_dir, path, &mut || env.ids.entry_id())? {
            return ContextView::from_loaded(path, env, outlined.loaded, Some(outlined.file), pick);
        }
        // A missing file is the load's error to report.
        let len = std::fs::metadata(path).map_or(0, |m| m.len());
        ContextView::open_with(path, env, Bodies::for_context(len), pick)
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
        ContextView::from_loaded(path, env, loaded, None, pick)
    }

    /// The view over `loaded`, the load of `path`, reading back the bodies it left out (from
    /// `file` when it is open already).
    fn from_loaded<E>(
        path: &Path,
        env: &SessionEnv,
        loaded: Loaded,
        file: Option<File>,
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
        let mut entries = log.entries;
        if !log.elided.is_empty() {
            let file = match file {
                Some(file) => file,
                None => File::open(path).map_err(|e| Error::io(path, e))?,
            };
            left_in_file(&mut entries, &log.elided, &BodySource::new(file, path));
        }
        let (tree, warnings) = tree_of(entries, log.warnings, torn.then_some(log.summary.lines));
        let leaf = match pick(&tree) {
            Ok(leaf) => leaf,
            Err(e) => return Ok(Err(e)),
        };
        if let Leaf::At(at) = leaf
            && !read_back_context(&tree, at)?
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
