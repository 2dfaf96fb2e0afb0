//! The line editor: rustyline on a thread of its own, reading one line per request.
//!
//! The main loop asks for a line ([`Editor::read`]) whenever it can take one: at once while a
//! run streams (so Enter steers and Alt-Enter queues a follow-up, as pi's editor does), but
//! not while a full-screen view owns the terminal. Keys that must act without ending the line
//! (Esc while busy) are sent from rustyline's key handlers directly. History is kept in
//! `<agent dir>/history`; Tab completes slash commands.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::Validator;
use rustyline::{
    Cmd, ConditionalEventHandler, Config, Event, EventContext, EventHandler, KeyCode, KeyEvent,
    Modifiers, Movement, RepeatCount,
};
use tokio::sync::mpsc as tokio_mpsc;

use super::screen::Printer;

/// What the user did at the editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A line: Enter (`follow_up: false`) or Alt-Enter (`follow_up: true`).
    Line {
        /// The text as typed (not trimmed).
        text: String,
        /// Alt-Enter: queue as a follow-up while a run streams.
        follow_up: bool,
    },
    /// Ctrl-C: the line was cleared (pi's `app.clear`).
    Interrupt,
    /// Esc while something runs (pi's `app.interrupt`); the line stays being edited, with
    /// the queued steering and follow-up messages put before it (pi's
    /// `restoreQueuedMessagesToEditor`): `restored` is what the editor took, in queue order.
    Escape {
        /// The queued messages now in the editor.
        restored: Vec<String>,
    },
    /// One of pi's app keys (Ctrl-L, Ctrl-P, Shift-Tab, Ctrl-T, Ctrl-O, Esc Esc): the line
    /// ended without being sent; `text` is what the editor held, to be put back.
    Action {
        /// The key's action.
        action: KeyAction,
        /// The editor's text.
        text: String,
    },
    /// Ctrl-D on an empty line (pi's `app.exit`), or the terminal went away.
    Eof,
    /// The editor failed; the text says why.
    Failed(String),
}

/// What pi's app keys ask for (pi's `app.*` keybindings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAction {
    /// Ctrl-L: the model selector (`app.model.select`).
    SelectModel,
    /// Ctrl-P: the next model (`app.model.cycleForward`).
    CycleModel,
    /// Shift-Tab: the next thinking level (`app.thinking.cycle`).
    CycleThinking,
    /// Ctrl-T: hide or show thinking blocks (`app.thinking.toggle`).
    ToggleThinking,
    /// Ctrl-O: expand tool output (`app.tools.expand`).
    ExpandOutput,
    /// Esc Esc on an idle editor: `/tree` (`app.tree`, pi's `doubleEscapeAction`).
    Tree,
}

/// One line to read.
#[derive(Debug, Clone)]
pub struct ReadRequest {
    /// The prompt, unstyled.
    pub prompt: String,
    /// Text put in the editor first (pi's `editor.setText`).
    pub initial: String,
    /// Whether the answer goes into the history (answers to questions do not).
    pub history: bool,
}

/// The main loop's side of the editor thread.
pub struct Editor {
    requests: mpsc::Sender<ReadRequest>,
    /// Tells the Esc handler whether a run or command is busy.
    busy: Arc<AtomicBool>,
    /// Names and descriptions completed after `/`.
    commands: Arc<Mutex<Vec<(String, String)>>>,
    /// The queued steering and follow-up messages, as the last `queue_update` listed them.
    queued: Arc<Mutex<Vec<String>>>,
    /// A read was requested and its answer has not arrived yet.
    reading: bool,
}

