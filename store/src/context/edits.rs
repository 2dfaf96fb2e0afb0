//! Context edits (pi ≥ 0.87): which `context_edit` applies to which entry
//! (spec: tree-and-context.md §7.2 rule 6, format.md §2.3).

use std::borrow::Cow;
use std::collections::HashMap;

use pith_events::EntryType;

use super::Content;
use crate::entry::Entry;
use crate::scan;

/// What the edit that applies to an entry does.
#[derive(Debug, Clone, Copy)]
pub(super) enum Edit<'a> {
    /// `replacement: null`: the entry contributes nothing.
    Hide,
    /// `replacement: {content}`: the content of its messages is swapped.
    Replace(Replacement<'a>),
}

/// A replacement's `content` as raw JSON borrowed from the edit entry; `None` when the
/// replacement has none (not an object, or an object without `content`: `undefined` in pi).
#[derive(Debug, Clone, Copy)]
pub(super) struct Replacement<'a>(Option<&'a str>);

impl<'a> Replacement<'a> {
    /// The content a message gets; `as_blocks` for assistant and toolResult messages, whose
    /// string replacement becomes one text block (user and custom ones keep the string).
    pub(super) fn content(&self, as_blocks: bool) -> Content<'a> {
        match self.0 {
            None => Content::Removed,
            Some(raw) if as_blocks && raw.starts_with('"') => Content::TextBlock(raw),
            Some(raw) => Content::Replaced(raw),
        }
    }
}

/// The edit that applies to each target id.
#[derive(Debug, Default)]
pub(super) struct Edits<'a> {
    by_target: HashMap<Cow<'a, str>, Edit<'a>>,
}

impl<'a> Edits<'a> {
    /// The edit that applies to the entry with this id.
    pub(super) fn get(&self, id: &str) -> Option<Edit<'a>> {
        self.by_target.get(id).copied()
    }
}

/// Whether the entry with `id` is hidden (`replacement: null`) by the latest edit aimed at it
/// among the entries `list` (indices into `entries`): what compaction's projected cut points
/// and token walk leave out (compaction.md §5.1).
pub(crate) fn hidden_ids<'a>(
    entries: &'a [Entry],
    list: impl Iterator<Item = usize>,
) -> std::collections::HashSet<Cow<'a, str>> {
    latest_per_target(entries, list)
        .by_target
        .into_iter()
        .filter(|(_, e)| matches!(e, Edit::Hide))
        .map(|(id, _)| id)
        .collect()
}

/// The latest edit per `targetId` among the context entries `list` (indices into `entries`,
/// in list order): an edit that is not itself a context entry (another branch, before the kept
/// range) has no effect.
///
/// A `targetId` that is not a string names no entry (pi's Map lookup by id never finds it). An
/// edit without a `replacement` member is ignored: pi throws while building the context there,
/// and pith rather keeps the session usable with the edits it can read.
pub(super) fn latest_per_target<'a>(
    entries: &'a [Entry],
    list: impl Iterator<Item = usize>,
) -> Edits<'a> {
    let mut edits = Edits::default();
    for i in list {
        let e = &entries[i];
        if e.kind() != &EntryType::ContextEdit {
            continue;
        }
        let raw = e.raw();
        let Some(members) = scan::object_members(raw) else {
            continue;
        };
        let last = |key: &str| {
            members
                .iter()
                .rev()
                .find(|m| m.key == key)
                .map(|m| m.value.of(raw))
        };
        let Some(target) = last("targetId").and_then(scan::string_value) else {
            continue;
        };
        let Some(replacement) = last("replacement") else {
            continue;
        };
        let edit = if replacement == "null" {
            Edit::Hide
        } else {
            let content = scan::object_members(replacement).and_then(|inner| {
                inner
                    .iter()
                    .rev()
                    .find(|m| m.key == "content")
                    .map(|m| m.value.of(replacement))
            });
            Edit::Replace(Replacement(content))
        };
        edits.by_target.insert(target, edit);
    }
    edits
}
