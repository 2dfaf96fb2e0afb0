//! One run of pi's agent loop (spec: agent-and-events.md §1–3): turns of model replies and
//! tool calls, steering and follow-ups, persistence on `message_end`, then the compaction
//! check after `agent_end`.

use std::sync::{Arc, Mutex};

use ractor::ActorRef;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use pith_events::{
    AgentEvent, AgentMessage, AssistantMessage, ContentBlock, CustomMessage, StopReason,
    UserContent,
};
use pith_llm::provider::{ProviderEvent, ProviderRequest};
use pith_llm::tool_pairs::pair_tool_calls;
use pith_store::llm::convert_to_llm;

use super::{After, AgentArgs, AgentMsg, Queues, UserInput, unshow_queued};
use crate::compactor::{CompactorMsg, NextStep};
use crate::envelope::{Envelope, Origin};
use crate::extension_host::InputOutcome;
use crate::writer::Append;

/// One run of the loop: a prompt's turns, then the compaction check and any retry.
pub(super) struct Run {
    pub(super) args: Arc<AgentArgs>,
    pub(super) queues: Arc<Mutex<Queues>>,
    pub(super) abort: CancellationToken,
    /// The Agent, sending on behalf of the prompt that started the run.
    pub(super) from: Origin,
    pub(super) me: ActorRef<Envelope<AgentMsg>>,
    /// The last reply of the run, for the Compactor.
    pub(super) last_reply: Mutex<Option<AssistantMessage>>,
    /// User commands to record before the prompt.
    pub(super) pending_bash: Vec<AgentMessage>,
    /// Retries made since the last reply that was not an error; shared by all runs of the
    /// session because pi's counter outlives a prompt (agent-and-events.md §4).
    pub(super) retry_attempt: Arc<std::sync::atomic::AtomicU32>,
    /// In an overflow retry: the reply that overflowed. It stays in the log but is not sent
    /// again (pi drops it from the agent's messages).
    pub(super) overflowed: Option<AssistantMessage>,
    /// Entry ids of the run's last reply and the tool results answering it: what auto-retry
    /// and overflow recovery hide with `context_edit` entries (compaction.md §3).
    pub(super) attempt: Mutex<Vec<String>>,
    /// The system prompt of this run: the session's, as `before_agent_start` left it.
    pub(super) system_prompt: Mutex<Option<String>>,
    /// Messages that start the run in place of a prompt (an extension's `sendMessage` with
    /// `triggerTurn`), delivered once.
    pub(super) leading: Mutex<Vec<AgentMessage>>,
}

impl Run {
    /// The user message for `input`: its text block, then its images as they came; they are
    /// resized when the message starts ([`Run::deliver`]).
    fn user(&self, input: UserInput) -> AgentMessage {
        let mut message = AgentMessage::user_text(input.text, self.args.clock.now_ms());
        if let AgentMessage::User(u) = &mut message
            && let UserContent::Blocks(blocks) = &mut u.content
        {
            blocks.extend(input.images.into_iter().map(ContentBlock::Image));
        }
        message
    }

    /// The queued messages to deliver now: one (pi's default `one-at-a-time`) or all,
    /// per the `steeringMode` / `followUpMode` settings.
    fn poll(&self, steering: bool) -> Vec<UserInput> {
        use crate::settings::QueueMode;
        let mode = if steering {
            self.args.settings.steering_mode()
        } else {
            self.args.settings.follow_up_mode()
        };
        let texts: Vec<UserInput> = self
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
        texts
    }

