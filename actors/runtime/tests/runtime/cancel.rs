//! The user's abort ends a summary at once, on a model that never answers.

use super::support::*;

/// Answers the first `answered` requests through the faux model, then never answers (the
/// stream stays open), as a stalled server would; `asked` fires when a request reaches it.
struct Stalling {
    inner: Faux,
    answered: usize,
    seen: std::sync::Mutex<usize>,
    held: std::sync::Mutex<Vec<tokio::sync::mpsc::Sender<pith_llm::provider::ProviderEvent>>>,
    asked: tokio::sync::Notify,
}

impl Stalling {
    fn new(replies: &str, answered: usize, env: &SessionEnv) -> Arc<Stalling> {
        Arc::new(Stalling {
            inner: Faux::new(script(replies), env.clock.clone()),
            answered,
            seen: Default::default(),
            held: Default::default(),
            asked: tokio::sync::Notify::new(),
        })
    }
}

impl pith_llm::provider::Provider for Stalling {
    fn name(&self) -> &str {
        "faux"
    }

    fn stream(
        &self,
        request: pith_llm::provider::ProviderRequest,
        abort: tokio_util::sync::CancellationToken,
    ) -> tokio::sync::mpsc::Receiver<pith_llm::provider::ProviderEvent> {
        let n = {
            let mut seen = self.seen.lock().unwrap();
            *seen += 1;
            *seen
        };
        if n <= self.answered {
            return self.inner.stream(request, abort);
        }
        // Ignores the abort and never sends: only the runtime's own cancel can end this.
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        self.held.lock().unwrap().push(tx);
        self.asked.notify_one();
        rx
    }
}

/// A session with two prompts on a model that stalls from the third request on, compacting
/// down to the last reply (keepRecentTokens 1).
async fn stalled_after_two_prompts(
    tmp: &Path,
) -> (
    RuntimeHandle,
    UnboundedReceiver<RuntimeEvent>,
    Arc<Stalling>,
) {
    let env = env(tmp);
    std::fs::create_dir_all(&env.agent_dir).unwrap();
    std::fs::write(
        env.agent_dir.join("settings.json"),
        r#"{"compaction":{"keepRecentTokens":1}}"#,
    )
    .unwrap();
    let provider = Stalling::new(
        r#"[{"content":[{"type":"text","text":"r1"}]},{"content":[{"type":"text","text":"r2"}]}]"#,
        2,
        &env,
    );
    let config = project_config(&env, provider.clone(), Vec::new());
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    let mut events = rt.subscribe().await.unwrap();
    for prompt in ["one", "two"] {
        rt.prompt(prompt).await.unwrap();
        run_names(&mut events).await;
    }
    (rt, events, provider)
}

#[tokio::test(start_paused = true)]
async fn abort_cancels_a_compaction_summary_within_100ms_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, provider) = stalled_after_two_prompts(tmp.path()).await;
    let file = rt.current_session().await.unwrap().session_file.unwrap();
    let before = std::fs::read_to_string(&file).unwrap();
    let compacting = tokio::spawn({
        let rt = rt.clone();
        async move { rt.compact(None).await }
    });
    provider.asked.notified().await;
    let asked_at = tokio::time::Instant::now();
    rt.abort().await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_millis(100), compacting)
        .await
        .expect("the compaction ends within 100 ms of the abort")
        .unwrap();
    assert!(asked_at.elapsed() < Duration::from_millis(100));
    assert!(
        matches!(outcome, Err(pith_actors::RuntimeError::CompactionCancelled)),
        "{outcome:?}"
    );
    assert_eq!(outcome.unwrap_err().to_string(), "Compaction cancelled");
    let mut ends = Vec::new();
    while let Ok(RuntimeEvent::Agent(e)) = events.try_recv() {
        if matches!(*e, AgentEvent::CompactionEnd { .. }) {
            ends.push(serde_json::to_value(&e).unwrap());
        }
    }
    assert_eq!(
        ends,
        [
            serde_json::json!({"type":"compaction_end","reason":"manual","aborted":true,"willRetry":false})
        ]
    );
    rt.shutdown().await.unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
}

#[tokio::test(start_paused = true)]
async fn abort_cancels_a_branch_summary_within_100ms_and_the_leaf_stays() {
    use pith_actors::tree_navigator::{NavigateOptions, Navigated};
    let tmp = tempfile::tempdir().unwrap();
    let (rt, _events, provider) = stalled_after_two_prompts(tmp.path()).await;
    let snap = rt.snapshot().await.unwrap();
    let leaf = snap.entries().last().unwrap().id().to_owned();
    let first_prompt = snap
        .entries()
        .iter()
        .find(|e| e.raw().contains(r#""text":"one""#))
        .unwrap()
        .id()
        .to_owned();
    let file = rt.current_session().await.unwrap().session_file.unwrap();
    let before = std::fs::read_to_string(&file).unwrap();
    let navigating = tokio::spawn({
        let rt = rt.clone();
        async move {
            let options = NavigateOptions {
                summarize: true,
                ..NavigateOptions::default()
            };
            rt.navigate_tree(&first_prompt, options).await
        }
    });
    provider.asked.notified().await;
    let asked_at = tokio::time::Instant::now();
    rt.abort().await.unwrap();
    let navigated = tokio::time::timeout(Duration::from_millis(100), navigating)
        .await
        .expect("the branch summary ends within 100 ms of the abort")
        .unwrap()
        .unwrap();
    assert!(asked_at.elapsed() < Duration::from_millis(100));
    assert_eq!(
        navigated,
        Navigated {
            leaf_id: Some(leaf.clone()),
            cancelled: true,
            aborted: true,
            ..Navigated::default()
        }
    );
    assert_eq!(
        rt.current_session().await.unwrap().leaf_id.as_deref(),
        Some(leaf.as_str())
    );
    rt.shutdown().await.unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
}
