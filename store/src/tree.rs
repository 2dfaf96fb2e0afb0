//! The in-memory tree: entries in file order, the id index, labels, the leaf, and the tree
//! queries (spec: tree-and-context.md §1–6, divergences.md "Reading").

use std::collections::HashSet;
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value;

use pith_events::EntryType;

use crate::entry::{Entry, Role};
use crate::error::{Error, Result};
use crate::load::Warning;
use pith_events::js::js_trim;

/// The current position in the tree (spec: tree-and-context.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    /// Before the first entry (`leafId === null`): the next append is a new root.
    Root,
    /// At the entry with this index in [`SessionTree::entries`].
    At(usize),
}

/// A resolved label: the raw JSON of the label entry's `label` and `timestamp` members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// Raw JSON of `label` (a non-empty string when pi wrote it; any truthy value sets a label).
    pub value: String,
    /// Raw JSON of the label entry's `timestamp`, if it has one.
    pub timestamp: Option<String>,
}

impl Label {
    /// The label as text (the string itself, or the raw JSON of a non-string label).
    pub fn text(&self) -> String {
        serde_json::from_str::<String>(&self.value).unwrap_or_else(|_| self.value.clone())
    }
}

/// The tree shape returned by [`SessionTree::get_tree`]: indices into
/// [`SessionTree::entries`]. Flat, so that trees thousands of levels deep cost no stack.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tree {
    /// Root entries in file order.
    pub roots: Vec<usize>,
    /// Children of each entry, oldest first (stable by `timestamp`).
    pub children: Vec<Vec<usize>>,
}

/// Entries plus everything derived from them.
#[derive(Debug, Default)]
pub struct SessionTree {
    entries: Vec<Entry>,
    /// id → index of the last entry with that id; iteration order is first appearance, as
    /// pi's `byId` Map has it.
    by_id: IndexMap<Arc<str>, usize>,
    /// Parent index of each entry, resolved through `by_id`; `None` for roots, self-parents and
    /// parents that are not in the file. Cycles are kept here and cut by the walks.
    parent: Vec<Option<usize>>,
    /// target id → label, in JavaScript Map order (a cleared and re-set label moves last).
    labels: IndexMap<Arc<str>, Label>,
    leaf: Option<usize>,
    has_cycles: bool,
    /// Whether any entry holds an assistant message.
    has_assistant: bool,
    /// Whether any entry holds a user or assistant message (pi 1.6.0's condition for creating
    /// the file, spec: format.md §7.1).
    has_conversation: bool,
}

/// Room kept for entries appended after a tree is built or copied: growing the vectors and
/// the id index of tens of thousands of entries copies and rehashes them all, and a resume
/// appends right after it loads (s100mb: the first append cost as much as the rest of the
/// resume's runtime).
pub(crate) fn headroom(len: usize) -> usize {
    // Nothing for a small tree (one made per appended entry, say): its growth costs little.
    len / 16
}

/// A copy with room to grow (as `SessionTree::new` leaves), for the projection's mirror of the
/// writer's tree.
impl Clone for SessionTree {
    fn clone(&self) -> SessionTree {
        let room = headroom(self.entries.len());
        let mut entries = Vec::with_capacity(self.entries.len() + room);
        entries.extend_from_slice(&self.entries);
        let mut parent = Vec::with_capacity(self.parent.len() + room);
        parent.extend_from_slice(&self.parent);
        let mut by_id = IndexMap::with_capacity(self.by_id.len() + room);
        by_id.extend(self.by_id.iter().map(|(id, &at)| (Arc::clone(id), at)));
        SessionTree {
            entries,
            by_id,
            parent,
            labels: self.labels.clone(),
            leaf: self.leaf,
            has_cycles: self.has_cycles,
            has_assistant: self.has_assistant,
            has_conversation: self.has_conversation,
        }
    }
}

