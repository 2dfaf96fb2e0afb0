//! pith's model layer: everything between a context and a model's streamed reply. It sees
//! `pith-events` only (never the store or the actors), so it can be tested on its own against
//! local HTTP servers.
//!
//! - [`provider`]: the seam ([`provider::Provider`]: a request in, streamed events and the final
//!   `AssistantMessage` out; abort is a `CancellationToken`).
//! - [`providers`]: the Anthropic Messages, OpenAI Chat Completions, OpenAI Responses and
//!   Gemini wire formats behind one HTTP skeleton (`providers/http.rs`, SSE in
//!   `providers/sse.rs`); each API's streaming is parsed in its own module
//!   (`anthropic.rs`, `openai.rs`, `responses.rs`, `google.rs`), its request built in the
//!   `*_request.rs` beside it.
//! - [`faux`]: the built-in offline model and `--faux-script` replays (spec: faux-model.md).
//! - [`model`], [`model_registry`], [`auth`]: what pith knows about a model (API, limits,
//!   prices), the built-in table merged with `models.json`, `--model` resolution, thinking-level
//!   clamping, API keys.
//! - [`retry`] and [`overflow`]: which failed replies are retried, and which are context
//!   overflows (spec: agent-and-events.md §4, compaction.md §3).
//! - [`config_file`]: size- and type-limited reading of configuration and context files.
//! - [`error`]: the crate's one error type ([`Error`]).
//! - [`tool_pairs`]: the one tool-call pairing every request goes through (pi-ai's
//!   `transformMessages`).

pub mod auth;
pub mod config_file;
pub mod error;
pub mod faux;
pub mod model;
pub mod model_registry;
pub mod overflow;
pub mod provider;
pub mod providers;
pub mod retry;
pub mod tool_pairs;

pub use error::Error;
