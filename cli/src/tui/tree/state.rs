//! The tree view's state and key handling, free of any terminal (pi's `TreeList`,
//! `TreeSelectorComponent`, and the "Summarize branch?" prompt interactive mode shows after a
//! selection; spec: tree-and-context.md §9, compaction.md §9).

use std::collections::HashSet;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::layout::{self, FilterMode, Layout};
use super::nodes::Node;
use super::{TreeOptions, TreeTarget};
use crate::tui::input::{LineInput, is_cancel, is_confirm, is_ctrl};

/// The choices of the summary prompt, in pi's order.
pub const SUMMARY_CHOICES: [&str; 3] = ["No summary", "Summarize", "Summarize with custom prompt"];

/// What the view is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Browsing the tree.
    List,
    /// Editing the label of a node.
    Label {
        /// The node.
        node: usize,
        /// The label being typed.
        input: LineInput,
    },
    /// "Summarize branch?" after selecting `target`.
    Summary {
        /// The selected node.
        target: usize,
        /// The highlighted choice (index into [`SUMMARY_CHOICES`]).
        choice: usize,
    },
    /// Typing custom summarization instructions for `target`.
    Instructions {
        /// The selected node.
        target: usize,
        /// The instructions being typed.
        input: LineInput,
    },
}

/// What the caller must do after a key.
#[derive(Debug, Clone, PartialEq)]
pub enum TreeAction {
    /// Nothing; redraw.
    None,
    /// The user closed the view without choosing.
    Cancel,
    /// The user chose where to go.
    Navigate(TreeTarget),
}

/// Everything the tree view shows and how keys change it.
#[derive(Debug)]
pub struct TreeState {
    pub(super) nodes: Vec<Node>,
    order: Vec<usize>,
    pub(super) leaf: Option<usize>,
    pub(super) active: Vec<bool>,
    pub(super) filter: FilterMode,
    pub(super) search: String,
    pub(super) folded: HashSet<usize>,
    pub(super) layout: Layout,
    pub(super) selected: usize,
    last_selected: Option<usize>,
    pub(super) show_label_times: bool,
    /// Rows per page.
    pub(super) max_visible: usize,
    pub(super) mode: Mode,
    /// Label changes in order, for [`super::TreeOutcome::labels`].
    pub(super) labels: Vec<(String, Option<String>)>,
    skip_summary_prompt: bool,
    /// "Now" as an ISO string, for the time of a label set here.
    clock: fn() -> String,
}

fn now_iso() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

impl TreeState {
    /// The view over `nodes` (see [`super::nodes::build`]) with the leaf at `leaf`, the cursor
    /// on `options.initial_selected` or the leaf (or the nearest visible ancestor).
    pub fn new(
        nodes: Vec<Node>,
        roots: &[usize],
        leaf: Option<usize>,
        options: &TreeOptions,
    ) -> TreeState {
        let active = layout::active_path(&nodes, leaf);
        let order = layout::display_order(&nodes, roots, &active);
        let start = options
            .initial_selected
            .as_deref()
            .and_then(|id| nodes.iter().position(|n| n.id == id))
            .or(leaf);
        let mut state = TreeState {
            nodes,
            order,
            leaf,
            active,
            filter: options.filter,
            search: String::new(),
            folded: HashSet::new(),
            layout: Layout::default(),
            selected: 0,
            last_selected: start,
            show_label_times: false,
            max_visible: 10,
            mode: Mode::List,
            labels: Vec::new(),
            skip_summary_prompt: options.skip_summary_prompt,
            clock: now_iso,
        };
        state.apply_filter();
        state
    }

    /// Replaces the clock used for label times (tests).
    #[cfg(test)]
    pub fn set_clock(&mut self, clock: fn() -> String) {
        self.clock = clock;
    }

    /// Sets how many rows a page holds; at least 1.
    pub fn set_max_visible(&mut self, rows: usize) {
        self.max_visible = rows.max(1);
    }

    /// The node under the cursor.
    #[cfg(test)]
    pub fn selected_node(&self) -> Option<&Node> {
        self.layout
            .rows
            .get(self.selected)
            .map(|r| &self.nodes[r.node])
    }

    /// Label changes made so far.
    pub fn labels(&self) -> &[(String, Option<String>)] {
        &self.labels
    }

