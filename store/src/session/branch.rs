//! `createBranchedSession`: the copy `/fork` and `/clone` make of a path (spec: lifecycle.md §2,
//! divergences.md "Writing").

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use pith_events::SessionHeader;
use pith_events::js::to_js_json;

use super::{ID_ATTEMPTS, Session};
use crate::dirs;
use crate::entry::Entry;
use crate::error::{Error, Result};
use crate::header::Header;
use crate::tree::SessionTree;
use crate::writer::LogFile;

impl Session {
    /// `createBranchedSession(leafId)` (/fork, /clone; spec: lifecycle.md §2): replaces this
    /// session by a new one holding the path to `leaf_id` without label entries, followed by
    /// re-created labels of the copied entries (original label timestamps). pith keeps the
    /// chain whole: a copied entry whose parent was a dropped label is re-linked to the nearest
    /// copied ancestor (spec: divergences.md "Writing"). When persisted, the new file is written
    /// now if it holds an assistant message, else with the first one. Returns the new path.
    ///
    /// Errors: [`Error::EntryNotFound`]; [`Error::Io`]; [`Error::BodyChanged`] when a copied
    /// entry's body is left in a file changed in place since (this session is unchanged).
    pub fn create_branched_session(&mut self, leaf_id: &str) -> Result<Option<PathBuf>> {
        let path = self.tree.get_branch(Some(leaf_id));
        if path.is_empty() {
            return Err(Error::EntryNotFound(leaf_id.to_owned()));
        }
        let mut kept: Vec<Entry> = Vec::with_capacity(path.len());
        // A dropped label that a compaction keeps from is replaced by the next copied entry,
        // so the copy's context is the source's.
        let mut dropped: Vec<&str> = Vec::new();
        let mut successor: std::collections::HashMap<&str, String> =
            std::collections::HashMap::new();
        for entry in path {
            if entry.kind() == &pith_events::EntryType::Label {
                dropped.push(entry.id());
                continue;
            }
            for label in dropped.drain(..) {
                successor.insert(label, entry.id().to_owned());
            }
            let parent = kept.last().map(|p| p.id().to_owned());
            kept.push(relink(entry, parent.as_deref())?);
        }
        for entry in &mut kept {
            if entry.kind() != &pith_events::EntryType::Compaction {
                continue;
            }
            let fields: serde_json::Map<String, Value> = entry.decode_as()?;
            if let Some(next) = fields
                .get("firstKeptEntryId")
                .and_then(Value::as_str)
                .and_then(|id| successor.get(id))
            {
                *entry = set_member(entry, "firstKeptEntryId", &to_js_json(next)?)?;
            }
        }
        let mut taken: std::collections::HashSet<String> =
            kept.iter().map(|e| e.id().to_owned()).collect();
        let mut prev = kept.last().map(|e| e.id().to_owned());
        let mut labels = Vec::new();
        for (target, label) in self.tree.labels() {
            if !kept.iter().any(|e| e.id() == target) {
                continue;
            }
            let id = (0..ID_ATTEMPTS)
                .map(|_| self.env.ids.entry_id())
                .find(|id| !taken.contains(id))
                .unwrap_or_else(|| self.env.ids.long_id());
            taken.insert(id.clone());
            // Built by hand: the label value and timestamp are copied as raw JSON.
            let mut text = format!(
                "{{\"type\":\"label\",\"id\":{},\"parentId\":{}",
                to_js_json(&id)?,
                to_js_json(&prev)?
            );
            if let Some(ts) = &label.timestamp {
                text.push_str(",\"timestamp\":");
                text.push_str(ts);
            }
            text.push_str(&format!(
                ",\"targetId\":{},\"label\":{}}}",
                to_js_json(target)?,
                label.value
            ));
            let entry = Entry::parse(&text, 0).map_err(|why| {
                Error::Serialize(serde::de::Error::custom(format!(
                    "pith wrote an invalid label: {why}"
                )))
            })?;
            prev = Some(id);
            labels.push(entry);
        }
        kept.extend(labels);
        // Every copied line whole before this session is replaced: a body that can no longer
        // be read back fails the fork here, leaving this session as it was.
        crate::entry::read_back_bodies(&kept)?;

        let previous_file = self
            .session_file()
            .map(|p| p.to_string_lossy().into_owned());
        let id = self.env.ids.session_id();
        let timestamp = self.env.now_iso();
        self.header = Header::from_new(&SessionHeader::new(
            id.clone(),
            timestamp.clone(),
            self.cwd.clone(),
            previous_file,
        ));
        let (tree, warnings) = SessionTree::new(kept);
        self.tree = Arc::new(tree);
        self.warnings = warnings;
        self.log = self
            .session_dir
            .as_ref()
            .map(|dir| LogFile::new(dir.join(dirs::session_file_name(&timestamp, &id))));
        if let Some(log) = &mut self.log
            && self.tree.has_conversation()
        {
            log.rewrite(&self.header, self.tree.entries())?;
        }
        Ok(self.session_file().map(Path::to_owned))
    }
}

/// `entry` with `parentId` set to `parent`, changing only that member's bytes; the entry
/// itself when it already points there.
fn relink(entry: &Entry, parent: Option<&str>) -> Result<Entry> {
    if entry.parent().id() == parent {
        return Ok(entry.clone());
    }
    set_member(entry, "parentId", &to_js_json(&parent)?)
}

/// [`Entry::with_member`] with the store's error type.
fn set_member(entry: &Entry, key: &str, value: &str) -> Result<Entry> {
    entry.with_member(key, value).map_err(|why| match why {
        Error::BodyChanged { .. } => why,
        why => Error::Serialize(serde::de::Error::custom(format!(
            "cannot set {key} of entry {}: {why}",
            entry.id()
        ))),
    })
}
