//! The key handling of one read, without a terminal: the area is "held" (as while an
//! external editor runs), so nothing is drawn.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tokio::sync::mpsc as tokio_mpsc;

use super::super::keys::Keybindings;
use super::super::render::Surface;
use super::*;

struct Harness {
    shared: Arc<Mutex<Shared>>,
    reader: Reader,
    tx: tokio_mpsc::UnboundedSender<Input>,
    rx: tokio_mpsc::UnboundedReceiver<Input>,
    req: ReadRequest,
}

fn harness(initial: &str) -> Harness {
    let shared = Arc::new(Mutex::new(Shared {
        surface: Surface::default(),
        view: Some(View {
            prompt: "> ".into(),
            buffer: Buffer::new(initial),
            selected: 0,
            menu_closed: false,
            commands: true,
            files: None,
        }),
        status: None,
        held: Some(Vec::new()),
        busy: false,
        queued: Vec::new(),
        commands: vec![
            ("name".into(), "Set session display name".into()),
            ("new".into(), "Start a new session".into()),
        ],
        keys: Arc::new(Keybindings::default()),
        epoch: Instant::now(),
        modes: super::super::Modes::default(),
        live: String::new(),
        live_table: Vec::new(),
        pending: Vec::new(),
        arguments: vec![("thinking".into(), vec!["off".into(), "high".into()])],
        scrollback: Default::default(),
        laid_out: 80,
        fullscreen: None,
    }));
    let (tx, rx) = tokio_mpsc::unbounded_channel();
    Harness {
        shared,
        reader: Reader::default(),
        tx,
        rx,
        req: ReadRequest {
            prompt: "> ".into(),
            initial: String::new(),
            history: true,
        },
    }
}

impl Harness {
    fn press(&mut self, code: KeyCode, mods: KeyModifiers) -> Option<Input> {
        match self.reader.key(
            &self.shared,
            &KeyEvent::new(code, mods),
            &self.req,
            &self.tx,
        ) {
            Outcome::Done(input) => {
                // The next read starts empty.
                if let Ok(mut s) = self.shared.lock()
                    && let Some(view) = &mut s.view
                {
                    view.buffer = Buffer::default();
                    view.edited();
                }
                Some(input)
            }
            Outcome::Go | Outcome::Pass => None,
        }
    }

    fn typed(&mut self, text: &str) {
        for c in text.chars() {
            assert_eq!(self.press(KeyCode::Char(c), KeyModifiers::NONE), None);
        }
    }

