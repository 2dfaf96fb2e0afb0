//! The shape of the session tree as the page needs it: parents, the active path, the newest
//! leaf under each entry, and the sidebar rows with pi's indentation and connectors
//! (`flattenTree` and `buildTreePrefix` of pi's export template).
//!
//! Everything is flat and iterative: a 100 000-entry chain costs no stack. And linear at any
//! depth: the gutters a row inherits are a list shared with its ancestors (no copy per
//! branch), and a row's prefix shows at most [`MAX_LEVELS`] levels, so a session that forks
//! at every one of 10 000 levels costs 10 000 short rows, not 10 000² characters.

use std::rc::Rc;

use pith_store::tree::Tree;
use pith_store::{Leaf, SessionTree};

/// Tree facts, by entry index (file order).
#[derive(Debug)]
pub struct Layout {
    /// The repaired tree (every entry once, cycles broken, children oldest first).
    pub shape: Tree,
    /// Parent in `shape`; `None` for roots. The page walks these to show a branch.
    pub parent: Vec<Option<usize>>,
    /// The entry a click on each entry shows: follow the newest child down to a leaf, as pi's
    /// `findNewestLeaf` does.
    pub newest_leaf: Vec<usize>,
    /// Entries from the root down to each entry, itself included.
    pub depth: Vec<usize>,
    /// Root → leaf, the branch shown when the page opens; empty for an empty session.
    pub active_path: Vec<usize>,
    /// Whether each entry is on `active_path`.
    pub on_path: Vec<bool>,
    /// The session's leaf.
    pub leaf: Option<usize>,
}

impl Layout {
    /// Lays out `tree` with its current leaf as the active one.
    pub fn new(tree: &SessionTree) -> Layout {
        let shape = tree.get_tree();
        let n = shape.children.len();
        let mut parent = vec![None; n];
        for (p, kids) in shape.children.iter().enumerate() {
            for &k in kids {
                parent[k] = Some(p);
            }
        }
        let order = preorder(&shape);
        let mut depth = vec![1; n];
        for &i in &order {
            if let Some(p) = parent[i] {
                depth[i] = depth[p] + 1;
            }
        }
        let mut newest_leaf: Vec<usize> = (0..n).collect();
        for &i in order.iter().rev() {
            if let Some(&last) = shape.children[i].last() {
                newest_leaf[i] = newest_leaf[last];
            }
        }
        let leaf = match tree.leaf() {
            Leaf::At(i) if i < n => Some(i),
            Leaf::At(_) | Leaf::Root => None,
        };
        let mut active_path = Vec::new();
        let mut cur = leaf;
        // The shape has no cycles, so this walk ends; the bound is a second guard.
        while let Some(i) = cur.filter(|_| active_path.len() < n) {
            active_path.push(i);
            cur = parent[i];
        }
        active_path.reverse();
        let mut on_path = vec![false; n];
        for &i in &active_path {
            on_path[i] = true;
        }
        Layout {
            shape,
            parent,
            newest_leaf,
            depth,
            active_path,
            on_path,
            leaf,
        }
    }

    /// Entries without children, in file order: the ends of the branches.
    pub fn leaves(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.shape.children.len()).filter(|&i| self.shape.children[i].is_empty())
    }

    /// The sidebar rows in display order: the active branch first at every fork, a chain of
    /// single children at one indentation, each row with its ASCII prefix.
    pub fn rows(&self) -> Vec<Row> {
        let roots = active_first(&self.shape.roots, &self.on_path);
        let multiple_roots = roots.len() > 1;
        let mut out = Vec::with_capacity(self.shape.children.len());
        let mut stack: Vec<Pending> = Vec::new();
        let no_gutters: Gutters = None;
        for (k, &r) in roots.iter().enumerate().rev() {
            stack.push(Pending {
                node: r,
                indent: usize::from(multiple_roots),
                just_branched: multiple_roots,
                show_connector: multiple_roots,
                is_last: k + 1 == roots.len(),
                gutters: no_gutters.clone(),
                virtual_root_child: multiple_roots,
            });
        }
        while let Some(p) = stack.pop() {
            out.push(Row {
                entry: p.node,
                prefix: prefix(&p, multiple_roots),
            });
            let kids = active_first(&self.shape.children[p.node], &self.on_path);
            let branching = kids.len() > 1;
            let child_indent = if branching || (p.just_branched && p.indent > 0) {
                p.indent + 1
            } else {
                p.indent
            };
            let gutters = if p.show_connector && !p.virtual_root_child {
                let display = display_indent(p.indent, multiple_roots);
                Some(Rc::new(Gutter {
                    position: display.saturating_sub(1),
                    show: !p.is_last,
                    up: p.gutters.clone(),
                }))
            } else {
                p.gutters.clone()
            };
            for (k, &kid) in kids.iter().enumerate().rev() {
                stack.push(Pending {
                    node: kid,
                    indent: child_indent,
                    just_branched: branching,
                    show_connector: branching,
                    is_last: k + 1 == kids.len(),
                    gutters: gutters.clone(),
                    virtual_root_child: false,
                });
            }
        }
        out
    }
}

/// One sidebar row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Entry index.
    pub entry: usize,
    /// Indentation and connector characters (`│  ├─ `).
    pub prefix: String,
}

