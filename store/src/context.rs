//! `buildSessionContext`: the LLM context as a projection of the root→leaf path
//! (spec: tree-and-context.md §7).

use serde_json::{Map, Value};

use pith_events::js::{js_date_value, js_truthy};
use pith_events::{AgentMessage, EntryType};

use crate::entry::{Entry, Role, decode_json};
use crate::scan;
use crate::tree::{Leaf, SessionTree};

pub(crate) mod edits;
use edits::{Edit, Replacement};

/// One message of a context, borrowed from the entry it projects.
#[derive(Debug, Clone, Copy)]
pub enum ContextMessage<'a> {
    /// A `message` entry's message: exactly as stored unless its content was normalised or
    /// replaced by a context edit.
    Stored(&'a Entry, Content<'a>),
    /// `{role:"custom", customType, content, display, details?, timestamp}` from a
    /// `custom_message` entry (a `null` or missing content reads as `[]`, or the edit's).
    Custom(&'a Entry, Content<'a>),
    /// `{role:"branchSummary", summary, fromId, timestamp}` from a `branch_summary` entry.
    BranchSummary(&'a Entry),
    /// `{role:"compactionSummary", summary, tokensBefore, timestamp}` from a `compaction` entry.
    CompactionSummary(&'a Entry),
    /// The `systemMessage` checkpoint of the newest compaction, exactly as stored (pi ≥ 0.86).
    Checkpoint(&'a Entry),
}

/// What a projected message's `content` is (spec: tree-and-context.md §7.2 rules 6–7). Only
/// the rare normalised or edited messages are ever rewritten; the rest are handed out as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content<'a> {
    /// As stored.
    AsStored,
    /// `[]`: the `null` or missing content of a user, assistant or toolResult message.
    EmptyBlocks,
    /// `""`: the `null` or missing content of a system message.
    EmptyText,
    /// A context edit's `replacement.content`: raw JSON borrowed from the edit entry.
    Replaced(&'a str),
    /// A context edit's string replacement on an assistant or toolResult message: the raw JSON
    /// string literal, written as `[{"type":"text","text":…}]`.
    TextBlock(&'a str),
    /// A context edit whose replacement holds no `content` (`undefined` in pi): the member is
    /// left out.
    Removed,
}

/// The model a context was last using: raw JSON values of `provider` and `modelId`
/// (`None` where the source lacks the member, as `JSON.stringify` omits `undefined`).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRef {
    /// Provider, e.g. `"anthropic"`.
    pub provider: Option<Value>,
    /// Model id.
    pub model_id: Option<Value>,
}

/// Result of [`build_session_context`].
#[derive(Debug, Clone)]
pub struct SessionContext<'a> {
    /// The projected messages, oldest first.
    pub messages: Vec<ContextMessage<'a>>,
    /// `thinkingLevel`: `"off"` by default; the raw value of the last change on the path;
    /// `None` when that change lacks the key (pi then omits the member).
    pub thinking_level: Option<Value>,
    /// The last `model_change` or assistant message on the path; `None` is `null`.
    pub model: Option<ModelRef>,
}

impl SessionContext<'_> {
    fn empty() -> SessionContext<'static> {
        SessionContext {
            messages: Vec::new(),
            thinking_level: Some(Value::String("off".into())),
            model: None,
        }
    }
}

/// Builds the context at `leaf` (spec: tree-and-context.md §7.2). Pure; linear in the path's
/// length (message bodies are handed out as stored, not decoded).
///
/// `leaf` is [`Leaf::Root`] for `leafId === null` (an empty context) or an entry index. The
/// newest compaction on the path contributes its checkpoint and summary, then the kept range
/// without its system messages, then what follows it; the latest context edit per target
/// among those entries hides or replaces the target. Parent cycles are cut at the first
/// repeated entry, and a `message` entry without a message is left out (spec: divergences.md
/// "Reading"); otherwise the result is pi's.
pub fn build_session_context(tree: &SessionTree, leaf: Leaf) -> SessionContext<'_> {
    let Leaf::At(leaf) = leaf else {
        return SessionContext::empty();
    };
    let entries = tree.entries();
    let Walk {
        path,
        thinking,
        model,
        compaction,
        has_edits,
    } = Walk::new(entries, tree.path_to(leaf));

    let thinking_level = match thinking {
        None => Some(Value::String("off".into())),
        Some(i) => fields(&entries[i]).remove("thinkingLevel"),
    };
    let model = model.map(|i| {
        let e = &entries[i];
        if e.kind() == &EntryType::ModelChange {
            let mut f = fields(e);
            ModelRef {
                provider: f.remove("provider"),
                model_id: f.remove("modelId"),
            }
        } else {
            let mut m: Map<String, Value> = e
                .message_raw()
                .and_then(|raw| decode_json(raw).ok())
                .unwrap_or_default();
            ModelRef {
                provider: m.remove("provider"),
                model_id: m.remove("model"),
            }
        }
    });

    let list = ContextEntries::new(entries, &path, compaction);
    // Edits are rare: without one on the path no map is built (no allocation).
    let edits = if has_edits {
        edits::latest_per_target(entries, list.iter())
    } else {
        edits::Edits::default()
    };
    let mut messages = Vec::with_capacity(path.len() + 1);
    for i in list.iter() {
        let e = &entries[i];
        let head = Some(i) == list.head;
        // An older compaction inside the kept range contributes nothing (rule 7).
        if e.kind() == &EntryType::Compaction && !head {
            continue;
        }
        match edits.get(e.id()) {
            Some(Edit::Hide) => {}
            Some(Edit::Replace(r)) => project_entry(e, head, Some(&r), &mut messages),
            None => project_entry(e, head, None, &mut messages),
        }
    }
    SessionContext {
        messages,
        thinking_level,
        model,
    }
}

