//! `pith --mode rpc`: JSONL commands on stdin, responses and events on stdout
//! (spec: agent-and-events.md §9), on the actor runtime.
//!
//! - `framing`: the wire (LF-only lines in and out, the response object).
//! - `command`: decoding one input line into a command.
//! - `commands`: what each command does, and when its response is written.
//! - `models`: the model and thinking-level commands.
//! - `queries`: stats, fork messages, last assistant text.
//! - `state`: what the event stream tells about the session (running, compacting, queued).
//! - `mcp`: the `mcp` command (MCP server states, reconnect, enable, disable).
//!
//! One loop owns stdout's order: events first, then responses of commands that ran in the
//! background (bash, compact), then the next input line. A command is answered after
//! the events it caused, as pi's synchronous listeners do — except an accepted prompt, whose
//! response pi writes before the run's first event.

mod command;
mod commands;
mod ext_ui;
mod framing;
mod mcp;
mod models;
pub(crate) mod queries;
mod state;

use std::process::ExitCode;

use anyhow::{Context, Result};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc;

use pith_actors::extensions::dialogs::Dialogs;
use pith_actors::runtime::{RuntimeEvent, RuntimeHandle};
use pith_events::AgentEvent;
use pith_store::SessionEnv;

use crate::startup::{RunArgs, Started, check_flags, start};
use command::Line;
pub(crate) use framing::PACE_LIMIT;
use framing::{Output, Response};
use pith_events::js::to_js_string;

/// Runs the rpc mode until stdin ends (exit 0), SIGTERM (143), SIGHUP (129) or SIGINT (130);
/// each way the session is flushed and fsynced and extensions get `session_shutdown {quit}`.
///
/// Errors: startup's (model, tools, session); a runtime that cannot be reached.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    check_flags(&args)?;
    let _log =
        crate::logging::install(&pith_store::dirs::agent_dir(), args.trace.as_deref(), true)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve(args))
}

/// The rpc session: the runtime, stdout, and what the client has been told.
pub(crate) struct Rpc {
    /// The runtime every command goes to.
    rt: RuntimeHandle,
    /// stdout, in the loop's order.
    out: Output,
    /// What only the events tell (running, compacting, queued).
    tracked: state::Tracked,
    /// The model and thinking level, which the runtime does not report.
    models: models::Models,
    /// Agent dir for settings, which the runtime reads per session but does not report.
    env: SessionEnv,
    /// Responses of commands running in the background, written by the loop.
    done: mpsc::UnboundedSender<Response>,
    /// The id of the last `bash` request, which its `bash_execution_update`s carry (one
    /// command runs at a time).
    bash_id: Option<serde_json::Value>,
    /// Extension dialogs waiting for `extension_ui_response`.
    dialogs: Dialogs,
    /// The MCP servers, for the `mcp` command (`None` with `--no-mcp`).
    mcp: Option<pith_mcp::McpHub>,
    /// The prompt templates and skills, which `get_commands` lists after the extensions'.
    resources: std::sync::Arc<pith_actors::resources::Resources>,
}

/// How many agent events in a row the loop handles before it looks at stdin and signals
/// without waiting (a few milliseconds of a flooding reply).
const EVENTS_BEFORE_INPUT: usize = 256;

async fn serve(args: RunArgs) -> Result<ExitCode> {
    // Before startup, so a signal during it already ends with pi's status.
    let mut signals = Signals::new()?;
    let Started {
        rt,
        choice,
        provider,
        dialogs,
        mcp,
        resources,
        ..
    } = start(&args).await?;
    if !args.messages.is_empty() {
        eprintln!("pith: rpc mode takes its prompts on stdin; the arguments are ignored");
    }
    let mut events = rt.subscribe().await?;
    let pacer = rt.pacer().await?;
    pacer.limit(framing::PACE_LIMIT);
    let env = SessionEnv::system();
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let models = models::Models::new(
        choice,
        provider,
        args.api_key.clone(),
        args.faux_script.clone(),
        env.clone(),
        cwd,
    );
    let (done, mut finished) = mpsc::unbounded_channel();
    let mut rpc = Rpc {
        rt: rt.clone(),
        out: Output::start(pacer),
        tracked: state::Tracked::default(),
        models,
        env,
        done,
        bash_id: None,
        dialogs,
        mcp: mcp.clone(),
        resources,
    };
    let mut lines = framing::read_lines();
    // Events go first, so a response follows the events emitted before it; but a flooding
    // reply keeps events always ready, and signals, responses and input would never be looked
    // at (stdin closed mid-flood went unseen for the whole reply). After a run of events, they
    // get a turn: a look that does not wait.
    let mut run_of_events = 0usize;
    let status: u8 = loop {
        if run_of_events >= EVENTS_BEFORE_INPUT {
            run_of_events = 0;
            tokio::select! {
                biased;
                status = signals.next() => break status,
                Some(response) = finished.recv() => rpc.on_finished(response).await,
                line = lines.recv() => match line {
                    Some(line) => rpc.on_line(&line, &mut events).await,
                    None => break 0,
                },
                () = std::future::ready(()) => {}
            }
        }
        tokio::select! {
            biased;
            event = events.recv() => match event {
                Some(event) => {
                    rpc.on_event(event);
                    run_of_events += 1;
                }
                None => {
                    eprintln!("pith: the runtime stopped unexpectedly");
                    break 1;
                }
            },
            Some(response) = finished.recv() => rpc.on_finished(response).await,
            line = lines.recv() => match line {
                Some(line) => {
                    run_of_events = 0;
                    rpc.on_line(&line, &mut events).await;
                }
                None => break 0,
            },
            status = signals.next() => break status,
        }
    };
    // Like pi, nothing more is written once quitting starts: the client asked to stop, and
    // nothing may wait for it to read.
    drop(events);
    if let Ok(pacer) = rt.pacer().await {
        pacer.limit(usize::MAX);
    }
    if let Err(e) = rt.shutdown().await {
        eprintln!("pith: shutting down: {e}");
    }
    crate::mcp_cmd::stop(mcp).await;
    rpc.out.finish();
    Ok(ExitCode::from(status))
}

