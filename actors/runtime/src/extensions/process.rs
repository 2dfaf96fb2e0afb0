//! The actor that hosts one extension process speaking PXP/1 (spec: extensions.md §1.2).
//!
//! Its handler never awaits the child: a request is written to the child's stdin (through a
//! writer task) and its reply port kept in `pending` under the JSON-RPC id; the reader task
//! casts each stdout line back as [`ProcessInput::Line`], and deadlines arrive as
//! [`ProcessInput::Deadline`] from `send_after`. So the extension's own requests made while
//! pith waits for it (a `ui/confirm` inside a `tool_call` gate, a `session/getBranch`) are
//! handled like any other message, and never deadlock the host.
//!
//! Failures follow the spec's fail policy: a gate that crashes or times out blocks (unless
//! the manifest says `onFailure: "allow"`), other intercepts continue, tool calls end with an
//! error result. A crash (exit, garbage line, a line over 16 MiB, three timeouts of one method
//! in a row) respawns the process after 0.5, 1, 2 … 30 s and sends
//! `session_start {reason: "restart"}`; three crashes within 60 s disable it for the session.
//! The session itself never notices beyond the failed requests.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::{Value, json};
use tokio::time::Instant;
use tracing::Instrument;

use pith_events::ext::{
    self, Decision, ExtensionSpec, Incoming, InitializeResult, OnFailure, PROTOCOL_VERSION,
    SubscribeMode, code,
};
use pith_events::{ContentBlock, ExtensionEvent, ToolSpec, UserContent};
use pith_tools::tool::{ToolError, ToolOutput};

use crate::envelope::{Envelope, MessageKind, Origin};
use crate::event::{ExtensionNotice, RuntimeEvent, UiSink};
use crate::extension::{
    ExtensionMsg, InjectedMessage, Injection, ResultPatch, SlashCommand, SuppliedSummary,
    ToolCallRequest, Verdict,
};
use crate::extensions::child::{self, Child, Tail, Wiring};
use crate::extensions::dialogs::Dialogs;
use crate::extensions::registry::{RegisteredTool, ToolRegistry};
use crate::extensions::session_api;
use crate::extensions::tool::{ExtensionTool, shared};
use crate::trace::{ActorName, MessageIds};
use crate::writer::WriterRef;

/// Crashes within this window…
const CRASH_WINDOW: Duration = Duration::from_secs(60);
/// …this many times disable the extension for the session.
const MAX_CRASHES: usize = 3;
/// The same method timing out this many times in a row counts as a crash.
const MAX_TIMEOUTS_IN_A_ROW: u32 = 3;

/// What a process host's child and timers report.
#[derive(Debug)]
pub enum ProcessInput {
    /// A line from stdout.
    Line {
        /// The incarnation that wrote it.
        generation: u64,
        /// The line, without its newline.
        line: String,
    },
    /// The process exited or broke the framing.
    Closed {
        /// The incarnation.
        generation: u64,
        /// What happened (`exited (status 1)`, `wrote a line over 16 MiB`).
        why: String,
    },
    /// A request's deadline passed.
    Deadline {
        /// The incarnation the request went to.
        generation: u64,
        /// The request's JSON-RPC id.
        id: u64,
    },
    /// Time to start the process again after a crash.
    Respawn {
        /// The incarnation that crashed.
        generation: u64,
    },
    /// A frontend answered (or the dialog timed out): the response line to send.
    DialogAnswered {
        /// The incarnation that asked.
        generation: u64,
        /// The line.
        line: String,
    },
}

impl ProcessInput {
    /// Its name in traces.
    pub fn kind(&self) -> &'static str {
        match self {
            ProcessInput::Line { .. } => "from_child",
            ProcessInput::Closed { .. } => "child_closed",
            ProcessInput::Deadline { .. } => "deadline",
            ProcessInput::Respawn { .. } => "respawn",
            ProcessInput::DialogAnswered { .. } => "dialog_answered",
        }
    }
}

/// The session and runtime an extension process works for.
#[derive(Clone)]
pub struct HostContext {
    /// Where its entries go and where branches are read.
    pub writer: WriterRef,
    /// `PITH_SESSION_ID`.
    pub session_id: String,
    /// `PITH_SESSION_FILE`.
    pub session_file: Option<PathBuf>,
    /// The session cwd: the process's working directory.
    pub cwd: PathBuf,
    /// `tui`, `print`, `json` or `rpc` (`PITH_MODE`, `initialize.mode`).
    pub mode: String,
    /// Whether dialogs reach a user (interactive and rpc).
    pub has_ui: bool,
    /// Logs go to `<agent_dir>/logs/extensions/<name>.log`.
    pub agent_dir: PathBuf,
    /// Its tools go here.
    pub registry: ToolRegistry,
    /// Frontends.
    pub ui: UiSink,
    /// Open dialogs.
    pub dialogs: Dialogs,
    /// Numbers messages.
    pub ids: MessageIds,
    /// The session's Agent, once spawned: `session/sendMessage` goes through it.
    pub agent: AgentSlot,
}

