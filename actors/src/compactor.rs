//! Compactor: owns compaction decisions (spec: compaction.md).
//!
//! [`CompactorMsg::Compact`] is pi's `/compact [focus]`: the cut point and the messages to
//! summarize come from `pith_store::compaction::prepare_compaction`, the summary from the current
//! model (history, plus the prefix of a split turn), followed by the file-list tags; the entry
//! records `details` and `fromHook: false`. [`CompactorMsg::AfterRun`] is pi's
//! `_checkCompaction`: the Agent sends each run's last reply and waits, so prompts that arrive
//! meanwhile start after the compaction; an overflowed reply is compacted away and retried
//! once ([`NextStep::Retry`]), a reply over the threshold is compacted and not retried.
//! [`CompactorMsg::Manual`] appends a compaction with a summary given by the caller (an
//! extension's, or a test's). A running summary cannot be aborted yet.
//!
//! Unlike pi, `/compact` does not abort a running turn first: the Runtime hands it to the
//! Compactor once the agent is idle, so no compaction ever happens with tool calls pending.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::watch;

use pith_events::{
    AgentEvent, AgentMessage, AssistantMessage, CompactionPlan, CompactionResult, EntryType,
    ExtensionEvent, StopReason,
};
use pith_store::branch_summary::{
    BRANCH_SUMMARY_PREAMBLE, NO_CONTENT, collect_entries_for_branch_summary, prepare_branch_entries,
};
use pith_store::compaction::{
    CompactionPreparation, CompactionSettings, calculate_context_tokens, estimate_context_tokens,
    prepare_compaction, should_compact,
};
use pith_store::{Leaf, SessionTree};

use crate::agent::EventSink;
use crate::extension::{ExtensionMsg, Verdict};
use crate::overflow::is_context_overflow;
use crate::projection::ProjectionMsg;
use crate::provider::Provider;
use crate::summarize::{
    BRANCH_INSTRUCTIONS, HISTORY_INSTRUCTIONS, SummaryOptions, TURN_PREFIX_INSTRUCTIONS,
    UPDATE_INSTRUCTIONS, request_text, serialize_conversation, summarize_trimming,
};
use crate::trace::TraceIds;
use crate::writer::{Append, Snapshot, WriterMsg};

const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Messages of the Compactor.
#[derive(Debug)]
pub enum CompactorMsg {
    /// Compact now with this summary, keeping the leaf entry; answered with the compaction
    /// entry's id, or why not.
    Manual(TraceIds, String, RpcReplyPort<Result<String, String>>),
    /// `/compact [focus]`: prepare as pi does, summarize through the model, append; answered
    /// with the entry's id, or pi's error (`Already compacted`, `Nothing to compact (session
    /// too small)`, `Summarization failed: …`).
    Compact(
        TraceIds,
        Option<String>,
        RpcReplyPort<Result<String, String>>,
    ),
    /// A run ended with this reply (and, `true`, was itself the retry after an overflow):
    /// compact on overflow or over the threshold (compaction.md §3); answered when done, so
    /// the Agent starts nothing meanwhile.
    AfterRun(
        TraceIds,
        Box<AssistantMessage>,
        bool,
        RpcReplyPort<NextStep>,
    ),
    /// A prompt is about to start: compact first if the last reply in the context calls for
    /// it (compaction.md §3 (b)); answered when done.
    BeforePrompt(TraceIds, RpcReplyPort<()>),
    /// Summarize with this model from now on (it follows the session's model, as in pi).
    SetModel(Arc<dyn Provider>, (String, String)),
    /// Compaction summaries use this thinking level from now on (it follows the session's
    /// level, as in pi: compaction.md §7).
    SetThinkingLevel(String),
    /// `/tree`: move the leaf to an entry, summarizing the branch left behind when asked
    /// (tree-and-context.md §9); answered with what changed, or pi's error.
    NavigateTree(
        TraceIds,
        String,
        TreeOptions,
        RpcReplyPort<Result<Navigated, String>>,
    ),
}

