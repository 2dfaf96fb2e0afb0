//! `pith session …` as a user runs it: every conformance case through `pith session dump`,
//! errors on stderr with file and line, listings, and the tree view.

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use pith_tests::{
    at_args, case_dirs, check_case, check_listing, conformance_dir, expected_for_pith, list_dirs,
    parse_json, read_json, refusal, with_big_stack,
};
use predicates::prelude::*;

fn pith(agent_dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("pith").expect("binary");
    // The offline default must not turn into a real provider on a machine with keys.
    for var in pith_llm::auth::KEY_VARS {
        cmd.env_remove(var);
    }
    cmd.env("PITH_AGENT_DIR", agent_dir).env("TZ", "UTC");
    cmd
}

#[test]
fn every_case_matches_pi_through_pith_session_dump() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = case_dirs();
    assert!(
        cases.len() >= 50,
        "expected the public cases, found {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let dir = tmp.path().join(&name);
        fs::create_dir_all(&dir).unwrap();
        let copy = dir.join("session.jsonl");
        fs::copy(case.join("session.jsonl"), &copy).unwrap();
        let expected = expected_for_pith(case);
        let mut cmd = pith(&tmp.path().join("agent"));
        cmd.arg("session").arg("dump").arg(&copy);
        for at in at_args(&expected) {
            cmd.arg("--at").arg(at);
        }
        let out = cmd.output().unwrap();
        let problems = with_big_stack(|| {
            let actual = if out.status.success() {
                parse_json(std::str::from_utf8(&out.stdout).unwrap())
            } else {
                // Only a file that is not a session may be refused, and it is left as it was.
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert!(stderr.contains("not a pi session file"), "{name}: {stderr}");
                assert_eq!(
                    fs::read(&copy).unwrap(),
                    fs::read(case.join("session.jsonl")).unwrap(),
                    "{name}: a refused file must stay untouched"
                );
                let info = pith(&tmp.path().join("agent"))
                    .args(["session", "info"])
                    .arg(&copy)
                    .output()
                    .unwrap();
                let listed = info
                    .status
                    .success()
                    .then(|| parse_json(std::str::from_utf8(&info.stdout).unwrap()));
                refusal(&expected, stderr.trim(), listed)
            };
            check_case(case, &expected, &actual)
        });
        if !problems.is_empty() {
            failures.push(format!("{name}: {}", problems[0]));
        }
    }
    println!(
        "conformance (pith session dump): {}/{} cases equal",
        cases.len() - failures.len(),
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_file_that_is_not_a_session_is_refused_on_stderr_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("notes.jsonl");
    let bytes = b"\n{\"type\":\"note\",\"id\":\"n1\"}\n{\"type\":\"session\",\"id\":\"s\"}\n";
    fs::write(&path, bytes).unwrap();
    for sub in ["dump", "tree", "context", "info"] {
        pith(tmp.path())
            .args(["session", sub])
            .arg(&path)
            .assert()
            .failure()
            .stdout("")
            .stderr(predicate::str::contains(format!(
                "pith: error: not a pi session file: {}: line 2: the first JSON line is not a session header",
                path.display()
            )));
    }
    assert_eq!(fs::read(&path).unwrap(), bytes);
    pith(tmp.path())
        .args(["session", "dump"])
        .arg(tmp.path().join("missing.jsonl"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("missing.jsonl"));
}

#[test]
fn skipped_lines_are_reported_with_their_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    fs::write(
        &path,
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n{oops\n{\"type\":\"custom\",\"customType\":\"c\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"t\"}\n42\n",
    )
    .unwrap();
    pith(tmp.path())
        .args(["session", "context"])
        .arg(&path)
        .assert()
        .success()
        .stdout("{\"messages\":[],\"thinkingLevel\":\"off\",\"model\":null}\n")
        .stderr(predicate::str::contains(format!(
            "{}: line 2: invalid JSON at byte 2",
            path.display()
        )))
        .stderr(predicate::str::contains(format!(
            "{}: line 4: a JSON value that is not an object",
            path.display()
        )));
}

#[test]
fn inspecting_never_modifies_a_v3_file_but_migrates_a_legacy_one() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = conformance_dir();
    let v3 = tmp.path().join("v3.jsonl");
    fs::copy(conf.join("corrupt-torn-last-line/session.jsonl"), &v3).unwrap();
    let v1 = tmp.path().join("v1.jsonl");
    fs::copy(conf.join("legacy-v1-linear/session.jsonl"), &v1).unwrap();
    let before = fs::read(&v3).unwrap();
    for sub in ["dump", "tree", "context", "info"] {
        pith(tmp.path())
            .args(["session", sub])
            .arg(&v3)
            .assert()
            .success();
    }
    assert_eq!(fs::read(&v3).unwrap(), before);
    // The picker's view (info, list) reads legacy files as they are, as pi's list() does.
    let legacy = fs::read(&v1).unwrap();
    pith(tmp.path())
        .args(["session", "info"])
        .arg(&v1)
        .assert()
        .success();
    assert_eq!(fs::read(&v1).unwrap(), legacy);
    // Opening it (tree, context, dump) migrates it, as pi's SessionManager.open does.
    pith(tmp.path())
        .args(["session", "tree"])
        .arg(&v1)
        .assert()
        .success();
    let migrated = fs::read_to_string(&v1).unwrap();
    assert!(migrated.lines().next().unwrap().ends_with("\"version\":3}"));
    assert!(
        migrated
            .lines()
            .skip(1)
            .all(|l| l.contains("\"id\":") && l.contains("\"parentId\":"))
    );
}

#[test]
fn list_json_is_pis_listing_and_the_table_is_readable() {
    let tmp = tempfile::tempdir().unwrap();
    for dir in list_dirs() {
        let out = pith(tmp.path())
            .args(["session", "list", "--json", "--session-dir"])
            .arg(dir.join("sessions"))
            .output()
            .unwrap();
        assert!(out.status.success());
        let list = parse_json(std::str::from_utf8(&out.stdout).unwrap());
        let expected = read_json(&dir.join("expected.json"));
        let problems = check_listing(&dir, &expected, list.as_array().unwrap());
        assert!(
            problems.is_empty(),
            "{}:\n{}",
            dir.display(),
            problems.join("\n")
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("skipped") && stderr.contains("_empty.jsonl"),
            "{stderr}"
        );
    }

    let conf = conformance_dir().join("_list-public");
    let table = pith(tmp.path())
        .args(["session", "list", "--session-dir"])
        .arg(conf.join("sessions"))
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 1 + 7, "{table}");
    assert!(rows[0].starts_with("MODIFIED"));
    assert!(rows[1].starts_with("2025-12-07T00:00:00.000Z"));
    assert!(rows.iter().any(|r| r.contains("padded name")));
}

