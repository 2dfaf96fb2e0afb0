//! pith's editor: its own line editor on crossterm, on a thread of its own, drawing a bottom
//! area (a status line, the editor's rows, the `/command` menu) that is redrawn in place
//! while the transcript is printed above it.
//!
//! The main loop asks for a prompt ([`Editor::read`]) whenever it can take one: at once while
//! a run streams (so Enter steers and Alt+Enter queues a follow-up, as pi's editor does),
//! but not while a full-screen view owns the terminal. Keys that must act without ending the
//! read (Esc while busy, Alt+Up) are sent at once. The main loop sets the status line
//! ([`Editor::set_status`]: the working indicator, the retry countdown, a compaction).
//!
//! - [`buffer`]: the text and cursor; [`paste`]: large pastes as markers;
//! - [`keys`]: pi's action ids, default keys and `keybindings.json`;
//! - [`history`]: `<agent dir>/history`; [`complete`]: the `/command` menu and paths;
//!   [`files`]: the `@` menu of the project's files;
//! - [`render`]: the layout and in-place drawing; [`read`]: one read's key handling;
//! - [`external`]: Ctrl+G (`$VISUAL`/`$EDITOR`) and Ctrl+Z.

pub mod buffer;
pub mod complete;
pub mod external;
pub mod files;
pub mod history;
pub mod keys;
pub mod paste;
pub mod read;
pub mod render;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use tokio::sync::mpsc as tokio_mpsc;

use self::keys::Keybindings;
use self::render::Surface;
use super::scrollback::Scrollback;

/// What the user did at the editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A prompt: Enter (`follow_up: false`) or Alt+Enter (`follow_up: true`), paste markers
    /// expanded.
    Line {
        /// The text as typed (not trimmed).
        text: String,
        /// Alt+Enter: queue as a follow-up while a run streams.
        follow_up: bool,
    },
    /// Ctrl+C: the editor was cleared (pi's `app.clear`).
    Interrupt,
    /// Esc while something runs (pi's `app.interrupt`); the text stays being edited, with
    /// the queued steering and follow-up messages put before it (pi's
    /// `restoreQueuedMessagesToEditor`): `restored` is what the editor took, in queue order.
    Escape {
        /// The queued messages now in the editor.
        restored: Vec<String>,
    },
    /// Alt+Up (pi's `app.message.dequeue`): the queued messages were put into the editor;
    /// nothing is interrupted.
    Dequeue {
        /// The queued messages now in the editor.
        restored: Vec<String>,
    },
    /// One of pi's app keys: the read ended without sending; `text` is what the editor
    /// held, to be put back.
    Action {
        /// The key's action.
        action: KeyAction,
        /// The editor's text.
        text: String,
    },
    /// Ctrl+D on an empty editor (pi's `app.exit`), or the terminal went away.
    Eof,
    /// The editor failed; the text says why.
    Failed(String),
}

/// What pi's app keys ask for (pi's `app.*` keybindings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAction {
    /// Ctrl+L: the model selector (`app.model.select`).
    SelectModel,
    /// Ctrl+P: the next model (`app.model.cycleForward`).
    CycleModel,
    /// Shift+Tab: the next thinking level (`app.thinking.cycle`).
    CycleThinking,
    /// Ctrl+T: hide or show thinking blocks (`app.thinking.toggle`).
    ToggleThinking,
    /// Ctrl+O: expand tool output (`app.tools.expand`).
    ExpandOutput,
    /// Esc Esc on an idle editor (pi's `doubleEscapeAction`), or `app.session.tree`.
    Tree,
    /// `app.session.new`.
    NewSession,
    /// `app.session.fork`.
    Fork,
    /// `app.session.resume`.
    Resume,
}

/// One prompt to read.
#[derive(Debug, Clone)]
pub struct ReadRequest {
    /// The prompt, unstyled.
    pub prompt: String,
    /// Text put in the editor first (pi's `editor.setText`).
    pub initial: String,
    /// Whether the answer goes into the history (answers to questions do not).
    pub history: bool,
}

