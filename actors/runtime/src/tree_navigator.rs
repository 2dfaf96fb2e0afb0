//! TreeNavigator: `/tree` moves the leaf (pi's `navigateTree`, spec: tree-and-context.md §9),
//! summarizing the branch left behind through the model when asked (compaction.md §9).
//!
//! It works from a snapshot of the log and ends with one write (a branch summary, a label, or a
//! leaf move), so it holds the session's [`LeafGuard`] meanwhile: a compaction never appends on
//! a leaf it is moving, nor it on a leaf a compaction is summarizing.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use pith_events::{AgentMessage, EntryType, ExtensionEvent, ModelRef, Usage};
use pith_store::SessionTree;
use pith_store::branch_summary::{
    BRANCH_SUMMARY_PREAMBLE, NO_CONTENT, collect_entries_for_branch_summary, prepare_branch_entries,
};

use crate::RuntimeError;
use crate::envelope::{Envelope, MessageKind, Origin};
use crate::event::EventSink;
use crate::extension::Verdict;
use crate::extension_host::Extensions;
use crate::summarize::{
    BRANCH_INSTRUCTIONS, SummaryOptions, SummaryRetry, request_text, serialize_conversation,
    summarize_trimming,
};
use crate::trace::ActorName;
use crate::writer::{Append, WriterRef};
use pith_llm::provider::Provider;
use pith_llm::retry::RetrySettings;

/// Held by whoever works from a snapshot of the leaf and then writes at it (a compaction, a
/// `/tree` move), so the two never interleave.
pub type LeafGuard = Arc<tokio::sync::Mutex<()>>;

/// Messages of the TreeNavigator.
#[derive(Debug)]
pub enum NavigatorMsg {
    /// `/tree`: move the leaf to an entry, summarizing the branch left behind when asked
    /// (tree-and-context.md §9); answered with what changed, or pi's error.
    Navigate {
        /// The entry selected.
        target_id: String,
        /// pi's options.
        options: NavigateOptions,
        /// Cancelled by the user's abort: a branch summary being written stops at once and
        /// nothing changes (`Navigated::aborted`).
        abort: CancellationToken,
        /// What changed.
        reply: RpcReplyPort<Result<Navigated, RuntimeError>>,
    },
    /// Summarize with this model from now on (it follows the session's model, as in pi).
    SetModel {
        /// Serves the model.
        provider: Arc<dyn Provider>,
        /// The model.
        model: ModelRef,
    },
}

impl MessageKind for NavigatorMsg {
    fn kind(&self) -> &'static str {
        match self {
            NavigatorMsg::Navigate { .. } => "navigate",
            NavigatorMsg::SetModel { .. } => "set_model",
        }
    }
}

/// Options of `/tree` (pi's `navigateTree` options).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NavigateOptions {
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
    /// An extension cancelled the move, or the user aborted its summary: nothing changed.
    pub cancelled: bool,
    /// The user aborted the branch summary (pi's `aborted: true`; `cancelled` too).
    pub aborted: bool,
}

/// What the TreeNavigator needs.
pub struct NavigatorArgs {
    /// Moves the leaf and appends the summary.
    pub writer: WriterRef,
    /// The model that writes branch summaries.
    pub provider: Arc<dyn Provider>,
    /// Which model that is.
    pub model: ModelRef,
    /// `branchSummary.reserveTokens` of the session's cwd.
    pub branch_reserve_tokens: u64,
    /// `retry.*` settings: a summary request that fails transiently is retried.
    pub retry: RetrySettings,
    /// Where `summarization_retry_*` go.
    pub events: EventSink,
    /// The session's extensions.
    pub extensions: Extensions,
    /// Shared with the Compactor.
    pub leaf_guard: LeafGuard,
    /// The session, for traces.
    pub session_id: String,
}

/// The TreeNavigator actor.
pub struct TreeNavigator;

