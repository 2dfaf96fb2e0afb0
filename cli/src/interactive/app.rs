//! The interactive session: one loop that takes the editor's lines, the runtime's events, the
//! end of runs and commands, and signals, in the order they come (pi's `InteractiveMode`).
//!
//! While a run streams the editor stays open: Enter steers, Alt-Enter queues a follow-up
//! (spec: agent-and-events.md §3.2), Esc or Ctrl-C aborts. `!cmd` and `/compact` run as
//! tasks beside it. Full-screen views (`/tree`, `/resume`) only open while the editor is not
//! reading, so they own the terminal alone.

use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::{Duration, Instant};

use anyhow::Result;
use pith_tools::sanitize::for_terminal;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

use pith_actors::event::ExtensionNotice;
use pith_actors::extension::SlashCommand;
use pith_actors::runtime::{RuntimeError, RuntimeEvent, RuntimeHandle};
use pith_events::{AgentEvent, AgentMessage, BashExecutionMessage};
use pith_store::{Session, SessionEnv};

use super::editor::{Editor, Input, ReadRequest, Status};
use super::footer::{Footer, context_tokens, git_branch, session_stats};
use super::messages::user_command_lines;
use super::screen::{Screen, columns};
use super::scrollback::{self, Mark};
use super::style;
use super::transcript::Transcript;
use crate::model_choice::Choice;

/// pi's window for a second Ctrl-C to exit.
const DOUBLE_PRESS: Duration = Duration::from_millis(500);

/// The editor's prompt.
pub const PROMPT: &str = "> ";

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What a background task reports when it ends.
pub enum TaskDone {
    /// `!cmd` / `!!cmd`.
    Bash(Result<BashExecutionMessage, RuntimeError>),
    /// `/compact`: the compaction entry's id.
    Compact(Result<String, RuntimeError>),
    /// An extension command: the text to show.
    Command(Result<Option<String>, RuntimeError>),
}

/// A question the next line answers instead of being a prompt: an extension's dialog
/// (pith's own questions are selectors).
pub enum Question {
    /// An extension's dialog.
    Extension(super::dialogs::Dialog),
}

/// Whether to go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep going.
    Go,
    /// Quit (the runtime is shut down by the loop).
    Quit,
}

/// The state of the interactive mode.
pub struct App {
    pub(super) rt: RuntimeHandle,
    pub(super) env: SessionEnv,
    /// `--session-dir`, for the picker and new sessions.
    pub(super) session_dir: Option<PathBuf>,
    /// `--faux-script`, for `/model faux/…`.
    pub(super) faux_script: Option<PathBuf>,
    /// The model in use, its key and the thinking level.
    pub(super) choice: Choice,
    /// More than one provider has a key: the footer names the provider.
    pub(super) show_provider: bool,
    pub(super) screen: Screen,
    pub(super) editor: Editor,
    inputs: UnboundedReceiver<Input>,
    events: UnboundedReceiver<RuntimeEvent>,
    pub(super) transcript: Transcript,
    /// The run streaming now: resolves when the agent is idle again.
    run: Option<BoxFuture<Result<(), RuntimeError>>>,
    /// `!cmd` or `/compact` running beside the editor.
    pub(super) task: Option<JoinHandle<TaskDone>>,
    /// The running task is `/compact` (Esc cancels it with abort, not as a command).
    pub(super) compacting_task: bool,
    /// Text for the editor at its next read (`/fork`, `/tree`).
    pub(super) next_initial: String,
    /// The next line answers this.
    pub(super) question: Option<Question>,
    /// Prompts waiting their turn: the command-line messages, and lines typed during a
    /// compaction (pi queues those).
    pub(super) queued: VecDeque<String>,
    /// The images of the command line's `@file` arguments: they go with the first prompt
    /// sent (pi's `initialImages`).
    first_images: Vec<pith_events::ImageContent>,
    /// Extension commands of the current session.
    pub(super) ext_commands: Vec<SlashCommand>,
    /// Extension dialogs waiting for an answer.
    pub(super) dialogs: pith_actors::extensions::dialogs::Dialogs,
    /// Prompt templates and skills (`/name`, `/skill:name`), for `/help` and completion.
    pub(super) resources: std::sync::Arc<pith_actors::resources::Resources>,
    /// The `enableSkillCommands` setting: `/skill:name` completes.
    pub(super) skill_commands: bool,
    /// A compaction runs (between `compaction_start` and `compaction_end`): prompts wait
    /// for it, as pi's compaction queue makes them.
    compacting: bool,
    last_interrupt: Option<Instant>,
    /// Where the reply streaming now starts in the scrollback (its rows give way to the
    /// whole message when it ends).
    reply_mark: Option<Mark>,
    /// When the current run's prompt was sent: the working indicator counts from it.
    run_started: Option<Instant>,
    /// Set on the way out: the command that resumes the session (pi's `formatResumeCommand`).
    pub(super) resume_command: Option<String>,
    /// The MCP servers, for `/mcp`.
    pub(super) mcp: Option<pith_mcp::McpHub>,
}