/// The status line above the editor (pi's status indicators); drawn while the editor reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// A run is going on (pi's `WorkingStatusIndicator`), with the time since `since`.
    Working {
        /// When the prompt was sent.
        since: Instant,
    },
    /// An auto-retry waits (pi's `RetryStatusIndicator`), counting down to `at`.
    Retry {
        /// This attempt's number, from 1.
        attempt: u32,
        /// The most attempts there will be.
        max_attempts: u32,
        /// When the retry starts.
        at: Instant,
    },
    /// A compaction runs (pi's `CompactionStatusIndicator`); `reason` is the event's
    /// (`manual`, `threshold`, `overflow`).
    Compacting {
        /// Why it runs.
        reason: String,
    },
    /// A `/tree` branch summary is written (pi's `BranchSummaryStatusIndicator`). The one
    /// status drawn while no read is in progress: the editor is closed then, and no
    /// full-screen view is open.
    BranchSummary,
}

/// pi's spinner (pi-tui's `Loader`): a frame every 80 ms.
const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const FRAME_MS: u128 = 80;

impl Status {
    /// The status line's text at `now` (unstyled): pi's messages, the working one with the
    /// seconds since the prompt (pith's addition), `interrupt` the key that cancels.
    pub fn message(&self, now: Instant, interrupt: &str) -> String {
        match self {
            Status::Working { since } => format!(
                "Working... {}s ({interrupt} to interrupt)",
                now.saturating_duration_since(*since).as_secs()
            ),
            Status::Retry {
                attempt,
                max_attempts,
                at,
            } => {
                let ms = at.saturating_duration_since(now).as_millis();
                format!(
                    "Retrying ({attempt}/{max_attempts}) in {}s... ({interrupt} to cancel)",
                    ms.div_ceil(1000)
                )
            }
            Status::Compacting { reason } => {
                let what = match reason.as_str() {
                    "manual" => "Compacting context...",
                    "overflow" => "Context overflow detected, Auto-compacting...",
                    _ => "Auto-compacting...",
                };
                format!("{what} ({interrupt} to cancel)")
            }
            Status::BranchSummary => format!("Summarizing branch... ({interrupt} to cancel)"),
        }
    }

    /// The styled row: spinner and message, cut to `cols` columns.
    fn row(&self, now: Instant, epoch: Instant, interrupt: &str, cols: usize) -> String {
        let frame = (now.saturating_duration_since(epoch).as_millis() / FRAME_MS) as usize;
        let spinner = FRAMES[frame % FRAMES.len()];
        let text =
            super::screen::truncate(&format!("{spinner} {}", self.message(now, interrupt)), cols);
        let (spin, rest) = text.split_at(spinner.len().min(text.len()));
        let spin = match self {
            Status::Retry { .. } => super::style::warning(spin),
            Status::Working { .. } | Status::Compacting { .. } | Status::BranchSummary => {
                super::style::accent(spin)
            }
        };
        format!("{spin}{}", super::style::muted(rest))
    }
}

/// What the editor thread and the main loop share, behind one lock: whoever holds it may
/// draw, so output above the editor and the editor's own redraws never interleave.
pub(crate) struct Shared {
    pub(crate) surface: Surface,
    /// The read in progress (`None` between reads): what the area shows.
    pub(crate) view: Option<read::View>,
    pub(crate) status: Option<Status>,
    /// Output held while an external editor or a suspend has the terminal.
    pub(crate) held: Option<Vec<String>>,
    /// Tells the Esc key whether a run or command is busy.
    pub(crate) busy: bool,
    /// The queued steering and follow-up messages, as the last `queue_update` listed them.
    pub(crate) queued: Vec<String>,
    /// Names and descriptions completed after `/`.
    pub(crate) commands: Vec<(String, String)>,
    /// Values completed after `/command ` (model ids after `/model`, levels after
    /// `/thinking`).
    pub(crate) arguments: Vec<(String, Vec<String>)>,
    pub(crate) keys: Arc<Keybindings>,
    /// The spinner's time zero.
    pub(crate) epoch: Instant,
    /// The terminal's settings pith switches between.
    pub(crate) modes: Modes,
    /// The streaming reply's unfinished line, shown above the status until it ends.
    pub(crate) live: String,
    /// The rows of a table the reply is still sending, drawn above the live line.
    pub(crate) live_table: Vec<String>,
    /// The queued steering and follow-up messages, by kind, shown below the live line
    /// (pi's pending messages) until they are sent or taken back.
    pub(crate) pending: Vec<(QueueKind, String)>,
    /// What was printed above the area, to lay it out again.
    pub(crate) scrollback: Scrollback,
    /// The width the transcript on screen was laid out for, in columns.
    pub(crate) laid_out: usize,
    /// Full-screen mode (pi's `tuiMode: "fullscreen"`): the transcript is drawn in the
    /// alternate screen above the area, which stays at the bottom.
    pub(crate) fullscreen: Option<Fullscreen>,
}