/// The Agent of a session, set once it is spawned (after the extensions).
pub type AgentSlot = Arc<std::sync::OnceLock<ActorRef<Envelope<crate::agent::AgentMsg>>>>;

/// What a process-hosted extension actor starts with.
pub struct ProcessArgs {
    /// The extension.
    pub spec: ExtensionSpec,
    /// Its session.
    pub host: HostContext,
    /// The event names it subscribed to, shared with the host's fan-out.
    pub subscriptions: Arc<RwLock<Vec<String>>>,
}

/// A request waiting for the child's answer.
enum Waiting {
    Initialize,
    Event {
        /// The event asked about, to read the decision.
        event: Box<ExtensionEvent>,
        /// `await` mode: the only answer is `{}`.
        await_only: bool,
        reply: Option<RpcReplyPort<Verdict>>,
    },
    Tool {
        tool_call_id: String,
        reply: RpcReplyPort<Result<ToolOutput, ToolError>>,
        progress: Option<tokio::sync::mpsc::UnboundedSender<ToolOutput>>,
    },
    Command {
        reply: RpcReplyPort<String>,
    },
}

struct Pending {
    waiting: Waiting,
    method: &'static str,
    timeout: Duration,
}

/// State of a process host.
pub struct ProcessState {
    spec: ExtensionSpec,
    host: HostContext,
    name: ActorName,
    subscriptions: Arc<RwLock<Vec<String>>>,
    generation: u64,
    child: Option<Child>,
    ready: bool,
    disabled: bool,
    started_once: bool,
    next_id: u64,
    pending: HashMap<u64, Pending>,
    subscribe: BTreeMap<String, SubscribeMode>,
    custom_types: Vec<String>,
    commands: Vec<SlashCommand>,
    /// `timeoutMs` of the tools that set one.
    tool_timeouts: HashMap<String, u64>,
    waiting_ready: Vec<RpcReplyPort<()>>,
    queued: VecDeque<(crate::trace::Trace, ExtensionMsg)>,
    crashes: VecDeque<Instant>,
    open_dialogs: usize,
    timeouts_in_row: HashMap<&'static str, u32>,
    tail: Tail,
}

/// The actor hosting one extension process.
pub struct ProcessExtension;

impl ProcessState {
    fn ext_name(&self) -> &str {
        &self.spec.manifest.name
    }

    fn notify_error(&self, event: &str, error: String) {
        tracing::warn!(extension = %self.ext_name(), event, "{error}");
        self.host
            .ui
            .notify(RuntimeEvent::Extension(ExtensionNotice::Error {
                extension: self.ext_name().to_owned(),
                event: event.to_owned(),
                error,
            }));
    }

    fn last_stderr(&self) -> String {
        self.tail
            .lock()
            .ok()
            .and_then(|t| t.back().cloned())
            .unwrap_or_default()
    }

    fn write(&self, line: String) {
        if let Some(child) = &self.child {
            child.stdin.send(line);
        }
    }

    /// Sends a request and keeps `waiting` until its answer or deadline.
    fn request(
        &mut self,
        me: &ActorRef<Envelope<ExtensionMsg>>,
        method: &'static str,
        params: Value,
        waiting: Waiting,
        timeout: Duration,
    ) {
        self.next_id += 1;
        let id = self.next_id;
        self.write(ext::request(id, method, params));
        self.pending.insert(
            id,
            Pending {
                waiting,
                method,
                timeout,
            },
        );
        self.arm(me, id, timeout);
    }

    fn arm(&self, me: &ActorRef<Envelope<ExtensionMsg>>, id: u64, timeout: Duration) {
        let generation = self.generation;
        let ids = self.host.ids.clone();
        let name = self.name.clone();
        me.send_after(timeout, move || Envelope {
            trace: crate::trace::Trace::root(&ids, name),
            msg: ExtensionMsg::Process(ProcessInput::Deadline { generation, id }),
        });
    }

    fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "PITH_EXTENSION_PROTOCOL".into(),
                PROTOCOL_VERSION.to_string(),
            ),
            ("PITH_SESSION_ID".into(), self.host.session_id.clone()),
            (
                "PITH_SESSION_FILE".into(),
                self.host
                    .session_file
                    .as_ref()
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ),
            (
                "PITH_CWD".into(),
                self.host.cwd.to_string_lossy().into_owned(),
            ),
            (
                "PITH_EXTENSION_DIR".into(),
                self.spec.dir.to_string_lossy().into_owned(),
            ),
            ("PITH_MODE".into(), self.host.mode.clone()),
        ]
    }

    /// Starts the process and sends `initialize`.
    fn start(&mut self, me: &ActorRef<Envelope<ExtensionMsg>>) {
        self.generation += 1;
        let log = self
            .host
            .agent_dir
            .join("logs")
            .join("extensions")
            .join(format!("{}.log", self.ext_name()));
        let wiring = Wiring {
            me: me.clone(),
            ids: self.host.ids.clone(),
            name: self.name.clone(),
            generation: self.generation,
        };
        let env = self.env();
        match child::spawn(
            &self.spec,
            &self.host.cwd,
            &env,
            log,
            self.tail.clone(),
            wiring,
        ) {
            Ok(child) => self.child = Some(child),
            Err(e) => {
                self.disable(&format!("could not be started: {e}"));
                return;
            }
        }
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "host": {"name": "pith", "version": env!("CARGO_PKG_VERSION")},
            "mode": self.host.mode,
            "hasUI": self.host.has_ui,
            "cwd": self.host.cwd,
            "session": {"id": self.host.session_id, "file": self.host.session_file},
            "extension": {"name": self.ext_name(), "scope": self.spec.scope.as_str(), "dir": self.spec.dir},
        });
        let timeout = Duration::from_millis(self.spec.manifest.timeouts.initialize_ms);
        self.request(me, "initialize", params, Waiting::Initialize, timeout);
    }

    /// The answer to `initialize`: subscriptions, tools and commands; then whatever waited.
    fn initialized(&mut self, me: &ActorRef<Envelope<ExtensionMsg>>, result: InitializeResult) {
        let mut subscribe = BTreeMap::new();
        for (event, mode) in result.subscribe {
            // `intercept` only where a decision means something; elsewhere it waits.
            let mode = match mode {
                SubscribeMode::Intercept if !ext::is_interceptable(&event) => SubscribeMode::Await,
                SubscribeMode::Observe | SubscribeMode::Await
                    if ext::is_interceptable(&event) && event != "session_shutdown" =>
                {
                    mode
                }
                m => m,
            };
            subscribe.insert(event, mode);
        }
        if let Ok(mut subs) = self.subscriptions.write() {
            *subs = subscribe.keys().cloned().collect();
        }
        self.subscribe = subscribe;
        self.custom_types = result.custom_types;
        self.commands = result
            .commands
            .into_iter()
            .map(|c| SlashCommand {
                name: c.name,
                description: c.description,
            })
            .collect();
        self.tool_timeouts = result
            .tools
            .iter()
            .filter_map(|t| Some((t.name.clone(), t.timeout_ms?)))
            .collect();
        let overrides = self.spec.manifest.overrides;
        for t in &result.tools {
            if pith_tools::ALL_TOOL_NAMES.contains(&t.name.as_str()) {
                let what = if overrides {
                    format!("tool {} replaces the built-in of that name", t.name)
                } else {
                    format!(
                        "tool {} has a built-in's name and is ignored (the manifest may set \"override\": true)",
                        t.name
                    )
                };
                self.notify_error("initialize", what);
            }
        }
        let tools = result
            .tools
            .into_iter()
            .map(|t| RegisteredTool {
                extension: self.ext_name().to_owned(),
                annotations: t.annotations.clone().unwrap_or_else(|| json!({})),
                overrides,
                schema: t.input_schema.clone(),
                tool: shared(ExtensionTool {
                    spec: ToolSpec {
                        name: t.name,
                        description: t.description,
                        parameters: t.input_schema,
                    },
                    actor: me.clone(),
                    name: self.name.clone(),
                    ids: self.host.ids.clone(),
                }),
            })
            .collect();
        self.host.registry.set(self.ext_name(), tools);
        self.ready = true;
        self.started_once = true;
        for waiter in self.waiting_ready.drain(..) {
            let _ = waiter.send(());
        }
    }

    /// The process is gone (or must go): settle what waited for it by the fail policy, then
    /// respawn with backoff, or disable it after too many crashes.
    fn crashed(&mut self, me: &ActorRef<Envelope<ExtensionMsg>>, why: &str) {
        let Some(child) = self.child.take() else {
            return;
        };
        child.signal(rustix::process::Signal::KILL);
        drop(child);
        self.generation += 1;
        self.ready = false;
        self.open_dialogs = 0;
        self.timeouts_in_row.clear();
        let stderr = self.last_stderr();
        let what = format!("extension `{}` {why}: {stderr}", self.ext_name());
        let first_start = !self.started_once;
        for (_, p) in std::mem::take(&mut self.pending) {
            self.settle_failed(p.waiting, &what);
        }
        self.notify_error("crash", what.clone());
        let now = Instant::now();
        self.crashes.push_back(now);
        while self
            .crashes
            .front()
            .is_some_and(|t| now.duration_since(*t) > CRASH_WINDOW)
        {
            self.crashes.pop_front();
        }
        if first_start || self.crashes.len() >= MAX_CRASHES {
            let reason = if first_start {
                format!("did not start: {what}")
            } else {
                format!("crashed {MAX_CRASHES} times within 60 s; disabled for this session")
            };
            self.disable(&reason);
            return;
        }
        let backoff = Duration::from_millis(500 << (self.crashes.len() - 1).min(6))
            .min(Duration::from_secs(30));
        let generation = self.generation;
        let ids = self.host.ids.clone();
        let name = self.name.clone();
        me.send_after(backoff, move || Envelope {
            trace: crate::trace::Trace::root(&ids, name),
            msg: ExtensionMsg::Process(ProcessInput::Respawn { generation }),
        });
    }

    fn settle_failed(&self, waiting: Waiting, what: &str) {
        match waiting {
            Waiting::Initialize => {}
            Waiting::Event { event, reply, .. } => {
                if let Some(reply) = reply {
                    let _ = reply.send(self.fail_verdict(event.name(), what));
                }
            }
            Waiting::Tool { reply, .. } => {
                let _ = reply.send(Err(ToolError::Failed(what.to_owned())));
            }
            Waiting::Command { reply } => {
                let _ = reply.send(format!("error: {what}"));
            }
        }
    }

    /// Disabled for the session: its tools go, its subscriptions go, whatever waits goes on.
    fn disable(&mut self, reason: &str) {
        if let Some(child) = self.child.take() {
            child.signal(rustix::process::Signal::KILL);
        }
        self.disabled = true;
        self.ready = false;
        self.host.registry.remove(self.ext_name());
        if let Ok(mut subs) = self.subscriptions.write() {
            subs.clear();
        }
        let what = format!("extension `{}` {reason}", self.ext_name());
        for (_, p) in std::mem::take(&mut self.pending) {
            self.settle_failed(p.waiting, &what);
        }
        for waiter in self.waiting_ready.drain(..) {
            let _ = waiter.send(());
        }
        for (_, msg) in std::mem::take(&mut self.queued) {
            answer_disabled(msg, &what);
        }
        self.notify_error("disabled", what);
    }

    /// The decision an event's failure means (spec: extensions.md §1.2 events table).
    fn fail_verdict(&self, event: &str, why: &str) -> Verdict {
        match (event, self.spec.manifest.on_failure) {
            ("tool_call", OnFailure::Block) => Verdict::Block(why.to_owned()),
            _ => Verdict::Continue,
        }
    }
}