/// Options of `/tree` (pi's `navigateTree` options).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TreeOptions {
    /// Summarize the branch left behind.
    pub summarize: bool,
    /// Focus for the summary, added to pith's instructions.
    pub custom_instructions: Option<String>,
    /// Use `custom_instructions` instead of pith's instructions.
    pub replace_instructions: bool,
    /// Label for the summary entry, or for the target without a summary.
    pub label: Option<String>,
}

/// What `/tree` did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Navigated {
    /// The leaf afterwards (the summary's or label's id when one was appended); `None` at the
    /// root.
    pub leaf_id: Option<String>,
    /// For a user or custom message target: its text, for the editor (the message itself is
    /// to be sent again from its parent).
    pub editor_text: Option<String>,
    /// The branch summary appended, if any.
    pub summary_entry_id: Option<String>,
    /// Whether an extension supplied that summary.
    pub from_extension: Option<bool>,
    /// An extension cancelled the move: nothing changed.
    pub cancelled: bool,
}

/// Why a compaction appended nothing.
enum Refusal {
    /// pi's `Already compacted` / `Nothing to compact (session too small)`: not a failure for
    /// an automatic compaction.
    Nothing(&'static str),
    /// The summary or the append failed.
    Failed(String),
    /// An extension cancelled it.
    Cancelled,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Nothing(m) => f.write_str(m),
            Refusal::Failed(m) => f.write_str(m),
            Refusal::Cancelled => f.write_str("Compaction cancelled"),
        }
    }
}

/// What the Compactor needs.
pub struct CompactorArgs {
    /// Appends the entry.
    pub writer: ActorRef<WriterMsg>,
    /// Answers context questions.
    pub projection: ActorRef<ProjectionMsg>,
    /// The model that writes summaries.
    pub provider: Arc<dyn Provider>,
    /// `(provider, model id)`.
    pub model: (String, String),
    /// The session's thinking level, which compaction summaries (not branch summaries) are
    /// asked with.
    pub thinking_level: String,
    /// `compaction.*` settings of the session's cwd.
    pub settings: CompactionSettings,
    /// `branchSummary.reserveTokens` of the session's cwd.
    pub branch_reserve_tokens: u64,
    /// The session's extensions, in load order (each filters by its subscriptions).
    pub extensions: Vec<ActorRef<ExtensionMsg>>,
    /// Where `compaction_start` / `compaction_end` go.
    pub events: EventSink,
}

/// The Compactor actor.
pub struct Compactor;

