//! The session picker (`/resume`, `pith -r`; spec: lifecycle.md §5.1, §8): this project's
//! sessions (Tab: every project's), newest activity first, forks threaded under their parent;
//! search, a named-only filter, rename and delete.
//!
//! Layout: [`state`] holds the picker and its key handling (no terminal), [`threaded`] the
//! fork tree, [`render`] the drawing, [`trash`] where deleted sessions go. This file runs
//! the loop: it loads listings and search texts on background threads and performs the
//! renames and deletes the state asks for.
//!
//! Keys (pi's defaults): ↑/↓ move · PgUp/PgDn page · Enter open · Esc/Ctrl+C cancel · Tab
//! current folder/all · typing searches (`"phrase"`, `re:regex`) · Ctrl+S sort
//! threaded/recent/fuzzy · Ctrl+N named only · Ctrl+P show paths · Ctrl+R rename · Ctrl+D (or
//! Ctrl+Backspace on an empty search) delete to the trash, after Enter confirms.
//!
//! Listing goes through the store's listing index, so opening the picker on thousands of
//! sessions reads only files that changed. A query searches every user and assistant text
//! through the store's search index (`pith_store::search`): the first query of a scope brings
//! the index up to date on a background thread, with progress in the header, while each query
//! is answered at once from what is indexed; rows show the matching snippet, and Enter opens
//! the session at the matching entry. Sessions whose id, name, first message or cwd match as
//! pi's picker matches them are listed after the index's hits.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use pith_store::list::{all_session_paths, jsonl_files};
use pith_store::list_index::{list_all_indexed_with_progress, list_indexed_with_progress};
use pith_store::search::{SearchIndex, index_folder, parse_query};
use pith_store::{OpenMode, Session, SessionEnv, dirs};

use super::progress::Progress;
use super::terminal::{Screen, next_key, require_tty};

pub mod render;
pub mod state;
pub mod threaded;
pub mod trash;

#[cfg(test)]
mod tests;

use render::{CHROME_ROWS, RenderEnv};
use state::{PickerAction, PickerState, Request, Scope, ScopeData, SearchHit};

/// What the user picked: a session, and the entry of the search hit when there was one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picked {
    /// The session file.
    pub path: PathBuf,
    /// Open with the leaf at this entry (a search hit's).
    pub entry: Option<String>,
}

/// How the picker is opened.
#[derive(Debug, Clone, Default)]
pub struct PickerOptions {
    /// The session that is open (interactive `/resume`): marked, and it cannot be deleted or
    /// renamed from the picker.
    pub current_session: Option<PathBuf>,
    /// Disable Ctrl+R (pi's `pi -r` has no rename; pith allows it by default).
    pub no_rename: bool,
}

/// Shows this project's sessions (Tab: all projects) and returns the one chosen, or `None`
/// when the user backs out. `session_dir` overrides the project's directory
/// (`--session-dir`); the all-projects view is always `<agent_dir>/sessions/*`.
///
/// Errors: stdin/stdout is not a terminal; the terminal fails; the project's session
/// directory cannot be created.
pub fn pick_session(
    cwd: &str,
    agent_dir: &Path,
    session_dir: Option<&Path>,
) -> Result<Option<Picked>> {
    pick_session_with(cwd, agent_dir, session_dir, &PickerOptions::default())
}

/// [`pick_session`] with [`PickerOptions`].
///
/// Errors: as [`pick_session`].
pub fn pick_session_with(
    cwd: &str,
    agent_dir: &Path,
    session_dir: Option<&Path>,
    options: &PickerOptions,
) -> Result<Option<Picked>> {
    require_tty()?;
    let current_dir = match session_dir {
        Some(d) => d.to_owned(),
        None => dirs::default_session_dir(agent_dir, cwd)?,
    };
    // In a custom `--session-dir` the current view is this cwd's sessions only (pi ≥ 0.77,
    // lifecycle.md §4); the project's own folder holds nothing else.
    let only_cwd = (current_dir != dirs::sessions_root(agent_dir).join(dirs::encode_cwd(cwd)))
        .then(|| cwd.to_owned());
    let dirs = Dirs {
        current: current_dir,
        root: dirs::sessions_root(agent_dir),
        agent: agent_dir.to_owned(),
        only_cwd,
    };
    let mut state = PickerState::new(options.current_session.as_deref(), !options.no_rename);
    // The first listing happens before the screen is taken, so a long one can show a
    // progress bar on stderr.
    let _ = state.take_requests();
    let progress = Progress::new("Loading sessions");
    let listing =
        list_indexed_with_progress(agent_dir, &dirs.current, &|d, t| progress.update(d, t));
    progress.finish();
    report_skipped(
        &mut state,
        listing.skipped.len() + listing.unreadable_folders.len(),
    );
    state.set_listing(
        Scope::Current,
        ScopeData::new(of_cwd(listing.sessions, dirs.only_cwd.as_deref())),
    );
    let mut screen = Screen::enter()?;
    run(&mut screen, &mut state, &dirs)
}

