//! Where sessions are opened, and nowhere else: the first session of a runtime (what the
//! command line names, spec: lifecycle.md §5.1, §5.3), the target of every switch
//! (lifecycle.md §7), and the rebuild after a crash. The runtime then writes only through its
//! SessionWriter, pi's session-start entries included.

use std::path::{Path, PathBuf};

use pith_events::SessionStart;
use pith_store::{OpenMode, Session, SessionEnv, dirs};

use super::RuntimeConfig;
use crate::RuntimeError;
use crate::writer::Snapshot;

/// The first session of a runtime, as the command line names it. With `persist: false`
/// (`--no-session`) every variant is a new session in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FirstSession {
    /// A new session in the runtime's cwd (no session flags).
    New,
    /// This file (`--session`, already resolved to a path). `read_only` opens it without
    /// its writer lock and works on a copy in memory (`--read-only`).
    Open {
        /// The file.
        path: PathBuf,
        /// Never write to it.
        read_only: bool,
        /// Open with the leaf at this entry (`--session ID@ENTRY`, what `pith session search`
        /// prints), as `/tree` navigation would move it; nothing is written until the next
        /// append.
        at: Option<String>,
    },
    /// The most recent session of the cwd, else a new one (`--continue`); with `read_only`,
    /// as [`FirstSession::Open`] does.
    Continue {
        /// Never write to it.
        read_only: bool,
    },
    /// A copy of this session in a new file of the cwd (`--fork`, already resolved).
    Fork {
        /// The session copied.
        source: PathBuf,
        /// The copy's session id (`--fork … --session-id`); `None` = a new UUIDv7.
        id: Option<String>,
    },
    /// A new session with exactly this id (`--session-id` when the project has no session
    /// with it; in memory with `--no-session`), already checked (format.md §4.2).
    NewWithId(String),
}

/// What the caller learns about the first session when the runtime starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// The header line as it is in memory (pi's `--mode json` prints it first).
    pub header_line: String,
    /// The session's file; `None` in memory.
    pub session_file: Option<PathBuf>,
    /// Lines of the file pith could not read, each `line N: problem` (the file is kept as
    /// it is; the user should hear of them).
    pub warnings: Vec<String>,
}

/// The session directory of `cwd`: `--session-dir`, else the agent dir's per-cwd one.
fn session_dir(config: &RuntimeConfig, cwd: &str) -> Result<PathBuf, RuntimeError> {
    match &config.session_dir {
        Some(d) => Ok(d.clone()),
        None => Ok(dirs::default_session_dir(&config.env.agent_dir, cwd)?),
    }
}

/// Opens the first session (pi's `createAgentSession` choices).
///
/// Errors: the store's (a locked file, not a pi session file, an empty fork source, I/O),
/// and [`RuntimeError::MissingSessionCwd`] when a stored session's cwd is gone.
pub(super) fn open_first(
    config: &RuntimeConfig,
    first: &FirstSession,
) -> Result<Session, RuntimeError> {
    let cwd = config.cwd.as_str();
    let env = &config.env;
    let given_dir = config.session_dir.as_deref();
    if !config.persist {
        let mut session = Session::in_memory(cwd, env);
        if let FirstSession::NewWithId(id) = first {
            session.new_session(Some(id.clone()), None);
        }
        return Ok(session);
    }
    let session = match first {
        FirstSession::New => Session::create(cwd, given_dir, env)?,
        FirstSession::NewWithId(id) => {
            let mut session = Session::create(cwd, given_dir, env)?;
            session.new_session(Some(id.clone()), None);
            session
        }
        FirstSession::Fork { source, id } => {
            Session::fork_from_with_id(source, cwd, given_dir, id.clone(), env)?
        }
        FirstSession::Open {
            path,
            read_only,
            at,
        } => {
            let mut session = Session::open(path, given_dir, None, open_mode(*read_only), env)?;
            if let Some(entry) = at {
                session.branch(entry)?;
            }
            session
        }
        FirstSession::Continue { read_only: false } => {
            Session::continue_recent(cwd, given_dir, env)?
        }
        FirstSession::Continue { read_only: true } => {
            // In a custom directory only this cwd's sessions count (lifecycle.md §1).
            let only = config.session_dir.is_some().then_some(cwd);
            match pith_store::session::most_recent_session_of(&session_dir(config, cwd)?, only) {
                Some(p) => Session::open(&p, given_dir, Some(cwd), OpenMode::ReadOnly, env)?,
                None => Session::in_memory(cwd, env),
            }
        }
    };
    if let Some(dir) = session.session_file().and_then(Path::parent) {
        // What killed pith processes left beside the sessions (only pith's own names).
        let removed = pith_store::writer::sweep_leftovers(dir);
        if removed > 0 {
            tracing::info!(dir = %dir.display(), removed, "removed stale lock and temporary files");
        }
    }
    // A new or forked session lives in the process's cwd; a resumed one names its own.
    let resumed = matches!(
        first,
        FirstSession::Open { .. } | FirstSession::Continue { .. }
    );
    if resumed
        && let Some(file) = session.session_file()
        && !Path::new(session.cwd()).is_dir()
    {
        return Err(RuntimeError::MissingSessionCwd {
            cwd: session.cwd().to_owned(),
            file: file.to_owned(),
            current: cwd.to_owned(),
        });
    }
    Ok(session)
}