impl Compactor {
    async fn snapshot(args: &CompactorArgs, ids: TraceIds) -> Result<Snapshot, String> {
        match args
            .writer
            .call(
                |r| WriterMsg::Snapshot(ids.sent_by("Compactor"), r),
                Some(CALL_TIMEOUT),
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(s)) => Ok(s),
            _ => Err("the session writer did not answer".into()),
        }
    }

    async fn append(args: &CompactorArgs, ids: TraceIds, append: Append) -> Result<String, String> {
        match args
            .writer
            .call(
                |r| WriterMsg::Append(ids.sent_by("Compactor"), append, r),
                Some(CALL_TIMEOUT),
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(r)) => r,
            _ => Err("the session writer did not answer".into()),
        }
    }

    async fn manual(
        args: &CompactorArgs,
        ids: TraceIds,
        summary: String,
    ) -> Result<String, String> {
        let snapshot = Self::snapshot(args, ids).await?;
        let Leaf::At(leaf) = snapshot.leaf else {
            return Err("Nothing to compact (session too small)".into());
        };
        let first_kept_entry_id = snapshot.entries[leaf].id().to_owned();
        let tokens_before = match args
            .projection
            .call(
                |r| ProjectionMsg::GetContext(ids.sent_by("Compactor"), r),
                Some(CALL_TIMEOUT),
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(ctx)) => {
                pith_store::compaction::estimate_context_tokens(&ctx.messages).tokens
            }
            _ => 0,
        };
        Self::append(
            args,
            ids,
            Append::Compaction {
                summary,
                first_kept_entry_id,
                tokens_before,
                details: None,
                from_hook: Some(false),
            },
        )
        .await
    }

    async fn compact(
        args: &CompactorArgs,
        ids: TraceIds,
        reason: &str,
        snapshot: Snapshot,
        focus: Option<String>,
    ) -> Result<(String, CompactionResult), Refusal> {
        let Leaf::At(leaf) = snapshot.leaf else {
            return Err(Refusal::Nothing("Nothing to compact (session too small)"));
        };
        let (mut tree, _) = SessionTree::new(snapshot.entries);
        tree.set_leaf(Leaf::At(leaf));
        let path = tree.path_to(leaf);
        let Some(prep) = prepare_compaction(&tree, &path, &args.settings) else {
            let last_is_compaction = tree.entries()[leaf].kind() == &EntryType::Compaction;
            return Err(Refusal::Nothing(if last_is_compaction {
                "Already compacted"
            } else {
                "Nothing to compact (session too small)"
            }));
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
        let (summary, details, from_extension) = match Self::consult(args, ids, asked).await {
            Verdict::Cancel(_) => return Err(Refusal::Cancelled),
            Verdict::Summary(s) => (s.summary, s.details, true),
            Verdict::Continue => {
                let summary = Self::model_summary(args, &prep, focus).await?;
                (summary, Some(prep.file_ops.details()), false)
            }
        };
        let result = CompactionResult {
            summary,
            first_kept_entry_id,
            tokens_before: prep.tokens_before,
            details: details.clone().unwrap_or(serde_json::Value::Null),
        };
        let id = Self::append(
            args,
            ids,
            Append::Compaction {
                summary: result.summary.clone(),
                first_kept_entry_id: result.first_kept_entry_id.clone(),
                tokens_before: result.tokens_before,
                details,
                from_hook: Some(from_extension),
            },
        )
        .await
        .map_err(Refusal::Failed)?;
        Self::tell(
            args,
            ids,
            ExtensionEvent::SessionCompact {
                entry_id: id.clone(),
                summary: result.summary.clone(),
                from_extension,
            },
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
    ) -> Result<String, Refusal> {
        let (_never_abort, abort) = watch::channel(false);
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
        let reserve = args.settings.reserve_tokens;
        let history_options = SummaryOptions::history(reserve, &args.thinking_level);
        let summarize_history = || {
            summarize_trimming(
                provider,
                model,
                &history_options,
                &prep.messages_to_summarize,
                history,
                abort.clone(),
            )
        };
        let mut summary = if prep.is_split_turn && !prep.turn_prefix_messages.is_empty() {
            // pi asks for both at once, history first; one after the other keeps a scripted
            // model's replies in that order.
            let history_part = if prep.messages_to_summarize.is_empty() {
                "No prior history.".to_owned()
            } else {
                summarize_history()
                    .await
                    .map_err(|e| Refusal::Failed(format!("Summarization failed: {e}")))?
            };
            let prefix_request = |messages: &[AgentMessage]| {
                request_text(
                    &serialize_conversation(messages),
                    None,
                    TURN_PREFIX_INSTRUCTIONS,
                    None,
                )
            };
            let prefix = summarize_trimming(
                provider,
                model,
                &SummaryOptions::turn_prefix(reserve, &args.thinking_level),
                &prep.turn_prefix_messages,
                prefix_request,
                abort.clone(),
            )
            .await
            .map_err(|e| Refusal::Failed(format!("Turn prefix summarization failed: {e}")))?;
            format!("{history_part}\n\n---\n\n**Turn Context (split turn):**\n\n{prefix}")
        } else {
            summarize_history()
                .await
                .map_err(|e| Refusal::Failed(format!("Summarization failed: {e}")))?
        };
        summary.push_str(&prep.file_ops.summary_suffix());
        Ok(summary)
    }

    /// Asks every extension about a `session_before_*` event: in load order, each answer
    /// other than Continue replaces the one before, and a cancel wins at once
    /// (compaction.md §10).
    async fn consult(args: &CompactorArgs, ids: TraceIds, event: ExtensionEvent) -> Verdict {
        let mut verdict = Verdict::Continue;
        for ext in &args.extensions {
            let ev = Box::new(event.clone());
            let answer = ext
                .call(
                    |r| ExtensionMsg::Event(ids.sent_by("Compactor"), ev, Vec::new(), r),
                    Some(CALL_TIMEOUT),
                )
                .await;
            match answer {
                Ok(ractor::rpc::CallResult::Success(v @ Verdict::Cancel(_))) => return v,
                Ok(ractor::rpc::CallResult::Success(Verdict::Continue)) => {}
                Ok(ractor::rpc::CallResult::Success(v)) => verdict = v,
                // A crashed or stuck extension does not cancel (pi reports it and goes on).
                _ => tracing::warn!("an extension did not answer {}", event.name()),
            }
        }
        verdict
    }

    /// Tells every extension about an event that cannot be answered.
    async fn tell(args: &CompactorArgs, ids: TraceIds, event: ExtensionEvent) {
        for ext in &args.extensions {
            let ev = Box::new(event.clone());
            let _ = ext
                .call(
                    |r| ExtensionMsg::Event(ids.sent_by("Compactor"), ev, Vec::new(), r),
                    Some(CALL_TIMEOUT),
                )
                .await;
        }
    }
}

impl Compactor {
    /// [`Self::compact`] between `compaction_start` and `compaction_end` (compaction.md §8).
    async fn announced(
        args: &CompactorArgs,
        ids: TraceIds,
        trigger: Trigger,
        will_retry: bool,
        snapshot: Snapshot,
        focus: Option<String>,
    ) -> Result<(String, CompactionResult), Refusal> {
        args.events.emit(AgentEvent::CompactionStart {
            reason: trigger.reason().to_owned(),
        });
        let outcome = Self::compact(args, ids, trigger.reason(), snapshot, focus).await;
        let (result, error_message) = match (&outcome, trigger) {
            (Ok((_, result)), _) => (Some(result.clone()), None),
            // pi reports a cancel as aborted, without an error.
            (Err(Refusal::Cancelled), _) => (None, None),
            (Err(e), Trigger::Manual) => (None, Some(format!("Compaction failed: {e}"))),
            // An automatic compaction with nothing to do ends quietly.
            (Err(Refusal::Nothing(_)), _) => (None, None),
            (Err(Refusal::Failed(e)), Trigger::Threshold) => {
                (None, Some(format!("Auto-compaction failed: {e}")))
            }
            (Err(Refusal::Failed(e)), Trigger::Overflow) => {
                (None, Some(format!("Context overflow recovery failed: {e}")))
            }
        };
        args.events.emit(AgentEvent::CompactionEnd {
            reason: trigger.reason().to_owned(),
            will_retry: will_retry && result.is_some(),
            aborted: matches!(outcome, Err(Refusal::Cancelled)),
            result,
            error_message,
        });
        outcome
    }

    /// pi's `_checkCompaction` (compaction.md §3): whether `reply` overflowed the context or
    /// crossed the threshold, and the snapshot to compact, unless a compaction on the branch
    /// is newer than the reply (or, for an error reply, than the usage its estimate starts
    /// from).
    async fn trigger(
        args: &CompactorArgs,
        ids: TraceIds,
        reply: &AssistantMessage,
        before_prompt: bool,
    ) -> Option<(Trigger, Snapshot)> {
        // After a run an aborted reply never triggers; before a prompt it may (pi's
        // skipAbortedCheck).
        if !args.settings.enabled || (!before_prompt && reply.stop_reason == StopReason::Aborted) {
            return None;
        }
        let window = args.provider.context_window(&args.model.1);
        // A reply from another model says nothing about this one's window.
        let same_model = reply.provider == args.model.0 && reply.model == args.model.1;
        let mut usage_timestamp = None;
        let trigger = if same_model && is_context_overflow(reply, window.unwrap_or(0)) {
            Trigger::Overflow
        } else {
            let window = window?;
            let tokens = if reply.stop_reason == StopReason::Error {
                // No usage in an error: estimate from the last reply that has one.
                let messages = Self::context(args, ids).await?;
                let estimate = estimate_context_tokens(&messages);
                let AgentMessage::Assistant(with_usage) = &messages[estimate.last_usage_index?]
                else {
                    return None;
                };
                usage_timestamp = Some(with_usage.timestamp);
                estimate.tokens
            } else {
                calculate_context_tokens(&reply.usage)
            };
            if !should_compact(tokens, window, &args.settings) {
                return None;
            }
            Trigger::Threshold
        };
        // Only now look at the log: the common turn costs no snapshot.
        let snapshot = Self::snapshot(args, ids).await.ok()?;
        let Leaf::At(leaf) = snapshot.leaf else {
            return None;
        };
        let (tree, _) = SessionTree::new(snapshot.entries.clone());
        let path: Vec<&pith_store::Entry> = tree
            .path_to(leaf)
            .into_iter()
            .map(|i| &tree.entries()[i])
            .collect();
        let Some(newest) = path
            .iter()
            .rposition(|e| e.kind() == &EntryType::Compaction)
        else {
            return Some((trigger, snapshot));
        };
        // pi asks whether a message is older than the newest compaction by comparing
        // millisecond timestamps (`<=`); pith answers it by position on the branch, which
        // says the same without the same-millisecond collisions a fast run produces. A
        // message is fresh when an entry after the compaction carries it.
        let after_compaction = |t: i64| {
            path[newest + 1..].iter().any(|e| {
                e.is_assistant_message()
                    && matches!(e.decode_message(), Some(Ok(AgentMessage::Assistant(a))) if a.timestamp == t)
            })
        };
        // Usage from before the newest compaction describes a context that is gone.
        if !after_compaction(reply.timestamp)
            || usage_timestamp.is_some_and(|t| !after_compaction(t))
        {
            return None;
        }
        Some((trigger, snapshot))
    }

    /// The current context's messages, from the Projection.
    async fn context(args: &CompactorArgs, ids: TraceIds) -> Option<Vec<AgentMessage>> {
        match args
            .projection
            .call(
                |r| ProjectionMsg::GetContext(ids.sent_by("Compactor"), r),
                Some(CALL_TIMEOUT),
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(ctx)) => Some(ctx.messages),
            _ => None,
        }
    }

    /// pi's check at the start of `prompt()` on the last reply in the context
    /// (compaction.md §3 (b)): a session that crossed the threshold while compaction was off,
    /// or was resumed that way, is compacted before the new prompt. Nothing is retried: the
    /// prompt is what comes next. Overflows are left to the run that hits them (pi keeps a
    /// "recovery attempted" flag across prompts for this; pith does not).
    async fn before_prompt(args: &CompactorArgs, ids: TraceIds) {
        let last = args
            .projection
            .call(
                |r| ProjectionMsg::LastReply(ids.sent_by("Compactor"), r),
                Some(CALL_TIMEOUT),
            )
            .await;
        let Ok(ractor::rpc::CallResult::Success(Some(reply))) = last else {
            return;
        };
        let reply = &reply;
        // An overflowed reply was dealt with after its run (compacted and retried, or given
        // up on); if the next request overflows, that run deals with it.
        if let Some((Trigger::Threshold, snapshot)) = Self::trigger(args, ids, reply, true).await {
            let _ = Self::announced(args, ids, Trigger::Threshold, false, snapshot, None).await;
        }
    }

    async fn after_run(
        args: &CompactorArgs,
        ids: TraceIds,
        reply: &AssistantMessage,
        retried: bool,
    ) -> NextStep {
        let Some((trigger, snapshot)) = Self::trigger(args, ids, reply, false).await else {
            return NextStep::Idle;
        };
        if trigger == Trigger::Overflow && retried {
            args.events.emit(AgentEvent::CompactionEnd {
                reason: trigger.reason().to_owned(),
                result: None,
                aborted: false,
                will_retry: false,
                error_message: Some(OVERFLOW_GAVE_UP.to_owned()),
            });
            return NextStep::Idle;
        }
        match Self::announced(
            args,
            ids,
            trigger,
            trigger == Trigger::Overflow,
            snapshot,
            None,
        )
        .await
        {
            Ok(_) if trigger == Trigger::Overflow => NextStep::Retry,
            _ => NextStep::Idle,
        }
    }
}

