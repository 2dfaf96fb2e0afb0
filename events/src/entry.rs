//! The eleven entry types of session format v3 (spec: format.md §2.2–2.3), pi 1.6.0's
//! `context_edit` and `usage` included.
//!
//! Each payload struct lists its fields in the order pi writes them, so serializing one gives
//! pi's key order. Optional keys are omitted when `None`, as `JSON.stringify` omits
//! `undefined`. `custom` and `custom_message` write their own keys before the common
//! `id, parentId, timestamp`, exactly as pi does.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::message::{AgentMessage, UserContent};

/// The `type` of an entry line, as a closed set plus the types this version does not know.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EntryType {
    /// `message`: an [`AgentMessage`] (user, assistant, toolResult, bashExecution, custom).
    Message,
    /// `thinking_level_change`
    ThinkingLevelChange,
    /// `model_change`
    ModelChange,
    /// `compaction`: a summary that replaces older history in the context.
    Compaction,
    /// `branch_summary`: a summary of an abandoned branch, attached where `/tree` went.
    BranchSummary,
    /// `custom`: extension data; never part of the context.
    Custom,
    /// `custom_message`: an extension message that is part of the context.
    CustomMessage,
    /// `label`: sets or clears the label of another entry.
    Label,
    /// `session_info`: sets or clears the session's display name.
    SessionInfo,
    /// `context_edit` (pi ≥ 0.87): hides or replaces what an earlier entry contributes to the
    /// context, without touching that entry.
    ContextEdit,
    /// `usage` (pi ≥ 0.86): model usage that is not an assistant message (cache warming…);
    /// never part of the context, counted in session totals.
    Usage,
    /// Any other `type` string; the entry is kept and carried along verbatim.
    Unknown(String),
}

impl EntryType {
    /// Classifies a `type` string (spec: format.md §2.3).
    pub fn parse(s: &str) -> EntryType {
        match s {
            "message" => EntryType::Message,
            "thinking_level_change" => EntryType::ThinkingLevelChange,
            "model_change" => EntryType::ModelChange,
            "compaction" => EntryType::Compaction,
            "branch_summary" => EntryType::BranchSummary,
            "custom" => EntryType::Custom,
            "custom_message" => EntryType::CustomMessage,
            "label" => EntryType::Label,
            "session_info" => EntryType::SessionInfo,
            "context_edit" => EntryType::ContextEdit,
            "usage" => EntryType::Usage,
            other => EntryType::Unknown(other.to_owned()),
        }
    }

    /// The `type` string as written in the file.
    pub fn as_str(&self) -> &str {
        match self {
            EntryType::Message => "message",
            EntryType::ThinkingLevelChange => "thinking_level_change",
            EntryType::ModelChange => "model_change",
            EntryType::Compaction => "compaction",
            EntryType::BranchSummary => "branch_summary",
            EntryType::Custom => "custom",
            EntryType::CustomMessage => "custom_message",
            EntryType::Label => "label",
            EntryType::SessionInfo => "session_info",
            EntryType::ContextEdit => "context_edit",
            EntryType::Usage => "usage",
            EntryType::Unknown(s) => s,
        }
    }
}

/// A `message` entry: `type, id, parentId, timestamp, message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageEntry {
    /// Entry id (8 lowercase hex digits when generated).
    pub id: String,
    /// Parent entry id; `null` for a root.
    #[serde(rename = "parentId")]
    pub parent_id: Option<String>,
    /// Append time, ISO-8601 UTC with milliseconds.
    pub timestamp: String,
    /// The message, stored as pi received it.
    pub message: AgentMessage,
}

/// A `thinking_level_change` entry: `type, id, parentId, timestamp, thinkingLevel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkingLevelChangeEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id; `null` for a root.
    #[serde(rename = "parentId")]
    pub parent_id: Option<String>,
    /// Append time, ISO-8601 UTC with milliseconds.
    pub timestamp: String,
    /// One of `off, minimal, low, medium, high, xhigh` when pi wrote it (not validated).
    #[serde(rename = "thinkingLevel")]
    pub thinking_level: String,
}

/// A `model_change` entry: `type, id, parentId, timestamp, provider, modelId`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelChangeEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id; `null` for a root.
    #[serde(rename = "parentId")]
    pub parent_id: Option<String>,
    /// Append time, ISO-8601 UTC with milliseconds.
    pub timestamp: String,
    /// Provider name, e.g. `anthropic`.
    pub provider: String,
    /// Model id within the provider, e.g. `claude-sonnet-4-5`.
    #[serde(rename = "modelId")]
    pub model_id: String,
}

