//! Every row of `../shared/spec/divergences.md` about reading, writing and listing: where pi
//! loses data, hangs or hides a session, pith does what that page says.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pith_events::{AgentMessage, AssistantMessage, ContentBlock, UserContent};
use pith_store::env::{SequentialIds, SteppingClock};
use pith_store::list::{list, session_info};
use pith_store::writer::Notice;
use pith_store::{Error, Leaf, OpenMode, Session, SessionEnv};
use pith_tests::{case_dirs, compare_case, parse_json, read_json};

fn env(tmp: &Path) -> SessionEnv {
    SessionEnv {
        agent_dir: tmp.join("agent"),
        clock: Arc::new(SteppingClock::new(1_764_000_000_000, 1000)),
        ids: Arc::new(SequentialIds::default()),
    }
}

fn write(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, content).expect("write");
    path
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"s-1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;

fn user_line(id: &str, parent: Option<&str>, text: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
    )
}

fn assistant_line(id: &str, parent: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2025-01-01T00:00:02.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"ok"}}],"api":"x","provider":"p","model":"m","usage":{{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":2}}}}"#
    )
}

fn assistant() -> AgentMessage {
    AgentMessage::Assistant(AssistantMessage::new(
        "faux",
        "faux",
        "faux-1",
        vec![ContentBlock::text("answer")],
        3,
    ))
}

fn user(text: &str) -> AgentMessage {
    AgentMessage::user_text(text, 4)
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .expect("read")
        .lines()
        .map(str::to_owned)
        .collect()
}

// ---- Reading ------------------------------------------------------------------------------

#[test]
fn a_file_without_a_valid_header_is_refused_and_left_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let cases: [(&str, &[u8], usize, &str); 5] = [
        (
            "wrong-type.jsonl",
            b"{\"type\":\"message\",\"id\":\"a\"}\n{\"type\":\"session\",\"id\":\"s\"}\n",
            1,
            "not a session header",
        ),
        (
            "no-id.jsonl",
            b"\n\n{\"type\":\"session\",\"version\":3,\"id\":7}\n",
            3,
            "no string \"id\"",
        ),
        (
            "cr-only.jsonl",
            b"{\"type\":\"session\",\"id\":\"s\"}\r{\"type\":\"custom\",\"id\":\"a\"}\r",
            1,
            "invalid JSON",
        ),
        ("ndjson.jsonl", b"[1,2]\n[3]\n", 1, "not an object"),
        ("garbage.jsonl", b"hello world\nmore\n", 1, "invalid JSON"),
    ];
    for (name, bytes, line, reason) in cases {
        let path = write(tmp.path(), name, bytes);
        let err = Session::open(&path, None, None, OpenMode::Write, &env).expect_err(name);
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!(
                "not a pi session file: {}: line {line}: ",
                path.display()
            )),
            "{msg}"
        );
        assert!(msg.contains(reason), "{msg}");
        assert_eq!(fs::read(&path).unwrap(), bytes, "{name} must be untouched");
    }
    // Listing skips them, and says so.
    let listing = list(tmp.path());
    assert!(listing.sessions.is_empty());
    assert_eq!(listing.skipped.len(), 5);
}

#[test]
fn a_blank_file_gets_a_fresh_header_as_in_pi() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), "blank.jsonl", b" \n\t\n");
    let s = Session::open(&path, None, None, OpenMode::Write, &env(tmp.path())).unwrap();
    assert_eq!(lines(&path), [s.header().raw().to_owned()]);
    assert!(s.entries().is_empty());
    // Inspecting does not write.
    let inspected = write(tmp.path(), "empty.jsonl", b"");
    Session::open(&inspected, None, None, OpenMode::Inspect, &env(tmp.path())).unwrap();
    assert_eq!(fs::read(&inspected).unwrap(), b"");
}