impl Compactor {
    /// pi's `navigateTree` (tree-and-context.md §9), without extension hooks.
    async fn navigate(
        args: &CompactorArgs,
        ids: TraceIds,
        target_id: String,
        options: TreeOptions,
    ) -> Result<Navigated, String> {
        let snapshot = Self::snapshot(args, ids).await?;
        let old_leaf = snapshot.leaf;
        let (tree, _) = SessionTree::new(snapshot.entries);
        let old_leaf_id = match old_leaf {
            Leaf::At(i) => Some(tree.entries()[i].id().to_owned()),
            Leaf::Root => None,
        };
        if old_leaf_id.as_deref() == Some(target_id.as_str()) {
            return Ok(Navigated {
                leaf_id: Some(target_id),
                ..Navigated::default()
            });
        }
        let target = tree
            .index_of(&target_id)
            .ok_or_else(|| format!("Entry {target_id} not found"))?;
        let (left_behind, common) = collect_entries_for_branch_summary(&tree, old_leaf, target);
        let id_of = |i: usize| tree.entries()[i].id().to_owned();
        let asked = ExtensionEvent::SessionBeforeTree {
            target_id: target_id.clone(),
            old_leaf_id: old_leaf_id.clone(),
            common_ancestor_id: common.map(id_of),
            entries_to_summarize: left_behind.iter().map(|&i| id_of(i)).collect(),
            user_wants_summary: options.summarize,
            custom_instructions: options.custom_instructions.clone(),
        };
        let supplied = match Self::consult(args, ids, asked).await {
            Verdict::Cancel(_) => {
                return Ok(Navigated {
                    cancelled: true,
                    leaf_id: old_leaf_id,
                    ..Navigated::default()
                });
            }
            // Only when the user asked for a summary (compaction.md §10).
            Verdict::Summary(s) if options.summarize => Some(s),
            _ => None,
        };
        let summary = match supplied {
            Some(s) => Some((s.summary, s.details, true)),
            None if options.summarize && !left_behind.is_empty() => {
                let (text, details) =
                    Self::branch_summary(args, &tree, &left_behind, &options).await?;
                Some((text, Some(details), false))
            }
            None => None,
        };
        let entry = &tree.entries()[target];
        // Selecting a prompt means "ask again from before it": the leaf goes to its parent.
        let editor_text = match entry.kind() {
            EntryType::Message => match entry.decode_message() {
                Some(Ok(AgentMessage::User(u))) => Some(u.content.joined_text("")),
                _ => None,
            },
            EntryType::CustomMessage => entry
                .decode_as::<ContentOnly>()
                .ok()
                .map(|c| c.content.joined_text("")),
            _ => None,
        };
        let new_leaf = match editor_text {
            Some(_) => entry.parent().id().map(str::to_owned),
            None => Some(target_id.clone()),
        };
        let mut navigated = Navigated {
            editor_text,
            ..Navigated::default()
        };
        let label_target = match summary {
            Some((text, details, from_extension)) => {
                navigated.from_extension = Some(from_extension);
                let id = Self::append(
                    args,
                    ids,
                    Append::BranchSummary {
                        from: new_leaf,
                        summary: text,
                        details,
                        from_hook: Some(from_extension),
                    },
                )
                .await?;
                navigated.summary_entry_id = Some(id.clone());
                navigated.leaf_id = Some(id.clone());
                id
            }
            None => {
                let moved = args
                    .writer
                    .call(
                        |r| WriterMsg::Branch(ids.sent_by("Compactor"), new_leaf.clone(), r),
                        Some(CALL_TIMEOUT),
                    )
                    .await;
                match moved {
                    Ok(ractor::rpc::CallResult::Success(r)) => r?,
                    _ => return Err("the session writer did not answer".into()),
                }
                navigated.leaf_id = new_leaf;
                target_id
            }
        };
        if let Some(label) = options.label.filter(|l| !l.is_empty()) {
            let id = Self::append(
                args,
                ids,
                Append::Label {
                    target_id: label_target,
                    label: Some(label),
                },
            )
            .await?;
            navigated.leaf_id = Some(id);
        }
        Self::tell(
            args,
            ids,
            ExtensionEvent::SessionTree {
                new_leaf_id: navigated.leaf_id.clone(),
                old_leaf_id,
                summary_entry_id: navigated.summary_entry_id.clone(),
                from_extension: navigated.from_extension,
            },
        )
        .await;
        Ok(navigated)
    }