impl SessionTree {
    /// Builds the tree of `entries` (file order) and returns it with warnings about parent
    /// cycles and `message` entries without a message. The leaf is the last entry.
    pub fn new(entries: Vec<Entry>) -> (SessionTree, Vec<Warning>) {
        let mut tree = SessionTree::default();
        let mut warnings = Vec::new();
        let room = headroom(entries.len());
        tree.by_id.reserve(entries.len() + room);
        for (index, entry) in entries.iter().enumerate() {
            if entry.kind() == &EntryType::Message && !entry.has_message() {
                warnings.push(Warning {
                    line: entry.line(),
                    problem: format!(
                        "message entry {} has no \"message\"; it is left out of the context",
                        entry.id()
                    ),
                });
            }
            tree.note(entry, index);
        }
        // The loaded entries are the tree's, in file order: kept in place, not moved one by one.
        tree.entries = entries;
        tree.entries.reserve(room);
        let mut parent = Vec::with_capacity(tree.entries.len() + room);
        parent.extend((0..tree.entries.len()).map(|i| tree.resolve_parent(i)));
        tree.parent = parent;
        tree.has_cycles = tree.find_cycles(&mut warnings);
        tree.leaf = tree.entries.len().checked_sub(1);
        (tree, warnings)
    }

    /// Records what the tree keeps about `entry`, which is (or is about to be) at `index`.
    fn note(&mut self, entry: &Entry, index: usize) {
        self.by_id.insert(entry.id_shared().clone(), index);
        self.has_assistant |= entry.is_assistant_message();
        self.has_conversation |= entry.kind() == &EntryType::Message
            && matches!(entry.role(), Some(Role::User | Role::Assistant));
        if entry.kind() == &EntryType::Label {
            self.apply_label(entry);
        }
    }

    /// Appends an entry (written with the current leaf as its parent) and makes it the leaf;
    /// returns its index. Used by the session and by mirrors of it (the projection).
    pub fn push(&mut self, entry: Entry) -> usize {
        let index = self.entries.len();
        self.note(&entry, index);
        self.entries.push(entry);
        let parent = self.resolve_parent(index);
        self.parent.push(parent);
        self.leaf = Some(index);
        index
    }

    /// [`crate::entry::read_back_bodies`] of every entry: for a walk over every entry's body
    /// (statistics, an export, the tree view).
    ///
    /// Errors: as [`crate::entry::read_back_bodies`].
    pub fn read_back_bodies(&self) -> crate::Result<()> {
        crate::entry::read_back_bodies(&self.entries)
    }

    fn resolve_parent(&self, index: usize) -> Option<usize> {
        let entry = &self.entries[index];
        let pid = entry.parent().id()?;
        if pid == entry.id() {
            return None;
        }
        self.by_id.get(pid).copied()
    }

    /// Label entries are replayed in file order over all branches (spec: tree-and-context.md §4).
    fn apply_label(&mut self, entry: &Entry) {
        let Ok(fields) = entry.decode_as::<serde_json::Map<String, Value>>() else {
            return;
        };
        let Some(target) = fields.get("targetId").and_then(Value::as_str) else {
            return;
        };
        match fields.get("label") {
            Some(label) if pith_events::js::is_truthy(label) => {
                let value = pith_events::js::to_js_json(label).unwrap_or_default();
                let timestamp = fields
                    .get("timestamp")
                    .and_then(|t| pith_events::js::to_js_json(t).ok());
                self.labels
                    .insert(target.into(), Label { value, timestamp });
            }
            _ => {
                self.labels.shift_remove(target);
            }
        }
    }

    /// Marks every parent cycle with a warning; returns whether there is one.
    fn find_cycles(&self, warnings: &mut Vec<Warning>) -> bool {
        // 0 = unvisited, 1 = on the current walk, 2 = done.
        let mut state = vec![0u8; self.entries.len()];
        let mut found = false;
        for start in 0..self.entries.len() {
            let mut walk = Vec::new();
            let mut cur = Some(start);
            while let Some(i) = cur {
                match state[i] {
                    0 => {
                        state[i] = 1;
                        walk.push(i);
                        cur = self.parent[i];
                    }
                    1 => {
                        found = true;
                        let from = walk.iter().position(|&w| w == i).unwrap_or(0);
                        let ids: Vec<&str> =
                            walk[from..].iter().map(|&w| self.entries[w].id()).collect();
                        warnings.push(Warning {
                            line: self.entries[i].line(),
                            problem: format!("parent cycle through entries {}; walks stop at the first repeated id", ids.join(" → ")),
                        });
                        break;
                    }
                    _ => break,
                }
            }
            for w in walk {
                state[w] = 2;
            }
        }
        found
    }

