//! Keys: pi's action ids, their default keys, `<agent dir>/keybindings.json` in pi's format
//! (`{"app.model.select": "ctrl+k", "tui.input.newLine": ["shift+enter", "ctrl+j"]}`: a
//! configured value replaces that action's defaults, `[]` unbinds it), and the key string a
//! terminal key event stands for (`ctrl+a`, `shift+enter`, `alt+enter`, `escape`).

use std::path::Path;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key asks of the editor or the app (the pi actions pith implements).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// `app.interrupt`: abort the run (Esc Esc on an idle editor opens `/tree`).
    Interrupt,
    /// `app.clear`: clear the editor; twice quickly exits.
    Clear,
    /// `app.exit`: exit when the editor is empty (else it deletes forward).
    Exit,
    /// `app.suspend`: stop pith (`fg` brings it back).
    Suspend,
    /// `app.editor.external`: edit the text in `$VISUAL`/`$EDITOR`.
    ExternalEditor,
    /// `app.clipboard.pasteImage`: the clipboard's image as a file path, or its text.
    PasteImage,
    /// `app.model.select`.
    SelectModel,
    /// `app.model.cycleForward`.
    CycleModel,
    /// `app.thinking.cycle`.
    CycleThinking,
    /// `app.thinking.toggle`.
    ToggleThinking,
    /// `app.tools.expand`.
    ExpandTools,
    /// `app.message.followUp`.
    FollowUp,
    /// `app.message.dequeue`: the queued messages back into the editor.
    Dequeue,
    /// `app.session.tree` (no default key).
    Tree,
    /// `app.session.new` (no default key).
    NewSession,
    /// `app.session.fork` (no default key).
    Fork,
    /// `app.session.resume` (no default key).
    Resume,
    /// `tui.input.submit`.
    Submit,
    /// `tui.input.newLine`.
    NewLine,
    /// `tui.input.tab`: complete.
    Tab,
    /// `tui.editor.cursorUp` (history at the top).
    CursorUp,
    /// `tui.editor.cursorDown` (history at the bottom).
    CursorDown,
    /// `tui.editor.cursorLeft`.
    CursorLeft,
    /// `tui.editor.cursorRight`.
    CursorRight,
    /// `tui.editor.cursorWordLeft`.
    WordLeft,
    /// `tui.editor.cursorWordRight`.
    WordRight,
    /// `tui.editor.cursorLineStart`.
    LineStart,
    /// `tui.editor.cursorLineEnd`.
    LineEnd,
    /// `tui.editor.deleteCharBackward`.
    DeleteBackward,
    /// `tui.editor.deleteCharForward`.
    DeleteForward,
    /// `tui.editor.deleteWordBackward`.
    DeleteWordBackward,
    /// `tui.editor.deleteWordForward`.
    DeleteWordForward,
    /// `tui.editor.deleteToLineStart`.
    DeleteToLineStart,
    /// `tui.editor.deleteToLineEnd`.
    DeleteToLineEnd,
    /// `tui.editor.yank`.
    Yank,
    /// `tui.editor.undo`.
    Undo,
    /// `tui.editor.jumpForward`: the cursor to the next occurrence of the character typed
    /// next.
    JumpForward,
    /// `tui.editor.jumpBackward`: to the previous one.
    JumpBackward,
    /// `tui.altScreen.pageUp`: full-screen mode's view up a page.
    ScrollPageUp,
    /// `tui.altScreen.pageDown`: down a page.
    ScrollPageDown,
    /// `tui.altScreen.top`: to the transcript's start.
    ScrollTop,
    /// `tui.altScreen.bottom`: to its end.
    ScrollBottom,
}

