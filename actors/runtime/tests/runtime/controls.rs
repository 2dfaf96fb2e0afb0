//! Model, thinking level, name and label changes.

use super::support::*;

#[tokio::test(start_paused = true)]
async fn model_thinking_name_and_label_changes_are_recorded_and_take_effect() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, env, first) = start_recording(
        tmp.path(),
        r#"[{"content":[{"type":"text","text":"one"}]}]"#,
    )
    .await;
    rt.prompt("q1").await.unwrap();
    rt.wait_idle().await.unwrap();
    let second = Arc::new(Recording {
        inner: Faux::new(
            script(r#"[{"content":[{"type":"text","text":"two"}]}]"#),
            env.clock.clone(),
        ),
        requests: Default::default(),
    });
    rt.set_model(
        second.clone(),
        pith_events::ModelRef::new("other", "model-2"),
    )
    .await
    .unwrap();
    rt.set_thinking_level(pith_events::ThinkingLevel::Off)
        .await
        .unwrap(); // unchanged: nothing recorded
    rt.set_thinking_level(pith_events::ThinkingLevel::High)
        .await
        .unwrap();
    assert_eq!(
        rt.set_session_name("  ").await.unwrap_err().to_string(),
        "Session name cannot be empty"
    );
    rt.set_session_name("  my work ").await.unwrap();
    rt.prompt("q2").await.unwrap();
    rt.wait_idle().await.unwrap();
    let snapshot = rt.snapshot().await.unwrap();
    let first_reply = snapshot
        .entries()
        .iter()
        .find(|e| e.raw().contains("\"one\""))
        .unwrap()
        .id()
        .to_owned();
    rt.set_label(&first_reply, Some("checkpoint"))
        .await
        .unwrap();
    assert!(rt.set_label("nope", Some("x")).await.is_err());
    let seen = drain_agent_events(&mut events);
    let snapshot = rt.snapshot().await.unwrap();
    rt.shutdown().await.unwrap();

    assert_eq!(first.requests.lock().unwrap().len(), 1);
    let asked = second.requests.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].thinking_level, pith_events::ThinkingLevel::High);
    let changes: Vec<&serde_json::Value> = seen
        .iter()
        .filter(|e| e["type"] == "thinking_level_changed" || e["type"] == "session_info_changed")
        .collect();
    assert_eq!(
        changes,
        [
            &serde_json::json!({"type":"thinking_level_changed","level":"high"}),
            &serde_json::json!({"type":"session_info_changed","name":"my work"}),
        ]
    );
    let tail: Vec<serde_json::Value> = snapshot
        .entries()
        .iter()
        .map(|e| serde_json::from_str::<serde_json::Value>(e.raw()).unwrap())
        .filter(|e| e["type"] != "message")
        .skip(2)
        .map(|mut e| {
            let o = e.as_object_mut().unwrap();
            for k in ["id", "parentId", "timestamp"] {
                o.remove(k);
            }
            e
        })
        .collect();
    assert_eq!(
        tail,
        [
            serde_json::json!({"type":"model_change","provider":"other","modelId":"model-2"}),
            serde_json::json!({"type":"thinking_level_change","thinkingLevel":"high"}),
            serde_json::json!({"type":"session_info","name":"my work"}),
            serde_json::json!({"type":"label","targetId":first_reply,"label":"checkpoint"}),
        ]
    );
}
