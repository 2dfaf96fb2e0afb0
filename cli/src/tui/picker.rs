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
//! sessions reads only files that changed. The full message texts a search needs (pi searches
//! every user and assistant text) are read only once a query is typed, newest session first,
//! with progress in the header; until then a session is searched by its id, name, first
//! message and cwd.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use pith_store::list::session_info;
use pith_store::list_index::{list_all_indexed_with_progress, list_indexed_with_progress};
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
use state::{PickerAction, PickerState, Request, Scope, ScopeData};

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
) -> Result<Option<PathBuf>> {
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
) -> Result<Option<PathBuf>> {
    require_tty()?;
    let current_dir = match session_dir {
        Some(d) => d.to_owned(),
        None => dirs::default_session_dir(agent_dir, cwd)?,
    };
    let dirs = Dirs {
        current: current_dir,
        root: dirs::sessions_root(agent_dir),
        agent: agent_dir.to_owned(),
    };
    let mut state = PickerState::new(options.current_session.as_deref(), !options.no_rename);
    // The first listing happens before the screen is taken, so a long one can show a
    // progress bar on stderr.
    let _ = state.take_requests();
    let progress = Progress::new("Loading sessions");
    let listing = list_indexed_with_progress(&dirs.current, &|d, t| progress.update(d, t));
    progress.finish();
    report_skipped(&mut state, listing.skipped.len());
    state.set_listing(Scope::Current, ScopeData::new(listing.sessions));
    let mut screen = Screen::enter()?;
    run(&mut screen, &mut state, &dirs)
}

struct Dirs {
    current: PathBuf,
    root: PathBuf,
    agent: PathBuf,
}

/// What the loading threads send back.
enum Loaded {
    Progress(Scope, usize, usize),
    Listing(Scope, ScopeData, usize),
    Texts(Scope, Vec<(PathBuf, String)>, usize),
}

fn run(screen: &mut Screen, state: &mut PickerState, dirs: &Dirs) -> Result<Option<PathBuf>> {
    let (tx, rx) = mpsc::channel();
    loop {
        for request in state.take_requests() {
            start_load(request, state, dirs, tx.clone());
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
            PickerAction::Select(path) => return Ok(Some(path)),
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
            Loaded::Texts(scope, texts, done) => state.add_texts(scope, texts, done),
        }
    }
    close
}

fn start_load(request: Request, state: &PickerState, dirs: &Dirs, tx: Sender<Loaded>) {
    match request {
        Request::Listing(scope) => {
            let (dir, all) = match scope {
                Scope::Current => (dirs.current.clone(), false),
                Scope::All => (dirs.root.clone(), true),
            };
            std::thread::spawn(move || {
                let progress = |d, t| {
                    let _ = tx.send(Loaded::Progress(scope, d, t));
                };
                let listing = if all {
                    list_all_indexed_with_progress(&dir, &progress)
                } else {
                    list_indexed_with_progress(&dir, &progress)
                };
                let skipped = listing.skipped.len();
                let _ = tx.send(Loaded::Listing(
                    scope,
                    ScopeData::new(listing.sessions),
                    skipped,
                ));
            });
        }
        Request::Texts(scope) => {
            let paths: Vec<PathBuf> = state.sessions().iter().map(|s| s.path.clone()).collect();
            std::thread::spawn(move || read_texts(scope, paths, &tx));
        }
    }
}

/// Reads `allMessagesText` of each file, newest first, in batches so the list updates as it
/// goes; stops when the picker has closed.
fn read_texts(scope: Scope, paths: Vec<PathBuf>, tx: &Sender<Loaded>) {
    const BATCH: usize = 64;
    let mut batch = Vec::with_capacity(BATCH);
    for (n, path) in paths.iter().enumerate() {
        // A file that fails now keeps what the listing had.
        if let Ok(info) = session_info(path) {
            batch.push((path.clone(), info.all_messages_text));
        }
        let done = n + 1;
        if batch.len() == BATCH || done == paths.len() {
            let texts = std::mem::take(&mut batch);
            if tx.send(Loaded::Texts(scope, texts, done)).is_err() {
                return;
            }
        }
    }
    if paths.is_empty() {
        let _ = tx.send(Loaded::Texts(scope, Vec::new(), 0));
    }
}

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
