//! Agent: pi's agent loop (spec: agent-and-events.md §1–3).
//!
//! A run (one `prompt`) is a task the Agent actor spawns, so that steering, follow-ups and
//! abort keep flowing through the mailbox while the run streams. The run persists through the
//! SessionWriter on `message_end` of user, assistant, toolResult and custom messages, awaiting
//! each append: entries reach the file in event order. It asks the Projection for the context
//! before every model call and fsyncs at every turn end.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tracing::Instrument;

use pith_events::{AgentEvent, AgentMessage, AssistantMessage, BashExecutionMessage, StopReason};
use pith_store::env::Clock;
use pith_store::llm::convert_to_llm;
use pith_store::tool_pairs::pair_tool_calls;

use crate::compactor::{CompactorMsg, NextStep};
use crate::extension::ExtensionMsg;
use crate::projection::ProjectionMsg;
use crate::provider::{Provider, ProviderEvent, ProviderRequest};
use crate::tool::Toolset;
use crate::trace::TraceIds;

mod auto_retry;
mod tool_calls;
use crate::writer::{Append, WriterMsg};

/// How long an actor call may take before the caller gives up (a stuck actor is a bug, not a
/// wait: appends and context reads are in-memory plus one write).
const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Where agent events go: every frontend and extension subscribed, in order, never dropped.
#[derive(Clone, Default)]
pub struct EventSink {
    subscribers: Arc<Mutex<Vec<mpsc::UnboundedSender<AgentEvent>>>>,
    /// Frontends, fed in the emitting call itself: an event is with them before anything the
    /// emitter does next (e.g. answering "idle").
    ui: Arc<Mutex<Option<crate::event::UiSink>>>,
}

impl EventSink {
    /// A sink whose events also reach `ui` as [`crate::event::RuntimeEvent::Agent`].
    pub fn to_ui(ui: crate::event::UiSink) -> EventSink {
        EventSink {
            ui: Arc::new(Mutex::new(Some(ui))),
            ..EventSink::default()
        }
    }

    /// Stops feeding frontends (the session subtree is gone; late events are not its).
    pub fn detach_ui(&self) {
        if let Ok(mut ui) = self.ui.lock() {
            *ui = None;
        }
    }

    /// A new subscription; events arrive in emission order.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<AgentEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut subs) = self.subscribers.lock() {
            subs.push(tx);
        }
        rx
    }

    /// Sends `event` to every live subscriber.
    pub fn emit(&self, event: AgentEvent) {
        if let Ok(mut subs) = self.subscribers.lock() {
            subs.retain(|s| s.send(event.clone()).is_ok());
        }
        if let Ok(ui) = self.ui.lock()
            && let Some(ui) = ui.as_ref()
        {
            ui.notify(crate::event::RuntimeEvent::Agent(Box::new(event)));
        }
    }
}

/// What a run leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// Nothing: the agent is idle.
    Idle,
    /// The reply failed transiently and the retry wait is over: send the context again.
    ErrorRetry,
    /// The reply overflowed and the session was compacted: send it again without the reply.
    OverflowRetry,
}

/// Messages of the Agent.
#[derive(Debug)]
pub enum AgentMsg {
    /// Start a run with this prompt text; answered once the run has started, or with
    /// `Agent is already processing…` while one runs (queue it with `Steer`/`FollowUp`).
    Prompt(TraceIds, String, RpcReplyPort<Result<(), String>>),
    /// Queue a steering message (delivered after the current tool calls).
    Steer(String),
    /// Queue a follow-up (delivered when the run would otherwise end).
    FollowUp(String),
    /// Abort the current run; answered when the agent is idle.
    Abort(RpcReplyPort<()>),
    /// Answered with whether no run is active.
    IsIdle(RpcReplyPort<bool>),
    /// Answered once no run is active: after `agent_end`, the compaction check, an overflow
    /// retry and any prompt that waited for them.
    WhenIdle(RpcReplyPort<()>),
    /// The run compacts (before its prompt) or is about to emit `agent_end` (`true`), or
    /// goes on with its turns (`false`) (internal): prompts sent meanwhile wait for the run
    /// instead of being refused.
    Deferring(bool),
    /// The run task finished (internal).
    RunFinished,
    /// Run a user shell command (`!cmd`; `true` for `!!cmd`, kept out of the context) in the
    /// session cwd (spec: agent-and-events.md §5); answered with the recorded message when it
    /// finished, or an error when another one is running. Recorded at once when idle, else
    /// at the start of the next prompt, as pi does.
    Bash(
        String,
        bool,
        RpcReplyPort<Result<BashExecutionMessage, String>>,
    ),
    /// Cancel the running user command.
    AbortBash,
    /// Use this model from the next request on (a running request finishes on the old one).
    SetModel(Arc<dyn Provider>, (String, String)),
    /// Use this thinking level from the next request on.
    SetThinkingLevel(String),
    /// A user command finished (internal).
    BashDone(
        Box<BashExecutionMessage>,
        RpcReplyPort<Result<BashExecutionMessage, String>>,
    ),
}

