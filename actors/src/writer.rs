//! SessionWriter: the only owner of the session file (through `pith_store::Session`).
//!
//! Appends are handled one at a time in mailbox order, so entries reach the file in the order
//! they were sent: a toolResult never before the assistant message that called the tool. Each
//! appended entry is cast to the projection before the append is answered, so anyone who waited
//! for an append and then asks the projection sees it folded in. fsync at turn end
//! ([`WriterMsg::Sync`]) and when the actor stops.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::Value;
use tracing::Instrument;

use pith_events::{AgentMessage, UserContent};
use pith_store::{Entry, Header, Leaf, Session};

use crate::projection::ProjectionMsg;
use crate::trace::TraceIds;

/// What to append (pi's `append*` calls, spec: tree-and-context.md §2.1).
#[derive(Debug, Clone)]
pub enum Append {
    /// `appendMessage`: user, assistant, toolResult, bashExecution (boxed: messages are large).
    Message(Box<AgentMessage>),
    /// `appendCustomMessageEntry`.
    CustomMessage {
        /// Extension id.
        custom_type: String,
        /// Content.
        content: UserContent,
        /// Shown in the UI.
        display: bool,
        /// Extension data.
        details: Option<Value>,
    },
    /// `appendCustomEntry`.
    Custom {
        /// Extension id.
        custom_type: String,
        /// Extension data.
        data: Option<Value>,
    },
    /// `appendModelChange`.
    ModelChange {
        /// Provider.
        provider: String,
        /// Model id.
        model_id: String,
    },
    /// `appendThinkingLevelChange`.
    ThinkingLevel(String),
    /// `appendSessionInfo`.
    SessionInfo(String),
    /// `appendCompaction`.
    Compaction {
        /// Summary text.
        summary: String,
        /// First entry kept verbatim.
        first_kept_entry_id: String,
        /// Context tokens before.
        tokens_before: u64,
        /// `{readFiles, modifiedFiles}` for pith's own summaries.
        details: Option<Value>,
        /// `fromHook`.
        from_hook: Option<bool>,
    },
    /// `branchWithSummary`: moves the leaf to `from` (`None` = the root) and appends a
    /// branch summary there (spec: tree-and-context.md §3).
    BranchSummary {
        /// The new position.
        from: Option<String>,
        /// Summary text.
        summary: String,
        /// `{readFiles, modifiedFiles}`.
        details: Option<Value>,
        /// `fromHook`.
        from_hook: Option<bool>,
    },
    /// `appendLabelChange`: sets (non-empty) or clears a label.
    Label {
        /// The labelled entry.
        target_id: String,
        /// The label; `None` clears it.
        label: Option<String>,
    },
}

impl Append {
    fn kind(&self) -> &'static str {
        match self {
            Append::Message(_) => "append_message",
            Append::CustomMessage { .. } => "append_custom_message",
            Append::Custom { .. } => "append_custom",
            Append::ModelChange { .. } => "append_model_change",
            Append::ThinkingLevel(_) => "append_thinking_level",
            Append::SessionInfo(_) => "append_session_info",
            Append::Compaction { .. } => "append_compaction",
            Append::BranchSummary { .. } => "branch_with_summary",
            Append::Label { .. } => "append_label",
        }
    }
}

/// A copy of the log for readers (projection rebuilds, extensions).
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The header.
    pub header: Header,
    /// Every entry in file order.
    pub entries: Vec<Entry>,
    /// The leaf's index, or the root.
    pub leaf: Leaf,
    /// The session file (may not exist yet).
    pub session_file: Option<std::path::PathBuf>,
    /// The session's cwd.
    pub cwd: String,
}

/// Messages of the SessionWriter.
#[derive(Debug)]
pub enum WriterMsg {
    /// Append at the leaf; answered with the new entry's id once written (or buffered, before
    /// the first assistant message), or with the error text.
    Append(TraceIds, Append, RpcReplyPort<Result<String, String>>),
    /// Move the leaf (`branch`, or the root with `None`); answered when moved.
    Branch(TraceIds, Option<String>, RpcReplyPort<Result<(), String>>),
    /// fsync the file (turn end); answered when durable.
    Sync(TraceIds, RpcReplyPort<Result<(), String>>),
    /// Answered with a copy of the log.
    Snapshot(TraceIds, RpcReplyPort<Snapshot>),
}

/// Arguments of the writer: the opened session and the projection to feed.
pub struct WriterArgs {
    /// The session, already opened (and locked) by the runtime.
    pub session: Session,
    /// Receives every appended entry and leaf move.
    pub projection: ActorRef<ProjectionMsg>,
    /// Where write failures and notices (torn tail, rewritten file) go: the user hears them.
    pub ui: crate::event::UiSink,
}

/// The writer's state.
pub struct WriterState {
    session: Session,
    projection: ActorRef<ProjectionMsg>,
    ui: crate::event::UiSink,
}

/// The SessionWriter actor.
pub struct SessionWriter;

