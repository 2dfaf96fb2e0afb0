//! Extension processes hosted by the runtime itself (spec: extensions.md §1.2): the Node todo
//! example's tool, its command, and its state following the branch through `/tree`.

use super::support::*;
use pith_actors::runtime::HostedExtensions;
use pith_events::ext::{ExtensionSpec, Manifest, Scope};
use serde_json::json;

fn todo_spec() -> ExtensionSpec {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let file = repo.join("examples/extensions/node/todo.mjs");
    let manifest: Manifest = serde_json::from_value(json!({
        "name": "todo", "command": ["node", file]
    }))
    .unwrap();
    ExtensionSpec {
        manifest,
        dir: repo.join("examples/extensions/node"),
        scope: Scope::Cli,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_process_tool_and_command_follow_the_branch_through_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let todo = |id: &str, args: serde_json::Value| json!({"content":[{"type":"toolCall","id":id,"name":"todo","arguments":args}]});
    let replies = json!([
        todo("t1", json!({"action":"add","text":"one"})),
        todo("t2", json!({"action":"add","text":"two"})),
        {"content":[{"type":"text","text":"ok"}]}
    ]);
    let mut config = project_config(
        &env,
        Arc::new(Faux::new(script(&replies.to_string()), env.clock.clone())),
        Vec::new(),
    );
    config.cwd = tmp.path().to_string_lossy().into_owned();
    config.hosted = HostedExtensions {
        rediscover: None,
        specs: vec![todo_spec()],
        mode: "print".into(),
        ..HostedExtensions::default()
    };
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    let mut events = rt.subscribe().await.unwrap();
    let commands = rt.commands().await.unwrap();
    assert_eq!(
        commands.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["todos"]
    );
    rt.prompt("plan").await.unwrap();
    run_names(&mut events).await;
    rt.wait_idle().await.unwrap();
    assert_eq!(
        rt.command("todos", "").await.unwrap().as_deref(),
        Some("1. [ ] one\n2. [ ] two")
    );
    // Back to the first result: the list is what that branch says.
    let snap = rt.snapshot().await.unwrap();
    let first = snap
        .entries()
        .iter()
        .find(|e| e.raw().contains(r#""toolCallId":"t1""#) && e.raw().contains("toolResult"))
        .unwrap()
        .id()
        .to_owned();
    rt.navigate_tree(&first, Default::default()).await.unwrap();
    assert_eq!(
        rt.command("todos", "").await.unwrap().as_deref(),
        Some("1. [ ] one")
    );
    // /reload todo: a fresh process, its state read back from the branch.
    assert_eq!(rt.reload(Some("todo")).await.unwrap(), ["todo"]);
    assert_eq!(rt.reload(Some("nope")).await.unwrap(), Vec::<String>::new());
    assert_eq!(
        rt.command("todos", "").await.unwrap().as_deref(),
        Some("1. [ ] one")
    );
    rt.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn send_message_with_trigger_turn_starts_a_run_when_idle() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let notes =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../cli/tests/cli/extensions/notes.py");
    let manifest: Manifest = serde_json::from_value(json!({
        "name": "notes", "command": ["python3", notes], "env": {"NOTES_TRIGGER": "1"}
    }))
    .unwrap();
    let replies = json!([
        {"content":[{"type":"text","text":"first"}]},
        {"content":[{"type":"text","text":"woken"}]}
    ]);
    let mut config = project_config(
        &env,
        Arc::new(Faux::new(script(&replies.to_string()), env.clock.clone())),
        Vec::new(),
    );
    config.cwd = tmp.path().to_string_lossy().into_owned();
    config.hosted = HostedExtensions {
        rediscover: None,
        specs: vec![ExtensionSpec {
            manifest,
            dir: tmp.path().to_owned(),
            scope: Scope::Cli,
        }],
        mode: "print".into(),
        ..HostedExtensions::default()
    };
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    let mut events = rt.subscribe().await.unwrap();
    rt.prompt("hello").await.unwrap();
    run_names(&mut events).await;
    // The extension's triggerTurn message starts the second run by itself.
    let second = run_names(&mut events).await;
    assert_eq!(
        second[..4],
        ["agent_start", "turn_start", "message_start", "message_end"]
    );
    rt.wait_idle().await.unwrap();
    let kinds: Vec<String> = rt
        .snapshot()
        .await
        .unwrap()
        .entries()
        .iter()
        .map(|e| {
            let v: serde_json::Value = serde_json::from_str(e.raw()).unwrap();
            match v["type"].as_str().unwrap() {
                "message" => v["message"]["role"].as_str().unwrap().to_owned(),
                t => t.to_owned(),
            }
        })
        .filter(|k| !k.ends_with("_change"))
        .collect();
    assert_eq!(kinds, ["user", "assistant", "custom_message", "assistant"]);
    rt.shutdown().await.unwrap();
}

/// The session file with the Rust `PromptCounter` and with its Python twin, ids and
/// timestamps left out: the same.
#[tokio::test(flavor = "multi_thread")]
async fn the_python_prompt_counter_writes_what_the_rust_one_writes() {
    let twin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/extensions/python/prompt_counter.py");
    let mut runs = Vec::new();
    for python in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let env = env(tmp.path());
        let rust: Vec<pith_actors::runtime::ExtensionFactory> = if python {
            Vec::new()
        } else {
            vec![Arc::new(|| Box::new(PromptCounter::default()))]
        };
        let mut config = project_config(
            &env,
            Arc::new(Faux::new(Vec::new(), env.clock.clone())),
            rust,
        );
        config.cwd = tmp.path().to_string_lossy().into_owned();
        if python {
            let manifest: Manifest = serde_json::from_value(
                json!({"name":"prompt-counter","command":["python3", twin]}),
            )
            .unwrap();
            config.hosted = HostedExtensions {
                rediscover: None,
                specs: vec![ExtensionSpec {
                    manifest,
                    dir: tmp.path().to_owned(),
                    scope: Scope::Cli,
                }],
                mode: "print".into(),
                ..HostedExtensions::default()
            };
        }
        let rt = Runtime::start(config.clone(), FirstSession::New)
            .await
            .unwrap()
            .handle;
        let mut events = rt.subscribe().await.unwrap();
        for prompt in ["one", "two"] {
            rt.prompt(prompt).await.unwrap();
            run_names(&mut events).await;
            rt.wait_idle().await.unwrap();
        }
        let count = rt.command("count", "").await.unwrap();
        let file = rt.current_session().await.unwrap().session_file.unwrap();
        rt.shutdown().await.unwrap();
        // Resumed: the count is picked up from the log.
        let rt = Runtime::start(
            config,
            FirstSession::Open {
                path: file.clone(),
                read_only: false,
                at: None,
            },
        )
        .await
        .unwrap()
        .handle;
        let mut events = rt.subscribe().await.unwrap();
        rt.prompt("three").await.unwrap();
        run_names(&mut events).await;
        rt.wait_idle().await.unwrap();
        rt.shutdown().await.unwrap();
        let shape: Vec<serde_json::Value> = std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                match v["type"].as_str().unwrap() {
                    "custom" => json!({"custom": v["customType"], "data": v["data"]}),
                    "message" => json!(v["message"]["role"]),
                    t => json!(t),
                }
            })
            .collect();
        runs.push((count, shape));
    }
    assert_eq!(runs[0], runs[1]);
    assert_eq!(runs[0].0.as_deref(), Some("2 prompt(s) in this session"));
    let counts: Vec<&serde_json::Value> = runs[0].1.iter().filter_map(|v| v.get("data")).collect();
    assert_eq!(
        counts,
        [
            &json!({"count":1}),
            &json!({"count":2}),
            &json!({"count":3})
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_process_cancels_forks_and_switches_and_supplies_the_compaction_summary() {
    let tmp = tempfile::tempdir().unwrap();
    // Keeping 1 token keeps the last reply: the first turn is summarized, the second prompt
    // is a split turn's prefix.
    keep_recent(tmp.path(), 1);
    let env = env(tmp.path());
    let hooks =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../cli/tests/cli/extensions/hooks.py");
    let manifest: Manifest =
        serde_json::from_value(json!({"name":"hooks","command":["python3", hooks]})).unwrap();
    let mut config = project_config(
        &env,
        Arc::new(Faux::new(Vec::new(), env.clock.clone())),
        Vec::new(),
    );
    config.cwd = tmp.path().to_string_lossy().into_owned();
    config.hosted = HostedExtensions {
        rediscover: None,
        specs: vec![ExtensionSpec {
            manifest,
            dir: tmp.path().to_owned(),
            scope: Scope::Cli,
        }],
        mode: "print".into(),
        ..HostedExtensions::default()
    };
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    let mut events = rt.subscribe().await.unwrap();
    for prompt in ["one", "two"] {
        rt.prompt(prompt).await.unwrap();
        run_names(&mut events).await;
        rt.wait_idle().await.unwrap();
    }
    let snap = rt.snapshot().await.unwrap();
    let user = snap
        .entries()
        .iter()
        .find(|e| e.raw().contains(r#""role":"user""#))
        .unwrap()
        .id()
        .to_owned();
    let forked = rt
        .switch(SessionStart::Fork { entry_id: user })
        .await
        .unwrap();
    assert_eq!(forked.cancelled.as_deref(), Some("no forks here"));
    let new = rt.switch(SessionStart::New).await.unwrap();
    assert_eq!(new.cancelled.as_deref(), Some("stay"));
    rt.compact(None).await.unwrap();
    let lines: Vec<serde_json::Value> = rt
        .snapshot()
        .await
        .unwrap()
        .entries()
        .iter()
        .map(|e| serde_json::from_str(e.raw()).unwrap())
        .collect();
    let compaction = lines.iter().find(|v| v["type"] == "compaction").unwrap();
    // The extension sees the first turn's two messages to summarize.
    assert_eq!(compaction["summary"], "EXT summary of 2");
    assert_eq!(compaction["details"], json!({"by": "hooks"}));
    assert_eq!(compaction["fromHook"], true);
    let log = lines.last().unwrap();
    assert_eq!(log["customType"], "hook-log");
    assert_eq!(log["data"], json!({"compact": true}));
    rt.shutdown().await.unwrap();
}
