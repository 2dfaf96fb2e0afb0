//! Expected values come from running pi 1.6.0's `parseSearchQuery`, `matchSession` and
//! `filterAndSortSessions` under node on the same inputs.

use std::path::PathBuf;

use super::*;
use pith_store::search::query::Token;

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn queries_parse_as_pi_parses_them() {
    let Query::Tokens(t) = parse_query(r#"foo "node cve" bar"#) else {
        panic!("tokens expected");
    };
    assert_eq!(
        t,
        vec![
            Token::Fuzzy("foo".into()),
            Token::Phrase("node cve".into()),
            Token::Fuzzy("bar".into()),
        ]
    );
    // An unbalanced quote falls back to whitespace tokens, quote included.
    let Query::Tokens(t) = parse_query(r#"foo "unbalanced bar"#) else {
        panic!("tokens expected");
    };
    assert_eq!(
        t,
        vec![
            Token::Fuzzy("foo".into()),
            Token::Fuzzy("\"unbalanced".into()),
            Token::Fuzzy("bar".into()),
        ]
    );
    assert!(matches!(parse_query("re:  "), Query::Invalid(e) if e == "Empty regex"));
    assert!(matches!(parse_query("re:("), Query::Invalid(_)));
    assert!(matches!(parse_query("re:fo+"), Query::Regex(_)));
    assert!(matches!(parse_query("   "), Query::Tokens(t) if t.is_empty()));
}

fn info(id: &str, name: Option<&str>, text: &str, cwd: &str, modified_ms: f64) -> SessionInfo {
    SessionInfo {
        path: PathBuf::from(format!("/s/{id}.jsonl")),
        id: id.into(),
        cwd: cwd.into(),
        name: name.map(str::to_owned),
        parent_session_path: None,
        created_ms: 0.0,
        modified_ms,
        message_count: 1,
        first_message: text.into(),
        all_messages_text: text.into(),
    }
}

#[test]
fn filtering_and_ordering_match_pi() {
    let sessions = vec![
        info("s1", None, "fix the node cve today", "/w/a", 3.0),
        info("s2", Some("Release"), "node   CVE bump", "/w/b", 2.0),
        info("s3", None, "unrelated", "/w/node", 1.0),
    ];
    let docs: Vec<SearchDoc> = sessions.iter().map(SearchDoc::new).collect();
    let run = |q: &str, sort: SortMode| -> Vec<&str> {
        filter_and_sort(&sessions, &docs, 0..sessions.len(), &parse_query(q), sort)
            .into_iter()
            .map(|i| sessions[i].id.as_str())
            .collect()
    };
    assert_eq!(run("node", SortMode::Recent), ["s1", "s2", "s3"]);
    // Found in the messages or the cwd: one tier, so newest first.
    assert_eq!(run("node", SortMode::Relevance), ["s1", "s2", "s3"]);
    assert_eq!(run("node", SortMode::Threaded), ["s1", "s2", "s3"]);
    assert_eq!(run(r#""node cve""#, SortMode::Relevance), ["s1", "s2"]);
    assert_eq!(run("re:CVE", SortMode::Relevance), ["s1", "s2"]);
    // Scattered letters count in the name and the cwd only, never in the messages.
    assert_eq!(run("nd", SortMode::Relevance), ["s3"]);
    // Inside a word of the messages.
    assert_eq!(run("od", SortMode::Relevance), ["s1", "s2", "s3"]);
    assert_eq!(run("elea", SortMode::Relevance), ["s2"]);
    assert!(run("uffer", SortMode::Relevance).is_empty());
    assert!(run("re:[", SortMode::Relevance).is_empty());
    let scores = |q: &str| -> Vec<Option<f64>> {
        let q = parse_query(q);
        docs.iter().map(|d| match_doc(d, &q)).collect()
    };
    assert_eq!(scores("node"), [Some(1e6), Some(1e6), Some(1e6)]);
    assert_eq!(scores("re:CVE"), [Some(1e6), Some(1e6), None]);
    assert_eq!(scores("elea"), [None, Some(-29.0), None]);
    assert_eq!(scores("w/b"), [None, Some(1e6), None]);
    assert!(close(scores("nd")[2], 1_999_992.8));
}

#[test]
fn a_listing_without_texts_is_searched_by_its_first_message() {
    let mut s = info("abc", None, "", "/w", 1.0);
    s.first_message = "deploy the rocket".into();
    let doc = SearchDoc::new(&s);
    assert!(match_doc(&doc, &parse_query("rocket")).is_some());
    s.first_message = "(no messages)".into();
    assert!(match_doc(&SearchDoc::new(&s), &parse_query(r#""no messages""#)).is_none());
}