impl SessionWriter {
    fn snapshot(session: &Session) -> Snapshot {
        Snapshot {
            header: session.header().clone(),
            entries: session.entries().to_vec(),
            leaf: session.tree().leaf(),
            session_file: session.session_file().map(ToOwned::to_owned),
            cwd: session.cwd().to_owned(),
        }
    }
}

impl Actor for SessionWriter {
    type Msg = WriterMsg;
    type State = WriterState;
    type Arguments = WriterArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<WriterMsg>,
        args: WriterArgs,
    ) -> Result<WriterState, ActorProcessingErr> {
        Ok(WriterState {
            session: args.session,
            projection: args.projection,
            ui: args.ui,
        })
    }

    async fn handle(
        &self,
        _me: ActorRef<WriterMsg>,
        msg: WriterMsg,
        state: &mut WriterState,
    ) -> Result<(), ActorProcessingErr> {
        let session_id = state.session.session_id().to_owned();
        match msg {
            WriterMsg::Append(ids, append, reply) => {
                let span = crate::message_span!("SessionWriter", append.kind(), session_id, ids);
                async {
                    let s = &mut state.session;
                    let before = s.entries().len();
                    let result = match append {
                        Append::Message(m) => s.append_message(*m),
                        Append::CustomMessage {
                            custom_type,
                            content,
                            display,
                            details,
                        } => s.append_custom_message_entry(&custom_type, content, display, details),
                        Append::Custom { custom_type, data } => {
                            s.append_custom_entry(&custom_type, data)
                        }
                        Append::ModelChange { provider, model_id } => {
                            s.append_model_change(&provider, &model_id)
                        }
                        Append::ThinkingLevel(level) => s.append_thinking_level_change(&level),
                        Append::SessionInfo(name) => s.append_session_info(&name),
                        Append::Compaction {
                            summary,
                            first_kept_entry_id,
                            tokens_before,
                            details,
                            from_hook,
                        } => s.append_compaction(
                            &summary,
                            &first_kept_entry_id,
                            tokens_before,
                            details,
                            from_hook,
                        ),
                        Append::BranchSummary {
                            from,
                            summary,
                            details,
                            from_hook,
                        } => s.branch_with_summary(from.as_deref(), &summary, details, from_hook),
                        Append::Label { target_id, label } => {
                            s.append_label_change(&target_id, label.as_deref())
                        }
                    };
                    // The entry is in memory even when the write failed; the projection follows
                    // memory, and the next successful write persists it.
                    if let Some(entry) = s.entries().get(before) {
                        tracing::Span::current().record("entry", entry.id());
                        let _ = state.projection.cast(ProjectionMsg::Appended(
                            ids.sent_by("SessionWriter"),
                            entry.clone(),
                        ));
                    }
                    for notice in s.take_notices() {
                        tracing::warn!("{notice}");
                        state.ui.notify(crate::event::RuntimeEvent::Notice(notice.to_string()));
                    }
                    if let Err(e) = &result {
                        state.ui.notify(crate::event::RuntimeEvent::WriteFailed(format!(
                            "could not save the session: {e}; it is kept in memory and written with the next successful write"
                        )));
                    }
                    let _ = reply.send(result.map_err(|e| e.to_string()));
                }
                .instrument(span)
                .await;
            }
            WriterMsg::Branch(ids, target, reply) => {
                let span = crate::message_span!("SessionWriter", "branch", session_id, ids);
                let _guard = span.enter();
                let result = match &target {
                    Some(id) => state.session.branch(id).map_err(|e| e.to_string()),
                    None => {
                        state.session.reset_leaf();
                        Ok(())
                    }
                };
                if result.is_ok() {
                    let _ = state.projection.cast(ProjectionMsg::LeafMoved(
                        ids.sent_by("SessionWriter"),
                        state.session.tree().leaf(),
                    ));
                }
                let _ = reply.send(result);
            }
            WriterMsg::Sync(ids, reply) => {
                let span = crate::message_span!("SessionWriter", "sync", session_id, ids);
                let _guard = span.enter();
                let result = state.session.sync().map_err(|e| e.to_string());
                if let Err(e) = &result {
                    state
                        .ui
                        .notify(crate::event::RuntimeEvent::WriteFailed(format!(
                            "could not make the session durable (fsync): {e}"
                        )));
                }
                let _ = reply.send(result);
            }
            WriterMsg::Snapshot(ids, reply) => {
                let span = crate::message_span!("SessionWriter", "snapshot", session_id, ids);
                let _g = span.enter();
                let _ = reply.send(Self::snapshot(&state.session));
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _me: ActorRef<WriterMsg>,
        state: &mut WriterState,
    ) -> Result<(), ActorProcessingErr> {
        // Shutdown, switch or restart: whatever is pending is written and made durable.
        if let Err(e) = state.session.flush() {
            state
                .ui
                .notify(crate::event::RuntimeEvent::WriteFailed(format!(
                    "could not save the session: {e}"
                )));
            return Err(ActorProcessingErr::from(e.to_string()));
        }
        state
            .session
            .sync()
            .map_err(|e| ActorProcessingErr::from(e.to_string()))?;
        Ok(())
    }
}
