//! One read at a time on the editor thread: keys are mapped to pi's actions
//! ([`super::keys`]) and applied to the text, the bottom area is redrawn after each, and
//! the spinner ticks while no key comes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal;
use tokio::sync::mpsc as tokio_mpsc;

use super::buffer::Buffer;
use super::complete::{argument_matches, menu_rows, path_completion, slash_matches};
use super::external::{self, enter, leave};
use super::files;
use super::history::History;
use super::keys::{Action, key_string};
use super::paste::Pastes;
use super::render::{layout, write};
use super::{Input, KeyAction, ReadRequest, Shared, TICK, restored_text};

/// pi's window for Esc Esc.
const DOUBLE_ESCAPE: Duration = Duration::from_millis(500);

/// What the bottom area shows of the read in progress.
#[derive(Debug)]
pub struct View {
    /// The prompt before the first line.
    pub prompt: String,
    /// The text being edited.
    pub buffer: Buffer,
    /// The menu's selected row.
    selected: usize,
    /// Esc closed the menu (until the text changes).
    menu_closed: bool,
    /// The text may be a command (a prompt, not a question's answer): the menu shows.
    commands: bool,
    /// The working folder's files, walked at the first `@` of the read.
    files: Option<Vec<String>>,
}

/// What the menus offer: the commands (name, description) and the values completed after
/// `/command ` (command, values), copied out of the shared state so the view can be edited
/// while they are read.
pub struct Offers {
    /// Completed after `/`.
    pub commands: Vec<(String, String)>,
    /// Completed after `/command `.
    pub arguments: Vec<(String, Vec<String>)>,
}

impl Offers {
    fn of(s: &Shared) -> Offers {
        Offers {
            commands: s.commands.clone(),
            arguments: s.arguments.clone(),
        }
    }
}

/// What the menu's selected row stands for.
enum Choice {
    /// A `/command` (its name).
    Command(String),
    /// `/command argument`, whole.
    Argument(String),
    /// A path for the `@` token at the cursor.
    File(String),
}

impl View {
    fn new(prompt: String, initial: &str, commands: bool) -> View {
        View {
            prompt,
            buffer: Buffer::new(initial),
            selected: 0,
            // An answer to a question (no history) is no command: no menu.
            menu_closed: !commands,
            commands,
            files: None,
        }
    }

    /// The menu's entries (name, description) and the sigil shown before each name.
    fn entries<'a>(
        &'a self,
        commands: &'a [(String, String)],
        arguments: &'a [(String, Vec<String>)],
    ) -> (Vec<std::borrow::Cow<'a, (String, String)>>, &'static str) {
        use std::borrow::Cow;
        if self.menu_closed {
            return (Vec::new(), "");
        }
        let slash = slash_matches(self.buffer.text(), commands);
        if !slash.is_empty() {
            return (slash.into_iter().map(Cow::Borrowed).collect(), "/");
        }
        let args = argument_matches(self.buffer.text(), arguments);
        if !args.is_empty() {
            let entries = args
                .into_iter()
                .map(|a| Cow::Owned((a.clone(), String::new())))
                .collect();
            return (entries, "");
        }
        match (files::at_token(self.buffer.before()), &self.files) {
            (Some(query), Some(all)) => (
                files::matches(query, all)
                    .into_iter()
                    .map(|p| Cow::Owned((p.clone(), String::new())))
                    .collect(),
                "@",
            ),
            _ => (Vec::new(), ""),
        }
    }

    /// The menu's rows: `/command`s, or the files for an `@` (none when closed or nothing
    /// matches).
    pub fn menu_rows(
        &self,
        commands: &[(String, String)],
        arguments: &[(String, Vec<String>)],
        width: usize,
    ) -> Vec<String> {
        let (entries, sigil) = self.entries(commands, arguments);
        let refs: Vec<&(String, String)> = entries.iter().map(|e| e.as_ref()).collect();
        menu_rows(
            &refs,
            self.selected.min(refs.len().saturating_sub(1)),
            width,
            sigil,
        )
    }

    /// The menu's selected entry, when the menu shows.
    fn choice(&self, offers: &Offers) -> Option<Choice> {
        let (entries, sigil) = self.entries(&offers.commands, &offers.arguments);
        let at = self.selected.min(entries.len().checked_sub(1)?);
        let name = entries[at].0.clone();
        Some(match sigil {
            "@" => Choice::File(name),
            "/" => Choice::Command(name),
            _ => {
                let command = self.buffer.text().split(' ').next().unwrap_or("");
                Choice::Argument(format!("{command} {name}"))
            }
        })
    }

    fn menu_len(&self, offers: &Offers) -> usize {
        self.entries(&offers.commands, &offers.arguments).0.len()
    }

    /// The text changed: the menu opens again on its first row (walking the folder at the
    /// first `@`).
    fn edited(&mut self) {
        self.selected = 0;
        self.menu_closed = !self.commands;
        if self.commands && self.files.is_none() && files::at_token(self.buffer.before()).is_some()
        {
            let cwd = std::env::current_dir().unwrap_or_default();
            self.files = Some(files::walk(&cwd));
        }
    }

    /// Puts `path` in place of the `@` token at the cursor: `@path ` (a folder without the
    /// space, so that its files show next).
    fn accept_file(&mut self, path: &str) {
        let typed = files::at_token(self.buffer.before()).map_or(0, str::len);
        self.buffer.remove_before(typed + 1);
        let end = if path.ends_with('/') { "" } else { " " };
        self.buffer.insert(&format!("@{path}{end}"));
        self.edited();
        if !path.ends_with('/') {
            self.menu_closed = true;
        }
    }
}

