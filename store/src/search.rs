//! Session search: a persistent, incremental full-text index of every session's searchable
//! text (SQLite FTS5 through rusqlite), answering the picker's query language in
//! milliseconds over tens of thousands of sessions.
//!
//! - [`query`]: pi's query language (bare words, `"phrases"`, `re:`) and its normalisation.
//! - [`matching`]: pi 1.6.0's match tiers for one token (name, then id, messages or cwd,
//!   then scattered letters), shared with the in-memory picker.
//! - [`rows`]: what is searchable in a file: the header's id and cwd, session names, user and
//!   assistant message texts (pi's `allMessagesText` pieces), one row per line with its entry id.
//! - [`index`]: the database under pith's agent directory, kept in step with the files by
//!   (path, size, mtime, inode) and by appends ([`note_appended`]); crash-safe, rebuilt when
//!   missing or damaged.
//! - `tokens`: what the FTS5 tables receive (tokens, word pairs, each distinct one once).
//! - `regex_literals`: what every match of a `re:` pattern holds, to look its rows up by.
//! - [`run`](mod@run): answering a query; candidates that may not match are checked against
//!   the files, so results equal a plain scan of them.
//!
//! Unlike pi's picker, which matches a phrase or regex against `allMessagesText` (every
//! message joined by spaces), a regex here matches within one text (one message, name, or
//! the header's id and cwd), and a phrase runs into a message from at most the last 64
//! characters of the ones before it, so each hit can name the entry it came from.

pub mod index;
pub mod matching;
mod newest_first;
pub mod query;
mod regex_literals;
pub mod rows;
pub mod run;
mod tokens;

use std::path::{Path, PathBuf};

pub use index::{BuildLock, Coverage, Plan, SearchIndex, index_folder};
pub use query::{Query, Token, parse_query};
pub use run::Hit;

/// The writer's hook: `session` (a session file under `agent_dir`'s sessions root, or in a
/// folder with its own index) was appended to; index its new lines now. Does nothing when
/// the folder has no search index yet or a builder holds it (the builder, or the next
/// search, picks the lines up by the file's size), and never fails the write.
pub fn note_appended(agent_dir: &Path, session: &Path) {
    let Some(folder) = session.parent() else {
        return;
    };
    let db =
        crate::dirs::index_dir(agent_dir, &index_folder(agent_dir, folder)).join(index::DB_FILE);
    if !db.is_file() {
        return;
    }
    let Ok(index) = SearchIndex::open_at(&db) else {
        return;
    };
    let Some(_lock) = index.try_lock() else {
        return;
    };
    let files = [PathBuf::from(session)];
    let Ok(plan) = index.plan_files(&files) else {
        return;
    };
    let mut index = index;
    if let Err(e) = index.apply(plan, &|_, _| {}) {
        tracing::debug!("search index not updated for {}: {e}", session.display());
    }
}
