//! A resumed session runs the model and thinking level recorded on its branch (spec:
//! lifecycle.md §6), through the runtime's ModelSource: `/resume` sends the next request to
//! the session's own model, not to the runtime's current one.

use pith_actors::selection::{ModelSource, Selection};
use pith_events::{ModelRef, ThinkingLevel};
use pith_llm::provider::Provider;

use crate::support::*;

struct Two {
    models: Vec<(ModelRef, Arc<dyn Provider>)>,
}

impl ModelSource for Two {
    fn provider(&self, model: &ModelRef) -> Option<Arc<dyn Provider>> {
        self.models
            .iter()
            .find(|(m, _)| m == model)
            .map(|(_, p)| p.clone())
    }

    fn clamp(&self, _model: &ModelRef, level: ThinkingLevel) -> ThinkingLevel {
        level
    }
}

fn recording(env: &SessionEnv) -> Arc<Recording> {
    Arc::new(Recording {
        inner: Faux::new(Vec::new(), env.clock.clone()),
        requests: Default::default(),
    })
}

#[tokio::test(start_paused = true)]
async fn resume_and_clone_run_the_sessions_own_model_and_level() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let (first, second) = (recording(&env), recording(&env));
    let (faux, alt) = (
        ModelRef::new("faux", "faux-1"),
        ModelRef::new("alt", "alt-1"),
    );
    let models = Arc::new(Two {
        models: vec![
            (faux.clone(), first.clone() as Arc<dyn Provider>),
            (alt.clone(), second.clone() as Arc<dyn Provider>),
        ],
    });
    let config = RuntimeConfig {
        selection: Selection {
            models: Some(models),
            ..Selection::default()
        },
        ..project_config(&env, first.clone(), Vec::new())
    };
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    // Session A: a reply, then `/model alt/alt-1` and `/thinking high`.
    rt.prompt("in a").await.unwrap();
    rt.wait_idle().await.unwrap();
    rt.set_model(second.clone(), alt.clone()).await.unwrap();
    rt.set_thinking_level(ThinkingLevel::High).await.unwrap();
    let a = rt.current_session().await.unwrap().session_file.unwrap();
    // Session B runs the runtime's model, switched back to faux at low.
    rt.switch(SessionStart::New).await.unwrap();
    rt.set_model(first.clone(), faux.clone()).await.unwrap();
    rt.set_thinking_level(ThinkingLevel::Low).await.unwrap();
    rt.prompt("in b").await.unwrap();
    rt.wait_idle().await.unwrap();
    let before = a.metadata().unwrap().len();
    // Back to A: its own model and level.
    rt.switch(SessionStart::Resume(a.clone())).await.unwrap();
    let current = rt.current_session().await.unwrap();
    assert_eq!(
        (current.model.clone(), current.thinking_level),
        (alt.clone(), ThinkingLevel::High)
    );
    assert_eq!(
        a.metadata().unwrap().len(),
        before,
        "resuming writes nothing"
    );
    // A clone of A keeps running A's model.
    rt.switch(SessionStart::Clone).await.unwrap();
    assert_eq!(rt.current_session().await.unwrap().model, alt);
    rt.prompt("a again").await.unwrap();
    rt.wait_idle().await.unwrap();
    let sent = second.requests.lock().unwrap().clone();
    let last = sent.last().expect("the alt model got the request");
    assert_eq!(
        (last.provider.as_str(), last.model.as_str()),
        ("alt", "alt-1")
    );
    assert_eq!(last.thinking_level, ThinkingLevel::High);
    assert_eq!(
        first
            .requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r
                .messages
                .iter()
                .any(|m| format!("{m:?}").contains("a again")))
            .count(),
        0
    );
    // A new session runs the runtime's (faux, low: the last ones set).
    rt.switch(SessionStart::New).await.unwrap();
    let fresh = rt.current_session().await.unwrap();
    assert_eq!(
        (fresh.model, fresh.thinking_level),
        (faux, ThinkingLevel::Low)
    );
    rt.shutdown().await.unwrap();
}
