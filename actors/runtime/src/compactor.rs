//! Compactor: owns compaction decisions (spec: compaction.md).
//!
//! [`CompactorMsg::Compact`] is pi's `/compact [focus]`: the cut point and the messages to
//! summarize come from `pith_store::compaction::prepare_compaction`, the summary from the current
//! model (history, plus the prefix of a split turn), followed by the file-list tags; the entry
//! records `details` and `fromHook: false`. [`CompactorMsg::AfterRun`] is pi's
//! `_checkCompaction`: the Agent sends each run's last reply and waits, so prompts that arrive
//! meanwhile start after the compaction; an overflowed reply is compacted away and retried
//! once ([`NextStep::Retry`]), a reply over the threshold is compacted and not retried.
//! [`CompactorMsg::CompactWith`] appends a compaction with a summary given by the caller (an
//! extension's, or a test's). The user's abort cancels a running compaction at once (pi's
//! `Compaction cancelled`, `compaction_end {aborted: true}`), and nothing is written.
//!
//! Unlike pi, `/compact` does not abort a running turn first: the Runtime hands it to the
//! Compactor once the agent is idle, so no compaction ever happens with tool calls pending.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use pith_events::{
    AgentMessage, AssistantMessage, CompactionPlan, CompactionResult, EntryType, ExtensionEvent,
    ModelRef, ThinkingLevel, Usage,
};
use pith_store::Leaf;
use pith_store::compaction::{
    CompactionPreparation, CompactionSettings, estimate_context_tokens, estimate_tokens,
    prepare_compaction,
};

use crate::RuntimeError;
use crate::envelope::{Envelope, MessageKind, Origin};
use crate::event::EventSink;
use crate::extension::Verdict;
use crate::extension_host::Extensions;
use crate::projection::ProjectionRef;
use crate::summarize::{
    HISTORY_INSTRUCTIONS, SummaryFailure, SummaryOptions, SummaryRetry, UPDATE_INSTRUCTIONS,
    request_text, serialize_conversation, summarize_trimming, turn_prefix_text,
};
use crate::trace::ActorName;
use crate::tree_navigator::LeafGuard;
use crate::writer::{Append, Snapshot, WriterRef};
use pith_llm::provider::Provider;
use pith_llm::retry::RetrySettings;

/// Messages of the Compactor.
#[derive(Debug)]
pub enum CompactorMsg {
    /// Compact now with this summary (the caller's, not the model's), keeping the leaf
    /// entry; answered with the compaction entry's id, or why not.
    CompactWith {
        /// The summary.
        summary: String,
        /// The entry's id.
        reply: RpcReplyPort<Result<String, RuntimeError>>,
    },
    /// `/compact [focus]`: prepare as pi does, summarize through the model, append; answered
    /// with the entry's id and pi's `CompactionResult`, or pi's error (`Already compacted`,
    /// `Nothing to compact (session too small)`, `Summarization failed: …`).
    Compact {
        /// What the summary should focus on.
        focus: Option<String>,
        /// Cancelled by the user's abort: the compaction ends with `Compaction cancelled`
        /// and writes nothing.
        abort: CancellationToken,
        /// The entry's id and what `compaction_end` reported.
        reply: RpcReplyPort<Result<(String, CompactionResult), RuntimeError>>,
    },
    /// A run ended with this reply: compact on overflow or over the threshold
    /// (compaction.md §3); answered when done, so the Agent starts nothing meanwhile.
    AfterRun {
        /// The run's last reply.
        last_reply: Box<AssistantMessage>,
        /// The run was itself the retry after an overflow.
        retried: bool,
        /// Entry ids of the reply and the tool results answering it: an overflow recovery
        /// hides them with `context_edit` entries before it compacts (compaction.md §3 step 5).
        attempt: Vec<String>,
        /// The run's abort: cancels the compaction too (pi's `abort()`).
        abort: CancellationToken,
        /// Whether the Agent sends the request again.
        reply: RpcReplyPort<NextStep>,
    },
    /// A prompt is about to start: compact first if the last reply in the context calls for
    /// it (compaction.md §3 (b)); answered when done.
    BeforePrompt {
        /// The run's abort: cancels the compaction too.
        abort: CancellationToken,
        /// Done.
        reply: RpcReplyPort<()>,
    },
    /// Summarize with this model from now on (it follows the session's model, as in pi).
    SetModel {
        /// Serves the model.
        provider: Arc<dyn Provider>,
        /// The model.
        model: ModelRef,
    },
    /// Compaction summaries use this thinking level from now on (it follows the session's
    /// level, as in pi: compaction.md §7).
    SetThinkingLevel {
        /// The level.
        level: ThinkingLevel,
    },
    /// The session's `compaction.*` settings changed (rpc `set_auto_compaction`).
    SetSettings {
        /// The settings now.
        settings: CompactionSettings,
    },
}

