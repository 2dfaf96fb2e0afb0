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

fn edit(id: &str, parent: &str, target: &str, replacement: &str) -> String {
    format!(
        r#"{{"type":"context_edit","id":"{id}","parentId":"{parent}","timestamp":"2025-01-01T00:00:09.000Z","targetId":"{target}","replacement":{replacement}}}"#
    )
}

fn error_assistant(text: &str, ts: u64) -> String {
    assistant("m", ts)
        .replace(
            r#"[{"type":"text","text":"x"}]"#,
            &format!(r#"[{{"type":"text","text":"{text}"}}]"#),
        )
        .replace(r#""stopReason":"stop""#, r#""stopReason":"error""#)
}

fn texts(c: &Value) -> Vec<String> {
    c["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("+"),
            other => format!("<{}>", m["role"].as_str().unwrap_or("?")) + &other.to_string(),
        })
        .collect()
}

// Example F of tree-and-context.md §8: the latest edit per target among the path's entries.
#[test]
fn context_edits_hide_and_replace_per_branch() {
    let mut t = tree(&[
        msg("u1", None, "2025-01-01T00:00:01.000Z", &user("q1", 1)),
        msg(
            "a1",
            Some("u1"),
            "2025-01-01T00:00:02.000Z",
            &error_assistant("500 boom", 2),
        ),
        edit("e1", "a1", "a1", "null"),
        msg(
            "a2",
            Some("e1"),
            "2025-01-01T00:00:03.000Z",
            &assistant("m", 3).replace(r#""text":"x""#, r#""text":"r1 again""#),
        ),
        edit(
            "e2",
            "a2",
            "a2",
            r#"{"content":[{"type":"text","text":"r1 (edited)"}]}"#,
        ),
        edit("e3", "e2", "u1", r#"{"content":"q1 (edited)"}"#),
        msg("u2", Some("e3"), "2025-01-01T00:00:04.000Z", &user("q2", 4)),
        msg(
            "a3",
            Some("u2"),
            "2025-01-01T00:00:05.000Z",
            &assistant("m", 5).replace(r#""text":"x""#, r#""text":"r2""#),
        ),
        edit("e4", "a3", "u1", r#"{"content":"q1 (edited twice)"}"#),
        msg(
            "u3",
            Some("a2"),
            "2025-01-01T00:00:06.000Z",
            &user("q2 on another branch", 6),
        ),
    ]);
    assert_eq!(
        texts(&context_json(&t)),
        ["q1", "r1 again", "q2 on another branch"]
    );
    t.branch("a3").expect("a3");
    let c = context_json(&t);
    assert_eq!(texts(&c), ["q1 (edited)", "r1 (edited)", "q2", "r2"]);
    // Every other key of a replaced message stays as it was, in its place.
    assert_eq!(
        c["messages"][0],
        serde_json::json!({"role":"user","content":"q1 (edited)","timestamp":1})
    );
    assert_eq!(c["messages"][1]["stopReason"], "stop");
    let raw = build_session_context(&t, t.leaf()).messages[1].to_json();
    assert!(
        raw.starts_with(
            r#"{"role":"assistant","content":[{"type":"text","text":"r1 (edited)"}],"api":"x""#
        ),
        "{raw}"
    );
    t.branch("e4").expect("e4");
    assert_eq!(
        texts(&context_json(&t)),
        ["q1 (edited twice)", "r1 (edited)", "q2", "r2"]
    );
    // Settings ignore edits: the hidden assistant still names the model.
    t.branch("e1").expect("e1");
    let c = context_json(&t);
    assert_eq!(texts(&c), ["q1"]);
    assert_eq!(c["model"]["modelId"], "m");
}

#[test]
fn string_replacements_become_a_text_block_for_assistants_and_results_only() {
    let t = tree(&[
        msg("u1", None, "2025-01-01T00:00:01.000Z", &user("q", 1)),
        msg("a1", Some("u1"), "2025-01-01T00:00:02.000Z", &assistant("m", 2)),
        msg("t1", Some("a1"), "2025-01-01T00:00:03.000Z", r#"{"role":"toolResult","toolCallId":"c","toolName":"read","content":[],"isError":false,"timestamp":3}"#),
        r#"{"type":"custom_message","customType":"ext","content":"note","display":true,"id":"x1","parentId":"t1","timestamp":"2025-01-01T00:00:04.000Z"}"#.into(),
        msg("b1", Some("x1"), "2025-01-01T00:00:05.000Z", r#"{"role":"bashExecution","command":"ls","output":"","cancelled":false,"truncated":false,"timestamp":5}"#),
        edit("e1", "b1", "a1", r#"{"content":"A"}"#),
        edit("e2", "e1", "t1", r#"{"content":"T"}"#),
        edit("e3", "e2", "x1", r#"{"content":"X"}"#),
        edit("e4", "e3", "b1", r#"{"content":"B"}"#),
        edit("e5", "e4", "u1", r#"{"content":[{"type":"text","text":"U"}]}"#),
    ]);
    let c = context_json(&t);
    let m = c["messages"].as_array().expect("messages");
    assert_eq!(
        m[0]["content"],
        serde_json::json!([{"type":"text","text":"U"}])
    );
    assert_eq!(
        m[1]["content"],
        serde_json::json!([{"type":"text","text":"A"}])
    );
    assert_eq!(
        m[2]["content"],
        serde_json::json!([{"type":"text","text":"T"}])
    );
    assert_eq!(
        m[3],
        serde_json::json!({"role":"custom","customType":"ext","content":"X","display":true,"timestamp":1735689604000u64})
    );
    // bashExecution has no content to replace.
    assert_eq!(m[4]["output"], "");
    assert!(m[4].get("content").is_none());
}

#[test]
fn odd_edits_follow_pi_or_are_ignored() {
    let t = tree(&[
        msg("u1", None, "2025-01-01T00:00:01.000Z", &user("q", 1)),
        msg("u2", Some("u1"), "2025-01-01T00:00:02.000Z", &user("r", 2)),
        msg("u3", Some("u2"), "2025-01-01T00:00:03.000Z", &user("s", 3)),
        // A replacement without content: `{...m, content: undefined}` drops the member.
        edit("e1", "u3", "u1", r#"{"other":1}"#),
        edit("e2", "e1", "u2", r#""not an object""#),
        // An edit without a replacement (pi throws) changes nothing; the earlier one applies.
        edit("e3", "e2", "u3", "null"),
        r#"{"type":"context_edit","id":"e4","parentId":"e3","timestamp":"t","targetId":"u3"}"#
            .into(),
        // A non-string target names no entry.
        edit("e5", "e4", "u2", "null").replace(r#""targetId":"u2""#, r#""targetId":7"#),
    ]);
    let c = context_json(&t);
    let m = c["messages"].as_array().expect("messages");
    assert_eq!(m.len(), 2);
    assert_eq!(m[0], serde_json::json!({"role":"user","timestamp":1}));
    assert_eq!(m[1], serde_json::json!({"role":"user","timestamp":2}));
}

// Example G: the checkpoint comes first; system messages in the kept range are dropped.
#[test]
fn compaction_checkpoint_and_system_messages() {
    let sys = |sections: &str, extra: &str, ts: u64| {
        format!(r#"{{"role":"system","content":"","sections":{sections},"timestamp":{ts}{extra}}}"#)
    };
    let mut t = tree(&[
        msg("s1", None, "2025-01-01T00:00:01.000Z", &sys(r#"{"preamble":"P1","tools":"T"}"#, r#","toolsAdded":[{"name":"read"},{"name":"bash"}]"#, 1)),
        msg("u1", Some("s1"), "2025-01-01T00:00:02.000Z", &user("q1", 2)),
        msg("a1", Some("u1"), "2025-01-01T00:00:03.000Z", &assistant("m", 3)),
        msg("u2", Some("a1"), "2025-01-01T00:00:04.000Z", &user("q2", 4)),
        msg("a2", Some("u2"), "2025-01-01T00:00:05.000Z", &assistant("m", 5)),
        msg("s2", Some("a2"), "2025-01-01T00:00:06.000Z", &sys(r#"{"preamble":"P2"}"#, r#","toolsRemoved":[{"name":"bash"}]"#, 6)),
        msg("u3", Some("s2"), "2025-01-01T00:00:07.000Z", &user("q3", 7)),
        msg("a3", Some("u3"), "2025-01-01T00:00:08.000Z", &assistant("m", 8)),
        r#"{"type":"compaction","id":"c1","parentId":"a3","timestamp":"2025-01-01T00:00:12.000Z","summary":"S1","firstKeptEntryId":"u2","tokensBefore":500,"systemMessage":{"role":"system","content":"","sections":{"preamble":"P2","tools":"T"},"toolsAdded":[{"name":"read"}],"timestamp":12000}}"#.into(),
        msg("u4", Some("c1"), "2025-01-01T00:00:13.000Z", &user("q4", 13)),
    ]);
    let c = context_json(&t);
    let roles: Vec<&str> = c["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "compactionSummary",
            "user",
            "assistant",
            "user",
            "assistant",
            "user"
        ]
    );
    assert_eq!(c["messages"][0]["sections"]["preamble"], "P2");
    assert_eq!(c["messages"][0]["timestamp"], 12000);
    t.branch("a3").expect("a3");
    let roles: Vec<String> = context_json(&t)["messages"]
        .as_array()
        .expect("m")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "user",
            "assistant",
            "system",
            "user",
            "assistant"
        ]
    );
    // The replay of the context's system messages is the checkpoint pi writes.
    let ctx = build_session_context(&t, t.leaf());
    let systems: Vec<Value> = ctx
        .messages
        .iter()
        .filter(|m| m.is_system())
        .map(|m| serde_json::from_str(&m.to_json()).expect("json"))
        .collect();
    let replay = crate::system::current_system_message(&systems).expect("replay");
    assert_eq!(
        replay,
        serde_json::json!({"role":"system","content":"","sections":{"preamble":"P2","tools":"T"},"toolsAdded":[{"name":"read"}],"timestamp":1})
    );
}

// Example H: retain-none, then a compaction keeping from it.
#[test]
fn retain_none_compaction_keeps_nothing_before_itself() {
    let mut t = tree(&[
        msg("u1", None, "2025-01-01T00:00:01.000Z", &user("q1", 1)),
        msg("a1", Some("u1"), "2025-01-01T00:00:02.000Z", &assistant("m", 2)),
        r#"{"type":"compaction","id":"c1","parentId":"a1","timestamp":"2025-01-01T00:00:03.000Z","summary":"S1","firstKeptEntryId":"c1","tokensBefore":90}"#.into(),
        msg("u2", Some("c1"), "2025-01-01T00:00:04.000Z", &user("q2", 4)),
        msg("a2", Some("u2"), "2025-01-01T00:00:05.000Z", &assistant("m", 5)),
        r#"{"type":"compaction","id":"c2","parentId":"a2","timestamp":"2025-01-01T00:00:06.000Z","summary":"S2","firstKeptEntryId":"c1","tokensBefore":95}"#.into(),
        msg("u3", Some("c2"), "2025-01-01T00:00:07.000Z", &user("q3", 7)),
    ]);
    let c = context_json(&t);
    let summary: Vec<&str> = c["messages"]
        .as_array()
        .expect("m")
        .iter()
        .map(|m| m["summary"].as_str().or(m["role"].as_str()).unwrap_or(""))
        .collect();
    assert_eq!(summary, ["S2", "user", "assistant", "user"]);
    t.branch("u2").expect("u2");
    let c = context_json(&t);
    assert_eq!(c["messages"][0]["summary"], "S1");
    assert_eq!(c["messages"].as_array().map(Vec::len), Some(2));
}

// Example I: null and missing content.
#[test]
fn null_and_missing_content_is_normalised_by_role() {
    let t = tree(&[
        msg("u1", None, "2025-01-01T00:00:01.000Z", r#"{"role":"user","content":null,"timestamp":1}"#),
        msg("a1", Some("u1"), "2025-01-01T00:00:02.000Z", r#"{"role":"assistant","api":"x","provider":"p","model":"m","stopReason":"stop","timestamp":2}"#),
        msg("s1", Some("a1"), "2025-01-01T00:00:03.000Z", r#"{"role":"system","content":null,"sections":{"x":"y"},"timestamp":3}"#),
        r#"{"type":"custom_message","customType":"ext","display":false,"id":"m1","parentId":"s1","timestamp":"2025-01-01T00:00:04.000Z"}"#.into(),
        msg("c1", Some("m1"), "2025-01-01T00:00:05.000Z", r#"{"role":"custom","customType":"ext","content":null,"display":true,"timestamp":5}"#),
        msg("t1", Some("c1"), "2025-01-01T00:00:06.000Z", r#"{"role":"toolResult","toolCallId":"c","toolName":"read","content":null,"isError":false,"timestamp":6}"#),
    ]);
    let ctx = build_session_context(&t, t.leaf());
    let json: Vec<String> = ctx.messages.iter().map(|m| m.to_json()).collect();
    assert_eq!(
        json,
        [
            r#"{"role":"user","content":[],"timestamp":1}"#,
            r#"{"role":"assistant","api":"x","provider":"p","model":"m","stopReason":"stop","timestamp":2,"content":[]}"#,
            r#"{"role":"system","content":"","sections":{"x":"y"},"timestamp":3}"#,
            r#"{"role":"custom","customType":"ext","content":[],"display":false,"timestamp":1735689604000}"#,
            r#"{"role":"custom","customType":"ext","content":null,"display":true,"timestamp":5}"#,
            r#"{"role":"toolResult","toolCallId":"c","toolName":"read","content":[],"isError":false,"timestamp":6}"#,
        ]
    );
    // The typed messages decode from the normalised text.
    assert!(matches!(
        ctx.messages[0].to_agent_message(),
        Ok(AgentMessage::User(_))
    ));
    assert!(matches!(
        ctx.messages[2].to_agent_message(),
        Ok(AgentMessage::System(_))
    ));
}