    /// The summary text and `details` of the entries `/tree` leaves behind (compaction.md
    /// §9.2–9.3).
    async fn branch_summary(
        args: &CompactorArgs,
        tree: &SessionTree,
        left_behind: &[usize],
        options: &TreeOptions,
    ) -> Result<(String, serde_json::Value), String> {
        // pi budgets with 128000 when the window is unknown.
        let window = args
            .provider
            .context_window(&args.model.1)
            .unwrap_or(128_000);
        let budget = window.saturating_sub(args.branch_reserve_tokens);
        let (messages, files) = prepare_branch_entries(tree, left_behind, budget);
        if messages.is_empty() {
            return Ok((NO_CONTENT.to_owned(), files.details()));
        }
        let custom = options.custom_instructions.as_deref();
        let (instructions, focus) = match custom {
            Some(c) if options.replace_instructions => (c, None),
            _ => (BRANCH_INSTRUCTIONS, custom),
        };
        let request = |m: &[AgentMessage]| {
            request_text(&serialize_conversation(m), None, instructions, focus)
        };
        let (_never_abort, abort) = watch::channel(false);
        let text = summarize_trimming(
            args.provider.as_ref(),
            &args.model,
            &SummaryOptions::branch(),
            &messages,
            request,
            abort,
        )
        .await?;
        Ok((
            format!("{BRANCH_SUMMARY_PREAMBLE}{text}{}", files.summary_suffix()),
            files.details(),
        ))
    }
}