/// What the agent needs from its subtree.
#[derive(Clone)]
pub struct AgentArgs {
    /// Persists messages.
    pub writer: ActorRef<WriterMsg>,
    /// Answers context requests.
    pub projection: ActorRef<ProjectionMsg>,
    /// The model.
    pub provider: Arc<dyn Provider>,
    /// `(provider, model id)` requested.
    pub model: (String, String),
    /// Thinking level.
    pub thinking_level: String,
    /// Tools the model may call.
    pub tools: Toolset,
    /// The session's working directory: tools resolve paths against it.
    pub cwd: std::path::PathBuf,
    /// The system prompt sent with every request of a run; `None` sends none.
    pub system_prompt: Option<String>,
    /// Where events go.
    pub events: EventSink,
    /// Timestamps of messages.
    pub clock: Arc<dyn Clock>,
    /// Session id, for spans.
    pub session_id: String,
    /// The session cwd's settings (queue modes).
    pub settings: crate::settings::Settings,
    /// Extensions, in load order: each event is handled by all of them before the run goes
    /// on (so an entry an extension appends on `message_end` lands before the message, as in
    /// pi), then it goes to frontends.
    /// Each with the event names it subscribed to; it is sent no others.
    pub extensions: Vec<(ActorRef<ExtensionMsg>, Vec<String>)>,
    /// Decides after each run whether to compact.
    pub compactor: ActorRef<CompactorMsg>,
}

#[derive(Default)]
struct Queues {
    steering: VecDeque<String>,
    follow_up: VecDeque<String>,
}

/// The agent's state.
pub struct AgentState {
    args: Arc<AgentArgs>,
    queues: Arc<Mutex<Queues>>,
    retry_attempt: Arc<std::sync::atomic::AtomicU32>,
    abort: Option<watch::Sender<bool>>,
    /// Aborts waiting for the current run to end.
    waiting_for_idle: Vec<RpcReplyPort<()>>,
    /// [`AgentMsg::WhenIdle`] callers: answered when no run is left, waiting prompts included.
    waiting_for_rest: Vec<RpcReplyPort<()>>,
    /// The run is compacting or past `agent_end`: prompts wait in `deferred`.
    deferring: bool,
    /// Prompts that arrived while deferring, oldest first.
    deferred: VecDeque<(TraceIds, String)>,
    /// Cancels the running user command; `None` when none runs.
    bash_abort: Option<watch::Sender<bool>>,
    /// User commands that finished during a run: recorded before the next prompt.
    pending_bash: Vec<AgentMessage>,
}

/// The Agent actor.
pub struct Agent;

impl Agent {
    fn start_run(me: &ActorRef<AgentMsg>, state: &mut AgentState, ids: TraceIds, text: String) {
        let (tx, rx) = watch::channel(false);
        state.abort = Some(tx);
        let run = Run {
            args: state.args.clone(),
            queues: state.queues.clone(),
            abort: rx,
            ids,
            me: me.clone(),
            last_reply: Mutex::new(None),
            retry_attempt: state.retry_attempt.clone(),
            pending_bash: std::mem::take(&mut state.pending_bash),
            overflowed: None,
        };
        let span = crate::message_span!("Agent", "prompt", state.args.session_id, ids);
        let me = me.clone();
        tokio::spawn(
            async move {
                let mut run = run;
                let mut text = Some(text);
                loop {
                    let after = run.run(text.take()).await;
                    if *run.abort.borrow() {
                        break;
                    }
                    match after {
                        After::Idle => break,
                        // A transient error: the same context again (the failed reply is
                        // left out of every request, agent-and-events.md §4).
                        After::ErrorRetry => {}
                        // An overflowed reply is retried once, after the Compactor compacted.
                        After::OverflowRetry => {
                            if run.overflowed.is_some() {
                                break;
                            }
                            run.overflowed = run.last_reply.lock().ok().and_then(|mut r| r.take());
                        }
                    }
                }
                let _ = me.cast(AgentMsg::RunFinished);
            }
            .instrument(span),
        );
    }
}