/// Where full-screen mode's view of the transcript is.
#[derive(Debug, Default)]
pub(crate) struct Fullscreen {
    /// Rows scrolled up from the end (0: the latest rows, following new output).
    pub(crate) scroll: usize,
    /// The transcript's rows at the last draw: output that arrives while scrolled up keeps
    /// the view where it is.
    seen: usize,
    /// The terminal shows the alternate screen (an external editor and a suspend are given
    /// the normal one).
    in_alt: bool,
}

/// Switches to the alternate screen (xterm's 1049: the cursor saved, the screen cleared).
const ALT_SCREEN: &str = "\x1b[?1049h";
/// Back to the normal screen, as it was.
const MAIN_SCREEN: &str = "\x1b[?1049l";

/// Which queue a pending message waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    /// Steering: sent after the current tool calls.
    Steering,
    /// Follow-up: sent when the agent would stop.
    FollowUp,
}

impl Shared {
    /// The terminal's width for the area: one column is left free so the cursor never
    /// sits in the pending-wrap state of a full row.
    pub(crate) fn width() -> usize {
        super::screen::columns().saturating_sub(1).max(10)
    }

    fn status_row(&self, now: Instant) -> Option<String> {
        let interrupt = self.keys.text(keys::Action::Interrupt);
        self.status
            .as_ref()
            .map(|s| s.row(now, self.epoch, &interrupt, Shared::width()))
    }

    /// Redraws the whole area (when a read is in progress).
    pub(crate) fn redraw(&mut self) {
        let mut out = String::new();
        self.redraw_into(&mut out);
        render::write(&out);
    }

    /// Appends to `out` what draws the whole area again: the streaming line and the queued
    /// messages, the status row, the editor's rows and the menu (only the status row between
    /// reads, for a branch summary); nothing while an external editor or a suspend holds the
    /// terminal.
    pub(crate) fn redraw_into(&mut self, out: &mut String) {
        if self.held.is_some() {
            return;
        }
        let area = self.area();
        if self.fullscreen.is_some() {
            self.paint(area, out);
            return;
        }
        match area {
            Some((frame, status_at)) => self.surface.draw(&frame, status_at, out),
            None => self.surface.erase(out),
        }
    }

    /// The area's frame and its status row's index: the streaming line, the queued
    /// messages, the status row, the editor's rows and the menu; only the status row between
    /// reads, for a branch summary; `None` when nothing is drawn.
    fn area(&self) -> Option<(render::Frame, Option<usize>)> {
        let status = self.status_row(Instant::now());
        let width = Shared::width();
        let Some(view) = &self.view else {
            let row = status.filter(|_| self.status == Some(Status::BranchSummary))?;
            let end = render::width(&row);
            let frame = render::Frame {
                rows: vec![String::new(), row],
                cursor: (render::STATUS_ROW, end),
            };
            return Some((frame, Some(render::STATUS_ROW)));
        };
        let menu = view.menu_rows(&self.commands, &self.arguments, width);
        let frame = render::layout(
            status.as_deref(),
            &view.prompt,
            view.buffer.text(),
            view.buffer.cursor(),
            &menu,
            width,
        );
        // The reply's unfinished line goes above the status, as pi's chat sits above its
        // loader; it moves into the transcript once its line ends. The queued messages
        // follow it, as pi's pending messages do.
        let mut live = self.live_table.clone();
        live.extend(render::live_rows(&self.live, width));
        live.extend(self.pending_rows(width));
        let mut frame = frame;
        frame.cursor.0 += live.len();
        frame.rows.splice(0..0, live.iter().cloned());
        let status_at = live.len() + render::STATUS_ROW;
        let height = frame.rows.len();
        let frame = frame.window(lines().saturating_sub(1).max(3));
        let status_at = status_at.checked_sub(height - frame.rows.len());
        // A frame cut at the top for a tall prompt may have lost its status row.
        let status_at =
            status_at.filter(|&at| status.is_some() && frame.rows.get(at) == status.as_ref());
        Some((frame, status_at))
    }

