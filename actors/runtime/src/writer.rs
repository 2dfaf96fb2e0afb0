//! SessionWriter: the only owner of the session file (through `pith_store::Session`).
//!
//! Appends are handled one at a time in mailbox order, so entries reach the file in the order
//! they were sent: a toolResult never before the assistant message that called the tool. Each
//! appended entry is cast to the projection before the append is answered, so anyone who waited
//! for an append and then asks the projection sees it folded in. fsync at turn end
//! ([`WriterMsg::Sync`]) and when the actor stops.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::Value;

use pith_events::{AgentMessage, ModelRef, ThinkingLevel, UserContent};
use pith_store::{Entry, Header, Leaf, Session, SessionTree};

use crate::RuntimeError;
use crate::envelope::{CallError, Envelope, MessageKind, Origin};
use crate::event::{RuntimeEvent, UiSink};
use crate::projection::ProjectionMsg;
use crate::trace::ActorName;

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
    ModelChange(ModelRef),
    /// `appendThinkingLevelChange`.
    ThinkingLevel(ThinkingLevel),
    /// `appendSessionInfo`: the session's name.
    SessionInfo {
        /// The name, already trimmed.
        name: String,
    },
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
        /// The summary requests' usage (pi ≥ 0.81); none for a summary an extension gave.
        usage: Option<Value>,
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
        /// The summary request's usage (pi ≥ 0.81).
        usage: Option<Value>,
        /// `fromHook`.
        from_hook: Option<bool>,
    },
    /// `appendContextEdit` (pi ≥ 0.87): changes what `target_id` contributes to the context
    /// (spec: tree-and-context.md §2.1); `None` hides it, as auto-retry and overflow recovery
    /// do with a failed attempt (compaction.md §3).
    ContextEdit {
        /// The edited entry.
        target_id: String,
        /// Its new content, or `None` to leave it out.
        replacement: Option<UserContent>,
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
            Append::ModelChange(_) => "append_model_change",
            Append::ThinkingLevel(_) => "append_thinking_level",
            Append::SessionInfo { .. } => "append_session_info",
            Append::Compaction { .. } => "append_compaction",
            Append::BranchSummary { .. } => "branch_with_summary",
            Append::Label { .. } => "append_label",
            Append::ContextEdit { .. } => "append_context_edit",
        }
    }
}

/// A copy of the log for readers (projection rebuilds, extensions).
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The header.
    pub header: Header,
    /// Every entry in file order, with the index, labels and leaf, as they were when the
    /// snapshot was taken: shared with the writer, copied only if the session changes while
    /// the snapshot is held.
    pub tree: Arc<SessionTree>,
    /// The session file (may not exist yet).
    pub session_file: Option<std::path::PathBuf>,
    /// The session's cwd.
    pub cwd: String,
}

impl Snapshot {
    /// Every entry in file order.
    pub fn entries(&self) -> &[Entry] {
        self.tree.entries()
    }

    /// The leaf (its index, or the root).
    pub fn leaf(&self) -> Leaf {
        self.tree.leaf()
    }
}

/// Messages of the SessionWriter.
#[derive(Debug)]
pub enum WriterMsg {
    /// Append at the leaf; answered with the new entry's id once written (or buffered, before
    /// the first assistant message), or with the error text.
    Append {
        /// What to append.
        append: Append,
        /// The new entry's id.
        reply: RpcReplyPort<Result<String, pith_store::Error>>,
    },
    /// Move the leaf (`branch` to `target`, or the root with `None`); answered when moved.
    Branch {
        /// The new leaf.
        target: Option<String>,
        /// Done, or pi's `Entry <id> not found`.
        reply: RpcReplyPort<Result<(), pith_store::Error>>,
    },
    /// fsync the file (turn end); answered when durable.
    Sync {
        /// Durable, or why not.
        reply: RpcReplyPort<Result<(), pith_store::Error>>,
    },
    /// Answered with a copy of the log.
    Snapshot {
        /// The copy.
        reply: RpcReplyPort<Snapshot>,
    },
}