impl MessageKind for CompactorMsg {
    fn kind(&self) -> &'static str {
        match self {
            CompactorMsg::CompactWith { .. } => "compact_with",
            CompactorMsg::Compact { .. } => "compact",
            CompactorMsg::AfterRun { .. } => "after_run",
            CompactorMsg::BeforePrompt { .. } => "before_prompt",
            CompactorMsg::SetModel { .. } => "set_model",
            CompactorMsg::SetThinkingLevel { .. } => "set_thinking_level",
            CompactorMsg::SetSettings { .. } => "set_settings",
        }
    }
}

/// Why a compaction appended nothing.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    /// pi's `Already compacted` / `Nothing to compact (session too small)`: not a failure for
    /// an automatic compaction.
    #[error("{}", if *.0 { "Already compacted" } else { "Nothing to compact (session too small)" })]
    Nothing(bool),
    /// The summary or the append failed (pi's `Summarization failed: …`).
    #[error("{0}")]
    Failed(String),
    /// An extension cancelled it.
    #[error("Compaction cancelled")]
    Cancelled,
}

impl From<Refusal> for RuntimeError {
    fn from(refusal: Refusal) -> RuntimeError {
        match refusal {
            Refusal::Nothing(true) => RuntimeError::AlreadyCompacted,
            Refusal::Nothing(false) => RuntimeError::NothingToCompact,
            Refusal::Failed(text) => RuntimeError::CompactionFailed(text),
            Refusal::Cancelled => RuntimeError::CompactionCancelled,
        }
    }
}

/// What the Compactor needs.
pub struct CompactorArgs {
    /// Appends the entry.
    pub writer: WriterRef,
    /// Answers context questions.
    pub projection: ProjectionRef,
    /// The model that writes summaries.
    pub provider: Arc<dyn Provider>,
    /// Which model that is.
    pub model: ModelRef,
    /// The session's thinking level, which compaction summaries (not branch summaries) are
    /// asked with.
    pub thinking_level: ThinkingLevel,
    /// `compaction.*` settings of the session's cwd.
    pub settings: CompactionSettings,
    /// `retry.*` settings: a summary request that fails transiently is retried (pi-ai's
    /// `retryAssistantCall`).
    pub retry: RetrySettings,
    /// The session's extensions.
    pub extensions: Extensions,
    /// Where `compaction_start` / `compaction_end` go.
    pub events: EventSink,
    /// Shared with the TreeNavigator: held from the snapshot to the append.
    pub leaf_guard: LeafGuard,
    /// The session, for traces.
    pub session_id: String,
}

/// The Compactor actor.
pub struct Compactor;

impl Compactor {
    async fn snapshot(args: &CompactorArgs, from: &Origin) -> Result<Snapshot, RuntimeError> {
        Ok(args.writer.snapshot(from).await?)
    }

