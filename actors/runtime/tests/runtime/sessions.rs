//! Switches (`/new`, `/resume`, `/fork`, `/import`), extension vetoes, and the rebuild after a crash.

use super::support::*;

#[tokio::test(start_paused = true)]
async fn switches_keep_extension_state_in_the_log_and_forks_can_be_vetoed() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, env) = start(tmp.path(), script(r#"[{"content":[{"type":"text","text":"one"}]},{"content":[{"type":"text","text":"slow"}],"delayMs":1500}]"#)).await;
    rt.prompt("first").await.unwrap();
    run_names(&mut events).await;
    let first_file = rt.current_session().await.unwrap().session_file.unwrap();
    assert_eq!(
        rt.command("count", "").await.unwrap().as_deref(),
        Some("1 prompt(s) in this session")
    );

    // While the agent runs, the example extension refuses forks.
    rt.prompt("second").await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let user_id = {
        let snap = rt.snapshot().await.unwrap();
        snap.entries()
            .iter()
            .find(|e| e.raw().contains("\"text\":\"second\""))
            .unwrap()
            .id()
            .to_owned()
    };
    let vetoed = rt
        .switch(SessionStart::Fork {
            entry_id: user_id.clone(),
        })
        .await
        .unwrap();
    assert!(
        vetoed
            .cancelled
            .as_deref()
            .unwrap_or("")
            .contains("still running"),
        "{vetoed:?}"
    );
    run_names(&mut events).await;

    // Afterwards it is allowed: a real fork with the source's path up to the message.
    let forked = rt
        .switch(SessionStart::Fork { entry_id: user_id })
        .await
        .unwrap();
    assert_eq!(forked.selected_text.as_deref(), Some("second"));
    let fork_file = forked.session_file.unwrap();
    assert_ne!(fork_file, first_file);
    let fork = Session::open(&fork_file, None, None, OpenMode::Inspect, &env).unwrap();
    assert_eq!(
        fork.header().parent_session(),
        Some(first_file.to_string_lossy().as_ref())
    );
    // The counter was restored from the copied custom entries: the fork copies the path up
    // to the forked message's parent, which is the counter's entry for that very prompt
    // (extensions append on message_end before the message is persisted, as in pi).
    assert_eq!(
        rt.command("count", "").await.unwrap().as_deref(),
        Some("2 prompt(s) in this session")
    );

    // Resume the first session: its counter comes back from its own log.
    let resumed = rt
        .switch(SessionStart::Resume(first_file.clone()))
        .await
        .unwrap();
    assert_eq!(resumed.session_file.as_deref(), Some(first_file.as_path()));
    assert_eq!(
        rt.command("count", "").await.unwrap().as_deref(),
        Some("2 prompt(s) in this session")
    );
    rt.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_crashed_child_is_rebuilt_from_the_log_without_losing_or_repeating_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, _env) = start(tmp.path(), Vec::new()).await;
    rt.prompt("before the crash").await.unwrap();
    run_names(&mut events).await;
    let file = rt.current_session().await.unwrap().session_file.unwrap();
    let before = std::fs::read_to_string(&file).unwrap();
    rt.crash_child("SessionWriter");
    let notice = loop {
        match tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .unwrap()
            .unwrap()
        {
            RuntimeEvent::Notice(n) => break n,
            _ => continue,
        }
    };
    assert!(
        notice.contains("SessionWriter") && notice.contains("was rebuilt from its log"),
        "{notice}"
    );
    rt.prompt("after the crash").await.unwrap();
    run_names(&mut events).await;
    rt.shutdown().await.unwrap();
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(
        after.starts_with(&before),
        "nothing already written changed"
    );
    let lines: Vec<&str> = after.lines().collect();
    let unique: std::collections::HashSet<&&str> = lines.iter().collect();
    assert_eq!(unique.len(), lines.len(), "no line twice");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("\"role\":\"user\""))
            .count(),
        2
    );
    let _ = AgentMessage::Unknown(serde_json::Value::Null);
}

#[tokio::test(start_paused = true)]
async fn new_starts_in_the_current_sessions_project_and_import_copies() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, env) = start(tmp.path(), Vec::new()).await;
    // A session of another project, resumed: /new then belongs to that project.
    let other_dir = tmp.path().join("other-sessions");
    let mut other = Session::create("/elsewhere", Some(&other_dir), &env).unwrap();
    other
        .append_message(AgentMessage::User(pith_events::UserMessage {
            content: pith_events::UserContent::Text("hi".into()),
            timestamp: 1,
        }))
        .unwrap();
    other
        .append_message(serde_json::from_str(r#"{"role":"assistant","content":[],"api":"faux","provider":"faux","model":"faux-1","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}"#).unwrap())
        .unwrap();
    let other_file = other.session_file().unwrap().to_owned();
    drop(other);
    rt.switch(SessionStart::Resume(other_file.clone()))
        .await
        .unwrap();
    assert_eq!(rt.current_session().await.unwrap().cwd, "/elsewhere");
    let new = rt.switch(SessionStart::New).await.unwrap();
    assert_eq!(rt.current_session().await.unwrap().cwd, "/elsewhere");
    assert!(
        new.session_file
            .unwrap()
            .starts_with(env.agent_dir.join("sessions").join("--elsewhere--"))
    );
    // /import copies the file into the current session directory and opens the copy.
    let imported = rt
        .switch(SessionStart::Import(other_file.clone()))
        .await
        .unwrap();
    let copy = imported.session_file.unwrap();
    assert_ne!(copy, other_file);
    assert_eq!(copy.file_name(), other_file.file_name());
    // user, assistant, and the thinking level the resume appended (lifecycle.md §6).
    let kinds: Vec<String> = rt
        .snapshot()
        .await
        .unwrap()
        .entries()
        .iter()
        .map(|e| e.kind().as_str().to_owned())
        .collect();
    assert_eq!(kinds, ["message", "message", "thinking_level_change"]);
    let _ = &mut events;
    rt.shutdown().await.unwrap();
}