/// One thing that happened.
enum Step {
    Input(Option<Input>),
    Event(Option<RuntimeEvent>),
    RunDone(Result<(), RuntimeError>),
    TaskDone(Result<TaskDone, tokio::task::JoinError>),
    Interrupt,
    Terminate,
    /// SIGCONT: `fg` after a stop.
    Continued,
}

/// Everything [`App::new`] needs.
pub struct Parts {
    /// The runtime.
    pub rt: RuntimeHandle,
    /// Agent dir and clock.
    pub env: SessionEnv,
    /// `--session-dir`.
    pub session_dir: Option<PathBuf>,
    /// `--faux-script`.
    pub faux_script: Option<PathBuf>,
    /// The model chosen at startup.
    pub choice: Choice,
    /// Whether the footer names the provider.
    pub show_provider: bool,
    /// The editor and its inputs.
    pub editor: (Editor, UnboundedReceiver<Input>),
    /// The output.
    pub screen: Screen,
    /// Prompts from the command line.
    pub messages: Vec<String>,
    /// Images for the first of them (`@file` arguments).
    pub images: Vec<pith_events::ImageContent>,
    /// Extension dialogs waiting for an answer.
    pub dialogs: pith_actors::extensions::dialogs::Dialogs,
    /// Prompt templates and skills of this run.
    pub resources: std::sync::Arc<pith_actors::resources::Resources>,
    /// The `enableSkillCommands` setting.
    pub skill_commands: bool,
    /// The MCP servers, for `/mcp`.
    pub mcp: Option<pith_mcp::McpHub>,
}

impl App {
    /// Subscribes to the runtime and sets up the state.
    ///
    /// Errors: the runtime does not answer.
    pub async fn new(parts: Parts) -> Result<App> {
        let events = parts.rt.subscribe().await?;
        let ext_commands = parts.rt.commands().await?;
        Ok(App {
            rt: parts.rt,
            env: parts.env,
            session_dir: parts.session_dir,
            faux_script: parts.faux_script,
            choice: parts.choice,
            show_provider: parts.show_provider,
            screen: parts.screen,
            editor: parts.editor.0,
            inputs: parts.editor.1,
            events,
            transcript: Transcript::default(),
            run: None,
            task: None,
            compacting_task: false,
            next_initial: String::new(),
            question: None,
            queued: parts.messages.into(),
            first_images: parts.images,
            ext_commands,
            dialogs: parts.dialogs,
            resources: parts.resources,
            skill_commands: parts.skill_commands,
            compacting: false,
            last_interrupt: None,
            reply_mark: None,
            run_started: None,
            resume_command: None,
            mcp: parts.mcp,
        })
    }