/// What the caller of `Runtime::start` is told about `session`.
pub(super) fn opened(session: &Session) -> Opened {
    Opened {
        header_line: session.header().raw().to_owned(),
        session_file: session.session_file().map(Path::to_owned),
        warnings: session.warnings().iter().map(|w| w.to_string()).collect(),
    }
}

fn open_mode(read_only: bool) -> OpenMode {
    if read_only {
        OpenMode::ReadOnly
    } else {
        OpenMode::Write
    }
}

/// The session a switch leaves, as the switch needs it.
pub(super) struct Current {
    /// A copy of its log.
    pub snapshot: Snapshot,
    /// Its file.
    pub file: Option<PathBuf>,
    /// Its session directory.
    pub dir: Option<PathBuf>,
    /// Its cwd (a `/new` starts there).
    pub cwd: String,
}

impl Current {
    /// The session back from the copy of its log (a failed switch changes nothing).
    pub fn restore(self, env: &SessionEnv) -> Session {
        from_snapshot(self.snapshot, &self.cwd, self.dir, self.file, env)
    }
}

/// A session rebuilt from a copy of its log (not re-read from its file).
pub(super) fn from_snapshot(
    snapshot: Snapshot,
    cwd: &str,
    dir: Option<PathBuf>,
    file: Option<PathBuf>,
    env: &SessionEnv,
) -> Session {
    Session::from_snapshot(
        snapshot.header,
        snapshot.tree,
        cwd,
        dir.as_deref(),
        file.as_deref(),
        env,
    )
}

/// Opens the target of a switch: a new file in the current cwd (`/new`), the given file
/// (`/resume`, `/import` of `imported`), or a branch of the current log (`/fork` from the
/// parent of an entry, `/clone` through the leaf: `fork_at` is where the copy ends).
///
/// Errors: the store's.
pub(super) fn open_target(
    config: &RuntimeConfig,
    current: &Current,
    start: &SessionStart,
    imported: Option<&Path>,
    fork_at: Option<Option<String>>,
) -> Result<Session, RuntimeError> {
    let env = &config.env;
    Ok(match start {
        // The runtime's cwd is the current session's (pi's runtime.cwd follows a resume into
        // another project), so /new starts there.
        SessionStart::New if config.persist => {
            let dir = session_dir(config, &current.cwd)?;
            Session::create(&current.cwd, Some(&dir), env)?
        }
        SessionStart::New => Session::in_memory(&current.cwd, env),
        SessionStart::Resume(path) => Session::open(path, None, None, OpenMode::Write, env)?,
        SessionStart::Import(path) => Session::open(
            imported.unwrap_or(path),
            current.dir.as_deref(),
            None,
            OpenMode::Write,
            env,
        )?,
        SessionStart::Fork { .. } | SessionStart::Clone => {
            let mut source = from_snapshot(
                current.snapshot.clone(),
                &current.cwd,
                current.dir.clone(),
                current.file.clone(),
                env,
            );
            match fork_at.flatten() {
                Some(target) => {
                    source.create_branched_session(&target)?;
                }
                None => {
                    let parent = current
                        .file
                        .as_ref()
                        .map(|p| p.to_string_lossy().into_owned());
                    source.new_session(None, parent);
                }
            }
            source
        }
    })
}

/// Reopens a crashed session's file for writing once the failed writer's lock is gone: a
/// killed actor's state (and with it the lock) is dropped as its task ends, which may trail
/// the failure notice by a moment.
///
/// Errors: the store's, or the lock still held after a second.
pub(super) async fn reopen_when_released(
    file: &Path,
    dir: Option<&Path>,
    cwd: &str,
    env: &SessionEnv,
) -> Result<Session, RuntimeError> {
    let mut tries = 0;
    loop {
        match Session::open(file, dir, Some(cwd), OpenMode::Write, env) {
            Err(pith_store::Error::Locked { pid: Some(pid), .. })
                if pid == std::process::id() && tries < 50 =>
            {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            other => return Ok(other?),
        }
    }
}
