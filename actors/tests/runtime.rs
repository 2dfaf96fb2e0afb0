//! The runtime end to end on the faux model: event order, persistence order, switches,
//! extensions, crashes.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pith_actors::extension::{NoForkWhileRunning, PromptCounter};
use pith_actors::faux::{Faux, ScriptedReply};
use pith_actors::runtime::{Runtime, RuntimeConfig, RuntimeEvent, RuntimeHandle};
use pith_actors::tool::Toolset;
use pith_events::{AgentEvent, AgentMessage, SessionStart};
use pith_store::env::{RandomIds, SteppingClock};
use pith_store::{OpenMode, Session, SessionEnv, build_session_context};
use tokio::sync::mpsc::UnboundedReceiver;

fn env(tmp: &Path) -> SessionEnv {
    SessionEnv {
        agent_dir: tmp.join("agent"),
        clock: Arc::new(SteppingClock::new(1_764_000_000_000, 1000)),
        ids: Arc::new(RandomIds),
    }
}

fn script(json: &str) -> Vec<ScriptedReply> {
    serde_json::from_str(json).expect("script")
}

/// A runtime in `/project` on `provider`, persisting, with `extensions`.
fn project_config(
    env: &SessionEnv,
    provider: Arc<dyn pith_actors::provider::Provider>,
    extensions: Vec<pith_actors::runtime::ExtensionFactory>,
) -> RuntimeConfig {
    RuntimeConfig {
        env: env.clone(),
        cwd: "/project".into(),
        session_dir: None,
        persist: true,
        provider,
        model: ("faux".into(), "faux-1".into()),
        thinking_level: "off".into(),
        tools: Toolset::none(),
        system_prompt: None,
        extensions,
    }
}

/// The roles of the context at the leaf, as pi's buildSessionContext gives them.
fn context_roles(session: &Session) -> Vec<String> {
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

async fn start(
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
    let session = Session::create("/project", None, &env).expect("session");
    let rt = Runtime::start(config, session).await.expect("runtime");
    let events = rt.subscribe().await.expect("subscribe");
    (rt, events, env)
}

/// Agent events until `agent_end`, as pi names them.
async fn run_names(events: &mut UnboundedReceiver<RuntimeEvent>) -> Vec<String> {
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
            let done = matches!(*e, AgentEvent::AgentEnd { .. });
            if name != "message_update" {
                names.push(name);
            }
            if done {
                return names;
            }
        }
    }
}

fn file_roles(path: &Path) -> Vec<String> {
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

#[tokio::test]
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
        ]
    );
    let file = rt.summary().await.unwrap().session_file.unwrap();
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

#[tokio::test]
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
    let file = rt.summary().await.unwrap().session_file.unwrap();
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

#[tokio::test]
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
    assert_eq!(names.last().map(String::as_str), Some("agent_end"));
    rt.prompt("again").await.expect("idle after abort");
    run_names(&mut events).await;
    let file = rt.summary().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(r#""stopReason":"aborted","errorMessage":"Request was aborted""#));
}

