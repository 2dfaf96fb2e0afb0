//! The session header: line 1 of every session file (spec: format.md §2.1).

use serde::{Deserialize, Serialize};

/// The session format version pi (0.73.1 and 1.6.0 alike) writes and pith writes (spec:
/// format.md §2.1, §5).
pub const CURRENT_SESSION_VERSION: u32 = 3;

/// The header line `{"type":"session","version":3,"id":…,"timestamp":…,"cwd":…}`.
///
/// Serializes with pi's key order: `type, version, id, timestamp, cwd, parentSession`;
/// `parentSession` is omitted (not `null`) when absent. Used for headers pith creates; a header
/// read from a file is kept as its raw line by the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionHeader {
    /// Always `"session"`; kept as a field so the key is written first.
    #[serde(rename = "type")]
    pub kind: HeaderType,
    /// Format version; [`CURRENT_SESSION_VERSION`] for new files, 1 when a file omits it.
    #[serde(default = "version_one")]
    pub version: u32,
    /// Session id: a lowercase hyphenated UUIDv7 for sessions pith creates.
    pub id: String,
    /// Creation time, ISO-8601 UTC with milliseconds (`YYYY-MM-DDTHH:MM:SS.mmmZ`).
    pub timestamp: String,
    /// Working directory the session belongs to.
    pub cwd: String,
    /// Path of the session file this one was forked or cloned from.
    #[serde(
        rename = "parentSession",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub parent_session: Option<String>,
}

fn version_one() -> u32 {
    1
}

/// The literal `"session"` in a header's `type` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HeaderType {
    /// `"session"`
    #[serde(rename = "session")]
    Session,
}

impl SessionHeader {
    /// A version-3 header for a new session.
    pub fn new(
        id: String,
        timestamp: String,
        cwd: String,
        parent_session: Option<String>,
    ) -> SessionHeader {
        SessionHeader {
            kind: HeaderType::Session,
            version: CURRENT_SESSION_VERSION,
            id,
            timestamp,
            cwd,
            parent_session,
        }
    }
}