impl Actor for Agent {
    type Msg = AgentMsg;
    type State = AgentState;
    type Arguments = AgentArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<AgentMsg>,
        args: AgentArgs,
    ) -> Result<AgentState, ActorProcessingErr> {
        Ok(AgentState {
            args: Arc::new(args),
            queues: Arc::default(),
            retry_attempt: Arc::default(),
            abort: None,
            waiting_for_idle: Vec::new(),
            waiting_for_rest: Vec::new(),
            deferring: false,
            deferred: VecDeque::new(),
            bash_abort: None,
            pending_bash: Vec::new(),
        })
    }

    async fn handle(
        &self,
        me: ActorRef<AgentMsg>,
        msg: AgentMsg,
        state: &mut AgentState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            AgentMsg::Prompt(ids, text, reply) => {
                if state.deferring {
                    // A compaction may be running: the prompt waits and starts when the run
                    // is over (prompts sent during a compaction are not lost).
                    state.deferred.push_back((ids, text));
                    let _ = reply.send(Ok(()));
                    return Ok(());
                }
                if state.abort.is_some() {
                    let _ = reply.send(Err("Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion.".into()));
                    return Ok(());
                }
                Self::start_run(&me, state, ids, text);
                let _ = reply.send(Ok(()));
            }
            AgentMsg::Deferring(on) => state.deferring = on,
            AgentMsg::Bash(command, exclude, reply) => {
                if state.bash_abort.is_some() {
                    let _ = reply.send(Err("A bash command is already running".into()));
                    return Ok(());
                }
                let (tx, rx) = watch::channel(false);
                state.bash_abort = Some(tx);
                let args = state.args.clone();
                let me = me.clone();
                tokio::spawn(async move {
                    let prefix = args.settings.shell_command_prefix();
                    let result = crate::tools::bash::execute_bash(
                        &command,
                        &args.cwd,
                        prefix.as_deref(),
                        rx,
                    )
                    .await;
                    let message = BashExecutionMessage {
                        command,
                        output: result.output,
                        exit_code: result.exit_code,
                        cancelled: result.cancelled,
                        truncated: result.truncated,
                        full_output_path: result.full_output_path,
                        timestamp: args.clock.now_ms(),
                        exclude_from_context: exclude.then_some(true),
                    };
                    let _ = me.cast(AgentMsg::BashDone(Box::new(message), reply));
                });
            }
            AgentMsg::SetModel(provider, model) => {
                let mut args = (*state.args).clone();
                args.provider = provider;
                args.model = model;
                state.args = Arc::new(args);
            }
            AgentMsg::SetThinkingLevel(level) => {
                let mut args = (*state.args).clone();
                args.thinking_level = level;
                state.args = Arc::new(args);
            }
            AgentMsg::AbortBash => {
                if let Some(tx) = &state.bash_abort {
                    let _ = tx.send(true);
                }
            }
            AgentMsg::BashDone(message, reply) => {
                state.bash_abort = None;
                let recorded = AgentMessage::BashExecution((*message).clone());
                if state.abort.is_none() && !state.deferring {
                    let append = Append::Message(Box::new(recorded));
                    let written = state
                        .args
                        .writer
                        .call(
                            |r| WriterMsg::Append(TraceIds::root(0, "Agent"), append, r),
                            Some(CALL_TIMEOUT),
                        )
                        .await;
                    if !matches!(written, Ok(ractor::rpc::CallResult::Success(Ok(_)))) {
                        tracing::error!("could not record a user command");
                    }
                } else {
                    // Appended now it would split the run's chain of entries.
                    state.pending_bash.push(recorded);
                }
                let _ = reply.send(Ok(*message));
            }
            AgentMsg::Steer(text) => {
                if let Ok(mut q) = state.queues.lock() {
                    q.steering.push_back(text);
                }
                emit_queue(&state.args.events, &state.queues);
            }
            AgentMsg::FollowUp(text) => {
                if let Ok(mut q) = state.queues.lock() {
                    q.follow_up.push_back(text);
                }
                emit_queue(&state.args.events, &state.queues);
            }
            AgentMsg::Abort(reply) => match &state.abort {
                Some(tx) => {
                    let _ = tx.send(true);
                    state.waiting_for_idle.push(reply);
                }
                None => {
                    let _ = reply.send(());
                }
            },
            AgentMsg::IsIdle(reply) => {
                let _ = reply.send(state.abort.is_none());
            }
            AgentMsg::WhenIdle(reply) => {
                if state.abort.is_none() {
                    let _ = reply.send(());
                } else {
                    state.waiting_for_rest.push(reply);
                }
            }
            AgentMsg::RunFinished => {
                state.abort = None;
                state.deferring = false;
                // The run an abort waited for is over, even if a waiting prompt starts now.
                for waiter in state.waiting_for_idle.drain(..) {
                    let _ = waiter.send(());
                }
                if let Some((ids, text)) = state.deferred.pop_front() {
                    // Later ones follow it, as prompts queued during a run would. Whoever
                    // waits for the rest waits for this run too: it was asked for before.
                    if let Ok(mut q) = state.queues.lock() {
                        q.follow_up.extend(state.deferred.drain(..).map(|(_, t)| t));
                    }
                    Self::start_run(&me, state, ids, text);
                } else {
                    for waiter in state.waiting_for_rest.drain(..) {
                        let _ = waiter.send(());
                    }
                }
            }
        }
        Ok(())
    }
}