/// A `compaction` entry: `type, id, parentId, timestamp, summary, firstKeptEntryId, tokensBefore,
/// details?, usage?, fromHook?, systemMessage?` (spec: format.md §2.3, compaction.md §4.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id; `null` for a root.
    #[serde(rename = "parentId")]
    pub parent_id: Option<String>,
    /// Append time, ISO-8601 UTC with milliseconds.
    pub timestamp: String,
    /// The summary text that stands in for history before `first_kept_entry_id`.
    pub summary: String,
    /// Id of the first entry kept verbatim; not validated on append. The compaction's own id
    /// when it keeps nothing ("retain-none", pi ≥ 0.87).
    #[serde(rename = "firstKeptEntryId")]
    pub first_kept_entry_id: String,
    /// Context size in tokens before compacting.
    #[serde(rename = "tokensBefore")]
    pub tokens_before: u64,
    /// Any JSON; pi writes `{"readFiles":[…],"modifiedFiles":[…]}`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub details: Option<Value>,
    /// Usage of the summary request(s) (pi ≥ 0.81), a usage object as JSON.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub usage: Option<Value>,
    /// `false` when pith's own summarizer wrote it, `true` when an extension supplied it.
    #[serde(rename = "fromHook", skip_serializing_if = "Option::is_none", default)]
    pub from_hook: Option<bool>,
    /// The checkpoint of the prompt and tools at the compaction (pi ≥ 0.86): one `system`
    /// message replaying every system message of the context it replaced; emitted before the
    /// summary when the context is built (spec: tree-and-context.md §7.2).
    #[serde(
        rename = "systemMessage",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub system_message: Option<Value>,
}

/// A `branch_summary` entry:
/// `type, id, parentId, timestamp, fromId, summary, details?, usage?, fromHook?`
/// (spec: tree-and-context.md §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BranchSummaryEntry {
    /// Entry id.
    pub id: String,
    /// The position the summary is attached under; `null` at the root.
    #[serde(rename = "parentId")]
    pub parent_id: Option<String>,
    /// Append time, ISO-8601 UTC with milliseconds.
    pub timestamp: String,
    /// The leaf before the navigation (the last entry of the abandoned path), or `"root"`
    /// when the leaf was null (pi ≥ 0.84.3; older files hold the new position instead).
    /// Only copied into the context, never looked up.
    #[serde(rename = "fromId")]
    pub from_id: String,
    /// The summary text; an empty summary contributes nothing to the context.
    pub summary: String,
    /// Any JSON; pi writes `{"readFiles":[…],"modifiedFiles":[…]}`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub details: Option<Value>,
    /// Usage of the summary request (pi ≥ 0.81), a usage object as JSON.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub usage: Option<Value>,
    /// `true` when an extension supplied the summary.
    #[serde(rename = "fromHook", skip_serializing_if = "Option::is_none", default)]
    pub from_hook: Option<bool>,
}

/// A `custom` entry: `type, customType, data?, id, parentId, timestamp` (base keys last).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomEntry {
    /// The extension's id.
    #[serde(rename = "customType")]
    pub custom_type: String,
    /// Any JSON the extension stores; omitted when `None`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub data: Option<Value>,
    /// Entry id.
    pub id: String,
    /// Parent entry id; `null` for a root.
    #[serde(rename = "parentId")]
    pub parent_id: Option<String>,
    /// Append time, ISO-8601 UTC with milliseconds.
    pub timestamp: String,
}

/// A `custom_message` entry:
/// `type, customType, content, display, details?, id, parentId, timestamp` (base keys last).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomMessageEntry {
    /// The extension's id.
    #[serde(rename = "customType")]
    pub custom_type: String,
    /// A string, or text/image blocks.
    pub content: UserContent,
    /// Whether the UI shows the message.
    pub display: bool,
    /// Any JSON; omitted when `None`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub details: Option<Value>,
    /// Entry id.
    pub id: String,
    /// Parent entry id; `null` for a root.
    #[serde(rename = "parentId")]
    pub parent_id: Option<String>,
    /// Append time, ISO-8601 UTC with milliseconds.
    pub timestamp: String,
}

