//! The tree view's rows: display order, filters and the drawn structure (pi's
//! `TreeList.flattenTree`, `applyFilter`, `recalculateVisualStructure`, `isFoldable`,
//! `findBranchSegmentStart`).
//!
//! Order: pre-order, with the branch that holds the leaf first among its siblings (and among
//! the roots). Indentation grows only at branch points (and once right after one), so long
//! single-child chains stay flat. Hidden entries are skipped and their descendants attach to
//! the nearest visible ancestor.

use std::collections::{HashMap, HashSet};

use super::nodes::{Kind, Node};

/// Which entries the view shows (pi's `filterMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FilterMode {
    /// Everything except settings/bookkeeping (labels, custom, model and thinking changes,
    /// names).
    #[default]
    Default,
    /// Default minus tool results.
    NoTools,
    /// User messages only.
    UserOnly,
    /// Labeled entries only.
    LabeledOnly,
    /// Every entry.
    All,
}

impl FilterMode {
    const CYCLE: [FilterMode; 5] = [
        FilterMode::Default,
        FilterMode::NoTools,
        FilterMode::UserOnly,
        FilterMode::LabeledOnly,
        FilterMode::All,
    ];

    fn position(self) -> usize {
        match self {
            FilterMode::Default => 0,
            FilterMode::NoTools => 1,
            FilterMode::UserOnly => 2,
            FilterMode::LabeledOnly => 3,
            FilterMode::All => 4,
        }
    }

    /// The next mode in pi's cycle (default → no-tools → user-only → labeled-only → all).
    pub fn next(self) -> FilterMode {
        FilterMode::CYCLE[(self.position() + 1) % 5]
    }

    /// The previous mode in the cycle.
    pub fn previous(self) -> FilterMode {
        FilterMode::CYCLE[(self.position() + 4) % 5]
    }

    /// pi's status tag (` [no-tools]` …; empty for the default).
    pub fn tag(self) -> &'static str {
        match self {
            FilterMode::Default => "",
            FilterMode::NoTools => " [no-tools]",
            FilterMode::UserOnly => " [user]",
            FilterMode::LabeledOnly => " [labeled]",
            FilterMode::All => " [all]",
        }
    }

    /// pi's settings name (`treeFilterMode`): `default`, `no-tools`, `user-only`,
    /// `labeled-only`, `all`; anything else is `None`.
    pub fn from_setting(s: &str) -> Option<FilterMode> {
        match s {
            "default" => Some(FilterMode::Default),
            "no-tools" => Some(FilterMode::NoTools),
            "user-only" => Some(FilterMode::UserOnly),
            "labeled-only" => Some(FilterMode::LabeledOnly),
            "all" => Some(FilterMode::All),
            _ => None,
        }
    }
}

/// A `│` column kept open for a branch that continues below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gutter {
    /// The indentation level it is drawn at.
    pub position: usize,
    /// `│` when the branch goes on, blank when it ended.
    pub show: bool,
}

/// One visible row and how it is drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Index of the node.
    pub node: usize,
    /// Indentation level before the multiple-roots shift.
    pub indent: usize,
    /// Draws `├─`/`└─`.
    pub show_connector: bool,
    /// Last among its visible siblings.
    pub is_last: bool,
    /// Open `│` columns of its ancestors.
    pub gutters: Vec<Gutter>,
    /// A root among several roots (its connector is suppressed).
    pub is_virtual_root_child: bool,
}

/// The visible rows plus the visible tree, for folding and branch jumps.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// Rows in display order.
    pub rows: Vec<Row>,
    /// More than one visible root: everything shifts left one level.
    pub multiple_roots: bool,
    /// Nearest visible ancestor of each visible node.
    pub parent: HashMap<usize, Option<usize>>,
    /// Visible children of each visible node (`None`: the roots), in display order.
    pub children: HashMap<Option<usize>, Vec<usize>>,
}

/// Which nodes lie on the root→leaf path.
pub fn active_path(nodes: &[Node], leaf: Option<usize>) -> Vec<bool> {
    let mut on = vec![false; nodes.len()];
    let mut cur = leaf;
    while let Some(i) = cur {
        if on[i] {
            break;
        }
        on[i] = true;
        cur = nodes[i].parent;
    }
    on
}

/// Every node in display order: pre-order, the active branch first among siblings.
pub fn display_order(nodes: &[Node], roots: &[usize], active: &[bool]) -> Vec<usize> {
    let active_first = |kids: &[usize]| -> Vec<usize> {
        let (mut a, b): (Vec<usize>, Vec<usize>) = kids.iter().partition(|&&k| active[k]);
        a.extend(b);
        a
    };
    let mut out = Vec::with_capacity(nodes.len());
    let mut stack: Vec<usize> = active_first(roots).into_iter().rev().collect();
    while let Some(n) = stack.pop() {
        out.push(n);
        stack.extend(active_first(&nodes[n].children).into_iter().rev());
    }
    out
}

/// Whether `node` passes the filter mode (pi's `applyFilter`, before the search).
pub fn passes(node: &Node, is_leaf: bool, mode: FilterMode) -> bool {
    // Tool-call-only assistant turns are noise; the leaf always shows so the position does.
    if node.empty_assistant && !is_leaf {
        return false;
    }
    let setting = node.kind == Kind::Setting;
    let role = match &node.kind {
        Kind::Message(r) => Some(r.as_str()),
        Kind::Setting | Kind::Other => None,
    };
    match mode {
        FilterMode::Default => !setting,
        FilterMode::NoTools => !setting && role != Some("toolResult"),
        FilterMode::UserOnly => role == Some("user"),
        FilterMode::LabeledOnly => node.label.is_some(),
        FilterMode::All => true,
    }
}

