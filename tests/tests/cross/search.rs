//! The search index against pi 1.6.0's own session picker search: the same sessions, in the
//! same order, for bare words (inside other words too), phrases and regexes, as pi's
//! `SessionManager.listAll(dir)` then `filterAndSortSessions(sessions, query, "relevance")`
//! give them under node.

use std::path::{Path, PathBuf};
use std::process::Command;

use pith_store::list::all_session_files;
use pith_store::search::{SearchIndex, parse_query};
use serde_json::{Value, json};

const WORDS: &[&str] = &[
    "parse",
    "the",
    "Lexer",
    "buffer",
    "rebuffer",
    "tree",
    "leaf",
    "café",
    "naïve",
    "日本語",
    "x.y",
    "foo_bar",
    "re-run",
    "lock",
    "unlock",
    "LOCKS",
    "v1.2.3",
    "check",
    "type",
    "typescript",
    "İstanbul",
    "ß",
];

/// A deterministic corpus: names set, changed and cleared, cwds that share letters with the
/// words, and every session's last message at a distinct time.
fn corpus(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let mut seed: u64 = 11;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize % n
    };
    for s in 0..40 {
        let id = format!("0195aaaa-0000-7000-8000-{s:012}");
        let cwd = ["/w/lock-app", "/home/dev/parser", "/srv/tree", "/w/x"][s % 4];
        let mut lines = vec![json!({"type":"session","version":3,"id":id,
            "timestamp":"2025-01-01T00:00:00.000Z","cwd":cwd})];
        let mut parent = Value::Null;
        for k in 0..(1 + s % 4) {
            let words: Vec<&str> = (0..(2 + next(6)))
                .map(|_| WORDS[next(WORDS.len())])
                .collect();
            let eid = format!("e{s}-{k}");
            let role = if k % 2 == 0 { "user" } else { "assistant" };
            // Messages are searched joined by spaces, so phrases may run from one into the
            // next ("ck type" does here). A regex is matched within one message (the one
            // difference kept: docs/divergences.md), so no regex below can cross.
            let content = if role == "user" {
                json!(words.join(" "))
            } else {
                json!([{"type":"text","text":words.join("  ")}])
            };
            // Distinct times, unrelated to the file order.
            let at = 1_700_000_000_000u64 + ((s * 7919) % 40) as u64 * 1000 + k as u64;
            lines.push(json!({"type":"message","id":eid,"parentId":parent,
                "timestamp":"2025-01-01T00:00:00.000Z",
                "message":{"role":role,"content":content,"timestamp":at}}));
            parent = json!(eid);
        }
        match s % 5 {
            0 => lines.push(json!({"type":"session_info","id":format!("n{s}"),"parentId":parent,
                "timestamp":"2025-01-01T00:00:00.000Z","name":format!("Fix the {} bug", WORDS[s % WORDS.len()])})),
            1 => {
                lines.push(json!({"type":"session_info","id":format!("n{s}"),"parentId":parent,
                    "timestamp":"2025-01-01T00:00:00.000Z","name":"old lock name"}));
                lines.push(json!({"type":"session_info","id":format!("m{s}"),"parentId":format!("n{s}"),
                    "timestamp":"2025-01-01T00:00:00.000Z","name":"  "}));
            }
            _ => {}
        }
        let body: Vec<String> = lines.iter().map(Value::to_string).collect();
        std::fs::write(
            dir.join(format!("2025-01-01T00-00-00-000Z_{id}.jsonl")),
            body.join("\n") + "\n",
        )
        .unwrap();
    }
}

const QUERIES: &[&str] = &[
    "lock",
    "ock",
    "LOCK tree",
    "uffer",
    "buffer",
    "typ",
    "lk",
    "prsr",
    "café",
    "x.y",
    "re-run",
    "\"the lexer\"",
    "\"lexer  buffer\"",
    "\"ck type\"",
    "\"fix the\"",
    "re:lock\\w*",
    "re:type\\s+check",
    "re:unlock\\b",
    "re:\\d\\.\\d",
    "re:LEX",
    "re:lock(?!s)\\b",
    "re:(f)\\1",
    "0195aaaa-0000-7000-8000-000000000007",
    "zebra",
];

/// pi 1.6.0's answer for each query: file paths, best first.
fn pi_answers(dir: &Path) -> Vec<Vec<PathBuf>> {
    let install = pith_tests::pi_oracle::install();
    let dist = install.join("pi/node_modules/@earendil-works/pi-coding-agent/dist");
    let script = format!(
        r#"
const {{ SessionManager }} = await import({index});
const search = await import({search});
const sessions = await SessionManager.listAll({dir});
const queries = {queries};
console.log(JSON.stringify(queries.map(q =>
  search.filterAndSortSessions(sessions, q, "relevance").map(s => s.path))));
"#,
        index = json!(dist.join("index.js")),
        search = json!(dist.join("modes/interactive/components/session-selector-search.js")),
        dir = json!(dir),
        queries = json!(QUERIES),
    );
    let out = Command::new(install.join("bin/node"))
        .args(["--input-type=module", "-e", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn search_finds_and_orders_sessions_as_pi_1_6_does() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("sessions");
    let dir = root.join("--w--");
    corpus(&dir);
    let agent = tmp.path().join("agent");
    let index = SearchIndex::open(&agent, &root)
        .unwrap()
        .sync(&all_session_files(&root), None, &|_, _| {})
        .unwrap();
    let want = pi_answers(&dir);
    let mut found = 0;
    for (query, want) in QUERIES.iter().zip(want) {
        let got: Vec<PathBuf> = index
            .search(&parse_query(query), None, None)
            .unwrap()
            .into_iter()
            .map(|h| h.path)
            .collect();
        assert_eq!(got, want, "query {query:?}");
        // A limit keeps pi's best.
        let top: Vec<PathBuf> = index
            .search(&parse_query(query), None, Some(3))
            .unwrap()
            .into_iter()
            .map(|h| h.path)
            .collect();
        assert_eq!(top, want[..want.len().min(3)], "query {query:?}, limit 3");
        found += usize::from(!want.is_empty());
    }
    assert!(found >= 15, "the queries must find something: {found}");
}