fn emit_queue(events: &EventSink, queues: &Arc<Mutex<Queues>>) {
    if let Ok(q) = queues.lock() {
        events.emit(AgentEvent::QueueUpdate {
            steering: q.steering.iter().cloned().collect(),
            follow_up: q.follow_up.iter().cloned().collect(),
        });
    }
}

/// One run of the loop.
struct Run {
    args: Arc<AgentArgs>,
    queues: Arc<Mutex<Queues>>,
    abort: watch::Receiver<bool>,
    ids: TraceIds,
    me: ActorRef<AgentMsg>,
    /// The last reply of the run, for the Compactor.
    last_reply: Mutex<Option<AssistantMessage>>,
    /// User commands to record before the prompt.
    pending_bash: Vec<AgentMessage>,
    /// Retries made since the last reply that was not an error; shared by all runs of the
    /// session because pi's counter outlives a prompt (agent-and-events.md §4).
    retry_attempt: Arc<std::sync::atomic::AtomicU32>,
    /// In an overflow retry: the reply that overflowed. It stays in the log but is not sent
    /// again (pi drops it from the agent's messages).
    overflowed: Option<AssistantMessage>,
}

impl Run {
    fn user(&self, text: String) -> AgentMessage {
        AgentMessage::user_text(text, self.args.clock.now_ms())
    }

    /// The queued messages to deliver now: one (pi's default `one-at-a-time`) or all,
    /// per the `steeringMode` / `followUpMode` settings.
    fn poll(&self, steering: bool) -> Vec<String> {
        use crate::settings::QueueMode;
        let mode = if steering {
            self.args.settings.steering_mode()
        } else {
            self.args.settings.follow_up_mode()
        };
        let texts: Vec<String> = self
            .queues
            .lock()
            .map(|mut q| {
                let queue = if steering {
                    &mut q.steering
                } else {
                    &mut q.follow_up
                };
                match mode {
                    QueueMode::OneAtATime => queue.pop_front().into_iter().collect(),
                    QueueMode::All => queue.drain(..).collect(),
                }
            })
            .unwrap_or_default();
        if !texts.is_empty() {
            emit_queue(&self.args.events, &self.queues);
        }
        texts
    }