/// Answers a message for an extension that is disabled: events go on, calls fail.
fn answer_disabled(msg: ExtensionMsg, what: &str) {
    match msg {
        ExtensionMsg::Event { reply, .. } => {
            let _ = reply.send(Verdict::Continue);
        }
        ExtensionMsg::Command { reply, .. } => {
            let _ = reply.send(format!("error: {what}"));
        }
        ExtensionMsg::Commands { reply } => {
            let _ = reply.send(Vec::new());
        }
        ExtensionMsg::CallTool { reply, .. } => {
            let _ = reply.send(Err(ToolError::Failed(what.to_owned())));
        }
        ExtensionMsg::Ready { reply } => {
            let _ = reply.send(());
        }
        ExtensionMsg::CancelTool { .. } | ExtensionMsg::Process(_) => {}
    }
}

/// A decision on the wire as the [`Verdict`] for `event`.
pub fn verdict_of(event: &ExtensionEvent, result: &Value) -> Verdict {
    let Ok(d) = serde_json::from_value::<Decision>(result.clone()) else {
        return Verdict::Continue;
    };
    let verdict = match event.name() {
        "tool_call" => match (d.block, d.input) {
            (Some(block), _) => Verdict::Block(block.reason),
            (None, Some(input)) => Verdict::ReplaceInput(input),
            (None, None) => Verdict::Continue,
        },
        "tool_result" => {
            let content = d
                .content
                .and_then(|c| serde_json::from_value::<Vec<ContentBlock>>(c).ok());
            if content.is_none() && d.details.is_none() && d.is_error.is_none() {
                Verdict::Continue
            } else {
                Verdict::PatchResult(ResultPatch {
                    content,
                    details: d.details,
                    is_error: d.is_error,
                })
            }
        }
        "input" => match d.action.as_deref() {
            Some("handled") => Verdict::Handled,
            Some("transform") => Verdict::Transform {
                text: d.text.unwrap_or_default(),
                images: d.images.and_then(|i| serde_json::from_value(i).ok()),
            },
            _ => Verdict::Continue,
        },
        "before_agent_start" => {
            let message = d.message.and_then(|m| {
                Some(InjectedMessage {
                    custom_type: m.get("customType")?.as_str()?.to_owned(),
                    content: serde_json::from_value::<UserContent>(m.get("content")?.clone())
                        .ok()?,
                    display: m.get("display").and_then(Value::as_bool).unwrap_or(true),
                    details: m.get("details").cloned(),
                })
            });
            if message.is_none() && d.append_system_prompt.is_none() && d.system_prompt.is_none() {
                Verdict::Continue
            } else {
                Verdict::Inject(Injection {
                    message,
                    append_system_prompt: d.append_system_prompt,
                    system_prompt: d.system_prompt,
                })
            }
        }
        _ => match (d.cancel, d.summary) {
            (Some(Value::Bool(false)) | None, Some(summary)) => Verdict::Summary(SuppliedSummary {
                summary,
                details: d.details,
            }),
            (Some(Value::String(reason)), _) => Verdict::Cancel(reason),
            (Some(Value::Bool(true)), _) => Verdict::Cancel("Cancelled by an extension".into()),
            _ => Verdict::Continue,
        },
    };
    if verdict.accepted_by(event) {
        verdict
    } else {
        Verdict::Continue
    }
}

