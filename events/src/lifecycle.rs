//! Session lifecycle values shared by the runtime, extensions and frontends
//! (spec: lifecycle.md §7, agent-and-events.md §6).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How a session subtree starts: handed as a value to the freshly spawned subtree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionStart {
    /// A new session in the runtime's cwd (`/new`, or no session flags).
    New,
    /// An existing file (`/resume`, `--session`, `--continue`).
    Resume(PathBuf),
    /// A new file holding the path up to the parent of `entry_id` (`/fork`).
    Fork {
        /// The user message forked before.
        entry_id: String,
    },
    /// A new file holding the path through the leaf (`/clone`).
    Clone,
    /// A copy of an outside file, opened like a resume (`/import`).
    Import(PathBuf),
}

impl SessionStart {
    /// pi's `reason` for `session_start` / `session_shutdown`.
    pub fn reason(&self) -> StartReason {
        match self {
            SessionStart::New => StartReason::New,
            SessionStart::Resume(_) | SessionStart::Import(_) => StartReason::Resume,
            SessionStart::Fork { .. } | SessionStart::Clone => StartReason::Fork,
        }
    }
}

/// `reason` of `session_start` and `session_shutdown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartReason {
    /// The process started.
    Startup,
    /// `/new`.
    New,
    /// `/resume`, `/import`.
    Resume,
    /// `/fork`, `/clone`.
    Fork,
    /// The process is quitting (shutdown only).
    Quit,
    /// The subtree was rebuilt from the log after a crash (pith's own reason).
    Restart,
}

/// An event extensions can subscribe to (spec: agent-and-events.md §6).
#[derive(Debug, Clone, PartialEq)]
pub enum ExtensionEvent {
    /// A session subtree started.
    SessionStart {
        /// Why.
        reason: StartReason,
        /// The file of the session that was active before, if any.
        previous_session_file: Option<PathBuf>,
    },
    /// The session is about to be replaced by a new or resumed one; may be cancelled.
    SessionBeforeSwitch {
        /// `New` or `Resume`.
        reason: StartReason,
        /// The file being switched to (absent for a new session).
        target_session_file: Option<PathBuf>,
    },
    /// A fork or clone is about to happen; may be cancelled.
    SessionBeforeFork {
        /// The entry forked at.
        entry_id: String,
        /// `before` (fork) or `at` (clone).
        position: ForkPosition,
    },
    /// The session subtree is shutting down.
    SessionShutdown {
        /// Why.
        reason: StartReason,
        /// The file that comes next, if known.
        target_session_file: Option<PathBuf>,
    },
    /// An agent event (boxed: messages are large next to the lifecycle events).
    Agent(Box<crate::agent::AgentEvent>),
}

impl ExtensionEvent {
    /// Whether extensions may cancel the operation this event announces.
    pub fn is_cancellable(&self) -> bool {
        matches!(
            self,
            ExtensionEvent::SessionBeforeSwitch { .. } | ExtensionEvent::SessionBeforeFork { .. }
        )
    }

    /// The event's name as pi's extension API spells it.
    pub fn name(&self) -> &'static str {
        match self {
            ExtensionEvent::SessionStart { .. } => "session_start",
            ExtensionEvent::SessionBeforeSwitch { .. } => "session_before_switch",
            ExtensionEvent::SessionBeforeFork { .. } => "session_before_fork",
            ExtensionEvent::SessionShutdown { .. } => "session_shutdown",
            ExtensionEvent::Agent(e) => e.name(),
        }
    }
}

/// `position` of `session_before_fork`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForkPosition {
    /// `/fork`: copy up to the selected user message's parent.
    Before,
    /// `/clone`: copy through the entry.
    At,
}