#[test]
fn non_objects_and_id_less_objects_are_skipped_with_line_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let content = [
        HEADER.to_owned(),
        user_line("u1", None, "q"),
        "null".into(),
        "42".into(),
        r#""x""#.into(),
        "[1]".into(),
        "true".into(),
        r#"{"type":"custom","customType":"no-id"}"#.into(),
        r#"{"type":"custom","id":5,"customType":"numeric-id"}"#.into(),
        assistant_line("a1", "u1"),
    ]
    .join("\n")
        + "\n";
    let path = write(tmp.path(), "s.jsonl", content.as_bytes());
    let s = Session::open(&path, None, None, OpenMode::Write, &env(tmp.path())).unwrap();
    let ids: Vec<&str> = s.entries().iter().map(|e| e.id()).collect();
    assert_eq!(ids, ["u1", "a1"]);
    let warned: Vec<usize> = s.warnings().iter().map(|w| w.line).collect();
    assert_eq!(warned, [3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(
        s.leaf_id(),
        Some("a1"),
        "a trailing junk line never becomes the leaf"
    );
    assert_eq!(s.build_context().messages.len(), 2);
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        content,
        "skipped lines stay in the file"
    );
}

#[test]
fn self_parents_are_roots_and_cycles_are_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let content = [
        HEADER,
        r#"{"type":"custom","customType":"c","id":"self","parentId":"self","timestamp":"2025-01-01T00:00:01.000Z"}"#,
        r#"{"type":"message","id":"a","parentId":"c","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"a","timestamp":1}}"#,
        r#"{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"user","content":"b","timestamp":2}}"#,
        r#"{"type":"message","id":"c","parentId":"b","timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"user","content":"c","timestamp":3}}"#,
    ]
    .join("\n");
    let path = write(tmp.path(), "cycle.jsonl", content.as_bytes());
    let mut s = Session::open(&path, None, None, OpenMode::Inspect, &env(tmp.path())).unwrap();
    assert!(
        s.warnings()
            .iter()
            .any(|w| w.problem.contains("parent cycle"))
    );
    // Leaf c: c → b → a → (c) stops: three messages, oldest first.
    let texts: Vec<String> = s
        .build_context()
        .messages
        .iter()
        .map(|m| m.to_json())
        .collect();
    assert_eq!(texts.len(), 3);
    assert!(texts[0].contains("\"content\":\"a\"") && texts[2].contains("\"content\":\"c\""));
    s.branch("self").unwrap();
    assert_eq!(
        s.build_context().messages.len(),
        0,
        "a self-parent is a root"
    );
    let tree = s.tree().get_tree();
    let shown: usize = tree.roots.len() + tree.children.iter().map(Vec::len).sum::<usize>();
    assert_eq!(shown, 4, "every entry exactly once");
}

#[test]
fn duplicate_ids_show_every_line_once_and_context_matches_pi() {
    let case = case_dirs()
        .into_iter()
        .find(|c| c.ends_with("corrupt-duplicate-id"))
        .expect("case exists");
    let expected = read_json(&case.join("expected.json"));
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("session.jsonl");
    fs::copy(case.join("session.jsonl"), &copy).unwrap();
    let s = Session::open(&copy, None, None, OpenMode::Inspect, &env(tmp.path())).unwrap();
    let dump = parse_json(&pith_store::dump::dump_session(&s, &[], None));
    // Lookups take the last copy, as in pi: same leaf, context, labels, name.
    assert!(compare_case(&expected, &dump, &["tree", "info", "contexts_at"]).is_empty());
    // The tree shows each of the file's entries exactly once.
    let tree = s.tree().get_tree();
    let mut seen: Vec<usize> = tree.roots.clone();
    seen.extend(tree.children.iter().flatten());
    seen.sort_unstable();
    assert_eq!(seen, (0..s.entries().len()).collect::<Vec<_>>());
    // The duplicated id's children hang under its last occurrence.
    let dup = s
        .entries()
        .iter()
        .map(|e| e.id())
        .find(|id| s.entries().iter().filter(|e| e.id() == *id).count() == 2)
        .expect("a duplicated id");
    let first = s.entries().iter().position(|e| e.id() == dup).unwrap();
    let last = s.entries().iter().rposition(|e| e.id() == dup).unwrap();
    assert!(tree.children[first].is_empty());
    assert!(!tree.children[last].is_empty());
}