    fn ctrl(&mut self, c: char) -> Option<Input> {
        self.press(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    fn text(&self) -> String {
        Reader::text(&self.shared)
    }
}

fn line(text: &str, follow_up: bool) -> Option<Input> {
    Some(Input::Line {
        text: text.into(),
        follow_up,
    })
}

#[test]
fn emacs_keys_edit_and_enter_sends() {
    let mut h = harness("");
    h.typed("hello big world");
    h.ctrl('w');
    assert_eq!(h.text(), "hello big ");
    h.ctrl('a');
    h.ctrl('k');
    assert_eq!(h.text(), "");
    h.ctrl('y');
    assert_eq!(h.text(), "hello big ");
    h.press(KeyCode::Char('b'), KeyModifiers::ALT);
    h.typed("very ");
    assert_eq!(h.text(), "hello very big ");
    h.ctrl('e');
    h.ctrl('j');
    h.typed("x");
    assert_eq!(
        h.press(KeyCode::Enter, KeyModifiers::NONE),
        line("hello very big \nx", false)
    );
}

#[test]
fn ctrl_d_exits_only_on_an_empty_editor_and_alt_enter_is_a_follow_up() {
    let mut h = harness("ab");
    h.press(KeyCode::Home, KeyModifiers::NONE);
    assert_eq!(h.ctrl('d'), None);
    assert_eq!(h.text(), "b");
    assert_eq!(h.press(KeyCode::Enter, KeyModifiers::ALT), line("b", true));
    let mut h = harness("");
    assert_eq!(h.ctrl('d'), Some(Input::Eof));
    assert_eq!(h.ctrl('c'), Some(Input::Interrupt));
}

#[test]
fn up_and_down_browse_the_history_from_the_draft() {
    let mut h = harness("");
    h.reader.history.add("first");
    h.reader.history.add("second");
    h.typed("draft");
    h.press(KeyCode::Up, KeyModifiers::NONE);
    assert_eq!(h.text(), "second");
    h.press(KeyCode::Up, KeyModifiers::NONE);
    assert_eq!(h.text(), "first");
    h.press(KeyCode::Down, KeyModifiers::NONE);
    h.press(KeyCode::Down, KeyModifiers::NONE);
    assert_eq!(h.text(), "draft");
}

#[test]
fn escape_while_busy_interrupts_and_gives_the_queue_back() {
    let mut h = harness("");
    if let Ok(mut s) = h.shared.lock() {
        s.busy = true;
        s.queued = vec!["steer".into(), "follow".into()];
    }
    h.typed("draft");
    assert_eq!(h.press(KeyCode::Esc, KeyModifiers::NONE), None);
    assert_eq!(h.text(), "steer\n\nfollow\n\ndraft");
    assert_eq!(
        h.rx.try_recv().ok(),
        Some(Input::Escape {
            restored: vec!["steer".into(), "follow".into()]
        })
    );
    // Alt+Up gives the queue back without interrupting.
    if let Ok(mut s) = h.shared.lock() {
        s.queued = vec!["later".into()];
    }
    h.press(KeyCode::Up, KeyModifiers::ALT);
    assert_eq!(h.text(), "later\n\nsteer\n\nfollow\n\ndraft");
    assert_eq!(
        h.rx.try_recv().ok(),
        Some(Input::Dequeue {
            restored: vec!["later".into()]
        })
    );
}

#[test]
fn escape_twice_on_an_idle_editor_opens_the_tree() {
    let mut h = harness("kept");
    assert_eq!(h.press(KeyCode::Esc, KeyModifiers::NONE), None);
    assert_eq!(
        h.press(KeyCode::Esc, KeyModifiers::NONE),
        Some(Input::Action {
            action: KeyAction::Tree,
            text: "kept".into()
        })
    );
}

#[test]
fn the_slash_menu_selects_with_arrows_and_closes_with_escape() {
    let mut h = harness("");
    h.typed("/n");
    h.press(KeyCode::Down, KeyModifiers::NONE);
    h.press(KeyCode::Tab, KeyModifiers::NONE);
    assert_eq!(h.text(), "/new ");
    h.ctrl('u');
    h.typed("/n");
    // Esc closes the menu: Enter then sends what was typed.
    h.press(KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(
        h.press(KeyCode::Enter, KeyModifiers::NONE),
        line("/n", false)
    );
    h.typed("/na");
    assert_eq!(
        h.press(KeyCode::Enter, KeyModifiers::NONE),
        line("/name", false)
    );
}

#[test]
fn a_paste_marker_is_deleted_whole_and_sent_expanded() {
    let mut h = harness("");
    let pasted = "x\n".repeat(20);
    let marker = h.reader.pastes.paste(&pasted);
    h.reader.edit(&h.shared, |b| b.insert(&marker));
    assert_eq!(h.text(), "[paste #1 +21 lines]");
    h.press(KeyCode::Backspace, KeyModifiers::NONE);
    assert_eq!(h.text(), "");
    let marker = h.reader.pastes.paste(&pasted);
    h.reader.edit(&h.shared, |b| b.insert(&marker));
    h.typed("!");
    assert_eq!(
        h.press(KeyCode::Enter, KeyModifiers::NONE),
        line(&format!("{pasted}!"), false)
    );
}

#[test]
fn the_at_menu_offers_the_project_files_and_enter_or_tab_takes_one() {
    let mut h = harness("");
    if let Ok(mut s) = h.shared.lock()
        && let Some(view) = &mut s.view
    {
        view.files = Some(
            ["README.md", "src/", "src/main.rs", "src/lib.rs"]
                .map(String::from)
                .to_vec(),
        );
    }
    h.typed("look at @ma");
    let rows = |h: &Harness| {
        let s = h.shared.lock().unwrap_or_else(|p| p.into_inner());
        let commands = s.commands.clone();
        s.view
            .as_ref()
            .map(|v| v.menu_rows(&commands, &s.arguments, 60))
            .unwrap_or_default()
    };
    let shown = rows(&h).join("\n");
    assert!(shown.contains("@src/main.rs"), "{shown}");
    assert!(!shown.contains("lib.rs"), "{shown}");
    // Enter takes the file instead of sending.
    assert_eq!(h.press(KeyCode::Enter, KeyModifiers::NONE), None);
    assert_eq!(h.text(), "look at @src/main.rs ");
    assert!(rows(&h).is_empty());
    // A folder is taken without the space, and its files show next; Tab takes one.
    h.typed("and @sr");
    assert_eq!(h.press(KeyCode::Tab, KeyModifiers::NONE), None);
    assert_eq!(h.text(), "look at @src/main.rs and @src/");
    assert!(rows(&h).join("\n").contains("@src/lib.rs"));
    h.press(KeyCode::Down, KeyModifiers::NONE);
    h.press(KeyCode::Tab, KeyModifiers::NONE);
    assert_eq!(h.text(), "look at @src/main.rs and @src/lib.rs ");
    assert_eq!(
        h.press(KeyCode::Enter, KeyModifiers::NONE),
        line("look at @src/main.rs and @src/lib.rs ", false)
    );
}

#[test]
fn command_arguments_show_in_the_menu_and_tab_or_enter_takes_one() {
    let mut h = harness("");
    h.typed("/thinking h");
    let rows = {
        let s = h.shared.lock().unwrap_or_else(|p| p.into_inner());
        let (c, a) = (s.commands.clone(), s.arguments.clone());
        s.view
            .as_ref()
            .map(|v| v.menu_rows(&c, &a, 60))
            .unwrap_or_default()
    };
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0].contains("high"), "{rows:?}");
    assert_eq!(h.press(KeyCode::Tab, KeyModifiers::NONE), None);
    assert_eq!(h.text(), "/thinking high");
    h.ctrl('u');
    h.typed("/thinking o");
    assert_eq!(
        h.press(KeyCode::Enter, KeyModifiers::NONE),
        line("/thinking off", false)
    );
}