    /// Full-screen mode's whole screen: the transcript's rows in view, from the top, and
    /// the area below them at the bottom (drawn over in place, inside one synchronized
    /// update, so nothing flickers).
    fn paint(&mut self, area: Option<(render::Frame, Option<usize>)>, out: &mut String) {
        let height = lines();
        let cols = super::screen::columns();
        let area_rows = area.as_ref().map_or(0, |(f, _)| f.rows.len());
        let rows_in_view = height.saturating_sub(area_rows).max(1);
        let view = self.scrollback.view(cols);
        let rows: Vec<String> = self
            .scrollback
            .render_cached(&view)
            .iter()
            .flat_map(|l| super::scrollback::rows_of(&super::screen::only_styles(l), cols))
            .collect();
        let fs = self.fullscreen.get_or_insert_with(Fullscreen::default);
        if fs.scroll > 0 {
            fs.scroll += rows.len().saturating_sub(fs.seen);
        }
        fs.seen = rows.len();
        fs.scroll = fs.scroll.min(rows.len().saturating_sub(rows_in_view));
        let end = rows.len() - fs.scroll;
        let start = end.saturating_sub(rows_in_view);
        let scrolled = fs.scroll > 0;
        out.push_str("\x1b[?2026h\x1b[H");
        for i in 0..rows_in_view {
            let last = i + 1 == rows_in_view;
            if last && scrolled {
                // pi's "Jump to latest message" line.
                let key = self.keys.text(keys::Action::ScrollBottom);
                out.push_str(&super::style::dim(&super::screen::truncate(
                    &format!("↓ more below · {key} to jump to the latest"),
                    cols,
                )));
            } else if let Some(row) = rows.get(start + i) {
                out.push_str(row);
            }
            out.push_str("\x1b[0m\x1b[K");
            if !last || area_rows > 0 {
                out.push_str("\r\n");
            }
        }
        self.surface.leave();
        if let Some((frame, status_at)) = area {
            // What the area showed before goes: its rows are written over, not cleared.
            out.push_str("\x1b[J");
            self.surface.draw(&frame, status_at, out);
        }
        out.push_str("\x1b[?2026l");
    }

    /// Scrolls full-screen mode's view by `rows` (up when positive); `None` scrolls to the
    /// end. Nothing happens in the regular mode.
    pub(crate) fn scroll(&mut self, rows: Option<isize>) {
        let Some(fs) = &mut self.fullscreen else {
            return;
        };
        fs.scroll = match rows {
            None => 0,
            Some(n) => fs.scroll.saturating_add_signed(n),
        };
    }

    /// After a full-screen view, an external editor or a suspend left the alternate screen:
    /// full-screen mode takes it again (the next redraw paints it whole).
    pub(crate) fn reclaim(&mut self) {
        if let Some(fs) = &mut self.fullscreen
            && !fs.in_alt
        {
            fs.in_alt = true;
            render::write(ALT_SCREEN);
            self.surface.leave();
        }
    }

    /// Gives the normal screen back for an external editor or a suspend (full-screen mode
    /// takes the alternate one again with [`Shared::reclaim`]).
    pub(crate) fn yield_screen(&mut self) {
        if let Some(fs) = &mut self.fullscreen
            && fs.in_alt
        {
            fs.in_alt = false;
            render::write(MAIN_SCREEN);
        }
    }

    /// Turns full-screen mode on or off. Off, the transcript is laid out on the normal
    /// screen (its scrollback cleared first, as pi does when it switches).
    pub(crate) fn set_fullscreen(&mut self, on: bool) {
        if on == self.fullscreen.is_some() {
            return;
        }
        // Full-screen views (`/tree`, selectors) stay in the alternate screen meanwhile.
        crate::tui::terminal::keep_alternate_screen(on);
        if on {
            self.fullscreen = Some(Fullscreen::default());
            self.reclaim();
            self.redraw();
        } else {
            self.fullscreen = None;
            render::write(MAIN_SCREEN);
            self.surface.leave();
            self.relayout();
        }
    }

    /// On the way out of full-screen mode: back to the normal screen, with the transcript
    /// printed there (pi's `fullscreenExitOutput: "transcript"`), the scrollback kept.
    pub(crate) fn leave_fullscreen(&mut self) {
        if self.fullscreen.take().is_none() {
            return;
        }
        crate::tui::terminal::keep_alternate_screen(false);
        let mut out = String::from(MAIN_SCREEN);
        self.print_transcript(super::screen::columns(), &mut out);
        self.surface.leave();
        render::write(&out);
    }

