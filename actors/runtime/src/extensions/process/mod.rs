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

use pith_events::ExtensionEvent;
use pith_events::ext::transcript::Side;
use pith_events::ext::{self, ExtensionSpec, Incoming, InitializeResult, SubscribeMode};
use pith_tools::tool::{ToolError, ToolOutput};

use crate::envelope::{Envelope, MessageKind, Origin};
use crate::event::UiSink;
use crate::extension::{ExtensionMsg, SlashCommand, ToolCallRequest, Verdict};
use crate::extensions::child::{Child, Tail};
use crate::extensions::dialogs::Dialogs;
pub use crate::extensions::process_input::ProcessInput;
use crate::extensions::registry::ToolRegistry;
use crate::extensions::session_api;
use crate::extensions::transcript::TranscriptTap;
use crate::trace::{ActorName, MessageIds};

mod decision;
mod from_child;
mod lifecycle;

use crate::writer::WriterRef;
use decision::tool_output;
pub use decision::verdict_of;

/// Crashes within this window…
const CRASH_WINDOW: Duration = Duration::from_secs(60);
/// …this many times disable the extension for the session.
const MAX_CRASHES: usize = 3;
/// The same method timing out this many times in a row counts as a crash.
const MAX_TIMEOUTS_IN_A_ROW: u32 = 3;

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
    /// Records the wire when set.
    pub transcript: Option<TranscriptTap>,
    /// Starts the process under `pith __guard` (so it does not outlive a killed pith); `None`
    /// starts it directly (tests of this crate, which have no `pith` binary).
    pub guard: Option<pith_tools::ChildGuard>,
}

/// The Agent of a session, set once it is spawned (after the extensions).
pub type AgentSlot = Arc<std::sync::OnceLock<ActorRef<Envelope<crate::agent::messages::AgentMsg>>>>;

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
        ExtensionMsg::CancelTool { .. }
        | ExtensionMsg::Observe { .. }
        | ExtensionMsg::Process(_) => {}
    }
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
            ExtensionMsg::Observe { event } => {
                Self::send_event(me, state, from, *event, None).await
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
        if mode == SubscribeMode::Observe
            && name == "message_update"
            && state.host.transcript.is_none()
        {
            // Built when written: a coalesced update is never serialised, and the actor
            // keeps up with the stream (spec: extensions.md §4 step 6).
            if let Some(child) = &state.child {
                child.stdin.observe_with(
                    Box::new(move || {
                        ext::notification("event", json!({"event": ext::event_json(&event)}))
                    }),
                    true,
                );
            }
            if let Some(reply) = reply {
                let _ = reply.send(Verdict::Continue);
            }
            return;
        }
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
                    state.tap(Side::Host, &line);
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
                state.tap(Side::Ext, &line);
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
        // "30 s" as the spec words it; a deadline under a second or not a whole one in ms.
        let ms = p.timeout.as_millis();
        let secs = if ms % 1000 == 0 {
            format!("{} s", ms / 1000)
        } else {
            format!("{ms} ms")
        };
        if matches!(p.waiting, Waiting::Initialize) {
            state.crashed(me, &format!("did not answer initialize within {secs}"));
            return;
        }
        let what = match &p.waiting {
            Waiting::Event { event, .. } if event.name() == "tool_call" => {
                format!("extension gate did not answer within {secs}")
            }
            Waiting::Event { event, .. } => format!(
                "extension `{}` did not answer {} within {secs}",
                state.ext_name(),
                event.name()
            ),
            _ => format!(
                "extension `{}` did not answer {} within {secs}",
                state.ext_name(),
                p.method
            ),
        };
        let event = match &p.waiting {
            Waiting::Event { event, .. } => event.name().to_owned(),
            _ => p.method.to_owned(),
        };
        // Told before the failed request is settled: the notice comes first in the stream.
        state.notify_error(&event, what.clone());
        state.settle_failed(p.waiting, &what);
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
            let bye = ext::request(u64::MAX, "shutdown", json!({}));
            state.tap(Side::Host, &bye);
            child.stdin.send(bye);
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