    async fn compact_with(
        args: &CompactorArgs,
        from: &Origin,
        summary: String,
    ) -> Result<String, RuntimeError> {
        let snapshot = Self::snapshot(args, from).await?;
        let Leaf::At(leaf) = snapshot.leaf() else {
            return Err(RuntimeError::NothingToCompact);
        };
        let first_kept_entry_id = snapshot.entries()[leaf].id().to_owned();
        let tokens_before = match args.projection.context(from).await {
            Ok(ctx) => estimate_context_tokens(&ctx.messages).tokens,
            Err(_) => 0,
        };
        args.writer
            .append(
                from,
                Append::Compaction {
                    summary,
                    first_kept_entry_id,
                    tokens_before,
                    details: None,
                    usage: None,
                    from_hook: Some(false),
                },
            )
            .await
    }

    async fn compact(
        args: &CompactorArgs,
        from: &Origin,
        reason: &str,
        snapshot: Snapshot,
        focus: Option<String>,
        abort: &CancellationToken,
    ) -> Result<(String, CompactionResult), Refusal> {
        let Leaf::At(leaf) = snapshot.leaf() else {
            return Err(Refusal::Nothing(false));
        };
        let tree = &snapshot.tree;
        let path = tree.path_to(leaf);
        let Some(prep) = prepare_compaction(tree, &path, &args.settings) else {
            let last_is_compaction = tree.entries()[leaf].kind() == &EntryType::Compaction;
            return Err(Refusal::Nothing(last_is_compaction));
        };
        let first_kept_entry_id = prep
            .first_kept_entry_id
            .clone()
            .unwrap_or_else(|| tree.entries()[leaf].id().to_owned());
        let plan = CompactionPlan {
            first_kept_entry_id: Some(first_kept_entry_id.clone()),
            messages_to_summarize: prep.messages_to_summarize.clone(),
            turn_prefix_messages: prep.turn_prefix_messages.clone(),
            is_split_turn: prep.is_split_turn,
            tokens_before: prep.tokens_before,
            previous_summary: prep.previous_summary.clone(),
        };
        let asked = ExtensionEvent::SessionBeforeCompact {
            reason: reason.to_owned(),
            preparation: Box::new(plan),
            custom_instructions: focus.clone(),
        };
        let (summary, details, usage, from_extension) =
            match args.extensions.consult(from, asked).await {
                Verdict::Cancel(_) => return Err(Refusal::Cancelled),
                Verdict::Summary(s) => (s.summary, s.details, None, true),
                // consult() keeps only the answers session_before_compact accepts.
                Verdict::Continue
                | Verdict::Block(_)
                | Verdict::ReplaceInput(_)
                | Verdict::PatchResult(_)
                | Verdict::Transform { .. }
                | Verdict::Handled
                | Verdict::Inject(_) => {
                    let (summary, usage) =
                        Self::model_summary(args, &prep, focus, reason, abort).await?;
                    (summary, Some(prep.file_ops.details()), Some(usage), false)
                }
            };
        // pi: "If the abort signal fired ⇒ Compaction cancelled"; nothing is written.
        if abort.is_cancelled() {
            return Err(Refusal::Cancelled);
        }
        let mut result = CompactionResult {
            summary,
            first_kept_entry_id,
            tokens_before: prep.tokens_before,
            estimated_tokens_after: None,
            usage,
            details: details.clone().unwrap_or(serde_json::Value::Null),
        };
        let id = args
            .writer
            .append(
                from,
                Append::Compaction {
                    summary: result.summary.clone(),
                    first_kept_entry_id: result.first_kept_entry_id.clone(),
                    tokens_before: result.tokens_before,
                    details,
                    usage: result
                        .usage
                        .as_ref()
                        .and_then(|u| serde_json::to_value(u).ok()),
                    from_hook: Some(from_extension),
                },
            )
            .await
            .map_err(|e| Refusal::Failed(e.to_string()))?;
        // pi's `estimateMessagesTokens` of the compacted context (the Projection has the
        // entry: the writer told it before answering).
        result.estimated_tokens_after = args
            .projection
            .context(from)
            .await
            .ok()
            .map(|ctx| ctx.messages.iter().map(estimate_tokens).sum());
        args.extensions
            .tell(
                from,
                ExtensionEvent::SessionCompact {
                    entry_id: id.clone(),
                    summary: result.summary.clone(),
                    from_extension,
                },
                &[],
            )
            .await;
        Ok((id, result))
    }