    async fn persist(&self, message: &AgentMessage) {
        let append = Append::Message(Box::new(message.clone()));
        let result = self
            .args
            .writer
            .call(
                |r| WriterMsg::Append(self.ids.sent_by("Agent"), append, r),
                Some(CALL_TIMEOUT),
            )
            .await;
        match result {
            Ok(ractor::rpc::CallResult::Success(Ok(_))) => {}
            Ok(ractor::rpc::CallResult::Success(Err(e))) => {
                tracing::error!("could not persist a message: {e}")
            }
            Ok(_) | Err(_) => tracing::error!("the session writer did not answer an append"),
        }
    }

    async fn sync(&self) {
        let _ = self
            .args
            .writer
            .call(
                |r| WriterMsg::Sync(self.ids.sent_by("Agent"), r),
                Some(CALL_TIMEOUT),
            )
            .await;
    }

    /// Emits an event: every extension that subscribed to it handles it (awaited, in load
    /// order), then frontends get it.
    async fn emit(&self, event: AgentEvent) {
        let name = event.name();
        for (ext, _) in self
            .args
            .extensions
            .iter()
            .filter(|(_, subs)| subs.iter().any(|s| s == name))
        {
            let ev = Box::new(pith_events::ExtensionEvent::Agent(Box::new(event.clone())));
            let _ = ext
                .call(
                    |r| ExtensionMsg::Event(self.ids.sent_by("Agent"), ev, Vec::new(), r),
                    Some(CALL_TIMEOUT),
                )
                .await;
        }
        self.args.events.emit(event);
    }

    /// A message that is persisted on `message_end`: start, end, append.
    async fn deliver(&self, message: AgentMessage) {
        self.emit(AgentEvent::MessageStart {
            message: message.clone(),
        })
        .await;
        self.emit(AgentEvent::MessageEnd {
            message: message.clone(),
        })
        .await;
        self.persist(&message).await;
    }

    async fn context(&self) -> Vec<AgentMessage> {
        match self
            .args
            .projection
            .call(
                |r| ProjectionMsg::GetContext(self.ids.sent_by("Agent"), r),
                Some(CALL_TIMEOUT),
            )
            .await
        {
            // Repaired per request, never in the file (tool_pairs module docs).
            Ok(ractor::rpc::CallResult::Success(ctx)) => {
                let mut messages = convert_to_llm(&ctx.messages);
                if let Some(overflowed) = &self.overflowed {
                    messages
                        .retain(|m| !matches!(m, AgentMessage::Assistant(a) if a == overflowed));
                }
                pair_tool_calls(messages)
            }
            _ => Vec::new(),
        }
    }