#[test]
fn a_message_entry_without_message_is_left_out_of_the_context() {
    let tmp = tempfile::tempdir().unwrap();
    let content = [
        HEADER.to_owned(),
        user_line("u1", None, "q"),
        r#"{"type":"message","id":"m","parentId":"u1","timestamp":"2025-01-01T00:00:02.000Z"}"#
            .into(),
        assistant_line("a1", "m"),
    ]
    .join("\n");
    let path = write(tmp.path(), "s.jsonl", content.as_bytes());
    let s = Session::open(&path, None, None, OpenMode::Inspect, &env(tmp.path())).unwrap();
    assert_eq!(s.build_context().messages.len(), 2);
    assert!(
        s.warnings()
            .iter()
            .any(|w| w.line == 3 && w.problem.contains("no \"message\""))
    );
}

#[test]
fn a_non_string_session_name_is_ignored_and_the_file_still_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let content = [
        HEADER.to_owned(),
        user_line("u1", None, "q"),
        r#"{"type":"session_info","id":"n1","parentId":"u1","timestamp":"2025-01-01T00:00:02.000Z","name":"Good name"}"#.into(),
        r#"{"type":"session_info","id":"n2","parentId":"n1","timestamp":"2025-01-01T00:00:03.000Z","name":{"oops":1}}"#.into(),
    ]
    .join("\n");
    let path = write(tmp.path(), "s.jsonl", content.as_bytes());
    let info = session_info(&path).expect("listed");
    assert_eq!(info.name.as_deref(), Some("Good name"));
    let s = Session::open(&path, None, None, OpenMode::Inspect, &env(tmp.path())).unwrap();
    assert_eq!(s.session_name().as_deref(), Some("Good name"));
}

#[test]
fn lone_surrogates_never_lose_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    let u = r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"half \ud83d emoji","timestamp":1}}"#;
    let content = format!("{HEADER}\n{u}\n");
    let path = write(tmp.path(), "s.jsonl", content.as_bytes());
    let s = Session::open(&path, None, None, OpenMode::Write, &env(tmp.path())).unwrap();
    assert_eq!(s.entries().len(), 1);
    assert_eq!(s.entries()[0].raw(), u, "the raw line keeps the escape");
    let m = s.build_context().messages[0]
        .to_agent_message()
        .expect("decodes");
    let AgentMessage::User(m) = m else {
        panic!("user")
    };
    assert_eq!(m.content, UserContent::Text("half \u{fffd} emoji".into()));
    assert_eq!(
        session_info(&path).unwrap().first_message,
        "half \u{fffd} emoji"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), content);
}

#[test]
fn thousands_of_levels_deep_work_without_recursion() {
    let tmp = tempfile::tempdir().unwrap();
    let depth = 20_000;
    let mut content = String::from(HEADER);
    let mut parent: Option<String> = None;
    for i in 0..depth {
        let id = format!("e{i:07}");
        content.push('\n');
        content.push_str(&user_line(&id, parent.as_deref(), "x"));
        parent = Some(id);
    }
    // A deeply nested value inside a message is fine too.
    let deep = format!("{}{}", "[".repeat(50_000), "]".repeat(50_000));
    content.push_str(&format!(
        "\n{{\"type\":\"message\",\"id\":\"deep\",\"parentId\":\"{}\",\"timestamp\":\"2025-01-01T00:00:05.000Z\",\"message\":{{\"role\":\"toolResult\",\"toolCallId\":\"c\",\"toolName\":\"t\",\"content\":[],\"details\":{deep},\"isError\":false,\"timestamp\":5}}}}\n",
        parent.unwrap()
    ));
    let path = write(tmp.path(), "deep.jsonl", content.as_bytes());
    let s = Session::open(&path, None, None, OpenMode::Inspect, &env(tmp.path())).unwrap();
    assert_eq!(s.build_context().messages.len(), depth + 1);
    let dump = pith_store::dump::dump_session(&s, &[pith_store::dump::At::Root], None);
    assert_eq!(dump.matches("\"children\":[").count(), depth + 1);
}

