//! Opening a large session for one context through its outline (`pith_store::outline`): the
//! answer is the whole session's on the first open, from the outline on the next, and after
//! the file changed, damaged outlines and fresh files included.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pith_store::env::{RandomIds, SystemClock};
use pith_store::outline::{self, FileStamp};
use pith_store::{ContextView, OpenMode, Session, SessionEnv};

fn env(tmp: &Path) -> SessionEnv {
    SessionEnv {
        agent_dir: tmp.join("agent"),
        clock: Arc::new(SystemClock),
        ids: Arc::new(RandomIds),
    }
}

/// A session over [`outline::FROM_BYTES`]: turns with large bodies, a compaction half way,
/// a label, an invalid line and a line that is not an entry.
fn big_session() -> String {
    let mut out = String::from(
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
    );
    out.push('\n');
    let body = "tool output with \\\"quotes\\\" and \\\\ slashes ".repeat(60);
    let mut parent = "null".to_owned();
    let mut i = 0;
    while (out.len() as u64) < outline::FROM_BYTES + (1 << 20) {
        let (id, role) = (
            format!("e{i}"),
            if i % 2 == 0 { "user" } else { "assistant" },
        );
        let line = if role == "user" {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"turn {i}: {body}","timestamp":1}}}}"#
            )
        } else {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:02.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"reply {i}: {body}"}}],"api":"x","provider":"x","model":"m","usage":{{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":2}}}}"#
            )
        };
        out.push_str(&line);
        out.push('\n');
        if i == 4000 {
            out.push_str(&format!(
                r#"{{"type":"compaction","id":"c1","parentId":"{id}","timestamp":"2025-01-01T00:00:03.000Z","summary":"the story so far","firstKeptEntryId":"e3990","tokensBefore":1000}}"#
            ));
            out.push('\n');
            out.push_str("{not json\n[1,2]\n");
            parent = "\"c1\"".to_owned();
        } else {
            parent = format!("\"{id}\"");
        }
        if i == 4100 {
            out.push_str(&format!(
                r#"{{"type":"label","id":"l1","parentId":{parent},"timestamp":"2025-01-01T00:00:04.000Z","targetId":"e4001","label":"here"}}"#
            ));
            out.push('\n');
            parent = "\"l1\"".to_owned();
        }
        i += 1;
    }
    out
}

/// Makes `paths` settled ([`outline::SETTLED`] old by mtime and ctime): the mtime set an
/// hour back, then a wait for the ctime, which nothing can set back.
fn settle(paths: &[&Path]) {
    let old = SystemTime::now() - Duration::from_secs(3600);
    for path in paths {
        std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|f| f.set_modified(old))
            .expect("set mtime");
    }
    std::thread::sleep(outline::SETTLED + Duration::from_millis(100));
}

fn stamp(path: &Path) -> FileStamp {
    FileStamp::of(&std::fs::metadata(path).expect("stat"))
}

/// Whether an outline under `env` holds for the file at `path` as it is now.
fn holds(env: &SessionEnv, path: &Path) -> bool {
    let file = std::fs::File::open(path).expect("open");
    let stamp = stamp(path);
    outline::read(
        &env.agent_dir,
        path,
        &file,
        (stamp, stamp.settled(SystemTime::now())),
    )
    .is_some()
}

/// The context at the last entry and the warnings, through a [`ContextView`] and through
/// the whole session.
fn both(path: &Path, env: &SessionEnv) -> ((String, String), (String, String)) {
    let view = ContextView::open(path, env, |tree| Ok::<_, ()>(tree.leaf()))
        .expect("opens")
        .expect("leaf");
    let session = Session::open(path, None, None, OpenMode::Inspect, env).expect("opens");
    (
        (view.context().to_json(), format!("{:?}", view.warnings())),
        (
            session.context_at(session.tree().leaf()).to_json(),
            format!("{:?}", session.warnings()),
        ),
    )
}

/// A scratch folder holding `big.jsonl`, a [`big_session`]; its environment and text.
fn big_file() -> (tempfile::TempDir, SessionEnv, PathBuf, String) {
    let tmp = tempfile::tempdir().expect("tmp");
    let env = env(tmp.path());
    let path = tmp.path().join("big.jsonl");
    let text = big_session();
    std::fs::write(&path, &text).expect("write");
    (tmp, env, path, text)
}

