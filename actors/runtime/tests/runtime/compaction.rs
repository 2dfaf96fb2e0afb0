//! Compaction: `/compact`, the threshold and overflow checks, and what a summary request holds.

use super::support::*;

#[tokio::test(start_paused = true)]
async fn compact_asks_the_model_for_history_and_turn_prefix_and_keeps_the_tail() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    // keepRecentTokens 1: only the last reply is kept, so its turn is split (compaction.md §5).
    std::fs::create_dir_all(&env.agent_dir).unwrap();
    std::fs::write(
        env.agent_dir.join("settings.json"),
        r#"{"compaction":{"keepRecentTokens":1}}"#,
    )
    .unwrap();
    let provider = Arc::new(Recording {
        inner: Faux::new(
            script(
                r#"[{"content":[{"type":"text","text":"r1"},{"type":"toolCall","id":"t","name":"read","arguments":{"path":"src/a.rs"}}]},
                    {"content":[{"type":"text","text":"r1 done"}]},
                    {"content":[{"type":"text","text":"r2"}]},
                    {"content":[{"type":"text","text":"HISTORY"}]},
                    {"content":[{"type":"text","text":"PREFIX"}]}]"#,
            ),
            env.clock.clone(),
        ),
        requests: Default::default(),
    });
    let config = project_config(&env, provider.clone(), Vec::new());
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    let mut events = rt.subscribe().await.unwrap();
    // Summaries think at the session's level, which follows `/thinking` (compaction.md §7).
    rt.set_thinking_level(pith_events::ThinkingLevel::High)
        .await
        .unwrap();
    for prompt in ["one", "two"] {
        rt.prompt(prompt).await.unwrap();
        run_names(&mut events).await;
    }

    let id = rt.compact(Some("the parser")).await.unwrap();
    assert_eq!(
        rt.compact(None).await.unwrap_err().to_string(),
        "Already compacted"
    );
    let mut compaction_events = Vec::new();
    while compaction_events.len() < 4 {
        let event = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .expect("no stall")
            .expect("open");
        if let RuntimeEvent::Agent(e) = event {
            compaction_events.push(serde_json::to_value(&e).unwrap());
        }
    }
    assert_eq!(
        compaction_events[0],
        serde_json::json!({"type":"compaction_start","reason":"manual"})
    );
    assert_eq!(compaction_events[1]["type"], "compaction_end");
    assert_eq!(
        compaction_events[1]["errorMessage"],
        serde_json::Value::Null
    );
    assert_eq!(
        compaction_events[3],
        serde_json::json!({"type":"compaction_end","reason":"manual","aborted":false,"willRetry":false,"errorMessage":"Compaction failed: Already compacted"})
    );
    let file = rt.current_session().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();

    let requests = provider.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 5);
    // Turns and both summaries use the model's own limit (pi ≥ 1.4 passes none to a
    // summary), all at the session's level.
    let limits: Vec<(&str, Option<u64>)> = requests
        .iter()
        .map(|r| (r.thinking_level.as_str(), r.max_tokens))
        .collect();
    assert_eq!(
        limits,
        [
            ("high", None),
            ("high", None),
            ("high", None),
            ("high", None),
            ("high", None)
        ]
    );
    let asked = |r: &pith_llm::provider::ProviderRequest| {
        serde_json::to_value(&r.messages[0]).unwrap()["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (history, prefix) = (asked(&requests[3]), asked(&requests[4]));
    assert!(
        requests[3]
            .system_prompt
            .as_deref()
            .unwrap()
            .contains("summar")
    );
    assert!(
        history.starts_with("<conversation>\n[User]: one\n"),
        "{history}"
    );
    assert!(
        history.contains("[Assistant tool calls]: read(path=\"src/a.rs\")"),
        "{history}"
    );
    assert!(!history.contains("two"), "{history}");
    assert!(
        history.ends_with("Additional focus: the parser"),
        "{history}"
    );
    // pi ≥ 1.4's turn-prefix layout, with the focus too.
    assert_eq!(
        prefix.lines().take(4).collect::<Vec<_>>(),
        ["# Conversation", "[User]: two", "", "# Instructions"]
    );
    assert!(prefix.ends_with("Additional focus: the parser"), "{prefix}");

    let back = Session::open(&file, None, None, OpenMode::Inspect, &env).unwrap();
    let entry = back.tree().entries().last().unwrap();
    assert_eq!(entry.id(), id);
    let line: serde_json::Value = serde_json::from_str(entry.raw()).unwrap();
    assert_eq!(
        line["summary"],
        "HISTORY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX\n\n<read-files>\nsrc/a.rs\n</read-files>"
    );
    assert_eq!(
        line["details"],
        serde_json::json!({"readFiles":["src/a.rs"],"modifiedFiles":[]})
    );
    assert_eq!(line["fromHook"], false);
    // The event reports what was written.
    for key in ["summary", "firstKeptEntryId", "tokensBefore", "details"] {
        assert_eq!(compaction_events[1]["result"][key], line[key], "{key}");
    }
    let kept = back
        .tree()
        .entries()
        .iter()
        .find(|e| e.id() == line["firstKeptEntryId"])
        .unwrap();
    assert!(kept.raw().contains(r#""text":"r2""#), "{}", kept.raw());
    let roles = context_roles(&back);
    assert_eq!(roles, ["compactionSummary", "assistant"]);
}

#[tokio::test(start_paused = true)]
async fn a_reply_over_the_threshold_compacts_once_and_a_prompt_sent_meanwhile_waits() {
    let tmp = tempfile::tempdir().unwrap();
    // Keeping 1 token keeps the reply and summarizes the prompt as a split turn's prefix.
    keep_recent(tmp.path(), 1);
    // 120 000 tokens in a 128 000 window with 16 384 reserved: over the threshold.
    let usage = r#"{"input":119000,"output":1000,"cacheRead":0,"cacheWrite":0,"totalTokens":120000,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
    let (rt, mut events, env) = start(
        tmp.path(),
        script(&format!(
            r#"[{{"content":[{{"type":"text","text":"big"}}],"usage":{usage}}},
                {{"content":[{{"type":"text","text":"AUTO SUMMARY"}}],"delayMs":400}},
                {{"content":[{{"type":"text","text":"after"}}]}}]"#
        )),
    )
    .await;
    rt.prompt("one").await.unwrap();
    // Up to `agent_end`: the compaction check follows it.
    loop {
        let event = events.recv().await.expect("open");
        if let RuntimeEvent::Agent(e) = event
            && matches!(*e, AgentEvent::AgentEnd { .. })
        {
            break;
        }
    }
    // The summary takes 400 ms; this prompt arrives during it and must wait, not fail.
    rt.prompt("two").await.unwrap();
    let first_settles = run_names(&mut events).await;
    assert_eq!(
        first_settles,
        ["compaction_start", "compaction_end", "agent_settled"]
    );
    let second = run_names(&mut events).await;
    assert_eq!(second[..2], ["agent_start", "turn_start"]);
    assert!(
        !second.iter().any(|n| n.starts_with("compaction")),
        "{second:?}"
    );
    let file = rt.current_session().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();

    assert_eq!(
        file_roles(&file),
        [
            "model_change",
            "thinking_level_change",
            "custom",
            "user",
            "assistant",
            "compaction",
            "custom",
            "user",
            "assistant"
        ]
    );
    let back = Session::open(&file, None, None, OpenMode::Inspect, &env).unwrap();
    let compaction = back
        .tree()
        .entries()
        .iter()
        .find(|e| e.kind() == &pith_events::EntryType::Compaction)
        .unwrap();
    let line: serde_json::Value = serde_json::from_str(compaction.raw()).unwrap();
    assert_eq!(line["summary"], split_summary("AUTO SUMMARY"));
    // estimateContextTokens: the reply's usage, nothing after it.
    assert_eq!(line["tokensBefore"], 120000);
    // The good answer is not sent again: two replies, two prompts.
    let ctx = build_session_context(back.tree(), back.tree().leaf());
    let texts: Vec<String> = ctx.messages.iter().map(|m| m.to_json()).collect();
    assert!(texts[0].contains("AUTO SUMMARY"), "{texts:?}");
    assert_eq!(
        texts
            .iter()
            .filter(|t| t.contains(r#""role":"assistant""#))
            .count(),
        2
    );
}

#[tokio::test(start_paused = true)]
async fn an_overflow_compacts_and_retries_once_without_the_failed_reply() {
    let tmp = tempfile::tempdir().unwrap();
    // A first turn, and a budget of 1 token: all that would be kept is the overflowed prompt
    // and its hidden reply, so pi 1.6.0 keeps from the hidden reply and the prompt becomes the
    // split turn's prefix (compaction.md §5.1): two summary requests, then the retry.
    keep_recent(tmp.path(), 1);
    let (rt, mut events, env, provider) = start_recording(
        tmp.path(),
        &format!(r#"[{{"content":[{{"type":"text","text":"one"}}]}},{OVERFLOW},{{"content":[{{"type":"text","text":"OVERFLOW SUMMARY"}}]}},{{"content":[{{"type":"text","text":"PREFIX SUMMARY"}}]}},{{"content":[{{"type":"text","text":"retried fine"}}]}}]"#),
    )
    .await;
    rt.prompt("first").await.unwrap();
    rt.wait_idle().await.unwrap();
    agent_events(&mut events, 1).await;
    rt.prompt("hi").await.unwrap();
    let seen = agent_events(&mut events, 2).await;
    let file = rt.current_session().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();

    let t = types(&seen);
    let end = t.iter().position(|x| x == "agent_end").unwrap();
    // The overflowed reply is hidden (announced as pi 1.6.0 announces the context_edit),
    // then the session is compacted and the prompt retried (compaction.md §5).
    assert_eq!(t[end + 1], "entry_appended");
    assert_eq!(seen[end + 1]["entry"]["type"], "context_edit");
    let seen: Vec<serde_json::Value> = seen
        .into_iter()
        .filter(|e| e["type"] != "entry_appended")
        .collect();
    let t = types(&seen);
    assert_eq!(
        t[end..end + 4],
        [
            "agent_end",
            "compaction_start",
            "compaction_end",
            "agent_start"
        ]
    );
    assert_eq!(seen[end + 1]["reason"], "overflow");
    assert_eq!(seen[end + 2]["willRetry"], true);
    assert_eq!(
        seen[end + 2]["result"]["summary"],
        "OVERFLOW SUMMARY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX SUMMARY"
    );
    // The retry is a new run without a new prompt.
    assert_eq!(
        t.iter().filter(|x| *x == "message_start").count(),
        3,
        "{t:?}"
    );

    let requests = provider.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 5);
    // The history summary holds the first turn; the prefix summary the overflowed prompt.
    let asked = |i: usize| {
        let m = serde_json::to_value(&requests[i].messages[0]).unwrap();
        m["content"][0]["text"].as_str().unwrap().to_owned()
    };
    assert!(
        asked(2).starts_with("<conversation>\n[User]: first\n\n[Assistant]: one\n</conversation>"),
        "{}",
        asked(2)
    );
    assert!(
        asked(3).starts_with("# Conversation\n[User]: hi\n\n# Instructions\n"),
        "{}",
        asked(3)
    );
    // The retry asks again from the summary, which carries the prompt.
    let retry: Vec<serde_json::Value> = requests[4]
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    assert_eq!(retry.len(), 1, "{retry:?}");
    assert!(
        retry[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("PREFIX SUMMARY")
    );

    // The failed reply stays in the log, hidden by a context_edit (pi 1.6.0); the retried
    // one is the compaction's child.
    assert_eq!(
        file_roles(&file),
        [
            "model_change",
            "thinking_level_change",
            "user",
            "assistant",
            "user",
            "assistant",
            "context_edit",
            "compaction",
            "assistant"
        ]
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[7]["targetId"], lines[6]["id"]);
    assert_eq!(lines[7]["replacement"], serde_json::Value::Null);
    assert_eq!(lines[8]["firstKeptEntryId"], lines[6]["id"]);
    assert_eq!(lines[9]["parentId"], lines[8]["id"]);
    let back = Session::open(&file, None, None, OpenMode::Inspect, &env).unwrap();
    assert_eq!(
        build_session_context(back.tree(), back.tree().leaf())
            .messages
            .len(),
        2,
        "the summary and the retried reply: the failed reply stays out after a reopen"
    );
}

#[tokio::test(start_paused = true)]
async fn a_second_overflow_stops_with_pis_message() {
    let tmp = tempfile::tempdir().unwrap();
    keep_recent(tmp.path(), 1);
    let (rt, mut events, _env, provider) = start_recording(
        tmp.path(),
        &format!(
            r#"[{{"content":[{{"type":"text","text":"one"}}]}},{OVERFLOW},{{"content":[{{"type":"text","text":"S"}}]}},{{"content":[{{"type":"text","text":"P"}}]}},{OVERFLOW}]"#
        ),
    )
    .await;
    rt.prompt("first").await.unwrap();
    rt.wait_idle().await.unwrap();
    agent_events(&mut events, 1).await;
    rt.prompt("hi").await.unwrap();
    let seen = agent_events(&mut events, 2).await;
    // The give-up comes after the second agent_end; wait for it.
    let give_up = loop {
        let event = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .unwrap()
            .unwrap();
        if let RuntimeEvent::Agent(e) = event {
            break serde_json::to_value(&e).unwrap();
        }
    };
    let file = rt.current_session().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();
    assert_eq!(
        types(&seen)
            .iter()
            .filter(|x| x.starts_with("compaction"))
            .count(),
        2
    );
    assert_eq!(
        give_up,
        serde_json::json!({"type":"compaction_end","reason":"overflow","aborted":false,"willRetry":false,
            "errorMessage":"Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model."})
    );
    // one, overflow, the history and turn-prefix summaries, overflow.
    assert_eq!(provider.requests.lock().unwrap().len(), 5);
    assert_eq!(
        file_roles(&file)
            .iter()
            .filter(|r| *r == "compaction")
            .count(),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn an_error_reply_compacts_when_the_estimate_crosses_the_threshold() {
    let tmp = tempfile::tempdir().unwrap();
    // Keeping 1 token keeps the long prompt and summarizes the first turn.
    keep_recent(tmp.path(), 1);
    // 110 000 from the last usage + 2 000 estimated for the long prompt > 128 000 − 16 384.
    let (rt, mut events, _env, provider) = start_recording(
        tmp.path(),
        &format!(
            r#"[{{"content":[{{"type":"text","text":"one"}}],"usage":{USAGE_110K}}},
                {{"content":[],"errorMessage":"400 invalid_request_error: unsupported parameter"}},
                {{"content":[{{"type":"text","text":"SUMMARY"}}]}}]"#
        ),
    )
    .await;
    rt.prompt("first").await.unwrap();
    rt.wait_idle().await.unwrap();
    rt.prompt(&"x".repeat(8000)).await.unwrap();
    rt.wait_idle().await.unwrap();
    let seen = agent_events(&mut events, 2).await;
    let mut rest = Vec::new();
    while let Ok(RuntimeEvent::Agent(e)) = events.try_recv() {
        rest.push(serde_json::to_value(&e).unwrap());
    }
    rt.shutdown().await.unwrap();
    assert!(
        !types(&seen).iter().any(|t| t.starts_with("compaction")),
        "{seen:?}"
    );
    // The threshold compaction is the prompt's automatic work: it settles after it.
    assert_eq!(
        types(&rest),
        ["compaction_start", "compaction_end", "agent_settled"]
    );
    assert_eq!(rest[0]["reason"], "threshold");
    assert_eq!(rest[1]["result"]["tokensBefore"], 112_000);
    assert_eq!(provider.requests.lock().unwrap().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_session_resumed_over_the_threshold_is_compacted_before_the_next_prompt() {
    let tmp = tempfile::tempdir().unwrap();
    // Keeping 1 token keeps the big reply and summarizes the prompt as a split turn's prefix.
    keep_recent(tmp.path(), 1);
    let env = env(tmp.path());
    // A resumed session's cwd must exist.
    let project = tmp.path().to_string_lossy().into_owned();
    let mut seed = Session::create(&project, None, &env).unwrap();
    seed.append_message(AgentMessage::user_text("hi", 1))
        .unwrap();
    seed.append_message(serde_json::from_str(&format!(r#"{{"role":"assistant","content":[{{"type":"text","text":"big"}}],"api":"faux","provider":"faux","model":"faux-1","usage":{},"stopReason":"stop","timestamp":2}}"#, USAGE_110K.replace("110000", "120000"))).unwrap()).unwrap();
    let file = seed.session_file().unwrap().to_owned();
    drop(seed);
    let config = project_config(
        &env,
        Arc::new(Faux::new(
            script(
                r#"[{"content":[{"type":"text","text":"SUMMARY"}],"delayMs":300},{"content":[{"type":"text","text":"next answer"}]}]"#,
            ),
            env.clock.clone(),
        )),
        Vec::new(),
    );
    let opening = FirstSession::Open {
        path: file.clone(),
        read_only: false,
        at: None,
    };
    let rt = Runtime::start(config, opening).await.unwrap().handle;
    let mut events = rt.subscribe().await.unwrap();
    rt.prompt("next").await.unwrap();
    // Sent while the summary (300 ms) is being written: it waits instead of being refused.
    tokio::time::sleep(Duration::from_millis(100)).await;
    rt.prompt("and then").await.unwrap();
    rt.wait_idle().await.unwrap();
    let seen = agent_events(&mut events, 2).await;
    rt.shutdown().await.unwrap();
    assert_eq!(
        types(&seen)[..3],
        ["compaction_start", "compaction_end", "agent_start"]
    );
    // The runtime records the thinking level the seed did not have, then compacts.
    assert_eq!(
        file_roles(&file),
        [
            "user",
            "assistant",
            "thinking_level_change",
            "compaction",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_reply_in_the_same_millisecond_as_a_compaction_still_counts() {
    let tmp = tempfile::tempdir().unwrap();
    // Every timestamp is the same millisecond: pi's `<=` would call the second reply stale.
    let env = SessionEnv {
        agent_dir: tmp.path().join("agent"),
        clock: Arc::new(SteppingClock::new(1_764_000_000_000, 0)),
        ids: Arc::new(RandomIds),
    };
    std::fs::create_dir_all(&env.agent_dir).unwrap();
    std::fs::write(
        env.agent_dir.join("settings.json"),
        r#"{"compaction":{"keepRecentTokens":1}}"#,
    )
    .unwrap();
    let big = r#"{"input":120000,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":120000,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
    let provider = Arc::new(Recording {
        inner: Faux::new(
            script(&format!(
                r#"[{{"content":[{{"type":"text","text":"r1"}}],"usage":{big}}},
                    {{"content":[{{"type":"text","text":"S1"}}]}},
                    {{"content":[{{"type":"text","text":"r2"}}],"usage":{big}}},
                    {{"content":[{{"type":"text","text":"S2"}}]}}]"#
            )),
            env.clock.clone(),
        ),
        requests: Default::default(),
    });
    let config = project_config(&env, provider.clone(), Vec::new());
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    for prompt in ["one", "two"] {
        rt.prompt(prompt).await.unwrap();
        rt.wait_idle().await.unwrap();
    }
    let snapshot = rt.snapshot().await.unwrap();
    rt.shutdown().await.unwrap();
    let compactions: Vec<String> = snapshot
        .entries()
        .iter()
        .filter(|e| e.kind() == &pith_events::EntryType::Compaction)
        .map(|e| {
            serde_json::from_str::<serde_json::Value>(e.raw()).unwrap()["summary"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(compactions.len(), 2, "{compactions:?}");
    assert!(compactions[1].starts_with("S2"), "{compactions:?}");
}