/// A `tool/call` answer (`{content, details?, isError?}`) as a tool result.
fn tool_output(result: &Value) -> Result<ToolOutput, ToolError> {
    let content: Vec<ContentBlock> = result
        .get("content")
        .cloned()
        .and_then(|c| serde_json::from_value(c).ok())
        .unwrap_or_default();
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text: Vec<String> = content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .collect();
        return Err(ToolError::Failed(text.join("\n")));
    }
    Ok(ToolOutput {
        content,
        details: result.get("details").cloned().unwrap_or(Value::Null),
    })
}

impl ProcessExtension {
    async fn on_message(
        me: &ActorRef<Envelope<ExtensionMsg>>,
        state: &mut ProcessState,
        from: &Origin,
        trace: crate::trace::Trace,
        msg: ExtensionMsg,
    ) {
        if state.disabled {
            answer_disabled(
                msg,
                &format!("extension `{}` is disabled", state.ext_name()),
            );
            return;
        }
        let msg = match msg {
            ExtensionMsg::Process(input) => return Self::on_input(me, state, from, input).await,
            ExtensionMsg::Ready { reply } if state.ready => {
                let _ = reply.send(());
                return;
            }
            ExtensionMsg::Ready { reply } => {
                state.waiting_ready.push(reply);
                return;
            }
            ExtensionMsg::Commands { reply } => {
                let _ = reply.send(state.commands.clone());
                return;
            }
            ExtensionMsg::CancelTool { tool_call_id } => {
                // `id` is the `tool/call` request's; `toolCallId` names the call too.
                let request = state.pending.iter().find_map(|(id, p)| match &p.waiting {
                    Waiting::Tool {
                        tool_call_id: t, ..
                    } if *t == tool_call_id => Some(*id),
                    _ => None,
                });
                if let Some(id) = request {
                    state.write(ext::notification(
                        "cancel",
                        json!({"id": id, "toolCallId": tool_call_id, "reason": "aborted"}),
                    ));
                }
                return;
            }
            other if !state.ready => {
                // Starting or restarting: it waits for `initialize`.
                state.queued.push_back((trace, other));
                return;
            }
            other => other,
        };
        match msg {
            ExtensionMsg::Event { event, reply, .. } => {
                Self::send_event(me, state, from, *event, Some(reply)).await
            }
            ExtensionMsg::Command { name, args, reply } => {
                let timeout = Duration::from_millis(state.spec.manifest.timeouts.command_ms);
                state.request(
                    me,
                    "command/run",
                    json!({"name": name, "args": args}),
                    Waiting::Command { reply },
                    timeout,
                );
            }
            ExtensionMsg::CallTool { call, reply } => Self::call_tool(me, state, call, reply),
            ExtensionMsg::Commands { .. }
            | ExtensionMsg::CancelTool { .. }
            | ExtensionMsg::Ready { .. }
            | ExtensionMsg::Process(_) => {}
        }
    }

    fn call_tool(
        me: &ActorRef<Envelope<ExtensionMsg>>,
        state: &mut ProcessState,
        call: ToolCallRequest,
        reply: RpcReplyPort<Result<ToolOutput, ToolError>>,
    ) {
        let ms = state
            .tool_timeouts
            .get(&call.name)
            .copied()
            .unwrap_or(state.spec.manifest.timeouts.tool_ms);
        let timeout = Duration::from_millis(ms);
        let params = json!({
            "toolCallId": call.tool_call_id,
            "name": call.name,
            "arguments": call.arguments,
            "cwd": call.cwd,
        });
        state.request(
            me,
            "tool/call",
            params,
            Waiting::Tool {
                tool_call_id: call.tool_call_id,
                reply,
                progress: call.progress,
            },
            timeout,
        );
    }

