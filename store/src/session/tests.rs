use super::*;
use crate::env::{SequentialIds, SteppingClock};
use pith_events::js;
use pith_events::{AgentMessage, AssistantMessage, ContentBlock, UserContent};
use std::sync::Arc;

fn env(dir: &Path) -> SessionEnv {
    SessionEnv {
        agent_dir: dir.join("agent"),
        clock: Arc::new(SteppingClock::new(1_735_689_600_000, 1000)),
        ids: Arc::new(SequentialIds::default()),
    }
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

#[test]
fn file_appears_with_the_first_user_message() {
    let tmp = tempfile::tempdir().expect("tmp");
    let env = env(tmp.path());
    let mut s = Session::create("/w", None, &env).expect("create");
    s.append_model_change("faux", "faux-1").expect("append");
    s.append_thinking_level_change("off").expect("append");
    let file = s.session_file().expect("persisted").to_owned();
    assert!(!file.exists(), "no file before a user message");
    let u = s.append_message(user("hi")).expect("append");
    assert_eq!(
        file.parent(),
        Some(tmp.path().join("agent/sessions/--w--").as_path())
    );
    let text = fs::read_to_string(&file).expect("file at the first user message");
    assert_eq!(text.lines().count(), 4, "header and every entry so far");
    s.append_message(assistant("hello")).expect("append");
    let text = fs::read_to_string(&file).expect("file");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        5,
        "the reply is one more line: nothing written twice"
    );
    assert!(lines[0].starts_with(r#"{"type":"session","version":3,"id":"00000000-0000-7000-8000-000000000001","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#));
    assert!(lines[3].contains(&format!("\"id\":\"{u}\"")));
    s.append_session_info("  named  ").expect("append");
    let text = fs::read_to_string(&file).expect("file");
    assert_eq!(text.lines().count(), 6, "later appends write one line each");
    assert!(text.ends_with("\"name\":\"named\"}\n"));
    assert_eq!(s.session_name().as_deref(), Some("named"));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs::metadata(&file).expect("meta").permissions().mode() & 0o777,
        0o600
    );
    let dir_mode = fs::metadata(file.parent().expect("dir"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
}

#[test]
fn reopen_gives_the_same_entries_and_the_last_line_as_leaf() {
    let tmp = tempfile::tempdir().expect("tmp");
    let env = env(tmp.path());
    let mut s = Session::create("/w", None, &env).expect("create");
    let u1 = s.append_message(user("one")).expect("append");
    s.append_message(assistant("two")).expect("append");
    s.branch(&u1).expect("branch");
    let alt = s.append_message(assistant("alt")).expect("append");
    s.branch(&u1).expect("branch");
    let file = s.session_file().expect("file").to_owned();
    let back = Session::open(&file, None, None, OpenMode::Inspect, &env).expect("open");
    let raws = |s: &Session| {
        s.entries()
            .iter()
            .map(|e| e.raw().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(raws(&back), raws(&s));
    assert_eq!(
        back.leaf_id(),
        Some(alt.as_str()),
        "leaf moves are not persisted"
    );
    assert_eq!(back.cwd(), "/w");
}

#[test]
fn branch_with_summary_and_labels() {
    let tmp = tempfile::tempdir().expect("tmp");
    let env = env(tmp.path());
    let mut s = Session::in_memory("/w", &env);
    let u1 = s.append_message(user("one")).expect("append");
    let a1 = s.append_message(assistant("two")).expect("append");
    let bs = s
        .branch_with_summary(Some(&u1), "tried", None, Some(false), None)
        .expect("summary");
    let e = s.tree().get(&bs).expect("entry");
    assert!(
        e.raw()
            .contains(&format!("\"parentId\":\"{u1}\",\"timestamp\":"))
    );
    // fromId is the leaf left behind (pi ≥ 0.84.3), not the new position.
    assert!(e.raw().contains(&format!(
        "\"fromId\":\"{a1}\",\"summary\":\"tried\",\"fromHook\":false"
    )));
    assert!(matches!(
        s.append_label_change("nope", Some("x")),
        Err(Error::EntryNotFound(_))
    ));
    s.append_label_change(&u1, Some("start")).expect("label");
    assert_eq!(
        s.tree().label(&u1).map(|l| l.text()).as_deref(),
        Some("start")
    );
    let clear = s.append_label_change(&u1, None).expect("clear");
    assert!(s.tree().label(&u1).is_none());
    let root = s
        .branch_with_summary(None, "", None, None, None)
        .expect("root summary");
    assert!(
        s.tree()
            .get(&root)
            .is_some_and(|e| e.raw().contains("\"parentId\":null")
                && e.raw().contains(&format!("\"fromId\":\"{clear}\"")))
    );
    // From a null leaf the summary comes from "root".
    s.reset_leaf();
    let from_root = s
        .branch_with_summary(None, "s", None, None, None)
        .expect("root summary");
    assert!(
        s.tree()
            .get(&from_root)
            .is_some_and(|e| e.raw().contains("\"fromId\":\"root\""))
    );
}

#[test]
fn branched_session_relinks_across_labels_and_recreates_them() {
    let tmp = tempfile::tempdir().expect("tmp");
    let env = env(tmp.path());
    let mut s = Session::create("/w", None, &env).expect("create");
    // u1 → a1 → u2 → L1 → L2 → info → a2 (lifecycle.md §2's example shape)
    let u1 = s.append_message(user("one")).expect("append");
    s.append_message(assistant("two")).expect("append");
    let u2 = s.append_message(user("three")).expect("append");
    s.append_label_change(&u1, Some("first")).expect("label");
    s.append_label_change(&u2, Some("second")).expect("label");
    s.append_session_info("n").expect("info");
    let a2 = s.append_message(assistant("four")).expect("append");
    let source = s.session_file().expect("file").to_owned();
    let new_path = s
        .create_branched_session(&a2)
        .expect("branch")
        .expect("persisted");
    assert_ne!(new_path, source);
    assert_eq!(
        s.header().parent_session(),
        Some(source.to_string_lossy().as_ref())
    );
    let kinds: Vec<&str> = s.entries().iter().map(|e| e.kind().as_str()).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "message",
            "message",
            "session_info",
            "message",
            "label",
            "label"
        ]
    );
    // The chain is whole: the context at the leaf holds all four messages.
    let leaf = s.entries().len() - 1;
    assert_eq!(s.context_at(Leaf::At(leaf)).messages.len(), 4);
    let reopened = Session::open(&new_path, None, None, OpenMode::Inspect, &env).expect("open");
    assert_eq!(reopened.build_context().messages.len(), 4);
    assert_eq!(
        reopened.tree().label(&u1).map(|l| l.text()).as_deref(),
        Some("first")
    );
    assert_eq!(reopened.tree().get_tree().roots.len(), 1);
}

#[test]
fn session_names_lose_their_line_breaks() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut s = Session::in_memory("/w", &env(tmp.path()));
    s.append_session_info("  multi\r\nline\r\n\nname  ")
        .expect("append");
    assert_eq!(s.session_name().as_deref(), Some("multi line name"));
    let e = s.entries().last().expect("entry");
    assert!(
        e.raw().ends_with(r#""name":"multi line name"}"#),
        "{}",
        e.raw()
    );
    s.append_session_info("\n\n").expect("append");
    assert_eq!(s.session_name(), None);
    assert!(
        s.entries()
            .last()
            .is_some_and(|e| e.raw().ends_with(r#""name":""}"#))
    );
}

#[test]
fn compactions_carry_the_checkpoint_and_may_keep_nothing() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut s = Session::in_memory("/w", &env(tmp.path()));
    // Without system messages there is no checkpoint, as in pith's own sessions.
    let u1 = s.append_message(user("one")).expect("append");
    s.append_message(assistant("two")).expect("append");
    let c1 = s
        .append_compaction("S1", &u1, 10, None, Some(false))
        .expect("compaction");
    let raw = s.tree().get(&c1).expect("entry").raw().to_owned();
    assert!(!raw.contains("systemMessage"), "{raw}");
    // A system message in the context is replayed into the next compaction's checkpoint.
    let system: AgentMessage = serde_json::from_str(
        r#"{"role":"system","content":"","sections":{"preamble":"P"},"timestamp":7,"toolsAdded":[{"name":"read"}]}"#,
    )
    .expect("system message");
    s.append_message(system).expect("append");
    s.append_message(user("three")).expect("append");
    let usage = serde_json::json!({"input": 1, "output": 2});
    let c2 = s
        .append_compaction_entry("S2", None, 20, None, Some(false), Some(usage))
        .expect("compaction");
    let raw = s.tree().get(&c2).expect("entry").raw().to_owned();
    let fields: serde_json::Value = serde_json::from_str(&raw).expect("json");
    let ts = js::date_parse(fields["timestamp"].as_str().expect("timestamp"));
    assert!(
        raw.ends_with(&format!(
            r#""summary":"S2","firstKeptEntryId":"{c2}","tokensBefore":20,"usage":{{"input":1,"output":2}},"fromHook":false,"systemMessage":{{"role":"system","content":"","sections":{{"preamble":"P"}},"toolsAdded":[{{"name":"read"}}],"timestamp":{}}}}}"#,
            ts as i64
        )),
        "{raw}"
    );
    // Retain-none: the context is the checkpoint, the summary and what follows.
    s.append_message(user("four")).expect("append");
    let roles: Vec<String> = s
        .build_context()
        .messages
        .iter()
        .map(|m| {
            serde_json::from_str::<serde_json::Value>(&m.to_json()).expect("json")["role"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(roles, ["system", "compactionSummary", "user"]);
}

#[test]
fn context_edits_are_checked_and_shaped_as_pi_writes_them() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut s = Session::in_memory("/w", &env(tmp.path()));
    let u1 = s.append_message(user("one")).expect("append");
    let a1 = s.append_message(assistant("two")).expect("append");
    let m = s.append_model_change("faux", "faux-2").expect("append");
    assert!(matches!(
        s.append_context_edit("nope", None),
        Err(Error::EntryNotFound(_))
    ));
    assert!(matches!(
        s.append_context_edit(&m, None),
        Err(Error::NotEditable(_))
    ));
    let e1 = s
        .append_context_edit(&a1, Some(UserContent::Text("short".into())))
        .expect("edit");
    assert!(s.tree().get(&e1).expect("entry").raw().ends_with(&format!(
        r#""targetId":"{a1}","replacement":{{"content":[{{"type":"text","text":"short"}}]}}}}"#
    )));
    let e2 = s.append_context_edit(&u1, None).expect("edit");
    assert!(
        s.tree()
            .get(&e2)
            .expect("entry")
            .raw()
            .ends_with(&format!(r#""targetId":"{u1}","replacement":null}}"#))
    );
    let texts: Vec<String> = s
        .build_context()
        .messages
        .iter()
        .map(|m| m.to_json())
        .collect();
    assert_eq!(texts.len(), 1);
    assert!(texts[0].contains(r#""content":[{"type":"text","text":"short"}]"#));
    // Another branch's entries cannot be edited from here.
    s.reset_leaf();
    s.append_message(user("elsewhere")).expect("append");
    assert!(matches!(
        s.append_context_edit(&u1, None),
        Err(Error::NotOnBranch(_))
    ));
    let usage = s
        .append_usage(
            "cache_warm",
            "p",
            "m",
            serde_json::json!({"input": 1}),
            Some(""),
        )
        .expect("usage");
    assert!(
        s.tree()
            .get(&usage)
            .expect("entry")
            .raw()
            .ends_with(r#""kind":"cache_warm","provider":"p","model":"m","usage":{"input":1}}"#)
    );
    assert_eq!(s.build_context().messages.len(), 1, "usage is not context");
}