/// A `label` entry: `type, id, parentId, timestamp, targetId, label?` (spec: tree-and-context.md §4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id; `null` for a root.
    #[serde(rename = "parentId")]
    pub parent_id: Option<String>,
    /// Append time, ISO-8601 UTC with milliseconds.
    pub timestamp: String,
    /// The labelled entry.
    #[serde(rename = "targetId")]
    pub target_id: String,
    /// The label; `None` (key omitted) or `""` clears it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub label: Option<String>,
}

/// A `session_info` entry: `type, id, parentId, timestamp, name` (spec: tree-and-context.md §5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfoEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id; `null` for a root.
    #[serde(rename = "parentId")]
    pub parent_id: Option<String>,
    /// Append time, ISO-8601 UTC with milliseconds.
    pub timestamp: String,
    /// The display name, trimmed; `""` clears it. Readers treat a missing key as no name.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub name: Option<String>,
}

/// `replacement` of a `context_edit` that swaps the target's content (spec: format.md §2.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextReplacement {
    /// The new content: a string, or text/image blocks.
    pub content: UserContent,
}

/// A `context_edit` entry (pi ≥ 0.87): `type, id, parentId, timestamp, targetId, replacement`
/// (spec: format.md §2.3, tree-and-context.md §7.2 rules 6–7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextEditEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id; `null` for a root.
    #[serde(rename = "parentId")]
    pub parent_id: Option<String>,
    /// Append time, ISO-8601 UTC with milliseconds.
    pub timestamp: String,
    /// The entry whose contribution changes (on the same branch when pi appends it).
    #[serde(rename = "targetId")]
    pub target_id: String,
    /// `None` (written `null`) leaves the target out of the context; otherwise its content
    /// is replaced. Always written.
    pub replacement: Option<ContextReplacement>,
}

/// A `usage` entry (pi ≥ 0.86):
/// `type, id, parentId, timestamp, kind, provider, model, usage, note?` (spec: format.md §2.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id; `null` for a root.
    #[serde(rename = "parentId")]
    pub parent_id: Option<String>,
    /// Append time, ISO-8601 UTC with milliseconds.
    pub timestamp: String,
    /// What the usage was for, e.g. `cache_warm` (any string).
    pub kind: String,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// The usage object as JSON (pi 1.6.0's carries keys pith's [`crate::Usage`] lacks).
    pub usage: Value,
    /// Free text; omitted when empty.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub note: Option<String>,
}

/// Fields every entry has (spec: format.md §2.2), borrowed from any [`SessionEntry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryBase<'a> {
    /// Entry id.
    pub id: &'a str,
    /// Parent entry id; `None` for a root.
    pub parent_id: Option<&'a str>,
    /// Append time, ISO-8601 UTC with milliseconds.
    pub timestamp: &'a str,
}

/// One decoded entry line.
///
/// Serializes as `{"type":…, …payload}` in pi's key order. Deserializing an unknown `type`
/// (or a known type whose fields do not fit) gives [`SessionEntry::Unknown`] with the value.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEntry {
    /// `message`
    Message(MessageEntry),
    /// `thinking_level_change`
    ThinkingLevelChange(ThinkingLevelChangeEntry),
    /// `model_change`
    ModelChange(ModelChangeEntry),
    /// `compaction`
    Compaction(CompactionEntry),
    /// `branch_summary`
    BranchSummary(BranchSummaryEntry),
    /// `custom`
    Custom(CustomEntry),
    /// `custom_message`
    CustomMessage(CustomMessageEntry),
    /// `label`
    Label(LabelEntry),
    /// `session_info`
    SessionInfo(SessionInfoEntry),
    /// `context_edit`
    ContextEdit(ContextEditEntry),
    /// `usage`
    Usage(UsageEntry),
    /// Anything else, carried as the parsed value.
    Unknown(Value),
}

macro_rules! base_of {
    ($e:expr) => {
        EntryBase {
            id: &$e.id,
            parent_id: $e.parent_id.as_deref(),
            timestamp: &$e.timestamp,
        }
    };
}

impl SessionEntry {
    /// The entry's `type`.
    pub fn entry_type(&self) -> EntryType {
        match self {
            SessionEntry::Message(_) => EntryType::Message,
            SessionEntry::ThinkingLevelChange(_) => EntryType::ThinkingLevelChange,
            SessionEntry::ModelChange(_) => EntryType::ModelChange,
            SessionEntry::Compaction(_) => EntryType::Compaction,
            SessionEntry::BranchSummary(_) => EntryType::BranchSummary,
            SessionEntry::Custom(_) => EntryType::Custom,
            SessionEntry::CustomMessage(_) => EntryType::CustomMessage,
            SessionEntry::Label(_) => EntryType::Label,
            SessionEntry::SessionInfo(_) => EntryType::SessionInfo,
            SessionEntry::ContextEdit(_) => EntryType::ContextEdit,
            SessionEntry::Usage(_) => EntryType::Usage,
            SessionEntry::Unknown(v) => EntryType::Unknown(
                v.get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            ),
        }
    }