#[test]
fn continue_finds_sessions_with_a_bom_or_a_long_header() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let dir = tmp.path().join("sessions");
    fs::create_dir_all(&dir).unwrap();
    let long_cwd = format!("/{}", "very-long-directory-name/".repeat(30));
    let header = format!(
        r#"{{"type":"session","version":3,"id":"long","timestamp":"2025-01-01T00:00:00.000Z","cwd":"{long_cwd}"}}"#
    );
    assert!(header.len() > 512);
    let path = write(
        &dir,
        "a.jsonl",
        format!("{header}\n{}\n", user_line("u1", None, "q")).as_bytes(),
    );
    // In a custom directory only the caller's sessions count (pi ≥ 0.77).
    let s = Session::continue_recent(&long_cwd, Some(&dir), &env).unwrap();
    assert_eq!(s.session_file(), Some(path.as_path()));
    drop(s);
    let other = Session::continue_recent("/here", Some(&dir), &env).unwrap();
    assert_ne!(
        other.session_file(),
        Some(path.as_path()),
        "not /here's session"
    );
    let s = Session::continue_recent(&format!("{long_cwd}."), Some(&dir), &env).unwrap();
    assert_eq!(s.session_file(), Some(path.as_path()));
    assert_eq!(
        s.cwd(),
        format!("{long_cwd}."),
        "continue runs in the caller's cwd"
    );
    drop(s);
    let bom = write(&dir, "b.jsonl", format!("\u{feff}{HEADER}\n").as_bytes());
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    fs::File::options()
        .write(true)
        .open(&bom)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let s = Session::continue_recent("/w", Some(&dir), &env).unwrap();
    assert_eq!(s.session_file(), Some(bom.as_path()));
}

// ---- Writing ------------------------------------------------------------------------------

#[test]
fn append_after_a_torn_tail_keeps_the_new_entry_and_the_fragment() {
    let case = case_dirs()
        .into_iter()
        .find(|c| c.ends_with("corrupt-torn-last-line"))
        .expect("case exists");
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("session.jsonl");
    fs::copy(case.join("session.jsonl"), &copy).unwrap();
    let original = fs::read(&copy).unwrap();
    assert_ne!(original.last(), Some(&b'\n'));
    let mut s = Session::open(&copy, None, None, OpenMode::Write, &env(tmp.path())).unwrap();
    let before = s.entries().len();
    let torn_line = s
        .warnings()
        .iter()
        .find(|w| w.problem.contains("invalid JSON"))
        .map(|w| w.line)
        .expect("warned");
    let id = s.append_session_info("after the crash").unwrap();
    assert!(
        s.take_notices()
            .iter()
            .any(|n| matches!(n, Notice::TornTailSkipped { .. }))
    );
    let now = fs::read(&copy).unwrap();
    assert!(
        now.starts_with(&original),
        "nothing before the append changed"
    );
    assert_eq!(
        now[original.len()],
        b'\n',
        "the new entry starts on a new line"
    );
    let back = Session::open(&copy, None, None, OpenMode::Inspect, &env(tmp.path())).unwrap();
    assert_eq!(back.entries().len(), before + 1);
    assert_eq!(back.leaf_id(), Some(id.as_str()));
    assert_eq!(back.session_name().as_deref(), Some("after the crash"));
    assert!(
        back.warnings().iter().any(|w| w.line == torn_line),
        "the fragment is still reported"
    );
}