impl MessageKind for WriterMsg {
    fn kind(&self) -> &'static str {
        match self {
            WriterMsg::Append { append, .. } => append.kind(),
            WriterMsg::Branch { .. } => "branch",
            WriterMsg::Sync { .. } => "sync",
            WriterMsg::Snapshot { .. } => "snapshot",
        }
    }
}

/// The SessionWriter as the other actors use it: one [`Origin::call`] per request.
#[derive(Debug, Clone)]
pub struct WriterRef(pub ActorRef<Envelope<WriterMsg>>);

impl WriterRef {
    /// Appends at the leaf; the new entry's id.
    ///
    /// Errors: the store's error, or why the writer did not answer.
    pub async fn append(&self, from: &Origin, append: Append) -> Result<String, RuntimeError> {
        Ok(from
            .call(&self.0, "session writer", |reply| WriterMsg::Append {
                append,
                reply,
            })
            .await??)
    }

    /// Moves the leaf to `target` (the root with `None`).
    ///
    /// Errors: `Entry <id> not found`, or why the writer did not answer.
    pub async fn branch(&self, from: &Origin, target: Option<String>) -> Result<(), RuntimeError> {
        Ok(from
            .call(&self.0, "session writer", |reply| WriterMsg::Branch {
                target,
                reply,
            })
            .await??)
    }

    /// Makes the file durable.
    ///
    /// Errors: the fsync's error, or why the writer did not answer.
    pub async fn sync(&self, from: &Origin) -> Result<(), RuntimeError> {
        Ok(from
            .call(&self.0, "session writer", |reply| WriterMsg::Sync { reply })
            .await??)
    }

    /// A copy of the log.
    ///
    /// Errors: why the writer did not answer.
    pub async fn snapshot(&self, from: &Origin) -> Result<Snapshot, CallError> {
        from.call(&self.0, "session writer", |reply| WriterMsg::Snapshot {
            reply,
        })
        .await
    }
}

/// Arguments of the writer: the opened session and the projection to feed.
pub struct WriterArgs {
    /// The session, already opened (and locked) by the runtime.
    pub session: Session,
    /// Receives every appended entry and leaf move.
    pub projection: ActorRef<Envelope<ProjectionMsg>>,
    /// Where write failures and notices (torn tail, rewritten file) go: the user hears them.
    pub ui: UiSink,
}

/// The writer's state.
pub struct WriterState {
    session: Session,
    projection: ActorRef<Envelope<ProjectionMsg>>,
    ui: UiSink,
}

/// The SessionWriter actor.
pub struct SessionWriter;

impl SessionWriter {
    fn snapshot(session: &Session) -> Snapshot {
        Snapshot {
            header: session.header().clone(),
            tree: session.shared_tree(),
            session_file: session.session_file().map(ToOwned::to_owned),
            cwd: session.cwd().to_owned(),
        }
    }
}