    /// pi's pending messages: a blank row, `Steering: …` and `Follow-up: …` (dim, one row
    /// each), and the hint of the key that takes them back.
    fn pending_rows(&self, width: usize) -> Vec<String> {
        if self.pending.is_empty() {
            return Vec::new();
        }
        let fit = |text: String| {
            let text = crate::text::one_line(&pith_tools::sanitize::for_terminal(&text));
            super::style::dim(&super::screen::truncate(&format!(" {text}"), width))
        };
        let mut rows = vec![String::new()];
        for (kind, text) in &self.pending {
            let label = match kind {
                QueueKind::Steering => "Steering",
                QueueKind::FollowUp => "Follow-up",
            };
            rows.push(fit(format!("{label}: {text}")));
        }
        let key = self.keys.text(keys::Action::Dequeue);
        if !key.is_empty() {
            rows.push(fit(format!("↳ {key} to edit all queued messages")));
        }
        rows
    }

    /// The spinner's and countdown's next frame: the status row alone.
    pub(crate) fn tick(&mut self) {
        if self.held.is_some() || !self.surface.drawn() {
            return;
        }
        if let Some(row) = self.status_row(Instant::now()) {
            let mut out = String::new();
            if self.surface.redraw_status(&row, &mut out) {
                render::write(&out);
            } else {
                self.redraw();
            }
        }
    }

    /// Prints `text` (whole lines) above the area.
    pub(crate) fn print(&mut self, text: &str) {
        let text = text.replace('\n', "\r\n");
        if let Some(held) = &mut self.held {
            held.push(text);
            return;
        }
        if self.fullscreen.is_some() {
            // The text is in the scrollback already: the view shows it.
            self.redraw();
            return;
        }
        let mut out = String::new();
        let drawn = self.surface.drawn();
        self.surface.erase(&mut out);
        out.push_str(&text);
        if drawn {
            self.redraw_into(&mut out);
        }
        render::write(&out);
    }

    /// Appends the whole transcript, laid out for `cols` columns, as lines to print.
    fn print_transcript(&self, cols: usize, out: &mut String) {
        for line in self.scrollback.render(&self.scrollback.view(cols)) {
            out.push_str(&super::screen::only_styles(&line));
            out.push_str("\r\n");
        }
    }

    /// Clears the screen and the scrollback and prints the whole transcript again for the
    /// terminal's width and the display toggles, then the area (pi's `fullRender(true)`).
    /// Nothing happens while an external editor or a suspend has the terminal.
    pub(crate) fn relayout(&mut self) {
        if self.held.is_some() {
            return;
        }
        let cols = super::screen::columns();
        if self.fullscreen.is_some() {
            self.laid_out = cols;
            self.redraw();
            return;
        }
        // Home, erase the screen, then the scrollback (xterm's `ED 3`), as pi-tui does.
        let mut out = String::from("\x1b[H\x1b[2J\x1b[3J");
        self.print_transcript(cols, &mut out);
        self.laid_out = cols;
        self.surface.leave();
        self.redraw_into(&mut out);
        render::write(&out);
    }
}

/// The terminal's height in rows (24 when unknown).
fn lines() -> usize {
    match rustix::termios::tcgetwinsize(std::io::stdout()) {
        Ok(size) if size.ws_row > 0 => usize::from(size.ws_row),
        _ => 24,
    }
}

/// Prints above the editor: the transcript's side of [`Shared`].
#[derive(Clone)]
pub struct Printer {
    shared: Arc<Mutex<Shared>>,
}

impl Printer {
    /// Prints `text` (ending in a line break) above the editor's area, and keeps what
    /// `keep` adds to the scrollback for a later [`Printer::relayout`].
    pub fn print(&self, text: &str, keep: impl FnOnce(&mut Scrollback)) {
        if let Ok(mut s) = self.shared.lock() {
            keep(&mut s.scrollback);
            s.print(text);
        }
    }

    /// Works on the scrollback without printing.
    pub fn scrollback<T>(&self, f: impl FnOnce(&mut Scrollback) -> T) -> Option<T> {
        self.shared.lock().ok().map(|mut s| f(&mut s.scrollback))
    }

