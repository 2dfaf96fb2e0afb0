//! Projection: the LLM context of the session, kept current as entries are appended.
//!
//! It mirrors the log (entries are shared, not copied) and folds each appended entry into the
//! cached context: a message, custom message or branch summary at the leaf is pushed; a
//! compaction or a leaf move refolds from the path. Its answer always equals
//! `pith_store::build_session_context` on the same log (tested on every conformance case).

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use pith_events::{AgentMessage, AssistantMessage, EntryType, ModelRef};
use pith_store::{Entry, Leaf, SessionTree, build_session_context};

use crate::envelope::{CallError, Envelope, MessageKind, Origin};
use crate::trace::ActorName;

/// The context as the agent uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    /// Messages, oldest first (before `convert_to_llm`).
    pub messages: Vec<AgentMessage>,
    /// `thinkingLevel` as the log spells it (`off` when unset). A string, not a
    /// [`pith_events::ThinkingLevel`]: a file may hold a level pi did not know.
    pub thinking_level: String,
    /// The model of the last model change or assistant message on the path.
    pub model: Option<ModelRef>,
}

/// Messages of the projection.
#[derive(Debug)]
pub enum ProjectionMsg {
    /// An entry was appended; it becomes the leaf. Usually its parent is the old leaf; a
    /// branch summary's is not, and that refolds.
    Appended {
        /// The entry.
        entry: Entry,
    },
    /// The leaf moved.
    LeafMoved {
        /// The new leaf.
        leaf: Leaf,
    },
    /// Replace everything (start, restart).
    Load {
        /// The writer's tree (every entry in file order, the leaf), shared: the projection
        /// takes its own copy, which is cheaper than building one from the entries.
        tree: Arc<SessionTree>,
    },
    /// Answered with the current context.
    GetContext {
        /// The context.
        reply: RpcReplyPort<Context>,
    },
    /// Answered with the last assistant reply in the context, without copying the rest.
    LastReply {
        /// The reply, if the context has one.
        reply: RpcReplyPort<Option<AssistantMessage>>,
    },
}

impl MessageKind for ProjectionMsg {
    fn kind(&self) -> &'static str {
        match self {
            ProjectionMsg::Appended { .. } => "appended",
            ProjectionMsg::LeafMoved { .. } => "leaf_moved",
            ProjectionMsg::Load { .. } => "load",
            ProjectionMsg::GetContext { .. } => "get_context",
            ProjectionMsg::LastReply { .. } => "last_reply",
        }
    }
}

/// The Projection as the other actors use it.
#[derive(Debug, Clone)]
pub struct ProjectionRef(pub ActorRef<Envelope<ProjectionMsg>>);

impl ProjectionRef {
    /// The current context.
    ///
    /// Errors: why the projection did not answer.
    pub async fn context(&self, from: &Origin) -> Result<Context, CallError> {
        from.call(&self.0, "projection", |reply| ProjectionMsg::GetContext {
            reply,
        })
        .await
    }

    /// The last assistant reply in the context.
    ///
    /// Errors: why the projection did not answer.
    pub async fn last_reply(&self, from: &Origin) -> Result<Option<AssistantMessage>, CallError> {
        from.call(&self.0, "projection", |reply| ProjectionMsg::LastReply {
            reply,
        })
        .await
    }
}

/// The projection's state.
#[derive(Default)]
pub struct ProjectionState {
    tree: SessionTree,
    context: Option<Context>,
    /// How many full refolds happened (observable in tests: appends must not refold).
    pub refolds: u64,
    session_id: String,
}

impl ProjectionState {
    fn refold(&mut self) {
        self.refolds += 1;
        self.context = Some(fold(&self.tree, self.tree.leaf()));
    }

    fn append(&mut self, entry: Entry) {
        let previous_leaf = match self.tree.leaf() {
            Leaf::At(i) => Some(self.tree.entries()[i].id().to_owned()),
            Leaf::Root => None,
        };
        // A branch summary is appended somewhere else than at the leaf.
        let at_leaf = entry.parent().id() == previous_leaf.as_deref();
        let index = self.tree.push(entry);
        let entry = &self.tree.entries()[index];
        let incremental = match (&mut self.context, entry.kind()) {
            _ if !at_leaf => false,
            // A context edit changes messages already folded in (tree-and-context.md §7.2).
            (None, _) | (_, EntryType::Compaction | EntryType::ContextEdit) => false,
            (Some(ctx), kind) => {
                // An entry at the leaf adds exactly what the full fold would add at the end.
                let step = single_step(entry);
                ctx.messages.extend(step.messages);
                if kind == &EntryType::ThinkingLevelChange {
                    ctx.thinking_level = step.thinking_level;
                }
                if step.model.is_some() {
                    ctx.model = step.model;
                }
                true
            }
        };
        if !incremental {
            self.refold();
        }
    }
}

