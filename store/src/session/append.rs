//! pi's append API (spec: tree-and-context.md §2.1): every append creates an entry whose parent
//! is the leaf, makes it the leaf and persists it (spec: format.md §7).

use std::sync::Arc;

use serde_json::Value;

use pith_events::js::to_js_json;
use pith_events::{
    AgentMessage, BranchSummaryEntry, CompactionEntry, ContentBlock, ContextEditEntry,
    ContextReplacement, CustomEntry, CustomMessageEntry, EntryType, LabelEntry, MessageEntry,
    ModelChangeEntry, SessionEntry, SessionInfoEntry, ThinkingLevelChangeEntry, UsageEntry,
    UserContent,
};

use super::{ID_ATTEMPTS, Session};
use crate::entry::{Entry, Role};
use crate::error::{Error, Result};
use pith_events::js::js_trim;

use crate::system::current_system_message;

impl Session {
    /// A fresh entry id, collision-checked against every id in the session.
    pub(super) fn next_id(&self) -> String {
        (0..ID_ATTEMPTS)
            .map(|_| self.env.ids.entry_id())
            .find(|id| !self.tree.contains_id(id))
            .unwrap_or_else(|| self.env.ids.long_id())
    }

    fn parent_id(&self) -> Option<String> {
        self.tree.leaf_id().map(str::to_owned)
    }

    /// Appends one entry built by `build(id, parentId, timestamp)` at the leaf, persists it
    /// and returns its id.
    ///
    /// Errors: [`Error::Io`] when writing fails; the entry stays in memory and is written by
    /// the next successful write.
    fn append(
        &mut self,
        build: impl FnOnce(String, Option<String>, String) -> SessionEntry,
    ) -> Result<String> {
        let id = self.next_id();
        let entry = build(id.clone(), self.parent_id(), self.env.now_iso());
        let text = to_js_json(&entry)?;
        let entry = Entry::parse(&text, 0).map_err(|why| {
            Error::Serialize(serde::de::Error::custom(format!(
                "pith wrote an invalid entry: {why}"
            )))
        })?;
        Arc::make_mut(&mut self.tree).push(entry);
        self.flush()?;
        Ok(id)
    }

    /// `appendMessage`: a `message` entry (spec: tree-and-context.md §2.1).
    ///
    /// Errors: as [`Session::flush`].
    pub fn append_message(&mut self, message: AgentMessage) -> Result<String> {
        self.append(|id, parent_id, timestamp| {
            SessionEntry::Message(MessageEntry {
                id,
                parent_id,
                timestamp,
                message,
            })
        })
    }

    /// `appendThinkingLevelChange`.
    ///
    /// Errors: as [`Session::flush`].
    pub fn append_thinking_level_change(&mut self, thinking_level: &str) -> Result<String> {
        let thinking_level = thinking_level.to_owned();
        self.append(|id, parent_id, timestamp| {
            SessionEntry::ThinkingLevelChange(ThinkingLevelChangeEntry {
                id,
                parent_id,
                timestamp,
                thinking_level,
            })
        })
    }

    /// `appendModelChange`.
    ///
    /// Errors: as [`Session::flush`].
    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> Result<String> {
        let (provider, model_id) = (provider.to_owned(), model_id.to_owned());
        self.append(|id, parent_id, timestamp| {
            SessionEntry::ModelChange(ModelChangeEntry {
                id,
                parent_id,
                timestamp,
                provider,
                model_id,
            })
        })
    }

