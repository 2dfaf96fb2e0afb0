//! Screens marked "pi:" are the output of pi 0.73.1's `TreeSelectorComponent` for the same
//! file and keys (rendered under node at 70 columns, 40 rows; ANSI stripped, pi's leading
//! blank line dropped).

use std::path::Path;

use pith_store::{OpenMode, Session, SessionEnv};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::layout::FilterMode;
use super::state::{Mode, TreeAction, TreeState};
use super::{TreeOptions, TreeTarget, new_state, render};
use crate::tui::testing::{ch, ctrl, key, screen};

/// The session in `sample.jsonl`: a model/thinking change, two branches off "hi there"
/// (one with a tool call, a tool result and a compaction; one with a bash run and a custom
/// message), and a label on the first user message as the last line (the leaf).
fn sample() -> Session {
    open(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tui/tree/sample.jsonl"))
}

fn open(path: &Path) -> Session {
    Session::open(path, None, None, OpenMode::ReadOnly, &SessionEnv::system())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn state(options: &TreeOptions) -> TreeState {
    let mut s = new_state(&sample(), options);
    s.set_max_visible(20);
    s
}

fn view(s: &TreeState) -> String {
    let tz = jiff::tz::TimeZone::UTC;
    let now = jiff::Timestamp::UNIX_EPOCH;
    screen(render::lines(s, 70, &tz, now), 70, 40)
}

fn ctrl_arrow(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::CONTROL)
}

const BORDER: &str = "──────────────────────────────────────────────────────────────────────";
const HEAD: &str = "   Session Tree
  ↑/↓: move. ←/→: page. ^←/^→ or Alt+←/Alt+→: fold/branch. shift+l:...";

fn pi(search: &str, rows: &str) -> String {
    let search = if search.is_empty() {
        "  Type to search:".to_owned()
    } else {
        format!("  Type to search: {search}")
    };
    format!("{BORDER}\n{HEAD}\n{search}\n{BORDER}\n\n{rows}\n\n{BORDER}")
}

const DEFAULT_ROWS: &str = "  • [start] user: hello
  • assistant: hi there
  ├⊟ • user: alternative idea
  │  ├⊟ • assistant: sure
› │  │     • [bash]: ls -la
  │  └─ [note]: side note
  └⊟ user: read the file
        [read: /home/u/x.rs:10-29]
        assistant: it says hello
        [compaction: 13k tokens]
  (5/10)";

#[test]
fn the_default_view_is_pis() {
    let s = state(&TreeOptions::default());
    assert_eq!(view(&s), pi("", DEFAULT_ROWS));
}

#[test]
fn filters_show_what_pi_shows() {
    let mut s = state(&TreeOptions::default());
    s.handle_key(ctrl('o'));
    assert_eq!(s.filter, FilterMode::NoTools);
    assert_eq!(
        view(&s),
        pi(
            "",
            "  • [start] user: hello
  • assistant: hi there
  ├⊟ • user: alternative idea
  │  ├⊟ • assistant: sure
› │  │     • [bash]: ls -la
  │  └─ [note]: side note
  └⊟ user: read the file
        assistant: it says hello
        [compaction: 13k tokens]
  (5/9) [no-tools]"
        )
    );
    s.handle_key(ctrl('d'));
    s.handle_key(ctrl('u'));
    assert_eq!(
        view(&s),
        pi(
            "",
            "  • [start] user: hello
› ├─ • user: alternative idea
  └─ user: read the file
  (2/3) [user]"
        )
    );
    // The same key again goes back to the default.
    s.handle_key(ctrl('u'));
    assert_eq!(s.filter, FilterMode::Default);
    s.handle_key(ctrl('l'));
    assert_eq!(
        view(&s),
        pi("", "› • [start] user: hello\n  (1/1) [labeled]")
    );
    s.handle_key(ctrl('a'));
    assert_eq!(
        view(&s),
        pi(
            "",
            "  • [model: m-1]
  • [thinking: low]
› • [start] user: hello
  • assistant: hi there
  ├⊟ • user: alternative idea
  │  ├⊟ • assistant: sure
  │  │     • [bash]: ls -la
  │  │     • [label: start]
  │  └─ [note]: side note
  └⊟ user: read the file
        [read: /home/u/x.rs:10-29]
        assistant: it says hello
        [compaction: 13k tokens]
  (3/13) [all]"
        )
    );
    // Cycling: all → default → … and back.
    s.handle_key(ctrl('o'));
    assert_eq!(s.filter, FilterMode::Default);
    s.handle_key(KeyEvent::new(
        KeyCode::Char('o'),
        KeyModifiers::CONTROL | KeyModifiers::SHIFT,
    ));
    assert_eq!(s.filter, FilterMode::All);
}

#[test]
fn search_narrows_and_escape_clears_it_first() {
    let mut s = state(&TreeOptions::default());
    for c in "side".chars() {
        s.handle_key(ch(c));
    }
    assert_eq!(view(&s), pi("side", "› [note]: side note\n  (1/1)"));
    s.handle_key(key(KeyCode::Backspace));
    assert_eq!(s.search, "sid");
    assert_eq!(s.handle_key(key(KeyCode::Esc)), TreeAction::None);
    assert!(s.search.is_empty());
    // The cursor stays on the entry it was on.
    assert_eq!(s.selected_node().map(|n| n.id.as_str()), Some("cm"));
    // Labels are searched too.
    for c in "start".chars() {
        s.handle_key(ch(c));
    }
    assert_eq!(
        s.layout
            .rows
            .iter()
            .map(|r| s.nodes[r.node].id.as_str())
            .collect::<Vec<_>>(),
        ["u1"]
    );
    s.handle_key(key(KeyCode::Esc));
    assert_eq!(s.handle_key(key(KeyCode::Esc)), TreeAction::Cancel);
}

#[test]
fn folding_and_branch_jumps_follow_pi() {
    let mut s = state(&TreeOptions::default());
    // From the leaf's row, Ctrl+← jumps to the start of its branch segment…
    s.handle_key(ctrl_arrow(KeyCode::Left));
    assert_eq!(s.selected_node().map(|n| n.id.as_str()), Some("a4"));
    // …folds a segment start, then jumps up to the enclosing segment, then folds that.
    s.handle_key(ctrl_arrow(KeyCode::Left));
    assert!(s.folded.contains(&s.layout.rows[s.selected].node));
    s.handle_key(ctrl_arrow(KeyCode::Left));
    assert_eq!(s.selected_node().map(|n| n.id.as_str()), Some("u3"));
    s.handle_key(ctrl_arrow(KeyCode::Left));
    assert_eq!(
        view(&s),
        pi(
            "",
            "  • [start] user: hello
  • assistant: hi there
› ├⊞ • user: alternative idea
  └⊟ user: read the file
        [read: /home/u/x.rs:10-29]
        assistant: it says hello
        [compaction: 13k tokens]
  (3/7)"
        )
    );
    // Ctrl+→ unfolds, then jumps down to the next branch point's first child; Alt+← on a
    // folded node jumps up (the inner fold stays).
    s.handle_key(ctrl_arrow(KeyCode::Right));
    s.handle_key(ctrl_arrow(KeyCode::Right));
    assert_eq!(s.selected_node().map(|n| n.id.as_str()), Some("a4"));
    s.handle_key(KeyEvent::new(KeyCode::Left, KeyModifiers::ALT));
    assert_eq!(
        view(&s),
        pi(
            "",
            "  • [start] user: hello
  • assistant: hi there
› ├⊟ • user: alternative idea
  │  ├⊞ • assistant: sure
  │  └─ [note]: side note
  └⊟ user: read the file
        [read: /home/u/x.rs:10-29]
        assistant: it says hello
        [compaction: 13k tokens]
  (3/9)"
        )
    );
    // Changing the filter or the search drops every fold.
    s.handle_key(ctrl('d'));
    assert!(s.folded.is_empty());
}

#[test]
fn up_and_down_wrap_and_left_right_page() {
    let mut s = state(&TreeOptions::default());
    for _ in 0..6 {
        s.handle_key(key(KeyCode::Down));
    }
    assert_eq!(s.selected, 0, "wrapped past the end");
    s.handle_key(key(KeyCode::Up));
    assert_eq!(s.selected, 9);
    s.set_max_visible(4);
    s.handle_key(key(KeyCode::Left));
    assert_eq!(s.selected, 5);
    s.handle_key(key(KeyCode::PageUp));
    s.handle_key(key(KeyCode::PageUp));
    assert_eq!(s.selected, 0);
    s.handle_key(key(KeyCode::Right));
    assert_eq!(s.selected, 4);
    s.handle_key(key(KeyCode::PageDown));
    s.handle_key(key(KeyCode::PageDown));
    assert_eq!(s.selected, 9);
    // A page of 4 scrolls around the cursor.
    let text = view(&s);
    assert!(text.contains("› ") && text.contains("(10/10)"), "{text}");
    assert!(!text.contains("user: hello"), "{text}");
}

#[test]
fn labels_are_set_and_cleared_and_reported_in_order() {
    let mut s = state(&TreeOptions::default());
    s.set_clock(|| "2025-01-01T13:05:00.000Z".to_owned());
    s.handle_key(key(KeyCode::Up));
    s.handle_key(key(KeyCode::Up));
    assert_eq!(s.selected_node().map(|n| n.id.as_str()), Some("u3"));
    s.handle_key(ch('L'));
    assert!(matches!(s.mode, Mode::Label { .. }));
    for c in " alt ".chars() {
        s.handle_key(ch(c));
    }
    let text = view(&s);
    assert!(
        text.contains("Label (empty to remove):") && text.contains(">  alt"),
        "{text}"
    );
    s.handle_key(key(KeyCode::Enter));
    assert_eq!(s.mode, Mode::List);
    // The first user message's label: prefilled, cleared with an empty value.
    s.handle_key(key(KeyCode::Home));
    for _ in 0..2 {
        s.handle_key(key(KeyCode::Up));
    }
    assert_eq!(s.selected_node().map(|n| n.id.as_str()), Some("u1"));
    s.handle_key(ch('L'));
    let text = view(&s);
    assert!(text.contains("> start"), "{text}");
    s.handle_key(ctrl('u'));
    s.handle_key(key(KeyCode::Enter));
    // Esc abandons an edit.
    s.handle_key(ch('L'));
    s.handle_key(ch('x'));
    s.handle_key(key(KeyCode::Esc));
    assert_eq!(
        s.labels(),
        [
            ("u3".to_owned(), Some("alt".to_owned())),
            ("u1".to_owned(), None)
        ]
    );
    // Shift+T shows label times (here in UTC).
    s.handle_key(ch('T'));
    let text = view(&s);
    assert!(
        text.contains("• [alt] 25/1/1 13:05 user: alternative idea"),
        "{text}"
    );
    assert!(text.contains("(1/10) [+label time]"), "{text}");
}

#[test]
fn selecting_asks_whether_to_summarize() {
    let mut s = state(&TreeOptions::default());
    // "user: read the file", the last visible row but three.
    for _ in 0..2 {
        s.handle_key(key(KeyCode::Down));
    }
    assert_eq!(s.selected_node().map(|n| n.id.as_str()), Some("u2"));
    assert_eq!(s.handle_key(key(KeyCode::Enter)), TreeAction::None);
    let text = view(&s);
    assert!(
        text.contains(
            " Summarize branch?\n\n → No summary\n   Summarize\n   Summarize with custom prompt"
        ),
        "{text}"
    );
    // Esc goes back to the tree, cursor unchanged.
    s.handle_key(key(KeyCode::Esc));
    assert_eq!(s.mode, Mode::List);
    assert_eq!(s.selected_node().map(|n| n.id.as_str()), Some("u2"));
    s.handle_key(key(KeyCode::Enter));
    s.handle_key(ch('j'));
    assert_eq!(
        s.handle_key(key(KeyCode::Enter)),
        TreeAction::Navigate(TreeTarget {
            entry_id: "u2".into(),
            summarize: true,
            custom_instructions: None
        })
    );
    // Custom instructions; Esc there returns to the choice.
    let mut s = state(&TreeOptions::default());
    s.handle_key(key(KeyCode::Down));
    s.handle_key(key(KeyCode::Down));
    s.handle_key(key(KeyCode::Enter));
    s.handle_key(key(KeyCode::Down));
    s.handle_key(key(KeyCode::Down));
    s.handle_key(key(KeyCode::Down));
    s.handle_key(key(KeyCode::Enter));
    assert!(matches!(s.mode, Mode::Instructions { .. }));
    s.handle_key(key(KeyCode::Esc));
    assert_eq!(
        s.mode,
        Mode::Summary {
            target: 4,
            choice: 2
        }
    );
    s.handle_key(key(KeyCode::Enter));
    for c in "focus on files".chars() {
        s.handle_key(ch(c));
    }
    assert!(view(&s).contains(" Custom summarization instructions"));
    assert_eq!(
        s.handle_key(key(KeyCode::Enter)),
        TreeAction::Navigate(TreeTarget {
            entry_id: "u2".into(),
            summarize: true,
            custom_instructions: Some("focus on files".into())
        })
    );
    // "No summary".
    let mut s = state(&TreeOptions::default());
    s.handle_key(key(KeyCode::Up));
    s.handle_key(key(KeyCode::Enter));
    assert_eq!(
        s.handle_key(key(KeyCode::Enter)),
        TreeAction::Navigate(TreeTarget {
            entry_id: "a4".into(),
            summarize: false,
            custom_instructions: None
        })
    );
}

#[test]
fn the_leaf_and_skip_prompt_navigate_at_once() {
    // The leaf is the label entry, visible under Ctrl+A.
    let mut s = state(&TreeOptions {
        filter: FilterMode::All,
        ..TreeOptions::default()
    });
    assert_eq!(s.selected_node().map(|n| n.id.as_str()), Some("l1"));
    assert_eq!(
        s.handle_key(key(KeyCode::Enter)),
        TreeAction::Navigate(TreeTarget {
            entry_id: "l1".into(),
            summarize: false,
            custom_instructions: None
        })
    );
    let mut s = state(&TreeOptions {
        skip_summary_prompt: true,
        initial_selected: Some("a1".into()),
        ..TreeOptions::default()
    });
    assert_eq!(s.selected_node().map(|n| n.id.as_str()), Some("a1"));
    assert_eq!(
        s.handle_key(key(KeyCode::Enter)),
        TreeAction::Navigate(TreeTarget {
            entry_id: "a1".into(),
            summarize: false,
            custom_instructions: None
        })
    );
}

#[test]
fn a_conformance_tree_renders() {
    let path = pith_tests::conformance_dir().join("gen-s002-branching/session.jsonl");
    let mut s = new_state(&open(&path), &TreeOptions::default());
    s.set_max_visible(15);
    let text = screen(
        render::lines(
            &s,
            100,
            &jiff::tz::TimeZone::UTC,
            jiff::Timestamp::UNIX_EPOCH,
        ),
        100,
        30,
    );
    insta::with_settings!({ snapshot_path => "../../../../snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("tui_tree_gen_s002_branching", text);
    });
}

#[test]
fn label_times_read_like_pis() {
    let tz = jiff::tz::TimeZone::fixed(jiff::tz::offset(2));
    let now: jiff::Timestamp = "2025-06-01T10:00:00Z"
        .parse()
        .unwrap_or_else(|e| panic!("{e}"));
    let f = |t: &str| render::format_label_time(t, &tz, now);
    assert_eq!(f("2025-06-01T08:07:00.000Z").as_deref(), Some("10:07"));
    assert_eq!(f("2025-03-04T21:30:00.000Z").as_deref(), Some("3/4 23:30"));
    assert_eq!(f("2024-12-31T23:30:00.000Z").as_deref(), Some("1/1 01:30"));
    assert_eq!(
        f("2009-02-03T04:05:00.000Z").as_deref(),
        Some("09/2/3 06:05")
    );
    assert_eq!(f("not a time"), None);
}

#[test]
fn the_tree_needs_a_terminal_but_an_empty_session_needs_nothing() {
    use std::io::IsTerminal;
    let empty = Session::in_memory("/w", &SessionEnv::system());
    assert_eq!(
        super::show_tree(&empty).ok(),
        Some(super::TreeOutcome::default())
    );
    if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        return;
    }
    let err = super::show_tree(&sample()).unwrap_err();
    assert!(err.to_string().contains("interactive terminal"), "{err}");
}