    async fn send_event(
        me: &ActorRef<Envelope<ExtensionMsg>>,
        state: &mut ProcessState,
        from: &Origin,
        event: ExtensionEvent,
        reply: Option<RpcReplyPort<Verdict>>,
    ) {
        let name = event.name();
        let Some(mode) = state.subscribe.get(name).copied() else {
            if let Some(reply) = reply {
                let _ = reply.send(Verdict::Continue);
            }
            return;
        };
        let mut payload = ext::event_json(&event);
        if let ExtensionEvent::SessionStart { .. } = &event {
            let (leaf, custom) =
                session_api::start_state(&state.host.writer, from, &state.custom_types).await;
            payload["leafId"] = json!(leaf);
            payload["customEntries"] = Value::Array(custom);
        }
        match mode {
            SubscribeMode::Observe => {
                if let Some(child) = &state.child {
                    let line = ext::notification("event", json!({"event": payload}));
                    child.stdin.observe(line, name == "message_update");
                }
                if let Some(reply) = reply {
                    let _ = reply.send(Verdict::Continue);
                }
            }
            SubscribeMode::Await | SubscribeMode::Intercept => {
                let t = &state.spec.manifest.timeouts;
                let ms = if mode == SubscribeMode::Intercept {
                    t.intercept_ms
                } else if name == "session_shutdown" {
                    t.shutdown_ms
                } else {
                    t.await_ms
                };
                let timeout = Duration::from_millis(ms);
                state.request(
                    me,
                    "intercept",
                    json!({"event": payload}),
                    Waiting::Event {
                        event: Box::new(event),
                        await_only: mode == SubscribeMode::Await,
                        reply,
                    },
                    timeout,
                );
            }
        }
    }

    async fn on_input(
        me: &ActorRef<Envelope<ExtensionMsg>>,
        state: &mut ProcessState,
        from: &Origin,
        input: ProcessInput,
    ) {
        match input {
            ProcessInput::Line { generation, line } if generation == state.generation => {
                match Incoming::parse(&line) {
                    Some(Incoming::Response { id, result }) => {
                        Self::on_response(me, state, from, id, result).await
                    }
                    Some(Incoming::Request { id, method, params }) => {
                        Self::on_request(me, state, from, id, &method, params).await
                    }
                    Some(Incoming::Notification { method, params }) => {
                        Self::on_notification(state, &method, params)
                    }
                    None => state.crashed(me, "wrote a line that is not JSON-RPC"),
                }
            }
            ProcessInput::Closed { generation, why } if generation == state.generation => {
                state.crashed(me, &why)
            }
            ProcessInput::Deadline { generation, id } if generation == state.generation => {
                Self::on_deadline(me, state, id)
            }
            ProcessInput::Respawn { generation } if generation == state.generation => {
                state.start(me)
            }
            ProcessInput::DialogAnswered { generation, line } => {
                if generation == state.generation {
                    state.open_dialogs = state.open_dialogs.saturating_sub(1);
                    state.write(line);
                }
            }
            // Reports of an incarnation that is gone.
            ProcessInput::Line { .. }
            | ProcessInput::Closed { .. }
            | ProcessInput::Deadline { .. }
            | ProcessInput::Respawn { .. } => {}
        }
    }

    fn on_deadline(me: &ActorRef<Envelope<ExtensionMsg>>, state: &mut ProcessState, id: u64) {
        let Some(p) = state.pending.get(&id) else {
            return;
        };
        // The clock stops while the extension has a dialog open: a human deciding never
        // trips it (spec: extensions.md §1.2 "Timeouts").
        if state.open_dialogs > 0 && !matches!(p.waiting, Waiting::Initialize) {
            let timeout = p.timeout;
            state.arm(me, id, timeout);
            return;
        }
        let Some(p) = state.pending.remove(&id) else {
            return;
        };
        let secs = p.timeout.as_millis().div_ceil(1000);
        if matches!(p.waiting, Waiting::Initialize) {
            state.crashed(me, &format!("did not answer initialize within {secs} s"));
            return;
        }
        let what = match &p.waiting {
            Waiting::Event { event, .. } if event.name() == "tool_call" => {
                format!("extension gate did not answer within {secs} s")
            }
            Waiting::Event { event, .. } => format!(
                "extension `{}` did not answer {} within {secs} s",
                state.ext_name(),
                event.name()
            ),
            _ => format!(
                "extension `{}` did not answer {} within {secs} s",
                state.ext_name(),
                p.method
            ),
        };
        let event = match &p.waiting {
            Waiting::Event { event, .. } => event.name().to_owned(),
            _ => p.method.to_owned(),
        };
        state.settle_failed(p.waiting, &what);
        state.notify_error(&event, what);
        let count = state.timeouts_in_row.entry(p.method).or_default();
        *count += 1;
        if *count >= MAX_TIMEOUTS_IN_A_ROW {
            state.crashed(
                me,
                &format!(
                    "timed out on {} {MAX_TIMEOUTS_IN_A_ROW} times in a row",
                    p.method
                ),
            );
        }
    }