/// The `content` of a custom message entry.
#[derive(serde::Deserialize)]
struct ContentOnly {
    content: pith_events::UserContent,
}

/// pi's message when the retry after an overflow compaction overflowed again.
pub const OVERFLOW_GAVE_UP: &str = "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.";

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

impl Actor for Compactor {
    type Msg = CompactorMsg;
    type State = CompactorArgs;
    type Arguments = CompactorArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<CompactorMsg>,
        args: CompactorArgs,
    ) -> Result<CompactorArgs, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        _me: ActorRef<CompactorMsg>,
        msg: CompactorMsg,
        state: &mut CompactorArgs,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            CompactorMsg::Manual(ids, summary, reply) => {
                let _ = reply.send(Self::manual(state, ids, summary).await);
            }
            CompactorMsg::Compact(ids, focus, reply) => {
                let answer = match Self::snapshot(state, ids).await {
                    Ok(snapshot) => {
                        Self::announced(state, ids, Trigger::Manual, false, snapshot, focus)
                            .await
                            .map_err(|e| e.to_string())
                    }
                    Err(e) => Err(e),
                };
                let _ = reply.send(answer.map(|(id, _)| id));
            }
            CompactorMsg::SetModel(provider, model) => {
                state.provider = provider;
                state.model = model;
            }
            CompactorMsg::SetThinkingLevel(level) => state.thinking_level = level,
            CompactorMsg::BeforePrompt(ids, reply) => {
                Self::before_prompt(state, ids).await;
                let _ = reply.send(());
            }
            CompactorMsg::NavigateTree(ids, target, options, reply) => {
                let _ = reply.send(Self::navigate(state, ids, target, options).await);
            }
            CompactorMsg::AfterRun(ids, reply_message, retried, reply) => {
                let _ = reply.send(Self::after_run(state, ids, &reply_message, retried).await);
            }
        }
        Ok(())
    }
}