/// Every action: pi's id, pi's default keys (Linux), and what `/hotkeys` says. App actions
/// come first: a key bound to an app action and an editor action (Ctrl+D) tries the app's
/// first.
pub const ACTIONS: &[(Action, &str, &[&str], &str)] = &[
    (
        Action::Interrupt,
        "app.interrupt",
        &["escape"],
        "interrupt the reply or the running !command; twice on an idle editor: /tree",
    ),
    (
        Action::Clear,
        "app.clear",
        &["ctrl+c"],
        "clear the editor; twice quickly to exit",
    ),
    (Action::Exit, "app.exit", &["ctrl+d"], "exit (empty editor)"),
    (
        Action::Suspend,
        "app.suspend",
        &["ctrl+z"],
        "suspend to the background (fg resumes)",
    ),
    (
        Action::ExternalEditor,
        "app.editor.external",
        &["ctrl+g"],
        "edit the prompt in $VISUAL/$EDITOR",
    ),
    (
        Action::PasteImage,
        "app.clipboard.pasteImage",
        &["ctrl+v"],
        "paste an image (as a file path) or text from the clipboard",
    ),
    (
        Action::SelectModel,
        "app.model.select",
        &["ctrl+l"],
        "select model",
    ),
    (
        Action::CycleModel,
        "app.model.cycleForward",
        &["ctrl+p"],
        "next model",
    ),
    (
        Action::CycleThinking,
        "app.thinking.cycle",
        &["shift+tab"],
        "next thinking level",
    ),
    (
        Action::ToggleThinking,
        "app.thinking.toggle",
        &["ctrl+t"],
        "hide or show thinking blocks",
    ),
    (
        Action::ExpandTools,
        "app.tools.expand",
        &["ctrl+o"],
        "expand or collapse every tool output and summary",
    ),
    (
        Action::ScrollPageUp,
        "tui.altScreen.pageUp",
        &["pageup"],
        "full-screen mode: scroll up a page",
    ),
    (
        Action::ScrollPageDown,
        "tui.altScreen.pageDown",
        &["pagedown"],
        "full-screen mode: scroll down a page",
    ),
    (
        Action::ScrollTop,
        "tui.altScreen.top",
        &["ctrl+home"],
        "full-screen mode: scroll to the start",
    ),
    (
        Action::ScrollBottom,
        "tui.altScreen.bottom",
        &["ctrl+end"],
        "full-screen mode: scroll to the latest",
    ),
    (
        Action::FollowUp,
        "app.message.followUp",
        &["alt+enter"],
        "queue a follow-up while a reply streams",
    ),
    (
        Action::Dequeue,
        "app.message.dequeue",
        &["alt+up"],
        "queued messages back into the editor",
    ),
    (Action::Tree, "app.session.tree", &[], "/tree"),
    (Action::NewSession, "app.session.new", &[], "/new"),
    (Action::Fork, "app.session.fork", &[], "/fork"),
    (Action::Resume, "app.session.resume", &[], "/resume"),
    (
        Action::Submit,
        "tui.input.submit",
        &["enter"],
        "send; while a reply streams: steer",
    ),
    (
        Action::NewLine,
        "tui.input.newLine",
        &["shift+enter", "ctrl+j"],
        "new line",
    ),
    (
        Action::Tab,
        "tui.input.tab",
        &["tab"],
        "complete /commands and paths",
    ),
    (
        Action::CursorUp,
        "tui.editor.cursorUp",
        &["up"],
        "cursor up; history at the top",
    ),
    (
        Action::CursorDown,
        "tui.editor.cursorDown",
        &["down"],
        "cursor down; history at the bottom",
    ),
    (
        Action::CursorLeft,
        "tui.editor.cursorLeft",
        &["left", "ctrl+b"],
        "cursor left",
    ),
    (
        Action::CursorRight,
        "tui.editor.cursorRight",
        &["right", "ctrl+f"],
        "cursor right",
    ),
    (
        Action::WordLeft,
        "tui.editor.cursorWordLeft",
        &["alt+left", "ctrl+left", "alt+b"],
        "word left",
    ),
    (
        Action::WordRight,
        "tui.editor.cursorWordRight",
        &["alt+right", "ctrl+right", "alt+f"],
        "word right",
    ),
    (
        Action::LineStart,
        "tui.editor.cursorLineStart",
        &["home", "ctrl+a"],
        "line start",
    ),
    (
        Action::LineEnd,
        "tui.editor.cursorLineEnd",
        &["end", "ctrl+e"],
        "line end",
    ),
    (
        Action::DeleteBackward,
        "tui.editor.deleteCharBackward",
        &["backspace"],
        "delete backward",
    ),
    (
        Action::DeleteForward,
        "tui.editor.deleteCharForward",
        &["delete", "ctrl+d"],
        "delete forward",
    ),
    (
        Action::DeleteWordBackward,
        "tui.editor.deleteWordBackward",
        &["ctrl+w", "alt+backspace"],
        "delete word backward",
    ),
    (
        Action::DeleteWordForward,
        "tui.editor.deleteWordForward",
        &["alt+d", "alt+delete"],
        "delete word forward",
    ),
    (
        Action::DeleteToLineStart,
        "tui.editor.deleteToLineStart",
        &["ctrl+u"],
        "delete to line start",
    ),
    (
        Action::DeleteToLineEnd,
        "tui.editor.deleteToLineEnd",
        &["ctrl+k"],
        "delete to line end",
    ),
    (
        Action::Yank,
        "tui.editor.yank",
        &["ctrl+y"],
        "paste the last deleted text",
    ),
    (
        Action::Undo,
        "tui.editor.undo",
        &["ctrl+-"],
        "undo the last edit (a typed word at a time)",
    ),
    (
        Action::JumpForward,
        "tui.editor.jumpForward",
        &["ctrl+]"],
        "jump to the next occurrence of the character typed next",
    ),
    (
        Action::JumpBackward,
        "tui.editor.jumpBackward",
        &["ctrl+alt+]"],
        "jump to the previous occurrence of the character typed next",
    ),
];

