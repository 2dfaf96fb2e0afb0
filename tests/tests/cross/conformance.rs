//! Every conformance case through the library: open a copy as pi's `SessionManager.open`
//! does, list an untouched copy, and compare with what pi 1.6.0 reported (spec:
//! `../shared/conformance-1.6/README.md`; where pith differs on purpose, divergences.md and
//! `pith_tests::policy`).

use std::path::Path;
use std::sync::Arc;

use pith_store::dump::{At, dump_session};
use pith_store::env::{RandomIds, SystemClock};
use pith_store::list::list;
use pith_store::{OpenMode, Session, SessionEnv};
use pith_tests::{
    at_args, case_dirs, check_case, check_listing, expected_for_pith, list_dirs, parse_json,
    read_json, refusal, with_big_stack,
};

fn env(tmp: &Path) -> SessionEnv {
    SessionEnv {
        agent_dir: tmp.join("agent"),
        clock: Arc::new(SystemClock),
        ids: Arc::new(RandomIds),
    }
}

fn dump_case(case: &Path, expected: &serde_json::Value) -> serde_json::Value {
    let tmp = tempfile::tempdir().expect("tmp");
    let open_dir = tmp.path().join("open");
    let list_dir = tmp.path().join("list");
    std::fs::create_dir_all(&open_dir).expect("mkdir");
    std::fs::create_dir_all(&list_dir).expect("mkdir");
    let copy = open_dir.join("session.jsonl");
    std::fs::copy(case.join("session.jsonl"), &copy).expect("copy");
    std::fs::copy(case.join("session.jsonl"), list_dir.join("session.jsonl")).expect("copy");
    let info = list(&list_dir).sessions.first().map(|i| i.to_value());
    let session = match Session::open(&copy, None, None, OpenMode::Write, &env(tmp.path())) {
        Ok(session) => session,
        Err(e @ pith_store::Error::NotASession { .. }) => {
            // A refusal leaves the file as it was (divergences.md "Reading").
            assert_eq!(
                std::fs::read(&copy).expect("read"),
                std::fs::read(case.join("session.jsonl")).expect("read"),
                "{}: a refused file must stay untouched",
                case.display()
            );
            return refusal(expected, &e.to_string(), info);
        }
        Err(e) => panic!("{}: {e}", case.display()),
    };
    let at: Vec<At> = at_args(expected)
        .iter()
        .map(|a| a.parse().expect("valid --at"))
        .collect();
    parse_json(&dump_session(&session, &at, info))
}

#[test]
fn every_case_matches_pi_through_the_library() {
    let cases = case_dirs();
    assert!(
        cases.len() >= 50,
        "expected the public cases, found {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let problems = with_big_stack(|| {
            let expected = expected_for_pith(case);
            let actual = dump_case(case, &expected);
            check_case(case, &expected, &actual)
        });
        if !problems.is_empty() {
            let shown: Vec<String> = problems.iter().take(5).map(|d| format!("  {d}")).collect();
            failures.push(format!("{name}:\n{}", shown.join("\n")));
        }
    }
    println!(
        "conformance (library): {}/{} cases equal",
        cases.len() - failures.len(),
        cases.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_listing_matches_pi() {
    let dirs = list_dirs();
    assert!(
        dirs.len() >= 2,
        "expected the _list-* cases, found {dirs:?}"
    );
    for dir in dirs {
        let expected = read_json(&dir.join("expected.json"));
        let listing = list(&dir.join("sessions"));
        let actual: Vec<serde_json::Value> =
            listing.sessions.iter().map(|s| s.to_value()).collect();
        let problems = check_listing(&dir, &expected, &actual);
        assert!(
            problems.is_empty(),
            "{}:\n{}",
            dir.display(),
            problems.join("\n")
        );
        // Files left out are reported, never dropped silently.
        let skipped: Vec<String> = listing
            .skipped
            .iter()
            .filter_map(|s| s.path.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        assert!(
            skipped.iter().any(|n| n.ends_with("_empty.jsonl")),
            "{skipped:?}"
        );
    }
}

/// `pith session context` opens a file leaving out the message bodies the context does not
/// read (`ContextView`); at every leaf of every case it must answer as the whole session does.
#[test]
fn a_context_view_answers_as_the_whole_session_at_every_leaf() {
    use pith_store::load::Bodies;
    use pith_store::{ContextView, Leaf};
    let mut compared = 0;
    for case in case_dirs() {
        let tmp = tempfile::tempdir().expect("tmp");
        let whole_copy = tmp.path().join("whole.jsonl");
        let view_copy = tmp.path().join("view.jsonl");
        std::fs::copy(case.join("session.jsonl"), &whole_copy).expect("copy");
        std::fs::copy(case.join("session.jsonl"), &view_copy).expect("copy");
        let env = env(tmp.path());
        let Ok(session) = Session::open(&whole_copy, None, None, OpenMode::Inspect, &env) else {
            continue;
        };
        let leaves = [session.tree().leaf(), Leaf::Root]
            .into_iter()
            .chain((0..session.entries().len()).map(Leaf::At));
        for leaf in leaves {
            // Every body left out, so that every one the context reads is read back.
            let view = ContextView::open_with(
                &view_copy,
                &env,
                Bodies::Elided {
                    from_bytes: 0,
                    kept_from: u64::MAX,
                },
                |_| Ok::<_, ()>(leaf),
            )
            .expect("opens")
            .expect("leaf");
            assert_eq!(
                view.context().to_json(),
                session.context_at(leaf).to_json(),
                "{}: the context at {leaf:?}",
                case.display()
            );
            assert_eq!(view.warnings(), session.warnings(), "{}", case.display());
            let mut written = Vec::new();
            view.context().write_json(&mut written).expect("writes");
            assert_eq!(
                String::from_utf8(written).expect("utf-8"),
                view.context().to_json()
            );
            compared += 1;
        }
    }
    assert!(compared > 500, "compared only {compared} contexts");
}

/// A file that changes between the first read and reading the bodies back is read again,
/// whole: the context is the new file's, never a mix.
#[test]
fn a_context_view_rereads_a_file_that_changed_under_it() {
    use pith_store::ContextView;
    use pith_store::load::Bodies;
    let tmp = tempfile::tempdir().expect("tmp");
    let file = tmp.path().join("s.jsonl");
    let header = r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#;
    let user = |text: &str| {
        format!(
            r#"{{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
        )
    };
    let before = format!("{header}\n{}\n", user(&"a".repeat(2000)));
    let after = format!("{header}\n{}\n", user(&"b".repeat(1000)));
    std::fs::write(&file, &before).expect("write");
    let env = env(tmp.path());
    let view = ContextView::open_with(
        &file,
        &env,
        Bodies::Elided {
            from_bytes: 0,
            kept_from: u64::MAX,
        },
        |tree| {
            std::fs::write(&file, &after).expect("rewrite");
            Ok::<_, ()>(tree.leaf())
        },
    )
    .expect("opens")
    .expect("leaf");
    let context = view.context().to_json();
    assert!(context.contains(&"b".repeat(1000)), "{context}");
    assert!(
        !context.contains('a'.to_string().repeat(10).as_str()),
        "{context}"
    );
    assert_eq!(view.context().messages.len(), 1);
}