    /// The model's summary of `prep`: history (and a split turn's prefix), then the file lists
    /// (compaction.md §7), each asked with the session's thinking level and its share of
    /// `reserveTokens`.
    async fn model_summary(
        args: &CompactorArgs,
        prep: &CompactionPreparation,
        focus: Option<String>,
        reason: &str,
        abort: &CancellationToken,
    ) -> Result<(String, Usage), Refusal> {
        // pi retries a transient failure of each request, announcing it with the
        // compaction's reason.
        let retry = SummaryRetry {
            settings: args.retry,
            events: args.events.clone(),
            source: "compaction",
            reason: Some(reason.to_owned()),
        };
        // A cancelled request is a cancelled compaction, not a failed one.
        let failed = |what: &str, e: SummaryFailure| {
            if abort.is_cancelled() {
                Refusal::Cancelled
            } else {
                Refusal::Failed(format!("{what}: {e}"))
            }
        };
        let provider = args.provider.as_ref();
        let instructions = if prep.previous_summary.is_some() {
            UPDATE_INSTRUCTIONS
        } else {
            HISTORY_INSTRUCTIONS
        };
        let history = |messages: &[AgentMessage]| {
            request_text(
                &serialize_conversation(messages),
                prep.previous_summary.as_deref(),
                instructions,
                focus.as_deref(),
            )
        };
        let model = &args.model;
        let history_options = SummaryOptions::history(args.thinking_level);
        let summarize_history = || {
            summarize_trimming(
                provider,
                model,
                &history_options,
                &prep.messages_to_summarize,
                history,
                abort.clone(),
                Some(&retry),
            )
        };
        let mut summary = if prep.is_split_turn && !prep.turn_prefix_messages.is_empty() {
            // pi asks for both at once, history first; one after the other keeps a scripted
            // model's replies in that order.
            // pi 1.6.0: with nothing before the turn, the previous summary stands as it is.
            let history_part = if prep.messages_to_summarize.is_empty() {
                None
            } else {
                Some(
                    summarize_history()
                        .await
                        .map_err(|e| failed("Summarization failed", e))?,
                )
            };
            let prefix_request = |messages: &[AgentMessage]| {
                turn_prefix_text(&serialize_conversation(messages), focus.as_deref())
            };
            let prefix = summarize_trimming(
                provider,
                model,
                &history_options,
                &prep.turn_prefix_messages,
                prefix_request,
                abort.clone(),
                Some(&retry),
            )
            .await
            .map_err(|e| failed("Turn prefix summarization failed", e))?;
            let (history_text, usage) = match history_part {
                Some(h) => (h.text, combine_usage(&h.usage, &prefix.usage)),
                None => (
                    prep.previous_summary
                        .clone()
                        .unwrap_or_else(|| "No prior history.".to_owned()),
                    prefix.usage,
                ),
            };
            let text = format!(
                "{history_text}\n\n---\n\n**Turn Context (split turn):**\n\n{}",
                prefix.text
            );
            (text, usage)
        } else {
            let history = summarize_history()
                .await
                .map_err(|e| failed("Summarization failed", e))?;
            (history.text, history.usage)
        };
        summary.0.push_str(&prep.file_ops.summary_suffix());
        Ok(summary)
    }
}

