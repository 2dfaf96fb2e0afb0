//! Helpers every runtime test uses: the environment, a runtime on the faux model, and readers of events and session files.

pub(crate) use pith_actors::extension::{NoForkWhileRunning, PromptCounter};
pub(crate) use pith_actors::runtime::{
    FirstSession, Runtime, RuntimeConfig, RuntimeEvent, RuntimeHandle, ToolChoice,
};
pub(crate) use pith_events::{AgentEvent, AgentMessage, SessionStart};
pub(crate) use pith_llm::faux::{Faux, ScriptedReply};
pub(crate) use pith_store::env::{RandomIds, SteppingClock};
pub(crate) use pith_store::{OpenMode, Session, SessionEnv, build_session_context};
pub(crate) use std::path::Path;
pub(crate) use std::sync::Arc;
pub(crate) use std::time::Duration;
pub(crate) use tokio::sync::mpsc::UnboundedReceiver;

pub(crate) fn env(tmp: &Path) -> SessionEnv {
    SessionEnv {
        agent_dir: tmp.join("agent"),
        clock: Arc::new(SteppingClock::new(1_764_000_000_000, 1000)),
        ids: Arc::new(RandomIds),
    }
}

pub(crate) fn script(json: &str) -> Vec<ScriptedReply> {
    serde_json::from_str(json).expect("script")
}

/// A runtime in `/project` on `provider`, persisting, with `extensions`.
pub(crate) fn project_config(
    env: &SessionEnv,
    provider: Arc<dyn pith_llm::provider::Provider>,
    extensions: Vec<pith_actors::runtime::ExtensionFactory>,
) -> RuntimeConfig {
    RuntimeConfig {
        env: env.clone(),
        cwd: "/project".into(),
        session_dir: None,
        persist: true,
        provider,
        model: pith_events::ModelRef::new("faux", "faux-1"),
        thinking_level: pith_events::ThinkingLevel::Off,
        selection: Default::default(),
        session_name: None,
        tools: ToolChoice::none(),
        system_prompt: None,
        extensions,
        hosted: Default::default(),
        resources: Default::default(),
    }
}

/// The roles of the context at the leaf, as pi's buildSessionContext gives them.
pub(crate) fn context_roles(session: &Session) -> Vec<String> {
    build_session_context(session.tree(), session.tree().leaf())
        .messages
        .iter()
        .map(|m| {
            serde_json::from_str::<serde_json::Value>(&m.to_json()).unwrap()["role"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

pub(crate) async fn start(
    tmp: &Path,
    replies: Vec<ScriptedReply>,
) -> (RuntimeHandle, UnboundedReceiver<RuntimeEvent>, SessionEnv) {
    let env = env(tmp);
    let config = project_config(
        &env,
        Arc::new(Faux::new(replies, env.clock.clone())),
        vec![
            Arc::new(|| Box::new(PromptCounter::default())),
            Arc::new(|| Box::new(NoForkWhileRunning::default())),
        ],
    );
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .expect("runtime")
        .handle;
    let events = rt.subscribe().await.expect("subscribe");
    (rt, events, env)
}

/// Agent events until `agent_settled` (the prompt's work is over, pi ≥ 0.80.4), as pi
/// names them.
pub(crate) async fn run_names(events: &mut UnboundedReceiver<RuntimeEvent>) -> Vec<String> {
    let mut names = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .expect("no stall")
            .expect("open");
        if let RuntimeEvent::Agent(e) = event {
            let name = serde_json::to_value(&e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned();
            let done = matches!(*e, AgentEvent::AgentSettled { .. });
            if name != "message_update" {
                names.push(name);
            }
            if done {
                return names;
            }
        }
    }
}

pub(crate) fn file_roles(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            match v["type"].as_str().unwrap() {
                "message" => v["message"]["role"].as_str().unwrap().to_owned(),
                t => t.to_owned(),
            }
        })
        .collect()
}

/// Roles and user texts of a session file, in order.
pub(crate) fn transcript(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let m = &v["message"];
            match m["role"].as_str()? {
                "user" => Some(format!("user:{}", m["content"][0]["text"].as_str()?)),
                role => Some(role.to_owned()),
            }
        })
        .collect()
}

/// Delegates to the faux model and keeps every request, so a test can read what was asked.
pub(crate) struct Recording {
    pub(crate) inner: Faux,
    pub(crate) requests: std::sync::Mutex<Vec<pith_llm::provider::ProviderRequest>>,
}