    async fn on_response(
        me: &ActorRef<Envelope<ExtensionMsg>>,
        state: &mut ProcessState,
        from: &Origin,
        id: Value,
        result: Result<Value, Value>,
    ) {
        let Some(p) = id.as_u64().and_then(|id| state.pending.remove(&id)) else {
            return;
        };
        state.timeouts_in_row.remove(p.method);
        match p.waiting {
            Waiting::Initialize => {
                let parsed = result.map_err(|e| e.to_string()).and_then(|r| {
                    serde_json::from_value::<InitializeResult>(r).map_err(|e| e.to_string())
                });
                match parsed {
                    Ok(init) => {
                        let restart = state.started_once;
                        state.initialized(me, init);
                        if restart {
                            let event = ExtensionEvent::SessionStart {
                                reason: pith_events::StartReason::Restart,
                                previous_session_file: None,
                            };
                            Self::send_event(me, state, from, event, None).await;
                        }
                        while let Some((trace, msg)) = state.queued.pop_front() {
                            Box::pin(Self::on_message(me, state, from, trace, msg)).await;
                        }
                    }
                    Err(e) => state.disable(&format!("answered initialize with an error: {e}")),
                }
            }
            Waiting::Event {
                event,
                await_only,
                reply,
            } => {
                let verdict = match &result {
                    Ok(_) if await_only => Verdict::Continue,
                    Ok(r) => verdict_of(&event, r),
                    Err(e) => {
                        let what = format!("extension `{}` failed: {e}", state.ext_name());
                        state.notify_error(event.name(), what.clone());
                        state.fail_verdict(event.name(), &what)
                    }
                };
                if let Some(reply) = reply {
                    let _ = reply.send(verdict);
                }
            }
            Waiting::Tool { reply, .. } => {
                let out = match result {
                    Ok(r) => tool_output(&r),
                    Err(e) => Err(ToolError::Failed(
                        e.get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("the extension's tool failed")
                            .to_owned(),
                    )),
                };
                let _ = reply.send(out);
            }
            Waiting::Command { reply } => {
                let text = match result {
                    Ok(r) => r
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    Err(e) => format!("error: {e}"),
                };
                let _ = reply.send(text);
            }
        }
    }

    async fn on_request(
        me: &ActorRef<Envelope<ExtensionMsg>>,
        state: &mut ProcessState,
        from: &Origin,
        id: Value,
        method: &str,
        params: Value,
    ) {
        let line = match method {
            "session/appendEntry" | "session/sendMessage" | "session/getBranch" => {
                let agent = state.host.agent.get();
                match session_api::handle(&state.host.writer, agent, from, method, &params).await {
                    Ok(result) => ext::response(&id, result),
                    Err(message) => ext::error_response(&id, code::INVALID_PARAMS, &message, None),
                }
            }
            "ui/confirm" | "ui/select" | "ui/input" => {
                if !state.host.has_ui {
                    ext::error_response(&id, code::NO_UI, "no-ui", Some(json!({"cancelled": true})))
                } else {
                    Self::open_dialog(me, state, id, method, params);
                    return;
                }
            }
            _ => ext::error_response(&id, code::METHOD_NOT_FOUND, "unknown method", None),
        };
        state.write(line);
    }

    /// Forwards a dialog to the frontends and answers the extension when they do (or when
    /// its own `timeoutMs` passes: pi's semantics, select → undefined, confirm → false).
    fn open_dialog(
        me: &ActorRef<Envelope<ExtensionMsg>>,
        state: &mut ProcessState,
        id: Value,
        method: &str,
        params: Value,
    ) {
        let short = method.trim_start_matches("ui/").to_owned();
        let (ui_id, answer) = state.host.dialogs.open();
        let timeout = params.get("timeoutMs").and_then(Value::as_u64);
        state
            .host
            .ui
            .notify(RuntimeEvent::Extension(ExtensionNotice::UiRequest {
                id: ui_id.clone(),
                method: short.clone(),
                params,
            }));
        state.open_dialogs += 1;
        let dialogs = state.host.dialogs.clone();
        let me = me.clone();
        let generation = state.generation;
        let ids = state.host.ids.clone();
        let name = state.name.clone();
        tokio::spawn(async move {
            let answered = match timeout {
                Some(ms) => tokio::time::timeout(Duration::from_millis(ms), answer)
                    .await
                    .ok()
                    .and_then(Result::ok),
                None => answer.await.ok(),
            };
            dialogs.close(&ui_id);
            let result = match answered {
                Some(a) if a.get("cancelled").and_then(Value::as_bool) == Some(true) => {
                    json!({"cancelled": true})
                }
                Some(a) if short == "confirm" => {
                    json!({"confirmed": a.get("confirmed").and_then(Value::as_bool).unwrap_or(false)})
                }
                Some(a) => json!({"value": a.get("value").cloned().unwrap_or(Value::Null)}),
                None if short == "confirm" => json!({"confirmed": false}),
                None => json!({"cancelled": true}),
            };
            let _ = me.cast(Envelope {
                trace: crate::trace::Trace::root(&ids, name),
                msg: ExtensionMsg::Process(ProcessInput::DialogAnswered {
                    generation,
                    line: ext::response(&id, result),
                }),
            });
        });
    }

