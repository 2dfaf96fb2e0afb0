//! Agent: pi's agent loop (spec: agent-and-events.md §1–3).
//!
//! A run (one `prompt`) is a task the Agent actor spawns (`run.rs`), so that steering,
//! follow-ups and abort keep flowing through the mailbox while the run streams. The run
//! persists through the SessionWriter on `message_end` of user, assistant, toolResult and
//! custom messages, awaiting each append: entries reach the file in event order. It asks the
//! Projection for the context before every model call and fsyncs at every turn end. User
//! commands (`!cmd`) run beside it (`user_command.rs`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use pith_events::{AgentEvent, AgentMessage, ModelRef, ThinkingLevel};
use pith_llm::provider::Provider;
use pith_store::env::Clock;
use pith_tools::tool::Toolset;

use crate::RuntimeError;
use crate::compactor::CompactorMsg;
use crate::envelope::{Envelope, MessageKind, Origin};
use crate::event::EventSink;
use crate::extension_host::Extensions;
use crate::projection::ProjectionRef;
use crate::trace::{ActorName, Trace};
use crate::writer::WriterRef;

mod auto_retry;
mod images;
pub mod messages;
mod run;
mod tool_calls;
mod user_command;

#[cfg(test)]
mod tests;

use run::Run;

pub use messages::{AgentMsg, QueuedMessages, UserCommand, UserInput};

/// What a run leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// Nothing: the agent is idle.
    Idle,
    /// The reply failed transiently and the retry wait is over: send the context again.
    ErrorRetry,
    /// The reply overflowed and the session was compacted: send it again without the reply.
    OverflowRetry,
    /// An extension handled the prompt (`input` → `handled`): nothing ran.
    Handled,
}

/// What the agent needs from its subtree.
#[derive(Clone)]
pub struct AgentArgs {
    /// Persists messages.
    pub writer: WriterRef,
    /// Answers context requests.
    pub projection: ProjectionRef,
    /// The model.
    pub provider: Arc<dyn Provider>,
    /// Which model is requested.
    pub model: ModelRef,
    /// Thinking level.
    pub thinking_level: ThinkingLevel,
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
    /// The session cwd's settings (queue modes, retries, the shell command prefix).
    pub settings: crate::settings::Settings,
    /// Extensions: each event is handled by those that subscribed to it before the run goes
    /// on (so an entry an extension appends on `message_end` lands before the message, as in
    /// pi), then it goes to frontends.
    pub extensions: Extensions,
    /// Decides after each run whether to compact.
    pub compactor: ActorRef<Envelope<CompactorMsg>>,
}

/// Steering and follow-up messages waiting for the run.
#[derive(Default)]
struct Queues {
    steering: VecDeque<UserInput>,
    follow_up: VecDeque<UserInput>,
    /// What `queue_update` shows: pi keeps the displayed lists apart from the agent's
    /// queues and takes a text off them when its user message starts (agent-and-events.md
    /// §2 step 1), so a queued message leaves the display as it enters the transcript.
    shown_steering: Vec<String>,
    shown_follow_up: Vec<String>,
    /// Extension messages steered into the run, with their `triggerTurn`.
    custom_steering: VecDeque<(pith_events::CustomMessage, bool)>,
    /// Extension messages delivered when the run would end, with their `triggerTurn`.
    custom_follow_up: VecDeque<(pith_events::CustomMessage, bool)>,
    /// Extension messages held for the next prompt (`deliverAs: "nextTurn"`).
    next_turn: Vec<pith_events::CustomMessage>,
}

/// The agent's state.
pub struct AgentState {
    args: Arc<AgentArgs>,
    queues: Arc<Mutex<Queues>>,
    retry_attempt: Arc<std::sync::atomic::AtomicU32>,
    /// Cancels the current run; `None` when no run is active.
    abort: Option<CancellationToken>,
    /// [`AgentMsg::Abort`] callers: answered when the current run has ended.
    waiting_for_run_end: Vec<RpcReplyPort<()>>,
    /// [`AgentMsg::WhenIdle`] callers: answered when no run is left, waiting prompts included.
    waiting_for_idle: Vec<RpcReplyPort<()>>,
    /// The run is compacting or past `agent_end`: prompts wait in `deferred`.
    deferring: bool,
    /// Prompts that arrived while deferring, oldest first, with their traces.
    deferred: VecDeque<(Trace, UserInput)>,
    /// Cancels the running user command; `None` when none runs.
    bash_abort: Option<CancellationToken>,
    /// User commands that finished during a run: recorded before the next prompt.
    pending_bash: Vec<AgentMessage>,
    /// [`AgentMsg::Settle`] callers: answered when nothing accepted is left to run.
    settling: Vec<RpcReplyPort<()>>,
}