#[test]
fn answering_a_reopened_unanswered_session_writes_nothing_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let content = format!("{HEADER}\n{}\n", user_line("u1", None, "are you there?"));
    let path = write(tmp.path(), "s.jsonl", content.as_bytes());
    let mut s = Session::open(&path, None, None, OpenMode::Write, &env(tmp.path())).unwrap();
    let u2 = s.append_message(user("hello?")).unwrap();
    assert_eq!(
        lines(&path).len(),
        3,
        "a file on disk only ever appends (pi 1.6.0, format.md §7.1)"
    );
    s.append_message(assistant()).unwrap();
    let l = lines(&path);
    assert_eq!(l.len(), 4, "{l:#?}");
    assert_eq!(
        l.iter()
            .filter(|x| x.contains("\"type\":\"session\""))
            .count(),
        1
    );
    assert!(l[2].contains(&u2));
    let back = Session::open(&path, None, None, OpenMode::Inspect, &env(tmp.path())).unwrap();
    assert_eq!(back.build_context().messages.len(), 3);
}

#[test]
fn a_fork_across_label_entries_keeps_the_chain_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let mut s = Session::create("/w", None, &env).unwrap();
    let u1 = s.append_message(user("one")).unwrap();
    s.append_message(assistant()).unwrap();
    let u2 = s.append_message(user("two")).unwrap();
    s.append_label_change(&u2, Some("L1")).unwrap();
    s.append_label_change(&u1, Some("L2")).unwrap();
    s.append_label_change(&u2, Some("L3")).unwrap();
    s.append_session_info("info").unwrap();
    let a2 = s.append_message(assistant()).unwrap();
    let before = s.build_context().messages.len();
    let path = s.create_branched_session(&a2).unwrap().expect("persisted");
    let back = Session::open(&path, None, None, OpenMode::Inspect, &env).unwrap();
    assert_eq!(back.build_context().messages.len(), before);
    assert_eq!(
        back.tree().get_tree().roots.len(),
        1,
        "one root: no dangling parent"
    );
    assert_eq!(
        back.tree().label(&u1).map(|l| l.text()).as_deref(),
        Some("L2")
    );
    assert_eq!(
        back.tree().label(&u2).map(|l| l.text()).as_deref(),
        Some("L3")
    );
}

#[test]
fn a_fork_before_any_assistant_reply_is_a_real_fork() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let mut s = Session::create("/proj", None, &env).unwrap();
    s.append_model_change("faux", "faux-1").unwrap();
    let t = s.append_thinking_level_change("off").unwrap();
    s.append_message(user("first")).unwrap();
    let source = s.session_file().unwrap().to_owned();
    // /fork of the first user message copies the path up to its parent.
    let new_path = s.create_branched_session(&t).unwrap().expect("persisted");
    assert_eq!(
        s.header().parent_session(),
        Some(source.to_string_lossy().as_ref())
    );
    assert_eq!(s.header().cwd(), Some("/proj"));
    assert_eq!(s.entries().len(), 2);
    assert!(
        !new_path.exists(),
        "created with the first assistant message, like any session"
    );
    s.append_message(user("again")).unwrap();
    s.append_message(assistant()).unwrap();
    let back = Session::open(&new_path, None, None, OpenMode::Inspect, &env).unwrap();
    assert_eq!(
        back.header().parent_session(),
        Some(source.to_string_lossy().as_ref())
    );
    assert_eq!(back.session_id(), s.session_id());
    assert_eq!(back.entries().len(), 4);
}

#[test]
fn forking_a_legacy_file_migrates_in_memory_first() {
    let case = case_dirs()
        .into_iter()
        .find(|c| c.ends_with("legacy-v1-compaction"))
        .expect("case");
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("legacy.jsonl");
    fs::copy(case.join("session.jsonl"), &source).unwrap();
    let original = fs::read(&source).unwrap();
    let env = env(tmp.path());
    let fork =
        Session::fork_from(&source, "/target", Some(&tmp.path().join("forks")), &env).unwrap();
    assert_eq!(
        fs::read(&source).unwrap(),
        original,
        "the source is not touched"
    );
    let expected = read_json(&case.join("expected.json"));
    let want = expected["context"]["messages"].as_array().unwrap().len();
    assert_eq!(fork.build_context().messages.len(), want);
    assert!(fork.entries().iter().all(|e| !e.id().is_empty()));
    assert_eq!(
        fork.header().parent_session(),
        Some(source.to_string_lossy().as_ref())
    );
    assert_eq!(fork.cwd(), "/target");
}