impl Editor {
    /// Starts the editor thread; returns it, the inputs it sends, and the printer for output
    /// above the prompt (`None` when stdout is not a terminal). `history` is the history
    /// file (created with its directory on the first line).
    ///
    /// Errors: the terminal cannot be set up for editing.
    pub fn start(
        history: PathBuf,
        commands: Vec<(String, String)>,
    ) -> anyhow::Result<(
        Editor,
        tokio_mpsc::UnboundedReceiver<Input>,
        Option<Printer>,
    )> {
        let (req_tx, req_rx) = mpsc::channel::<ReadRequest>();
        let (in_tx, in_rx) = tokio_mpsc::unbounded_channel();
        let (printer_tx, printer_rx) = mpsc::channel::<Result<Option<Printer>, String>>();
        let busy = Arc::new(AtomicBool::new(false));
        let commands = Arc::new(Mutex::new(commands));
        let queued = Arc::new(Mutex::new(Vec::new()));
        let keys = Keys {
            busy: busy.clone(),
            commands: commands.clone(),
            queued: queued.clone(),
        };
        std::thread::Builder::new()
            .name("line-editor".into())
            .spawn(move || {
                let rl = match setup(&history, keys, in_tx.clone()) {
                    Ok(mut rl) => {
                        let printer =
                            rl.0.create_external_printer()
                                .ok()
                                .map(|p| Box::new(p) as Printer);
                        let _ = printer_tx.send(Ok(printer));
                        rl
                    }
                    Err(e) => {
                        let _ = printer_tx.send(Err(e.to_string()));
                        return;
                    }
                };
                serve(rl, &history, &req_rx, &in_tx);
            })?;
        let printer = printer_rx
            .recv()
            .map_err(|_| anyhow::anyhow!("the line editor did not start"))?
            .map_err(|e| anyhow::anyhow!("cannot start the line editor: {e}"))?;
        Ok((
            Editor {
                requests: req_tx,
                busy,
                commands,
                queued,
                reading: false,
            },
            in_rx,
            printer,
        ))
    }

    /// Asks for the next line (nothing happens while one is already being read).
    pub fn read(&mut self, request: ReadRequest) {
        if !self.reading && self.requests.send(request).is_ok() {
            self.reading = true;
        }
    }

    /// The line asked for has arrived (any [`Input`] but [`Input::Escape`]).
    pub fn answered(&mut self) {
        self.reading = false;
    }

    /// Whether a line is being read (the editor owns the terminal).
    pub fn is_reading(&self) -> bool {
        self.reading
    }

    /// Tells the key handlers whether a run or command is busy.
    pub fn set_busy(&self, busy: bool) {
        self.busy.store(busy, Ordering::SeqCst);
    }

    /// Tells the Esc handler what is queued (steering first, then follow-ups, as pi lists
    /// them), from each `queue_update`.
    pub fn set_queued(&self, queued: Vec<String>) {
        if let Ok(mut q) = self.queued.lock() {
            *q = queued;
        }
    }

    /// Replaces the completed slash commands (extension commands change with the session).
    pub fn set_commands(&self, commands: Vec<(String, String)>) {
        if let Ok(mut c) = self.commands.lock() {
            *c = commands;
        }
    }
}

type Rl = rustyline::Editor<Helper, FileHistory>;

/// What the key handlers share with the main loop.
struct Keys {
    busy: Arc<AtomicBool>,
    commands: Arc<Mutex<Vec<(String, String)>>>,
    queued: Arc<Mutex<Vec<String>>>,
}

/// The editor with the flags its key handlers set: Alt-Enter's follow-up, an app key's action.
type Bound = (Rl, Arc<AtomicBool>, Arc<Mutex<Option<KeyAction>>>);

