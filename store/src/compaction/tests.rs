use super::*;

/// One path entry for the tables: a kind and, for messages, its size in tokens.
#[derive(Clone, Copy)]
enum E {
    User(u64),
    Asst(u64),
    /// An assistant message with a `read` tool call; the tokens include the call.
    AsstTool(u64),
    Tool(u64),
    Bash(u64),
    CustomMsg(u64),
    BranchSum(u64),
    Model,
    Thinking,
    Label,
    /// A compaction keeping from the entry at this index.
    Compaction(usize),
    /// A context edit hiding the entry at this index (`replacement: null`).
    Hide(usize),
}

fn text(tokens: u64) -> String {
    "x".repeat((tokens * 4) as usize)
}

fn line(i: usize, e: E) -> String {
    let id = format!("e{i}");
    let parent = if i == 0 {
        "null".to_owned()
    } else {
        format!("\"e{}\"", i - 1)
    };
    let head = format!(
        r#""id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:{:02}.000Z""#,
        i % 60
    );
    let msg = |m: String| format!(r#"{{"type":"message",{head},"message":{m}}}"#);
    let usage = r#""usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
    match e {
        E::User(t) => msg(format!(
            r#"{{"role":"user","content":"{}","timestamp":1}}"#,
            text(t)
        )),
        E::Asst(t) => msg(format!(
            r#"{{"role":"assistant","content":[{{"type":"text","text":"{}"}}],"api":"x","provider":"p","model":"m",{usage},"stopReason":"stop","timestamp":2}}"#,
            text(t)
        )),
        E::AsstTool(t) => {
            // name "read" (4) + {"path":"a.txt"} (16) = 20 chars; the text makes up the rest.
            let rest = "x".repeat((t * 4 - 20) as usize);
            msg(format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"{rest}"}},{{"type":"toolCall","id":"c{i}","name":"read","arguments":{{"path":"a.txt"}}}}],"api":"x","provider":"p","model":"m",{usage},"stopReason":"toolUse","timestamp":2}}"#
            ))
        }
        E::Tool(t) => msg(format!(
            r#"{{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{{"type":"text","text":"{}"}}],"isError":false,"timestamp":3}}"#,
            text(t)
        )),
        E::Bash(t) => msg(format!(
            r#"{{"role":"bashExecution","command":"{}","output":"","exitCode":0,"cancelled":false,"truncated":false,"timestamp":4}}"#,
            text(t)
        )),
        E::CustomMsg(t) => format!(
            r#"{{"type":"custom_message","customType":"ext","content":"{}","display":true,{head}}}"#,
            text(t)
        ),
        E::BranchSum(t) => format!(
            r#"{{"type":"branch_summary",{head},"fromId":"e0","summary":"{}"}}"#,
            text(t)
        ),
        E::Model => format!(r#"{{"type":"model_change",{head},"provider":"p","modelId":"m"}}"#),
        E::Thinking => {
            format!(r#"{{"type":"thinking_level_change",{head},"thinkingLevel":"low"}}"#)
        }
        E::Label => format!(r#"{{"type":"label",{head},"targetId":"e0","label":"l"}}"#),
        E::Hide(k) => {
            format!(r#"{{"type":"context_edit",{head},"targetId":"e{k}","replacement":null}}"#)
        }
        E::Compaction(k) => format!(
            r#"{{"type":"compaction",{head},"summary":"S","firstKeptEntryId":"e{k}","tokensBefore":9,"details":{{"readFiles":["old.txt"],"modifiedFiles":[]}},"fromHook":false}}"#
        ),
    }
}

fn tree_of(path: &[E]) -> SessionTree {
    SessionTree::new(
        path.iter()
            .enumerate()
            .map(|(i, e)| Entry::parse(&line(i, *e), 0).expect("entry"))
            .collect(),
    )
    .0
}

/// `(first kept index, turn start, split)`.
type Cut = (usize, Option<usize>, bool);

fn cut(path: &[E], keep: u64) -> Cut {
    let tree = tree_of(path);
    let entries: Vec<&Entry> = tree.entries().iter().collect();
    let messages: Vec<Option<AgentMessage>> = (0..entries.len())
        .map(|i| summary_message(&tree, i))
        .collect();
    let c = find_cut_point(&entries, &messages, &[], 0, entries.len(), keep);
    (c.first_kept_index, c.turn_start_index, c.is_split_turn)
}

/// compaction.md §5's verified example: each text 10 tokens, the tool-calling assistant 14.
const WORKED: [E; 10] = [
    E::User(10),
    E::Asst(10),
    E::Thinking,
    E::User(10),
    E::AsstTool(14),
    E::Tool(10),
    E::Asst(10),
    E::Model,
    E::User(10),
    E::Asst(10),
];

#[test]
fn cut_points_of_the_worked_example() {
    for (keep, want) in [
        (5, (9, Some(8), true)),
        (10, (9, Some(8), true)),
        (15, (7, Some(3), true)),
        (20, (7, Some(3), true)),
        (25, (6, Some(3), true)),
        (30, (6, Some(3), true)),
        (35, (6, Some(3), true)),
        (45, (4, Some(3), true)),
        (55, (2, Some(0), true)),
        (80, (0, None, false)),
        (1000, (0, None, false)),
    ] {
        assert_eq!(cut(&WORKED, keep), want, "keepRecentTokens {keep}");
    }
}

#[test]
fn cut_points_from_the_rules() {
    use E::*;
    let cases: Vec<(&str, Vec<E>, u64, Cut)> = vec![
        (
            "no cut point at all keeps everything",
            vec![Model, Thinking, Tool(10)],
            5,
            (0, None, false),
        ),
        (
            "a tool result is never the first kept entry",
            vec![User(10), AsstTool(10), Tool(30)],
            20,
            (0, None, false),
        ),
        (
            "trailing tool results over budget after the last cut point",
            vec![User(10), AsstTool(10), Tool(50), Tool(50)],
            40,
            (0, None, false),
        ),
        (
            "a bash execution starts a turn",
            vec![User(10), Asst(10), Bash(10), Asst(10)],
            10,
            (3, Some(2), true),
        ),
        (
            "a bash execution can be the cut",
            vec![User(10), Asst(10), Bash(10), Asst(10)],
            20,
            (2, Some(2), true),
        ),
        (
            "a custom message is a cut point and starts a turn",
            vec![User(10), Asst(10), CustomMsg(10), Asst(10)],
            20,
            (1, Some(0), true),
        ),
        (
            "custom messages are not counted while walking back",
            vec![User(10), Asst(10), CustomMsg(100), Asst(10)],
            15,
            (1, Some(0), true),
        ),
        (
            "a branch summary is pulled in before the kept user message",
            vec![User(10), Asst(10), BranchSum(10), User(10), Asst(10)],
            20,
            (2, Some(2), true),
        ),
        (
            "labels before the cut are pulled in",
            vec![User(10), Asst(10), Label, Label, User(10), Asst(10)],
            20,
            (2, Some(0), true),
        ),
        (
            "a compaction stops the pull",
            vec![
                User(10),
                Asst(10),
                Compaction(1),
                Thinking,
                User(10),
                Asst(10),
            ],
            20,
            (3, Some(0), true),
        ),
        (
            "the budget reached exactly at a user message",
            vec![User(10), Asst(10), User(10), Asst(10)],
            20,
            (2, None, false),
        ),
        (
            "one message over budget keeps just the tail",
            vec![User(10), Asst(100)],
            50,
            (1, Some(0), true),
        ),
        (
            "everything fits",
            vec![User(1), Asst(1), User(1), Asst(1)],
            20_000,
            (0, None, false),
        ),
    ];
    assert!(cases.len() + 11 >= 20);
    for (name, path, keep, want) in cases {
        assert_eq!(cut(&path, keep), want, "{name}");
    }
}

#[test]
fn a_hidden_recovery_attempt_is_not_what_is_kept() {
    // A large prompt overflowed: its reply is hidden. pi ≥ 0.87 keeps from the hidden reply,
    // so the prompt becomes the split turn's prefix and is summarized (compaction.md §5.1);
    // the hidden reply weighs nothing and is summarized nowhere.
    let tree = tree_of(&[
        E::Model,
        E::User(10),
        E::Asst(10),
        E::User(50),
        E::Asst(30),
        E::Hide(4),
    ]);
    let path: Vec<usize> = (0..tree.entries().len()).collect();
    let settings = CompactionSettings {
        keep_recent_tokens: 20,
        ..CompactionSettings::default()
    };
    let p = prepare_compaction(&tree, &path, &settings).expect("prepared");
    assert_eq!(p.first_kept_entry_id.as_deref(), Some("e4"));
    assert!(p.is_split_turn);
    let roles = |ms: &[AgentMessage]| ms.iter().map(|m| m.role().to_owned()).collect::<Vec<_>>();
    assert_eq!(roles(&p.messages_to_summarize), ["user", "assistant"]);
    assert_eq!(roles(&p.turn_prefix_messages), ["user"]);
    // An extension's message after the prompt is conversation, not metadata: it is kept,
    // and the prompt with it.
    let with_custom = tree_of(&[
        E::Model,
        E::User(10),
        E::Asst(10),
        E::User(50),
        E::CustomMsg(1),
        E::Asst(30),
        E::Hide(5),
    ]);
    let p = prepare_compaction(&with_custom, &[0, 1, 2, 3, 4, 5, 6], &settings).expect("prepared");
    assert_eq!(p.first_kept_entry_id.as_deref(), Some("e3"));
    assert!(!p.is_split_turn);
    // A budget reached before the prompt keeps the prompt: the rule needs the kept range
    // to be the hidden attempt alone.
    let hidden = [false, false, false, false, true, false];
    let entries: Vec<&Entry> = tree.entries().iter().collect();
    let messages: Vec<Option<AgentMessage>> = (0..entries.len())
        .map(|i| summary_message(&tree, i))
        .collect();
    let c = find_cut_point(&entries, &messages, &hidden, 0, entries.len(), 60);
    assert_eq!(
        (c.first_kept_index, c.turn_start_index, c.is_split_turn),
        (2, Some(1), true)
    );
}

#[test]
fn preparation_splits_the_turn_and_tracks_files() {
    // keep 15 on the worked example: pi's quirk summarizes [user, assistant] and keeps the
    // whole previous turn as the turn prefix.
    let tree = tree_of(&WORKED);
    let path: Vec<usize> = (0..tree.entries().len()).collect();
    let settings = CompactionSettings {
        keep_recent_tokens: 15,
        ..CompactionSettings::default()
    };
    let p = prepare_compaction(&tree, &path, &settings).expect("prepared");
    assert_eq!(p.first_kept_entry_id.as_deref(), Some("e7"));
    assert!(p.is_split_turn);
    let roles = |ms: &[AgentMessage]| ms.iter().map(|m| m.role().to_owned()).collect::<Vec<_>>();
    assert_eq!(roles(&p.messages_to_summarize), ["user", "assistant"]);
    assert_eq!(
        roles(&p.turn_prefix_messages),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(
        p.file_ops.details(),
        serde_json::json!({"readFiles": ["a.txt"], "modifiedFiles": []})
    );
    assert_eq!(
        p.file_ops.summary_suffix(),
        "\n\n<read-files>\na.txt\n</read-files>"
    );
    assert_eq!(p.previous_summary, None);
    // A path ending in a compaction is already compacted.
    let done = tree_of(&[E::User(10), E::Asst(10), E::Compaction(1)]);
    assert!(prepare_compaction(&done, &[0, 1, 2], &settings).is_none());
}

#[test]
fn a_second_compaction_starts_at_the_first_ones_kept_entry_and_carries_its_files() {
    let tree = tree_of(&[
        E::User(10),
        E::Asst(10),
        E::User(10),
        E::Compaction(2),
        E::Asst(10),
        E::User(10),
        E::Asst(10),
    ]);
    let path: Vec<usize> = (0..7).collect();
    let settings = CompactionSettings {
        keep_recent_tokens: 15,
        ..CompactionSettings::default()
    };
    let p = prepare_compaction(&tree, &path, &settings).expect("prepared");
    assert_eq!(p.previous_summary.as_deref(), Some("S"));
    assert_eq!(p.first_kept_entry_id.as_deref(), Some("e5"));
    // From e2 (kept by the first compaction), skipping the compaction entry itself.
    let roles: Vec<&str> = p.messages_to_summarize.iter().map(|m| m.role()).collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(p.file_ops.lists().0, ["old.txt"]);
}

#[test]
fn token_accounting_follows_pi() {
    let msgs: Vec<AgentMessage> = [
        r#"{"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image","data":"x","mimeType":"image/png"}],"timestamp":1}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"ab"}],"api":"x","provider":"p","model":"m","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}"#,
        r#"{"role":"toolResult","toolCallId":"c","toolName":"t","content":[{"type":"image","data":"x","mimeType":"image/png"}],"isError":false,"timestamp":3}"#,
        r#"{"role":"assistant","content":[],"api":"x","provider":"p","model":"m","usage":{"input":999,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":999,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","errorMessage":"boom","timestamp":4}"#,
    ]
    .iter()
    .map(|l| serde_json::from_str(l).expect("message"))
    .collect();
    assert_eq!(
        estimate_tokens(&msgs[0]),
        1,
        "images count 0 in user messages"
    );
    assert_eq!(estimate_tokens(&msgs[2]), 1200, "and 4800 chars elsewhere");
    assert_eq!(
        estimate_tokens(&AgentMessage::user_text("😀", 1)),
        1,
        "UTF-16 length 2"
    );
    let t = estimate_context_tokens(&msgs);
    // The errored reply does not count as usage; totalTokens 0 falls back to the parts.
    assert_eq!((t.usage_tokens, t.last_usage_index), (15, Some(1)));
    assert_eq!(t.tokens, 15 + 1200);
    let s = CompactionSettings::default();
    assert!(should_compact(111_617, 128_000, &s));
    assert!(!should_compact(111_616, 128_000, &s));
    assert!(
        should_compact(1, 0, &s),
        "an unknown window triggers, as in pi"
    );
    assert!(!should_compact(
        1_000_000,
        128_000,
        &CompactionSettings {
            enabled: false,
            ..s
        }
    ));
}
