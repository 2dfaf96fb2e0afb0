//! Runs: event order, persistence order, steering, follow-ups, abort, and tool-call pairing of what is sent.

use super::support::*;

#[tokio::test(start_paused = true)]
async fn a_prompt_with_a_tool_call_runs_two_turns_and_persists_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, env) = start(
        tmp.path(),
        script(r#"[{"content":[{"type":"text","text":"let me look"},{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"ls"}}]},
                  {"content":[{"type":"text","text":"done"}]}]"#),
    )
    .await;
    rt.prompt("list files").await.unwrap();
    let names = run_names(&mut events).await;
    assert_eq!(
        names,
        [
            "agent_start",
            "turn_start",
            "message_start",
            // The prompt counter's appendEntry on the prompt's message_end, announced before
            // the prompt's message_end reaches frontends (as pi 1.6.0 orders them).
            "entry_appended",
            "message_end", // prompt
            "message_start",
            "message_end", // assistant → toolUse
            "tool_execution_start",
            "tool_execution_end",
            "message_start",
            "message_end",
            "turn_end",
            "turn_start",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end",
            "agent_settled",
        ]
    );
    let file = rt.current_session().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();
    assert_eq!(
        file_roles(&file),
        // The counter extension's entry lands before the user message: extensions handle
        // message_end before it is persisted, as in pi.
        [
            "model_change",
            "thinking_level_change",
            "custom",
            "user",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
    // The context pith used equals the log's projection, and the missing tool is pi's error.
    let back = Session::open(&file, None, None, OpenMode::Inspect, &env).unwrap();
    let ctx = build_session_context(back.tree(), back.tree().leaf());
    assert_eq!(ctx.messages.len(), 4);
    assert!(ctx.messages[2].to_json().contains("Tool bash not found"));
}

#[tokio::test(start_paused = true)]
async fn steering_arrives_after_the_tool_batch_and_follow_ups_at_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    // Turn 2's reply waits 1 s before streaming; the test queues during that window.
    let (rt, mut events, _env) = start(
        tmp.path(),
        script(r#"[{"content":[{"type":"toolCall","id":"t0","name":"read","arguments":{}}]},
                  {"content":[{"type":"toolCall","id":"t1","name":"read","arguments":{}}],"delayMs":1000},
                  {"content":[{"type":"text","text":"after steer"}]},
                  {"content":[{"type":"text","text":"after follow-up"}]}]"#),
    )
    .await;
    rt.prompt("start").await.unwrap();
    let mut turn_starts = 0;
    while turn_starts < 2 {
        if let RuntimeEvent::Agent(e) = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .unwrap()
            .unwrap()
        {
            turn_starts += usize::from(matches!(*e, AgentEvent::TurnStart { .. }));
        }
    }
    rt.follow_up("follow me");
    rt.steer("steer me");
    run_names(&mut events).await;
    let file = rt.current_session().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();
    let texts: Vec<String> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let m = &v["message"];
            match m["role"].as_str()? {
                "user" => Some(format!("user:{}", m["content"][0]["text"].as_str()?)),
                "assistant" => Some(format!("assistant:{}", m["stopReason"].as_str()?)),
                "toolResult" => Some("toolResult".into()),
                _ => None,
            }
        })
        .collect();
    assert_eq!(
        texts,
        [
            "user:start",
            "assistant:toolUse",
            "toolResult",
            "assistant:toolUse",
            "toolResult",
            "user:steer me",
            "assistant:stop",
            "user:follow me",
            "assistant:stop",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn abort_persists_the_aborted_reply_and_leaves_the_agent_idle() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, _env) = start(
        tmp.path(),
        script(r#"[{"content":[{"type":"text","text":"slow"}],"delayMs":5000}]"#),
    )
    .await;
    rt.prompt("wait").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    rt.abort().await.unwrap();
    let names = run_names(&mut events).await;
    assert_eq!(names[names.len() - 2..], ["agent_end", "agent_settled"]);
    rt.prompt("again").await.expect("idle after abort");
    run_names(&mut events).await;
    let file = rt.current_session().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(r#""stopReason":"aborted","errorMessage":"Request was aborted""#));
}

#[tokio::test(start_paused = true)]
async fn a_session_whose_run_crashed_mid_tool_call_is_sent_paired_and_left_as_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    // What a crash between a tool call and its result leaves, plus a stray result. A resumed
    // session's cwd must exist.
    let project = tmp.path().to_string_lossy().into_owned();
    let mut seed = Session::create(&project, None, &env).unwrap();
    seed.append_message(AgentMessage::user_text("fix it", 1))
        .unwrap();
    seed.append_message(serde_json::from_str(r#"{"role":"toolResult","toolCallId":"stray","toolName":"read","content":[{"type":"text","text":"?"}],"isError":false,"timestamp":2}"#).unwrap()).unwrap();
    seed.append_message(serde_json::from_str(r#"{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"edit","arguments":{"path":"a.rs"}}],"api":"faux","provider":"faux","model":"faux-1","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":3}"#).unwrap()).unwrap();
    let file = seed.session_file().unwrap().to_owned();
    drop(seed);
    let before = std::fs::read_to_string(&file).unwrap();

    let provider = Arc::new(Recording {
        inner: Faux::new(Vec::new(), env.clock.clone()),
        requests: Default::default(),
    });
    let config = project_config(&env, provider.clone(), Vec::new());
    let opening = FirstSession::Open {
        path: file.clone(),
        read_only: false,
        at: None,
    };
    let rt = Runtime::start(config, opening).await.unwrap().handle;
    let mut events = rt.subscribe().await.unwrap();
    rt.prompt("go on").await.unwrap();
    run_names(&mut events).await;
    rt.shutdown().await.unwrap();

    let sent: Vec<serde_json::Value> = provider.requests.lock().unwrap()[0]
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    let shape: Vec<String> = sent
        .iter()
        .map(|m| {
            format!(
                "{}:{}",
                m["role"].as_str().unwrap(),
                m["toolCallId"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(shape, ["user:", "assistant:", "toolResult:t1", "user:"]);
    assert_eq!(sent[2]["content"][0]["text"], "No result provided");
    assert_eq!(sent[2]["isError"], true);
    // The file keeps every line it had; pith only appended.
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(after.starts_with(&before), "the old lines changed");
    assert_eq!(file_roles(&file)[..3], ["user", "toolResult", "assistant"]);
}