    /// Prints the whole transcript again (after a display toggle changed it).
    pub fn relayout(&self) {
        if let Ok(mut s) = self.shared.lock() {
            s.relayout();
        }
    }
}

/// The main loop's side of the editor thread.
pub struct Editor {
    requests: mpsc::Sender<ReadRequest>,
    shared: Arc<Mutex<Shared>>,
    /// A read was requested and its answer has not arrived yet.
    reading: bool,
}

impl Editor {
    /// Starts the editor thread; returns it, the inputs it sends, and the printer for output
    /// above the editor. `history` is the history file (created with its directory on the
    /// first prompt); `keys` the effective key bindings.
    ///
    /// Errors: the thread cannot be started.
    pub fn start(
        history: PathBuf,
        commands: Vec<(String, String)>,
        keys: Keybindings,
    ) -> anyhow::Result<(Editor, tokio_mpsc::UnboundedReceiver<Input>, Printer)> {
        let (req_tx, req_rx) = mpsc::channel::<ReadRequest>();
        let (in_tx, in_rx) = tokio_mpsc::unbounded_channel();
        let modes = type_ahead();
        let shared = Arc::new(Mutex::new(Shared {
            modes,
            surface: Surface::default(),
            view: None,
            status: None,
            held: None,
            busy: false,
            queued: Vec::new(),
            commands,
            keys: Arc::new(keys),
            epoch: Instant::now(),
            live: String::new(),
            live_table: Vec::new(),
            pending: Vec::new(),
            arguments: Vec::new(),
            scrollback: Scrollback::default(),
            laid_out: super::screen::columns(),
            fullscreen: None,
        }));
        let thread_shared = shared.clone();
        std::thread::Builder::new()
            .name("editor".into())
            .spawn(move || read::serve(&thread_shared, history, &req_rx, &in_tx))?;
        let printer = Printer {
            shared: shared.clone(),
        };
        Ok((
            Editor {
                requests: req_tx,
                shared,
                reading: false,
            },
            in_rx,
            printer,
        ))
    }

    /// Asks for the next prompt (nothing happens while one is already being read).
    pub fn read(&mut self, request: ReadRequest) {
        if !self.reading && self.requests.send(request).is_ok() {
            self.reading = true;
        }
    }

    /// The prompt asked for has arrived (any [`Input`] but [`Input::Escape`] and
    /// [`Input::Dequeue`]).
    pub fn answered(&mut self) {
        self.reading = false;
    }

    /// Whether a prompt is being read (the editor owns the terminal).
    pub fn is_reading(&self) -> bool {
        self.reading
    }

    fn with<T>(&self, f: impl FnOnce(&mut Shared) -> T) -> Option<T> {
        self.shared.lock().ok().map(|mut s| f(&mut s))
    }

    /// Turns full-screen mode on or off (pi's `tuiMode`).
    pub fn set_fullscreen(&self, on: bool) {
        self.with(|s| s.set_fullscreen(on));
    }

    /// Whether full-screen mode is on.
    pub fn fullscreen(&self) -> bool {
        self.with(|s| s.fullscreen.is_some()).unwrap_or(false)
    }

    /// Leaves full-screen mode on the way out, the transcript printed on the normal screen.
    pub fn leave_fullscreen(&self) {
        self.with(|s| s.leave_fullscreen());
    }

    /// Tells the key handlers whether a run or command is busy.
    pub fn set_busy(&self, busy: bool) {
        self.with(|s| s.busy = busy);
    }

    /// Tells the Esc handler what is queued (steering first, then follow-ups, as pi lists
    /// them), from each `queue_update`, and shows them below the transcript (pi's pending
    /// messages).
    pub fn set_queued(&self, steering: &[String], follow_up: &[String]) {
        self.with(|s| {
            s.queued = steering.iter().chain(follow_up).cloned().collect();
            let pending: Vec<(QueueKind, String)> = steering
                .iter()
                .map(|t| (QueueKind::Steering, t.clone()))
                .chain(follow_up.iter().map(|t| (QueueKind::FollowUp, t.clone())))
                .collect();
            if s.pending != pending {
                s.pending = pending;
                s.redraw();
            }
        });
    }