fn setup(
    history: &PathBuf,
    keys: Keys,
    inputs: tokio_mpsc::UnboundedSender<Input>,
) -> rustyline::Result<Bound> {
    let Keys {
        busy,
        commands,
        queued,
    } = keys;
    let config = Config::builder()
        .max_history_size(1000)?
        .auto_add_history(false)
        .completion_type(rustyline::CompletionType::List)
        // A lone Esc is pi's interrupt key: without a timeout rustyline would wait for the
        // rest of an escape sequence until the next key.
        .keyseq_timeout(Some(30))
        .build();
    let mut rl: Rl = rustyline::Editor::with_config(config)?;
    rl.set_helper(Some(Helper { commands }));
    // A missing history file is the first run, not a problem.
    let _ = rl.load_history(history);
    let follow_up = Arc::new(AtomicBool::new(false));
    let action = Arc::new(Mutex::new(None));
    for (key, which) in [
        (KeyEvent::ctrl('L'), KeyAction::SelectModel),
        (KeyEvent::ctrl('P'), KeyAction::CycleModel),
        (
            KeyEvent(KeyCode::BackTab, Modifiers::NONE),
            KeyAction::CycleThinking,
        ),
        (KeyEvent::ctrl('T'), KeyAction::ToggleThinking),
        (KeyEvent::ctrl('O'), KeyAction::ExpandOutput),
    ] {
        rl.bind_sequence(
            key,
            EventHandler::Conditional(Box::new(ActionKey {
                slot: action.clone(),
                action: which,
            })),
        );
    }
    // Ctrl-V pastes the clipboard's image as a file path, or its text (pi's
    // `app.clipboard.pasteImage`).
    rl.bind_sequence(
        KeyEvent::ctrl('V'),
        EventHandler::Conditional(Box::new(PasteKey)),
    );
    // Ctrl-J adds a line (pi's `tui.input.newLine`); Enter sends.
    rl.bind_sequence(KeyEvent::ctrl('J'), EventHandler::Simple(Cmd::Newline));
    rl.bind_sequence(
        KeyEvent(KeyCode::Enter, Modifiers::ALT),
        EventHandler::Conditional(Box::new(FollowUpKey {
            flag: follow_up.clone(),
        })),
    );
    rl.bind_sequence(
        KeyEvent(KeyCode::Esc, Modifiers::NONE),
        EventHandler::Conditional(Box::new(EscapeKey {
            busy,
            queued,
            inputs,
            slot: action.clone(),
            last_idle_escape: Mutex::new(None),
        })),
    );
    Ok((rl, follow_up, action))
}

/// Reads one line per request until the main loop goes away.
fn serve(
    (mut rl, follow_up, action): Bound,
    history: &PathBuf,
    requests: &mpsc::Receiver<ReadRequest>,
    inputs: &tokio_mpsc::UnboundedSender<Input>,
) {
    while let Ok(req) = requests.recv() {
        let input = match rl.readline_with_initial(&req.prompt, (&req.initial, "")) {
            Ok(text) if let Some(action) = action.lock().ok().and_then(|mut a| a.take()) => {
                Input::Action { action, text }
            }
            Ok(text) => {
                let follow_up = follow_up.swap(false, Ordering::SeqCst);
                if req.history && !text.trim().is_empty() {
                    let _ = rl.add_history_entry(text.as_str());
                    if let Some(dir) = history.parent() {
                        let _ = std::fs::create_dir_all(dir);
                    }
                    // Appending keeps lines other pith windows added meanwhile.
                    let _ = rl.append_history(history);
                }
                Input::Line { text, follow_up }
            }
            Err(ReadlineError::Interrupted) => Input::Interrupt,
            Err(ReadlineError::Eof) => Input::Eof,
            Err(e) => Input::Failed(e.to_string()),
        };
        if inputs.send(input).is_err() {
            return;
        }
    }
}

/// Ctrl-V: what [`super::clipboard::paste`] finds goes in at the cursor.
struct PasteKey;

impl ConditionalEventHandler for PasteKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        Some(match super::clipboard::paste() {
            Some(text) => Cmd::Insert(1, text),
            None => Cmd::Noop,
        })
    }
}

/// Alt-Enter: accept the line as a follow-up (pi's `app.message.followUp`).
struct FollowUpKey {
    flag: Arc<AtomicBool>,
}

impl ConditionalEventHandler for FollowUpKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        self.flag.store(true, Ordering::SeqCst);
        Some(Cmd::AcceptLine)
    }
}

/// An app key: ends the read so the main loop can act (a view needs the terminal); the
/// text comes back to the editor.
struct ActionKey {
    slot: Arc<Mutex<Option<KeyAction>>>,
    action: KeyAction,
}

