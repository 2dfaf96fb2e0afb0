//! Extensions hosted out of process and what all extensions share (spec: extensions.md):
//!
//! - [`process`]: the actor hosting one extension process speaking PXP/1: its messages and
//!   pending map (`mod.rs`), its life (`lifecycle.rs`: deadlines, fail policy, crash and
//!   respawn), what the child asks (`from_child.rs`) and its answers read as verdicts
//!   (`decision.rs`).
//! - [`child`]: spawning that process, its stdio tasks and its stderr log.
//! - [`session_api`]: the extension's `session/*` requests.
//! - [`outbox`]: what is written to a child's stdin (observe events bounded and coalesced).
//! - [`dialogs`]: `ui/*` dialogs routed to frontends and back.
//! - [`tool`]: a tool declared by an extension process.
//! - [`registry`]: the tools extensions register, read by the Agent each turn.
//! - [`transcript`]: a tap recording the wire both ways (tests, golden transcripts).
//! - [`schema`]: checks tool arguments against a tool's `inputSchema` before `tool_call`.

pub mod child;
pub mod dialogs;
pub mod outbox;
pub mod process;
pub mod process_input;
pub mod registry;
pub mod schema;
pub mod session_api;
pub mod tool;
pub mod transcript;
