//! pith's actor runtime (ractor).
//!
//! - [`runtime`]: the root supervisor; owns the per-session subtree and performs switches.
//! - [`writer`]: SessionWriter, the only owner of the session file.
//! - [`projection`]: Projection, the context kept current as entries arrive.
//! - [`agent`]: Agent, pi's agent loop (turns, tool calls, steering, follow-ups, abort).
//! - [`compactor`]: Compactor, which owns compaction decisions.
//! - [`tree_navigator`]: TreeNavigator, which moves the leaf for `/tree` and writes branch
//!   summaries.
//! - [`extension`]: the Extension trait, its actor, and two example extensions;
//!   [`extension_host`]: the session's extensions as one value every fan-out goes through;
//!   [`extensions`]: extensions in other processes (PXP/1), the tool registry, argument checks.
//! - [`error`]: the crate's one error type, [`RuntimeError`].
//! - [`envelope`]: how actors send each other messages (envelopes, the call helper and its
//!   one timeout policy).
//! - [`system_prompt`]: pi's default system prompt and the context files it holds.
//! - [`selection`]: the model and thinking level a starting session runs with (a resumed one
//!   goes on with its own).
//! - [`resources`]: prompt templates and skills (discovery, `/name` and `/skill:name`).
//! - [`settings`]: `settings.json` of the agent dir and the project, read per session cwd.
//! - [`summarize`]: summaries through the current model (conversation serialization, prompts).
//! - [`trace`]: who sent a message, in which flow, caused by what; the span every actor
//!   handles a message in.
//!
//! The guarantees (who owns what, ordering, restarts, switches) are in `docs/actors.md`.

pub mod agent;
pub mod compactor;
pub mod envelope;
pub mod error;
pub mod event;
pub mod extension;
pub mod extension_host;
pub mod extensions;
pub mod projection;
pub mod resources;
pub mod runtime;
pub mod selection;
pub mod settings;
pub mod summarize;
pub mod system_prompt;
#[cfg(test)]
mod testing;
pub mod trace;
pub mod tree_navigator;
pub mod trust;
pub mod writer;

pub use error::RuntimeError;
