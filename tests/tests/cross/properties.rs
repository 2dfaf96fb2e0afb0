//! Property tests of the tree invariants over random sequences of appends and leaf moves.

use std::sync::Arc;

use proptest::prelude::*;

use pith_events::{AgentMessage, AssistantMessage, ContentBlock};
use pith_store::env::{RandomIds, SteppingClock};
use pith_store::{Leaf, OpenMode, Session, SessionEnv};

#[derive(Debug, Clone)]
enum Op {
    User(String),
    Assistant(String),
    /// Move the leaf to the entry at this position (modulo the entry count).
    Branch(usize),
    ResetLeaf,
    BranchSummary(Option<usize>, String),
    Label(usize, Option<String>),
    Name(String),
    Compact(usize),
    Custom(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => "[a-z é😀\"\\\\]{0,12}".prop_map(Op::User),
        4 => "[a-z \n]{0,12}".prop_map(Op::Assistant),
        2 => any::<usize>().prop_map(Op::Branch),
        1 => Just(Op::ResetLeaf),
        1 => (proptest::option::of(any::<usize>()), "[a-z]{0,6}").prop_map(|(a, s)| Op::BranchSummary(a, s)),
        1 => (any::<usize>(), proptest::option::of("[a-z]{0,4}")).prop_map(|(a, l)| Op::Label(a, l)),
        1 => "[a-z ]{0,6}".prop_map(Op::Name),
        1 => any::<usize>().prop_map(Op::Compact),
        1 => any::<u8>().prop_map(Op::Custom),
    ]
}

fn user(text: &str) -> AgentMessage {
    AgentMessage::user_text(text, 1)
}

fn assistant(text: &str) -> AgentMessage {
    AgentMessage::Assistant(AssistantMessage::new(
        "faux",
        "faux",
        "faux-1",
        vec![ContentBlock::text(text)],
        2,
    ))
}

fn id_at(s: &Session, i: usize) -> Option<String> {
    let n = s.entries().len();
    (n > 0).then(|| s.entries()[i % n].id().to_owned())
}

fn apply(s: &mut Session, op: &Op) {
    match op {
        Op::User(t) => drop(s.append_message(user(t)).unwrap()),
        Op::Assistant(t) => drop(s.append_message(assistant(t)).unwrap()),
        Op::Branch(i) => {
            if let Some(id) = id_at(s, *i) {
                s.branch(&id).unwrap();
            }
        }
        Op::ResetLeaf => s.reset_leaf(),
        Op::BranchSummary(at, text) => {
            let target = at.and_then(|i| id_at(s, i));
            s.branch_with_summary(target.as_deref(), text, None, Some(false), None)
                .unwrap();
        }
        Op::Label(i, label) => {
            if let Some(id) = id_at(s, *i) {
                s.append_label_change(&id, label.as_deref()).unwrap();
            }
        }
        Op::Name(n) => drop(s.append_session_info(n).unwrap()),
        Op::Compact(i) => {
            if let Some(id) = id_at(s, *i) {
                s.append_compaction("summary", &id, 42, None, Some(false))
                    .unwrap();
            }
        }
        Op::Custom(n) => drop(
            s.append_custom_entry("ext", Some(serde_json::json!({ "n": n })))
                .unwrap(),
        ),
    }
}

fn context_json(s: &Session, leaf: Leaf) -> String {
    s.context_at(leaf).to_json()
}

proptest! {
    #[test]
    fn tree_invariants_hold(ops in proptest::collection::vec(op(), 1..40)) {
        let tmp = tempfile::tempdir().unwrap();
        let env = SessionEnv {
            agent_dir: tmp.path().join("agent"),
            clock: Arc::new(SteppingClock::new(1_764_000_000_000, 7)),
            ids: Arc::new(RandomIds),
        };
        let mut s = Session::create("/p", None, &env).unwrap();
        for op in &ops {
            let before: Vec<String> = s.entries().iter().map(|e| e.raw().to_owned()).collect();
            apply(&mut s, op);
            // Appends and leaf moves never change existing entries.
            let after: Vec<String> = s.entries().iter().take(before.len()).map(|e| e.raw().to_owned()).collect();
            prop_assert_eq!(&after, &before);
            // The context path ends at the leaf.
            let path = s.tree().get_branch(None);
            prop_assert_eq!(path.last().map(|e| e.id()), s.leaf_id());
            if let Some(first) = path.first() {
                prop_assert!(first.parent().id().is_none());
            }
        }
        // What is on disk reads back as the same entries, with the last line as the leaf.
        let has_assistant = s.entries().iter().any(|e| e.is_assistant_message());
        if let (true, Some(file)) = (has_assistant, s.session_file().map(|p| p.to_owned())) {
            let back = Session::open(&file, None, None, OpenMode::Inspect, &env).unwrap();
            let raws = |x: &Session| x.entries().iter().map(|e| e.raw().to_owned()).collect::<Vec<_>>();
            prop_assert_eq!(raws(&back), raws(&s));
            let last = s.entries().len() - 1;
            prop_assert_eq!(context_json(&back, back.tree().leaf()), context_json(&s, Leaf::At(last)));
        }
        // A fork reproduces the source path's context.
        if let Some(leaf) = s.leaf_id().map(str::to_owned) {
            let want = context_json(&s, s.tree().leaf());
            s.create_branched_session(&leaf).unwrap();
            prop_assert_eq!(context_json(&s, s.tree().leaf()), want);
        }
    }
}