impl Rpc {
    /// Writes the response of a command that ran in the background; after a switch of
    /// session, the loop follows the new one first.
    async fn on_finished(&mut self, response: Response) {
        let switched = matches!(
            response.command.as_ref().and_then(|c| c.as_str()),
            Some("new_session" | "switch_session" | "fork" | "clone")
        );
        if switched && response.success {
            self.follow_session().await;
        }
        self.out.line(&response);
    }

    fn on_event(&mut self, event: RuntimeEvent) {
        match event {
            RuntimeEvent::Agent(mut event) => {
                self.tracked.observe(&event);
                if let AgentEvent::BashExecutionUpdate { id, .. } = event.as_mut() {
                    id.clone_from(&self.bash_id);
                }
                self.out.event(&event);
            }
            RuntimeEvent::SessionStarted { .. } => self.tracked.reset(),
            // stdout holds only pi's protocol.
            RuntimeEvent::Notice(n) | RuntimeEvent::WriteFailed(n) => eprintln!("pith: {n}"),
            RuntimeEvent::Extension(notice) => self.out.line(&ext_ui::notice_json(&notice)),
        }
    }

    /// pi's `abort`: answered once the agent is idle (after `agent_end`), as pi answers it.
    /// The events of the run's end (the aborted message, whole, in `message_end`,
    /// `turn_end` and `agent_end`) are written while the agent winds down, not after: with
    /// a long reply each is megabytes, and writing them only once the agent was idle put
    /// their cost after the agent's on the way to the answer (issue 13: within 100 ms).
    async fn abort(
        &mut self,
        events: &mut mpsc::UnboundedReceiver<RuntimeEvent>,
    ) -> Result<Option<serde_json::Value>, String> {
        let rt = self.rt.clone();
        let idle = rt.abort();
        tokio::pin!(idle);
        let done = loop {
            tokio::select! {
                biased;
                done = &mut idle => break done,
                Some(event) = events.recv() => self.on_event(event),
            }
        };
        // Whatever the run emitted is queued by the time the agent is idle.
        self.drain(events);
        done.map_err(|e| e.to_string()).map(|()| {
            self.tracked.streaming = false;
            None
        })
    }

    /// Writes the events queued so far: they happened before what comes next.
    fn drain(&mut self, events: &mut mpsc::UnboundedReceiver<RuntimeEvent>) {
        while let Ok(event) = events.try_recv() {
            self.on_event(event);
        }
    }

    async fn on_line(&mut self, line: &str, events: &mut mpsc::UnboundedReceiver<RuntimeEvent>) {
        match command::parse(line) {
            Line::NotJson(e) => self.out.line(&Response::err(
                None,
                Some("parse".into()),
                format!("Failed to parse command: {e}"),
            )),
            Line::UiResponse(response) => {
                if let Some(id) = response.get("id").and_then(|v| v.as_str()) {
                    self.dialogs.answer(id, response.clone());
                }
            }
            // pi ≥ 0.79.7 repeats the id here too, like every response.
            Line::Unknown { id, name } => {
                let text = format!("Unknown command: {}", to_js_string(name.as_ref()));
                self.out.line(&Response::err(id, name, text));
            }
            Line::Invalid { id, name, error } => {
                self.out.line(&Response::err(id, Some(name.into()), error));
            }
            Line::Command {
                id,
                name,
                command: command::Command::Abort,
            } => {
                self.drain(events);
                let result = self.abort(events).await;
                self.out.line(&commands::respond(id, &name, result));
            }
            Line::Command { id, name, command } => {
                self.drain(events);
                match self.execute(id.clone(), &name, command).await {
                    commands::Answer::Now(result) => {
                        self.drain(events);
                        self.out.line(&commands::respond(id, &name, result));
                    }
                    commands::Answer::BeforeEvents(result) => {
                        self.out.line(&commands::respond(id, &name, result));
                    }
                    commands::Answer::Later => {}
                }
            }
        }
    }
}

/// The signals that end the rpc mode, with the exit status each gives.
struct Signals {
    term: Signal,
    hup: Signal,
    int: Signal,
}

impl Signals {
    fn new() -> Result<Signals> {
        let listen = |kind| signal(kind).context("listening for signals");
        Ok(Signals {
            term: listen(SignalKind::terminate())?,
            hup: listen(SignalKind::hangup())?,
            int: listen(SignalKind::interrupt())?,
        })
    }

    /// pi's statuses: 143 for SIGTERM, 129 for SIGHUP; SIGINT, which pi leaves to Node's
    /// default, ends with the shell's 130 after the same clean shutdown.
    async fn next(&mut self) -> u8 {
        tokio::select! {
            _ = self.term.recv() => 143,
            _ = self.hup.recv() => 129,
            _ = self.int.recv() => 130,
        }
    }
}