#[test]
fn migration_rewrites_atomically_and_keeps_skipped_lines() {
    let case = case_dirs()
        .into_iter()
        .find(|c| c.ends_with("legacy-v1-linear"))
        .expect("case");
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("legacy.jsonl");
    let mut content = fs::read_to_string(case.join("session.jsonl")).unwrap();
    content.push_str("this line is not JSON\n");
    fs::write(&path, &content).unwrap();
    use std::os::unix::fs::MetadataExt;
    let inode = fs::metadata(&path).unwrap().ino();
    let s = Session::open(&path, None, None, OpenMode::Write, &env(tmp.path())).unwrap();
    assert_eq!(s.header().version(), 3.0);
    assert_ne!(
        fs::metadata(&path).unwrap().ino(),
        inode,
        "replaced by rename, not rewritten in place"
    );
    let names: Vec<String> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with(".pith-")),
        "no temporary file left behind: {names:?}"
    );
    assert!(
        names.contains(&"legacy.jsonl.lock".to_owned()),
        "held while open for writing"
    );
    drop(s);
    assert!(
        !tmp.path().join("legacy.jsonl.lock").exists(),
        "removed on release"
    );
    let now = lines(&path);
    assert_eq!(
        now.last().map(String::as_str),
        Some("this line is not JSON")
    );
    assert!(now[0].ends_with("\"version\":3}"));
    // Opening again changes nothing.
    let bytes = fs::read(&path).unwrap();
    Session::open(&path, None, None, OpenMode::Write, &env(tmp.path())).unwrap();
    assert_eq!(fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_deleted_or_replaced_file_is_written_again_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let mut s = Session::create("/w", None, &env).unwrap();
    s.append_message(user("q")).unwrap();
    s.append_message(assistant()).unwrap();
    let path = s.session_file().unwrap().to_owned();
    fs::remove_file(&path).unwrap();
    s.append_message(user("still here?")).unwrap();
    assert!(
        s.take_notices()
            .iter()
            .any(|n| matches!(n, Notice::Recreated { .. }))
    );
    let l = lines(&path);
    assert_eq!(l.len(), 4, "header and all three entries");
    assert!(l[0].contains("\"type\":\"session\""));
    // Replaced by another file (rename over it): that file is left as it is, and the session
    // goes on beside it, whole.
    let other = tmp.path().join("other.jsonl");
    fs::write(&other, format!("{HEADER}\n")).unwrap();
    fs::rename(&other, &path).unwrap();
    s.append_message(assistant()).unwrap();
    let notices = s.take_notices();
    let now = match notices.as_slice() {
        [Notice::MovedAside { what, now, .. }] => {
            assert_eq!(*what, "another file");
            now.clone()
        }
        other => panic!("expected MovedAside, got {other:?}"),
    };
    assert_eq!(fs::read_to_string(&path).unwrap(), format!("{HEADER}\n"));
    assert_eq!(s.session_file(), Some(now.as_path()));
    assert!(
        now.to_string_lossy().ends_with(".recovered.jsonl"),
        "{}",
        now.display()
    );
    let back = Session::open(&now, None, None, OpenMode::Inspect, &env).unwrap();
    assert_eq!(back.session_id(), s.session_id());
    assert_eq!(back.entries().len(), 4);
}

#[test]
fn in_memory_sessions_never_write() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let mut s = Session::in_memory("/w", &env);
    s.append_message(user("q")).unwrap();
    s.append_message(assistant()).unwrap();
    assert_eq!(s.new_session(None, None), None);
    s.append_message(assistant()).unwrap();
    assert!(!tmp.path().join("agent").exists());
    assert!(s.session_file().is_none());
    let kept = s.entries().len();
    assert_eq!(kept, 1);
    assert!(matches!(
        s.create_branched_session("nope"),
        Err(Error::EntryNotFound(_))
    ));
    assert_eq!(s.context_at(Leaf::Root).messages.len(), 0);
}