/// pi's `combineUsage` (usage-totals.js): the two usages of a split turn's summary added up;
/// `reasoning` and `cacheWrite1h` when either has them; the sum's cost is the provider's only
/// when both are.
fn combine_usage(a: &Usage, b: &Usage) -> Usage {
    let either = |x: Option<u64>, y: Option<u64>| {
        (x.is_some() || y.is_some()).then(|| x.unwrap_or(0) + y.unwrap_or(0))
    };
    Usage {
        input: a.input + b.input,
        output: a.output + b.output,
        cache_read: a.cache_read + b.cache_read,
        cache_write: a.cache_write + b.cache_write,
        reasoning: either(a.reasoning, b.reasoning),
        total_tokens: a.total_tokens + b.total_tokens,
        cost: pith_events::Cost {
            input: a.cost.input + b.cost.input,
            output: a.cost.output + b.cost.output,
            cache_read: a.cost.cache_read + b.cost.cache_read,
            cache_write: a.cost.cache_write + b.cost.cache_write,
            total: a.cost.total + b.cost.total,
            total_from_provider: Some(
                a.cost.total_from_provider == Some(true)
                    && b.cost.total_from_provider == Some(true),
            ),
        },
        cache_write_1h: either(a.cache_write_1h, b.cache_write_1h),
    }
}

/// pi's message when the retry after an overflow compaction overflowed again.
pub const OVERFLOW_GAVE_UP: &str = "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.";

/// pi's message when the retry after a recoverable `length` stop stopped short again
/// (pi ≥ 0.87).
pub const TRUNCATION_GAVE_UP: &str =
    "Truncated response recovery failed after one compact-and-retry attempt.";

/// What started a compaction (`reason` of the compaction events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    Manual,
    Threshold,
    Overflow,
}

impl Trigger {
    fn reason(self) -> &'static str {
        match self {
            Trigger::Manual => "manual",
            Trigger::Threshold => "threshold",
            Trigger::Overflow => "overflow",
        }
    }
}

/// What the Agent does after a run, as the Compactor decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// Nothing more: the run is over.
    Idle,
    /// The reply overflowed and the session was compacted: send the request again, without
    /// the overflowed reply (compaction.md §3, step 5).
    Retry,
}

impl Compactor {
    async fn on(state: &mut CompactorArgs, from: &Origin, msg: CompactorMsg) {
        match msg {
            CompactorMsg::CompactWith { summary, reply } => {
                let _ = reply.send(Self::compact_with(state, from, summary).await);
            }
            CompactorMsg::Compact {
                focus,
                abort,
                reply,
            } => {
                let answer = match Self::snapshot(state, from).await {
                    Ok(snapshot) => Self::announced(
                        state,
                        from,
                        Trigger::Manual,
                        false,
                        snapshot,
                        focus,
                        &abort,
                    )
                    .await
                    .map_err(RuntimeError::from),
                    Err(e) => Err(e),
                };
                let _ = reply.send(answer);
            }
            CompactorMsg::SetModel { provider, model } => {
                state.provider = provider;
                state.model = model;
            }
            CompactorMsg::SetThinkingLevel { level } => state.thinking_level = level,
            CompactorMsg::SetSettings { settings } => state.settings = settings,
            CompactorMsg::BeforePrompt { abort, reply } => {
                Self::before_prompt(state, from, &abort).await;
                let _ = reply.send(());
            }
            CompactorMsg::AfterRun {
                last_reply,
                retried,
                attempt,
                abort,
                reply,
            } => {
                let next =
                    Self::after_run(state, from, &last_reply, retried, &attempt, &abort).await;
                let _ = reply.send(next);
            }
        }
    }
}

impl Actor for Compactor {
    type Msg = Envelope<CompactorMsg>;
    type State = CompactorArgs;
    type Arguments = CompactorArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<Envelope<CompactorMsg>>,
        args: CompactorArgs,
    ) -> Result<CompactorArgs, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        _me: ActorRef<Envelope<CompactorMsg>>,
        Envelope { trace, msg }: Envelope<CompactorMsg>,
        state: &mut CompactorArgs,
    ) -> Result<(), ActorProcessingErr> {
        let span = trace.span(&ActorName::Compactor, msg.kind(), &state.session_id);
        let from = Origin::new(ActorName::Compactor, &trace);
        // Every message but the model switches reads the leaf and may append at it.
        let guard = state.leaf_guard.clone();
        let _held = guard.lock().await;
        Self::on(state, &from, msg).instrument(span).await;
        Ok(())
    }
}

mod checks;
#[cfg(test)]
mod tests;
