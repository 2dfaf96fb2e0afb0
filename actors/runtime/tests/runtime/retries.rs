//! pi's auto-retry of failed replies: backoff, limits, abort.

use super::support::*;

#[tokio::test(start_paused = true)]
async fn transient_errors_are_retried_with_backoff_and_kept_in_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, _env, provider) = start_with_settings(
        tmp.path(),
        r#"{"retry":{"baseDelayMs":5}}"#,
        r#"[{"content":[],"errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"},
            {"content":[{"type":"text","text":"partial"}],"errorMessage":"503 service unavailable"},
            {"content":[{"type":"text","text":"ok after retry"}]}]"#,
    )
    .await;
    rt.prompt("q1").await.unwrap();
    rt.wait_idle().await.unwrap();
    let seen = drain_agent_events(&mut events);
    let retries: Vec<&serde_json::Value> = seen
        .iter()
        .filter(|e| e["type"].as_str().unwrap().starts_with("auto_retry"))
        .collect();
    assert_eq!(
        retries,
        [
            &serde_json::json!({"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":5,
                "errorMessage":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}),
            &serde_json::json!({"type":"auto_retry_start","attempt":2,"maxAttempts":3,"delayMs":10,
                "errorMessage":"503 service unavailable"}),
            &serde_json::json!({"type":"auto_retry_end","success":true,"attempt":2}),
        ]
    );
    // Each failed attempt is hidden and announced before the retry's run starts (spec §4).
    let order: Vec<&str> = types(&seen)
        .iter()
        .filter(|t| ["auto_retry_start", "entry_appended", "agent_start"].contains(&t.as_str()))
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| match t {
            "auto_retry_start" => "retry",
            "entry_appended" => "edit",
            _ => "start",
        })
        .collect();
    assert_eq!(
        order,
        ["start", "retry", "edit", "start", "retry", "edit", "start"]
    );
    let edits: Vec<&serde_json::Value> = seen
        .iter()
        .filter(|e| e["type"] == "entry_appended")
        .collect();
    assert_eq!(edits[0]["entry"]["type"], "context_edit");
    assert_eq!(edits[0]["entry"]["replacement"], serde_json::Value::Null);
    // Each retry is a run of its own, without a new prompt (pi's agent.continue()).
    assert_eq!(
        types(&seen).iter().filter(|t| *t == "agent_start").count(),
        3
    );
    let snapshot = rt.snapshot().await.unwrap();
    rt.shutdown().await.unwrap();
    let session = Session::open(
        snapshot.session_file.as_ref().unwrap(),
        None,
        None,
        pith_store::OpenMode::ReadOnly,
        &SessionEnv::system(),
    )
    .unwrap();
    // The file keeps both failures, each hidden by a context_edit whose child is the retry
    // (pi 1.6.0, spec §4); the context has only the prompt and the good reply.
    assert_eq!(context_roles(&session), ["user", "assistant"]);
    let entries: Vec<serde_json::Value> = session
        .entries()
        .iter()
        .map(|e| serde_json::from_str(e.raw()).unwrap())
        .collect();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "model_change",
            "thinking_level_change",
            "message",
            "message",
            "context_edit",
            "message",
            "context_edit",
            "message"
        ]
    );
    for (edit, failed) in [(4, 3), (6, 5)] {
        assert_eq!(entries[edit]["parentId"], entries[failed]["id"]);
        assert_eq!(entries[edit]["targetId"], entries[failed]["id"]);
        assert_eq!(entries[edit]["replacement"], serde_json::Value::Null);
        assert_eq!(entries[edit + 1]["parentId"], entries[edit]["id"]);
    }
    // The failed replies are never sent back to the model.
    let requests = provider.requests.lock().unwrap();
    let sent: Vec<usize> = requests.iter().map(|r| r.messages.len()).collect();
    assert_eq!(sent, [1, 1, 1]);
}

#[tokio::test(start_paused = true)]
async fn retries_stop_at_max_retries_and_the_error_stays() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, _env, provider) = start_with_settings(
        tmp.path(),
        r#"{"retry":{"baseDelayMs":1,"maxRetries":"1"}}"#,
        r#"[{"content":[],"errorMessage":"429 rate_limit_error"},
            {"content":[],"errorMessage":"429 rate_limit_error again"},
            {"content":[{"type":"text","text":"never asked"}]}]"#,
    )
    .await;
    rt.prompt("q1").await.unwrap();
    rt.wait_idle().await.unwrap();
    let seen = drain_agent_events(&mut events);
    rt.shutdown().await.unwrap();
    let retries: Vec<&serde_json::Value> = seen
        .iter()
        .filter(|e| e["type"].as_str().unwrap().starts_with("auto_retry"))
        .collect();
    assert_eq!(
        retries,
        [
            &serde_json::json!({"type":"auto_retry_start","attempt":1,"maxAttempts":1,"delayMs":1,
                "errorMessage":"429 rate_limit_error"}),
            &serde_json::json!({"type":"auto_retry_end","success":false,"attempt":1,
                "finalError":"429 rate_limit_error again"}),
        ]
    );
    assert_eq!(provider.requests.lock().unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn abort_cancels_the_retry_wait_and_disabled_retry_never_waits() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, _env, provider) = start_with_settings(
        tmp.path(),
        r#"{"retry":{"baseDelayMs":600000}}"#,
        r#"[{"content":[],"errorMessage":"fetch failed"}]"#,
    )
    .await;
    rt.prompt("q1").await.unwrap();
    // Wait for the retry to start, then abort: the ten-minute wait ends at once.
    loop {
        let e = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .unwrap()
            .unwrap();
        if let RuntimeEvent::Agent(e) = e
            && matches!(*e, AgentEvent::AutoRetryStart { .. })
        {
            break;
        }
    }
    tokio::time::timeout(Duration::from_secs(10), rt.abort())
        .await
        .unwrap()
        .unwrap();
    rt.wait_idle().await.unwrap();
    let seen = drain_agent_events(&mut events);
    assert_eq!(
        seen.iter().find(|e| e["type"] == "auto_retry_end").unwrap(),
        &serde_json::json!({"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"})
    );
    assert_eq!(provider.requests.lock().unwrap().len(), 1);
    rt.shutdown().await.unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, _env, provider) = start_with_settings(
        tmp.path(),
        r#"{"retry":{"enabled":false}}"#,
        r#"[{"content":[],"errorMessage":"500 internal"}]"#,
    )
    .await;
    rt.prompt("q1").await.unwrap();
    rt.wait_idle().await.unwrap();
    let seen = drain_agent_events(&mut events);
    assert!(!types(&seen).iter().any(|t| t.starts_with("auto_retry")));
    assert_eq!(provider.requests.lock().unwrap().len(), 1);
    rt.shutdown().await.unwrap();
}