/// Whether `node` matches every lower-cased search token (its label included).
pub fn matches_search(node: &Node, tokens: &[String]) -> bool {
    if tokens.is_empty() {
        return true;
    }
    let text = match &node.label {
        Some(l) => format!("{} {}", l.to_lowercase(), node.search),
        None => node.search.clone(),
    };
    tokens.iter().all(|t| text.contains(t.as_str()))
}

/// The visible nodes of `order`: filter, search, and nothing below a folded node.
pub fn visible(
    nodes: &[Node],
    order: &[usize],
    leaf: Option<usize>,
    mode: FilterMode,
    search: &str,
    folded: &HashSet<usize>,
) -> Vec<usize> {
    let tokens: Vec<String> = search
        .to_lowercase()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let mut hidden_below_fold = vec![false; nodes.len()];
    if !folded.is_empty() {
        // Pre-order: a parent is decided before its children.
        for &n in order {
            if let Some(p) = nodes[n].parent
                && (folded.contains(&p) || hidden_below_fold[p])
            {
                hidden_below_fold[n] = true;
            }
        }
    }
    order
        .iter()
        .copied()
        .filter(|&n| {
            !hidden_below_fold[n]
                && passes(&nodes[n], Some(n) == leaf, mode)
                && matches_search(&nodes[n], &tokens)
        })
        .collect()
}

/// Indentation, connectors and gutters of the visible nodes (pi's
/// `recalculateVisualStructure`).
pub fn layout(nodes: &[Node], visible: &[usize]) -> Layout {
    let shown: HashSet<usize> = visible.iter().copied().collect();
    let mut parent: HashMap<usize, Option<usize>> = HashMap::new();
    let mut children: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
    children.insert(None, Vec::new());
    for &n in visible {
        let mut cur = nodes[n].parent;
        while let Some(p) = cur {
            if shown.contains(&p) {
                break;
            }
            cur = nodes[p].parent;
        }
        parent.insert(n, cur);
        children.entry(cur).or_default().push(n);
    }
    let roots = children.get(&None).cloned().unwrap_or_default();
    let multiple_roots = roots.len() > 1;
    let mut props: HashMap<usize, Row> = HashMap::new();
    // (node, indent, just_branched, show_connector, is_last, gutters, virtual_root_child)
    type Frame = (usize, usize, bool, bool, bool, Vec<Gutter>, bool);
    let mut stack: Vec<Frame> = roots
        .iter()
        .enumerate()
        .rev()
        .map(|(i, &n)| {
            let m = multiple_roots;
            (n, usize::from(m), m, m, i + 1 == roots.len(), Vec::new(), m)
        })
        .collect();
    while let Some((n, indent, just_branched, show_connector, is_last, gutters, virt)) = stack.pop()
    {
        let kids = children.get(&Some(n)).cloned().unwrap_or_default();
        let multiple = kids.len() > 1;
        let child_indent = if multiple || (just_branched && indent > 0) {
            indent + 1
        } else {
            indent
        };
        let display_indent = if multiple_roots {
            indent.saturating_sub(1)
        } else {
            indent
        };
        let child_gutters = if show_connector && !virt {
            let mut g = gutters.clone();
            g.push(Gutter {
                position: display_indent.saturating_sub(1),
                show: !is_last,
            });
            g
        } else {
            gutters.clone()
        };
        for (i, &k) in kids.iter().enumerate().rev() {
            stack.push((
                k,
                child_indent,
                multiple,
                multiple,
                i + 1 == kids.len(),
                child_gutters.clone(),
                false,
            ));
        }
        props.insert(
            n,
            Row {
                node: n,
                indent,
                show_connector,
                is_last,
                gutters,
                is_virtual_root_child: virt,
            },
        );
    }
    let rows = visible.iter().filter_map(|n| props.remove(n)).collect();
    Layout {
        rows,
        multiple_roots,
        parent,
        children,
    }
}

impl Layout {
    /// A node can fold when it has visible children and starts a segment: it is a root or
    /// its visible parent branches.
    pub fn is_foldable(&self, node: usize) -> bool {
        if self.children.get(&Some(node)).is_none_or(Vec::is_empty) {
            return false;
        }
        match self.parent.get(&node).copied().flatten() {
            None => true,
            Some(p) => self.children.get(&Some(p)).is_some_and(|s| s.len() > 1),
        }
    }

    /// Index of the row showing `node`.
    pub fn index_of(&self, node: usize) -> Option<usize> {
        self.rows.iter().position(|r| r.node == node)
    }

    /// pi's `findBranchSegmentStart`: down follows first children to the next branch point's
    /// first child (or the end of the chain); up walks visible parents to the start of the
    /// segment above the selection (or the root).
    pub fn segment_start(&self, selected: usize, down: bool) -> usize {
        let Some(mut cur) = self.rows.get(selected).map(|r| r.node) else {
            return selected;
        };
        let at = |n: usize| self.index_of(n).unwrap_or(selected);
        if down {
            loop {
                let kids = self.children.get(&Some(cur)).map_or(&[][..], Vec::as_slice);
                match kids {
                    [] => return at(cur),
                    [only] => cur = *only,
                    [first, ..] => return at(*first),
                }
            }
        }
        loop {
            let Some(p) = self.parent.get(&cur).copied().flatten() else {
                return at(cur);
            };
            if self.children.get(&Some(p)).is_some_and(|s| s.len() > 1) {
                let start = at(cur);
                if start < selected {
                    return start;
                }
            }
            cur = p;
        }
    }
}