    /// `id`, `parentId` and `timestamp`; `None` for an unknown entry that lacks a string `id`.
    pub fn base(&self) -> Option<EntryBase<'_>> {
        Some(match self {
            SessionEntry::Message(e) => base_of!(e),
            SessionEntry::ThinkingLevelChange(e) => base_of!(e),
            SessionEntry::ModelChange(e) => base_of!(e),
            SessionEntry::Compaction(e) => base_of!(e),
            SessionEntry::BranchSummary(e) => base_of!(e),
            SessionEntry::Custom(e) => base_of!(e),
            SessionEntry::CustomMessage(e) => base_of!(e),
            SessionEntry::Label(e) => base_of!(e),
            SessionEntry::SessionInfo(e) => base_of!(e),
            SessionEntry::ContextEdit(e) => base_of!(e),
            SessionEntry::Usage(e) => base_of!(e),
            SessionEntry::Unknown(v) => EntryBase {
                id: v.get("id")?.as_str()?,
                parent_id: v.get("parentId").and_then(Value::as_str),
                timestamp: v.get("timestamp").and_then(Value::as_str).unwrap_or(""),
            },
        })
    }
}

/// Borrowing mirror of [`SessionEntry`] that lets serde write the `type` tag first.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Tagged<'a> {
    Message(&'a MessageEntry),
    ThinkingLevelChange(&'a ThinkingLevelChangeEntry),
    ModelChange(&'a ModelChangeEntry),
    Compaction(&'a CompactionEntry),
    BranchSummary(&'a BranchSummaryEntry),
    Custom(&'a CustomEntry),
    CustomMessage(&'a CustomMessageEntry),
    Label(&'a LabelEntry),
    SessionInfo(&'a SessionInfoEntry),
    ContextEdit(&'a ContextEditEntry),
    Usage(&'a UsageEntry),
}

impl Serialize for SessionEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SessionEntry::Message(e) => Tagged::Message(e).serialize(s),
            SessionEntry::ThinkingLevelChange(e) => Tagged::ThinkingLevelChange(e).serialize(s),
            SessionEntry::ModelChange(e) => Tagged::ModelChange(e).serialize(s),
            SessionEntry::Compaction(e) => Tagged::Compaction(e).serialize(s),
            SessionEntry::BranchSummary(e) => Tagged::BranchSummary(e).serialize(s),
            SessionEntry::Custom(e) => Tagged::Custom(e).serialize(s),
            SessionEntry::CustomMessage(e) => Tagged::CustomMessage(e).serialize(s),
            SessionEntry::Label(e) => Tagged::Label(e).serialize(s),
            SessionEntry::SessionInfo(e) => Tagged::SessionInfo(e).serialize(s),
            SessionEntry::ContextEdit(e) => Tagged::ContextEdit(e).serialize(s),
            SessionEntry::Usage(e) => Tagged::Usage(e).serialize(s),
            SessionEntry::Unknown(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for SessionEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        if !value.is_object() {
            return Err(D::Error::custom("an entry must be a JSON object"));
        }
        let kind = EntryType::parse(value.get("type").and_then(Value::as_str).unwrap_or(""));
        fn typed<T: serde::de::DeserializeOwned>(
            v: &Value,
            wrap: fn(T) -> SessionEntry,
        ) -> SessionEntry {
            match T::deserialize(v) {
                Ok(t) => wrap(t),
                Err(_) => SessionEntry::Unknown(v.clone()),
            }
        }
        Ok(match kind {
            EntryType::Message => typed(&value, SessionEntry::Message),
            EntryType::ThinkingLevelChange => typed(&value, SessionEntry::ThinkingLevelChange),
            EntryType::ModelChange => typed(&value, SessionEntry::ModelChange),
            EntryType::Compaction => typed(&value, SessionEntry::Compaction),
            EntryType::BranchSummary => typed(&value, SessionEntry::BranchSummary),
            EntryType::Custom => typed(&value, SessionEntry::Custom),
            EntryType::CustomMessage => typed(&value, SessionEntry::CustomMessage),
            EntryType::Label => typed(&value, SessionEntry::Label),
            EntryType::SessionInfo => typed(&value, SessionEntry::SessionInfo),
            EntryType::ContextEdit => typed(&value, SessionEntry::ContextEdit),
            EntryType::Usage => typed(&value, SessionEntry::Usage),
            EntryType::Unknown(_) => SessionEntry::Unknown(value),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::js::to_js_json;

    // The sample lines are verbatim from format.md §2.3 (a real pi run).
    #[test]
    fn pi_sample_lines_round_trip_byte_for_byte() {
        let lines = [
            r#"{"type":"custom","customType":"ext","data":{"a":1},"id":"91f64546","parentId":"f5a3fbf9","timestamp":"2026-11-30T09:32:43.734Z"}"#,
            r#"{"type":"label","id":"9b317b2d","parentId":"a8f13559","timestamp":"2026-11-30T09:32:43.735Z","targetId":"f5a3fbf9"}"#,
            r#"{"type":"custom_message","customType":"ext2","content":"injected","display":false,"id":"76357b72","parentId":"2e51ea6f","timestamp":"2026-11-30T09:32:43.735Z"}"#,
            r#"{"type":"compaction","id":"51161ad6","parentId":"1bc23b06","timestamp":"2026-11-30T09:32:43.735Z","summary":"sum2","firstKeptEntryId":"f5a3fbf9","tokensBefore":123,"details":{"readFiles":[]},"fromHook":false}"#,
            r#"{"type":"custom","customType":"ext3","id":"e4412d05","parentId":"51161ad6","timestamp":"2026-11-30T09:32:43.735Z"}"#,
            r#"{"type":"message","id":"6f3a0d50","parentId":"72241e8f","timestamp":"2026-11-30T09:46:10.228Z","message":{"role":"bashExecution","command":"echo hi; exit 3","output":"hi\n","exitCode":3,"cancelled":false,"truncated":false,"timestamp":1796031970228}}"#,
            r#"{"type":"message","id":"5b745e11","parentId":"6f3a0d50","timestamp":"2026-11-30T09:46:10.241Z","message":{"role":"bashExecution","command":"echo secret","output":"secret\n","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1796031970241,"excludeFromContext":true}}"#,
            // pi 1.6.0 (format.md §2.3).
            r#"{"type":"context_edit","id":"efde6ec4","parentId":"668c1c64","timestamp":"2026-12-01T13:19:54.492Z","targetId":"668c1c64","replacement":null}"#,
            r#"{"type":"context_edit","id":"0b346ee2","parentId":"3cf30810","timestamp":"2025-02-17T01:27:27.015Z","targetId":"786df697","replacement":{"content":"Token entry."}}"#,
            r#"{"type":"usage","id":"8d03d197","parentId":"53190130","timestamp":"2025-10-22T10:31:07.118Z","kind":"cache_warm","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1,"output":0,"cacheRead":0,"cacheWrite":9,"cacheWrite1h":9,"totalTokens":10,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0.1,"total":0.1}},"note":"extension override"}"#,
            r#"{"type":"compaction","id":"499b7bb3","parentId":"1803a6fa","timestamp":"2026-12-01T13:19:52.610Z","summary":"s","firstKeptEntryId":"499b7bb3","tokensBefore":99,"details":{"readFiles":[],"modifiedFiles":[]},"usage":{"input":1},"fromHook":false,"systemMessage":{"role":"system","content":"","sections":{"preamble":"P"},"timestamp":1796131192610}}"#,
            r#"{"type":"branch_summary","id":"b1","parentId":"a1","timestamp":"2026-12-01T13:19:52.610Z","fromId":"x9","summary":"s","details":{"readFiles":[],"modifiedFiles":[]},"usage":{"input":1},"fromHook":false}"#,
        ];
        for line in lines {
            let entry: SessionEntry = serde_json::from_str(line).expect("parses");
            assert!(!matches!(entry, SessionEntry::Unknown(_)), "typed: {line}");
            assert_eq!(to_js_json(&entry).expect("serializes"), line);
        }
    }

    #[test]
    fn unknown_type_is_kept_as_value() {
        let line = r#"{"type":"future_thing","id":"1","parentId":null,"x":[1,2]}"#;
        let entry: SessionEntry = serde_json::from_str(line).expect("parses");
        assert_eq!(
            entry.entry_type(),
            EntryType::Unknown("future_thing".into())
        );
        assert_eq!(entry.base().map(|b| b.id), Some("1"));
        assert_eq!(to_js_json(&entry).expect("serializes"), line);
    }
}