#[test]
fn tool_calls_read_like_pis() {
    use super::nodes::format_tool_call;
    use serde_json::json;
    let f = |name: &str, args: serde_json::Value| format_tool_call(name, &args, "/home/me");
    assert_eq!(
        f("read", json!({"path": "/home/me/a.rs"})),
        "[read: ~/a.rs]"
    );
    assert_eq!(
        f("read", json!({"file_path": "b.rs", "offset": 5})),
        "[read: b.rs:5]"
    );
    assert_eq!(f("read", json!({"path": "c", "limit": 1})), "[read: c:1-1]");
    assert_eq!(
        f("read", json!({"path": "c", "offset": 3, "limit": 2})),
        "[read: c:3-4]"
    );
    assert_eq!(f("write", json!({"path": "w.txt"})), "[write: w.txt]");
    assert_eq!(f("edit", json!({"file_path": "/home/me/e"})), "[edit: ~/e]");
    let long = "x".repeat(60);
    assert_eq!(
        f("bash", json!({"command": format!("echo\n{long}")})),
        format!("[bash: echo {}...]", "x".repeat(45))
    );
    assert_eq!(
        f("grep", json!({"pattern": "fn main"})),
        "[grep: /fn main/ in .]"
    );
    assert_eq!(
        f("find", json!({"pattern": "*.rs", "path": "src"})),
        "[find: *.rs in src]"
    );
    assert_eq!(f("ls", json!({})), "[ls: .]");
    assert_eq!(f("web", json!({"q": "rust"})), r#"[web: {"q":"rust"}]"#);
    assert_eq!(
        f("web", json!({"query": "a fairly long query string here"})),
        r#"[web: {"query":"a fairly long query string her...]"#
    );
}

/// pi 1.6.0's tree hides `context_edit` entries with the settings entries and shows them
/// as `[context omit: <id>]` / `[context replace: <id>]` in the "all" view.
#[test]
fn context_edits_are_settings_entries_as_in_pi() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("s.jsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#, "\n",
            r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#, "\n",
            r#"{"type":"context_edit","id":"e1","parentId":"u1","timestamp":"2025-01-01T00:00:02.000Z","targetId":"u1","replacement":null}"#, "\n",
            r#"{"type":"context_edit","id":"e2","parentId":"e1","timestamp":"2025-01-01T00:00:03.000Z","targetId":"u1","replacement":{"content":"x"}}"#, "\n",
        ),
    )
    .expect("write");
    let (nodes, _) = super::nodes::build(&open(&path));
    assert_eq!(nodes[1].kind, super::nodes::Kind::Setting);
    let text = |n: &super::nodes::Node| {
        n.display
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<String>()
    };
    assert_eq!(text(&nodes[1]), "[context omit: u1]");
    assert_eq!(text(&nodes[2]), "[context replace: u1]");
    assert!(
        nodes[1].search.contains("context edit omit u1"),
        "{}",
        nodes[1].search
    );
}
