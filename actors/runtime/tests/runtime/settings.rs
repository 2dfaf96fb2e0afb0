//! Settings are read per session cwd: queue modes and the shell command prefix.

use super::support::*;

#[tokio::test(start_paused = true)]
async fn settings_are_read_for_each_sessions_cwd() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let (all_dir, plain_dir) = (tmp.path().join("steer-all"), tmp.path().join("plain"));
    std::fs::create_dir_all(all_dir.join(".pith")).unwrap();
    std::fs::create_dir_all(&plain_dir).unwrap();
    std::fs::write(
        all_dir.join(".pith/settings.json"),
        r#"{"steeringMode":"all"}"#,
    )
    .unwrap();
    trust_project(&env.agent_dir, &all_dir);
    let slow =
        r#"{"content":[{"type":"toolCall","id":"t","name":"x","arguments":{}}],"delayMs":800}"#;
    let done = r#"{"content":[{"type":"text","text":"ok"}]}"#;
    let config = RuntimeConfig {
        env: env.clone(),
        cwd: all_dir.to_string_lossy().into_owned(),
        session_dir: Some(tmp.path().join("sessions")),
        persist: true,
        provider: Arc::new(Faux::new(
            script(&format!("[{slow},{done},{slow},{done},{done}]")),
            env.clock.clone(),
        )),
        model: pith_events::ModelRef::new("faux", "faux-1"),
        thinking_level: pith_events::ThinkingLevel::Off,
        selection: Default::default(),
        session_name: None,
        tools: ToolChoice::none(),
        system_prompt: None,
        extensions: Vec::new(),
        hosted: Default::default(),
        resources: Default::default(),
    };
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    let mut events = rt.subscribe().await.unwrap();
    async fn steer_twice(rt: &RuntimeHandle, events: &mut UnboundedReceiver<RuntimeEvent>) {
        rt.prompt("go").await.unwrap();
        loop {
            if let RuntimeEvent::Agent(e) = events.recv().await.unwrap()
                && matches!(
                    *e,
                    AgentEvent::MessageEnd {
                        message: AgentMessage::User(_)
                    }
                )
            {
                break;
            }
        }
        rt.steer("s1");
        rt.steer("s2");
        run_names(events).await;
    }
    steer_twice(&rt, &mut events).await;
    let all_file = rt.current_session().await.unwrap().session_file.unwrap();
    // steeringMode "all": both steering messages arrive together, then one reply.
    assert_eq!(
        transcript(&all_file),
        [
            "user:go",
            "assistant",
            "toolResult",
            "user:s1",
            "user:s2",
            "assistant"
        ]
    );

    // A session of another cwd (no settings): one steering message per turn.
    let mut seed = Session::create(
        &plain_dir.to_string_lossy(),
        Some(&tmp.path().join("plain-seed")),
        &env,
    )
    .unwrap();
    seed.append_message(AgentMessage::User(pith_events::UserMessage {
        content: pith_events::UserContent::Text("seed".into()),
        timestamp: 1,
    }))
    .unwrap();
    seed.append_message(serde_json::from_str(r#"{"role":"assistant","content":[],"api":"faux","provider":"faux","model":"faux-1","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}"#).unwrap()).unwrap();
    let seed_file = seed.session_file().unwrap().to_owned();
    drop(seed);
    rt.switch(SessionStart::Resume(seed_file.clone()))
        .await
        .unwrap();
    steer_twice(&rt, &mut events).await;
    let t = transcript(&seed_file);
    // (the seed user message has string content and is not listed)
    assert_eq!(
        &t[1..],
        [
            "user:go",
            "assistant",
            "toolResult",
            "user:s1",
            "assistant",
            "user:s2",
            "assistant"
        ]
    );
    rt.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_settings_shell_prefix_reaches_the_models_bash_tool_and_user_commands() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let project = tmp.path().join("project");
    std::fs::create_dir_all(project.join(".pith")).unwrap();
    std::fs::write(
        project.join(".pith/settings.json"),
        r#"{"shellCommandPrefix":"GREETING=from-settings"}"#,
    )
    .unwrap();
    trust_project(&env.agent_dir, &project);
    let config = RuntimeConfig {
        cwd: project.to_string_lossy().into_owned(),
        tools: ToolChoice::defaults(),
        ..project_config(
            &env,
            Arc::new(Faux::new(
                script(
                    r#"[{"content":[{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"echo \"[$GREETING]\""}}]},
                        {"content":[{"type":"text","text":"done"}]}]"#,
                ),
                env.clock.clone(),
            )),
            Vec::new(),
        )
    };
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    let mut events = rt.subscribe().await.unwrap();
    rt.prompt("greet").await.unwrap();
    let mut output = None;
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .unwrap()
            .unwrap();
        let RuntimeEvent::Agent(e) = event else {
            continue;
        };
        match *e {
            AgentEvent::ToolExecutionEnd { result, .. } => output = Some(result.to_string()),
            AgentEvent::AgentEnd { .. } => break,
            _ => {}
        }
    }
    assert!(
        output
            .as_deref()
            .is_some_and(|o| o.contains("[from-settings]")),
        "{output:?}"
    );
    // `!cmd` gets the same prefix.
    let ran = rt.bash("echo \"[$GREETING]\"", false).await.unwrap();
    assert_eq!(ran.output, "[from-settings]\n");
    rt.shutdown().await.unwrap();
}