    /// Sets the values completed after `/command ` (a menu as for commands; Tab or Enter
    /// takes one).
    pub fn set_arguments(&self, command: &str, values: Vec<String>) {
        self.with(|s| {
            s.arguments.retain(|(c, _)| c != command);
            s.arguments.push((command.to_owned(), values));
        });
    }

    /// Replaces the completed slash commands (extension commands change with the session).
    pub fn set_commands(&self, commands: Vec<(String, String)>) {
        self.with(|s| s.commands = commands);
    }

    /// Shows `status` above the editor (`None` removes the line); redrawn at once.
    pub fn set_status(&self, status: Option<Status>) {
        self.with(|s| {
            if s.status != status {
                s.status = status;
                s.redraw();
            }
        });
    }

    /// Shows `table` (the rows of a table the reply is still sending, styled) and `text` (the
    /// streaming reply's unfinished line, already safe for the terminal) above the status
    /// line; empty ones remove them.
    pub fn set_live(&self, table: Vec<String>, text: &str) {
        self.with(|s| {
            if s.live != text || s.live_table != table {
                s.live = text.to_owned();
                s.live_table = table;
                s.redraw();
            }
        });
    }

    /// pith was continued (SIGCONT): the area is drawn again ([`external::continued`]).
    pub fn continued(&self) {
        external::continued(&self.shared);
    }

    /// Puts `keys` in effect from the next key on (`/reload`).
    pub fn set_keys(&self, keys: Keybindings) {
        self.with(|s| s.keys = Arc::new(keys));
    }

    /// The effective key bindings (for `/hotkeys`).
    pub fn keys(&self) -> Arc<Keybindings> {
        self.with(|s| s.keys.clone()).unwrap_or_default()
    }
}

/// The terminal's settings: as pith found them, and between reads.
#[derive(Debug, Clone, Default)]
pub(crate) struct Modes {
    /// As pith found them: for an external editor and a suspended pith.
    pub(crate) cooked: Option<rustix::termios::Termios>,
    /// Between reads: see [`type_ahead`].
    pub(crate) between: Option<rustix::termios::Termios>,
}

impl Modes {
    /// Applies `which` to the terminal (nothing when stdin is no terminal).
    pub(crate) fn apply(which: Option<&rustix::termios::Termios>) {
        if let Some(t) = which {
            let _ = rustix::termios::tcsetattr(
                std::io::stdin(),
                rustix::termios::OptionalActions::Now,
                t,
            );
        }
    }
}

/// Sets the terminal up for keys typed between reads (while a command or a switch runs):
/// they are neither echoed nor turned into lines, and Enter stays Enter (no `\r` → `\n`,
/// which the editor would read as Ctrl+J), so the next read takes them as typed. Output
/// and signals keep working as before (`OPOST`, `ISIG`); the caller restores the terminal's
/// settings on exit, and raw mode (each read's) is taken and left on top of these.
fn type_ahead() -> Modes {
    use rustix::termios::{InputModes, LocalModes, SpecialCodeIndex, tcgetattr};
    let Ok(cooked) = tcgetattr(std::io::stdin()) else {
        return Modes::default();
    };
    let mut t = cooked.clone();
    t.local_modes &= !(LocalModes::ECHO | LocalModes::ICANON);
    t.input_modes &= !InputModes::ICRNL;
    t.special_codes[SpecialCodeIndex::VMIN] = 1;
    t.special_codes[SpecialCodeIndex::VTIME] = 0;
    Modes::apply(Some(&t));
    Modes {
        cooked: Some(cooked),
        between: Some(t),
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

/// How often the editor thread looks at the clock while no key comes (the spinner's
/// frames, the countdown's seconds).
pub(crate) const TICK: Duration = Duration::from_millis(40);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_messages_are_pis() {
        let now = Instant::now();
        assert_eq!(
            Status::Retry {
                attempt: 1,
                max_attempts: 3,
                at: now + Duration::from_millis(1900)
            }
            .message(now, "escape"),
            "Retrying (1/3) in 2s... (escape to cancel)"
        );
        assert_eq!(
            Status::Compacting {
                reason: "manual".into()
            }
            .message(now, "escape"),
            "Compacting context... (escape to cancel)"
        );
        assert_eq!(
            Status::Working {
                since: now - Duration::from_secs(3)
            }
            .message(now, "escape"),
            "Working... 3s (escape to interrupt)"
        );
    }
}