/// The effective key bindings: pi's defaults with `keybindings.json` applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keybindings {
    /// For each action of [`ACTIONS`], in its order: its keys, normalized.
    bound: Vec<(Action, Vec<String>)>,
}

impl Default for Keybindings {
    fn default() -> Keybindings {
        Keybindings {
            bound: ACTIONS
                .iter()
                .map(|(action, _, keys, _)| {
                    (*action, keys.iter().filter_map(|k| normalize(k)).collect())
                })
                .collect(),
        }
    }
}

impl Keybindings {
    /// Reads `path` (pi's `keybindings.json`); a missing file is the defaults. Returns the
    /// bindings and warnings for the user: JSON that does not parse (the defaults are kept),
    /// a value that is not a key string or a list of them, a key pi's syntax does not know.
    /// Unknown action ids are skipped quietly (pi has actions pith does not implement).
    pub fn load(path: &Path) -> (Keybindings, Vec<String>) {
        match std::fs::read_to_string(path) {
            Ok(text) => Keybindings::parse(&text, &path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Keybindings::default(), vec![]),
            Err(e) => (
                Keybindings::default(),
                vec![format!(
                    "cannot read {}: {e}; using the default keys",
                    path.display()
                )],
            ),
        }
    }

    /// [`Keybindings::load`] on the file's text; `name` names it in warnings.
    pub fn parse(text: &str, name: &str) -> (Keybindings, Vec<String>) {
        let mut keys = Keybindings::default();
        let mut warnings = Vec::new();
        let object = match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(o)) => o,
            Ok(_) => {
                warnings.push(format!(
                    "{name}: expected an object of action ids to keys; using the default keys"
                ));
                return (keys, warnings);
            }
            Err(e) => {
                warnings.push(format!(
                    "{name}: invalid JSON ({e}); using the default keys"
                ));
                return (keys, warnings);
            }
        };
        for (id, value) in object {
            let Some(at) = ACTIONS.iter().position(|(_, known, _, _)| *known == id) else {
                continue;
            };
            let strings: Vec<&str> = match &value {
                serde_json::Value::String(s) => vec![s.as_str()],
                serde_json::Value::Array(items) if items.iter().all(|i| i.is_string()) => {
                    items.iter().filter_map(|i| i.as_str()).collect()
                }
                _ => {
                    warnings.push(format!(
                        "{name}: \"{id}\" must be a key or a list of keys, not {value}"
                    ));
                    continue;
                }
            };
            let mut normalized = Vec::new();
            for s in strings {
                match normalize(s) {
                    Some(k) => normalized.push(k),
                    None => warnings.push(format!("{name}: \"{id}\": unknown key \"{s}\"")),
                }
            }
            keys.bound[at].1 = normalized;
        }
        (keys, warnings)
    }

    /// The actions bound to `key` (a normalized key string), in [`ACTIONS`] order.
    pub fn actions(&self, key: &str) -> Vec<Action> {
        self.bound
            .iter()
            .filter(|(_, keys)| keys.iter().any(|k| k == key))
            .map(|(a, _)| *a)
            .collect()
    }

    /// The keys of `action`, joined with `/` as pi's `keyText` shows them (`""` unbound).
    pub fn text(&self, action: Action) -> String {
        self.bound
            .iter()
            .find(|(a, _)| *a == action)
            .map(|(_, keys)| keys.join("/"))
            .unwrap_or_default()
    }

    /// `/hotkeys`: each bound action's keys and description, in [`ACTIONS`] order.
    pub fn listing(&self) -> Vec<(String, &'static str)> {
        self.bound
            .iter()
            .zip(ACTIONS)
            .filter(|((_, keys), _)| !keys.is_empty())
            .map(|((_, keys), (_, _, _, what))| (keys.join("/"), *what))
            .collect()
    }
}

