//! The actor runtime's one error type. Frontends match on its variants, never on its text;
//! the texts are pi's where pi has one.

use std::path::PathBuf;

use crate::envelope::CallError;
use crate::summarize::SummaryFailure;

/// Everything a runtime call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The store refused: the file is locked by another process (`Locked {pid}`), is not a
    /// pi session file (`NotASession`), an entry is unknown (`EntryNotFound`), I/O failed.
    #[error(transparent)]
    Store(#[from] pith_store::Error),
    /// An actor did not answer (gone, stuck, or stopped while asked).
    #[error("the runtime did not answer: {0}")]
    Unanswered(#[from] CallError),
    /// An actor could not be started.
    #[error("an actor could not start: {0}")]
    Spawn(#[from] ractor::SpawnErr),
    /// pi's refusal of a prompt while a run is active (queue it as steering or a follow-up).
    #[error(
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    )]
    AgentBusy,
    /// A user command (`!cmd`) is running already.
    #[error("A bash command is already running")]
    CommandRunning,
    /// The runtime has no session (it is shutting down).
    #[error("no session")]
    NoSession,
    /// `/name` with a blank name (pi's text).
    #[error("Session name cannot be empty")]
    EmptySessionName,
    /// `/fork` of an entry that is not a user message (pi's text).
    #[error("Invalid entry ID for forking")]
    InvalidForkEntry,
    /// `/clone` without a leaf (pi's text).
    #[error("Cannot clone session: no current entry selected")]
    NothingToClone,
    /// `/import` of a file that is not there (pi's text).
    #[error("File not found: {}", .0.display())]
    ImportNotFound(PathBuf),
    /// `/tree` while a run is appending at the leaf.
    #[error("Cannot move in the tree while the agent is running; abort it first")]
    TreeMoveWhileRunning,
    /// `/compact` right after a compaction (pi's text).
    #[error("Already compacted")]
    AlreadyCompacted,
    /// `/compact` with nothing before the kept tail (pi's text).
    #[error("Nothing to compact (session too small)")]
    NothingToCompact,
    /// An extension cancelled the compaction, or the user did (pi's text).
    #[error("Compaction cancelled")]
    CompactionCancelled,
    /// The compaction's summary or its append failed (pi's `Summarization failed: …`).
    #[error("{0}")]
    CompactionFailed(String),
    /// A branch summary failed: the model's error message.
    #[error(transparent)]
    Summary(#[from] SummaryFailure),
    /// A stored session's cwd no longer exists (pi's text); nothing was started.
    #[error(
        "Stored session working directory does not exist: {cwd}\nSession: {}\nCurrent directory: {current}",
        file.display()
    )]
    MissingSessionCwd {
        /// The cwd the session's header names.
        cwd: String,
        /// The session file.
        file: PathBuf,
        /// The process's cwd.
        current: String,
    },
    /// A setting could not be saved to `settings.json`, which is left as it was.
    #[error(transparent)]
    SettingNotSaved(#[from] crate::settings::SettingNotSaved),
    /// A crashed session could not be rebuilt: neither its file nor a copy of its log exists.
    #[error("nothing to rebuild the session from")]
    NothingToRebuild,
}
