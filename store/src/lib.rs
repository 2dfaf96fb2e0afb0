//! The session log: pi's JSONL session files read, folded and written exactly.
//!
//! Layout, bottom up:
//!
//! - [`scan`]: a one-pass JSON validator that records where the members the log needs are,
//!   so message bodies are decoded only when a context needs them.
//! - [`reader`]: the tolerant streaming line reader (pi's line rules, one line in memory).
//! - [`entry`] and [`header`]: a line as pith holds it: raw text plus eager members.
//! - [`load`] and [`migrate`]: a file to a header and entries, v1/v2 files migrated.
//! - [`compaction`]: token accounting, cut points and the preparation of a compaction.
//! - [`tree`]: the id index, labels, leaf and tree queries; [`context`]: the pure projection
//!   of the root→leaf path into the LLM context.
//! - [`writer`]: append-only, deferred, torn-tail-safe writes and atomic rewrites.
//! - [`session`]: pi's `SessionManager` (factories and the append API) on top of all that.
//! - [`dirs`], [`list`], [`list_index`]: where sessions live, listing (with a rebuildable
//!   index for thousands of sessions) and resolving `--session` arguments.
//! - [`search`]: the full-text search index of session texts (SQLite FTS5), beside the
//!   listing index under pith's agent directory.
//! - [`llm`]: `convertToLlm`, the context as a provider receives it; [`system`]: the replay
//!   of `role:"system"` messages (the compaction checkpoint).
//! - [`dump`]: the JSON shape of the conformance fixtures (`pith session dump`).
//! - [`env`](mod@env): the id seams and the session environment (the clock lives in
//!   `pith_events::clock`, JavaScript semantics in `pith_events::js`).
//!
//! Everything follows pi 1.6.0 as `../shared/spec` describes it (files written by older pi
//! versions read as pi 1.6.0 reads them), except where
//! `divergences.md` has pith do better (never lose a line, never loop, never hide a session).

pub mod branch_summary;
pub mod compaction;
pub mod context;
pub mod dirs;
pub mod dump;
pub mod entry;
pub mod env;
pub mod error;
pub mod header;
pub mod list;
pub mod list_index;
pub mod llm;
pub mod load;
pub mod migrate;
pub mod outline;
pub mod reader;
pub mod scan;
pub mod search;
pub mod session;
pub mod system;
pub mod tree;
pub mod writer;

pub use context::{Content, ContextMessage, SessionContext, build_session_context};
pub use entry::Entry;
pub use env::SessionEnv;
pub use error::{Error, Result};
pub use header::Header;
pub use load::Warning;
pub use session::{ContextView, OpenMode, Session};
pub use tree::{Leaf, SessionTree};
