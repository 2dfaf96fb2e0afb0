//! pi's append API (spec: tree-and-context.md §2.1): every append creates an entry whose parent
//! is the leaf, makes it the leaf and persists it (spec: format.md §7).

use serde_json::Value;

use pith_events::js::to_js_json;
use pith_events::{
    AgentMessage, BranchSummaryEntry, CompactionEntry, CustomEntry, CustomMessageEntry, LabelEntry,
    MessageEntry, ModelChangeEntry, SessionEntry, SessionInfoEntry, ThinkingLevelChangeEntry,
    UserContent,
};

use super::{ID_ATTEMPTS, Session};
use crate::entry::Entry;
use crate::error::{Error, Result};
use crate::js::js_trim;

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
        self.tree.push(entry);
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

    /// `appendCompaction` (`first_kept_entry_id` is not validated, as in pi).
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
        let (summary, first_kept_entry_id) = (summary.to_owned(), first_kept_entry_id.to_owned());
        self.append(|id, parent_id, timestamp| {
            SessionEntry::Compaction(CompactionEntry {
                id,
                parent_id,
                timestamp,
                summary,
                first_kept_entry_id,
                tokens_before,
                details,
                from_hook,
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

    /// `appendSessionInfo`: stores `name` trimmed; an empty name clears it.
    ///
    /// Errors: as [`Session::flush`].
    pub fn append_session_info(&mut self, name: &str) -> Result<String> {
        let name = js_trim(name).to_owned();
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

    /// `branchWithSummary`: moves the leaf to `from` (`None` = root) and appends a
    /// `branch_summary` there with `fromId = from ?? "root"` (spec: tree-and-context.md §2).
    ///
    /// Errors: [`Error::EntryNotFound`]; as [`Session::flush`].
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: &str,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<String> {
        match from {
            Some(id) => self.tree.branch(id)?,
            None => self.tree.reset_leaf(),
        }
        let summary = summary.to_owned();
        let from_id = from.unwrap_or("root").to_owned();
        self.append(|id, parent_id, timestamp| {
            SessionEntry::BranchSummary(BranchSummaryEntry {
                id,
                parent_id,
                timestamp,
                from_id,
                summary,
                details,
                from_hook,
            })
        })
    }
}