impl TreeNavigator {
    /// pi's `navigateTree` (tree-and-context.md §9), without extension hooks.
    async fn navigate(
        args: &NavigatorArgs,
        from: &Origin,
        target_id: String,
        options: NavigateOptions,
        abort: &CancellationToken,
    ) -> Result<Navigated, RuntimeError> {
        let snapshot = args.writer.snapshot(from).await?;
        let old_leaf = snapshot.leaf();
        let tree = &snapshot.tree;
        let old_leaf_id = tree.leaf_id().map(str::to_owned);
        if old_leaf_id.as_deref() == Some(target_id.as_str()) {
            return Ok(Navigated {
                leaf_id: Some(target_id),
                ..Navigated::default()
            });
        }
        let target = tree
            .index_of(&target_id)
            .ok_or_else(|| pith_store::Error::EntryNotFound(target_id.clone()))?;
        let (left_behind, common) = collect_entries_for_branch_summary(tree, old_leaf, target);
        let id_of = |i: usize| tree.entries()[i].id().to_owned();
        let asked = ExtensionEvent::SessionBeforeTree {
            target_id: target_id.clone(),
            old_leaf_id: old_leaf_id.clone(),
            common_ancestor_id: common.map(id_of),
            entries_to_summarize: left_behind.iter().map(|&i| id_of(i)).collect(),
            user_wants_summary: options.summarize,
            custom_instructions: options.custom_instructions.clone(),
        };
        let supplied = match args.extensions.consult(from, asked).await {
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
            Some(s) => Some((s.summary, s.details, None, true)),
            None if options.summarize && !left_behind.is_empty() => {
                let summary = Self::branch_summary(args, tree, &left_behind, &options, abort).await;
                // pi: an aborted summary cancels the move, and nothing is written.
                if abort.is_cancelled() {
                    return Ok(Navigated {
                        cancelled: true,
                        aborted: true,
                        leaf_id: old_leaf_id,
                        ..Navigated::default()
                    });
                }
                let (text, details, usage) = summary?;
                Some((text, Some(details), usage, false))
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
            Some((text, details, usage, from_extension)) => {
                navigated.from_extension = Some(from_extension);
                let id = args
                    .writer
                    .append(
                        from,
                        Append::BranchSummary {
                            from: new_leaf,
                            summary: text,
                            details,
                            usage: usage.and_then(|u| serde_json::to_value(u).ok()),
                            from_hook: Some(from_extension),
                        },
                    )
                    .await?;
                navigated.summary_entry_id = Some(id.clone());
                navigated.leaf_id = Some(id.clone());
                id
            }
            None => {
                args.writer.branch(from, new_leaf.clone()).await?;
                navigated.leaf_id = new_leaf;
                target_id
            }
        };
        if let Some(label) = options.label.filter(|l| !l.is_empty()) {
            let id = args
                .writer
                .append(
                    from,
                    Append::Label {
                        target_id: label_target,
                        label: Some(label),
                    },
                )
                .await?;
            navigated.leaf_id = Some(id);
        }
        args.extensions
            .tell(
                from,
                ExtensionEvent::SessionTree {
                    new_leaf_id: navigated.leaf_id.clone(),
                    old_leaf_id,
                    summary_entry_id: navigated.summary_entry_id.clone(),
                    from_extension: navigated.from_extension,
                },
                &[],
            )
            .await;
        Ok(navigated)
    }

    /// The summary text, `details` and the request's usage (none when nothing was asked) of
    /// the entries `/tree` leaves behind (compaction.md §9.2–9.3).
    async fn branch_summary(
        args: &NavigatorArgs,
        tree: &SessionTree,
        left_behind: &[usize],
        options: &NavigateOptions,
        abort: &CancellationToken,
    ) -> Result<(String, serde_json::Value, Option<Usage>), RuntimeError> {
        // pi budgets with 128000 when the window is unknown.
        let window = args
            .provider
            .context_window(&args.model.id)
            .unwrap_or(128_000);
        let budget = window.saturating_sub(args.branch_reserve_tokens);
        let (messages, files) = prepare_branch_entries(tree, left_behind, budget);
        if messages.is_empty() {
            return Ok((NO_CONTENT.to_owned(), files.details(), None));
        }
        let custom = options.custom_instructions.as_deref();
        let (instructions, focus) = match custom {
            Some(c) if options.replace_instructions => (c, None),
            _ => (BRANCH_INSTRUCTIONS, custom),
        };
        let request = |m: &[AgentMessage]| {
            request_text(&serialize_conversation(m), None, instructions, focus)
        };
        let reply = summarize_trimming(
            args.provider.as_ref(),
            &args.model,
            &SummaryOptions::branch(),
            &messages,
            request,
            abort.clone(),
            Some(&SummaryRetry {
                settings: args.retry,
                events: args.events.clone(),
                source: "branchSummary",
                reason: None,
            }),
        )
        .await?;
        Ok((
            format!(
                "{BRANCH_SUMMARY_PREAMBLE}{}{}",
                reply.text,
                files.summary_suffix()
            ),
            files.details(),
            Some(reply.usage),
        ))
    }
}

/// The `content` of a custom message entry.
#[derive(serde::Deserialize)]
struct ContentOnly {
    content: pith_events::UserContent,
}

impl Actor for TreeNavigator {
    type Msg = Envelope<NavigatorMsg>;
    type State = NavigatorArgs;
    type Arguments = NavigatorArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<Envelope<NavigatorMsg>>,
        args: NavigatorArgs,
    ) -> Result<NavigatorArgs, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        _me: ActorRef<Envelope<NavigatorMsg>>,
        Envelope { trace, msg }: Envelope<NavigatorMsg>,
        state: &mut NavigatorArgs,
    ) -> Result<(), ActorProcessingErr> {
        let span = trace.span(&ActorName::TreeNavigator, msg.kind(), &state.session_id);
        let from = Origin::new(ActorName::TreeNavigator, &trace);
        match msg {
            NavigatorMsg::Navigate {
                target_id,
                options,
                abort,
                reply,
            } => {
                let guard = state.leaf_guard.clone();
                let _held = guard.lock().await;
                let navigated = Self::navigate(state, &from, target_id, options, &abort)
                    .instrument(span)
                    .await;
                let _ = reply.send(navigated);
            }
            NavigatorMsg::SetModel { provider, model } => {
                let _in = span.enter();
                state.provider = provider;
                state.model = model;
            }
        }
        Ok(())
    }
}