/// The key names of pi's key syntax besides letters, digits and symbols.
const NAMED: &[&str] = &[
    "escape",
    "enter",
    "tab",
    "space",
    "backspace",
    "delete",
    "insert",
    "clear",
    "home",
    "end",
    "pageup",
    "pagedown",
    "up",
    "down",
    "left",
    "right",
];

const SYMBOLS: &str = "`-=[]\\;',./!@#$%^&*()_+|~{}:<>?";

/// pi's key string in one spelling: modifiers in the order ctrl, shift, alt, super, then the
/// key in lower case with `esc` → `escape`, `return` → `enter`; `None` when pi's syntax does
/// not know it.
pub fn normalize(spec: &str) -> Option<String> {
    let spec = spec.trim().to_ascii_lowercase();
    // The last part is the key; `ctrl++` binds `+`.
    let (mods, key) = match spec.strip_suffix("++") {
        Some(m) => (m, "+"),
        None => match spec.rsplit_once('+') {
            Some((m, k)) => (m, k),
            None => ("", spec.as_str()),
        },
    };
    let key = match key {
        "esc" => "escape",
        "return" => "enter",
        k => k,
    };
    let known = NAMED.contains(&key)
        || (key.len() == 1 && key.chars().all(|c| c.is_ascii_alphanumeric()))
        || (key.len() == 1 && SYMBOLS.contains(key))
        || key
            .strip_prefix('f')
            .and_then(|n| n.parse::<u8>().ok())
            .is_some_and(|n| (1..=12).contains(&n));
    if !known {
        return None;
    }
    let mut flags = [false; 4];
    for m in mods.split('+').filter(|m| !m.is_empty()) {
        let at = ["ctrl", "shift", "alt", "super"]
            .iter()
            .position(|n| *n == m)?;
        flags[at] = true;
    }
    Some(join(flags, key))
}

fn join(flags: [bool; 4], key: &str) -> String {
    let mut out = String::new();
    for (on, name) in flags.iter().zip(["ctrl", "shift", "alt", "super"]) {
        if *on {
            out.push_str(name);
            out.push('+');
        }
    }
    out.push_str(key);
    out
}

/// The normalized key string of a terminal key event; `None` for keys pi's syntax has no
/// name for (media keys, lone modifiers).
pub fn key_string(event: &KeyEvent) -> Option<String> {
    let m = event.modifiers;
    let mut flags = [
        m.contains(KeyModifiers::CONTROL),
        m.contains(KeyModifiers::SHIFT),
        m.contains(KeyModifiers::ALT),
        m.contains(KeyModifiers::SUPER),
    ];
    let key = match event.code {
        KeyCode::Char(' ') => "space".to_owned(),
        // Ctrl+- (and Ctrl+_) send 0x1f and Ctrl+] sends 0x1d, which crossterm reads as
        // Ctrl+7 and Ctrl+5; pi reads them as Ctrl+- and Ctrl+].
        KeyCode::Char('7') if flags[0] && !flags[1] && !flags[3] => "-".to_owned(),
        KeyCode::Char('5') if flags[0] && !flags[1] && !flags[3] => "]".to_owned(),
        KeyCode::Char(c) if c.is_ascii_uppercase() => {
            flags[1] = true;
            c.to_ascii_lowercase().to_string()
        }
        KeyCode::Char(c) if c.is_ascii_alphanumeric() => c.to_string(),
        KeyCode::Char(c) if SYMBOLS.contains(c) => {
            // A symbol is its own key: the shift that typed it is not part of the name.
            flags[1] = false;
            c.to_string()
        }
        KeyCode::Char(_) => return None,
        KeyCode::Esc => "escape".into(),
        KeyCode::Enter => "enter".into(),
        KeyCode::Tab => "tab".into(),
        KeyCode::BackTab => {
            flags[1] = true;
            "tab".into()
        }
        KeyCode::Backspace => "backspace".into(),
        KeyCode::Delete => "delete".into(),
        KeyCode::Insert => "insert".into(),
        KeyCode::Home => "home".into(),
        KeyCode::End => "end".into(),
        KeyCode::PageUp => "pageup".into(),
        KeyCode::PageDown => "pagedown".into(),
        KeyCode::Up => "up".into(),
        KeyCode::Down => "down".into(),
        KeyCode::Left => "left".into(),
        KeyCode::Right => "right".into(),
        KeyCode::F(n) => format!("f{n}"),
        _ => return None,
    };
    Some(join(flags, &key))
}

#[cfg(test)]
mod tests;