fn outlines(env: &SessionEnv) -> usize {
    std::fs::read_dir(env.agent_dir.join("index").join("outlines"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[test]
fn a_large_session_opens_through_its_outline_with_the_whole_sessions_answer() {
    let (_tmp, env, path, _) = big_file();
    settle(&[&path]);

    // First open: read whole, outline kept.
    let (view, whole) = both(&path, &env);
    assert_eq!(view, whole);
    assert!(
        whole.0.contains("the story so far"),
        "compaction in context"
    );
    assert!(whole.1.contains("line: 4004"), "{}", whole.1);
    assert!(holds(&env, &path));
    assert_eq!(outlines(&env), 1);

    // Second open: from the outline, the same answer.
    let (again, _) = both(&path, &env);
    assert_eq!(again, whole);

    // Appended to: the outline still holds for the lines it was read from (their checksum),
    // the new line is read after them and is in the context.
    let leaf = {
        let s = Session::open(&path, None, None, OpenMode::Inspect, &env).expect("opens");
        s.entries().last().expect("entries").id().to_owned()
    };
    let mut grown = std::fs::read_to_string(&path).expect("read");
    grown.push_str(&format!(
        r#"{{"type":"message","id":"late","parentId":"{leaf}","timestamp":"2025-01-01T00:00:05.000Z","message":{{"role":"user","content":"appended later","timestamp":5}}}}"#
    ));
    grown.push('\n');
    std::fs::write(&path, &grown).expect("append");
    settle(&[&path]);
    assert!(holds(&env, &path));
    let (view, whole) = both(&path, &env);
    assert_eq!(view, whole);
    assert!(view.0.contains("appended later"));
    assert_eq!(outlines(&env), 1, "one outline per file");

    // A byte changed in place among the lines the outline was read from (the compaction's
    // summary, which the outline holds whole), the size kept: the checksum of those lines
    // refuses the outline.
    let at = grown.find("the story so far").expect("summary");
    let mut changed = grown.clone().into_bytes();
    changed[at] = b'T';
    std::fs::write(&path, &changed).expect("change");
    settle(&[&path]);
    assert!(!holds(&env, &path));
    let (view, whole) = both(&path, &env);
    assert_eq!(view, whole);
    assert!(view.0.contains("The story so far"));

    // One byte changed inside the outline (a summary's text, say): the checksum refuses it.
    let dir = env.agent_dir.join("index").join("outlines");
    let only = std::fs::read_dir(&dir)
        .expect("outlines")
        .next()
        .expect("one")
        .expect("entry")
        .path();
    let mut bytes = std::fs::read(&only).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    std::fs::write(&only, &bytes).expect("damage");
    assert!(!holds(&env, &path));
    let (view, whole) = both(&path, &env);
    assert_eq!(view, whole);

    // A damaged outline is read past and replaced.
    for e in std::fs::read_dir(&dir).expect("outlines") {
        std::fs::write(e.expect("entry").path(), b"not an outline").expect("damage");
    }
    let (view, whole) = both(&path, &env);
    assert_eq!(view, whole);
    assert!(holds(&env, &path));
}

#[test]
fn the_outline_of_a_file_changed_moments_ago_is_checked_by_its_content() {
    let (_tmp, env, path, text) = big_file();
    let (view, whole) = both(&path, &env);
    assert_eq!(view, whole);
    assert_eq!(outlines(&env), 1);
    // Changed at once, within the same timestamp tick maybe, the size kept (the
    // compaction's summary, which the outline holds whole): the stamp cannot tell, the
    // checksum does.
    let at = text.find("the story so far").expect("summary");
    let mut changed = text.into_bytes();
    changed[at] = b'T';
    std::fs::write(&path, &changed).expect("change");
    let (view, whole) = both(&path, &env);
    assert_eq!(view, whole);
    assert!(
        view.0.contains("The story so far"),
        "the changed line is read"
    );
}

/// How many entries of `session` have their bodies left in the file.
fn bodies_in_file(session: &Session) -> usize {
    session
        .entries()
        .iter()
        .filter(|e| e.body_in_file())
        .count()
}

/// Every entry's raw line, the warnings, the leaf and the context of a session.
fn answers(session: &Session) -> (Vec<String>, String, Option<String>, String) {
    (
        session
            .entries()
            .iter()
            .map(|e| e.raw().to_owned())
            .collect(),
        format!("{:?}", session.warnings()),
        session.leaf_id().map(str::to_owned),
        session.build_context().to_json(),
    )
}

#[test]
fn a_resumed_large_session_reads_bodies_off_its_path_only_when_asked() {
    let (_tmp, env, path, _) = big_file();
    let whole = Session::open(&path, None, None, OpenMode::Inspect, &env).expect("opens");
    let expected = answers(&whole);
    drop(whole);

    // Twice: first by reading the file (outline kept), then through the outline.
    for round in 0..2 {
        let session = Session::open(&path, None, None, OpenMode::ReadOnly, &env).expect("opens");
        let off_path = bodies_in_file(&session);
        // Before the compaction, only e3990 on is on the path: thousands of bodies wait.
        assert!(
            off_path > 3000,
            "round {round}: {off_path} bodies left in the file"
        );
        let context = session.build_context().to_json();
        assert_eq!(context, expected.3, "round {round}");
        assert_eq!(
            bodies_in_file(&session),
            off_path,
            "round {round}: building the context reads no body off the path"
        );
        session.tree().read_back_bodies().expect("reads back");
        assert_eq!(
            bodies_in_file(&session),
            0,
            "round {round}: every body read back in one pass"
        );
        assert_eq!(answers(&session), expected, "round {round}");
        assert_eq!(outlines(&env), 1);
    }

    // Resumed for writing: an append lands after the lines read, and a fork of an entry
    // off the path copies its whole line.
    let mut session = Session::open(&path, None, None, OpenMode::Write, &env).expect("opens");
    session
        .append_custom_entry("note", Some(serde_json::json!({"n": 1})))
        .expect("append");
    let forked = session.create_branched_session("e2001").expect("fork");
    let forked = forked.expect("persisted");
    drop(session);
    let copy = std::fs::read_to_string(&forked).expect("read fork");
    assert!(
        copy.contains("turn 2000: tool output"),
        "the fork holds the whole line of an entry whose body was left in the file"
    );
    let whole = Session::open(&path, None, None, OpenMode::Inspect, &env).expect("opens");
    let resumed = Session::open(&path, None, None, OpenMode::ReadOnly, &env).expect("opens");
    assert_eq!(answers(&resumed), answers(&whole));
    assert!(
        whole
            .entries()
            .last()
            .is_some_and(|e| e.raw().contains("\"customType\":\"note\""))
    );
}

#[test]
fn a_body_changed_in_place_after_the_open_is_never_copied_cut() {
    let (_tmp, env, path, text) = big_file();
    let mut session = Session::open(&path, None, None, OpenMode::Write, &env).expect("opens");
    let entry = session
        .entries()
        .iter()
        .find(|e| e.id() == "e2001")
        .expect("e2001")
        .clone();
    assert!(entry.body_in_file());
    // Another program rewrites the file in place: e2001 is now another entry.
    std::fs::write(&path, text.replace("\"id\":\"e2001\"", "\"id\":\"x2001\"")).expect("change");
    assert!(matches!(
        entry.read_back(),
        Err(pith_store::Error::BodyChanged { .. })
    ));
    assert!(!entry.raw().contains("turn 2000"), "the cut line stands");
    let (id, file) = (
        session.session_id().to_owned(),
        session.session_file().map(Path::to_owned),
    );
    let fork = session.create_branched_session("e2001");
    assert!(
        matches!(fork, Err(pith_store::Error::BodyChanged { .. })),
        "{fork:?}"
    );
    // The failed fork left the session as it was: still this file, still writable.
    assert_eq!(session.session_id(), id);
    assert_eq!(session.session_file().map(Path::to_owned), file);
    session
        .append_custom_entry("after", None)
        .expect("the session still appends");
}

#[test]
fn at_most_kept_outlines_stay() {
    use pith_store::load::{Bodies, Loaded, load_file_with};
    let tmp = tempfile::tempdir().expect("tmp");
    let env = env(tmp.path());
    let paths: Vec<_> = (0..outline::KEPT + 2)
        .map(|n| tmp.path().join(format!("s{n}.jsonl")))
        .collect();
    for (n, path) in paths.iter().enumerate() {
        std::fs::write(
            path,
            format!(
                "{{\"type\":\"session\",\"version\":3,\"id\":\"s{n}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}}\n"
            ),
        )
        .expect("write");
    }
    // A temporary file a killed writer left an hour ago goes too.
    let dir = env.agent_dir.join("index").join("outlines");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let leftover = dir.join(".pith-cache-killed");
    std::fs::write(&leftover, b"half an outline").expect("write");
    let mut all: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
    all.push(&leftover);
    settle(&all);
    for path in &paths {
        let Ok(Loaded::Log(log)) = load_file_with(path, Bodies::for_outline(), &mut || "x".into())
        else {
            panic!("not a session");
        };
        outline::keep(&env.agent_dir, path, (stamp(path), true), &log);
        assert!(holds(&env, path));
    }
    assert!(!leftover.exists(), "the leftover stays");
    assert_eq!(outlines(&env), outline::KEPT);
}