    /// Runs until the user quits; the runtime is shut down (session flushed) on the way out.
    /// Returns whether the editor was still showing its prompt (quit by a signal).
    ///
    /// Errors: the runtime stopped answering, or the editor failed.
    pub async fn run(&mut self) -> Result<bool> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut sigint = signal(SignalKind::interrupt())?;
        let mut sigterm = signal(SignalKind::terminate())?;
        let mut sighup = signal(SignalKind::hangup())?;
        let mut sigcont = signal(SignalKind::from_raw(rustix::process::Signal::CONT.as_raw()))?;
        self.dispatch_queued().await?;
        loop {
            self.editor
                .set_busy(self.run.is_some() || self.task.is_some());
            if !self.editor.is_reading() {
                let prompt = match &self.question {
                    Some(Question::Extension(_)) => "? ".to_owned(),
                    None => PROMPT.to_owned(),
                };
                let history = self.question.is_none();
                self.editor.read(ReadRequest {
                    prompt,
                    initial: std::mem::take(&mut self.next_initial),
                    history,
                });
            }
            let step = tokio::select! {
                input = self.inputs.recv() => Step::Input(input),
                event = self.events.recv() => Step::Event(event),
                done = wait(&mut self.run), if self.run.is_some() => Step::RunDone(done),
                done = join(&mut self.task), if self.task.is_some() => Step::TaskDone(done),
                _ = sigint.recv() => Step::Interrupt,
                _ = sigterm.recv() => Step::Terminate,
                _ = sighup.recv() => Step::Terminate,
                _ = sigcont.recv() => Step::Continued,
            };
            let flow = match step {
                Step::Input(Some(input)) => self.on_input(input).await?,
                Step::Input(None) => Flow::Quit,
                Step::Event(Some(event)) => {
                    self.on_event(event);
                    Flow::Go
                }
                Step::Event(None) => anyhow::bail!("the runtime stopped unexpectedly"),
                Step::RunDone(done) => {
                    self.run = None;
                    self.editor.set_status(None);
                    done?;
                    self.after_run().await?;
                    Flow::Go
                }
                Step::TaskDone(done) => {
                    self.task = None;
                    self.editor.set_status(self.working());
                    self.compacting_task = false;
                    self.on_task_done(done?).await?;
                    Flow::Go
                }
                Step::Interrupt => self.on_ctrl_c().await?,
                Step::Terminate => Flow::Quit,
                Step::Continued => {
                    self.editor.continued();
                    Flow::Go
                }
            };
            if flow == Flow::Quit {
                break;
            }
        }
        if self.run.is_some() {
            self.rt.abort().await?;
        }
        if self.task.is_some() {
            self.rt.abort_bash();
        }
        let current = self.rt.current_session().await.ok();
        self.rt.shutdown().await?;
        self.resume_command = current.and_then(|c| resume_command(&self.env, &c));
        while let Ok(event) = self.events.try_recv() {
            if let RuntimeEvent::WriteFailed(n) = event {
                self.screen
                    .print(&style::error(&format!("pith: {}", for_terminal(&n))));
            }
        }
        Ok(self.editor.is_reading())
    }

    async fn on_input(&mut self, input: Input) -> Result<Flow> {
        if !matches!(input, Input::Escape { .. } | Input::Dequeue { .. }) {
            self.editor.answered();
            self.screen.typed();
        }
        match input {
            Input::Line { text, follow_up } => {
                if let Some(question) = self.question.take() {
                    return self.answer(question, text.trim()).await;
                }
                self.submit(text.trim(), follow_up).await
            }
            Input::Interrupt => self.on_ctrl_c().await,
            Input::Action { action, text } => {
                self.next_initial = text;
                self.key_action(action).await
            }
            Input::Escape { restored } => {
                self.restore_queue(&restored).await?;
                self.interrupt().await?;
                Ok(Flow::Go)
            }
            Input::Dequeue { restored } => {
                self.restore_queue(&restored).await?;
                // pi's `handleDequeue` notice.
                match restored.len() {
                    0 => self.status("No queued messages to restore"),
                    1 => self.status("Restored 1 queued message to editor"),
                    n => self.status(&format!("Restored {n} queued messages to editor")),
                }
                Ok(Flow::Go)
            }
            Input::Eof => Ok(Flow::Quit),
            Input::Failed(e) => anyhow::bail!("the line editor failed: {e}"),
        }
    }

    /// pi's `onSubmit`: commands, `!cmd`, then a prompt (steering or follow-up while a run
    /// streams, held while a compaction runs).
    async fn submit(&mut self, text: &str, follow_up: bool) -> Result<Flow> {
        if text.is_empty() {
            return Ok(Flow::Go);
        }
        if text.starts_with('/')
            && let Some(flow) = self.command(text).await?
        {
            return Ok(flow);
        }
        if let Some((command, exclude)) = user_command(text) {
            if self.task.is_some() {
                self.warn("A command is already running. Press Esc to cancel it first.");
                self.next_initial = text.to_owned();
                return Ok(Flow::Go);
            }
            let (rt, command) = (self.rt.clone(), command.to_owned());
            self.task = Some(tokio::spawn(async move {
                TaskDone::Bash(rt.bash(&command, exclude).await)
            }));
            return Ok(Flow::Go);
        }
        if self.run.is_some() && !self.compacting {
            // pi's `prompt(text, {streamingBehavior})`: queued until the agent can take it,
            // shown below the transcript from the `queue_update` until then.
            if follow_up {
                self.rt.follow_up(text);
            } else {
                self.rt.steer(text);
            }
            return Ok(Flow::Go);
        }
        if self.busy() || self.compacting {
            self.queued.push_back(text.to_owned());
            self.screen.print(&style::dim(&format!("Queued: {text}")));
            return Ok(Flow::Go);
        }
        self.prompt(text, true).await?;
        Ok(Flow::Go)
    }

    /// Sends a prompt to the idle agent; `typed` when the editor shows it already.
    pub(super) async fn prompt(&mut self, text: &str, typed: bool) -> Result<()> {
        if typed {
            self.transcript.typed(text);
        }
        let images = std::mem::take(&mut self.first_images);
        match self.rt.prompt_with_images(text, images).await {
            Ok(()) => {
                let rt = self.rt.clone();
                self.run = Some(Box::pin(async move { rt.wait_idle().await }));
                self.run_started = Some(Instant::now());
                self.editor.set_status(self.working());
            }
            Err(e) => {
                self.transcript.not_sent(text);
                self.error(&e.to_string());
            }
        }
        Ok(())
    }

    /// Sends the waiting prompts, one run at a time; queued commands run at once.
    async fn dispatch_queued(&mut self) -> Result<()> {
        while self.run.is_none() && self.task.is_none() {
            let Some(text) = self.queued.pop_front() else {
                break;
            };
            if text.starts_with('/') && self.command(&text).await?.is_some() {
                // A command takes the first prompt's place: its images go with it (pi).
                self.first_images.clear();
                continue;
            }
            self.prompt(&text, false).await?;
        }
        Ok(())
    }

    /// The working indicator while a run goes on.
    fn working(&self) -> Option<Status> {
        self.run_started
            .filter(|_| self.run.is_some())
            .map(|since| Status::Working { since })
    }

    /// The status line for `event`: the retry countdown, the compaction, and the working
    /// indicator again after them (pi's status indicators).
    fn status_for(&self, event: &AgentEvent) {
        if let AgentEvent::AutoRetryStart {
            attempt,
            max_attempts,
            delay_ms,
            ..
        } = event
        {
            self.editor.set_status(Some(Status::Retry {
                attempt: *attempt,
                max_attempts: *max_attempts,
                at: Instant::now() + Duration::from_millis(*delay_ms),
            }));
        } else if let AgentEvent::CompactionStart { reason } = event {
            self.editor.set_status(Some(Status::Compacting {
                reason: reason.clone(),
            }));
        } else if matches!(
            event,
            AgentEvent::AutoRetryEnd { .. }
                | AgentEvent::CompactionEnd { .. }
                | AgentEvent::MessageStart { .. }
        ) {
            self.editor.set_status(self.working());
        }
    }

    fn on_event(&mut self, event: RuntimeEvent) {
        match event {
            RuntimeEvent::Agent(event) => {
                self.status_for(&event);
                if let AgentEvent::CompactionStart { .. } = *event {
                    self.compacting = true;
                }
                if let AgentEvent::CompactionEnd { .. } = *event {
                    self.compacting = false;
                }
                if let AgentEvent::QueueUpdate {
                    steering,
                    follow_up,
                } = &*event
                {
                    self.editor.set_queued(steering, follow_up);
                }
                if let AgentEvent::MessageStart {
                    message: AgentMessage::Assistant(_),
                } = &*event
                {
                    self.reply_mark = Some(self.screen.mark());
                }
                let repeated = match &*event {
                    AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                        self.transcript.repeated_call(tool_call_id)
                    }
                    _ => None,
                };
                let lines = self.transcript.event(&event, columns());
                // The unfinished line (and a table still arriving) is shown live; finished
                // lines go to the transcript.
                self.editor.set_live(
                    self.transcript.held_rows(columns()),
                    &self.transcript.live(),
                );
                self.show_event(*event, &lines, repeated);
            }
            RuntimeEvent::Notice(n) => self
                .screen
                .print(&style::warning(&format!("pith: {}", for_terminal(&n)))),
            RuntimeEvent::WriteFailed(n) => self.error(&n),
            RuntimeEvent::Extension(ExtensionNotice::UiRequest { id, method, params }) => {
                let (lines, dialog) = super::dialogs::show(&id, &method, &params);
                match dialog {
                    // One question at a time: a second dialog meanwhile is cancelled.
                    Some(_) if self.question.is_some() => {
                        self.dialogs
                            .answer(&id, serde_json::json!({"cancelled": true}));
                    }
                    Some(dialog) => {
                        self.screen.print_lines(&lines);
                        self.question = Some(Question::Extension(dialog));
                    }
                    None => self.screen.print_lines(&lines),
                }
            }
            RuntimeEvent::Extension(notice) => self.screen.print(&style::warning(&format!(
                "pith: {}",
                for_terminal(&crate::text::extension_notice(&notice))
            ))),
            RuntimeEvent::SessionStarted { .. } => {}
        }
    }

    /// Prints an event's `lines` and keeps what lays them out again: a whole message once it
    /// has ended (its streamed rows give way to it), a tool's result (`repeated`: the call
    /// named again above it).
    fn show_event(
        &mut self,
        event: AgentEvent,
        lines: &[String],
        repeated: Option<(String, serde_json::Value)>,
    ) {
        match event {
            AgentEvent::MessageEnd {
                message: message @ AgentMessage::Assistant(_),
            } => {
                self.screen.print_streamed(lines);
                if let Some(mark) = self.reply_mark.take() {
                    self.screen.settle(mark, scrollback::message(message));
                }
            }
            AgentEvent::ToolExecutionEnd {
                tool_name,
                result,
                is_error,
                duration_ms,
                ..
            } => self.screen.print_layout(
                lines,
                scrollback::tool_result(repeated, tool_name, result, is_error, duration_ms),
            ),
            AgentEvent::MessageStart {
                message: message @ (AgentMessage::User(_) | AgentMessage::Custom(_)),
            } if !lines.is_empty() => self
                .screen
                .print_layout(lines, scrollback::message(message)),
            _ if self.reply_mark.is_some() => self.screen.print_streamed(lines),
            _ => self.screen.print_lines(lines),
        }
    }

    /// Awaits `work` (a session switch) while still showing runtime events and taking typed
    /// lines as answers to extension dialogs, so a `session_before_*` guard that asks the
    /// user can be answered; other lines typed meanwhile wait in the queue.
    pub(super) async fn with_dialogs<T>(
        &mut self,
        work: impl std::future::Future<Output = T>,
    ) -> T {
        tokio::pin!(work);
        loop {
            if matches!(self.question, Some(Question::Extension(_))) && !self.editor.is_reading() {
                self.editor.read(ReadRequest {
                    prompt: "? ".to_owned(),
                    initial: String::new(),
                    history: false,
                });
            }
            tokio::select! {
                done = &mut work => return done,
                Some(event) = self.events.recv() => self.on_event(event),
                Some(input) = self.inputs.recv() => {
                    self.editor.answered();
                    self.screen.typed();
                    if let Input::Line { text, .. } = input {
                        match self.question.take() {
                            Some(Question::Extension(dialog)) => {
                                let response = super::dialogs::response(&dialog, text.trim());
                                self.dialogs.answer(&dialog.id, response);
                            }
                            other => {
                                self.question = other;
                                if !text.trim().is_empty() {
                                    self.queued.push_back(text.trim().to_owned());
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Shows what is still queued from the runtime.
    pub(super) fn drain_events(&mut self) {
        while let Ok(event) = self.events.try_recv() {
            self.on_event(event);
        }
    }

    async fn after_run(&mut self) -> Result<()> {
        self.drain_events();
        self.footer().await?;
        self.dispatch_queued().await
    }

    async fn on_task_done(&mut self, done: TaskDone) -> Result<()> {
        self.drain_events();
        match done {
            TaskDone::Bash(Ok(run)) => {
                let mut lines = vec![String::new()];
                lines.extend(user_command_lines(&run, columns()));
                self.screen.print_lines(&lines);
            }
            TaskDone::Bash(Err(e)) => self.error(&format!("Bash command failed: {e}")),
            TaskDone::Compact(Ok(_)) => self.footer().await?,
            TaskDone::Command(Ok(Some(out))) => self
                .screen
                .print_lines(&[String::new(), for_terminal(&out)]),
            TaskDone::Command(Ok(None)) => {}
            TaskDone::Command(Err(e)) => self.error(&e.to_string()),
            TaskDone::Compact(Err(e)) => {
                if !self.transcript.take_compaction_error_shown() {
                    self.error(&e.to_string());
                }
            }
        }
        self.dispatch_queued().await
    }

    /// Ctrl-C: pi clears the editor and exits on a second press within 500 ms; pith also
    /// interrupts what runs, as a terminal's Ctrl-C does.
    async fn on_ctrl_c(&mut self) -> Result<Flow> {
        let now = Instant::now();
        if self
            .last_interrupt
            .is_some_and(|t| now.duration_since(t) < DOUBLE_PRESS)
        {
            return Ok(Flow::Quit);
        }
        self.last_interrupt = Some(now);
        if let Some(question) = self.question.take() {
            // Ctrl-C cancels an extension's dialog.
            self.answer(question, "").await?;
            self.status("Cancelled");
            return Ok(Flow::Go);
        }
        if self.run.is_some() {
            // Ctrl-C cleared the line; the queued messages come back in the next one rather
            // than running after the next prompt.
            let taken = self.rt.clear_queue().await?;
            let queued: Vec<String> = taken.steering.into_iter().chain(taken.follow_up).collect();
            if !queued.is_empty() {
                self.next_initial = super::editor::restored_text(&queued, "");
            }
        }
        self.interrupt().await?;
        Ok(Flow::Go)
    }

    /// Esc (pi's `app.interrupt`): aborts the run or cancels `/compact` (pi's `abort()`,
    /// which ends a compaction too), or cancels the running `!cmd`.
    async fn interrupt(&mut self) -> Result<()> {
        if self.run.is_some() || self.compacting_task {
            self.rt.abort().await?;
        } else if self.task.is_some() {
            self.rt.abort_bash();
        }
        Ok(())
    }

    /// Prints pi's footer (directory, usage, context, model).
    pub(super) async fn footer(&mut self) -> Result<()> {
        let session = self.session().await?;
        let context = self.rt.context().await?;
        let totals = session_stats(&session).tokens;
        let tokens = context_tokens(&session, &context.messages);
        let model = &self.choice.model;
        let settings = pith_actors::settings::Settings::load(
            &self.env.agent_dir,
            std::path::Path::new(session.cwd()),
        );
        let footer = Footer {
            cwd: session.cwd().to_owned(),
            branch: git_branch(std::path::Path::new(session.cwd())),
            name: session.session_name(),
            totals,
            context_tokens: tokens,
            context_window: model.context_window,
            auto_compact: settings.compaction().enabled,
            model: (model.provider.clone(), model.id.clone()),
            thinking: model
                .reasoning
                .then(|| self.choice.thinking_level.as_str().to_owned()),
            show_provider: self.show_provider,
        };
        self.screen.show(Box::new(move |v| {
            let mut lines = vec![String::new()];
            lines.extend(footer.lines(v.cols));
            lines
        }));
        Ok(())
    }

    /// The current session, rebuilt from the runtime's copy of its log (never written).
    pub(super) async fn session(&self) -> Result<Session> {
        let snap = self.rt.snapshot().await?;
        Ok(Session::from_snapshot(
            snap.header,
            snap.tree,
            &snap.cwd,
            None,
            None,
            &self.env,
        ))
    }

    /// Prints the current session's conversation (pi's `renderInitialMessages`).
    pub(super) async fn show_history(&mut self) -> Result<()> {
        let context = self.rt.context().await?;
        let rule = scrollback::rule();
        self.screen.show(rule);
        self.screen.show(scrollback::messages(context.messages));
        Ok(())
    }

    /// After a session opened at a search hit (`PATH@ENTRY`) that the file goes on past:
    /// says so, since a prompt there starts a branch beside the later entries.
    pub(super) async fn opened_at_hit_notice(&mut self) -> Result<()> {
        let snapshot = self.rt.snapshot().await?;
        let later = match snapshot.leaf() {
            pith_store::tree::Leaf::At(i) => snapshot.entries().len().saturating_sub(i + 1),
            pith_store::tree::Leaf::Root => snapshot.entries().len(),
        };
        if later > 0 {
            self.status(&format!(
                "Opened at the search hit. {later} later {} not in view: a prompt here \
                 starts a new branch; /tree goes back to them.",
                if later == 1 {
                    "entry is"
                } else {
                    "entries are"
                }
            ));
        }
        Ok(())
    }

    /// pi's `showStatus`: a dim line.
    pub(super) fn status(&mut self, text: &str) {
        self.screen.print_lines(&[String::new(), style::dim(text)]);
    }

    /// pi's `showWarning`.
    pub(super) fn warn(&mut self, text: &str) {
        self.screen
            .print_lines(&[String::new(), style::warning(&format!("Warning: {text}"))]);
    }

    /// pi's `showError`.
    pub(super) fn error(&mut self, text: &str) {
        self.screen
            .print_lines(&[String::new(), style::error(&format!("Error: {text}"))]);
    }

    /// Whether a run or a command is going on (session changes wait for it).
    pub(super) fn busy(&self) -> bool {
        self.run.is_some() || self.task.is_some()
    }

    /// Starts `/compact` beside the editor.
    pub(super) fn start_compaction(&mut self, focus: Option<String>) {
        self.compacting_task = true;
        let rt = self.rt.clone();
        self.task = Some(tokio::spawn(async move {
            TaskDone::Compact(rt.compact(focus.as_deref()).await)
        }));
    }
}

async fn wait<T>(f: &mut Option<BoxFuture<T>>) -> T {
    match f {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}

async fn join<T>(f: &mut Option<JoinHandle<T>>) -> Result<T, tokio::task::JoinError> {
    match f {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}

/// `!cmd` → `(cmd, false)`, `!!cmd` → `(cmd, true)`; `None` for other text and for a bare
/// `!`/`!!`, which pi sends as an ordinary prompt (spec: agent-and-events.md §5).
pub fn user_command(text: &str) -> Option<(&str, bool)> {
    let (rest, exclude) = match text.strip_prefix("!!") {
        Some(rest) => (rest, true),
        None => (text.strip_prefix('!')?, false),
    };
    let command = rest.trim();
    (!command.is_empty()).then_some((command, exclude))
}

/// pi's `formatResumeCommand`: `pith --session <id>` for a session file in the default folder
/// of its cwd, else `pith --session <path>` (pi adds `--session-dir`); `None` when the file
/// was never written.
fn resume_command(
    env: &SessionEnv,
    current: &pith_actors::runtime::CurrentSession,
) -> Option<String> {
    let file = current.session_file.as_deref()?;
    if !file.is_file() {
        return None;
    }
    let default = pith_store::dirs::sessions_root(&env.agent_dir)
        .join(pith_store::dirs::encode_cwd(&current.cwd));
    let arg = if Some(default.as_path()) == file.parent() {
        current.session_id.clone()
    } else {
        shell_quote(&file.to_string_lossy())
    };
    Some(format!("pith --session {arg}"))
}

/// pi's `quoteIfNeeded`: bare when only `[A-Za-z0-9_./~:@-]`, else single-quoted.
fn shell_quote(value: &str) -> String {
    if !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./~:@".contains(c))
    {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', "'\\''"))
    }
}
