use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pith_store::list::list;
use pith_store::list_index::list_indexed;
use ratatui::crossterm::event::KeyCode;
use serde_json::json;

use super::render::{RenderEnv, format_age, lines};
use super::state::{NameFilter, PickerAction, PickerState, Request, Scope, ScopeData, SearchHit};
use crate::tui::search::SortMode;
use crate::tui::testing::{ch, ctrl, key, screen};

const DAY: i64 = 86_400_000;
/// 2025-06-01T00:00:00Z, "now" for every rendering here.
const NOW: i64 = 1_748_736_000_000;

struct Msg<'a>(&'a str, &'a str, i64);

/// Writes a session file: header (with `parentSession` when given), messages chained in
/// order, then a `session_info` when named.
fn write_session(
    dir: &Path,
    id: &str,
    cwd: &str,
    parent: Option<&Path>,
    msgs: &[Msg<'_>],
    name: Option<&str>,
) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("mkdir: {e}"));
    let mut header = json!({"type":"session","version":3,"id":id,"timestamp":"2025-01-01T00:00:00.000Z","cwd":cwd});
    if let Some(p) = parent {
        header["parentSession"] = json!(p.to_string_lossy());
    }
    let mut lines = vec![header.to_string()];
    let mut prev: Option<String> = None;
    for (n, Msg(role, text, ms)) in msgs.iter().enumerate() {
        let eid = format!("{id}-{n}");
        let message = if *role == "user" {
            json!({"role":"user","content":text,"timestamp":ms})
        } else {
            json!({"role":"assistant","content":[{"type":"text","text":text}],"api":"x","provider":"p","model":"m",
                "usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
                "stopReason":"stop","timestamp":ms})
        };
        lines.push(
            json!({"type":"message","id":eid,"parentId":prev,"timestamp":"2025-01-02T00:00:00.000Z","message":message})
                .to_string(),
        );
        prev = Some(eid);
    }
    if let Some(name) = name {
        lines.push(json!({"type":"session_info","id":format!("{id}-n"),"parentId":prev,"timestamp":"2025-01-02T00:00:00.000Z","name":name}).to_string());
    }
    let path = dir.join(format!("{id}.jsonl"));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap_or_else(|e| panic!("write: {e}"));
    path
}

/// A project with a parent session, a fork of it, a named session and an old one.
fn project(dir: &Path) -> Vec<PathBuf> {
    let parent = write_session(
        dir,
        "parent",
        "/home/u/proj",
        None,
        &[
            Msg("user", "build the parser", NOW - 3 * DAY),
            Msg("assistant", "done with the lexer", NOW - 2 * DAY),
        ],
        None,
    );
    let fork = write_session(
        dir,
        "fork",
        "/home/u/proj",
        Some(&parent),
        &[Msg(
            "user",
            "try a recursive descent variant",
            NOW - 3 * 3_600_000,
        )],
        None,
    );
    let named = write_session(
        dir,
        "named",
        "/home/u/proj",
        None,
        &[
            Msg("user", "release checklist", NOW - 5 * 60_000),
            Msg("assistant", "node cve bumped", NOW - 4 * 60_000),
        ],
        Some("Release 1.2"),
    );
    let old = write_session(
        dir,
        "old",
        "/home/u/proj",
        None,
        &[Msg("user", "first\nexperiment\twith tabs", NOW - 400 * DAY)],
        None,
    );
    vec![parent, fork, named, old]
}

fn env() -> RenderEnv {
    RenderEnv {
        now_ms: NOW as f64,
        home: Some("/home/u".into()),
    }
}

fn loaded(dir: &Path, current: Option<&Path>) -> PickerState {
    let mut state = PickerState::new(current, true);
    assert_eq!(
        state.take_requests(),
        vec![Request::Listing(Scope::Current)]
    );
    state.set_listing(Scope::Current, ScopeData::new(list(dir).sessions));
    state
}

fn shown(state: &PickerState) -> Vec<String> {
    state
        .rows
        .iter()
        .map(|r| format!("{}{}", r.prefix(), state.sessions()[r.index].id))
        .collect()
}

fn snap(name: &str, text: &str) {
    insta::with_settings!({ snapshot_path => "../../../../snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, text);
    });
}