#[test]
fn files_are_private_to_the_user() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let mut s = Session::create("/w", None, &env).unwrap();
    s.append_message(assistant()).unwrap();
    s.sync().unwrap();
    let path = s.session_file().unwrap();
    assert_eq!(
        fs::metadata(path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    for dir in [path.parent().unwrap(), &tmp.path().join("agent/sessions")] {
        assert_eq!(
            fs::metadata(dir).unwrap().permissions().mode() & 0o777,
            0o700,
            "{}",
            dir.display()
        );
    }
}

#[test]
fn one_writer_per_file() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let content = format!(
        "{HEADER}\n{}\n{}\n",
        user_line("u1", None, "q"),
        assistant_line("a1", "u1")
    );
    let path = write(tmp.path(), "s.jsonl", content.as_bytes());
    let mut first = Session::open(&path, None, None, OpenMode::Write, &env).unwrap();
    let err = Session::open(&path, None, None, OpenMode::Write, &env).unwrap_err();
    match &err {
        Error::Locked { pid, .. } => assert_eq!(*pid, Some(std::process::id())),
        other => panic!("expected Locked, got {other}"),
    }
    assert!(
        err.to_string()
            .contains(&format!("pid {}", std::process::id())),
        "{err}"
    );
    // Readers are not blocked; the holder keeps writing.
    let reader = Session::open(&path, None, None, OpenMode::Inspect, &env).unwrap();
    assert_eq!(reader.entries().len(), 2);
    first.append_message(user("more")).unwrap();
    drop(first);
    // Released on drop (and by the OS when a process dies): the next writer takes over.
    let mut second = Session::open(&path, None, None, OpenMode::Write, &env).unwrap();
    second.append_message(assistant()).unwrap();
    assert_eq!(lines(&path).len(), 5);
    // A clean release removes the lock file; one left by a dead process holds no lock.
    drop(second);
    assert!(!tmp.path().join("s.jsonl.lock").exists());
    fs::write(tmp.path().join("s.jsonl.lock"), "999999").unwrap();
    Session::open(&path, None, None, OpenMode::Write, &env).unwrap();
    // Listing ignores lock files.
    assert_eq!(list(tmp.path()).skipped.len(), 0);
}

#[test]
fn numbers_beyond_f64_range_lose_no_field() {
    // JSON.parse reads 1e400 as Infinity (written back as null); the rest of the entry counts.
    let tmp = tempfile::tempdir().unwrap();
    let content = [
        HEADER.to_owned(),
        user_line("u1", None, "q"),
        r#"{"type":"model_change","id":"m","parentId":"u1","timestamp":"2025-01-01T00:00:02.000Z","provider":"p","modelId":"q","x":1e400}"#.into(),
        r#"{"type":"compaction","id":"c","parentId":"m","timestamp":"2025-01-01T00:00:03.000Z","summary":"S","firstKeptEntryId":"u1","tokensBefore":1e400}"#.into(),
        r#"{"type":"session_info","id":"n","parentId":"c","timestamp":"2025-01-01T00:00:04.000Z","name":"big","x":-1e999}"#.into(),
    ]
    .join("\n");
    let path = write(tmp.path(), "s.jsonl", content.as_bytes());
    let s = Session::open(&path, None, None, OpenMode::Inspect, &env(tmp.path())).unwrap();
    let ctx = parse_json(&s.build_context().to_json());
    assert_eq!(
        ctx["model"],
        serde_json::json!({"provider":"p","modelId":"q"})
    );
    assert_eq!(
        ctx["messages"][0],
        serde_json::json!({"role":"compactionSummary","summary":"S","tokensBefore":null,"timestamp":1735689603000u64})
    );
    assert_eq!(
        ctx["messages"].as_array().unwrap().len(),
        2,
        "the kept user message is there"
    );
    assert_eq!(s.session_name().as_deref(), Some("big"));
    assert_eq!(session_info(&path).unwrap().name.as_deref(), Some("big"));
    let dump = parse_json(&pith_store::dump::dump_session(&s, &[], None));
    assert_eq!(
        dump["entries"][1]["x"],
        serde_json::Value::Null,
        "written as JSON.stringify writes Infinity"
    );
    assert!(
        fs::read_to_string(&path).unwrap().contains("1e400"),
        "the file keeps its bytes"
    );
}