struct Dirs {
    current: PathBuf,
    root: PathBuf,
    agent: PathBuf,
    /// The cwd whose sessions the current view shows, in a custom session directory.
    only_cwd: Option<String>,
}

/// `sessions` of `cwd` only (all of them without one).
fn of_cwd(
    mut sessions: Vec<pith_store::list::SessionInfo>,
    cwd: Option<&str>,
) -> Vec<pith_store::list::SessionInfo> {
    if let Some(cwd) = cwd {
        sessions.retain(|s| Path::new(&s.cwd) == Path::new(cwd));
    }
    sessions
}

/// What the loading threads send back.
enum Loaded {
    Progress(Scope, usize, usize),
    Listing(Scope, ScopeData, usize),
    /// Search-index build progress; `None` when the index is complete.
    Indexing(Scope, Option<(usize, usize)>),
    Search(Scope, String, Vec<SearchHit>),
    /// The search index failed; searching falls back to the listing fields.
    SearchFailed(String),
}

fn run(screen: &mut Screen, state: &mut PickerState, dirs: &Dirs) -> Result<Option<Picked>> {
    let (tx, rx) = mpsc::channel();
    let mut searchers: [Option<Sender<String>>; 2] = [None, None];
    loop {
        for request in state.take_requests() {
            start_load(request, dirs, tx.clone(), &mut searchers);
        }
        if drain(&rx, state) {
            return Ok(None);
        }
        state.tick(Instant::now());
        let (_, height) = screen.size()?;
        state.set_max_visible((height as usize).saturating_sub(CHROME_ROWS));
        let env = RenderEnv::system();
        screen
            .terminal()
            .draw(|frame| render::draw(frame, state, &env))?;
        let Some(key) = next_key(Duration::from_millis(100))? else {
            continue;
        };
        match state.handle_key(key) {
            PickerAction::None => {}
            PickerAction::Select { path, entry } => return Ok(Some(Picked { path, entry })),
            PickerAction::Cancel => return Ok(None),
            PickerAction::Rename { path, name } => match rename(&path, &name, &dirs.agent) {
                Ok(()) => state.renamed(&path, &name),
                Err(e) => {
                    state.set_status(format!("Failed to rename: {e:#}"), true, secs(4));
                }
            },
            PickerAction::Delete(path) => match trash::move_to_trash(&path, &dirs.agent) {
                Ok(dest) => {
                    state.removed(&path);
                    state.set_status(
                        format!("Session moved to {}", dest.display()),
                        false,
                        secs(3),
                    );
                }
                Err(e) => state.set_status(format!("Failed to delete: {e:#}"), true, secs(4)),
            },
        }
    }
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn report_skipped(state: &mut PickerState, skipped: usize) {
    if skipped > 0 {
        state.set_status(
            format!(
                "{skipped} file(s) skipped: not readable sessions (`pith session list` says why)"
            ),
            true,
            secs(4),
        );
    }
}

/// Applies what the loaders sent. Returns `true` when the picker should close (nothing to
/// show anywhere, as pi does).
fn drain(rx: &Receiver<Loaded>, state: &mut PickerState) -> bool {
    let mut close = false;
    while let Ok(msg) = rx.try_recv() {
        match msg {
            Loaded::Progress(scope, done, total) => state.set_progress(scope, done, total),
            Loaded::Listing(scope, data, skipped) => {
                report_skipped(state, skipped);
                close |= state.set_listing(scope, data);
            }
            Loaded::Indexing(scope, progress) => state.set_index_progress(scope, progress),
            Loaded::Search(scope, query, hits) => state.set_search(scope, query, hits),
            Loaded::SearchFailed(e) => {
                state.set_status(format!("Search index: {e}"), true, secs(4));
            }
        }
    }
    close
}

fn start_load(
    request: Request,
    dirs: &Dirs,
    tx: Sender<Loaded>,
    searchers: &mut [Option<Sender<String>>; 2],
) {
    match request {
        Request::Listing(scope) => {
            let (dir, all) = match scope {
                Scope::Current => (dirs.current.clone(), false),
                Scope::All => (dirs.root.clone(), true),
            };
            let agent = dirs.agent.clone();
            let only_cwd = match scope {
                Scope::Current => dirs.only_cwd.clone(),
                Scope::All => None,
            };
            std::thread::spawn(move || {
                let progress = |d, t| {
                    let _ = tx.send(Loaded::Progress(scope, d, t));
                };
                let listing = if all {
                    list_all_indexed_with_progress(&agent, &dir, &progress)
                } else {
                    list_indexed_with_progress(&agent, &dir, &progress)
                };
                let skipped = listing.skipped.len() + listing.unreadable_folders.len();
                let _ = tx.send(Loaded::Listing(
                    scope,
                    ScopeData::new(of_cwd(listing.sessions, only_cwd.as_deref())),
                    skipped,
                ));
            });
        }
        Request::Search(scope, query) => {
            let slot = match scope {
                Scope::Current => 0,
                Scope::All => 1,
            };
            let searcher = searchers[slot].get_or_insert_with(|| start_searcher(scope, dirs, tx));
            let _ = searcher.send(query);
        }
    }
}

/// Starts the scope's search threads: one brings the index up to date (reporting
/// progress), the other answers queries, always the latest one, from what is indexed.
fn start_searcher(scope: Scope, dirs: &Dirs, tx: Sender<Loaded>) -> Sender<String> {
    let (qtx, qrx) = mpsc::channel::<String>();
    let agent = dirs.agent.clone();
    let (folder, all) = match scope {
        Scope::Current => (dirs.current.clone(), false),
        Scope::All => (dirs.root.clone(), true),
    };
    let limit_dirs =
        (!all && index_folder(&agent, &folder) != folder).then(|| vec![folder.clone()]);
    {
        let (agent, folder, limit_dirs, tx) = (
            agent.clone(),
            folder.clone(),
            limit_dirs.clone(),
            tx.clone(),
        );
        std::thread::spawn(move || build_index(scope, &agent, &folder, all, limit_dirs, &tx));
    }
    std::thread::spawn(move || {
        let mut index = None;
        while let Ok(mut query) = qrx.recv() {
            // Only the latest query matters: typing sends one per key.
            while let Ok(newer) = qrx.try_recv() {
                query = newer;
            }
            if index.is_none() {
                match SearchIndex::open(&agent, &folder) {
                    Ok(i) => index = Some(i),
                    Err(e) => {
                        let _ = tx.send(Loaded::SearchFailed(e.to_string()));
                        continue;
                    }
                }
            }
            let Some(ix) = &index else { continue };
            let parsed = parse_query(&query);
            let hits = match ix.search(&parsed, limit_dirs.as_deref(), Some(SEARCH_LIMIT)) {
                Ok(h) => h,
                Err(e) => {
                    let _ = tx.send(Loaded::SearchFailed(e.to_string()));
                    index = None;
                    continue;
                }
            };
            let hits = hits
                .into_iter()
                .map(|h| SearchHit {
                    path: h.path,
                    entry: h.entry_id,
                    snippet: h.snippet,
                })
                .collect();
            if tx.send(Loaded::Search(scope, query, hits)).is_err() {
                return;
            }
        }
    });
    qtx
}

/// Brings the scope's search index up to date, reporting progress; waits while another
/// process builds it (showing how far that one got).
fn build_index(
    scope: Scope,
    agent: &Path,
    folder: &Path,
    all: bool,
    limit_dirs: Option<Vec<PathBuf>>,
    tx: &Sender<Loaded>,
) {
    let files = if all {
        all_session_paths(folder)
    } else {
        jsonl_files(folder)
    };
    let result = (|| -> pith_store::Result<()> {
        let index = SearchIndex::open(agent, folder)?;
        let lock = loop {
            if let Some(l) = index.try_lock() {
                break l;
            }
            if let Ok(c) = index.coverage(&files, limit_dirs.as_deref()) {
                let _ = tx.send(Loaded::Indexing(scope, Some((c.indexed, c.total))));
            }
            std::thread::sleep(Duration::from_millis(500));
        };
        let progress = |d: usize, t: usize| {
            if d < t {
                let _ = tx.send(Loaded::Indexing(scope, Some((d, t))));
            }
        };
        let index = index.sync(&files, limit_dirs.as_deref(), &progress)?;
        drop(lock);
        drop(index);
        Ok(())
    })();
    if let Err(e) = result {
        let _ = tx.send(Loaded::SearchFailed(e.to_string()));
    }
    let _ = tx.send(Loaded::Indexing(scope, None));
}

/// Most hits a picker search shows.
const SEARCH_LIMIT: usize = 500;

/// Names a session as pi's picker does (`SessionManager.open(file).appendSessionInfo(name)`).
///
/// Errors: the file cannot be opened for writing (another process holds it, not a session),
/// or it has no assistant message yet, where pi's deferred write would silently drop the name.
fn rename(path: &Path, name: &str, agent_dir: &Path) -> Result<()> {
    let env = SessionEnv {
        agent_dir: agent_dir.to_owned(),
        ..SessionEnv::system()
    };
    let mut session = Session::open(path, None, None, OpenMode::Write, &env)?;
    if !session.tree().has_assistant() {
        bail!("the session has no assistant reply yet, so the name could not be saved");
    }
    session.append_session_info(name)?;
    Ok(())
}
