//! Every conformance case through the library: open a copy as pi's `SessionManager.open`
//! does, list an untouched copy, and compare with what pi 0.73.1 reported.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use pith_store::dump::{At, dump_session};
use pith_store::env::{RandomIds, SystemClock};
use pith_store::list::list;
use pith_store::{OpenMode, Session, SessionEnv};
use pith_tests::{
    at_args, case_dirs, compare_case, list_dirs, parse_json, read_json, skipped_members,
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
    let session =
        Session::open(&copy, None, None, OpenMode::Write, &env(tmp.path())).expect("opens");
    let info = list(&list_dir).sessions.first().map(|i| i.to_value());
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
        cases.len() >= 35,
        "expected the public cases, found {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let name = case
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_owned();
        let expected = read_json(&case.join("expected.json"));
        let actual = dump_case(case, &expected);
        let skip: Vec<&str> = skipped_members(&name).into_iter().collect();
        let diffs = compare_case(&expected, &actual, &skip);
        if !diffs.is_empty() {
            let shown: Vec<String> = diffs.iter().take(5).map(|d| format!("  {d}")).collect();
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
    assert!(!dirs.is_empty(), "no _list-* cases found");
    for dir in dirs {
        let expected = read_json(&dir.join("expected.json"));
        let listing = list(&dir.join("sessions"));
        let actual = serde_json::json!({ "list": listing.sessions.iter().map(|s| s.to_value()).collect::<Vec<_>>() });
        let diffs = compare_case(&expected, &actual, &[]);
        assert!(
            diffs.is_empty(),
            "{}:\n{}",
            dir.display(),
            diffs
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
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
