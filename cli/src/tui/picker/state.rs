//! The picker's state and key handling, free of any terminal (pi's `SessionSelectorComponent`
//! and `SessionList`, spec: lifecycle.md §8).
//!
//! Side effects (loading, renaming, deleting) are asked for, not done: [`PickerState::handle_key`]
//! returns a [`PickerAction`], and [`PickerState::take_requests`] lists the loads the state
//! needs; the caller performs them and feeds the results back.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pith_store::list::SessionInfo;
use ratatui::crossterm::event::{KeyCode, KeyEvent};

use super::threaded::{Row, threaded_rows};
use crate::tui::input::{LineInput, is_cancel, is_confirm, is_ctrl, is_ctrl_backspace};
use crate::tui::search::{Query, SearchDoc, SortMode, filter_and_sort, parse_query};

/// Which sessions are listed (Tab toggles).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// This project's session directory.
    Current,
    /// Every project under the sessions root.
    All,
}

/// Whether unnamed sessions are shown (Ctrl+N toggles).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameFilter {
    /// Every session.
    All,
    /// Only sessions with a name.
    Named,
}

/// What the caller must do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickerAction {
    /// Nothing; redraw.
    None,
    /// The user chose this session file; `entry` is the search hit's entry (open the session
    /// with its leaf there), when the row came from a search.
    Select {
        /// The session file.
        path: PathBuf,
        /// The matching entry's id.
        entry: Option<String>,
    },
    /// The user backed out.
    Cancel,
    /// Append a `session_info` entry named `name` (trimmed, non-empty) to `path`, then call
    /// [`PickerState::renamed`] or report the failure with [`PickerState::set_status`].
    Rename {
        /// The session file.
        path: PathBuf,
        /// The new name.
        name: String,
    },
    /// The user confirmed deleting `path`: move it to the trash, then call
    /// [`PickerState::removed`] or report the failure.
    Delete(PathBuf),
}

/// A load the state is waiting for (see [`PickerState::take_requests`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// List the scope's sessions, then call [`PickerState::set_listing`].
    Listing(Scope),
    /// Search the scope's texts through the search index (building it first, with
    /// [`PickerState::set_index_progress`]), then call [`PickerState::set_search`].
    Search(Scope, String),
}

/// One search answer's hit for a listed session.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The session file.
    pub path: PathBuf,
    /// The entry whose text matched (`None`: only the name, id or cwd matched; the row then
    /// shows no snippet).
    pub entry: Option<String>,
    /// A one-line excerpt around the match.
    pub snippet: String,
}

/// The index's answer to the scope's latest query.
#[derive(Debug, Clone, Default)]
struct Answer {
    query: String,
    /// Hits by listed session index, best first.
    hits: Vec<(usize, SearchHit)>,
}

/// A listing prepared for the picker: the sessions plus what threading and search need.
#[derive(Debug, Clone)]
pub struct ScopeData {
    sessions: Vec<SessionInfo>,
    /// Real path of each session (pi compares `realpath`s to thread forks).
    canon: Vec<PathBuf>,
    /// Real path of each session's `parentSession`, when it is a string.
    parent: Vec<Option<PathBuf>>,
    docs: Vec<SearchDoc>,
    by_path: std::collections::HashMap<PathBuf, usize>,
    /// The latest search answer, and the query last asked for.
    answer: Option<Answer>,
    asked: Option<String>,
    /// Index build progress `(done, total)` while it builds.
    indexing: Option<(usize, usize)>,
}

impl ScopeData {
    /// Prepares `sessions` (newest first). Resolves real paths, so it touches the disk: build
    /// it on the loading thread. Sessions that carry `allMessagesText` need no text loading.
    pub fn new(sessions: Vec<SessionInfo>) -> ScopeData {
        let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
        let canon = sessions.iter().map(|s| real(&s.path)).collect();
        let parent = sessions
            .iter()
            .map(|s| {
                s.parent_session_path
                    .as_ref()
                    .and_then(|v| v.as_str())
                    .filter(|p| !p.is_empty())
                    .map(|p| real(Path::new(p)))
            })
            .collect();
        let docs = sessions.iter().map(SearchDoc::new).collect();
        let by_path = sessions
            .iter()
            .enumerate()
            .map(|(i, s)| (s.path.clone(), i))
            .collect();
        ScopeData {
            sessions,
            canon,
            parent,
            docs,
            by_path,
            answer: None,
            asked: None,
            indexing: None,
        }
    }