    async fn stream(&self) -> AssistantMessage {
        let request = ProviderRequest {
            provider: self.args.model.0.clone(),
            model: self.args.model.1.clone(),
            thinking_level: self.args.thinking_level.clone(),
            system_prompt: self.args.system_prompt.clone(),
            messages: self.context().await,
            tools: self.args.tools.specs(),
            max_tokens: None,
        };
        let mut events = self.args.provider.stream(request, self.abort.clone());
        let mut started = false;
        while let Some(event) = events.recv().await {
            match event {
                ProviderEvent::Start(partial) => {
                    started = true;
                    self.emit(AgentEvent::MessageStart {
                        message: AgentMessage::Assistant(partial),
                    })
                    .await;
                }
                ProviderEvent::Update { update, partial } => {
                    self.emit(AgentEvent::MessageUpdate {
                        message: AgentMessage::Assistant(partial),
                        update,
                    })
                    .await;
                }
                ProviderEvent::Done(message) => {
                    if !started {
                        self.emit(AgentEvent::MessageStart {
                            message: AgentMessage::Assistant(message.clone()),
                        })
                        .await;
                    }
                    return message;
                }
            }
        }
        // A provider that ends without Done is a provider bug; the run ends with an error.
        AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some("the provider's stream ended without a final message".into()),
            ..AssistantMessage::new(
                self.args.provider.name(),
                self.args.model.0.clone(),
                self.args.model.1.clone(),
                Vec::new(),
                self.args.clock.now_ms(),
            )
        }
    }

    /// One run: `text` as the prompt, or none to send the context again (an overflow retry).
    async fn run(&self, text: Option<String>) -> After {
        if text.is_some() {
            // Retries (no text) must not record them twice.
            for bash in &self.pending_bash {
                self.persist(bash).await;
            }
            // pi checks the last reply before each prompt too, before agent_start: compaction
            // may have been off, or the session was resumed over the threshold.
            let ids = self.ids.sent_by("Agent");
            let _ = self.me.cast(AgentMsg::Deferring(true));
            let _ = self
                .args
                .compactor
                .call(|r| CompactorMsg::BeforePrompt(ids, r), None)
                .await;
            let _ = self.me.cast(AgentMsg::Deferring(false));
        }
        let mut new_messages = Vec::new();
        self.emit(AgentEvent::AgentStart).await;
        let mut turn_index = 0u32;
        self.emit(AgentEvent::TurnStart {
            turn_index,
            timestamp: self.args.clock.now_ms(),
        })
        .await;
        if let Some(text) = text {
            let prompt = self.user(text);
            self.deliver(prompt.clone()).await;
            new_messages.push(prompt);
        }
        let mut pending: Vec<AgentMessage> =
            self.poll(true).into_iter().map(|t| self.user(t)).collect();
        let mut more_tool_calls = true;
        let mut first = true;
        loop {
            while more_tool_calls || !pending.is_empty() {
                if !first {
                    self.emit(AgentEvent::TurnStart {
                        turn_index,
                        timestamp: self.args.clock.now_ms(),
                    })
                    .await;
                }
                first = false;
                for m in pending.drain(..) {
                    self.deliver(m.clone()).await;
                    new_messages.push(m);
                }
                let reply = self.stream().await;
                let message = AgentMessage::Assistant(reply.clone());
                self.emit(AgentEvent::MessageEnd {
                    message: message.clone(),
                })
                .await;
                self.persist(&message).await;
                new_messages.push(message.clone());
                if reply.stop_reason != StopReason::Error {
                    let attempt = self
                        .retry_attempt
                        .swap(0, std::sync::atomic::Ordering::SeqCst);
                    if attempt > 0 {
                        self.emit(AgentEvent::AutoRetryEnd {
                            success: true,
                            attempt,
                            final_error: None,
                        })
                        .await;
                    }
                }
                if matches!(reply.stop_reason, StopReason::Error | StopReason::Aborted) {
                    self.emit(AgentEvent::TurnEnd {
                        turn_index,
                        message,
                        tool_results: Vec::new(),
                    })
                    .await;
                    self.sync().await;
                    return self.finish(new_messages).await;
                }
                let calls: Vec<(String, String, Value)> = reply
                    .tool_calls()
                    .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
                    .collect();
                let results = self.run_tools(&calls).await;
                for result in &results {
                    self.deliver(result.clone()).await;
                    new_messages.push(result.clone());
                }
                self.emit(AgentEvent::TurnEnd {
                    turn_index,
                    message,
                    tool_results: results,
                })
                .await;
                self.sync().await;
                turn_index += 1;
                more_tool_calls = !calls.is_empty();
                pending.extend(self.poll(true).into_iter().map(|t| self.user(t)));
            }
            let follow_ups = self.poll(false);
            if follow_ups.is_empty() {
                break;
            }
            pending.extend(follow_ups.into_iter().map(|t| self.user(t)));
        }
        self.finish(new_messages).await
    }

    /// `agent_end`, then pi's compaction check on the run's last reply (compaction.md §3).
    /// Prompts sent from the moment `agent_end` can be seen wait until this returns.
    async fn finish(&self, new_messages: Vec<AgentMessage>) -> After {
        let _ = self.me.cast(AgentMsg::Deferring(true));
        let last_reply = new_messages.iter().rev().find_map(|m| match m {
            AgentMessage::Assistant(a) => Some(a.clone()),
            _ => None,
        });
        self.emit(AgentEvent::AgentEnd {
            messages: new_messages,
        })
        .await;
        let Some(reply) = last_reply else {
            return After::Idle;
        };
        if self.retry_later(&reply).await {
            return After::ErrorRetry;
        }
        if let Ok(mut last) = self.last_reply.lock() {
            *last = Some(reply.clone());
        }
        let ids = self.ids.sent_by("Agent");
        let retried = self.overflowed.is_some();
        // No timeout: a summary is a full model reply; the Compactor always answers.
        match self
            .args
            .compactor
            .call(
                |r| CompactorMsg::AfterRun(ids, Box::new(reply), retried, r),
                None,
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(NextStep::Retry)) => After::OverflowRetry,
            _ => After::Idle,
        }
    }
}