#[tokio::test]
async fn switches_keep_extension_state_in_the_log_and_forks_can_be_vetoed() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, env) = start(tmp.path(), script(r#"[{"content":[{"type":"text","text":"one"}]},{"content":[{"type":"text","text":"slow"}],"delayMs":1500}]"#)).await;
    rt.prompt("first").await.unwrap();
    run_names(&mut events).await;
    let first_file = rt.summary().await.unwrap().session_file.unwrap();
    assert_eq!(
        rt.command("count", "").await.unwrap().as_deref(),
        Some("1 prompt(s) in this session")
    );

    // While the agent runs, the example extension refuses forks.
    rt.prompt("second").await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let user_id = {
        let snap = rt.snapshot().await.unwrap();
        snap.entries
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

#[tokio::test]
async fn a_crashed_child_is_rebuilt_from_the_log_without_losing_or_repeating_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, _env) = start(tmp.path(), Vec::new()).await;
    rt.prompt("before the crash").await.unwrap();
    run_names(&mut events).await;
    let file = rt.summary().await.unwrap().session_file.unwrap();
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

#[tokio::test]
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
    assert_eq!(rt.summary().await.unwrap().cwd, "/elsewhere");
    let new = rt.switch(SessionStart::New).await.unwrap();
    assert_eq!(rt.summary().await.unwrap().cwd, "/elsewhere");
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
        .entries
        .iter()
        .map(|e| e.kind().as_str().to_owned())
        .collect();
    assert_eq!(kinds, ["message", "message", "thinking_level_change"]);
    let _ = &mut events;
    rt.shutdown().await.unwrap();
}

/// Roles and user texts of a session file, in order.
fn transcript(path: &Path) -> Vec<String> {
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

#[tokio::test]
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
        model: ("faux".into(), "faux-1".into()),
        thinking_level: "off".into(),
        tools: Toolset::none(),
        system_prompt: None,
        extensions: Vec::new(),
    };
    let first = Session::create(
        &all_dir.to_string_lossy(),
        Some(&tmp.path().join("sessions")),
        &env,
    )
    .unwrap();
    let rt = Runtime::start(config, first).await.unwrap();
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
    let all_file = rt.summary().await.unwrap().session_file.unwrap();
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

/// Delegates to the faux model and keeps every request, so a test can read what was asked.
struct Recording {
    inner: Faux,
    requests: std::sync::Mutex<Vec<pith_actors::provider::ProviderRequest>>,
}

impl pith_actors::provider::Provider for Recording {
    fn name(&self) -> &str {
        "faux"
    }

    fn context_window(&self, model: &str) -> Option<u64> {
        self.inner.context_window(model)
    }

    fn stream(
        &self,
        request: pith_actors::provider::ProviderRequest,
        abort: tokio::sync::watch::Receiver<bool>,
    ) -> tokio::sync::mpsc::Receiver<pith_actors::provider::ProviderEvent> {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.stream(request, abort)
    }
}

#[tokio::test]
async fn compact_asks_the_model_for_history_and_turn_prefix_and_keeps_the_tail() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    // keepRecentTokens 1: only the last reply is kept, so its turn is split (compaction.md §5).
    std::fs::create_dir_all(&env.agent_dir).unwrap();
    std::fs::write(
        env.agent_dir.join("settings.json"),
        r#"{"compaction":{"keepRecentTokens":1}}"#,
    )
    .unwrap();
    let provider = Arc::new(Recording {
        inner: Faux::new(
            script(
                r#"[{"content":[{"type":"text","text":"r1"},{"type":"toolCall","id":"t","name":"read","arguments":{"path":"src/a.rs"}}]},
                    {"content":[{"type":"text","text":"r1 done"}]},
                    {"content":[{"type":"text","text":"r2"}]},
                    {"content":[{"type":"text","text":"HISTORY"}]},
                    {"content":[{"type":"text","text":"PREFIX"}]}]"#,
            ),
            env.clock.clone(),
        ),
        requests: Default::default(),
    });
    let config = project_config(&env, provider.clone(), Vec::new());
    let session = Session::create("/project", None, &env).unwrap();
    let rt = Runtime::start(config, session).await.unwrap();
    let mut events = rt.subscribe().await.unwrap();
    // Summaries think at the session's level, which follows `/thinking` (compaction.md §7).
    rt.set_thinking_level("high").await.unwrap();
    for prompt in ["one", "two"] {
        rt.prompt(prompt).await.unwrap();
        run_names(&mut events).await;
    }

    let id = rt.compact_now(Some("the parser")).await.unwrap();
    assert_eq!(
        rt.compact_now(None).await.unwrap_err().to_string(),
        "Already compacted"
    );
    let mut compaction_events = Vec::new();
    while compaction_events.len() < 4 {
        let event = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .expect("no stall")
            .expect("open");
        if let RuntimeEvent::Agent(e) = event {
            compaction_events.push(serde_json::to_value(&e).unwrap());
        }
    }
    assert_eq!(
        compaction_events[0],
        serde_json::json!({"type":"compaction_start","reason":"manual"})
    );
    assert_eq!(compaction_events[1]["type"], "compaction_end");
    assert_eq!(
        compaction_events[1]["errorMessage"],
        serde_json::Value::Null
    );
    assert_eq!(
        compaction_events[3],
        serde_json::json!({"type":"compaction_end","reason":"manual","aborted":false,"willRetry":false,"errorMessage":"Compaction failed: Already compacted"})
    );
    let file = rt.summary().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();

    let requests = provider.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 5);
    // Turns use the model's own limit; the history summary gets floor(0.8 × reserveTokens),
    // the turn prefix floor(0.5 × reserveTokens), both at the session's level.
    let limits: Vec<(&str, Option<u64>)> = requests
        .iter()
        .map(|r| (r.thinking_level.as_str(), r.max_tokens))
        .collect();
    assert_eq!(
        limits,
        [
            ("high", None),
            ("high", None),
            ("high", None),
            ("high", Some(13107)),
            ("high", Some(8192))
        ]
    );
    let asked = |r: &pith_actors::provider::ProviderRequest| {
        serde_json::to_value(&r.messages[0]).unwrap()["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (history, prefix) = (asked(&requests[3]), asked(&requests[4]));
    assert!(
        requests[3]
            .system_prompt
            .as_deref()
            .unwrap()
            .contains("summar")
    );
    assert!(
        history.starts_with("<conversation>\n[User]: one\n"),
        "{history}"
    );
    assert!(
        history.contains("[Assistant tool calls]: read(path=\"src/a.rs\")"),
        "{history}"
    );
    assert!(!history.contains("two"), "{history}");
    assert!(
        history.ends_with("Additional focus: the parser"),
        "{history}"
    );
    assert_eq!(
        prefix.lines().take(3).collect::<Vec<_>>(),
        ["<conversation>", "[User]: two", "</conversation>"]
    );

    let back = Session::open(&file, None, None, OpenMode::Inspect, &env).unwrap();
    let entry = back.tree().entries().last().unwrap();
    assert_eq!(entry.id(), id);
    let line: serde_json::Value = serde_json::from_str(entry.raw()).unwrap();
    assert_eq!(
        line["summary"],
        "HISTORY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX\n\n<read-files>\nsrc/a.rs\n</read-files>"
    );
    assert_eq!(
        line["details"],
        serde_json::json!({"readFiles":["src/a.rs"],"modifiedFiles":[]})
    );
    assert_eq!(line["fromHook"], false);
    // The event reports what was written.
    for key in ["summary", "firstKeptEntryId", "tokensBefore", "details"] {
        assert_eq!(compaction_events[1]["result"][key], line[key], "{key}");
    }
    let kept = back
        .tree()
        .entries()
        .iter()
        .find(|e| e.id() == line["firstKeptEntryId"])
        .unwrap();
    assert!(kept.raw().contains(r#""text":"r2""#), "{}", kept.raw());
    let roles = context_roles(&back);
    assert_eq!(roles, ["compactionSummary", "assistant"]);
}

#[tokio::test]
async fn a_session_whose_run_crashed_mid_tool_call_is_sent_paired_and_left_as_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    // What a crash between a tool call and its result leaves, plus a stray result.
    let mut seed = Session::create("/project", None, &env).unwrap();
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
    let session = Session::open(&file, None, None, OpenMode::Write, &env).unwrap();
    let rt = Runtime::start(config, session).await.unwrap();
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

#[tokio::test]
async fn a_reply_over_the_threshold_compacts_once_and_a_prompt_sent_meanwhile_waits() {
    let tmp = tempfile::tempdir().unwrap();
    // 120 000 tokens in a 128 000 window with 16 384 reserved: over the threshold.
    let usage = r#"{"input":119000,"output":1000,"cacheRead":0,"cacheWrite":0,"totalTokens":120000,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
    let (rt, mut events, env) = start(
        tmp.path(),
        script(&format!(
            r#"[{{"content":[{{"type":"text","text":"big"}}],"usage":{usage}}},
                {{"content":[{{"type":"text","text":"AUTO SUMMARY"}}],"delayMs":400}},
                {{"content":[{{"type":"text","text":"after"}}]}}]"#
        )),
    )
    .await;
    rt.prompt("one").await.unwrap();
    let first = run_names(&mut events).await;
    assert_eq!(first.last().unwrap(), "agent_end");
    // The summary takes 400 ms; this prompt arrives during it and must wait, not fail.
    rt.prompt("two").await.unwrap();
    let second = run_names(&mut events).await;
    assert_eq!(
        second[..4],
        [
            "compaction_start",
            "compaction_end",
            "agent_start",
            "turn_start"
        ]
    );
    assert!(
        !second.iter().skip(2).any(|n| n.starts_with("compaction")),
        "{second:?}"
    );
    let file = rt.summary().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();

    assert_eq!(
        file_roles(&file),
        [
            "model_change",
            "thinking_level_change",
            "custom",
            "user",
            "assistant",
            "compaction",
            "custom",
            "user",
            "assistant"
        ]
    );
    let back = Session::open(&file, None, None, OpenMode::Inspect, &env).unwrap();
    let compaction = back
        .tree()
        .entries()
        .iter()
        .find(|e| e.kind() == &pith_events::EntryType::Compaction)
        .unwrap();
    let line: serde_json::Value = serde_json::from_str(compaction.raw()).unwrap();
    assert_eq!(line["summary"], "AUTO SUMMARY");
    // estimateContextTokens: the reply's usage, nothing after it.
    assert_eq!(line["tokensBefore"], 120000);
    // The good answer is not sent again: two replies, two prompts.
    let ctx = build_session_context(back.tree(), back.tree().leaf());
    let texts: Vec<String> = ctx.messages.iter().map(|m| m.to_json()).collect();
    assert!(texts[0].contains("AUTO SUMMARY"), "{texts:?}");
    assert_eq!(
        texts
            .iter()
            .filter(|t| t.contains(r#""role":"assistant""#))
            .count(),
        2
    );
}

async fn start_recording(
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
    let session = Session::create("/project", None, &env).unwrap();
    let rt = Runtime::start(config, session).await.unwrap();
    let events = rt.subscribe().await.unwrap();
    (rt, events, env, provider)
}

/// Agent events as JSON until the `n`-th `agent_end`, without streaming updates.
async fn agent_events(
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

fn types(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

const OVERFLOW: &str =
    r#"{"content":[],"errorMessage":"prompt is too long: 213462 tokens > 200000 maximum"}"#;

#[tokio::test]
async fn an_overflow_compacts_and_retries_once_without_the_failed_reply() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, env, provider) = start_recording(
        tmp.path(),
        &format!(r#"[{OVERFLOW},{{"content":[{{"type":"text","text":"OVERFLOW SUMMARY"}}]}},{{"content":[{{"type":"text","text":"retried fine"}}]}}]"#),
    )
    .await;
    rt.prompt("hi").await.unwrap();
    let seen = agent_events(&mut events, 2).await;
    let file = rt.summary().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();

    let t = types(&seen);
    let end = t.iter().position(|x| x == "agent_end").unwrap();
    assert_eq!(
        t[end..end + 4],
        [
            "agent_end",
            "compaction_start",
            "compaction_end",
            "agent_start"
        ]
    );
    assert_eq!(seen[end + 1]["reason"], "overflow");
    assert_eq!(seen[end + 2]["willRetry"], true);
    assert_eq!(seen[end + 2]["result"]["summary"], "OVERFLOW SUMMARY");
    // The retry is a new run without a new prompt.
    assert_eq!(
        t.iter().filter(|x| *x == "message_start").count(),
        3,
        "{t:?}"
    );

    let requests = provider.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 3);
    let retry: Vec<serde_json::Value> = requests[2]
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    assert_eq!(retry.len(), 2, "{retry:?}");
    assert!(
        retry[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("OVERFLOW SUMMARY")
    );
    assert_eq!(retry[1]["content"][0]["text"], "hi");

    // The failed reply stays in the log; the retried one is the compaction's child.
    assert_eq!(
        file_roles(&file),
        [
            "model_change",
            "thinking_level_change",
            "user",
            "assistant",
            "compaction",
            "assistant"
        ]
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[6]["parentId"], lines[5]["id"]);
    let back = Session::open(&file, None, None, OpenMode::Inspect, &env).unwrap();
    assert_eq!(
        build_session_context(back.tree(), back.tree().leaf())
            .messages
            .len(),
        4
    );
}

#[tokio::test]
async fn a_second_overflow_stops_with_pis_message() {
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, _env, provider) = start_recording(
        tmp.path(),
        &format!(r#"[{OVERFLOW},{{"content":[{{"type":"text","text":"S"}}]}},{OVERFLOW}]"#),
    )
    .await;
    rt.prompt("hi").await.unwrap();
    let seen = agent_events(&mut events, 2).await;
    // The give-up comes after the second agent_end; wait for it.
    let give_up = loop {
        let event = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .unwrap()
            .unwrap();
        if let RuntimeEvent::Agent(e) = event {
            break serde_json::to_value(&e).unwrap();
        }
    };
    let file = rt.summary().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();
    assert_eq!(
        types(&seen)
            .iter()
            .filter(|x| x.starts_with("compaction"))
            .count(),
        2
    );
    assert_eq!(
        give_up,
        serde_json::json!({"type":"compaction_end","reason":"overflow","aborted":false,"willRetry":false,
            "errorMessage":"Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model."})
    );
    assert_eq!(provider.requests.lock().unwrap().len(), 3);
    assert_eq!(
        file_roles(&file)
            .iter()
            .filter(|r| *r == "compaction")
            .count(),
        1
    );
}

#[tokio::test]
async fn tree_navigation_summarizes_the_branch_left_behind_and_returns_the_prompt_text() {
    use pith_actors::compactor::{Navigated, TreeOptions};
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
    rt.set_thinking_level("high").await.unwrap();
    for prompt in ["one", "two"] {
        rt.prompt(prompt).await.unwrap();
        run_names(&mut events).await;
    }
    let snap = rt.snapshot().await.unwrap();
    let id_of = |needle: &str| {
        snap.entries
            .iter()
            .find(|e| e.raw().contains(needle))
            .unwrap()
            .id()
            .to_owned()
    };
    let (two, r1, leaf) = (
        id_of(r#""text":"two""#),
        id_of(r#""text":"r1""#),
        snap.entries.last().unwrap().id().to_owned(),
    );

    // No-op and unknown targets write nothing.
    let same = rt
        .navigate_tree(&leaf, TreeOptions::default())
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
        rt.navigate_tree("nope", TreeOptions::default())
            .await
            .unwrap_err()
            .to_string(),
        "Entry nope not found"
    );

    let moved = rt
        .navigate_tree(
            &two,
            TreeOptions {
                summarize: true,
                custom_instructions: Some("the write".into()),
                label: Some("tried b.rs".into()),
                ..TreeOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(moved.editor_text.as_deref(), Some("two"));
    rt.prompt("two, differently").await.unwrap();
    run_names(&mut events).await;
    let file = rt.summary().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();

    let branch_request = provider.requests.lock().unwrap()[3].clone();
    assert_eq!(
        (
            branch_request.thinking_level.as_str(),
            branch_request.max_tokens
        ),
        ("off", Some(2048))
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
    assert_eq!(summary["fromId"].as_str(), Some(r1.as_str()));
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

#[tokio::test]
async fn tree_navigation_without_a_summary_only_moves_the_leaf() {
    use pith_actors::compactor::TreeOptions;
    let tmp = tempfile::tempdir().unwrap();
    let (rt, mut events, _env, provider) = start_recording(tmp.path(), "[]").await;
    rt.prompt("first").await.unwrap();
    run_names(&mut events).await;
    let snap = rt.snapshot().await.unwrap();
    let first = snap
        .entries
        .iter()
        .find(|e| e.raw().contains(r#""text":"first""#))
        .unwrap();
    let parent = snap
        .entries
        .iter()
        .find(|e| e.raw().contains("thinking_level_change"))
        .unwrap()
        .id()
        .to_owned();
    let count = snap.entries.len();
    // The first prompt's parent is the thinking level entry pi writes at the start, so the
    // leaf goes there, not to the root (tree-and-context.md §9).
    let moved = rt
        .navigate_tree(first.id(), TreeOptions::default())
        .await
        .unwrap();
    assert_eq!(
        (moved.leaf_id.as_deref(), moved.editor_text.as_deref()),
        (Some(parent.as_str()), Some("first"))
    );
    assert_eq!(moved.summary_entry_id, None);
    let after = rt.snapshot().await.unwrap();
    assert_eq!(after.entries.len(), count);
    assert_eq!(rt.context().await.unwrap().messages.len(), 0);
    rt.shutdown().await.unwrap();
    assert_eq!(provider.requests.lock().unwrap().len(), 1);
}

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

#[tokio::test]
async fn extensions_cancel_or_supply_compaction_and_branch_summaries() {
    use pith_actors::compactor::TreeOptions;
    let tmp = tempfile::tempdir().unwrap();
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
    let rt = Runtime::start(config, Session::create("/project", None, &env).unwrap())
        .await
        .unwrap();
    let mut events = rt.subscribe().await.unwrap();
    for prompt in ["one", "two"] {
        rt.prompt(prompt).await.unwrap();
        run_names(&mut events).await;
    }
    assert_eq!(
        rt.compact_now(Some("cancel"))
            .await
            .unwrap_err()
            .to_string(),
        "Compaction cancelled"
    );
    let compaction = rt.compact_now(None).await.unwrap();
    let snap = rt.snapshot().await.unwrap();
    let r1 = snap
        .entries
        .iter()
        .find(|e| e.raw().contains(r#""text":"r1""#))
        .unwrap()
        .id()
        .to_owned();
    let leaf = snap.entries.last().unwrap().id().to_owned();
    let cancelled = rt
        .navigate_tree(
            &r1,
            TreeOptions {
                summarize: true,
                custom_instructions: Some("cancel".into()),
                ..TreeOptions::default()
            },
        )
        .await
        .unwrap();
    assert!(cancelled.cancelled);
    assert_eq!(
        rt.snapshot().await.unwrap().entries.last().unwrap().id(),
        leaf
    );
    let moved = rt
        .navigate_tree(
            &r1,
            TreeOptions {
                summarize: true,
                ..TreeOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(moved.from_extension, Some(true));
    let file = rt.summary().await.unwrap().session_file.unwrap();
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
    // Everything fits in keepRecentTokens, so nothing is summarized (compaction.md §4).
    assert_eq!(
        (&c["summary"], &c["details"], &c["fromHook"]),
        (
            &serde_json::json!("EXT manual: 0 messages"),
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

const USAGE_110K: &str = r#"{"input":110000,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":110000,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;

#[tokio::test]
async fn an_error_reply_compacts_when_the_estimate_crosses_the_threshold() {
    let tmp = tempfile::tempdir().unwrap();
    // 110 000 from the last usage + 2 000 estimated for the long prompt > 128 000 − 16 384.
    let (rt, mut events, _env, provider) = start_recording(
        tmp.path(),
        &format!(
            r#"[{{"content":[{{"type":"text","text":"one"}}],"usage":{USAGE_110K}}},
                {{"content":[],"errorMessage":"400 invalid_request_error: unsupported parameter"}},
                {{"content":[{{"type":"text","text":"SUMMARY"}}]}}]"#
        ),
    )
    .await;
    rt.prompt("first").await.unwrap();
    rt.wait_idle().await.unwrap();
    rt.prompt(&"x".repeat(8000)).await.unwrap();
    rt.wait_idle().await.unwrap();
    let seen = agent_events(&mut events, 2).await;
    let mut rest = Vec::new();
    while let Ok(RuntimeEvent::Agent(e)) = events.try_recv() {
        rest.push(serde_json::to_value(&e).unwrap());
    }
    rt.shutdown().await.unwrap();
    assert!(
        !types(&seen).iter().any(|t| t.starts_with("compaction")),
        "{seen:?}"
    );
    assert_eq!(types(&rest), ["compaction_start", "compaction_end"]);
    assert_eq!(rest[0]["reason"], "threshold");
    assert_eq!(rest[1]["result"]["tokensBefore"], 112_000);
    assert_eq!(provider.requests.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn a_session_resumed_over_the_threshold_is_compacted_before_the_next_prompt() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let mut seed = Session::create("/project", None, &env).unwrap();
    seed.append_message(AgentMessage::user_text("hi", 1))
        .unwrap();
    seed.append_message(serde_json::from_str(&format!(r#"{{"role":"assistant","content":[{{"type":"text","text":"big"}}],"api":"faux","provider":"faux","model":"faux-1","usage":{},"stopReason":"stop","timestamp":2}}"#, USAGE_110K.replace("110000", "120000"))).unwrap()).unwrap();
    let file = seed.session_file().unwrap().to_owned();
    drop(seed);
    let config = project_config(
        &env,
        Arc::new(Faux::new(
            script(
                r#"[{"content":[{"type":"text","text":"SUMMARY"}],"delayMs":300},{"content":[{"type":"text","text":"next answer"}]}]"#,
            ),
            env.clock.clone(),
        )),
        Vec::new(),
    );
    let rt = Runtime::start(
        config,
        Session::open(&file, None, None, OpenMode::Write, &env).unwrap(),
    )
    .await
    .unwrap();
    let mut events = rt.subscribe().await.unwrap();
    rt.prompt("next").await.unwrap();
    // Sent while the summary (300 ms) is being written: it waits instead of being refused.
    tokio::time::sleep(Duration::from_millis(100)).await;
    rt.prompt("and then").await.unwrap();
    rt.wait_idle().await.unwrap();
    let seen = agent_events(&mut events, 2).await;
    rt.shutdown().await.unwrap();
    assert_eq!(
        types(&seen)[..3],
        ["compaction_start", "compaction_end", "agent_start"]
    );
    // The runtime records the thinking level the seed did not have, then compacts.
    assert_eq!(
        file_roles(&file),
        [
            "user",
            "assistant",
            "thinking_level_change",
            "compaction",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
}

/// A runtime like [`start_recording`]'s with `settings` as the agent dir's settings.json.
async fn start_with_settings(
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
fn drain_agent_events(events: &mut UnboundedReceiver<RuntimeEvent>) -> Vec<serde_json::Value> {
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

#[tokio::test]
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
    // The file keeps both failures, each reply a child of the previous (spec §4).
    assert_eq!(
        context_roles(&session),
        ["user", "assistant", "assistant", "assistant"]
    );
    // The failed replies are never sent back to the model.
    let requests = provider.requests.lock().unwrap();
    let sent: Vec<usize> = requests.iter().map(|r| r.messages.len()).collect();
    assert_eq!(sent, [1, 1, 1]);
}

#[tokio::test]
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

#[tokio::test]
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

#[tokio::test]
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
    rt.set_model(second.clone(), ("other".into(), "model-2".into()))
        .await
        .unwrap();
    rt.set_thinking_level("off").await.unwrap(); // unchanged: nothing recorded
    rt.set_thinking_level("high").await.unwrap();
    assert_eq!(
        rt.set_session_name("  ").await.unwrap_err().to_string(),
        "Session name cannot be empty"
    );
    rt.set_session_name("  my work ").await.unwrap();
    rt.prompt("q2").await.unwrap();
    rt.wait_idle().await.unwrap();
    let snapshot = rt.snapshot().await.unwrap();
    let first_reply = snapshot
        .entries
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
    assert_eq!(asked[0].thinking_level, "high");
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
        .entries
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

#[tokio::test]
async fn a_reply_in_the_same_millisecond_as_a_compaction_still_counts() {
    let tmp = tempfile::tempdir().unwrap();
    // Every timestamp is the same millisecond: pi's `<=` would call the second reply stale.
    let env = SessionEnv {
        agent_dir: tmp.path().join("agent"),
        clock: Arc::new(SteppingClock::new(1_764_000_000_000, 0)),
        ids: Arc::new(RandomIds),
    };
    std::fs::create_dir_all(&env.agent_dir).unwrap();
    std::fs::write(
        env.agent_dir.join("settings.json"),
        r#"{"compaction":{"keepRecentTokens":1}}"#,
    )
    .unwrap();
    let big = r#"{"input":120000,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":120000,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
    let provider = Arc::new(Recording {
        inner: Faux::new(
            script(&format!(
                r#"[{{"content":[{{"type":"text","text":"r1"}}],"usage":{big}}},
                    {{"content":[{{"type":"text","text":"S1"}}]}},
                    {{"content":[{{"type":"text","text":"r2"}}],"usage":{big}}},
                    {{"content":[{{"type":"text","text":"S2"}}]}}]"#
            )),
            env.clock.clone(),
        ),
        requests: Default::default(),
    });
    let config = project_config(&env, provider.clone(), Vec::new());
    let session = Session::create("/project", None, &env).unwrap();
    let rt = Runtime::start(config, session).await.unwrap();
    for prompt in ["one", "two"] {
        rt.prompt(prompt).await.unwrap();
        rt.wait_idle().await.unwrap();
    }
    let snapshot = rt.snapshot().await.unwrap();
    rt.shutdown().await.unwrap();
    let compactions: Vec<String> = snapshot
        .entries
        .iter()
        .filter(|e| e.kind() == &pith_events::EntryType::Compaction)
        .map(|e| {
            serde_json::from_str::<serde_json::Value>(e.raw()).unwrap()["summary"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(compactions.len(), 2, "{compactions:?}");
    assert!(compactions[1].starts_with("S2"), "{compactions:?}");
}