    /// The sessions, newest first.
    pub fn sessions(&self) -> &[SessionInfo] {
        &self.sessions
    }
}

/// A transient message in the header (pi shows them for 2–4 s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The text.
    pub text: String,
    /// Shown in the error colour.
    pub error: bool,
    ttl: Duration,
    shown_at: Option<Instant>,
}

/// Everything the picker shows and how keys change it.
#[derive(Debug)]
pub struct PickerState {
    pub(super) scope: Scope,
    pub(super) sort: SortMode,
    pub(super) name_filter: NameFilter,
    current: Option<ScopeData>,
    all: Option<ScopeData>,
    /// Listing progress `(loaded, total)` per scope while it loads.
    loading: [Option<(usize, usize)>; 2],
    requested: [bool; 2],
    pub(super) query: LineInput,
    /// The visible list.
    pub(super) rows: Vec<Row>,
    pub(super) selected: usize,
    pub(super) show_path: bool,
    pub(super) confirming_delete: Option<PathBuf>,
    /// Rename mode: the session and the name being typed.
    pub(super) rename: Option<(PathBuf, LineInput)>,
    pub(super) status: Option<Status>,
    /// Real path of the session that is open (pi will not delete it), if any.
    current_session: Option<PathBuf>,
    pub(super) can_rename: bool,
    /// Rows per page (pi: 10; pith fills the screen).
    pub(super) max_visible: usize,
}

fn slot(scope: Scope) -> usize {
    match scope {
        Scope::Current => 0,
        Scope::All => 1,
    }
}

