//! `buildSessionContext`: the LLM context as a projection of the root→leaf path
//! (spec: tree-and-context.md §7).

use serde_json::{Map, Value};

use pith_events::{AgentMessage, EntryType};

use crate::entry::{Entry, Role, decode_json};
use crate::js::is_truthy;
use crate::js::js_date_value;
use crate::tree::{Leaf, SessionTree};

/// One message of a context, borrowed from the entry it projects.
#[derive(Debug, Clone, Copy)]
pub enum ContextMessage<'a> {
    /// A `message` entry's message, exactly as stored.
    Stored(&'a Entry),
    /// `{role:"custom", customType, content, display, details?, timestamp}` from a
    /// `custom_message` entry.
    Custom(&'a Entry),
    /// `{role:"branchSummary", summary, fromId, timestamp}` from a `branch_summary` entry.
    BranchSummary(&'a Entry),
    /// `{role:"compactionSummary", summary, tokensBefore, timestamp}` from a `compaction` entry.
    CompactionSummary(&'a Entry),
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
/// `leaf` is [`Leaf::Root`] for `leafId === null` (an empty context) or an entry index. Parent
/// cycles are cut at the first repeated entry, and a `message` entry without a message is
/// left out (spec: divergences.md "Reading"); otherwise the result is pi's.
pub fn build_session_context(tree: &SessionTree, leaf: Leaf) -> SessionContext<'_> {
    let Leaf::At(leaf) = leaf else {
        return SessionContext::empty();
    };
    let entries = tree.entries();
    let path = tree.path_to(leaf);

    let mut thinking: Option<usize> = None;
    let mut model: Option<usize> = None;
    let mut compaction: Option<usize> = None;
    for (pos, &i) in path.iter().enumerate() {
        let e = &entries[i];
        match e.kind() {
            EntryType::ThinkingLevelChange => thinking = Some(i),
            EntryType::ModelChange => model = Some(i),
            EntryType::Message if e.role() == Some(&Role::Assistant) => model = Some(i),
            EntryType::Compaction => compaction = Some(pos),
            _ => {}
        }
    }

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

    let mut messages = Vec::with_capacity(path.len());
    match compaction {
        None => {
            for &i in &path {
                project_entry(&entries[i], &mut messages);
            }
        }
        Some(cpos) => {
            let c = &entries[path[cpos]];
            messages.push(ContextMessage::CompactionSummary(c));
            let first_kept = fields(c).remove("firstKeptEntryId");
            let first_kept = first_kept.as_ref().and_then(Value::as_str);
            let start = path[..cpos]
                .iter()
                .position(|&i| Some(entries[i].id()) == first_kept)
                .unwrap_or(cpos);
            for &i in &path[start..cpos] {
                project_entry(&entries[i], &mut messages);
            }
            for &i in &path[cpos + 1..] {
                project_entry(&entries[i], &mut messages);
            }
        }
    }
    SessionContext {
        messages,
        thinking_level,
        model,
    }
}

/// Pushes what one path entry contributes (spec: tree-and-context.md §7.2 step 5).
fn project_entry<'a>(e: &'a Entry, messages: &mut Vec<ContextMessage<'a>>) {
    match e.kind() {
        EntryType::Message => {
            if e.message_raw().is_some_and(|m| m != "null") {
                messages.push(ContextMessage::Stored(e));
            }
        }
        EntryType::CustomMessage => messages.push(ContextMessage::Custom(e)),
        EntryType::BranchSummary => {
            if fields(e).get("summary").is_some_and(is_truthy) {
                messages.push(ContextMessage::BranchSummary(e));
            }
        }
        EntryType::ThinkingLevelChange
        | EntryType::ModelChange
        | EntryType::Compaction
        | EntryType::Custom
        | EntryType::Label
        | EntryType::SessionInfo
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
            ContextMessage::Stored(e)
            | ContextMessage::Custom(e)
            | ContextMessage::BranchSummary(e)
            | ContextMessage::CompactionSummary(e) => e,
        }
    }

    /// The message as JSON text, spelled as pi's `JSON.stringify` would spell it: a stored
    /// message is its raw text; projected ones are built in pi's key order with `undefined`
    /// members omitted.
    pub fn to_json(&self) -> String {
        match self {
            ContextMessage::Stored(e) => e
                .js_message_raw()
                .map_or_else(|| "null".to_owned(), |m| m.into_owned()),
            _ => pith_events::js::to_js_json(&self.projected()).unwrap_or_default(),
        }
    }

    /// The projected object of a non-stored message (`Value::Null` for a stored one).
    fn projected(&self) -> Value {
        let (e, role, keys): (&Entry, &str, &[(&str, &str)]) = match self {
            ContextMessage::Stored(_) => return Value::Null,
            ContextMessage::Custom(e) => (
                e,
                "custom",
                &[
                    ("customType", "customType"),
                    ("content", "content"),
                    ("display", "display"),
                    ("details", "details"),
                ],
            ),
            ContextMessage::BranchSummary(e) => (
                e,
                "branchSummary",
                &[("summary", "summary"), ("fromId", "fromId")],
            ),
            ContextMessage::CompactionSummary(e) => (
                e,
                "compactionSummary",
                &[("summary", "summary"), ("tokensBefore", "tokensBefore")],
            ),
        };
        let mut f = fields(e);
        let mut out = Map::new();
        out.insert("role".into(), Value::String(role.into()));
        for (from, to) in keys {
            if let Some(v) = f.remove(*from) {
                out.insert((*to).into(), v);
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
            ContextMessage::Stored(e) => decode_json(e.message_raw().unwrap_or("null")),
            _ => serde_json::from_value(self.projected()),
        }
    }
}

impl SessionContext<'_> {
    /// The context as pi's JSON object `{messages, thinkingLevel?, model}`.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(self.messages.len() * 256 + 64);
        out.push_str("{\"messages\":[");
        for (i, m) in self.messages.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&m.to_json());
        }
        out.push(']');
        if let Some(level) = &self.thinking_level {
            out.push_str(",\"thinkingLevel\":");
            out.push_str(&pith_events::js::to_js_json(level).unwrap_or_default());
        }
        out.push_str(",\"model\":");
        match &self.model {
            None => out.push_str("null"),
            Some(m) => {
                let mut obj = Map::new();
                if let Some(p) = &m.provider {
                    obj.insert("provider".into(), p.clone());
                }
                if let Some(id) = &m.model_id {
                    obj.insert("modelId".into(), id.clone());
                }
                out.push_str(&pith_events::js::to_js_json(&obj).unwrap_or_default());
            }
        }
        out.push('}');
        out
    }
}

#[cfg(test)]
mod tests;