    fn on_notification(state: &mut ProcessState, method: &str, params: Value) {
        match method {
            "ui/notify" | "ui/setStatus" => {
                if state.host.has_ui {
                    let (ui_id, _) = (format!("ext-notify-{}", state.next_id), ());
                    state
                        .host
                        .ui
                        .notify(RuntimeEvent::Extension(ExtensionNotice::UiRequest {
                            id: ui_id,
                            method: method.trim_start_matches("ui/").to_owned(),
                            params,
                        }));
                } else {
                    tracing::info!(extension = %state.ext_name(), "{method}: {params}");
                }
            }
            "tool/progress" => {
                let call = params.get("toolCallId").and_then(Value::as_str);
                for p in state.pending.values() {
                    if let Waiting::Tool {
                        tool_call_id,
                        progress: Some(progress),
                        ..
                    } = &p.waiting
                        && Some(tool_call_id.as_str()) == call
                    {
                        let content = params
                            .get("content")
                            .cloned()
                            .and_then(|c| serde_json::from_value(c).ok())
                            .unwrap_or_default();
                        let _ = progress.send(ToolOutput {
                            content,
                            details: params.get("details").cloned().unwrap_or(Value::Null),
                        });
                    }
                }
            }
            "log" => {
                let message = params.get("message").and_then(Value::as_str).unwrap_or("");
                tracing::info!(extension = %state.ext_name(), "{message}");
            }
            _ => {}
        }
    }
}

impl Actor for ProcessExtension {
    type Msg = Envelope<ExtensionMsg>;
    type State = ProcessState;
    type Arguments = ProcessArgs;

    async fn pre_start(
        &self,
        me: ActorRef<Envelope<ExtensionMsg>>,
        args: ProcessArgs,
    ) -> Result<ProcessState, ActorProcessingErr> {
        let mut state = ProcessState {
            name: ActorName::Extension(Arc::from(args.spec.manifest.name.as_str())),
            spec: args.spec,
            host: args.host,
            subscriptions: args.subscriptions,
            generation: 0,
            child: None,
            ready: false,
            disabled: false,
            started_once: false,
            next_id: 0,
            pending: HashMap::new(),
            subscribe: BTreeMap::new(),
            custom_types: Vec::new(),
            commands: Vec::new(),
            tool_timeouts: HashMap::new(),
            waiting_ready: Vec::new(),
            queued: VecDeque::new(),
            crashes: VecDeque::new(),
            open_dialogs: 0,
            timeouts_in_row: HashMap::new(),
            tail: Arc::new(Mutex::new(VecDeque::new())),
        };
        state.start(&me);
        Ok(state)
    }

    async fn handle(
        &self,
        me: ActorRef<Envelope<ExtensionMsg>>,
        Envelope { trace, msg }: Envelope<ExtensionMsg>,
        state: &mut ProcessState,
    ) -> Result<(), ActorProcessingErr> {
        let span = trace.span(&state.name, msg.kind(), &state.host.session_id);
        let from = Origin::new(state.name.clone(), &trace);
        Self::on_message(&me, state, &from, trace, msg)
            .instrument(span)
            .await;
        Ok(())
    }

    async fn post_stop(
        &self,
        _me: ActorRef<Envelope<ExtensionMsg>>,
        state: &mut ProcessState,
    ) -> Result<(), ActorProcessingErr> {
        // pi's stop sequence: shutdown, stdin closed, SIGTERM, 2 s, SIGKILL (process group).
        state.host.registry.remove(state.ext_name());
        if let Some(child) = state.child.take() {
            child
                .stdin
                .send(ext::request(u64::MAX, "shutdown", json!({})));
            let grace = Duration::from_millis(state.spec.manifest.timeouts.shutdown_ms);
            tokio::spawn(async move {
                tokio::time::sleep(grace).await;
                let pgid = child.pgid;
                drop(child);
                if let Some(pid) = rustix::process::Pid::from_raw(pgid) {
                    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::TERM);
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
                }
            });
        }
        for (_, p) in std::mem::take(&mut state.pending) {
            state.settle_failed(p.waiting, "the session ended");
        }
        Ok(())
    }
}