impl SessionWriter {
    fn append(
        state: &mut WriterState,
        from: &Origin,
        append: Append,
    ) -> Result<String, pith_store::Error> {
        let s = &mut state.session;
        let before = s.entries().len();
        // A retry's or an overflow's `context_edit` and an extension's `appendEntry` (the only
        // `custom` entries pith writes) are announced as pi 1.6.0 announces entries appended
        // outside message persistence (`entry_appended`, spec: agent-and-events.md §2, §4).
        let announce = matches!(append, Append::ContextEdit { .. } | Append::Custom { .. });
        let result = match append {
            Append::Message(m) => s.append_message(*m),
            Append::CustomMessage {
                custom_type,
                content,
                display,
                details,
            } => s.append_custom_message_entry(&custom_type, content, display, details),
            Append::Custom { custom_type, data } => s.append_custom_entry(&custom_type, data),
            Append::ModelChange(model) => s.append_model_change(&model.provider, &model.id),
            Append::ThinkingLevel(level) => s.append_thinking_level_change(level.as_str()),
            Append::SessionInfo { name } => s.append_session_info(&name),
            Append::Compaction {
                summary,
                first_kept_entry_id,
                tokens_before,
                details,
                usage,
                from_hook,
            } => s.append_compaction_entry(
                &summary,
                Some(&first_kept_entry_id),
                tokens_before,
                details,
                from_hook,
                usage,
            ),
            Append::BranchSummary {
                from,
                summary,
                details,
                usage,
                from_hook,
            } => s.branch_with_summary(from.as_deref(), &summary, details, from_hook, usage),
            Append::Label { target_id, label } => {
                s.append_label_change(&target_id, label.as_deref())
            }
            Append::ContextEdit {
                target_id,
                replacement,
            } => s.append_context_edit(&target_id, replacement),
        };
        if result.is_ok() {
            // The search index reads what was appended (store/src/search).
            s.note_appended();
        }
        // The entry is in memory even when the write failed; the projection follows memory,
        // and the next successful write persists it.
        if let Some(entry) = s.entries().get(before) {
            tracing::Span::current().record("entry", entry.id());
            from.cast(
                &state.projection,
                ProjectionMsg::Appended {
                    entry: entry.clone(),
                },
            );
            if announce && let Ok(entry) = serde_json::from_str(entry.raw()) {
                state.ui.notify(RuntimeEvent::Agent(Box::new(
                    pith_events::AgentEvent::EntryAppended { entry },
                )));
            }
        }
        for notice in s.take_notices() {
            tracing::warn!(user_notified = true, "{notice}");
            state.ui.notify(RuntimeEvent::Notice(notice.to_string()));
        }
        if let Err(e) = &result {
            state.ui.notify(RuntimeEvent::WriteFailed(format!(
                "could not save the session: {e}; it is kept in memory and written with the next successful write"
            )));
        }
        result
    }

    fn on(state: &mut WriterState, from: &Origin, msg: WriterMsg) {
        match msg {
            WriterMsg::Append { append, reply } => {
                let _ = reply.send(Self::append(state, from, append));
            }
            WriterMsg::Branch { target, reply } => {
                let result = match &target {
                    Some(id) => state.session.branch(id),
                    None => {
                        state.session.reset_leaf();
                        Ok(())
                    }
                };
                if result.is_ok() {
                    from.cast(
                        &state.projection,
                        ProjectionMsg::LeafMoved {
                            leaf: state.session.tree().leaf(),
                        },
                    );
                }
                let _ = reply.send(result);
            }
            WriterMsg::Sync { reply } => {
                let result = state.session.sync();
                if let Err(e) = &result {
                    state.ui.notify(RuntimeEvent::WriteFailed(format!(
                        "could not make the session durable (fsync): {e}"
                    )));
                }
                let _ = reply.send(result);
            }
            WriterMsg::Snapshot { reply } => {
                let _ = reply.send(Self::snapshot(&state.session));
            }
        }
    }
}

impl Actor for SessionWriter {
    type Msg = Envelope<WriterMsg>;
    type State = WriterState;
    type Arguments = WriterArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<Envelope<WriterMsg>>,
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
        _me: ActorRef<Envelope<WriterMsg>>,
        Envelope { trace, msg }: Envelope<WriterMsg>,
        state: &mut WriterState,
    ) -> Result<(), ActorProcessingErr> {
        let span = trace.span(
            &ActorName::SessionWriter,
            msg.kind(),
            state.session.session_id(),
        );
        let _in = span.enter();
        Self::on(state, &Origin::new(ActorName::SessionWriter, &trace), msg);
        Ok(())
    }

    async fn post_stop(
        &self,
        _me: ActorRef<Envelope<WriterMsg>>,
        state: &mut WriterState,
    ) -> Result<(), ActorProcessingErr> {
        // Shutdown, switch or restart: whatever is pending is written and made durable.
        if let Err(e) = state.session.flush() {
            state.ui.notify(RuntimeEvent::WriteFailed(format!(
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
