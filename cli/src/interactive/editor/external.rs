//! Giving the terminal away and taking it back: Ctrl+G edits the text in `$VISUAL` or
//! `$EDITOR` (pi's `app.editor.external`: a temporary file, the editor run with the
//! terminal, the file's text back in the editor when it exits with status 0), and Ctrl+Z
//! stops pith (`fg` continues it, and the bottom area is drawn again).

use std::sync::{Arc, Mutex};

use ratatui::crossterm::terminal;

use super::Shared;
use super::render::write;

/// What a read turns on: bracketed paste and the kitty keyboard protocol's disambiguation
/// (so Shift+Enter differs from Enter where the terminal supports it; others ignore the
/// sequence), and inside tmux also xterm's `modifyOtherKeys` mode 1: tmux 3.3 knows no kitty
/// protocol and without it typed `send-keys S-Enter` as the text "S-Enter"; with it tmux sends
/// `CSI 13;2u` (pi-tui falls back to it the same way). Only inside tmux, because a terminal such
/// as xterm answers it with `CSI 27;…~` sequences, which the key reader does not parse.
pub fn enter() -> &'static str {
    if std::env::var_os("TMUX").is_some() {
        "\x1b[?2004h\x1b[>1u\x1b[>4;1m"
    } else {
        "\x1b[?2004h\x1b[>1u"
    }
}
/// What undoes [`enter`].
pub fn leave() -> &'static str {
    if std::env::var_os("TMUX").is_some() {
        "\x1b[>4;0m\x1b[<u\x1b[?2004l"
    } else {
        "\x1b[<u\x1b[?2004l"
    }
}

/// Takes the terminal back from the editor: the area erased, output held, cooked mode.
fn pause(shared: &Arc<Mutex<Shared>>) {
    if let Ok(mut s) = shared.lock() {
        let mut out = String::new();
        s.surface.erase(&mut out);
        out.push_str(leave());
        write(&out);
        s.yield_screen();
        s.held = Some(Vec::new());
        let _ = terminal::disable_raw_mode();
        // The external editor or the shell gets the terminal as pith found it.
        super::Modes::apply(s.modes.cooked.as_ref());
    }
}

/// Gives the terminal back to the editor: raw mode, held output printed, area drawn.
fn resume(shared: &Arc<Mutex<Shared>>) {
    if let Ok(mut s) = shared.lock() {
        // Raw mode gives back what it found: the settings between reads.
        super::Modes::apply(s.modes.between.as_ref());
        let _ = terminal::enable_raw_mode();
        let held = s.held.take().unwrap_or_default();
        let mut out = String::from(enter());
        // Full-screen mode shows held output from the scrollback instead.
        if s.fullscreen.is_none() {
            for text in held {
                out.push_str(&text);
            }
        }
        write(&out);
        s.reclaim();
        s.redraw();
    }
}

/// The command that edits a file: `$VISUAL`, else `$EDITOR`, else `nano` (pi's order
/// after its `externalEditor` setting), split at spaces as pi splits it.
fn editor_command() -> Vec<String> {
    let command = ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "nano".to_owned());
    command.split_whitespace().map(str::to_owned).collect()
}

/// Ctrl+G: `text` edited in the external editor; `Err` with what to tell the user when it
/// could not run or failed (the text is then kept as it was).
pub fn edit(shared: &Arc<Mutex<Shared>>, text: &str) -> Result<String, String> {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let path = std::env::temp_dir().join(format!("pith-editor-{millis}.pith.md"));
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let command = editor_command();
    let Some((program, args)) = command.split_first() else {
        return Err("no editor command".to_owned());
    };
    pause(shared);
    let status = std::process::Command::new(program)
        .args(args)
        .arg(&path)
        .status();
    resume(shared);
    let edited = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    match status {
        Ok(s) if s.success() => {
            let edited = edited.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let edited = super::paste::clean(&edited);
            Ok(edited.strip_suffix('\n').unwrap_or(&edited).to_owned())
        }
        Ok(s) => Err(format!("{program} exited with {s}")),
        Err(e) => Err(format!("cannot run {program}: {e}")),
    }
}

/// Ctrl+Z: stops pith as a shell's job; returns when it is continued, with the area drawn
/// again.
pub fn suspend(shared: &Arc<Mutex<Shared>>) {
    pause(shared);
    use rustix::process::{Signal, getpid, kill_process};
    let _ = kill_process(getpid(), Signal::TSTP);
    resume(shared);
}

/// pith was continued (SIGCONT), after its own Ctrl+Z or a stop from outside (`kill
/// -TSTP`, job control) while a read was in progress: the shell may have changed the
/// terminal's modes and printed below the area, so raw mode and the editor's modes are
/// taken again and the area is drawn again (erased first from where it was, so a second
/// redraw after [`suspend`]'s own is harmless).
pub fn continued(shared: &Arc<Mutex<Shared>>) {
    let Ok(mut s) = shared.lock() else { return };
    if s.held.is_some() || s.view.is_none() {
        return;
    }
    // The shell may have left its own settings: raw mode over pith's between-reads ones.
    let _ = terminal::disable_raw_mode();
    super::Modes::apply(s.modes.between.as_ref());
    let _ = terminal::enable_raw_mode();
    write(enter());
    s.reclaim();
    s.redraw();
}