/// What one entry contributes when appended at the leaf: the context of a tree holding only
/// that entry, so the projection rules live in one place (`build_session_context`).
fn single_step(entry: &Entry) -> Context {
    let (one, _) = SessionTree::new(vec![entry.clone()]);
    to_context(&build_session_context(&one, Leaf::At(0)))
}

fn to_context(ctx: &pith_store::SessionContext<'_>) -> Context {
    Context {
        messages: ctx
            .messages
            .iter()
            .filter_map(|m| m.to_agent_message().ok())
            .collect(),
        thinking_level: ctx
            .thinking_level
            .as_ref()
            .and_then(|v| v.as_str())
            .unwrap_or("off")
            .to_owned(),
        model: ctx.model.as_ref().map(|m| {
            let s = |v: &Option<serde_json::Value>| {
                v.as_ref().and_then(|v| v.as_str()).unwrap_or("").to_owned()
            };
            ModelRef::new(s(&m.provider), s(&m.model_id))
        }),
    }
}

/// The full fold: `build_session_context` decoded into agent messages.
pub fn fold(tree: &SessionTree, leaf: Leaf) -> Context {
    to_context(&build_session_context(tree, leaf))
}

/// The Projection actor.
pub struct Projection;

impl Actor for Projection {
    type Msg = Envelope<ProjectionMsg>;
    type State = ProjectionState;
    type Arguments = String;

    async fn pre_start(
        &self,
        _me: ActorRef<Envelope<ProjectionMsg>>,
        session_id: String,
    ) -> Result<ProjectionState, ActorProcessingErr> {
        Ok(ProjectionState {
            session_id,
            ..ProjectionState::default()
        })
    }

    async fn handle(
        &self,
        _me: ActorRef<Envelope<ProjectionMsg>>,
        Envelope { trace, msg }: Envelope<ProjectionMsg>,
        state: &mut ProjectionState,
    ) -> Result<(), ActorProcessingErr> {
        let span = trace.span(&ActorName::Projection, msg.kind(), &state.session_id);
        let _in = span.enter();
        match msg {
            ProjectionMsg::Appended { entry } => {
                span.record("entry", entry.id());
                state.append(entry);
            }
            ProjectionMsg::LeafMoved { leaf } => {
                state.tree.set_leaf(leaf);
                state.refold();
            }
            ProjectionMsg::Load { tree } => {
                state.tree = Arc::unwrap_or_clone(tree);
                state.refold();
            }
            ProjectionMsg::GetContext { reply } => {
                if state.context.is_none() {
                    state.refold();
                }
                let _ = reply.send(
                    state
                        .context
                        .clone()
                        .unwrap_or_else(|| fold(&state.tree, state.tree.leaf())),
                );
            }
            ProjectionMsg::LastReply { reply } => {
                if state.context.is_none() {
                    state.refold();
                }
                let last = state.context.as_ref().and_then(|c| {
                    c.messages.iter().rev().find_map(|m| match m {
                        AgentMessage::Assistant(a) => Some(a.clone()),
                        _ => None,
                    })
                });
                let _ = reply.send(last);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The incremental fold equals the full fold after every append of a real session.
    #[test]
    fn incremental_equals_full_fold_on_conformance_sessions() {
        let mut checked = 0;
        for case in pith_tests::case_dirs() {
            let path = case.join("session.jsonl");
            let tmp = tempfile::tempdir().expect("tmp");
            let copy = tmp.path().join("s.jsonl");
            std::fs::copy(&path, &copy).expect("copy");
            let env = pith_store::SessionEnv {
                agent_dir: tmp.path().into(),
                ..pith_store::SessionEnv::system()
            };
            // A case that does not open fails the test: a fixture is never skipped.
            let session =
                pith_store::Session::open(&copy, None, None, pith_store::OpenMode::Inspect, &env)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            // Replay the file as the writer would have produced it: a leaf move to the
            // entry's parent when it is not the current leaf, then the append.
            let mut state = ProjectionState::default();
            state.refold();
            let mut expected_refolds = 1;
            for entry in session.entries() {
                let parent = entry.parent().id().and_then(|p| state.tree.index_of(p));
                let leaf_index = match state.tree.leaf() {
                    Leaf::At(i) => Some(i),
                    Leaf::Root => None,
                };
                if parent != leaf_index {
                    state.tree.set_leaf(parent.map_or(Leaf::Root, Leaf::At));
                    state.refold();
                    expected_refolds += 1;
                }
                if matches!(entry.kind(), EntryType::Compaction | EntryType::ContextEdit) {
                    expected_refolds += 1;
                }
                state.append(entry.clone());
                let full = fold(&state.tree, state.tree.leaf());
                assert_eq!(
                    state.context.as_ref(),
                    Some(&full),
                    "{} at {}",
                    path.display(),
                    entry.id()
                );
            }
            assert_eq!(
                state.refolds,
                expected_refolds,
                "appends at the leaf never refold: {}",
                path.display()
            );
            checked += 1;
        }
        assert!(checked >= 30, "only {checked} cases");
    }
}