/// Indices of the entries whose bodies [`build_session_context`] reads for the context at
/// `leaf`: the context entries and the message that sets the model, in no particular order.
/// Any other entry may have its message body left in the file, read back on first use
/// (spec: format.md §6, `Bodies::Elided`, `Entry::set_body_in`).
pub(crate) fn entries_read(tree: &SessionTree, leaf: usize) -> Vec<usize> {
    let walk = Walk::new(tree.entries(), tree.path_to(leaf));
    let list = ContextEntries::new(tree.entries(), &walk.path, walk.compaction);
    list.iter().chain(walk.model).collect()
}

/// One walk down a path: where the settings the context carries were last set.
struct Walk {
    path: Vec<usize>,
    /// The last thinking level change.
    thinking: Option<usize>,
    /// The last model change or assistant message.
    model: Option<usize>,
    /// Position in `path` of the newest compaction.
    compaction: Option<usize>,
    has_edits: bool,
}

impl Walk {
    fn new(entries: &[Entry], path: Vec<usize>) -> Walk {
        let mut walk = Walk {
            path: Vec::new(),
            thinking: None,
            model: None,
            compaction: None,
            has_edits: false,
        };
        for (pos, &i) in path.iter().enumerate() {
            let e = &entries[i];
            match e.kind() {
                EntryType::ThinkingLevelChange => walk.thinking = Some(i),
                EntryType::ModelChange => walk.model = Some(i),
                EntryType::Message if e.role() == Some(&Role::Assistant) => walk.model = Some(i),
                EntryType::Compaction => walk.compaction = Some(pos),
                EntryType::ContextEdit => walk.has_edits = true,
                _ => {}
            }
        }
        walk.path = path;
        walk
    }
}

/// The context entries of a path (spec: tree-and-context.md §7.2 rule 5): without a compaction
/// the whole path; otherwise the newest compaction (the head), the kept range before it
/// without its `system` messages, and every entry after it. Indices into the tree's entries.
struct ContextEntries<'p> {
    entries: &'p [Entry],
    /// The newest compaction on the path.
    head: Option<usize>,
    /// From `firstKeptEntryId` up to the compaction (empty when that id is not before it,
    /// e.g. a retain-none compaction naming itself).
    kept: &'p [usize],
    /// Everything after the compaction, or the whole path without one.
    after: &'p [usize],
}

impl<'p> ContextEntries<'p> {
    fn new(entries: &'p [Entry], path: &'p [usize], compaction: Option<usize>) -> Self {
        let Some(cpos) = compaction else {
            return ContextEntries {
                entries,
                head: None,
                kept: &[],
                after: path,
            };
        };
        let c = &entries[path[cpos]];
        let first_kept = member(c, "firstKeptEntryId").and_then(scan::string_value);
        let start = path[..cpos]
            .iter()
            .position(|&i| Some(entries[i].id()) == first_kept.as_deref())
            .unwrap_or(cpos);
        ContextEntries {
            entries,
            head: Some(path[cpos]),
            kept: &path[start..cpos],
            after: &path[cpos + 1..],
        }
    }

    fn iter(&self) -> impl Iterator<Item = usize> + Clone + '_ {
        // The checkpoint stands for every system message before the compaction (pi ≥ 0.86).
        let not_system = |&i: &usize| {
            let e = &self.entries[i];
            !(e.kind() == &EntryType::Message && e.role() == Some(&Role::System))
        };
        self.head
            .into_iter()
            .chain(self.kept.iter().copied().filter(not_system))
            .chain(self.after.iter().copied())
    }
}

