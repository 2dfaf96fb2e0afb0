//! One run of pi's agent loop (spec: agent-and-events.md §1–3): turns of model replies and
//! tool calls, steering and follow-ups, persistence on `message_end`, then the compaction
//! check after `agent_end`.

use std::sync::{Arc, Mutex};

use ractor::ActorRef;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use pith_events::{AgentEvent, AgentMessage, AssistantMessage, StopReason};
use pith_llm::provider::{ProviderEvent, ProviderRequest};
use pith_llm::tool_pairs::pair_tool_calls;
use pith_store::llm::convert_to_llm;

use super::{After, AgentArgs, AgentMsg, Queues, emit_queue};
use crate::compactor::{CompactorMsg, NextStep};
use crate::envelope::{Envelope, Origin};
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

    pub(super) async fn persist(&self, message: &AgentMessage) {
        let append = Append::Message(Box::new(message.clone()));
        if let Err(e) = self.args.writer.append(&self.from, append).await {
            tracing::error!(user_notified = true, "could not persist a message: {e}");
        }
    }

    async fn sync(&self) {
        // A failed fsync is reported to frontends by the writer itself.
        let _ = self.args.writer.sync(&self.from).await;
    }

    /// Emits an event: every extension that subscribed to it handles it (awaited, in load
    /// order), then frontends get it.
    pub(super) async fn emit(&self, event: AgentEvent) {
        self.args.extensions.agent_event(&self.from, &event).await;
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
        match self.args.projection.context(&self.from).await {
            // Repaired per request, never in the file (tool_pairs module docs).
            Ok(ctx) => {
                let mut messages = convert_to_llm(&ctx.messages);
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
            system_prompt: self.args.system_prompt.clone(),
            messages: self.context().await,
            tools: self.args.tools.specs(),
            max_tokens: None,
            session_id: Some(self.args.session_id.to_string()),
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
                self.args.model.provider.clone(),
                self.args.model.id.clone(),
                Vec::new(),
                self.args.clock.now_ms(),
            )
        }
    }

    /// One run: `text` as the prompt, or none to send the context again (an overflow retry).
    pub(super) async fn run(&self, text: Option<String>) -> After {
        if text.is_some() {
            // Retries (no text) must not record them twice.
            for bash in &self.pending_bash {
                self.persist(bash).await;
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
    pub(super) async fn finish(&self, new_messages: Vec<AgentMessage>) -> After {
        self.from
            .cast(&self.me, AgentMsg::Deferring { deferring: true });
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
        let retried = self.overflowed.is_some();
        // A summary is a full model reply: waited for, not timed.
        let next = self
            .from
            .wait(&self.args.compactor, "compactor", |reply_port| {
                CompactorMsg::AfterRun {
                    last_reply: Box::new(reply),
                    retried,
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
