//! The typed vocabulary of pith, at the bottom of the crate stack.
//!
//! Everything here is plain data with serde; nothing does I/O. The layout:
//!
//! - [`header`]: the first line of a session file (`type: "session"`).
//! - [`entry`]: the eleven entry types of pi's session format v3, each a payload struct
//!   whose field order is the order pi writes its keys in (spec: format.md §2.3).
//! - [`message`]: the `AgentMessage` roles that live inside `message` entries and the
//!   content blocks they hold (spec: format.md §3).
//! - [`agent`]: the agent loop's events (`agent_start` … `agent_end`), pi's JSON shape.
//! - [`listener`]: those events as pi's session listeners get them, the lines `--mode json`
//!   and `--mode rpc` print (`AgentEvent::to_listener_json`).
//! - [`lifecycle`]: how a session subtree starts (`SessionStart`) and the events extensions
//!   receive around switches.
//! - [`ext`]: PXP/1, the extension protocol's messages, manifest and decisions
//!   (spec: extensions.md §1.2).
//! - [`model`]: which model answers ([`ModelRef`]) and how hard it thinks ([`ThinkingLevel`]).
//! - [`tool`]: what the model is told about a tool ([`ToolSpec`]).
//! - [`clock`]: the clock seam.
//! - [`js`]: JavaScript semantics in one home: how `JSON.stringify` spells values, so lines
//!   pith creates are byte-for-byte what pi would have written, and `trim()`, truthiness,
//!   `Number()`/`String()` and `Date.parse` as pi's results depend on them (spec README,
//!   "JS-isms").
//!
//! Lines that pith did not create are never re-serialized from these types: the store keeps
//! their raw bytes. These types are for lines pith writes and for reading fields on demand.

pub mod agent;
pub mod clock;
pub mod entry;
pub mod ext;
pub mod header;
pub mod js;
pub mod lifecycle;
pub mod listener;
pub mod message;
pub mod model;
pub mod tool;

pub use agent::{AgentEvent, CompactionResult, StreamKind, StreamUpdate};
pub use entry::{
    BranchSummaryEntry, CompactionEntry, ContextEditEntry, ContextReplacement, CustomEntry,
    CustomMessageEntry, EntryBase, EntryType, LabelEntry, MessageEntry, ModelChangeEntry,
    SessionEntry, SessionInfoEntry, ThinkingLevelChangeEntry, UsageEntry,
};
pub use header::{CURRENT_SESSION_VERSION, SessionHeader};
pub use lifecycle::{CompactionPlan, ExtensionEvent, ForkPosition, SessionStart, StartReason};
pub use message::{
    AgentMessage, AssistantMessage, BashExecutionMessage, BranchSummaryMessage,
    CompactionSummaryMessage, ContentBlock, Cost, CustomMessage, ImageContent, StopReason,
    SystemMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, Usage, UserContent,
    UserMessage,
};
pub use model::{ModelRef, ThinkingLevel, UnknownThinkingLevel};
pub use tool::ToolSpec;
