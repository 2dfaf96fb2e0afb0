//! Key strings, pi's defaults and `keybindings.json`.

use super::*;

#[test]
fn key_strings_are_normalized() {
    assert_eq!(normalize("Ctrl+K").as_deref(), Some("ctrl+k"));
    assert_eq!(normalize("alt+ctrl+x").as_deref(), Some("ctrl+alt+x"));
    assert_eq!(normalize("shift+Return").as_deref(), Some("shift+enter"));
    assert_eq!(normalize("esc").as_deref(), Some("escape"));
    assert_eq!(normalize("pageUp").as_deref(), Some("pageup"));
    assert_eq!(normalize("ctrl++").as_deref(), Some("ctrl++"));
    assert_eq!(normalize("f13"), None);
    assert_eq!(normalize("hyper+x"), None);
    assert_eq!(normalize("ctrl+nope"), None);
}

#[test]
fn events_name_their_keys() {
    let key = |code, mods| key_string(&KeyEvent::new(code, mods));
    assert_eq!(
        key(KeyCode::Char('j'), KeyModifiers::CONTROL).as_deref(),
        Some("ctrl+j")
    );
    assert_eq!(
        key(KeyCode::Enter, KeyModifiers::SHIFT).as_deref(),
        Some("shift+enter")
    );
    assert_eq!(
        key(KeyCode::Enter, KeyModifiers::ALT).as_deref(),
        Some("alt+enter")
    );
    assert_eq!(
        key(KeyCode::BackTab, KeyModifiers::SHIFT).as_deref(),
        Some("shift+tab")
    );
    assert_eq!(
        key(KeyCode::Char('A'), KeyModifiers::SHIFT).as_deref(),
        Some("shift+a")
    );
    assert_eq!(
        key(KeyCode::Char('?'), KeyModifiers::SHIFT).as_deref(),
        Some("?")
    );
}

#[test]
fn defaults_are_pis() {
    let keys = Keybindings::default();
    assert_eq!(
        keys.actions("ctrl+d"),
        [Action::Exit, Action::DeleteForward]
    );
    assert_eq!(keys.actions("ctrl+j"), [Action::NewLine]);
    assert_eq!(keys.actions("shift+enter"), [Action::NewLine]);
    assert_eq!(keys.text(Action::Interrupt), "escape");
    assert!(keys.actions("ctrl+q").is_empty());
}

#[test]
fn the_file_replaces_an_actions_keys() {
    let (keys, warnings) = Keybindings::parse(
        r#"{"$schema": "x", "app.model.select": "ctrl+k",
            "tui.input.newLine": ["ctrl+j", "alt+n"], "app.tools.expand": [],
            "app.unknown.thing": "ctrl+q"}"#,
        "keybindings.json",
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        keys.actions("ctrl+k"),
        [Action::SelectModel, Action::DeleteToLineEnd]
    );
    assert!(keys.actions("ctrl+l").is_empty());
    assert_eq!(keys.actions("alt+n"), [Action::NewLine]);
    assert!(keys.actions("shift+enter").is_empty());
    assert!(keys.actions("ctrl+o").is_empty());
    assert_eq!(keys.text(Action::NewLine), "ctrl+j/alt+n");
}

#[test]
fn bad_files_warn_and_keep_the_defaults() {
    let (keys, warnings) = Keybindings::parse("{not json", "/a/keybindings.json");
    assert_eq!(keys, Keybindings::default());
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].starts_with("/a/keybindings.json: invalid JSON"),
        "{warnings:?}"
    );
    let (keys, warnings) = Keybindings::parse(
        r#"{"app.model.select": 3, "app.clear": ["ctrl+nope", "ctrl+x"]}"#,
        "k.json",
    );
    assert_eq!(
        warnings,
        [
            "k.json: \"app.model.select\" must be a key or a list of keys, not 3",
            "k.json: \"app.clear\": unknown key \"ctrl+nope\""
        ]
    );
    assert_eq!(keys.text(Action::SelectModel), "ctrl+l");
    assert_eq!(keys.text(Action::Clear), "ctrl+x");
}
