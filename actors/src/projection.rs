//! Projection: the LLM context of the session, kept current as entries are appended.
//!
//! It mirrors the log (entries are shared, not copied) and folds each appended entry into the
//! cached context: a message, custom message or branch summary at the leaf is pushed; a
//! compaction or a leaf move refolds from the path. Its answer always equals
//! `pith_store::build_session_context` on the same log (tested on every conformance case).

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use pith_events::{AgentMessage, AssistantMessage, EntryType};
use pith_store::{Entry, Leaf, SessionTree, build_session_context};

use crate::trace::TraceIds;

/// The context as the agent uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    /// Messages, oldest first (before `convert_to_llm`).
    pub messages: Vec<AgentMessage>,
    /// `thinkingLevel` (`off` when unset).
    pub thinking_level: String,
    /// `(provider, model id)` of the last model change or assistant message on the path.
    pub model: Option<(String, String)>,
}

/// Messages of the projection.
#[derive(Debug)]
pub enum ProjectionMsg {
    /// An entry was appended; it becomes the leaf. Usually its parent is the old leaf; a
    /// branch summary's is not, and that refolds.
    Appended(TraceIds, Entry),
    /// The leaf moved.
    LeafMoved(TraceIds, Leaf),
    /// Replace everything (start, restart): entries in file order and the leaf.
    Load(Vec<Entry>, Leaf),
    /// Answered with the current context.
    GetContext(TraceIds, RpcReplyPort<Context>),
    /// Answered with the last assistant reply in the context, without copying the rest.
    LastReply(TraceIds, RpcReplyPort<Option<AssistantMessage>>),
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
            (None, _) | (_, EntryType::Compaction) => false,
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
            (s(&m.provider), s(&m.model_id))
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
    type Msg = ProjectionMsg;
    type State = ProjectionState;
    type Arguments = String;

    async fn pre_start(
        &self,
        _me: ActorRef<ProjectionMsg>,
        session_id: String,
    ) -> Result<ProjectionState, ActorProcessingErr> {
        Ok(ProjectionState {
            session_id,
            ..ProjectionState::default()
        })
    }

    async fn handle(
        &self,
        _me: ActorRef<ProjectionMsg>,
        msg: ProjectionMsg,
        state: &mut ProjectionState,
    ) -> Result<(), ActorProcessingErr> {
        let sid = state.session_id.clone();
        match msg {
            ProjectionMsg::Appended(ids, entry) => {
                let span = crate::message_span!("Projection", "appended", sid, ids);
                let _g = span.enter();
                span.record("entry", entry.id());
                state.append(entry);
            }
            ProjectionMsg::LeafMoved(ids, leaf) => {
                let span = crate::message_span!("Projection", "leaf_moved", sid, ids);
                let _g = span.enter();
                state.tree.set_leaf(leaf);
                state.refold();
            }
            ProjectionMsg::Load(entries, leaf) => {
                let (tree, _) = SessionTree::new(entries);
                state.tree = tree;
                state.tree.set_leaf(leaf);
                state.refold();
            }
            ProjectionMsg::GetContext(ids, reply) => {
                let span = crate::message_span!("Projection", "get_context", sid, ids);
                let _g = span.enter();
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
            ProjectionMsg::LastReply(ids, reply) => {
                let span = crate::message_span!("Projection", "last_reply", sid, ids);
                let _g = span.enter();
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
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance");
        let mut checked = 0;
        for case in std::fs::read_dir(&dir).expect("conformance fixtures") {
            let path = case.expect("entry").path().join("session.jsonl");
            if !path.is_file() {
                continue;
            }
            let tmp = tempfile::tempdir().expect("tmp");
            let copy = tmp.path().join("s.jsonl");
            std::fs::copy(&path, &copy).expect("copy");
            let env = pith_store::SessionEnv {
                agent_dir: tmp.path().into(),
                ..pith_store::SessionEnv::system()
            };
            let Ok(session) =
                pith_store::Session::open(&copy, None, None, pith_store::OpenMode::Inspect, &env)
            else {
                continue;
            };
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
                if entry.kind() == &EntryType::Compaction {
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
