//! Extensions that cancel or supply compaction and branch summaries.

use super::support::*;

/// Answers the compaction and tree hooks: cancels when the focus says "cancel", otherwise
/// supplies the summary; logs the after-events as custom entries.
struct Hooks;

impl pith_actors::extension::Extension for Hooks {
    fn name(&self) -> &str {
        "hooks"
    }

    fn subscriptions(&self) -> &[&str] {
        &[
            "session_before_compact",
            "session_compact",
            "session_before_tree",
            "session_tree",
        ]
    }

    fn on_event(
        &mut self,
        event: &pith_events::ExtensionEvent,
        ctx: &mut pith_actors::extension::ExtensionContext,
    ) -> pith_actors::extension::Verdict {
        use pith_actors::extension::{SuppliedSummary, Verdict};
        use pith_events::ExtensionEvent as E;
        match event {
            E::SessionBeforeCompact {
                custom_instructions,
                ..
            }
            | E::SessionBeforeTree {
                custom_instructions,
                ..
            } if custom_instructions.as_deref() == Some("cancel") => {
                Verdict::Cancel("not now".into())
            }
            E::SessionBeforeCompact {
                preparation,
                reason,
                ..
            } => Verdict::Summary(SuppliedSummary {
                summary: format!(
                    "EXT {reason}: {} messages",
                    preparation.messages_to_summarize.len()
                ),
                details: Some(serde_json::json!({"by":"hooks"})),
            }),
            E::SessionBeforeTree {
                entries_to_summarize,
                ..
            } => Verdict::Summary(SuppliedSummary {
                summary: format!("EXT BRANCH of {}", entries_to_summarize.len()),
                details: None,
            }),
            E::SessionCompact { from_extension, .. } => {
                ctx.append_entry(
                    "hook-log",
                    Some(serde_json::json!({"compact": from_extension})),
                );
                Verdict::Continue
            }
            E::SessionTree {
                summary_entry_id, ..
            } => {
                ctx.append_entry(
                    "hook-log",
                    Some(serde_json::json!({"tree": summary_entry_id.is_some()})),
                );
                Verdict::Continue
            }
            _ => Verdict::Continue,
        }
    }
}

#[tokio::test(start_paused = true)]
async fn extensions_cancel_or_supply_compaction_and_branch_summaries() {
    use pith_actors::tree_navigator::NavigateOptions;
    let tmp = tempfile::tempdir().unwrap();
    // pi 1.6.0 asks extensions only when there is something to summarize: keep the last turn.
    keep_recent(tmp.path(), 2);
    let env = env(tmp.path());
    let provider = Arc::new(Recording {
        inner: Faux::new(
            script(
                r#"[{"content":[{"type":"text","text":"r1"}]},{"content":[{"type":"text","text":"r2"}]}]"#,
            ),
            env.clock.clone(),
        ),
        requests: Default::default(),
    });
    let config = project_config(&env, provider.clone(), vec![Arc::new(|| Box::new(Hooks))]);
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    let mut events = rt.subscribe().await.unwrap();
    for prompt in ["one", "two"] {
        rt.prompt(prompt).await.unwrap();
        run_names(&mut events).await;
    }
    assert_eq!(
        rt.compact(Some("cancel")).await.unwrap_err().to_string(),
        "Compaction cancelled"
    );
    let compaction = rt.compact(None).await.unwrap();
    let snap = rt.snapshot().await.unwrap();
    let r1 = snap
        .entries()
        .iter()
        .find(|e| e.raw().contains(r#""text":"r1""#))
        .unwrap()
        .id()
        .to_owned();
    let leaf = snap.entries().last().unwrap().id().to_owned();
    let cancelled = rt
        .navigate_tree(
            &r1,
            NavigateOptions {
                summarize: true,
                custom_instructions: Some("cancel".into()),
                ..NavigateOptions::default()
            },
        )
        .await
        .unwrap();
    assert!(cancelled.cancelled);
    assert_eq!(
        rt.snapshot().await.unwrap().entries().last().unwrap().id(),
        leaf
    );
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
    assert_eq!(moved.from_extension, Some(true));
    let file = rt.current_session().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();

    // The model was asked only for the two replies.
    assert_eq!(provider.requests.lock().unwrap().len(), 2);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let c = lines
        .iter()
        .find(|l| l["id"] == compaction.as_str())
        .unwrap();
    // keepRecentTokens 2 keeps the second turn: the extension got the first one's two messages
    // (compaction.md §4).
    assert_eq!(
        (&c["summary"], &c["details"], &c["fromHook"]),
        (
            &serde_json::json!("EXT manual: 2 messages"),
            &serde_json::json!({"by":"hooks"}),
            &serde_json::json!(true)
        )
    );
    let b = lines
        .iter()
        .find(|l| l["type"] == "branch_summary")
        .unwrap();
    assert_eq!(
        (&b["summary"], &b["fromHook"]),
        (
            &serde_json::json!("EXT BRANCH of 4"),
            &serde_json::json!(true)
        )
    );
    assert_eq!(b["details"], serde_json::Value::Null);
    let logs: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["customType"] == "hook-log")
        .map(|l| &l["data"])
        .collect();
    assert_eq!(
        logs,
        [
            &serde_json::json!({"compact": true}),
            &serde_json::json!({"tree": true})
        ]
    );
}

#[tokio::test]
async fn an_extension_actor_that_dies_is_started_again_alone_and_the_session_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, _env) = start(tmp.path(), Vec::new()).await;
    rt.prompt("one").await.unwrap();
    run_names(&mut events).await;
    rt.wait_idle().await.unwrap();
    let before = rt.current_session().await.unwrap().session_id;
    rt.crash_child("Extension:prompt-counter");
    // The notice comes; no session restart happens.
    loop {
        let e = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .unwrap()
            .unwrap();
        match e {
            RuntimeEvent::Notice(n) => {
                assert!(n.starts_with("Extension:prompt-counter failed"), "{n}");
                break;
            }
            RuntimeEvent::SessionStarted { .. } => panic!("the session was restarted"),
            _ => {}
        }
    }
    rt.prompt("two").await.unwrap();
    run_names(&mut events).await;
    rt.wait_idle().await.unwrap();
    assert_eq!(rt.current_session().await.unwrap().session_id, before);
    // The new actor picked its count up from the log.
    let counts: Vec<u64> = rt
        .snapshot()
        .await
        .unwrap()
        .entries()
        .iter()
        .filter_map(|e| {
            let v: serde_json::Value = serde_json::from_str(e.raw()).ok()?;
            (v["customType"] == "prompt-counter").then(|| v["data"]["count"].as_u64())?
        })
        .collect();
    assert_eq!(counts, [1, 2]);
}

#[tokio::test(start_paused = true)]
async fn commands_of_the_same_name_get_pis_numbered_invocation_names() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let config = project_config(
        &env,
        Arc::new(Faux::new(Vec::new(), env.clock.clone())),
        vec![
            Arc::new(|| Box::new(PromptCounter::default())),
            Arc::new(|| Box::new(NoForkWhileRunning::default())),
            Arc::new(|| Box::new(PromptCounter::default())),
        ],
    );
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    let names: Vec<String> = rt
        .commands()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["count:1", "count:2"]);
    assert_eq!(
        rt.command("count:2", "").await.unwrap().as_deref(),
        Some("0 prompt(s) in this session")
    );
    assert_eq!(rt.command("count", "").await.unwrap(), None);
}