#[test]
fn migrating_through_a_symlink_rewrites_its_target() {
    let case = case_dirs()
        .into_iter()
        .find(|c| c.ends_with("legacy-v1-linear"))
        .expect("case");
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real.jsonl");
    fs::copy(case.join("session.jsonl"), &real).unwrap();
    let link = tmp.path().join("link.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    drop(Session::open(&link, None, None, OpenMode::Write, &env(tmp.path())).unwrap());
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link stays a link"
    );
    assert!(
        lines(&real)[0].ends_with("\"version\":3}"),
        "its target is migrated"
    );
}

#[test]
fn migration_edits_text_and_keeps_every_other_byte() {
    // pi re-serializes every record; pith splices only what the migration sets, so lone
    // surrogates, number spelling and unknown members survive byte for byte.
    let tmp = tempfile::tempdir().unwrap();
    let v1 = [
        r#"{"type":"session","id":"legacy","timestamp":"2024-06-01T10:00:00.000Z","cwd":"/w","extra":"\ud800"}"#,
        r#"{"type":"message","timestamp":"2024-06-01T10:00:01.000Z","message":{"role":"user","content":"half \ud83d","timestamp":1.0e3}}"#,
        r#"{"type":"message","timestamp":"2024-06-01T10:00:02.000Z","message":{"role":"hookMessage","customType":"n","content":"x","display":true,"timestamp":2}}"#,
    ];
    let path = write(tmp.path(), "v1.jsonl", (v1.join("\n") + "\n").as_bytes());
    let s = Session::open(&path, None, None, OpenMode::Write, &env(tmp.path())).unwrap();
    let migrated = lines(&path);
    assert_eq!(migrated[0], v1[0].replace("}", ",\"version\":3}"));
    let (a, b) = (
        s.entries()[0].id().to_owned(),
        s.entries()[1].id().to_owned(),
    );
    assert_eq!(
        migrated[1],
        v1[1].replace("e3}}", &format!("e3}},\"id\":\"{a}\",\"parentId\":null}}"))
    );
    assert!(
        migrated[2].contains(r#""role":"custom","customType":"n""#)
            && migrated[2].ends_with(&format!(r#""parentId":"{a}"}}"#))
    );
    assert_eq!(s.entries()[1].parent().id(), Some(a.as_str()));
    assert_ne!(a, b);
}

#[test]
fn devices_fifos_and_directories_are_never_sessions() {
    // pi writes a fresh header into whatever the path names; a device reads as empty, so a
    // rename-based writer would replace /dev/null itself. pith refuses them all.
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let err = Session::open(Path::new("/dev/null"), None, None, OpenMode::Write, &env).unwrap_err();
    assert!(matches!(err, Error::NotAFile(_)), "{err}");
    assert_eq!(err.to_string(), "/dev/null: not a regular file");
    let fifo = tmp.path().join("pipe.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo (coreutils) runs");
    assert!(made.success());
    assert!(matches!(
        Session::open(&fifo, None, None, OpenMode::Inspect, &env),
        Err(Error::NotAFile(_))
    ));
    // Listing and --continue skip it instead of blocking on it.
    write(tmp.path(), "real.jsonl", format!("{HEADER}\n").as_bytes());
    let listing = list(tmp.path());
    assert_eq!(listing.sessions.len(), 1);
    assert!(
        listing
            .skipped
            .iter()
            .any(|s| s.path == fifo && s.reason.contains("not a regular file"))
    );
    let s = Session::continue_recent("/w", Some(tmp.path()), &env).unwrap();
    assert!(s.session_file().unwrap().ends_with("real.jsonl"));
}