/// The raw JSON of top-level member `key` of an entry (the last one when repeated, as
/// `JSON.parse` keeps it), without decoding the rest. For the few entries read per context
/// (compactions, edits); message bodies never go through here.
fn member<'a>(e: &'a Entry, key: &str) -> Option<&'a str> {
    let raw = e.raw();
    let members = scan::object_members(raw)?;
    members
        .iter()
        .rev()
        .find(|m| m.key == key)
        .map(|m| m.value.of(raw))
}

/// Pushes what one context entry contributes (spec: tree-and-context.md §7.2 rule 7), with
/// `replacement` the content of the context edit that applies to it, if any (rule 6: it
/// changes user, assistant, toolResult and custom messages; other roles stay as they are).
fn project_entry<'a>(
    e: &'a Entry,
    head: bool,
    replacement: Option<&Replacement<'a>>,
    messages: &mut Vec<ContextMessage<'a>>,
) {
    match e.kind() {
        EntryType::Message => {
            if !e.has_message() {
                return;
            }
            let role = e.role();
            let content = match (replacement, role) {
                (Some(r), Some(Role::Assistant | Role::ToolResult)) => r.content(true),
                (Some(r), Some(Role::User | Role::Custom)) => r.content(false),
                _ if e.has_null_content() => match role {
                    Some(Role::System) => Content::EmptyText,
                    Some(Role::User | Role::Assistant | Role::ToolResult) => Content::EmptyBlocks,
                    _ => Content::AsStored,
                },
                _ => Content::AsStored,
            };
            messages.push(ContextMessage::Stored(e, content));
        }
        EntryType::CustomMessage => messages.push(ContextMessage::Custom(
            e,
            replacement.map_or(Content::AsStored, |r| r.content(false)),
        )),
        EntryType::BranchSummary => {
            if js_truthy(member(e, "summary")) {
                messages.push(ContextMessage::BranchSummary(e));
            }
        }
        EntryType::Compaction => {
            if head {
                if js_truthy(member(e, "systemMessage")) {
                    messages.push(ContextMessage::Checkpoint(e));
                }
                messages.push(ContextMessage::CompactionSummary(e));
            }
        }
        EntryType::ThinkingLevelChange
        | EntryType::ModelChange
        | EntryType::Custom
        | EntryType::Label
        | EntryType::SessionInfo
        | EntryType::ContextEdit
        | EntryType::Usage
        | EntryType::Unknown(_) => {}
    }
}

/// The entry's members as an ordered map (empty if it does not decode).
fn fields(e: &Entry) -> Map<String, Value> {
    e.decode_as::<Map<String, Value>>().unwrap_or_default()
}

/// `new Date(entry.timestamp).getTime()` as JSON: a number, or `null` for NaN.
fn date_json(e: &Entry) -> Value {
    let ms = js_date_value(e.timestamp_raw());
    if ms.is_nan() {
        Value::Null
    } else {
        Value::from(ms as i64)
    }
}