impl PickerState {
    /// A picker over nothing yet, in the current-folder scope, threaded, all names; the
    /// current scope's listing is requested. `current_session` cannot be deleted.
    pub fn new(current_session: Option<&Path>, can_rename: bool) -> PickerState {
        PickerState {
            scope: Scope::Current,
            sort: SortMode::Threaded,
            name_filter: NameFilter::All,
            current: None,
            all: None,
            loading: [Some((0, 0)), None],
            requested: [false, false],
            query: LineInput::default(),
            rows: Vec::new(),
            selected: 0,
            show_path: false,
            confirming_delete: None,
            rename: None,
            status: None,
            current_session: current_session
                .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned())),
            can_rename,
            max_visible: 10,
        }
    }

    /// Sets how many rows a page holds (the list's height); at least 1.
    pub fn set_max_visible(&mut self, rows: usize) {
        self.max_visible = rows.max(1);
    }

    fn data(&self, scope: Scope) -> Option<&ScopeData> {
        match scope {
            Scope::Current => self.current.as_ref(),
            Scope::All => self.all.as_ref(),
        }
    }

    fn data_mut(&mut self, scope: Scope) -> Option<&mut ScopeData> {
        match scope {
            Scope::Current => self.current.as_mut(),
            Scope::All => self.all.as_mut(),
        }
    }

    /// The shown scope's sessions (empty while loading).
    pub fn sessions(&self) -> &[SessionInfo] {
        self.data(self.scope).map_or(&[], |d| d.sessions())
    }

    /// The shown scope's listing progress `(loaded, total)`, while it loads.
    pub fn loading(&self) -> Option<(usize, usize)> {
        self.loading[slot(self.scope)]
    }

    /// The shown scope's search-index build progress `(indexed, total)` while it builds
    /// (searches meanwhile answer from what is indexed).
    pub fn indexing(&self) -> Option<(usize, usize)> {
        self.data(self.scope)?.indexing
    }

    /// The search hit behind session `index` of the shown scope, for the current query.
    pub fn hit(&self, index: usize) -> Option<&SearchHit> {
        let d = self.data(self.scope)?;
        let answer = d.answer.as_ref()?;
        if answer.query != self.query.value().trim() {
            return None;
        }
        answer
            .hits
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, h)| h)
    }

    /// Why the query matches nothing: an empty or invalid `re:` pattern.
    pub fn query_error(&self) -> Option<String> {
        match parse_query(&self.query.value()) {
            Query::Invalid(e) => Some(e),
            Query::Tokens(_) | Query::Regex(_) => None,
        }
    }

    /// The session under the cursor.
    pub fn selected_session(&self) -> Option<&SessionInfo> {
        let row = self.rows.get(self.selected)?;
        self.sessions().get(row.index)
    }

    /// Whether session `index` of the shown scope is the open session.
    pub fn is_current_session(&self, index: usize) -> bool {
        let (Some(cur), Some(d)) = (&self.current_session, self.data(self.scope)) else {
            return false;
        };
        d.canon.get(index) == Some(cur)
    }

    /// Loads the state is waiting for, each returned once: the shown scope's listing, and a
    /// search whenever the query changed (the caller runs only the latest).
    pub fn take_requests(&mut self) -> Vec<Request> {
        let mut out = Vec::new();
        let s = slot(self.scope);
        if self.data(self.scope).is_none() && !self.requested[s] {
            self.requested[s] = true;
            self.loading[s].get_or_insert((0, 0));
            out.push(Request::Listing(self.scope));
        }
        let query = self.query.value().trim().to_owned();
        let scope = self.scope;
        if !query.is_empty()
            && let Some(d) = self.data_mut(scope)
            && d.asked.as_deref() != Some(query.as_str())
        {
            d.asked = Some(query.clone());
            out.push(Request::Search(scope, query));
        }
        out
    }

    /// Search-index build progress for `scope`; `None` once the index is complete. When the
    /// build completes, the current query is asked again (its answer was partial).
    pub fn set_index_progress(&mut self, scope: Scope, progress: Option<(usize, usize)>) {
        if let Some(d) = self.data_mut(scope) {
            d.indexing = progress;
            if progress.is_none() {
                d.asked = None;
            }
        }
    }

    /// The search index answered `query` for `scope` (hits best first); hits for sessions
    /// the listing does not hold are left out.
    pub fn set_search(&mut self, scope: Scope, query: String, hits: Vec<SearchHit>) {
        let Some(d) = self.data_mut(scope) else {
            return;
        };
        let hits = hits
            .into_iter()
            .filter_map(|h| d.by_path.get(&h.path).map(|&i| (i, h)))
            .collect();
        d.answer = Some(Answer { query, hits });
        if scope == self.scope {
            self.refilter();
        }
    }

    /// Listing progress for `scope`.
    pub fn set_progress(&mut self, scope: Scope, loaded: usize, total: usize) {
        if let Some(p) = &mut self.loading[slot(scope)] {
            *p = (loaded, total);
        }
    }

    /// The listing of `scope` arrived. Returns `true` when pi would close the picker: the
    /// all-projects listing is empty and so is the current one.
    pub fn set_listing(&mut self, scope: Scope, data: ScopeData) -> bool {
        self.loading[slot(scope)] = None;
        let empty = data.sessions.is_empty();
        match scope {
            Scope::Current => self.current = Some(data),
            Scope::All => self.all = Some(data),
        }
        if scope == self.scope {
            self.refilter();
        }
        scope == Scope::All && empty && self.current.as_ref().is_some_and(|c| c.sessions.is_empty())
    }

    /// Shows a message for `ttl` (counted from the next [`PickerState::tick`]).
    pub fn set_status(&mut self, text: impl Into<String>, error: bool, ttl: Duration) {
        self.status = Some(Status {
            text: text.into(),
            error,
            ttl,
            shown_at: None,
        });
    }

    /// Advances the clock: starts and expires status messages. Returns whether anything
    /// changed (redraw).
    pub fn tick(&mut self, now: Instant) -> bool {
        let Some(s) = &mut self.status else {
            return false;
        };
        match s.shown_at {
            None => {
                s.shown_at = Some(now);
                false
            }
            Some(at) if now.duration_since(at) >= s.ttl => {
                self.status = None;
                true
            }
            Some(_) => false,
        }
    }

    /// A rename succeeded: the name shows in both scopes at once (a `session_info` entry does
    /// not change a session's last activity, so nothing else moves).
    pub fn renamed(&mut self, path: &Path, name: &str) {
        for d in [self.current.as_mut(), self.all.as_mut()]
            .into_iter()
            .flatten()
        {
            for (i, s) in d.sessions.iter_mut().enumerate() {
                if s.path == path {
                    s.name = Some(name.to_owned());
                    d.docs[i] = SearchDoc::new(s);
                }
            }
        }
        self.refilter();
    }

    /// A session file is gone: drop it from both scopes.
    pub fn removed(&mut self, path: &Path) {
        fn retain_by<T>(v: &mut Vec<T>, keep: &[bool]) {
            let mut k = keep.iter();
            v.retain(|_| k.next().copied().unwrap_or(true));
        }
        for d in [self.current.as_mut(), self.all.as_mut()]
            .into_iter()
            .flatten()
        {
            let keep: Vec<bool> = d.sessions.iter().map(|s| s.path != path).collect();
            retain_by(&mut d.sessions, &keep);
            retain_by(&mut d.canon, &keep);
            retain_by(&mut d.parent, &keep);
            retain_by(&mut d.docs, &keep);
            d.by_path = d
                .sessions
                .iter()
                .enumerate()
                .map(|(i, s)| (s.path.clone(), i))
                .collect();
            d.answer = None;
            d.asked = None;
        }
        self.refilter();
    }

    /// Rebuilds the visible rows (pi's `filterSessions`): threaded without a query, else
    /// searched; the cursor index is kept, clamped.
    pub fn refilter(&mut self) {
        let Some(d) = self.data(self.scope) else {
            self.rows.clear();
            self.selected = 0;
            return;
        };
        let candidates: Vec<usize> = (0..d.sessions.len())
            .filter(|&i| {
                self.name_filter == NameFilter::All
                    || d.sessions[i]
                        .name
                        .as_deref()
                        .is_some_and(|n| !n.trim().is_empty())
            })
            .collect();
        let query = self.query.value();
        self.rows = if query.trim().is_empty() {
            if self.sort == SortMode::Threaded {
                threaded_rows(&d.sessions, &d.canon, &d.parent, &candidates)
            } else {
                candidates.into_iter().map(Row::flat).collect()
            }
        } else {
            let parsed = parse_query(&query);
            if matches!(parsed, Query::Invalid(_)) {
                Vec::new()
            } else {
                searched_rows(d, &candidates, &query, &parsed, self.sort)
            }
        };
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
    }

    /// Applies one key (bindings: pi's defaults, listed in the module docs of [`super`]).
    pub fn handle_key(&mut self, key: KeyEvent) -> PickerAction {
        if self.rename.is_some() {
            return self.rename_key(key);
        }
        if let Some(path) = &self.confirming_delete {
            if is_confirm(&key) {
                let path = path.clone();
                self.confirming_delete = None;
                return PickerAction::Delete(path);
            }
            if is_cancel(&key) {
                self.confirming_delete = None;
            }
            return PickerAction::None;
        }
        if key.code == KeyCode::Tab {
            self.scope = match self.scope {
                Scope::Current => Scope::All,
                Scope::All => Scope::Current,
            };
            self.refilter();
        } else if is_ctrl(&key, 's') {
            self.sort = self.sort.next();
            self.refilter();
        } else if is_ctrl(&key, 'n') {
            self.name_filter = match self.name_filter {
                NameFilter::All => NameFilter::Named,
                NameFilter::Named => NameFilter::All,
            };
            self.refilter();
        } else if is_ctrl(&key, 'p') {
            self.show_path = !self.show_path;
        } else if is_ctrl(&key, 'd') {
            self.start_delete();
        } else if is_ctrl(&key, 'r') {
            self.start_rename();
        } else if is_ctrl_backspace(&key) {
            // Deletes a session only when the query is empty; otherwise it edits the query.
            if self.query.is_empty() {
                self.start_delete();
            } else if self.query.handle_key(&key) {
                self.refilter();
            }
        } else if key.code == KeyCode::Up {
            self.selected = self.selected.saturating_sub(1);
        } else if key.code == KeyCode::Down {
            self.selected = (self.selected + 1).min(self.rows.len().saturating_sub(1));
        } else if key.code == KeyCode::PageUp {
            self.selected = self.selected.saturating_sub(self.max_visible);
        } else if key.code == KeyCode::PageDown {
            self.selected =
                (self.selected + self.max_visible).min(self.rows.len().saturating_sub(1));
        } else if is_confirm(&key) {
            if let Some(s) = self.selected_session() {
                let path = s.path.clone();
                let entry = self
                    .rows
                    .get(self.selected)
                    .and_then(|r| self.hit(r.index))
                    .and_then(|h| h.entry.clone());
                return PickerAction::Select { path, entry };
            }
        } else if is_cancel(&key) {
            return PickerAction::Cancel;
        } else if self.query.handle_key(&key) {
            self.refilter();
        }
        PickerAction::None
    }

    fn start_delete(&mut self) {
        let Some(row) = self.rows.get(self.selected) else {
            return;
        };
        if self.is_current_session(row.index) {
            self.set_status(
                "Cannot delete the currently active session",
                true,
                Duration::from_secs(3),
            );
            return;
        }
        if let Some(s) = self.sessions().get(row.index) {
            self.confirming_delete = Some(s.path.clone());
        }
    }

    fn start_rename(&mut self) {
        if !self.can_rename || self.loading().is_some() {
            return;
        }
        let Some(row) = self.rows.get(self.selected) else {
            return;
        };
        if self.is_current_session(row.index) {
            // The open session holds the file's lock and its own copy of the name.
            self.set_status(
                "Use /name to rename the current session",
                true,
                Duration::from_secs(3),
            );
            return;
        }
        if let Some(s) = self.sessions().get(row.index) {
            let input = LineInput::with_text(s.name.as_deref().unwrap_or(""));
            self.rename = Some((s.path.clone(), input));
        }
    }

    fn rename_key(&mut self, key: KeyEvent) -> PickerAction {
        let Some((path, input)) = &mut self.rename else {
            return PickerAction::None;
        };
        if is_cancel(&key) {
            self.rename = None;
        } else if is_confirm(&key) {
            let name = input.value().trim().to_owned();
            // pi ignores an empty name and stays in rename mode.
            if !name.is_empty() {
                let path = path.clone();
                self.rename = None;
                return PickerAction::Rename { path, name };
            }
        } else {
            input.handle_key(&key);
        }
        PickerAction::None
    }
}

/// The rows of a search: the index's hits (best first, or newest first in the recent sort),
/// then sessions whose listing fields (id, name, first message, cwd) match as pi's picker
/// matches them, which the index may not cover yet.
fn searched_rows(
    d: &ScopeData,
    candidates: &[usize],
    query: &str,
    parsed: &Query,
    sort: SortMode,
) -> Vec<Row> {
    let allowed: std::collections::HashSet<usize> = candidates.iter().copied().collect();
    let mut seen = std::collections::HashSet::new();
    let mut rows: Vec<usize> = Vec::new();
    if let Some(answer) = d.answer.as_ref().filter(|a| a.query == query.trim()) {
        for (i, _) in &answer.hits {
            if allowed.contains(i) && seen.insert(*i) {
                rows.push(*i);
            }
        }
    }
    let rest: Vec<usize> = filter_and_sort(
        &d.sessions,
        &d.docs,
        candidates.iter().copied().filter(|i| !seen.contains(i)),
        parsed,
        sort,
    );
    rows.extend(rest);
    if sort == SortMode::Recent {
        // Sessions are newest first, so their index order is the recent order.
        rows.sort_unstable();
    }
    rows.into_iter().map(Row::flat).collect()
}
