//! The store's error type.

use std::path::PathBuf;

/// Everything the store can fail with. Messages name the file and, where there is one, the
/// line (spec: divergences.md "Reading": refusals leave the file untouched).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O operation on `path` failed.
    #[error("{path}: {cause}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error (shown in the message, so not also chained as a source: error reports
        /// would print it twice).
        cause: std::io::Error,
    },
    /// The path names something that is not a regular file (a device, a FIFO, a directory):
    /// pith never reads a session from it nor writes one over it.
    #[error("{0}: not a regular file")]
    NotAFile(PathBuf),
    /// pith would have written through a symbolic link that it did not resolve itself (a
    /// lock file, an export, a session path replaced by a link): it never does.
    #[error("{}: is a symbolic link; pith does not write through it (remove it if it is not meant to be there)", .0.display())]
    Symlink(PathBuf),
    /// A session file (or its lock file) has several hard links: another name for the same
    /// file would have another lock, so pith refuses to write it.
    #[error("{}: has {links} hard links (other names for the same file); pith writes a session only through its one name, so that its lock covers it. Copy the file (cp) instead of linking it, or remove the other links", path.display())]
    HardLinked {
        /// The file.
        path: PathBuf,
        /// Its link count.
        links: u64,
    },
    /// The file has content but its first JSON line is not a session header; pith refuses to
    /// open it and leaves it as it is (pi would overwrite it).
    #[error("not a pi session file: {path}: line {line}: {reason}")]
    NotASession {
        /// The file.
        path: PathBuf,
        /// 1-based line of the first JSON value (or of the first non-blank line).
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// Another process holds the session's writer lock (spec: divergences.md "Writing": one
    /// writer per file).
    #[error("{path} is open for writing in another process (pid {}); close it there first", pid.map_or_else(|| "unknown".to_owned(), |p| p.to_string()))]
    Locked {
        /// The session file.
        path: PathBuf,
        /// The holder's pid, as it wrote it into the lock file.
        pid: Option<u32>,
    },
    /// An entry id that is not in the session (pi: `Entry <id> not found`).
    #[error("Entry {0} not found")]
    EntryNotFound(String),
    /// A context edit for an entry that is not on the active branch (pi's `appendContextEdit`).
    #[error("Entry {0} is not on the active branch")]
    NotOnBranch(String),
    /// A context edit for an entry that contributes no editable content: only custom messages
    /// and user, assistant and toolResult messages can be edited (pi's `appendContextEdit`).
    #[error("Entry {0} does not contribute editable model content")]
    NotEditable(String),
    /// `--fork`/forkFrom of a file with nothing to fork.
    #[error("Cannot fork: source session file is empty or invalid: {0}")]
    EmptyForkSource(PathBuf),
    /// A `--session`/`--fork` argument matched no session.
    #[error("No session found matching '{0}'")]
    NoSessionMatch(String),
    /// A partial id matched more than one session.
    #[error("'{arg}' matches {count} sessions: {}; give more of the id or a path", candidates.join(", "))]
    AmbiguousSession {
        /// The argument as given.
        arg: String,
        /// How many matched.
        count: usize,
        /// The first few matching session files.
        candidates: Vec<String>,
    },
    /// A line is not an entry (invalid JSON with its byte offset, or why the value is not an
    /// entry); the reader keeps it as a warning and goes on.
    #[error("{reason}")]
    InvalidEntry {
        /// What is wrong with it.
        reason: String,
    },
    /// A command-line value the store parses (`--at`) is not one it takes.
    #[error("{0}")]
    InvalidArgument(String),
    /// The search index database failed (SQLite's error; a damaged file is rebuilt instead).
    #[error("search index {path}: {cause}")]
    Index {
        /// The database file.
        path: PathBuf,
        /// SQLite's error (in the message, so not chained as a source).
        cause: rusqlite::Error,
    },
    /// An entry whose message body was left in the session file (a large session opened
    /// for its context) could not be read back: the file was changed in place since.
    #[error("{}: the entry at byte {offset} is no longer as it was read (the file was changed by another program); open the session again", path.display())]
    BodyChanged {
        /// The session file.
        path: PathBuf,
        /// Byte offset of the entry's line.
        offset: u64,
    },
    /// An entry pith was asked to write could not be serialized.
    #[error("cannot serialize an entry: {0}")]
    Serialize(#[from] serde_json::Error),
}

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            cause: source,
        }
    }

    /// Whether this is a search index whose file is damaged (SQLite finds a corrupt page, or
    /// no database at all): it is to be rebuilt, not reported.
    pub fn is_damaged_index(&self) -> bool {
        matches!(self, Error::Index { cause, .. } if is_broken(cause))
    }
}

/// SQLite's word for a damaged database file (a corrupt page, or not a database at all).
pub(crate) fn is_broken(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

/// The store's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