/// Levels a sidebar prefix shows at most; deeper rows show `⋯` and their last levels.
pub const MAX_LEVELS: usize = 40;

/// The vertical lines a row inherits, newest (deepest position) first. Positions strictly
/// decrease along the list: a gutter is only added below a fork, one level deeper.
type Gutters = Option<Rc<Gutter>>;

#[derive(Debug)]
struct Gutter {
    position: usize,
    show: bool,
    up: Gutters,
}

/// A row waiting on the stack, with pi's flattening state.
struct Pending {
    node: usize,
    indent: usize,
    just_branched: bool,
    show_connector: bool,
    is_last: bool,
    /// Shared: children pass the same gutters down without copying.
    gutters: Gutters,
    virtual_root_child: bool,
}

fn display_indent(indent: usize, multiple_roots: bool) -> usize {
    if multiple_roots {
        indent.saturating_sub(1)
    } else {
        indent
    }
}

/// pi's `buildTreePrefix`: three characters per level, gutters and the connector.
fn prefix(p: &Pending, multiple_roots: bool) -> String {
    let display = display_indent(p.indent, multiple_roots);
    let connector = p.show_connector && !p.virtual_root_child;
    let connector_level = if connector {
        display.checked_sub(1)
    } else {
        None
    };
    // Only the last MAX_LEVELS levels are drawn; the first of them becomes `⋯`.
    let first = display.saturating_sub(MAX_LEVELS);
    let mut shown: Vec<&Gutter> = Vec::new();
    let mut g = p.gutters.as_deref();
    while let Some(gutter) = g.filter(|g| g.position >= first) {
        shown.push(gutter);
        g = gutter.up.as_deref();
    }
    let mut s = String::with_capacity((display - first) * 3);
    for level in first..display {
        if first > 0 && level == first {
            s.push_str("⋯  ");
        } else if let Some(g) = shown.iter().rev().find(|g| g.position == level) {
            s.push(if g.show { '│' } else { ' ' });
            s.push_str("  ");
        } else if connector_level == Some(level) {
            s.push(if p.is_last { '└' } else { '├' });
            s.push_str("─ ");
        } else {
            s.push_str("   ");
        }
    }
    s
}

/// `nodes` with the one on the active path first, the rest in their order.
fn active_first(nodes: &[usize], on_path: &[bool]) -> Vec<usize> {
    let mut v = nodes.to_vec();
    v.sort_by_key(|&i| !on_path[i]);
    v
}

/// Every entry, parents before children.
fn preorder(shape: &Tree) -> Vec<usize> {
    let mut order = Vec::with_capacity(shape.children.len());
    let mut stack: Vec<usize> = shape.roots.iter().rev().copied().collect();
    while let Some(i) = stack.pop() {
        order.push(i);
        stack.extend(shape.children[i].iter().rev());
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_store::Entry;

    fn tree(lines: &[(&str, Option<&str>, &str)]) -> SessionTree {
        let entries = lines
            .iter()
            .enumerate()
            .map(|(n, (id, parent, ts))| {
                let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
                Entry::parse(
                    &format!(r#"{{"type":"custom","customType":"x","id":"{id}","parentId":{parent},"timestamp":"{ts}"}}"#),
                    n + 2,
                )
                .expect("entry")
            })
            .collect();
        SessionTree::new(entries).0
    }

    #[test]
    fn forks_indent_and_the_active_branch_comes_first() {
        // a ─ b ─ c   (the file's last entry, e, is the leaf)
        //   └ d ─ e
        let t = tree(&[
            ("a", None, "2025-01-01T00:00:00.000Z"),
            ("b", Some("a"), "2025-01-01T00:00:01.000Z"),
            ("c", Some("b"), "2025-01-01T00:00:02.000Z"),
            ("d", Some("a"), "2025-01-01T00:00:03.000Z"),
            ("e", Some("d"), "2025-01-01T00:00:04.000Z"),
        ]);
        let layout = Layout::new(&t);
        assert_eq!(layout.active_path, vec![0, 3, 4]);
        assert_eq!(layout.leaf, Some(4));
        assert_eq!(layout.newest_leaf, vec![4, 2, 2, 4, 4]);
        assert_eq!(layout.leaves().collect::<Vec<_>>(), vec![2, 4]);
        assert_eq!(layout.depth, vec![1, 2, 3, 2, 3]);
        let rows: Vec<(usize, String)> = layout
            .rows()
            .into_iter()
            .map(|r| (r.entry, r.prefix))
            .collect();
        assert_eq!(
            rows,
            vec![
                (0, String::new()),
                (3, "├─ ".into()),
                (4, "│     ".into()),
                (1, "└─ ".into()),
                (2, "      ".into()),
            ]
        );
    }

    #[test]
    fn a_long_chain_stays_flat() {
        let ids: Vec<String> = (0..50_000).map(|i| format!("e{i}")).collect();
        let lines: Vec<(&str, Option<&str>, &str)> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let parent = (i > 0).then(|| ids[i - 1].as_str());
                (id.as_str(), parent, "2025-01-01T00:00:00.000Z")
            })
            .collect();
        let layout = Layout::new(&tree(&lines));
        let rows = layout.rows();
        assert_eq!(rows.len(), 50_000);
        assert!(rows.iter().all(|r| r.prefix.is_empty()));
        assert_eq!(layout.newest_leaf[0], 49_999);
    }
}