    /// Every entry in file order (`getEntries()`; headers are not entries).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry with this id (the last one in the file if the id repeats).
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.index_of(id).map(|i| &self.entries[i])
    }

    /// Index in [`SessionTree::entries`] of the entry with this id.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// Whether an id is taken (for collision-checked id generation).
    pub fn contains_id(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    /// The current leaf.
    pub fn leaf(&self) -> Leaf {
        self.leaf.map_or(Leaf::Root, Leaf::At)
    }

    /// The leaf entry's id; `None` at the root.
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.map(|i| self.entries[i].id())
    }

    /// Whether any entry holds an assistant message.
    pub fn has_assistant(&self) -> bool {
        self.has_assistant
    }

    /// Whether any entry (any branch) holds a user or assistant message: pi 1.6.0 creates a
    /// new session's file then (spec: format.md §7.1).
    pub fn has_conversation(&self) -> bool {
        self.has_conversation
    }

    /// Moves the leaf to `id` (`branch`). Nothing is written.
    ///
    /// Errors: [`Error::EntryNotFound`] for an unknown id.
    pub fn branch(&mut self, id: &str) -> Result<()> {
        let index = self
            .index_of(id)
            .ok_or_else(|| Error::EntryNotFound(id.to_owned()))?;
        self.leaf = Some(index);
        Ok(())
    }

    /// Sets the leaf to an index (or the root); indices come from this tree.
    pub fn set_leaf(&mut self, leaf: Leaf) {
        self.leaf = match leaf {
            Leaf::Root => None,
            Leaf::At(i) => (i < self.entries.len()).then_some(i),
        };
    }

    /// Moves the leaf before the first entry (`resetLeaf`).
    pub fn reset_leaf(&mut self) {
        self.leaf = None;
    }

    /// The parent of entry `index` as a path walk sees it: pi stops at a falsy (`""`) parent id.
    pub(crate) fn walk_parent(&self, index: usize) -> Option<usize> {
        if self.entries[index].parent().id() == Some("") {
            return None;
        }
        self.parent[index]
    }

    /// Indices from the root to `index` (inclusive). A parent cycle is cut at the first
    /// repeated entry (spec: divergences.md "Reading").
    pub fn path_to(&self, index: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut seen: Option<HashSet<usize>> = self.has_cycles.then(HashSet::new);
        let mut cur = Some(index);
        while let Some(i) = cur {
            if let Some(seen) = &mut seen
                && !seen.insert(i)
            {
                break;
            }
            path.push(i);
            cur = self.walk_parent(i);
        }
        path.reverse();
        path
    }

    /// `getBranch(fromId?)`: entries from the root to `from` (default: the leaf); empty for an
    /// unknown id or a root leaf (spec: tree-and-context.md §6.1).
    pub fn get_branch(&self, from: Option<&str>) -> Vec<&Entry> {
        let start = match from {
            Some(id) => self.index_of(id),
            None => self.leaf,
        };
        start
            .map(|i| {
                self.path_to(i)
                    .into_iter()
                    .map(|i| &self.entries[i])
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `getChildren(parentId)`: entries whose `parentId` is `parent_id`, in id-index order
    /// (spec: tree-and-context.md §6.2).
    pub fn get_children(&self, parent_id: &str) -> Vec<&Entry> {
        self.by_id
            .values()
            .map(|&i| &self.entries[i])
            .filter(|e| e.parent().id() == Some(parent_id))
            .collect()
    }

    /// The label of an entry.
    pub fn label(&self, id: &str) -> Option<&Label> {
        self.labels.get(id)
    }

    /// Every resolved label, in JavaScript Map order (first set first).
    pub fn labels(&self) -> impl Iterator<Item = (&str, &Label)> {
        self.labels.iter().map(|(k, v)| (&**k, v))
    }

    /// `getSessionName()`: the latest `session_info` in file order over all branches decides;
    /// its name trimmed, empty ⇒ none. A non-string name is ignored (pi throws there;
    /// spec: divergences.md "Reading").
    pub fn session_name(&self) -> Option<String> {
        for entry in self.entries.iter().rev() {
            if entry.kind() != &EntryType::SessionInfo {
                continue;
            }
            let Ok(fields) = entry.decode_as::<serde_json::Map<String, Value>>() else {
                continue;
            };
            match fields.get("name") {
                None | Some(Value::Null) => return None,
                Some(Value::String(s)) => {
                    let t = js_trim(s);
                    return (!t.is_empty()).then(|| t.to_owned());
                }
                Some(_) => continue,
            }
        }
        None
    }

    /// `getTree()` with pith's repairs (spec: tree-and-context.md §6.3, divergences.md):
    /// every entry appears exactly once; an entry is a root when its parent is null, itself or
    /// unknown; children of a repeated id hang under its last occurrence; a parent cycle is
    /// broken by making its first entry in file order a root. Children are sorted by
    /// `timestamp` as pi's stable sort does; roots stay in file order.
    pub fn get_tree(&self) -> Tree {
        let n = self.entries.len();
        let mut tree = Tree {
            roots: Vec::new(),
            children: vec![Vec::new(); n],
        };
        for i in 0..n {
            match self.parent[i] {
                Some(p) => tree.children[p].push(i),
                None => tree.roots.push(i),
            }
        }
        if self.has_cycles {
            self.break_cycles(&mut tree);
        }
        let ms: Vec<f64> = self.entries.iter().map(Entry::timestamp_ms).collect();
        for kids in &mut tree.children {
            if kids.len() > 1 {
                sort_like_v8(kids, &ms);
            }
        }
        tree
    }

    fn break_cycles(&self, tree: &mut Tree) {
        let n = self.entries.len();
        let mut reached = vec![false; n];
        let mut stack: Vec<usize> = tree.roots.clone();
        loop {
            while let Some(i) = stack.pop() {
                if !reached[i] {
                    reached[i] = true;
                    stack.extend(&tree.children[i]);
                }
            }
            let Some(first) = (0..n).find(|&i| !reached[i]) else {
                break;
            };
            if let Some(p) = self.parent[first] {
                tree.children[p].retain(|&c| c != first);
            }
            // Keep roots in file order.
            let at = tree.roots.partition_point(|&r| r < first);
            tree.roots.insert(at, first);
            stack.push(first);
        }
    }
}

/// Sorts `items` by `ms[item]` ascending exactly as V8's `Array.prototype.sort` does with the
/// comparator `(a, b) => ms[a] - ms[b]`, including when some values are NaN: V8 turns a NaN
/// comparator result into 0 ("equal"), which makes the order inconsistent, so only V8's own
/// steps give pi's order. Arrays shorter than 64 are one run plus binary insertion in V8 and
/// here; longer ones with a NaN use a stable sort with NaN last (an approximation of V8's merge
/// steps), and without a NaN every stable sort agrees with V8.
fn sort_like_v8(items: &mut [usize], ms: &[f64]) {
    let any_nan = items.iter().any(|&i| ms[i].is_nan());
    if !any_nan || items.len() >= 64 {
        items.sort_by(|&a, &b| ms[a].total_cmp(&ms[b]));
        if any_nan {
            items.sort_by_key(|&i| ms[i].is_nan());
        }
        return;
    }
    // V8's SortCompareUserFn: NaN → 0.
    let order = |a: usize, b: usize| {
        let d = ms[a] - ms[b];
        if d.is_nan() { 0.0 } else { d }
    };
    // CountAndMakeRun: a strictly descending prefix is reversed.
    let n = items.len();
    let mut run = 2;
    let descending = order(items[1], items[0]) < 0.0;
    while run < n {
        let o = order(items[run], items[run - 1]);
        if descending {
            if o >= 0.0 {
                break;
            }
        } else if o < 0.0 {
            break;
        }
        run += 1;
    }
    if descending {
        items[..run].reverse();
    }
    // BinaryInsertionSort from the end of the run.
    for start in run..n {
        let pivot = items[start];
        let (mut left, mut right) = (0, start);
        while left < right {
            let mid = left + ((right - left) >> 1);
            if order(pivot, items[mid]) < 0.0 {
                right = mid;
            } else {
                left = mid + 1;
            }
        }
        items.copy_within(left..start, left + 1);
        items[left] = pivot;
    }
}

#[cfg(test)]
mod tests;