impl ContextMessage<'_> {
    /// The entry this message projects.
    pub fn entry(&self) -> &Entry {
        match self {
            ContextMessage::Stored(e, _)
            | ContextMessage::Custom(e, _)
            | ContextMessage::BranchSummary(e)
            | ContextMessage::CompactionSummary(e)
            | ContextMessage::Checkpoint(e) => e,
        }
    }

    /// Whether this is a `role:"system"` message: a stored one or a compaction checkpoint.
    pub fn is_system(&self) -> bool {
        match self {
            ContextMessage::Stored(e, _) => e.role() == Some(&Role::System),
            ContextMessage::Checkpoint(_) => true,
            ContextMessage::Custom(..)
            | ContextMessage::BranchSummary(_)
            | ContextMessage::CompactionSummary(_) => false,
        }
    }

    /// The message as JSON text, spelled as pi's `JSON.stringify` would spell it: a stored
    /// message (and a checkpoint) is its raw text, with only `content` rewritten when it was
    /// normalised or edited (in place, or appended last when missing, as `{...m, content}`
    /// does); projected ones are built in pi's key order with `undefined` members omitted.
    pub fn to_json(&self) -> String {
        match self {
            ContextMessage::Stored(e, Content::AsStored) => e
                .js_message_raw()
                .map_or_else(|| "null".to_owned(), |m| m.into_owned()),
            ContextMessage::Stored(e, content) => {
                let raw = e.message_raw().unwrap_or("null");
                let edited = match content.json() {
                    Some(value) => scan::set_member(raw, "content", &value),
                    None => scan::remove_member(raw, "content"),
                };
                // Replacement text may hold numbers beyond f64's range, as the message may.
                scan::js_compatible(edited.as_deref().unwrap_or(raw)).into_owned()
            }
            ContextMessage::Checkpoint(e) => member(e, "systemMessage").map_or_else(
                || "null".to_owned(),
                |m| scan::js_compatible(m).into_owned(),
            ),
            _ => pith_events::js::to_js_json(&self.projected()).unwrap_or_default(),
        }
    }

    /// The projected object of a `custom_message` or summary (`Value::Null` otherwise).
    fn projected(&self) -> Value {
        let (e, role, keys): (&Entry, &str, &[&str]) = match self {
            ContextMessage::Stored(..) | ContextMessage::Checkpoint(_) => return Value::Null,
            ContextMessage::Custom(e, _) => (
                e,
                "custom",
                &["customType", "content", "display", "details"],
            ),
            ContextMessage::BranchSummary(e) => (e, "branchSummary", &["summary", "fromId"]),
            ContextMessage::CompactionSummary(e) => {
                (e, "compactionSummary", &["summary", "tokensBefore"])
            }
        };
        let mut f = fields(e);
        let mut out = Map::new();
        out.insert("role".into(), Value::String(role.into()));
        for key in keys {
            let mut v = f.remove(*key);
            if let (ContextMessage::Custom(_, content), &"content") = (self, key) {
                // `createCustomMessage(customType, entry.content ?? [], …)`, then the edit's
                // content in the same place.
                v = match content {
                    Content::AsStored => Some(
                        v.filter(|v| !v.is_null())
                            .unwrap_or_else(|| Value::Array(Vec::new())),
                    ),
                    other => other.json().and_then(|raw| decode_json(&raw).ok()),
                };
            }
            if let Some(v) = v {
                out.insert((*key).into(), v);
            }
        }
        out.insert("timestamp".into(), date_json(e));
        Value::Object(out)
    }

    /// The message in the typed vocabulary, for sending to a model.
    ///
    /// Errors: the stored JSON does not decode (numbers beyond f64 range and the like).
    pub fn to_agent_message(&self) -> Result<AgentMessage, serde_json::Error> {
        match self {
            ContextMessage::Stored(e, Content::AsStored) => {
                decode_json(e.message_raw().unwrap_or("null"))
            }
            ContextMessage::Stored(..) | ContextMessage::Checkpoint(_) => {
                decode_json(&self.to_json())
            }
            _ => serde_json::from_value(self.projected()),
        }
    }
}

impl Content<'_> {
    /// The raw JSON of the content member; `None` when it is left out.
    fn json(&self) -> Option<std::borrow::Cow<'_, str>> {
        use std::borrow::Cow;
        match self {
            Content::AsStored => None,
            Content::EmptyBlocks => Some(Cow::Borrowed("[]")),
            Content::EmptyText => Some(Cow::Borrowed("\"\"")),
            Content::Replaced(raw) => Some(Cow::Borrowed(raw)),
            Content::TextBlock(text) => Some(Cow::Owned(format!(
                "[{{\"type\":\"text\",\"text\":{text}}}]"
            ))),
            Content::Removed => None,
        }
    }
}

impl SessionContext<'_> {
    /// The context as pi's JSON object `{messages, thinkingLevel?, model}`.
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(self.messages.len() * 256 + 64);
        // Writing into a Vec cannot fail.
        let _ = self.write_json(&mut out);
        // Every piece written is text.
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    /// Writes [`SessionContext::to_json`]'s text to `out` without building it whole: a stored
    /// message's text goes out from the entry as it is.
    ///
    /// Errors: those of `out`.
    pub fn write_json(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        out.write_all(b"{\"messages\":[")?;
        for (i, m) in self.messages.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            match m {
                ContextMessage::Stored(e, Content::AsStored) => {
                    out.write_all(e.js_message_raw().as_deref().unwrap_or("null").as_bytes())?
                }
                _ => out.write_all(m.to_json().as_bytes())?,
            }
        }
        out.write_all(b"]")?;
        if let Some(level) = &self.thinking_level {
            out.write_all(b",\"thinkingLevel\":")?;
            out.write_all(
                pith_events::js::to_js_json(level)
                    .unwrap_or_default()
                    .as_bytes(),
            )?;
        }
        out.write_all(b",\"model\":")?;
        match &self.model {
            None => out.write_all(b"null")?,
            Some(m) => {
                let mut obj = Map::new();
                if let Some(p) = &m.provider {
                    obj.insert("provider".into(), p.clone());
                }
                if let Some(id) = &m.model_id {
                    obj.insert("modelId".into(), id.clone());
                }
                out.write_all(
                    pith_events::js::to_js_json(&obj)
                        .unwrap_or_default()
                        .as_bytes(),
                )?;
            }
        }
        out.write_all(b"}")
    }
}

#[cfg(test)]
mod tests;