impl ConditionalEventHandler for ActionKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        if let Ok(mut slot) = self.slot.lock() {
            *slot = Some(self.action);
        }
        Some(Cmd::AcceptLine)
    }
}

/// pi's window for Esc Esc.
const DOUBLE_ESCAPE: std::time::Duration = std::time::Duration::from_millis(500);

/// Esc: while busy, interrupt (pi's `app.interrupt`) and keep the line, with the queued
/// messages put back before it (pi's `restoreQueuedMessagesToEditor({abort: true})`: a
/// steer or follow-up typed for the interrupted reply must not run after the next prompt);
/// else rustyline's own.
struct EscapeKey {
    busy: Arc<AtomicBool>,
    queued: Arc<Mutex<Vec<String>>>,
    inputs: tokio_mpsc::UnboundedSender<Input>,
    /// Esc Esc while idle opens `/tree`.
    slot: Arc<Mutex<Option<KeyAction>>>,
    last_idle_escape: Mutex<Option<std::time::Instant>>,
}

impl ConditionalEventHandler for EscapeKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if !self.busy.load(Ordering::SeqCst) {
            let now = std::time::Instant::now();
            let mut last = self.last_idle_escape.lock().ok()?;
            if last.is_some_and(|t| now.duration_since(t) < DOUBLE_ESCAPE) {
                *last = None;
                if let Ok(mut slot) = self.slot.lock() {
                    *slot = Some(KeyAction::Tree);
                }
                return Some(Cmd::AcceptLine);
            }
            *last = Some(now);
            return Some(Cmd::Noop);
        }
        let restored = self
            .queued
            .lock()
            .map(|mut q| std::mem::take(&mut *q))
            .unwrap_or_default();
        let cmd = if restored.is_empty() {
            Cmd::Noop
        } else {
            Cmd::Replace(
                Movement::WholeBuffer,
                Some(restored_text(&restored, ctx.line())),
            )
        };
        let _ = self.inputs.send(Input::Escape { restored });
        Some(cmd)
    }
}

/// pi's editor text after Esc: the queued messages, then what was being typed, separated by
/// blank lines (blank parts left out).
pub fn restored_text(queued: &[String], current: &str) -> String {
    queued
        .iter()
        .map(String::as_str)
        .chain(std::iter::once(current))
        .filter(|t| !t.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Completes `/command` names (pi's slash-command autocomplete).
struct Helper {
    commands: Arc<Mutex<Vec<(String, String)>>>,
}

impl Completer for Helper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let typed = &line[..pos];
        let Some(prefix) = typed.strip_prefix('/') else {
            return Ok((0, Vec::new()));
        };
        if prefix.contains(char::is_whitespace) {
            return Ok((0, Vec::new()));
        }
        let commands = self.commands.lock().map(|c| c.clone()).unwrap_or_default();
        let candidates = commands
            .iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .map(|(name, description)| Pair {
                display: format!("/{name:<10} {description}"),
                replacement: format!("/{name} "),
            })
            .collect();
        Ok((0, candidates))
    }
}

impl Hinter for Helper {
    type Hint = String;
}

impl Highlighter for Helper {}

impl Validator for Helper {}

impl rustyline::Helper for Helper {}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(line: &str) -> Vec<String> {
        let helper = Helper {
            commands: Arc::new(Mutex::new(vec![
                ("new".into(), "Start a new session".into()),
                ("name".into(), "Set session display name".into()),
                ("tree".into(), "Navigate session tree".into()),
            ])),
        };
        let history = rustyline::history::DefaultHistory::new();
        let ctx = rustyline::Context::new(&history);
        let (start, pairs) = helper.complete(line, line.len(), &ctx).unwrap_or_default();
        assert_eq!(start, 0);
        pairs.into_iter().map(|p| p.replacement).collect()
    }

    #[test]
    fn slash_commands_complete_by_prefix() {
        assert_eq!(complete("/n"), ["/new ", "/name "]);
        assert_eq!(complete("/t"), ["/tree "]);
        assert!(complete("/name x").is_empty());
        assert!(complete("hello").is_empty());
    }
}
