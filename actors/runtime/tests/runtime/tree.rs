//! `/tree`: leaf moves with and without a branch summary.

use super::support::*;

#[tokio::test(start_paused = true)]
async fn tree_navigation_summarizes_the_branch_left_behind_and_returns_the_prompt_text() {
    use pith_actors::tree_navigator::{NavigateOptions, Navigated};
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, env, provider) = start_recording(
        tmp.path(),
        r#"[{"content":[{"type":"text","text":"r1"}]},
            {"content":[{"type":"text","text":"r2"},{"type":"toolCall","id":"w","name":"write","arguments":{"path":"b.rs"}}]},
            {"content":[{"type":"text","text":"r2 done"}]},
            {"content":[{"type":"text","text":"BRANCH SUMMARY"}]},
            {"content":[{"type":"text","text":"r3"}]}]"#,
    )
    .await;
    // Branch summaries never think, whatever the session's level (compaction.md §9.3).
    rt.set_thinking_level(pith_events::ThinkingLevel::High)
        .await
        .unwrap();
    for prompt in ["one", "two"] {
        rt.prompt(prompt).await.unwrap();
        run_names(&mut events).await;
    }
    let snap = rt.snapshot().await.unwrap();
    let id_of = |needle: &str| {
        snap.entries()
            .iter()
            .find(|e| e.raw().contains(needle))
            .unwrap()
            .id()
            .to_owned()
    };
    let (two, r1, leaf) = (
        id_of(r#""text":"two""#),
        id_of(r#""text":"r1""#),
        snap.entries().last().unwrap().id().to_owned(),
    );

    // No-op and unknown targets write nothing.
    let same = rt
        .navigate_tree(&leaf, NavigateOptions::default())
        .await
        .unwrap();
    assert_eq!(
        same,
        Navigated {
            leaf_id: Some(leaf.clone()),
            ..Navigated::default()
        }
    );
    assert_eq!(
        rt.navigate_tree("nope", NavigateOptions::default())
            .await
            .unwrap_err()
            .to_string(),
        "Entry nope not found"
    );

    let moved = rt
        .navigate_tree(
            &two,
            NavigateOptions {
                summarize: true,
                custom_instructions: Some("the write".into()),
                label: Some("tried b.rs".into()),
                ..NavigateOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(moved.editor_text.as_deref(), Some("two"));
    rt.prompt("two, differently").await.unwrap();
    run_names(&mut events).await;
    let file = rt.current_session().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();

    let branch_request = provider.requests.lock().unwrap()[3].clone();
    assert_eq!(
        (
            branch_request.thinking_level.as_str(),
            branch_request.max_tokens
        ),
        ("off", None)
    );
    let asked = serde_json::to_value(&branch_request.messages[0]).unwrap();
    let asked = asked["content"][0]["text"].as_str().unwrap().to_owned();
    // The common ancestor is the selected prompt itself: what follows it is left behind,
    // tool results excepted (compaction.md §9.1–9.2).
    assert!(
        asked.starts_with("<conversation>\n[Assistant]: r2\n\n[Assistant tool calls]: write(path=\"b.rs\")\n\n[Assistant]: r2 done\n</conversation>"),
        "{asked}"
    );
    assert!(asked.ends_with("Additional focus: the write"), "{asked}");

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary = lines
        .iter()
        .find(|l| l["type"] == "branch_summary")
        .unwrap();
    assert_eq!(summary["id"].as_str(), moved.summary_entry_id.as_deref());
    assert_eq!(summary["parentId"].as_str(), Some(r1.as_str()));
    // pi 1.6.0: the leaf left behind (0.73.1 wrote the summary's parent).
    assert_eq!(summary["fromId"].as_str(), Some(leaf.as_str()));
    assert_eq!(
        summary["summary"],
        "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\nBRANCH SUMMARY\n\n<modified-files>\nb.rs\n</modified-files>"
    );
    assert_eq!(
        summary["details"],
        serde_json::json!({"readFiles":[],"modifiedFiles":["b.rs"]})
    );
    let label = lines.iter().find(|l| l["type"] == "label").unwrap();
    assert_eq!(
        (&label["targetId"], &label["label"]),
        (&summary["id"], &serde_json::json!("tried b.rs"))
    );
    assert_eq!(label["id"].as_str(), moved.leaf_id.as_deref());

    // The context goes through the summary, and pi's projection agrees with the live one.
    let back = Session::open(&file, None, None, OpenMode::Inspect, &env).unwrap();
    let roles = context_roles(&back);
    assert_eq!(
        roles,
        ["user", "assistant", "branchSummary", "user", "assistant"]
    );
}

#[tokio::test(start_paused = true)]
async fn tree_navigation_without_a_summary_only_moves_the_leaf() {
    use pith_actors::tree_navigator::NavigateOptions;
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, _env, provider) = start_recording(tmp.path(), "[]").await;
    rt.prompt("first").await.unwrap();
    run_names(&mut events).await;
    let snap = rt.snapshot().await.unwrap();
    let first = snap
        .entries()
        .iter()
        .find(|e| e.raw().contains(r#""text":"first""#))
        .unwrap();
    let parent = snap
        .entries()
        .iter()
        .find(|e| e.raw().contains("thinking_level_change"))
        .unwrap()
        .id()
        .to_owned();
    let count = snap.entries().len();
    // The first prompt's parent is the thinking level entry pi writes at the start, so the
    // leaf goes there, not to the root (tree-and-context.md §9).
    let moved = rt
        .navigate_tree(first.id(), NavigateOptions::default())
        .await
        .unwrap();
    assert_eq!(
        (moved.leaf_id.as_deref(), moved.editor_text.as_deref()),
        (Some(parent.as_str()), Some("first"))
    );
    assert_eq!(moved.summary_entry_id, None);
    let after = rt.snapshot().await.unwrap();
    assert_eq!(after.entries().len(), count);
    assert_eq!(rt.context().await.unwrap().messages.len(), 0);
    rt.shutdown().await.unwrap();
    assert_eq!(provider.requests.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn tree_navigation_keeps_the_thinking_level_and_records_no_change() {
    // pi 1.6.0's navigateTree moves the leaf and rebuilds the context; it does not touch the
    // thinking level (no thinking_level_change, no thinking_level_changed), and setting the
    // level it already has records nothing. Checked against pi 1.6.0 over rpc with
    // set_thinking_level twice.
    use pith_actors::tree_navigator::NavigateOptions;
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, _env) = start(
        tmp.path(),
        script(
            r#"[{"content":[{"type":"text","text":"r1"}]},
                {"content":[{"type":"text","text":"r2"}]}]"#,
        ),
    )
    .await;
    rt.prompt("one").await.unwrap();
    run_names(&mut events).await;
    for _ in 0..2 {
        rt.set_thinking_level(pith_events::ThinkingLevel::High)
            .await
            .unwrap();
    }
    let snap = rt.snapshot().await.unwrap();
    let first_prompt = snap
        .entries()
        .iter()
        .find(|e| e.raw().contains(r#""text":"one""#))
        .unwrap()
        .id()
        .to_owned();
    rt.navigate_tree(&first_prompt, NavigateOptions::default())
        .await
        .unwrap();
    rt.prompt("two").await.unwrap();
    rt.wait_idle().await.unwrap();
    let seen = agent_events(&mut events, 1).await;
    let file = rt.current_session().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();

    let changed: Vec<&serde_json::Value> = seen
        .iter()
        .filter(|e| e["type"] == "thinking_level_changed")
        .collect();
    assert_eq!(
        changed,
        [&serde_json::json!({"type": "thinking_level_changed", "level": "high"})]
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let levels: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["type"] == "thinking_level_change")
        .map(|l| &l["thinkingLevel"])
        .collect();
    assert_eq!(levels, ["off", "high"]);
    // The reply after the move asked at the level set before it (pi ≥ 1.x records it).
    let last = &lines.last().unwrap()["message"];
    assert_eq!(
        (&last["content"][0]["text"], &last["thinkingLevel"]),
        (&serde_json::json!("r2"), &serde_json::json!("high"))
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_branch_summary_request_is_retried_with_pis_events() {
    use pith_actors::tree_navigator::NavigateOptions;
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, _env, provider) = start_with_settings(
        tmp.path(),
        r#"{"retry":{"baseDelayMs":100}}"#,
        r#"[{"content":[{"type":"text","text":"r1"}]},
            {"content":[{"type":"text","text":"r2"}]},
            {"content":[],"errorMessage":"503 overloaded"},
            {"content":[],"errorMessage":"503 overloaded"},
            {"content":[{"type":"text","text":"THE BRANCH"}]}]"#,
    )
    .await;
    for prompt in ["one", "two"] {
        rt.prompt(prompt).await.unwrap();
        run_names(&mut events).await;
    }
    let snap = rt.snapshot().await.unwrap();
    let r1 = snap
        .entries()
        .iter()
        .find(|e| e.raw().contains(r#""text":"r1""#))
        .unwrap()
        .id()
        .to_owned();
    let moved = rt
        .navigate_tree(
            &r1,
            NavigateOptions {
                summarize: true,
                ..NavigateOptions::default()
            },
        )
        .await
        .unwrap();
    let mut seen = Vec::new();
    while let Ok(RuntimeEvent::Agent(e)) = events.try_recv() {
        seen.push(serde_json::to_value(&e).unwrap());
    }
    rt.shutdown().await.unwrap();
    assert!(moved.summary_entry_id.is_some());
    // Two failures: two waits (100 ms, then 200 ms), one `finished` at the end; a branch
    // summary's attempts carry no reason.
    let scheduled = |attempt: u32, delay: u64| {
        serde_json::json!({"type": "summarization_retry_scheduled", "attempt": attempt,
            "maxAttempts": 3, "delayMs": delay, "errorMessage": "503 overloaded"})
    };
    let start =
        serde_json::json!({"type": "summarization_retry_attempt_start", "source": "branchSummary"});
    assert_eq!(
        seen,
        [
            scheduled(1, 100),
            start.clone(),
            scheduled(2, 200),
            start,
            serde_json::json!({"type": "summarization_retry_finished"}),
        ]
    );
    assert_eq!(provider.requests.lock().unwrap().len(), 5);
}