#[test]
fn threaded_list_puts_forks_under_their_parent_newest_first() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let files = project(tmp.path());
    let state = loaded(tmp.path(), Some(&files[0]));
    assert_eq!(shown(&state), ["named", "parent", "   └─ fork", "old"]);
    let text = screen(lines(&state, &env(), 90), 90, 20);
    snap("tui_picker_threaded", &text);
}

#[test]
fn sort_modes_and_the_named_filter() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    project(tmp.path());
    let mut state = loaded(tmp.path(), None);
    state.handle_key(ctrl('s'));
    assert_eq!(state.sort, SortMode::Recent);
    assert_eq!(shown(&state), ["named", "fork", "parent", "old"]);
    state.handle_key(ctrl('s'));
    assert_eq!(state.sort, SortMode::Relevance);
    state.handle_key(ctrl('s'));
    assert_eq!(state.sort, SortMode::Threaded);
    state.handle_key(ctrl('n'));
    assert_eq!(state.name_filter, NameFilter::Named);
    assert_eq!(shown(&state), ["named"]);
    state.handle_key(ctrl('n'));
    assert_eq!(shown(&state).len(), 4);
}

#[test]
fn search_by_words_phrases_and_regex() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    project(tmp.path());
    let mut state = loaded(tmp.path(), None);
    let type_in = |state: &mut PickerState, s: &str| {
        for c in s.chars() {
            state.handle_key(ch(c));
        }
    };
    // Words match fuzzily anywhere in id, name, messages and cwd; a search is flat.
    type_in(&mut state, "parser");
    assert_eq!(shown(&state), ["parent"]);
    state.handle_key(ctrl('u'));
    type_in(&mut state, "\"cve bumped\"");
    assert_eq!(shown(&state), ["named"]);
    state.handle_key(ctrl('u'));
    type_in(&mut state, "re:RECURSIVE\\s+descent");
    assert_eq!(shown(&state), ["fork"]);
    state.handle_key(ctrl('u'));
    type_in(&mut state, "re:(");
    assert!(shown(&state).is_empty());
    let text = screen(lines(&state, &env(), 60), 60, 14);
    assert!(text.contains("Invalid regex"), "{text}");
    // Esc with a query still cancels the picker, as in pi.
    assert_eq!(state.handle_key(key(KeyCode::Esc)), PickerAction::Cancel);
}

#[test]
fn a_search_asks_the_index_and_shows_its_hits_with_snippets() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let agent = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    project(tmp.path());
    let mut state = PickerState::new(None, true);
    let _ = state.take_requests();
    let listing = list_indexed(agent.path(), tmp.path());
    state.set_listing(Scope::Current, ScopeData::new(listing.sessions));
    assert!(state.take_requests().is_empty());
    for c in "\"the lexer\"".chars() {
        state.handle_key(ch(c));
    }
    // "done with the lexer" is an assistant text: found only once the index answers.
    assert!(shown(&state).is_empty());
    let query = "\"the lexer\"".to_owned();
    assert_eq!(
        state.take_requests(),
        vec![Request::Search(Scope::Current, query.clone())]
    );
    assert!(state.take_requests().is_empty(), "asked once per query");
    state.set_index_progress(Scope::Current, Some((1, 4)));
    let text = screen(lines(&state, &env(), 120), 120, 12);
    assert!(text.contains("Indexing 1/4"), "{text}");
    let index = pith_store::search::SearchIndex::open(agent.path(), tmp.path())
        .unwrap_or_else(|e| panic!("{e}"));
    let files = pith_store::list::jsonl_files(tmp.path());
    let index = index
        .sync(&files, None, &|_, _| {})
        .unwrap_or_else(|e| panic!("{e}"));
    let hits: Vec<SearchHit> = index
        .search(&pith_store::search::parse_query(&query), None, None)
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|h| SearchHit {
            path: h.path,
            entry: h.entry_id,
            snippet: h.snippet,
        })
        .collect();
    assert_eq!(hits.len(), 1);
    state.set_search(Scope::Current, query.clone(), hits.clone());
    state.set_index_progress(Scope::Current, None);
    assert_eq!(shown(&state), ["parent"]);
    let text = screen(lines(&state, &env(), 120), 120, 12);
    // The session's title, then what was found in its messages.
    assert!(
        text.contains("build the parser › done with the lexer"),
        "{text}"
    );
    // The index finished: the query is asked again for a complete answer.
    assert_eq!(
        state.take_requests(),
        vec![Request::Search(Scope::Current, query)]
    );
    // Enter opens the session at the entry that matched.
    assert_eq!(
        state.handle_key(key(KeyCode::Enter)),
        PickerAction::Select {
            path: hits[0].path.clone(),
            entry: hits[0].entry.clone()
        }
    );
}