impl pith_llm::provider::Provider for Recording {
    fn name(&self) -> &str {
        "faux"
    }

    fn context_window(&self, model: &str) -> Option<u64> {
        self.inner.context_window(model)
    }

    fn max_tokens(&self, model: &str) -> Option<u64> {
        self.inner.max_tokens(model)
    }

    fn stream(
        &self,
        request: pith_llm::provider::ProviderRequest,
        abort: tokio_util::sync::CancellationToken,
    ) -> tokio::sync::mpsc::Receiver<pith_llm::provider::ProviderEvent> {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.stream(request, abort)
    }
}

pub(crate) async fn start_recording(
    tmp: &Path,
    replies: &str,
) -> (
    RuntimeHandle,
    UnboundedReceiver<RuntimeEvent>,
    SessionEnv,
    Arc<Recording>,
) {
    let env = env(tmp);
    let provider = Arc::new(Recording {
        inner: Faux::new(script(replies), env.clock.clone()),
        requests: Default::default(),
    });
    let config = project_config(&env, provider.clone(), Vec::new());
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    let events = rt.subscribe().await.unwrap();
    (rt, events, env, provider)
}

/// Agent events as JSON until the `n`-th `agent_end`, without streaming updates.
pub(crate) async fn agent_events(
    events: &mut UnboundedReceiver<RuntimeEvent>,
    n: usize,
) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut ends = 0;
    while ends < n {
        let event = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .expect("no stall")
            .expect("open");
        if let RuntimeEvent::Agent(e) = event {
            let v = serde_json::to_value(&e).unwrap();
            if v["type"] == "agent_end" {
                ends += 1;
            }
            if v["type"] != "message_update" {
                out.push(v);
            }
        }
    }
    out
}

pub(crate) fn types(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

pub(crate) const OVERFLOW: &str =
    r#"{"content":[],"errorMessage":"prompt is too long: 213462 tokens > 200000 maximum"}"#;

pub(crate) const USAGE_110K: &str = r#"{"input":110000,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":110000,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;

/// A runtime like [`start_recording`]'s with `settings` as the agent dir's settings.json.
pub(crate) async fn start_with_settings(
    tmp: &Path,
    settings: &str,
    replies: &str,
) -> (
    RuntimeHandle,
    UnboundedReceiver<RuntimeEvent>,
    SessionEnv,
    Arc<Recording>,
) {
    std::fs::create_dir_all(tmp.join("agent")).unwrap();
    std::fs::write(tmp.join("agent/settings.json"), settings).unwrap();
    start_recording(tmp, replies).await
}

/// Every agent event received so far (the runtime is idle), without streaming updates.
pub(crate) fn drain_agent_events(
    events: &mut UnboundedReceiver<RuntimeEvent>,
) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    while let Ok(e) = events.try_recv() {
        if let RuntimeEvent::Agent(e) = e
            && !matches!(*e, AgentEvent::MessageUpdate { .. })
        {
            out.push(serde_json::to_value(&e).unwrap());
        }
    }
    out
}

/// Records `project` as trusted in `agent_dir`'s `trust.json`, as `--approve` does: its
/// `.pith/settings.json` is read only then.
pub fn trust_project(agent_dir: &std::path::Path, project: &std::path::Path) {
    std::fs::create_dir_all(agent_dir).unwrap();
    let key = pith_actors::trust::project_key(project);
    std::fs::write(
        pith_actors::trust::trust_file(agent_dir),
        serde_json::json!({ key: {"decision": "trusted"} }).to_string(),
    )
    .unwrap();
}

/// The summary pi writes for a split turn with nothing before it (compaction.md §7): the
/// turn prefix's summary after "No prior history.".
pub(crate) fn split_summary(prefix: &str) -> String {
    format!("No prior history.\n\n---\n\n**Turn Context (split turn):**\n\n{prefix}")
}

/// Writes `{"compaction":{"keepRecentTokens":tokens}}` as the agent dir's settings.json.
/// pi 1.6.0 compacts nothing when the whole conversation fits the kept budget (compaction.md
/// §4 step 7), so a test whose tiny session must compact keeps fewer tokens than it holds.
pub(crate) fn keep_recent(tmp: &Path, tokens: u64) {
    std::fs::create_dir_all(tmp.join("agent")).unwrap();
    std::fs::write(
        tmp.join("agent/settings.json"),
        format!(r#"{{"compaction":{{"keepRecentTokens":{tokens}}}}}"#),
    )
    .unwrap();
}