#[test]
fn list_all_walks_every_project_of_the_agent_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = conformance_dir();
    let root = tmp.path().join("sessions");
    for (project, case) in [
        ("--a--", "gen-s001-linear"),
        ("--b--", "gen-s002-branching"),
    ] {
        fs::create_dir_all(root.join(project)).unwrap();
        fs::copy(
            conf.join(case).join("session.jsonl"),
            root.join(project).join(format!("{case}.jsonl")),
        )
        .unwrap();
    }
    let out = pith(tmp.path())
        .args(["session", "list", "--all", "--json"])
        .output()
        .unwrap();
    let list = parse_json(std::str::from_utf8(&out.stdout).unwrap());
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    let want: Vec<String> = ["gen-s001-linear", "gen-s002-branching"]
        .iter()
        .map(|c| {
            read_json(&conf.join(c).join("expected.json"))["info"]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(want.iter().all(|w| ids.contains(&w.as_str())));
}

#[test]
fn tree_view_marks_labels_and_the_active_path() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("session.jsonl");
    fs::copy(
        conformance_dir().join("gen-s005-labels-names/session.jsonl"),
        &path,
    )
    .unwrap();
    let out = pith(tmp.path())
        .args(["session", "tree"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    insta::with_settings!({ snapshot_path => "../../../snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("tree_gen_s005_labels_names", text);
    });
}

#[test]
fn tree_view_names_pi_16_entries() {
    // System messages say what they set; edits and usage entries are named (pi ≥ 0.86).
    let tmp = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for case in [
        "gen-s221-system-messages",
        "gen-s201-context-edit",
        "gen-s241-usage-and-names",
    ] {
        let path = tmp.path().join(format!("{case}.jsonl"));
        fs::copy(conformance_dir().join(case).join("session.jsonl"), &path).unwrap();
        let out = pith(tmp.path())
            .args(["session", "tree"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success());
        text.push_str(&String::from_utf8(out.stdout).unwrap());
    }
    assert!(
        text.contains(
            "a1646b3f system: sections preamble, tools, rules, docs, cwd; +tools read, bash"
        ),
        "{text}"
    );
    assert!(text.contains("33b42b01 system: sections rules, memory; +tools ls; -tools write"));
    assert!(text.contains("ccedb371 [context edit: 77dd1ef5 hidden]"));
    assert!(text.contains("a0245751 [context edit: 19e8335d = Edited: Context path label.]"));
    assert!(text.contains("[usage cache_warm: anthropic/claude-sonnet-4-5]"));
}

#[test]
fn context_at_root_and_unknown_leaf() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("session.jsonl");
    fs::copy(
        conformance_dir().join("gen-s001-linear/session.jsonl"),
        &path,
    )
    .unwrap();
    pith(tmp.path())
        .args(["session", "context", "--leaf", "root"])
        .arg(&path)
        .assert()
        .success()
        .stdout("{\"messages\":[],\"thinkingLevel\":\"off\",\"model\":null}\n");
    pith(tmp.path())
        .args(["session", "context", "--leaf", "nope"])
        .arg(&path)
        .assert()
        .failure()
        .stderr(predicate::str::contains("Entry nope not found"));
    let out = pith(tmp.path())
        .args(["session", "dump", "--at", "nope", "--at", "#0"])
        .arg(&path)
        .output()
        .unwrap();
    let dump = parse_json(std::str::from_utf8(&out.stdout).unwrap());
    assert_eq!(dump["contexts_at"]["nope"], "error: Entry nope not found");
    let first = dump["entries"][0]["id"].as_str().unwrap();
    assert!(dump["contexts_at"][first].is_object());
}

#[test]
fn listing_never_drops_sessions_under_a_low_open_file_limit() {
    // pi reads every file at once and silently returns a subset when descriptors run out.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("many");
    fs::create_dir_all(&dir).unwrap();
    let source = fs::read(conformance_dir().join("gen-s001-linear/session.jsonl")).unwrap();
    for i in 0..60 {
        fs::write(dir.join(format!("s{i:03}.jsonl")), &source).unwrap();
    }
    let out = std::process::Command::new("prlimit")
        .arg("--nofile=12:12")
        .arg(assert_cmd::cargo::cargo_bin("pith"))
        .args(["session", "list", "--json", "--session-dir"])
        .arg(&dir)
        .env("PITH_AGENT_DIR", tmp.path())
        .output()
        .expect("prlimit (util-linux) runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = parse_json(std::str::from_utf8(&out.stdout).unwrap());
    assert_eq!(list.as_array().unwrap().len(), 60);
}

#[test]
fn session_commands_take_an_id_prefix_like_session_does() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = conformance_dir();
    let project = tmp.path().join("sessions").join("--elsewhere--");
    fs::create_dir_all(&project).unwrap();
    let file = project.join("s.jsonl");
    fs::copy(conf.join("gen-s002-branching/session.jsonl"), &file).unwrap();
    let id = read_json(&conf.join("gen-s002-branching/expected.json"))["info"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let by_path = pith(tmp.path())
        .args(["session", "tree"])
        .arg(&file)
        .output()
        .unwrap();
    let by_id = pith(tmp.path())
        .args(["session", "tree", &id[..8]])
        .output()
        .unwrap();
    assert!(by_id.status.success(), "{by_id:?}");
    assert_eq!(by_id.stdout, by_path.stdout);
    assert!(!by_path.stdout.is_empty());
    pith(tmp.path())
        .args(["session", "info", "zzzz-no-such-id"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("zzzz-no-such-id"));
}

/// A search index whose pages are damaged (the schema readable, every table page garbage)
/// is thrown away and rebuilt by the next search, with or without `--wait`: the answer is
/// the right one, never SQLite's "malformed" error.
#[test]
fn session_search_rebuilds_a_damaged_index() {
    let agent = tempfile::tempdir().unwrap();
    let project = agent.path().join("sessions").join("--w-p--");
    fs::create_dir_all(&project).unwrap();
    for i in 0..6 {
        let lines = [
            format!(
                r#"{{"type":"session","version":3,"id":"S-{i}","timestamp":"2025-01-01T00:00:0{i}.000Z","cwd":"/w/p"}}"#
            ),
            format!(
                r#"{{"type":"message","id":"u{i}","parentId":null,"timestamp":"2025-01-01T00:00:0{i}.000Z","message":{{"role":"user","content":"hello world number {i}","timestamp":1}}}}"#
            ),
        ];
        fs::write(project.join(format!("s{i}.jsonl")), lines.join("\n") + "\n").unwrap();
    }
    let found = |wait: bool| -> usize {
        let mut cmd = pith(agent.path());
        cmd.args(["session", "search", "--all", "--json", "\"hello world\""]);
        if wait {
            cmd.arg("--wait");
        }
        let out = cmd.assert().success().get_output().stdout.clone();
        let hits: serde_json::Value = serde_json::from_slice(&out).unwrap();
        hits.as_array().map_or(0, Vec::len)
    };
    assert_eq!(found(true), 6);
    // The root page of one table: the file still opens, and SQLite finds the damage only
    // when a search reads that table.
    let damage = |table: &str| {
        let db = fs::read_dir(agent.path().join("index"))
            .unwrap()
            .map(|d| d.unwrap().path().join("search.sqlite"))
            .find(|p| p.is_file())
            .expect("the index file");
        let conn = rusqlite::Connection::open(&db).unwrap();
        let page_size: u64 = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap();
        let root: u64 = conn
            .query_row(
                "SELECT rootpage FROM sqlite_master WHERE name = ?1",
                [table],
                |r| r.get(0),
            )
            .unwrap();
        drop(conn);
        let mut bytes = fs::read(&db).unwrap();
        let at = ((root - 1) * page_size) as usize;
        bytes[at..at + page_size as usize].fill(0xff);
        fs::write(&db, bytes).unwrap();
    };
    damage("entries");
    assert_eq!(found(true), 6, "with --wait");
    damage("texts_data");
    // Without --wait six files are few enough to index before answering.
    assert_eq!(found(false), 6, "without --wait");
}

/// `pith session search`: builds the index under the agent dir, finds a phrase in an
/// assistant text, names the entry; `--json` says the same; nothing is written beside the
/// sessions; `list --json` streams pi's SessionInfo with allMessagesText.
#[test]
fn session_search_finds_the_entry_and_writes_only_under_the_agent_dir() {
    let agent = tempfile::tempdir().unwrap();
    let project = agent.path().join("sessions").join("--w-p--");
    fs::create_dir_all(&project).unwrap();
    let lines = [
        r#"{"type":"session","version":3,"id":"S-1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w/p"}"#,
        r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"where is the lexer?","timestamp":1}}"#,
        r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"The Lexer lives in  src/lex.rs"}],"timestamp":2}}"#,
    ];
    let file = project.join("2025-01-01T00-00-00-000Z_S-1.jsonl");
    fs::write(&file, lines.join("\n") + "\n").unwrap();
    let out = pith(agent.path())
        .args(["session", "search", "--all", "\"lexer lives in src\""])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.starts_with("S-1@a1  "), "{out}");
    assert!(out.contains("Lexer lives in src/lex.rs"), "{out}");
    let json = pith(agent.path())
        .args(["session", "search", "--all", "--json", "re:lex\\.rs$"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let hits: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(hits[0]["entryId"], "a1");
    assert_eq!(hits[0]["id"], "S-1");
    assert_eq!(hits.as_array().map(Vec::len), Some(1));
    pith(agent.path())
        .args(["session", "search", "--all", "nothing-like-this"])
        .assert()
        .success()
        .stdout("No matches.\n");
    let listed = pith(agent.path())
        .args(["session", "list", "--all", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let listed: serde_json::Value = serde_json::from_slice(&listed).unwrap();
    assert_eq!(
        listed[0]["allMessagesText"],
        "where is the lexer? The Lexer lives in  src/lex.rs"
    );
    let beside: Vec<_> = fs::read_dir(&project)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside.len(), 1, "only the session: {beside:?}");
    assert!(agent.path().join("index").is_dir());
    // A reader gone before the answer (`… --json | head -c1`) is no error: the JSON writer's
    // broken pipe (more hits than stdout buffers) ends pith quietly, as a plain write's does.
    for n in 2..120 {
        let id = format!("S-{n}");
        let copy = lines.join("\n").replace("S-1", &id) + "\n";
        fs::write(
            project.join(format!("2025-01-01T00-00-00-000Z_{id}.jsonl")),
            copy,
        )
        .unwrap();
    }
    let out = crate::output_with_reader_gone(
        std::process::Command::new(assert_cmd::cargo::cargo_bin("pith"))
            .env("PITH_AGENT_DIR", agent.path())
            .args(["session", "search", "--all", "--wait", "--json", "lexer"]),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr, "");
}

/// `pith --session PATH@ENTRY` (what a search hit names): the session opens with its leaf at
/// that entry, so the next prompt continues from it, as `/tree` navigation would.
#[test]
fn a_session_opened_at_a_search_hit_continues_from_that_entry() {
    let agent = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path().to_string_lossy().into_owned();
    let lines = [
        serde_json::json!({"type":"session","version":3,"id":"S-2","timestamp":"2025-01-01T00:00:00.000Z","cwd":cwd}),
        serde_json::json!({"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"first question","timestamp":1}}),
        serde_json::json!({"type":"message","id":"a1","parentId":"u1","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"first answer"}],"timestamp":2}}),
        serde_json::json!({"type":"message","id":"u2","parentId":"a1","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"user","content":"second question","timestamp":3}}),
        serde_json::json!({"type":"message","id":"a2","parentId":"u2","timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"second answer"}],"timestamp":4}}),
    ];
    let file = work.path().join("s.jsonl");
    let body: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    fs::write(&file, body.join("\n") + "\n").unwrap();
    pith(agent.path())
        .current_dir(work.path())
        .args([
            "--session",
            &format!("{}@a1", file.display()),
            "-p",
            "again",
        ])
        .assert()
        .success();
    let written: Vec<serde_json::Value> = fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The original entries are kept; the first one appended hangs off the hit.
    assert_eq!(&written[..5], &lines[..]);
    assert_eq!(
        written[5]["parentId"], "a1",
        "continues from the hit, not from a2"
    );
    let user = written
        .iter()
        .position(|e| {
            e["message"]["role"] == "user" && e["message"]["content"][0]["text"] == "again"
        })
        .expect("the prompt was appended");
    // Its path to the root runs through a1 and never through u2 or a2.
    let mut path = Vec::new();
    let mut at = written[user]["parentId"].as_str().map(str::to_owned);
    while let Some(id) = at {
        let entry = written
            .iter()
            .find(|e| e["id"] == id.as_str())
            .expect("parent exists");
        path.push(id);
        at = entry["parentId"].as_str().map(str::to_owned);
    }
    assert!(
        path.contains(&"a1".to_owned()) && path.contains(&"u1".to_owned()),
        "{path:?}"
    );
    assert!(
        !path.contains(&"a2".to_owned()) && !path.contains(&"u2".to_owned()),
        "{path:?}"
    );
}