#[test]
fn tab_switches_scope_and_loads_all_projects_once() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut state = PickerState::new(None, true);
    let _ = state.take_requests();
    assert!(!state.set_listing(Scope::Current, ScopeData::new(Vec::new())));
    let text = screen(lines(&state, &env(), 70), 70, 12);
    assert!(
        text.contains("No sessions in current folder. Press Tab to view all."),
        "{text}"
    );
    state.handle_key(key(KeyCode::Tab));
    assert_eq!(state.scope, Scope::All);
    assert_eq!(state.take_requests(), vec![Request::Listing(Scope::All)]);
    state.set_progress(Scope::All, 3, 10);
    let text = screen(lines(&state, &env(), 100), 100, 12);
    assert!(text.contains("Loading 3/10"), "{text}");
    // Nothing anywhere: pi closes the picker.
    assert!(state.set_listing(Scope::All, ScopeData::new(Vec::new())));
    project(&tmp.path().join("p"));
    assert!(!state.set_listing(
        Scope::All,
        ScopeData::new(list(&tmp.path().join("p")).sessions)
    ));
    assert_eq!(state.sessions().len(), 4);
    state.handle_key(key(KeyCode::Tab));
    assert_eq!(state.scope, Scope::Current);
    assert!(state.take_requests().is_empty());
    assert!(state.sessions().is_empty());
}

#[test]
fn navigation_and_selection() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let files = project(tmp.path());
    let mut state = loaded(tmp.path(), None);
    state.set_max_visible(2);
    state.handle_key(key(KeyCode::Up));
    assert_eq!(state.selected, 0, "no wrap at the top");
    state.handle_key(key(KeyCode::PageDown));
    assert_eq!(state.selected, 2);
    state.handle_key(key(KeyCode::PageDown));
    assert_eq!(state.selected, 3, "clamped");
    state.handle_key(key(KeyCode::Down));
    assert_eq!(state.selected, 3);
    assert_eq!(
        state.handle_key(key(KeyCode::Enter)),
        PickerAction::Select {
            path: files[3].clone(),
            entry: None
        }
    );
    // A page of 2 rows out of 4 shows the position.
    let text = screen(lines(&state, &env(), 80), 80, 16);
    assert!(text.contains("(4/4)"), "{text}");
    assert_eq!(state.handle_key(ctrl('c')), PickerAction::Cancel);
}

#[test]
fn delete_asks_first_and_spares_the_open_session() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let files = project(tmp.path());
    // The open session is "named", first in the list.
    let mut state = loaded(tmp.path(), Some(&files[2]));
    state.handle_key(ctrl('d'));
    assert_eq!(state.confirming_delete, None);
    assert!(state.status.as_ref().is_some_and(|s| s.error));
    state.handle_key(key(KeyCode::Down));
    state.handle_key(ctrl('d'));
    assert_eq!(state.confirming_delete.as_deref(), Some(files[0].as_path()));
    let text = screen(lines(&state, &env(), 100), 100, 16);
    assert!(text.contains("Delete session?"), "{text}");
    // Other keys are ignored while confirming; Esc cancels.
    assert_eq!(state.handle_key(ch('x')), PickerAction::None);
    state.handle_key(key(KeyCode::Esc));
    assert_eq!(state.confirming_delete, None);
    // Ctrl+Backspace (^H) deletes only when the search is empty.
    state.handle_key(ctrl('h'));
    assert_eq!(
        state.handle_key(key(KeyCode::Enter)),
        PickerAction::Delete(files[0].clone())
    );
    state.removed(&files[0]);
    assert_eq!(shown(&state), ["named", "fork", "old"]);
    // The status message expires.
    state.set_status("Session moved", false, Duration::from_secs(2));
    let t0 = Instant::now();
    state.tick(t0);
    assert!(!state.tick(t0 + Duration::from_secs(1)));
    assert!(state.tick(t0 + Duration::from_secs(3)));
    assert!(state.status.is_none());
}

