//! Compactor: owns compaction decisions (spec: compaction.md).
//!
//! [`CompactorMsg::Compact`] is pi's `/compact [focus]`: the cut point and the messages to
//! summarize come from `pith_store::compaction::prepare_compaction`, the summary from the current
//! model (history, plus the prefix of a split turn), followed by the file-list tags; the entry
//! records `details` and `fromHook: false`. [`CompactorMsg::Manual`] appends a compaction with a
//! summary given by the caller (an extension's, or a test's). The threshold and overflow
//! triggers are still to come.
//!
//! Unlike pi, `/compact` does not abort a running turn first: the preparation is taken from
//! the log as it stands, and replies that land meanwhile sit between the first kept entry and
//! the compaction entry, so the context keeps them verbatim.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::watch;

use pith_events::{AgentEvent, CompactionResult, EntryType};
use pith_store::compaction::{CompactionSettings, prepare_compaction};
use pith_store::{Leaf, SessionTree};

use crate::agent::EventSink;
use crate::projection::ProjectionMsg;
use crate::provider::Provider;
use crate::summarize::{
    HISTORY_INSTRUCTIONS, TURN_PREFIX_INSTRUCTIONS, UPDATE_INSTRUCTIONS, request_text,
    serialize_conversation, summarize,
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
    /// `compaction.*` settings of the session's cwd.
    pub settings: CompactionSettings,
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
        focus: Option<String>,
    ) -> Result<(String, CompactionResult), String> {
        let snapshot = Self::snapshot(args, ids).await?;
        let Leaf::At(leaf) = snapshot.leaf else {
            return Err("Nothing to compact (session too small)".into());
        };
        let (mut tree, _) = SessionTree::new(snapshot.entries);
        tree.set_leaf(Leaf::At(leaf));
        let path = tree.path_to(leaf);
        let Some(prep) = prepare_compaction(&tree, &path, &args.settings) else {
            let last_is_compaction = tree.entries()[leaf].kind() == &EntryType::Compaction;
            return Err(if last_is_compaction {
                "Already compacted"
            } else {
                "Nothing to compact (session too small)"
            }
            .into());
        };
        let (_never_abort, abort) = watch::channel(false);
        let provider = args.provider.as_ref();
        let instructions = if prep.previous_summary.is_some() {
            UPDATE_INSTRUCTIONS
        } else {
            HISTORY_INSTRUCTIONS
        };
        let history = |messages| {
            request_text(
                &serialize_conversation(messages),
                prep.previous_summary.as_deref(),
                instructions,
                focus.as_deref(),
            )
        };
        let mut summary = if prep.is_split_turn && !prep.turn_prefix_messages.is_empty() {
            // pi asks for both at once, history first; one after the other keeps a scripted
            // model's replies in that order.
            let history_part = if prep.messages_to_summarize.is_empty() {
                "No prior history.".to_owned()
            } else {
                summarize(
                    provider,
                    &args.model,
                    history(&prep.messages_to_summarize),
                    abort.clone(),
                )
                .await
                .map_err(|e| format!("Summarization failed: {e}"))?
            };
            let prefix_text = request_text(
                &serialize_conversation(&prep.turn_prefix_messages),
                None,
                TURN_PREFIX_INSTRUCTIONS,
                None,
            );
            let prefix = summarize(provider, &args.model, prefix_text, abort.clone())
                .await
                .map_err(|e| format!("Turn prefix summarization failed: {e}"))?;
            format!("{history_part}\n\n---\n\n**Turn Context (split turn):**\n\n{prefix}")
        } else {
            summarize(
                provider,
                &args.model,
                history(&prep.messages_to_summarize),
                abort.clone(),
            )
            .await
            .map_err(|e| format!("Summarization failed: {e}"))?
        };
        summary.push_str(&prep.file_ops.summary_suffix());
        let first_kept_entry_id = prep
            .first_kept_entry_id
            .unwrap_or_else(|| tree.entries()[leaf].id().to_owned());
        let result = CompactionResult {
            summary,
            first_kept_entry_id,
            tokens_before: prep.tokens_before,
            details: prep.file_ops.details(),
        };
        let id = Self::append(
            args,
            ids,
            Append::Compaction {
                summary: result.summary.clone(),
                first_kept_entry_id: result.first_kept_entry_id.clone(),
                tokens_before: result.tokens_before,
                details: Some(result.details.clone()),
                from_hook: Some(false),
            },
        )
        .await?;
        Ok((id, result))
    }
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
                let reason = "manual".to_owned();
                state.events.emit(AgentEvent::CompactionStart {
                    reason: reason.clone(),
                });
                let outcome = Self::compact(state, ids, focus).await;
                let (result, error_message) = match &outcome {
                    Ok((_, result)) => (Some(result.clone()), None),
                    Err(e) => (None, Some(format!("Compaction failed: {e}"))),
                };
                state.events.emit(AgentEvent::CompactionEnd {
                    reason,
                    result,
                    aborted: false,
                    will_retry: false,
                    error_message,
                });
                let _ = reply.send(outcome.map(|(id, _)| id));
            }
        }
        Ok(())
    }
}