    /// `appendCompaction` keeping from `first_kept_entry_id` (not validated, as in pi), without
    /// usage; see [`Session::append_compaction_entry`].
    ///
    /// Errors: as [`Session::flush`].
    pub fn append_compaction(
        &mut self,
        summary: &str,
        first_kept_entry_id: &str,
        tokens_before: u64,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<String> {
        self.append_compaction_entry(
            summary,
            Some(first_kept_entry_id),
            tokens_before,
            details,
            from_hook,
            None,
        )
    }

    /// `appendCompaction(summary, firstKeptEntryId, tokensBefore, details, fromHook, usage)`
    /// as pi 1.6.0 writes it (spec: compaction.md §4.1, format.md §2.3): `None` as the first
    /// kept id stores the entry's own id (retain-none: nothing before it is kept); `usage` is
    /// the summary request's; `systemMessage` is the checkpoint of the prompt and tools, the
    /// replay of every system message of the current context, stamped with the compaction's
    /// time (absent when the context holds no system message and no tool).
    ///
    /// Errors: as [`Session::flush`].
    pub fn append_compaction_entry(
        &mut self,
        summary: &str,
        first_kept_entry_id: Option<&str>,
        tokens_before: u64,
        details: Option<Value>,
        from_hook: Option<bool>,
        usage: Option<Value>,
    ) -> Result<String> {
        let summary = summary.to_owned();
        let first_kept_entry_id = first_kept_entry_id.map(str::to_owned);
        let checkpoint = {
            let context = self.build_context();
            let systems: Vec<Value> = context
                .messages
                .iter()
                .filter(|m| m.is_system())
                .filter_map(|m| serde_json::from_str(&m.to_json()).ok())
                .collect();
            current_system_message(&systems)
        };
        self.append(|id, parent_id, timestamp| {
            let system_message = checkpoint.map(|mut c| {
                let ms = pith_events::js::date_parse(&timestamp);
                if let (Some(obj), false) = (c.as_object_mut(), ms.is_nan()) {
                    obj.insert("timestamp".into(), Value::from(ms as i64));
                }
                c
            });
            SessionEntry::Compaction(CompactionEntry {
                first_kept_entry_id: first_kept_entry_id.unwrap_or_else(|| id.clone()),
                id,
                parent_id,
                timestamp,
                summary,
                tokens_before,
                details,
                usage,
                from_hook,
                system_message,
            })
        })
    }

    /// `appendCustomEntry`: extension data, never part of the context.
    ///
    /// Errors: as [`Session::flush`].
    pub fn append_custom_entry(
        &mut self,
        custom_type: &str,
        data: Option<Value>,
    ) -> Result<String> {
        let custom_type = custom_type.to_owned();
        self.append(|id, parent_id, timestamp| {
            SessionEntry::Custom(CustomEntry {
                custom_type,
                data,
                id,
                parent_id,
                timestamp,
            })
        })
    }

    /// `appendCustomMessageEntry`: an extension message that is part of the context.
    ///
    /// Errors: as [`Session::flush`].
    pub fn append_custom_message_entry(
        &mut self,
        custom_type: &str,
        content: UserContent,
        display: bool,
        details: Option<Value>,
    ) -> Result<String> {
        let custom_type = custom_type.to_owned();
        self.append(|id, parent_id, timestamp| {
            SessionEntry::CustomMessage(CustomMessageEntry {
                custom_type,
                content,
                display,
                details,
                id,
                parent_id,
                timestamp,
            })
        })
    }

    /// `appendSessionInfo`: stores `name` with every run of line breaks turned into one space,
    /// then trimmed (pi ≥ 0.80; spec: tree-and-context.md §5); an empty name clears it.
    ///
    /// Errors: as [`Session::flush`].
    pub fn append_session_info(&mut self, name: &str) -> Result<String> {
        let name = stored_session_name(name);
        self.append(|id, parent_id, timestamp| {
            SessionEntry::SessionInfo(SessionInfoEntry {
                id,
                parent_id,
                timestamp,
                name: Some(name),
            })
        })
    }

    /// `appendLabelChange`: sets (`Some` non-empty) or clears (`None`, `""`) a label.
    ///
    /// Errors: [`Error::EntryNotFound`] for an unknown target; as [`Session::flush`].
    pub fn append_label_change(&mut self, target_id: &str, label: Option<&str>) -> Result<String> {
        if !self.tree.contains_id(target_id) {
            return Err(Error::EntryNotFound(target_id.to_owned()));
        }
        let (target_id, label) = (target_id.to_owned(), label.map(str::to_owned));
        self.append(|id, parent_id, timestamp| {
            SessionEntry::Label(LabelEntry {
                id,
                parent_id,
                timestamp,
                target_id,
                label,
            })
        })
    }

    /// `appendContextEdit(targetId, replacement)` (pi ≥ 0.87; spec: tree-and-context.md §2.1):
    /// `None` leaves the target out of the context, `Some(content)` replaces its content (a
    /// string for an assistant or toolResult target is stored as one text block).
    ///
    /// Errors: [`Error::EntryNotFound`] for an unknown target, [`Error::NotOnBranch`] when it
    /// is not on the path to the leaf, [`Error::NotEditable`] unless it is a custom message or
    /// a user, assistant or toolResult message; as [`Session::flush`].
    pub fn append_context_edit(
        &mut self,
        target_id: &str,
        replacement: Option<UserContent>,
    ) -> Result<String> {
        let target = self
            .tree
            .get(target_id)
            .ok_or_else(|| Error::EntryNotFound(target_id.to_owned()))?;
        if !self
            .tree
            .get_branch(None)
            .iter()
            .any(|e| std::ptr::eq(*e, target))
        {
            return Err(Error::NotOnBranch(target_id.to_owned()));
        }
        let as_blocks = match (target.kind(), target.role()) {
            (EntryType::CustomMessage, _) | (EntryType::Message, Some(Role::User)) => false,
            (EntryType::Message, Some(Role::Assistant | Role::ToolResult)) => true,
            _ => return Err(Error::NotEditable(target_id.to_owned())),
        };
        let replacement = replacement.map(|content| ContextReplacement {
            content: match content {
                UserContent::Text(text) if as_blocks => {
                    UserContent::Blocks(vec![ContentBlock::text(text)])
                }
                other => other,
            },
        });
        let target_id = target_id.to_owned();
        self.append(|id, parent_id, timestamp| {
            SessionEntry::ContextEdit(ContextEditEntry {
                id,
                parent_id,
                timestamp,
                target_id,
                replacement,
            })
        })
    }

    /// `appendUsage(kind, provider, model, usage, note?)` (pi ≥ 0.86): model usage that is not
    /// an assistant message, never part of the context; an empty note is left out.
    ///
    /// Errors: as [`Session::flush`].
    pub fn append_usage(
        &mut self,
        kind: &str,
        provider: &str,
        model: &str,
        usage: Value,
        note: Option<&str>,
    ) -> Result<String> {
        let (kind, provider, model) = (kind.to_owned(), provider.to_owned(), model.to_owned());
        let note = note.filter(|n| !n.is_empty()).map(str::to_owned);
        self.append(|id, parent_id, timestamp| {
            SessionEntry::Usage(UsageEntry {
                id,
                parent_id,
                timestamp,
                kind,
                provider,
                model,
                usage,
                note,
            })
        })
    }

    /// `branchWithSummary`: moves the leaf to `from` (`None` = root) and appends a
    /// `branch_summary` there whose `fromId` is the leaf before the move (the last entry of the
    /// path left behind), or `"root"` when the leaf was null (pi ≥ 0.84.3; spec:
    /// tree-and-context.md §2–3); `usage` is the summary request's (pi ≥ 0.81).
    ///
    /// Errors: [`Error::EntryNotFound`]; as [`Session::flush`].
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: &str,
        details: Option<Value>,
        from_hook: Option<bool>,
        usage: Option<Value>,
    ) -> Result<String> {
        let from_id = self.tree.leaf_id().unwrap_or("root").to_owned();
        match from {
            Some(id) => Arc::make_mut(&mut self.tree).branch(id)?,
            None => Arc::make_mut(&mut self.tree).reset_leaf(),
        }
        let summary = summary.to_owned();
        self.append(|id, parent_id, timestamp| {
            SessionEntry::BranchSummary(BranchSummaryEntry {
                id,
                parent_id,
                timestamp,
                from_id,
                summary,
                details,
                usage,
                from_hook,
            })
        })
    }
}

/// A session name as pi ≥ 0.80 stores it: every run of line breaks one space, then trimmed
/// (`"Tree\nand labels  "` ⇒ `"Tree and labels"`); empty means no name.
pub fn stored_session_name(name: &str) -> String {
    js_trim(&collapse_breaks(name)).to_owned()
}

/// `name.replace(/[\r\n]+/g, " ")`: every run of CR/LF characters becomes one space.
fn collapse_breaks(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_break = false;
    for c in name.chars() {
        if matches!(c, '\r' | '\n') {
            if !in_break {
                out.push(' ');
            }
            in_break = true;
        } else {
            out.push(c);
            in_break = false;
        }
    }
    out
}