    /// Extension messages steered into the run (`steering`) or waiting for its end.
    fn poll_custom(&self, steering: bool) -> Vec<AgentMessage> {
        self.queues
            .lock()
            .map(|mut q| {
                let queue = if steering {
                    &mut q.custom_steering
                } else {
                    &mut q.custom_follow_up
                };
                queue
                    .drain(..)
                    .map(|(m, _)| AgentMessage::Custom(m))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Appends `message` (a custom message as pi's `custom_message` entry,
    /// appendCustomMessageEntry); its entry id, or `None` when the append failed (the writer
    /// tells the frontends).
    pub(super) async fn persist(&self, message: &AgentMessage) -> Option<String> {
        let append = match message {
            AgentMessage::Custom(c) => Append::CustomMessage {
                custom_type: c.custom_type.clone(),
                content: c.content.clone(),
                display: c.display,
                details: c.details.clone(),
            },
            other => Append::Message(Box::new(other.clone())),
        };
        match self.args.writer.append(&self.from, append).await {
            Ok(id) => Some(id),
            Err(e) => {
                // A store error was reported by the writer; a writer that is gone was not.
                tracing::error!(user_notified = true, "could not persist a message: {e}");
                if !matches!(e, crate::RuntimeError::Store(_)) {
                    self.args
                        .events
                        .notify_ui(crate::event::RuntimeEvent::WriteFailed(format!(
                            "a message was not saved: {e}"
                        )));
                }
                None
            }
        }
    }

    /// Hides the last attempt (its reply and tool results) from every later request with
    /// `context_edit {replacement: null}` entries (pi ≥ 0.87, compaction.md §3); the entries
    /// stay in the file and the tree.
    pub(super) async fn hide_attempt(&self) {
        let ids = self
            .attempt
            .lock()
            .map(|mut a| std::mem::take(&mut *a))
            .unwrap_or_default();
        for target_id in ids {
            let append = Append::ContextEdit {
                target_id,
                replacement: None,
            };
            if let Err(e) = self.args.writer.append(&self.from, append).await {
                tracing::error!(user_notified = true, "could not hide a failed attempt: {e}");
            }
        }
    }

    fn note_attempt(&self, id: Option<String>, first: bool) {
        if let Ok(mut attempt) = self.attempt.lock() {
            if first {
                attempt.clear();
            }
            attempt.extend(id);
        }
    }

    async fn sync(&self) {
        // A failed fsync is reported to frontends by the writer itself.
        let _ = self.args.writer.sync(&self.from).await;
    }

    /// Emits an event: every extension that subscribed to it handles it (awaited, in load
    /// order), then frontends get it.
    /// Waits first while a frontend has too many events still to write (backpressure, see
    /// [`crate::event::Pacer`]), unless the run is aborted: an abort is never held up.
    pub(super) async fn emit(&self, event: AgentEvent) {
        tokio::select! {
            biased;
            () = self.abort.cancelled() => {}
            () = self.args.events.room() => {}
        }
        self.args.extensions.agent_event(&self.from, &event).await;
        self.args.events.emit(event);
    }

    /// A message that is persisted on `message_end`: start, end, append.
    async fn deliver(&self, message: AgentMessage) -> Option<String> {
        let mut message = message;
        if let AgentMessage::User(u) = &mut message {
            unshow_queued(&self.args.events, &self.queues, &u.content.joined_text(""));
            super::images::normalize(u, self.args.settings.images_auto_resize()).await;
        }
        self.emit(AgentEvent::MessageStart {
            message: message.clone(),
        })
        .await;
        self.emit(AgentEvent::MessageEnd {
            message: message.clone(),
        })
        .await;
        self.persist(&message).await
    }

    async fn context(&self) -> Vec<AgentMessage> {
        match self.args.projection.context(&self.from).await {
            // Repaired per request, never in the file (tool_pairs module docs).
            Ok(ctx) => {
                let mut messages = convert_to_llm(&ctx.messages);
                if self.args.settings.images_blocked() {
                    messages = super::images::blocked(messages);
                }
                if let Some(overflowed) = &self.overflowed {
                    messages
                        .retain(|m| !matches!(m, AgentMessage::Assistant(a) if a == overflowed));
                }
                pair_tool_calls(messages)
            }
            Err(e) => {
                tracing::error!("no context for the request: {e}");
                Vec::new()
            }
        }
    }

    /// One model request, streamed: its events go out as they come; the final message is
    /// returned. The request is a span of its own (`provider_request`) in traces.
    async fn stream(&self) -> AssistantMessage {
        let span = tracing::info_span!(
            "provider_request",
            provider = %self.args.model.provider,
            model = %self.args.model.id,
        );
        self.stream_reply().instrument(span).await
    }

    async fn stream_reply(&self) -> AssistantMessage {
        // MCP servers still connecting get their 10 s before the first request.
        self.args.tools.ready().await;
        let request = ProviderRequest {
            provider: self.args.model.provider.clone(),
            model: self.args.model.id.clone(),
            thinking_level: self.args.thinking_level,
            system_prompt: self.system_prompt.lock().ok().and_then(|p| p.clone()),
            messages: self.context().await,
            tools: self.args.extensions.registry().specs(&self.args.tools),
            max_tokens: None,
            session_id: Some(self.args.session_id.to_string()),
        };
        let mut events = self.args.provider.stream(request, self.abort.clone());
        let mut started = false;
        while let Some(event) = events.recv().await {
            match event {
                ProviderEvent::Start(mut partial) => {
                    started = true;
                    // pi ≥ 0.83: a reply that is still streaming says so (§1.2).
                    partial.stop_reason = StopReason::Pending;
                    self.emit(AgentEvent::MessageStart {
                        message: AgentMessage::Assistant(partial),
                    })
                    .await;
                }
                ProviderEvent::Update { update, usage } => {
                    self.emit(AgentEvent::MessageUpdate { usage, update }).await;
                }
                ProviderEvent::Done(mut message) => {
                    // pi ≥ 1.x's agent loop records the requested level on every final
                    // reply, whichever provider answered.
                    message.thinking_level = Some(self.args.thinking_level.as_str().to_owned());
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
                self.args.model.provider.clone(),
                self.args.model.id.clone(),
                Vec::new(),
                self.args.clock.now_ms(),
            )
        }
    }

    /// One run: `text` as the prompt, or none to send the context again (an overflow retry).
    pub(super) async fn run(&self, input: Option<UserInput>) -> After {
        // `input` comes first: an extension may rewrite the prompt or take care of it.
        let input = match input {
            Some(input) if self.args.extensions.wants("input") => {
                match self
                    .args
                    .extensions
                    .input(
                        &self.from,
                        input.text,
                        input.images,
                        self.args.extensions.input_source(),
                    )
                    .await
                {
                    InputOutcome::Continue { text, images } => Some(UserInput { text, images }),
                    InputOutcome::Handled => return After::Handled,
                }
            }
            other => other,
        };
        if input.is_some() {
            // Retries (no text) must not record them twice.
            for bash in &self.pending_bash {
                let _ = self.persist(bash).await;
            }
            // pi checks the last reply before each prompt too, before agent_start: compaction
            // may have been off, or the session was resumed over the threshold.
            self.from
                .cast(&self.me, AgentMsg::Deferring { deferring: true });
            let _ = self
                .from
                .wait(&self.args.compactor, "compactor", |reply| {
                    CompactorMsg::BeforePrompt {
                        abort: self.abort.clone(),
                        reply,
                    }
                })
                .await;
            self.from
                .cast(&self.me, AgentMsg::Deferring { deferring: false });
        }
        let mut injected = Vec::new();
        if let Some(input) = &input {
            // pi: before_agent_start once per prompt; the system prompt starts from the
            // session's again unless an extension changes it.
            let base = self.args.system_prompt.as_deref();
            let (messages, system_prompt) = self
                .args
                .extensions
                .before_agent_start(&self.from, &input.text, &input.images, base)
                .await;
            if let Ok(mut p) = self.system_prompt.lock() {
                *p = system_prompt.or_else(|| self.args.system_prompt.clone());
            }
            injected = messages;
        }
        let mut new_messages = Vec::new();
        self.emit(AgentEvent::AgentStart).await;
        let mut turn_index = 0u32;
        self.emit(AgentEvent::TurnStart {
            turn_index,
            timestamp: self.args.clock.now_ms(),
        })
        .await;
        if let Some(input) = input {
            let prompt = self.user(input);
            self.deliver(prompt.clone()).await;
            new_messages.push(prompt);
            let held: Vec<CustomMessage> = self
                .queues
                .lock()
                .map(|mut q| std::mem::take(&mut q.next_turn))
                .unwrap_or_default();
            for m in held {
                let message = AgentMessage::Custom(m);
                self.deliver(message.clone()).await;
                new_messages.push(message);
            }
            for m in injected {
                let message = AgentMessage::Custom(CustomMessage {
                    custom_type: m.custom_type,
                    content: m.content,
                    display: m.display,
                    details: m.details,
                    timestamp: Some(self.args.clock.now_ms()),
                });
                self.deliver(message.clone()).await;
                new_messages.push(message);
            }
        }
        let leading: Vec<AgentMessage> = self
            .leading
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default();
        for m in leading {
            self.deliver(m.clone()).await;
            new_messages.push(m);
        }
        let mut pending: Vec<AgentMessage> =
            self.poll(true).into_iter().map(|t| self.user(t)).collect();
        pending.extend(self.poll_custom(true));
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
                    let _ = self.deliver(m.clone()).await;
                    new_messages.push(m);
                }
                let reply = self.stream().await;
                let message = AgentMessage::Assistant(reply.clone());
                self.emit(AgentEvent::MessageEnd {
                    message: message.clone(),
                })
                .await;
                let id = self.persist(&message).await;
                self.note_attempt(id, true);
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
                    let id = self.deliver(result.clone()).await;
                    self.note_attempt(id, false);
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
                pending.extend(self.poll_custom(true));
            }
            let follow_ups = self.poll(false);
            let custom = self.poll_custom(false);
            if follow_ups.is_empty() && custom.is_empty() {
                break;
            }
            pending.extend(follow_ups.into_iter().map(|t| self.user(t)));
            pending.extend(custom);
        }
        self.finish(new_messages).await
    }

    /// `agent_end`, then pi's compaction check on the run's last reply (compaction.md §3).
    /// Prompts sent from the moment `agent_end` can be seen wait until this returns.
    pub(super) async fn finish(&self, new_messages: Vec<AgentMessage>) -> After {
        self.from
            .cast(&self.me, AgentMsg::Deferring { deferring: true });
        let last_reply = new_messages.iter().rev().find_map(|m| match m {
            AgentMessage::Assistant(a) => Some(a.clone()),
            _ => None,
        });
        let will_retry = last_reply.as_ref().is_some_and(|r| self.will_retry(r));
        self.emit(AgentEvent::AgentEnd {
            messages: new_messages,
            will_retry,
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
        let retried = self.overflowed.is_some();
        let attempt = self.attempt.lock().map(|a| a.clone()).unwrap_or_default();
        // A summary is a full model reply: waited for, not timed.
        let next = self
            .from
            .wait(&self.args.compactor, "compactor", |reply_port| {
                CompactorMsg::AfterRun {
                    last_reply: Box::new(reply),
                    retried,
                    attempt,
                    abort: self.abort.clone(),
                    reply: reply_port,
                }
            })
            .await;
        match next {
            Ok(NextStep::Retry) => After::OverflowRetry,
            _ => After::Idle,
        }
    }
}
