//! pith's actor runtime (ractor).
//!
//! - [`runtime`]: the root supervisor; owns the per-session subtree and performs switches.
//! - [`writer`]: SessionWriter, the only owner of the session file.
//! - [`projection`]: Projection, the context kept current as entries arrive.
//! - [`agent`]: Agent, pi's agent loop (turns, tool calls, steering, follow-ups, abort).
//! - [`compactor`]: Compactor, which owns compaction decisions.
//! - [`extension`]: the Extension trait, its actor, and two example extensions.
//! - [`provider`] and [`faux`]: the model seam and the built-in offline model.
//! - [`providers`]: streaming providers for the Anthropic Messages and OpenAI Chat Completions APIs.
//! - [`model`], [`model_registry`], [`auth`]: what pith knows about a model (API, limits,
//!   prices), the built-in table merged with `models.json`, `--model` resolution, API keys.
//! - [`tool`]: the tool seam ([`tool::Tool`], [`tool::Toolset`]).
//! - [`tools`] and [`system_prompt`]: pi's built-in tools (read, bash, edit, write, user `!cmd`) and its default system prompt.
//! - [`retry`]: which failed replies are retried, and when.
//! - [`settings`]: `settings.json` of the agent dir and the project, read per session cwd.
//! - [`summarize`]: summaries through the current model (conversation serialization, prompts).
//! - [`trace`]: span fields that let a run be drawn as a message flow.
//!
//! The guarantees (who owns what, ordering, restarts, switches) are in `docs/actors.md`.

pub mod agent;
pub mod auth;
pub mod compactor;
pub mod event;
pub mod extension;
pub mod faux;
pub mod model;
pub mod model_registry;
pub mod overflow;
pub mod projection;
pub mod provider;
pub mod providers;
pub mod retry;
pub mod runtime;
pub mod settings;
pub mod summarize;
pub mod system_prompt;
pub mod tool;
pub mod tools;
pub mod trace;
pub mod writer;