    /// Recomputes the visible rows, keeping the cursor on the same entry or the nearest
    /// visible ancestor (pi's `applyFilter`).
    fn apply_filter(&mut self) {
        if let Some(r) = self.layout.rows.get(self.selected) {
            self.last_selected = Some(r.node);
        }
        let visible = layout::visible(
            &self.nodes,
            &self.order,
            self.leaf,
            self.filter,
            &self.search,
            &self.folded,
        );
        self.layout = layout::layout(&self.nodes, &visible);
        if let Some(last) = self.last_selected {
            self.selected = self.nearest_visible(last);
        } else if self.selected >= self.layout.rows.len() {
            self.selected = self.layout.rows.len().saturating_sub(1);
        }
        if let Some(r) = self.layout.rows.get(self.selected) {
            self.last_selected = Some(r.node);
        }
    }

    /// Row of `node` or of its nearest visible ancestor; the last row when none is visible.
    fn nearest_visible(&self, node: usize) -> usize {
        let mut cur = Some(node);
        let mut steps = 0;
        while let Some(n) = cur {
            if let Some(i) = self.layout.index_of(n) {
                return i;
            }
            cur = self.nodes[n].parent;
            steps += 1;
            if steps > self.nodes.len() {
                break;
            }
        }
        self.layout.rows.len().saturating_sub(1)
    }

    fn set_filter(&mut self, mode: FilterMode) {
        self.filter = mode;
        self.folded.clear();
        self.apply_filter();
    }

    /// Toggles `mode` against the default, as pi's filter keys do.
    fn toggle_filter(&mut self, mode: FilterMode) {
        let next = if self.filter == mode {
            FilterMode::Default
        } else {
            mode
        };
        self.set_filter(next);
    }

    /// Applies one key (bindings: pi's defaults, listed in the module docs of [`super`]).
    pub fn handle_key(&mut self, key: KeyEvent) -> TreeAction {
        match std::mem::replace(&mut self.mode, Mode::List) {
            Mode::List => self.list_key(key),
            Mode::Label { node, mut input } => {
                if is_confirm(&key) {
                    let value = input.value().trim().to_owned();
                    let label = (!value.is_empty()).then_some(value);
                    let n = &mut self.nodes[node];
                    n.label_time = label.as_ref().map(|_| (self.clock)());
                    n.label = label.clone();
                    self.labels.push((n.id.clone(), label));
                } else if !is_cancel(&key) {
                    input.handle_key(&key);
                    self.mode = Mode::Label { node, input };
                }
                TreeAction::None
            }
            Mode::Summary { target, choice } => self.summary_key(key, target, choice),
            Mode::Instructions { target, mut input } => {
                if is_confirm(&key) {
                    let text = input.value();
                    return TreeAction::Navigate(TreeTarget {
                        entry_id: self.nodes[target].id.clone(),
                        summarize: true,
                        custom_instructions: (!text.trim().is_empty()).then_some(text),
                    });
                }
                if is_cancel(&key) {
                    // Back to the choice, as pi loops back to its selector.
                    self.mode = Mode::Summary { target, choice: 2 };
                } else {
                    input.handle_key(&key);
                    self.mode = Mode::Instructions { target, input };
                }
                TreeAction::None
            }
        }
    }

    fn summary_key(&mut self, key: KeyEvent, target: usize, choice: usize) -> TreeAction {
        let last = SUMMARY_CHOICES.len() - 1;
        let plain = key.modifiers.difference(KeyModifiers::SHIFT).is_empty();
        let choice = match key.code {
            KeyCode::Up => choice.saturating_sub(1),
            KeyCode::Char('k') if plain => choice.saturating_sub(1),
            KeyCode::Down => (choice + 1).min(last),
            KeyCode::Char('j') if plain => (choice + 1).min(last),
            KeyCode::Enter => {
                let id = self.nodes[target].id.clone();
                return match choice {
                    0 | 1 => TreeAction::Navigate(TreeTarget {
                        entry_id: id,
                        summarize: choice == 1,
                        custom_instructions: None,
                    }),
                    _ => {
                        self.mode = Mode::Instructions {
                            target,
                            input: LineInput::default(),
                        };
                        TreeAction::None
                    }
                };
            }
            _ if is_cancel(&key) => {
                // Back to the tree with the same entry selected.
                return TreeAction::None;
            }
            _ => choice,
        };
        self.mode = Mode::Summary { target, choice };
        TreeAction::None
    }