/// What the thread keeps from read to read.
#[derive(Default)]
struct Reader {
    history: History,
    pastes: Pastes,
    /// The last deleted text, for Ctrl+Y.
    killed: String,
    last_idle_escape: Option<Instant>,
    /// The text before each edit of this read, newest last (pi's undo stack).
    undo: Vec<Buffer>,
    /// The last edit typed a character: the next word character joins its undo step, as
    /// pi coalesces a typed word (a space starts a new step).
    typing: bool,
    /// Ctrl+] (`Some(true)`) or Ctrl+Alt+] (`Some(false)`) waits for the character to jump to.
    jump: Option<bool>,
}

/// What a key did.
enum Outcome {
    /// The read goes on (the area is redrawn).
    Go,
    /// The key is not this action's (the next action bound to it is tried).
    Pass,
    /// The read ends with this input.
    Done(Input),
}

/// The thread: one read per request until the main loop goes away.
pub(crate) fn serve(
    shared: &Arc<Mutex<Shared>>,
    history: PathBuf,
    requests: &mpsc::Receiver<ReadRequest>,
    inputs: &tokio_mpsc::UnboundedSender<Input>,
) {
    let mut reader = Reader {
        history: History::load(history),
        ..Reader::default()
    };
    loop {
        let req = match requests.recv_timeout(TICK) {
            Ok(req) => req,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // A status shown between reads (a branch summary) ticks too.
                if let Some(mut s) = lock(shared) {
                    s.tick();
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        let input = reader.read(shared, &req, inputs);
        if inputs.send(input).is_err() {
            return;
        }
    }
}

fn lock(shared: &Arc<Mutex<Shared>>) -> Option<MutexGuard<'_, Shared>> {
    shared.lock().ok()
}

impl Reader {
    fn read(
        &mut self,
        shared: &Arc<Mutex<Shared>>,
        req: &ReadRequest,
        inputs: &tokio_mpsc::UnboundedSender<Input>,
    ) -> Input {
        if let Err(e) = terminal::enable_raw_mode() {
            return Input::Failed(e.to_string());
        }
        write(enter());
        if let Some(mut s) = lock(shared) {
            let mut out = String::new();
            s.surface.erase(&mut out);
            write(&out);
            // A full-screen view (`/tree`) drew over full-screen mode's screen.
            if s.fullscreen.is_some() {
                s.surface.leave();
            }
            s.view = Some(View::new(req.prompt.clone(), &req.initial, req.history));
            self.undo.clear();
            self.typing = false;
            self.jump = None;
            // A resize seen by a full-screen view (`/tree`) or while no read was in progress
            // has not laid the transcript out yet.
            if crate::interactive::screen::columns() != s.laid_out {
                s.relayout();
            }
            s.redraw();
        }
        let (input, keep) = loop {
            let event = match crate::tui::terminal::poll_event(TICK) {
                Ok(true) => match event::read() {
                    Ok(e) => e,
                    Err(e) => break (Input::Failed(e.to_string()), true),
                },
                Ok(false) => {
                    if let Some(mut s) = lock(shared) {
                        s.tick();
                    }
                    continue;
                }
                // The terminal went away (or cannot be read): the session ends as on Ctrl+D.
                Err(_) => break (Input::Eof, false),
            };
            let outcome = match event {
                Event::Key(key) if key.kind != KeyEventKind::Release => {
                    self.key(shared, &key, req, inputs)
                }
                Event::Paste(text) => {
                    let text = self.pastes.paste(&text);
                    self.edit(shared, |b| b.insert(&text));
                    Outcome::Go
                }
                // A new width: the whole transcript is laid out again for it (pi's full
                // render), the area drawn afresh below it. Same width (a taller or shorter
                // terminal): the terminal reflowed what was drawn; the area is erased from
                // where it now starts and drawn again (below).
                Event::Resize(columns, _) => {
                    if let Some(mut s) = lock(shared) {
                        if crate::interactive::screen::columns() != s.laid_out {
                            s.relayout();
                        } else {
                            s.surface.reflowed(usize::from(columns));
                        }
                    }
                    Outcome::Go
                }
                _ => Outcome::Go,
            };
            match outcome {
                Outcome::Go | Outcome::Pass => {
                    if let Some(mut s) = lock(shared) {
                        s.redraw();
                    }
                }
                Outcome::Done(input) => {
                    // A sent prompt and Ctrl+D stay on the screen; the rest is drawn again
                    // by the next read. A message queued while a reply streams is shown
                    // with the queue instead (and in the transcript once it is sent).
                    let queued = match &input {
                        Input::Line { text, .. } => {
                            req.history
                                && lock(shared).is_some_and(|s| s.busy)
                                && !text.trim_start().starts_with(['/', '!'])
                        }
                        _ => false,
                    };
                    let keep = matches!(input, Input::Line { .. } | Input::Eof) && !queued;
                    break (input, keep);
                }
            }
        };
        if let Some(mut s) = lock(shared) {
            let mut out = String::new();
            if let Some(view) = s.view.take() {
                if keep && s.held.is_none() {
                    let text = view.buffer.text();
                    let (prompt, typed) = (view.prompt.clone(), text.to_owned());
                    s.scrollback.layout(Box::new(move |v| {
                        let width = v.cols.saturating_sub(1).max(10);
                        layout(None, &prompt, &typed, typed.len(), &[], width).rows
                    }));
                    if s.fullscreen.is_some() {
                        // In the scrollback now: the view draws it.
                        s.redraw_into(&mut out);
                    } else {
                        let frame =
                            layout(None, &view.prompt, text, text.len(), &[], Shared::width());
                        s.surface.draw(&frame, None, &mut out);
                        out.push_str("\r\n");
                        s.surface.leave();
                    }
                } else if s.fullscreen.is_some() {
                    s.redraw_into(&mut out);
                } else {
                    s.surface.erase(&mut out);
                }
            }
            out.push_str(leave());
            write(&out);
        }
        let _ = terminal::disable_raw_mode();
        input
    }

    /// Applies `f` to the text (the menu and the history browsing start over).
    fn edit(&mut self, shared: &Arc<Mutex<Shared>>, f: impl FnOnce(&mut Buffer)) {
        self.edit_step(shared, false, f);
    }

    /// A typed character: a word's characters are one undo step.
    fn typed(&mut self, shared: &Arc<Mutex<Shared>>, c: char) {
        let joins = self.typing && !c.is_whitespace();
        self.edit_step(shared, joins, |b| b.insert(c.encode_utf8(&mut [0; 4])));
        self.typing = true;
    }

    /// Applies an edit; the text before it is an undo step unless `joins` (it continues the
    /// last step) or nothing changed.
    fn edit_step(&mut self, shared: &Arc<Mutex<Shared>>, joins: bool, f: impl FnOnce(&mut Buffer)) {
        self.history.reset();
        self.typing = false;
        if let Some(mut s) = lock(shared)
            && let Some(view) = &mut s.view
        {
            let before = view.buffer.clone();
            f(&mut view.buffer);
            if view.buffer.text() != before.text() && !joins {
                self.undo.push(before);
            }
            view.edited();
        }
    }

    /// Ctrl+-: the text as it was before the last undo step.
    fn undo(&mut self, shared: &Arc<Mutex<Shared>>) {
        self.typing = false;
        let Some(before) = self.undo.pop() else {
            return;
        };
        if let Some(mut s) = lock(shared)
            && let Some(view) = &mut s.view
        {
            view.buffer = before;
            view.edited();
        }
    }

    fn text(shared: &Arc<Mutex<Shared>>) -> String {
        lock(shared)
            .and_then(|s| s.view.as_ref().map(|v| v.buffer.text().to_owned()))
            .unwrap_or_default()
    }

    fn key(
        &mut self,
        shared: &Arc<Mutex<Shared>>,
        key: &KeyEvent,
        req: &ReadRequest,
        inputs: &tokio_mpsc::UnboundedSender<Input>,
    ) -> Outcome {
        let actions = match (key_string(key), lock(shared)) {
            (Some(name), Some(s)) => s.keys.actions(&name),
            _ => Vec::new(),
        };
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SUPER);
        if let Some(forward) = self.jump.take() {
            // pi: the jump key again cancels, a character is jumped to, any other key
            // cancels and does what it does.
            if actions.contains(&Action::JumpForward) || actions.contains(&Action::JumpBackward) {
                return Outcome::Go;
            }
            if let KeyCode::Char(c) = key.code
                && plain
            {
                self.moved(shared, |b| b.jump_to(c, forward));
                return Outcome::Go;
            }
        }
        for action in actions {
            match self.act(shared, action, req, inputs) {
                Outcome::Pass => continue,
                done => return done,
            }
        }
        if let KeyCode::Char(c) = key.code
            && plain
        {
            self.typed(shared, c);
        }
        Outcome::Go
    }

    /// The prompt is sent: paste markers expanded, into the history when asked.
    fn submit(
        &mut self,
        shared: &Arc<Mutex<Shared>>,
        req: &ReadRequest,
        follow_up: bool,
    ) -> Outcome {
        let text = self.pastes.expand(&Reader::text(shared));
        if req.history {
            self.history.add(&text);
        }
        self.pastes.clear();
        Outcome::Done(Input::Line { text, follow_up })
    }

    fn act(
        &mut self,
        shared: &Arc<Mutex<Shared>>,
        action: Action,
        req: &ReadRequest,
        inputs: &tokio_mpsc::UnboundedSender<Input>,
    ) -> Outcome {
        let app = |a: KeyAction| {
            Outcome::Done(Input::Action {
                action: a,
                text: Reader::text(shared),
            })
        };
        match action {
            Action::Interrupt => return self.escape(shared, inputs),
            Action::Clear => {
                self.pastes.clear();
                self.history.reset();
                return Outcome::Done(Input::Interrupt);
            }
            Action::Exit => {
                return if lock(shared)
                    .is_some_and(|s| s.view.as_ref().is_none_or(|v| v.buffer.is_empty()))
                {
                    Outcome::Done(Input::Eof)
                } else {
                    Outcome::Pass
                };
            }
            Action::Suspend => external::suspend(shared),
            Action::ExternalEditor => {
                let text = self.pastes.expand(&Reader::text(shared));
                match external::edit(shared, &text) {
                    Ok(edited) => {
                        self.pastes.clear();
                        self.edit(shared, |b| b.set(&edited));
                    }
                    Err(e) => {
                        if let Some(mut s) = lock(shared) {
                            s.print(&super::super::style::warning(&format!("Warning: {e}\n")));
                        }
                    }
                }
            }
            Action::PasteImage => {
                if let Some(text) = super::super::clipboard::paste() {
                    let text = self.pastes.paste(&text);
                    self.edit(shared, |b| b.insert(&text));
                }
            }
            Action::SelectModel => return app(KeyAction::SelectModel),
            Action::CycleModel => return app(KeyAction::CycleModel),
            Action::CycleThinking => return app(KeyAction::CycleThinking),
            Action::ToggleThinking => return app(KeyAction::ToggleThinking),
            Action::ExpandTools => return app(KeyAction::ExpandOutput),
            Action::ScrollPageUp
            | Action::ScrollPageDown
            | Action::ScrollTop
            | Action::ScrollBottom => {
                let Some(mut s) = lock(shared) else {
                    return Outcome::Go;
                };
                if s.fullscreen.is_none() {
                    return Outcome::Pass;
                }
                let page = super::lines().saturating_sub(4).max(1) as isize;
                s.scroll(match action {
                    Action::ScrollPageUp => Some(page),
                    Action::ScrollPageDown => Some(-page),
                    Action::ScrollTop => Some(isize::MAX),
                    _ => None,
                });
            }
            Action::Tree => return app(KeyAction::Tree),
            Action::NewSession => return app(KeyAction::NewSession),
            Action::Fork => return app(KeyAction::Fork),
            Action::Resume => return app(KeyAction::Resume),
            Action::FollowUp => return self.submit(shared, req, true),
            Action::Dequeue => {
                let Some(mut s) = lock(shared) else {
                    return Outcome::Go;
                };
                let restored = std::mem::take(&mut s.queued);
                if restored.is_empty() {
                    return Outcome::Pass;
                }
                if let Some(view) = &mut s.view {
                    let text = restored_text(&restored, view.buffer.text());
                    view.buffer.set(&text);
                    view.edited();
                }
                let _ = inputs.send(Input::Dequeue { restored });
            }
            Action::Submit => {
                if let Some(mut s) = lock(shared) {
                    let offers = Offers::of(&s);
                    if let Some(view) = &mut s.view {
                        match view.choice(&offers) {
                            Some(Choice::Command(name)) => view.buffer.set(&format!("/{name}")),
                            Some(Choice::Argument(text)) => view.buffer.set(&text),
                            // pi's editor: Enter on the file menu takes the file.
                            Some(Choice::File(path)) => {
                                view.accept_file(&path);
                                return Outcome::Go;
                            }
                            None => {}
                        }
                    }
                }
                return self.submit(shared, req, false);
            }
            Action::NewLine => self.edit(shared, |b| b.insert("\n")),
            Action::Tab => self.tab(shared),
            Action::CursorUp | Action::CursorDown => {
                self.up_down(shared, action == Action::CursorUp)
            }
            Action::CursorLeft => self.moved(shared, Buffer::left),
            Action::CursorRight => self.moved(shared, Buffer::right),
            Action::WordLeft => self.moved(shared, Buffer::word_left),
            Action::WordRight => self.moved(shared, Buffer::word_right),
            Action::LineStart => self.moved(shared, Buffer::line_start),
            Action::LineEnd => self.moved(shared, Buffer::line_end),
            Action::DeleteBackward => {
                let pastes = self.pastes.clone();
                self.edit(shared, |b| match pastes.marker_before(b.before()) {
                    Some(len) => {
                        b.remove_before(len);
                    }
                    None => b.backspace(),
                });
            }
            Action::DeleteForward => self.edit(shared, Buffer::delete),
            Action::DeleteWordBackward => self.kill(shared, Buffer::delete_word_backward),
            Action::DeleteWordForward => self.kill(shared, Buffer::delete_word_forward),
            Action::DeleteToLineStart => self.kill(shared, Buffer::delete_to_line_start),
            Action::DeleteToLineEnd => self.kill(shared, Buffer::delete_to_line_end),
            Action::Yank => {
                let killed = self.killed.clone();
                self.edit(shared, |b| b.insert(&killed));
            }
            Action::Undo => self.undo(shared),
            Action::JumpForward => self.jump = Some(true),
            Action::JumpBackward => self.jump = Some(false),
        }
        Outcome::Go
    }

    fn moved(&mut self, shared: &Arc<Mutex<Shared>>, f: impl FnOnce(&mut Buffer)) {
        self.typing = false;
        if let Some(mut s) = lock(shared)
            && let Some(view) = &mut s.view
        {
            f(&mut view.buffer);
        }
    }

    fn kill(&mut self, shared: &Arc<Mutex<Shared>>, f: impl FnOnce(&mut Buffer) -> String) {
        let mut killed = String::new();
        self.edit(shared, |b| killed = f(b));
        if !killed.is_empty() {
            self.killed = killed;
        }
    }

    /// Esc: closes the menu; while busy, interrupts and puts the queue back (pi's
    /// `restoreQueuedMessagesToEditor({abort: true})`: a steer or follow-up typed for the
    /// interrupted reply must not run after the next prompt); on an idle editor, twice
    /// within 500 ms opens `/tree`.
    fn escape(
        &mut self,
        shared: &Arc<Mutex<Shared>>,
        inputs: &tokio_mpsc::UnboundedSender<Input>,
    ) -> Outcome {
        let Some(mut s) = lock(shared) else {
            return Outcome::Go;
        };
        let offers = Offers::of(&s);
        if let Some(view) = &mut s.view
            && view.menu_len(&offers) > 0
        {
            view.menu_closed = true;
            return Outcome::Go;
        }
        if !s.busy {
            let now = Instant::now();
            if self
                .last_idle_escape
                .is_some_and(|t| now.duration_since(t) < DOUBLE_ESCAPE)
            {
                self.last_idle_escape = None;
                drop(s);
                return Outcome::Done(Input::Action {
                    action: KeyAction::Tree,
                    text: Reader::text(shared),
                });
            }
            self.last_idle_escape = Some(now);
            return Outcome::Go;
        }
        let restored = std::mem::take(&mut s.queued);
        if !restored.is_empty()
            && let Some(view) = &mut s.view
        {
            let text = restored_text(&restored, view.buffer.text());
            view.buffer.set(&text);
            view.edited();
        }
        let _ = inputs.send(Input::Escape { restored });
        Outcome::Go
    }

    /// Tab: accepts the menu's command (`/name `), else completes a path.
    fn tab(&mut self, shared: &Arc<Mutex<Shared>>) {
        let Some(mut s) = lock(shared) else { return };
        let offers = Offers::of(&s);
        let Some(view) = &mut s.view else { return };
        match view.choice(&offers) {
            Some(Choice::Command(name)) => {
                view.buffer.set(&format!("/{name} "));
                view.edited();
                view.menu_closed = true;
                return;
            }
            Some(Choice::File(path)) => return view.accept_file(&path),
            Some(Choice::Argument(text)) => {
                view.buffer.set(&text);
                view.edited();
                view.menu_closed = true;
                return;
            }
            None => {}
        }
        let cwd = std::env::current_dir().unwrap_or_default();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        if let Some(insert) = path_completion(view.buffer.before(), &cwd, home.as_deref()) {
            view.buffer.insert(&insert);
        }
    }

    /// Up/Down: the menu's selection, else the cursor's line, else the history.
    fn up_down(&mut self, shared: &Arc<Mutex<Shared>>, up: bool) {
        let Some(mut s) = lock(shared) else { return };
        let offers = Offers::of(&s);
        let Some(view) = &mut s.view else { return };
        let len = view.menu_len(&offers);
        if len > 0 {
            view.selected = if up {
                (view.selected + len - 1) % len
            } else {
                (view.selected + 1) % len
            };
            return;
        }
        let moved = if up {
            view.buffer.up()
        } else {
            view.buffer.down()
        };
        if moved {
            return;
        }
        let entry = if up {
            self.history.older(view.buffer.text())
        } else {
            self.history.newer()
        };
        if let Some(text) = entry {
            view.buffer.set(&text);
            view.menu_closed = true;
        }
    }
}

#[cfg(test)]
mod tests;
