//! Listing and resolving `--session`/`--fork` arguments (spec: lifecycle.md §4, §5.3).

use std::fs;
use std::path::{Path, PathBuf};

use pith_store::Error;
use pith_store::list::{
    Resolved, list, list_all, list_for_cwd, resolve_session_arg, session_cwd_matches,
};

fn session(dir: &Path, id: &str, ts: &str, text: &str) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("{}_{id}.jsonl", ts.replace([':', '.'], "-")));
    let cwd = dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .trim_matches('-')
        .to_owned();
    fs::write(
        &path,
        format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"{ts}\",\"cwd\":\"/{cwd}\"}}\n{{\"type\":\"message\",\"id\":\"u1\",\"parentId\":null,\"timestamp\":\"{ts}\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\"}}}}\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn resolves_paths_prefixes_and_other_projects() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("sessions");
    let here = root.join("--here--");
    let there = root.join("--there--");
    let a = session(
        &here,
        "0195aaaa-0000-7000-8000-000000000001",
        "2025-01-01T00:00:00.000Z",
        "a",
    );
    let b = session(
        &here,
        "0195aaab-0000-7000-8000-000000000002",
        "2025-01-02T00:00:00.000Z",
        "b",
    );
    let c = session(
        &there,
        "0196cccc-0000-7000-8000-000000000003",
        "2025-01-03T00:00:00.000Z",
        "c",
    );

    // Anything with a separator or a .jsonl suffix is a path, existing or not.
    assert_eq!(
        resolve_session_arg("x/y", &here, &root).unwrap(),
        Resolved::Path("x/y".into())
    );
    assert_eq!(
        resolve_session_arg("new.jsonl", &here, &root).unwrap(),
        Resolved::Path("new.jsonl".into())
    );
    // A unique prefix in this project.
    assert_eq!(
        resolve_session_arg("0195aaab", &here, &root).unwrap(),
        Resolved::Local(b)
    );
    // An exact id wins over longer ids it prefixes.
    assert_eq!(
        resolve_session_arg("0195aaaa-0000-7000-8000-000000000001", &here, &root).unwrap(),
        Resolved::Local(a)
    );
    // Another project's session carries its cwd.
    assert_eq!(
        resolve_session_arg("0196", &here, &root).unwrap(),
        Resolved::Global {
            path: c,
            cwd: "/there".into()
        }
    );
    // Several matches: a clear error listing them, not a silent pick.
    let err = resolve_session_arg("0195aaa", &here, &root).unwrap_err();
    assert!(
        matches!(err, Error::AmbiguousSession { count: 2, .. }),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("'0195aaa' matches 2 sessions") && msg.contains("0195aaab"),
        "{msg}"
    );
    assert_eq!(
        resolve_session_arg("ffff", &here, &root)
            .unwrap_err()
            .to_string(),
        "No session found matching 'ffff'"
    );
}

#[test]
fn list_all_covers_every_project_and_reports_what_it_cannot_read() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("sessions");
    session(
        &root.join("--p1--"),
        "s1",
        "2025-01-01T00:00:00.000Z",
        "one",
    );
    session(
        &root.join("--p2--"),
        "s2",
        "2025-01-03T00:00:00.000Z",
        "two",
    );
    session(
        &root.join("--p2--"),
        "s3",
        "2025-01-02T00:00:00.000Z",
        "three",
    );
    // Files directly under the root are not sessions of any project (pi skips them too).
    session(&root, "loose", "2025-01-04T00:00:00.000Z", "loose");
    // A *.jsonl that cannot be read is reported.
    fs::create_dir_all(root.join("--p1--").join("dir.jsonl")).unwrap();
    let listing = list_all(&root);
    let ids: Vec<&str> = listing.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["s2", "s3", "s1"]);
    assert_eq!(listing.skipped.len(), 1);
    assert!(listing.skipped[0].path.ends_with("dir.jsonl"));
    assert_eq!(list(&root.join("--nope--")).sessions.len(), 0);
}

#[test]
fn ties_are_ordered_by_file_name_descending() {
    // pi 1.6.0 sorts the names with localeCompare, descending, before its stable sort by
    // `modified` (lifecycle.md §4).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("--p--");
    let ts = "2025-01-01T00:00:00.000Z";
    for id in ["b", "c", "a"] {
        session(&dir, id, ts, id);
    }
    let ids: Vec<String> = list(&dir).sessions.into_iter().map(|s| s.id).collect();
    assert_eq!(ids, ["c", "b", "a"]);
    // Across projects, listAll() reads newer files first, then names descending.
    let root = tmp.path();
    session(&root.join("--q--"), "d", ts, "d");
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    for id in ["a", "b", "c"] {
        let path = dir.join(format!("{}_{id}.jsonl", ts.replace([':', '.'], "-")));
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let ids: Vec<String> = list_all(root).sessions.into_iter().map(|s| s.id).collect();
    assert_eq!(ids, ["d", "c", "b", "a"]);
}

#[test]
fn list_for_a_cwd_keeps_its_sessions_only_in_a_custom_dir() {
    // `list(cwd, dir)` (pi ≥ 0.77) vs `listAll(dir)`.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("custom");
    session(&dir.join("--here--"), "h", "2025-01-01T00:00:00.000Z", "h");
    session(&dir.join("--there--"), "t", "2025-01-02T00:00:00.000Z", "t");
    for sub in ["--here--", "--there--"] {
        for e in fs::read_dir(dir.join(sub)).unwrap() {
            let e = e.unwrap();
            fs::rename(e.path(), dir.join(e.file_name())).unwrap();
        }
    }
    let ids = |l: pith_store::list::Listing| -> Vec<String> {
        l.sessions.into_iter().map(|s| s.id).collect()
    };
    assert_eq!(ids(list(&dir)), ["t", "h"]);
    assert_eq!(ids(list_for_cwd("/here", &dir, true)), ["h"]);
    assert_eq!(ids(list_for_cwd("/here/./x/..", &dir, true)), ["h"]);
    assert_eq!(ids(list_for_cwd("/here", &dir, false)), ["t", "h"]);
    assert!(session_cwd_matches("/a/b/", "/a/b"));
    assert!(!session_cwd_matches("", "/"));
}