#[test]
fn rename_edits_the_name_and_ignores_blank_input() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let files = project(tmp.path());
    let mut state = loaded(tmp.path(), None);
    state.handle_key(ctrl('r'));
    let text = screen(lines(&state, &env(), 60), 60, 12);
    assert!(
        text.contains("Rename Session") && text.contains("> Release 1.2"),
        "{text}"
    );
    state.handle_key(ctrl('u'));
    state.handle_key(ch(' '));
    assert_eq!(state.handle_key(key(KeyCode::Enter)), PickerAction::None);
    assert!(state.rename.is_some(), "a blank name keeps the box open");
    for c in "Ship it ".chars() {
        state.handle_key(ch(c));
    }
    assert_eq!(
        state.handle_key(key(KeyCode::Enter)),
        PickerAction::Rename {
            path: files[2].clone(),
            name: "Ship it".into()
        }
    );
    super::rename(&files[2], "Ship it", tmp.path()).unwrap_or_else(|e| panic!("{e:#}"));
    state.renamed(&files[2], "Ship it");
    let listed = list(tmp.path());
    let named = listed.sessions.iter().find(|s| s.path == files[2]);
    assert_eq!(named.and_then(|s| s.name.as_deref()), Some("Ship it"));
    assert_eq!(state.sessions()[0].name.as_deref(), Some("Ship it"));
    // Esc leaves rename mode without an action.
    state.handle_key(ctrl('r'));
    assert_eq!(state.handle_key(key(KeyCode::Esc)), PickerAction::None);
    assert!(state.rename.is_none());
}

#[test]
fn renaming_a_session_without_a_reply_is_refused_not_lost() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = write_session(
        tmp.path(),
        "q",
        "/w",
        None,
        &[Msg("user", "hello?", 5)],
        None,
    );
    let before = std::fs::read_to_string(&file).unwrap_or_default();
    let err = super::rename(&file, "Name", tmp.path())
        .err()
        .map(|e| e.to_string());
    assert!(err.is_some_and(|e| e.contains("no assistant reply")));
    assert_eq!(std::fs::read_to_string(&file).unwrap_or_default(), before);
}

#[test]
fn ages_read_like_pis() {
    let now = NOW as f64;
    let cases = [
        (now - 30_000.0, "now"),
        (now - 5.0 * 60_000.0, "5m"),
        (now - 3.0 * 3_600_000.0, "3h"),
        (now - 2.0 * DAY as f64, "2d"),
        (now - 15.0 * DAY as f64, "2w"),
        (now - 95.0 * DAY as f64, "3mo"),
        (now - 800.0 * DAY as f64, "2y"),
    ];
    for (t, want) in cases {
        assert_eq!(format_age(t, now), want);
    }
}

#[test]
fn sessions_that_name_each_other_as_parent_are_still_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (a, b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
    write_session(dir, "a", "/w", Some(&b), &[Msg("user", "one", 3)], None);
    write_session(dir, "b", "/w", Some(&a), &[Msg("user", "two", 2)], None);
    let c = dir.join("c.jsonl");
    write_session(dir, "c", "/w", Some(&c), &[Msg("user", "three", 1)], None);
    // pi shows none of these (a cycle has no root; a self-parent loops); pith shows all.
    let state = loaded(dir, None);
    assert_eq!(shown(&state), ["c", "a", "   └─ b"]);
}

#[test]
fn the_picker_needs_a_terminal() {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let err = super::pick_session("/w", tmp.path(), None).unwrap_err();
    assert!(err.to_string().contains("interactive terminal"), "{err}");
}

#[test]
fn a_shared_session_dir_shows_this_cwds_sessions_only() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path().join("shared");
    write_session(&dir, "mine", "/work/a", None, &[Msg("user", "a", 1)], None);
    write_session(
        &dir,
        "theirs",
        "/work/b",
        None,
        &[Msg("user", "b", 2)],
        None,
    );
    let ids = |cwd| {
        super::of_cwd(list(&dir).sessions, cwd)
            .into_iter()
            .map(|s| s.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(Some("/work/a")), ["mine"]);
    assert_eq!(ids(Some("/work/a/")), ["mine"]);
    assert_eq!(ids(None).len(), 2);
}
