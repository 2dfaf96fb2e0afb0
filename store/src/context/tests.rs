use super::*;
use crate::entry::Entry;

const A: &str = r#"{"role":"assistant","content":[{"type":"text","text":"x"}],"api":"x","provider":"p","model":"MODEL","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":TS}"#;

fn assistant(model: &str, ts: u64) -> String {
    A.replace("MODEL", model).replace("TS", &ts.to_string())
}

fn tree(lines: &[String]) -> SessionTree {
    SessionTree::new(
        lines
            .iter()
            .map(|l| Entry::parse(l, 0).expect("entry"))
            .collect(),
    )
    .0
}

fn msg(id: &str, parent: Option<&str>, ts: &str, message: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{ts}","message":{message}}}"#
    )
}

fn user(text: &str, ts: u64) -> String {
    format!(r#"{{"role":"user","content":"{text}","timestamp":{ts}}}"#)
}

fn context_json(t: &SessionTree) -> Value {
    serde_json::from_str(&build_session_context(t, t.leaf()).to_json()).expect("json")
}

// Example A of tree-and-context.md §8.
#[test]
fn linear_with_settings() {
    let t = tree(&[
        r#"{"type":"model_change","id":"e1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","provider":"p","modelId":"m0"}"#.into(),
        r#"{"type":"thinking_level_change","id":"e2","parentId":"e1","timestamp":"2025-01-01T00:00:01.000Z","thinkingLevel":"low"}"#.into(),
        msg("e3", Some("e2"), "2025-01-01T00:00:02.000Z", &user("hi", 2000)),
        msg("e4", Some("e3"), "2025-01-01T00:00:03.000Z", &assistant("m1", 3000)),
    ]);
    let c = context_json(&t);
    assert_eq!(c["thinkingLevel"], "low");
    assert_eq!(
        c["model"],
        serde_json::json!({"provider":"p","modelId":"m1"})
    );
    assert_eq!(c["messages"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        c["messages"][0],
        serde_json::json!({"role":"user","content":"hi","timestamp":2000})
    );
}

// Example D: two compactions, the second keeps from before the first.
#[test]
fn last_compaction_wins_and_older_summaries_vanish() {
    let t = tree(&[
        msg("u1", None, "2025-01-01T00:00:01.000Z", &user("q1", 1)),
        msg("a1", Some("u1"), "2025-01-01T00:00:02.000Z", &assistant("m", 2)),
        r#"{"type":"compaction","id":"c1","parentId":"a1","timestamp":"2025-01-01T00:00:03.000Z","summary":"S1","firstKeptEntryId":"a1","tokensBefore":100}"#.into(),
        msg("u2", Some("c1"), "2025-01-01T00:00:04.000Z", &user("q2", 4)),
        msg("a2", Some("u2"), "2025-01-01T00:00:05.000Z", &assistant("m", 5)),
        r#"{"type":"compaction","id":"c2","parentId":"a2","timestamp":"2025-01-01T00:00:06.000Z","summary":"S2","firstKeptEntryId":"a1","tokensBefore":200}"#.into(),
        msg("u3", Some("c2"), "2025-01-01T00:00:07.000Z", &user("q3", 7)),
    ]);
    let c = context_json(&t);
    let m = c["messages"].as_array().expect("array");
    assert_eq!(
        m[0],
        serde_json::json!({"role":"compactionSummary","summary":"S2","tokensBefore":200,"timestamp":1735689606000u64})
    );
    let roles: Vec<&str> = m.iter().map(|x| x["role"].as_str().unwrap_or("")).collect();
    assert_eq!(
        roles,
        [
            "compactionSummary",
            "assistant",
            "user",
            "assistant",
            "user"
        ]
    );
}

// Example E: metadata entries, custom message, bash, empty branch summary.
#[test]
fn metadata_custom_and_bash() {
    let t = tree(&[
        msg("u1", None, "2025-01-01T00:00:01.000Z", &user("q1", 1)),
        r#"{"type":"custom","customType":"ext","data":{"n":1},"id":"x1","parentId":"u1","timestamp":"2025-01-01T00:00:02.000Z"}"#.into(),
        r#"{"type":"custom_message","customType":"ext","content":"ctx note","display":false,"id":"x2","parentId":"x1","timestamp":"2025-01-01T00:00:03.000Z"}"#.into(),
        r#"{"type":"label","id":"x3","parentId":"x2","timestamp":"2025-01-01T00:00:04.000Z","targetId":"u1","label":"start"}"#.into(),
        r#"{"type":"session_info","id":"x4","parentId":"x3","timestamp":"2025-01-01T00:00:05.000Z","name":"My session"}"#.into(),
        msg("x5", Some("x4"), "2025-01-01T00:00:06.000Z", r#"{"role":"bashExecution","command":"ls","output":"a\n","exitCode":0,"cancelled":false,"truncated":false,"timestamp":6000,"excludeFromContext":true}"#),
        r#"{"type":"branch_summary","id":"x6","parentId":"x5","timestamp":"2025-01-01T00:00:07.000Z","fromId":"root","summary":""}"#.into(),
        r#"{"type":"model_change","id":"x7","parentId":"x6","timestamp":"2025-01-01T00:00:08.000Z","provider":"q","modelId":"m9"}"#.into(),
    ]);
    let c = context_json(&t);
    assert_eq!(
        c,
        serde_json::json!({"messages":[{"role":"user","content":"q1","timestamp":1},
            {"role":"custom","customType":"ext","content":"ctx note","display":false,"timestamp":1735689603000u64},
            {"role":"bashExecution","command":"ls","output":"a\n","exitCode":0,"cancelled":false,"truncated":false,"timestamp":6000,"excludeFromContext":true}],
            "thinkingLevel":"off","model":{"provider":"q","modelId":"m9"}})
    );
}

#[test]
fn edge_results_from_the_spec_table() {
    let t = tree(&[
        r#"{"type":"model_change","id":"1","parentId":null,"timestamp":"t","provider":"p","modelId":"m"}"#.into(),
        r#"{"type":"thinking_level_change","id":"2","parentId":"1","timestamp":"t"}"#.into(),
        r#"{"type":"compaction","id":"3","parentId":"2","timestamp":"nope","summary":"S","firstKeptEntryId":"zz","tokensBefore":1}"#.into(),
    ]);
    assert_eq!(
        build_session_context(&t, Leaf::Root).to_json(),
        r#"{"messages":[],"thinkingLevel":"off","model":null}"#
    );
    let c = context_json(&t);
    assert!(
        c.get("thinkingLevel").is_none(),
        "missing key is omitted: {c}"
    );
    assert_eq!(c["messages"][0]["timestamp"], Value::Null);
    assert_eq!(c["messages"].as_array().map(Vec::len), Some(1));
}

#[test]
fn message_entry_without_message_is_left_out() {
    let (t, w) = SessionTree::new(vec![
        Entry::parse(&msg("u1", None, "t", &user("q", 1)), 2).expect("entry"),
        Entry::parse(
            r#"{"type":"message","id":"m","parentId":"u1","timestamp":"t"}"#,
            3,
        )
        .expect("entry"),
    ]);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].line, 3);
    let c = context_json(&t);
    assert_eq!(c["messages"].as_array().map(Vec::len), Some(1));
}