    fn list_key(&mut self, key: KeyEvent) -> TreeAction {
        let len = self.layout.rows.len();
        let ctrl_or_alt = key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Up if !ctrl_or_alt => self.step(false),
            KeyCode::Down if !ctrl_or_alt => self.step(true),
            KeyCode::Left if ctrl_or_alt => {
                let node = self.layout.rows.get(self.selected).map(|r| r.node);
                match node {
                    Some(n) if self.layout.is_foldable(n) && !self.folded.contains(&n) => {
                        self.folded.insert(n);
                        self.apply_filter();
                    }
                    _ => self.selected = self.layout.segment_start(self.selected, false),
                }
            }
            KeyCode::Right if ctrl_or_alt => {
                let node = self.layout.rows.get(self.selected).map(|r| r.node);
                match node {
                    Some(n) if self.folded.contains(&n) => {
                        self.folded.remove(&n);
                        self.apply_filter();
                    }
                    _ => self.selected = self.layout.segment_start(self.selected, true),
                }
            }
            KeyCode::Left | KeyCode::PageUp => {
                self.selected = self.selected.saturating_sub(self.max_visible);
            }
            KeyCode::Right | KeyCode::PageDown => {
                self.selected = (self.selected + self.max_visible).min(len.saturating_sub(1));
            }
            KeyCode::Enter => return self.select(),
            _ if is_cancel(&key) => {
                if self.search.is_empty() {
                    return TreeAction::Cancel;
                }
                self.search.clear();
                self.folded.clear();
                self.apply_filter();
            }
            _ if is_ctrl(&key, 'b') => {
                self.selected = self.selected.saturating_sub(self.max_visible);
            }
            _ if is_ctrl(&key, 'f') => {
                self.selected = (self.selected + self.max_visible).min(len.saturating_sub(1));
            }
            _ if is_ctrl(&key, 'd') => self.set_filter(FilterMode::Default),
            _ if is_ctrl(&key, 't') => self.toggle_filter(FilterMode::NoTools),
            _ if is_ctrl(&key, 'u') => self.toggle_filter(FilterMode::UserOnly),
            _ if is_ctrl(&key, 'l') => self.toggle_filter(FilterMode::LabeledOnly),
            _ if is_ctrl(&key, 'a') => self.toggle_filter(FilterMode::All),
            _ if is_ctrl(&key, 'o') && shift => self.set_filter(self.filter.previous()),
            _ if is_ctrl(&key, 'o') => self.set_filter(self.filter.next()),
            KeyCode::Backspace => self.pop_search(),
            KeyCode::Char('L') | KeyCode::Char('l') if shift && !ctrl_or_alt => {
                if let Some(r) = self.layout.rows.get(self.selected) {
                    let current = self.nodes[r.node].label.clone().unwrap_or_default();
                    self.mode = Mode::Label {
                        node: r.node,
                        input: LineInput::with_text(&current),
                    };
                }
            }
            KeyCode::Char('T') | KeyCode::Char('t') if shift && !ctrl_or_alt => {
                self.show_label_times = !self.show_label_times;
            }
            KeyCode::Char(c) if !ctrl_or_alt && !c.is_control() => {
                self.search.push(c);
                self.folded.clear();
                self.apply_filter();
            }
            _ => {}
        }
        TreeAction::None
    }

    /// One row down or up, wrapping around (pi's list wraps).
    fn step(&mut self, down: bool) {
        let len = self.layout.rows.len();
        if len == 0 {
            return;
        }
        self.selected = match (down, self.selected) {
            (true, s) if s + 1 >= len => 0,
            (true, s) => s + 1,
            (false, 0) => len - 1,
            (false, s) => s - 1,
        };
    }

    fn pop_search(&mut self) {
        if self.search.pop().is_some() {
            self.folded.clear();
            self.apply_filter();
        }
    }

    fn select(&mut self) -> TreeAction {
        let Some(row) = self.layout.rows.get(self.selected) else {
            return TreeAction::None;
        };
        let target = row.node;
        if Some(target) == self.leaf || self.skip_summary_prompt {
            return TreeAction::Navigate(TreeTarget {
                entry_id: self.nodes[target].id.clone(),
                summarize: false,
                custom_instructions: None,
            });
        }
        self.mode = Mode::Summary { target, choice: 0 };
        TreeAction::None
    }
}