/// The Agent actor.
pub struct Agent;

impl Agent {
    /// Starts a run for the prompt traced by `cause`; its messages are caused by it, and its
    /// span stays open until the run ends.
    fn start_run(
        me: &ActorRef<Envelope<AgentMsg>>,
        state: &mut AgentState,
        cause: &Trace,
        input: Option<UserInput>,
        leading: Vec<AgentMessage>,
    ) {
        let abort = CancellationToken::new();
        state.abort = Some(abort.clone());
        let from = Origin::new(ActorName::Agent, cause);
        let run = Run {
            args: state.args.clone(),
            queues: state.queues.clone(),
            abort,
            from,
            me: me.clone(),
            last_reply: Mutex::new(None),
            retry_attempt: state.retry_attempt.clone(),
            pending_bash: std::mem::take(&mut state.pending_bash),
            overflowed: None,
            attempt: Mutex::new(Vec::new()),
            system_prompt: Mutex::new(state.args.system_prompt.clone()),
            leading: Mutex::new(leading),
        };
        // Not a "message" span: the run is the prompt's work, not a message of its own.
        let span = tracing::info_span!(
            "run",
            actor = "Agent",
            session = %state.args.session_id,
            correlation = cause.correlation,
        );
        tokio::spawn(
            async move {
                let mut run = run;
                let mut input = input;
                let mut handled = false;
                loop {
                    let after = run.run(input.take()).await;
                    if run.abort.is_cancelled() {
                        break;
                    }
                    match after {
                        After::Idle => break,
                        After::Handled => {
                            handled = true;
                            break;
                        }
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
                if !handled {
                    // Retries and overflow recovery are over: the prompt has settled (§2),
                    // for frontends and extensions alike (pi's agent_settled).
                    let aborted = run.abort.is_cancelled();
                    run.emit(AgentEvent::AgentSettled { aborted }).await;
                    let settled = pith_events::ExtensionEvent::AgentSettled { aborted };
                    run.args.extensions.tell(&run.from, settled, &[]).await;
                }
                run.from.cast(&run.me, AgentMsg::RunFinished);
            }
            .instrument(span),
        );
    }

    async fn custom_message(
        me: &ActorRef<Envelope<AgentMsg>>,
        state: &mut AgentState,
        trace: &Trace,
        message: pith_events::CustomMessage,
        deliver_as: Option<String>,
        trigger_turn: bool,
    ) {
        let mut message = message;
        message.timestamp = Some(state.args.clock.now_ms());
        let running = state.abort.is_some() || state.deferring;
        if let Ok(mut q) = state.queues.lock() {
            match (deliver_as.as_deref(), running) {
                (Some("nextTurn"), _) => {
                    q.next_turn.push(message);
                    return;
                }
                (Some("followUp"), true) => {
                    q.custom_follow_up.push_back((message, trigger_turn));
                    return;
                }
                (_, true) => {
                    q.custom_steering.push_back((message, trigger_turn));
                    return;
                }
                (_, false) => {}
            }
        }
        let message = AgentMessage::Custom(message);
        if trigger_turn {
            Self::start_run(me, state, trace, None, vec![message]);
            return;
        }
        // Recorded as it is; frontends see it, extensions do not (pi).
        let from = Origin::new(ActorName::Agent, trace);
        if let AgentMessage::Custom(c) = &message {
            let append = crate::writer::Append::CustomMessage {
                custom_type: c.custom_type.clone(),
                content: c.content.clone(),
                display: c.display,
                details: c.details.clone(),
            };
            if let Err(e) = state.args.writer.append(&from, append).await {
                tracing::error!("could not record an extension message: {e}");
            }
        }
        state.args.events.emit(AgentEvent::MessageStart {
            message: message.clone(),
        });
        state.args.events.emit(AgentEvent::MessageEnd { message });
    }

    /// Idle with no prompt waiting: while a switch waits to settle, a queued steering or
    /// follow-up message starts one more run (it was accepted: it runs here, not nowhere);
    /// otherwise the idle waiters and the settle waiters are answered.
    fn run_or_settle(me: &ActorRef<Envelope<AgentMsg>>, state: &mut AgentState, cause: &Trace) {
        if !state.settling.is_empty() {
            let next = state
                .queues
                .lock()
                .ok()
                .and_then(|mut q| q.steering.pop_front().or_else(|| q.follow_up.pop_front()));
            if let Some(input) = next {
                Self::start_run(me, state, cause, Some(input), Vec::new());
                return;
            }
        }
        for waiter in state.waiting_for_idle.drain(..) {
            let _ = waiter.send(());
        }
        for waiter in state.settling.drain(..) {
            let _ = waiter.send(());
        }
    }

    fn with_args(state: &mut AgentState, change: impl FnOnce(&mut AgentArgs)) {
        let mut args = (*state.args).clone();
        change(&mut args);
        state.args = Arc::new(args);
    }

    async fn on(
        me: &ActorRef<Envelope<AgentMsg>>,
        state: &mut AgentState,
        trace: &Trace,
        msg: AgentMsg,
    ) {
        let from = Origin::new(ActorName::Agent, trace);
        match msg {
            AgentMsg::Prompt { input, reply } => {
                if state.deferring {
                    // A compaction may be running: the prompt waits and starts when the run
                    // is over (prompts sent during a compaction are not lost).
                    state.deferred.push_back((trace.clone(), input));
                    let _ = reply.send(Ok(()));
                    return;
                }
                if state.abort.is_some() {
                    let _ = reply.send(Err(RuntimeError::AgentBusy));
                    return;
                }
                Self::start_run(me, state, trace, Some(input), Vec::new());
                let _ = reply.send(Ok(()));
            }
            AgentMsg::CustomMessage {
                message,
                deliver_as,
                trigger_turn,
            } => Self::custom_message(me, state, trace, *message, deliver_as, trigger_turn).await,
            AgentMsg::Deferring { deferring } => state.deferring = deferring,
            AgentMsg::Bash { command, reply } => {
                Self::start_user_command(me, state, &from, command, reply)
            }
            AgentMsg::BashDone { message, reply } => {
                Self::user_command_done(state, &from, *message, reply).await;
            }
            AgentMsg::AbortBash => {
                if let Some(abort) = &state.bash_abort {
                    abort.cancel();
                }
            }
            AgentMsg::SetModel { provider, model } => Self::with_args(state, |args| {
                args.provider = provider;
                args.model = model;
            }),
            AgentMsg::SetThinkingLevel { level } => {
                Self::with_args(state, |args| args.thinking_level = level)
            }
            AgentMsg::SetSettings { settings } => {
                Self::with_args(state, |args| args.settings = settings)
            }
            AgentMsg::SetSystemPrompt { prompt } => {
                Self::with_args(state, |args| args.system_prompt = Some(prompt))
            }
            AgentMsg::Steer { input } => {
                if let Ok(mut q) = state.queues.lock() {
                    q.shown_steering.push(input.text.clone());
                    q.steering.push_back(input);
                }
                emit_queue(&state.args.events, &state.queues);
            }
            AgentMsg::FollowUp { input } => {
                if let Ok(mut q) = state.queues.lock() {
                    q.shown_follow_up.push(input.text.clone());
                    q.follow_up.push_back(input);
                }
                emit_queue(&state.args.events, &state.queues);
            }
            AgentMsg::ClearQueue { reply } => {
                let removed = state
                    .queues
                    .lock()
                    .map(|mut q| {
                        q.shown_steering.clear();
                        q.shown_follow_up.clear();
                        QueuedMessages {
                            steering: q.steering.drain(..).map(|i| i.text).collect(),
                            follow_up: q.follow_up.drain(..).map(|i| i.text).collect(),
                        }
                    })
                    .unwrap_or_default();
                // The event first: a client sees `queue_update`, then the response.
                emit_queue(&state.args.events, &state.queues);
                let _ = reply.send(removed);
            }
            AgentMsg::Abort { reply } => match &state.abort {
                Some(abort) => {
                    abort.cancel();
                    state.waiting_for_run_end.push(reply);
                }
                None => {
                    let _ = reply.send(());
                }
            },
            AgentMsg::Settle { reply } => {
                state.settling.push(reply);
                match &state.abort {
                    // RunFinished goes on from here.
                    Some(abort) => abort.cancel(),
                    None => Self::run_or_settle(me, state, trace),
                }
            }
            AgentMsg::IsIdle { reply } => {
                let _ = reply.send(state.abort.is_none());
            }
            AgentMsg::WhenIdle { reply } => {
                if state.abort.is_none() {
                    let _ = reply.send(());
                } else {
                    state.waiting_for_idle.push(reply);
                }
            }
            AgentMsg::RunFinished => {
                state.abort = None;
                state.deferring = false;
                // The run an abort waited for is over, even if a waiting prompt starts now.
                for waiter in state.waiting_for_run_end.drain(..) {
                    let _ = waiter.send(());
                }
                if let Some((cause, input)) = state.deferred.pop_front() {
                    // Later ones follow it, as prompts queued during a run would. Whoever
                    // waits for the rest waits for this run too: it was asked for before.
                    if let Ok(mut q) = state.queues.lock() {
                        for (_, t) in state.deferred.drain(..) {
                            q.shown_follow_up.push(t.text.clone());
                            q.follow_up.push_back(t);
                        }
                    }
                    Self::start_run(me, state, &cause, Some(input), Vec::new());
                    return;
                }
                // Extension messages that arrived after the run's last look at its queues
                // (an `agent_settled` handler's sendMessage): they start the next run.
                let stranded: Vec<(pith_events::CustomMessage, bool)> = state
                    .queues
                    .lock()
                    .map(|mut q| {
                        let mut all: Vec<_> = q.custom_steering.drain(..).collect();
                        all.extend(q.custom_follow_up.drain(..));
                        all
                    })
                    .unwrap_or_default();
                if stranded.iter().any(|(_, trigger)| *trigger) {
                    let leading = stranded
                        .into_iter()
                        .map(|(m, _)| AgentMessage::Custom(m))
                        .collect();
                    Self::start_run(me, state, trace, None, leading);
                    return;
                }
                for (message, _) in stranded {
                    // Idle now: recorded as it is, as if it had come a moment later.
                    Box::pin(Self::custom_message(me, state, trace, message, None, false)).await;
                }
                Self::run_or_settle(me, state, trace);
            }
        }
    }
}

impl Actor for Agent {
    type Msg = Envelope<AgentMsg>;
    type State = AgentState;
    type Arguments = AgentArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<Envelope<AgentMsg>>,
        args: AgentArgs,
    ) -> Result<AgentState, ActorProcessingErr> {
        Ok(AgentState {
            args: Arc::new(args),
            queues: Arc::default(),
            retry_attempt: Arc::default(),
            abort: None,
            waiting_for_run_end: Vec::new(),
            waiting_for_idle: Vec::new(),
            deferring: false,
            deferred: VecDeque::new(),
            bash_abort: None,
            pending_bash: Vec::new(),
            settling: Vec::new(),
        })
    }

    async fn handle(
        &self,
        me: ActorRef<Envelope<AgentMsg>>,
        Envelope { trace, msg }: Envelope<AgentMsg>,
        state: &mut AgentState,
    ) -> Result<(), ActorProcessingErr> {
        let span = trace.span(&ActorName::Agent, msg.kind(), &state.args.session_id);
        Self::on(&me, state, &trace, msg).instrument(span).await;
        Ok(())
    }
}

/// Tells frontends and extensions what is queued (`queue_update`).
fn emit_queue(events: &EventSink, queues: &Arc<Mutex<Queues>>) {
    if let Ok(q) = queues.lock() {
        events.emit(AgentEvent::QueueUpdate {
            steering: q.shown_steering.clone(),
            follow_up: q.shown_follow_up.clone(),
        });
    }
}

/// pi's step 1 for a user message that starts: its text leaves the shown steering list, else
/// the shown follow-up list, and `queue_update` says so (nothing when neither held it).
fn unshow_queued(events: &EventSink, queues: &Arc<Mutex<Queues>>, text: &str) {
    let removed = queues.lock().is_ok_and(|mut q| {
        if let Some(i) = q.shown_steering.iter().position(|t| t == text) {
            q.shown_steering.remove(i);
            true
        } else if let Some(i) = q.shown_follow_up.iter().position(|t| t == text) {
            q.shown_follow_up.remove(i);
            true
        } else {
            false
        }
    });
    if removed {
        emit_queue(events, queues);
    }
}
