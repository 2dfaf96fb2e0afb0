//! Replay snapshots of the extension scenarios (a)–(m) of extensions.md §4 step 2: real
//! extension processes (the Python and Node examples and the test extensions under
//! `cli/tests/cli/extensions/`) in a runtime on the faux model with counting ids and a
//! stepping clock. Each snapshot holds the runtime's event sequence, the wire transcript both
//! ways (ids normalised) and the resulting session files. The transcripts are also the golden
//! files of `docs/extension-protocol/transcripts/` (step 3): a scenario fails when its file
//! drifts (`PITH_UPDATE_TRANSCRIPTS=1` rewrites them, as `INSTA_UPDATE` does the snapshots).
//!
//! (m), project trust, is decided by the `pith` binary before a runtime starts; its scenario
//! lives in the cli tests (`extension_trust.rs`, snapshot `ext_replay_m_project_trust`).

use std::collections::VecDeque;
use std::sync::Mutex;

use super::support::*;
use pith_actors::extensions::dialogs::Dialogs;
use pith_actors::extensions::transcript::TranscriptTap;
use pith_actors::runtime::HostedExtensions;
use pith_events::ext::transcript::{normalize_all, to_jsonl};
use pith_events::ext::{ExtensionSpec, Manifest, Scope};
use pith_store::env::SequentialIds;
use serde_json::{Value, json};

fn repo() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// An extension from `file` (relative to the repository) run by `program`, with more manifest
/// fields from `extra`.
fn spec(name: &str, program: &str, file: &str, extra: Value) -> ExtensionSpec {
    let file = repo().join(file).canonicalize().unwrap();
    let mut manifest = json!({"name": name, "command": [program, file]});
    if let (Some(m), Some(extra)) = (manifest.as_object_mut(), extra.as_object()) {
        m.extend(extra.clone());
    }
    let manifest: Manifest = serde_json::from_value(manifest).unwrap();
    ExtensionSpec {
        manifest,
        dir: file.parent().unwrap().to_owned(),
        scope: Scope::Cli,
    }
}

/// What a scenario starts with.
struct Setup {
    /// The faux model's replies.
    script: Value,
    /// The extension processes.
    specs: Vec<ExtensionSpec>,
    /// `rpc` (a UI answers dialogs) or `print` (none).
    mode: &'static str,
    /// Answers the test's UI side gives to dialogs, in order.
    answers: Vec<Value>,
    /// The agent dir's settings.json.
    settings: Option<&'static str>,
}

struct Scenario {
    name: &'static str,
    tmp: tempfile::TempDir,
    rt: RuntimeHandle,
    tap: TranscriptTap,
    provider: Arc<Recording>,
    events: Arc<Mutex<Vec<String>>>,
    answers: Arc<Mutex<VecDeque<Value>>>,
}

impl Scenario {
    async fn start(name: &'static str, setup: Setup) -> Scenario {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
        if let Some(settings) = setup.settings {
            std::fs::write(tmp.path().join("agent/settings.json"), settings).unwrap();
        }
        let env = SessionEnv {
            agent_dir: tmp.path().join("agent"),
            clock: Arc::new(SteppingClock::new(1_764_000_000_000, 1000)),
            ids: Arc::new(SequentialIds::default()),
        };
        let provider = Arc::new(Recording {
            inner: Faux::new(
                serde_json::from_value(setup.script).unwrap(),
                env.clock.clone(),
            ),
            requests: Default::default(),
        });
        let tap = TranscriptTap::default();
        let dialogs = Dialogs::default();
        let mut config = project_config(&env, provider.clone(), Vec::new());
        config.cwd = project.to_string_lossy().into_owned();
        config.tools = ToolChoice::defaults();
        config.system_prompt = Some(Arc::new(
            |_: &Path, _: &[pith_actors::system_prompt::PromptTool]| "BASE".to_owned(),
        ));
        config.hosted = HostedExtensions {
            specs: setup.specs,
            mode: setup.mode.into(),
            has_ui: setup.mode == "rpc",
            dialogs: dialogs.clone(),
            transcript: Some(tap.clone()),
            rediscover: None,
            guard: None,
        };
        let answers = Arc::new(Mutex::new(setup.answers.into_iter().collect()));
        let events = Arc::new(Mutex::new(Vec::new()));
        let rt = Scenario::runtime(&config, FirstSession::New, &events, &dialogs, &answers).await;
        Scenario {
            name,
            tmp,
            rt,
            tap,
            provider,
            events,
            answers,
        }
    }

    /// Starts a runtime whose events a task records (and whose dialogs it answers).
    async fn runtime(
        config: &RuntimeConfig,
        first: FirstSession,
        log: &Arc<Mutex<Vec<String>>>,
        dialogs: &Dialogs,
        answers: &Arc<Mutex<VecDeque<Value>>>,
    ) -> RuntimeHandle {
        let rt = Runtime::start(config.clone(), first).await.unwrap().handle;
        let mut events = rt.subscribe().await.unwrap();
        let (log, dialogs, answers) = (log.clone(), dialogs.clone(), answers.clone());
        tokio::spawn(async move {
            while let Some(e) = events.recv().await {
                if let Some(line) = summary(&e) {
                    log.lock().unwrap().push(line);
                }
                if let RuntimeEvent::Extension(pith_actors::event::ExtensionNotice::UiRequest {
                    id,
                    method,
                    ..
                }) = &e
                    && matches!(method.as_str(), "select" | "confirm" | "input")
                {
                    let answer = answers.lock().unwrap().pop_front();
                    let answer = answer.unwrap_or(json!({"cancelled": true}));
                    log.lock()
                        .unwrap()
                        .push(format!("  (the UI answers {answer})"));
                    dialogs.answer(id, answer);
                }
            }
        });
        rt
    }

    /// A line in the event sequence saying what the test does next.
    fn step(&self, what: &str) {
        self.events.lock().unwrap().push(format!("> {what}"));
    }

    /// Prompts and waits until the run is over.
    async fn prompt(&self, text: &str) {
        self.step(&format!("prompt {text:?}"));
        self.rt.prompt(text).await.unwrap();
        self.rt.wait_idle().await.unwrap();
        self.quiet().await;
    }

    /// Waits until the recorder has seen every event sent so far.
    async fn quiet(&self) {
        let mut last = usize::MAX;
        loop {
            tokio::time::sleep(Duration::from_millis(150)).await;
            let n = self.events.lock().unwrap().len();
            if n == last {
                return;
            }
            last = n;
        }
    }

    async fn command(&self, name: &str, args: &str) -> Option<String> {
        self.step(&format!("command /{name} {args}"));
        let out = self.rt.command(name, args).await.unwrap();
        self.quiet().await;
        self.events
            .lock()
            .unwrap()
            .push(format!("  (/{name} says {out:?})"));
        out
    }

    /// Paths, the version and tool durations: what differs from run to run.
    fn redact(&self, text: &str) -> String {
        let tmp = self.tmp.path().to_string_lossy().into_owned();
        let encoded = tmp.trim_start_matches('/').replace('/', "-");
        let repo = repo()
            .canonicalize()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = super::replay::redact_durations(text);
        text.replace(&tmp, "[TMP]")
            .replace(&encoded, "[TMP]")
            .replace(&repo, "[REPO]")
            .replace(
                &format!(r#""name":"pith","version":"{}""#, env!("CARGO_PKG_VERSION")),
                r#""name":"pith","version":"[VERSION]""#,
            )
    }

    /// The transcript, ids normalised, after the files of the project directory the
    /// extension may have read (so `pith extension check` can set the same world up).
    fn world(&self) -> Vec<pith_events::ext::transcript::TranscriptLine> {
        use pith_events::ext::transcript::TranscriptLine;
        let lines = normalize_all(&self.tap.lines());
        let ext = lines.first().map(|l| l.ext.clone()).unwrap_or_default();
        let mut files: Vec<_> = std::fs::read_dir(self.project())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        files
            .iter()
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                TranscriptLine::file(&ext, &name, &std::fs::read_to_string(p).unwrap())
            })
            .chain(lines)
            .collect()
    }

    /// The session files (`*.jsonl` under the agent dir), each under its relative path.
    fn files(&self) -> String {
        let agent = self.tmp.path().join("agent");
        let mut files = Vec::new();
        let mut dirs = vec![agent.clone()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p)
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    files.push(p)
                }
            }
        }
        files.sort();
        let mut out = String::new();
        for f in files {
            out.push_str(&format!(
                "== {}\n",
                f.strip_prefix(&agent).unwrap().display()
            ));
            out.push_str(&std::fs::read_to_string(&f).unwrap());
        }
        out
    }

    /// Shuts the runtime down, snapshots the three parts and checks the golden transcript.
    async fn finish(self) {
        self.rt.shutdown().await.unwrap();
        self.quiet().await;
        let transcript = self.redact(&to_jsonl(&self.world()));
        let events = self.redact(&self.events.lock().unwrap().join("\n"));
        let text = format!(
            "== events\n{events}\n\n== transcript\n{transcript}\n{}",
            self.redact(&self.files())
        );
        insta::with_settings!({ snapshot_path => "../../../../snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!(format!("ext_replay_{}", self.name), text);
        });
        golden(self.name, &transcript);
    }
}

/// The checked-in transcript of scenario `name` equals `transcript`.
fn golden(name: &str, transcript: &str) {
    let path = repo()
        .join("docs/extension-protocol/transcripts")
        .join(format!("{name}.jsonl"));
    if std::env::var_os("PITH_UPDATE_TRANSCRIPTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, transcript).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        committed,
        transcript,
        "{} drifted from the replay (PITH_UPDATE_TRANSCRIPTS=1 rewrites it)",
        path.display()
    );
}

/// One line of the event sequence; `None` for streaming deltas.
fn summary(e: &RuntimeEvent) -> Option<String> {
    use pith_actors::event::ExtensionNotice;
    match e {
        RuntimeEvent::Agent(a) => {
            let v = serde_json::to_value(&**a).unwrap();
            let kind = v["type"].as_str().unwrap_or_default().to_owned();
            let text = |v: &Value| -> String {
                v["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            Some(match &**a {
                AgentEvent::MessageUpdate { .. } => return None,
                AgentEvent::MessageStart { message } => format!("{kind} {}", message.role()),
                AgentEvent::MessageEnd { message } => {
                    let m = &v["message"];
                    format!("{kind} {} {:?}", message.role(), text(m))
                }
                AgentEvent::ToolExecutionStart { .. } => {
                    format!(
                        "{kind} {} {}",
                        v["toolName"].as_str().unwrap_or(""),
                        v["args"]
                    )
                }
                AgentEvent::ToolExecutionUpdate { .. } => {
                    format!("{kind} {:?}", text(&v["partialResult"]))
                }
                AgentEvent::ToolExecutionEnd { .. } => format!(
                    "{kind} {} isError={} {:?}",
                    v["toolName"].as_str().unwrap_or(""),
                    v["isError"],
                    text(&v["result"])
                ),
                _ => kind,
            })
        }
        RuntimeEvent::SessionStarted { reason, .. } => Some(format!("session_started {reason:?}")),
        RuntimeEvent::Notice(n) => Some(format!("notice {n}")),
        RuntimeEvent::WriteFailed(w) => Some(format!("write_failed {w}")),
        RuntimeEvent::Extension(ExtensionNotice::Error {
            extension,
            event,
            error,
        }) => Some(format!("extension_error {extension} {event}: {error}")),
        RuntimeEvent::Extension(ExtensionNotice::UiRequest { method, params, .. }) => {
            Some(format!("extension_ui_request {method} {params}"))
        }
    }
}

fn tool_call(id: &str, name: &str, args: Value) -> Value {
    json!({"content":[{"type":"toolCall","id":id,"name":name,"arguments":args}]})
}

fn text(t: &str) -> Value {
    json!({"content":[{"type":"text","text":t}]})
}

fn gate() -> ExtensionSpec {
    spec(
        "permission-gate",
        "python3",
        "examples/extensions/python/permission_gate.py",
        json!({}),
    )
}

/// (a) The gate asks whether `rm -rf build` may run; the UI says "No": the call is blocked
/// with pi's error result and the model goes on.
#[tokio::test(flavor = "multi_thread")]
async fn replay_a_gate_blocks_after_the_ui_says_no() {
    let s = Scenario::start(
        "a_gate_ui_no",
        Setup {
            script: json!([
                tool_call("c1", "bash", json!({"command": "rm -rf build"})),
                text("understood")
            ]),
            specs: vec![gate()],
            mode: "rpc",
            answers: vec![json!({"value": "No"})],
            settings: None,
        },
    )
    .await;
    s.prompt("clean up").await;
    assert!(s.answers.lock().unwrap().is_empty(), "the dialog was asked");
    s.finish().await;
}

/// (b) The same gate without a UI (print mode) blocks at once.
#[tokio::test(flavor = "multi_thread")]
async fn replay_b_gate_blocks_without_a_ui() {
    let s = Scenario::start(
        "b_gate_no_ui",
        Setup {
            script: json!([
                tool_call("c1", "bash", json!({"command": "rm -rf build"})),
                text("understood")
            ]),
            specs: vec![gate()],
            mode: "print",
            answers: Vec::new(),
            settings: None,
        },
    )
    .await;
    s.prompt("clean up").await;
    s.finish().await;
}

impl Scenario {
    fn project(&self) -> std::path::PathBuf {
        self.tmp.path().join("project")
    }

    /// The id of the first entry whose line contains every one of `parts`.
    async fn entry(&self, parts: &[&str]) -> String {
        let snap = self.rt.snapshot().await.unwrap();
        snap.entries()
            .iter()
            .find(|e| parts.iter().all(|p| e.raw().contains(p)))
            .unwrap()
            .id()
            .to_owned()
    }
}

impl Scenario {
    /// The session's entries as `user`, `assistant`, `toolResult`, `custom:<type>`, …,
    /// without the model and thinking-level changes.
    async fn kinds(&self) -> Vec<String> {
        let snap = self.rt.snapshot().await.unwrap();
        snap.entries()
            .iter()
            .map(|e| serde_json::from_str::<Value>(e.raw()).unwrap())
            .filter_map(|v| match v["type"].as_str().unwrap() {
                "message" => Some(v["message"]["role"].as_str().unwrap().to_owned()),
                "model_change" | "thinking_level_change" => None,
                t => Some(format!("{t}:{}", v["customType"].as_str().unwrap_or(""))),
            })
            .collect()
    }
}

fn setup(script: Value, specs: Vec<ExtensionSpec>, mode: &'static str) -> Setup {
    Setup {
        script,
        specs,
        mode,
        answers: Vec::new(),
        settings: None,
    }
}

/// (c) `tool_result` patch: the lint example appends its findings to a write's result and
/// marks its details.
#[tokio::test(flavor = "multi_thread")]
async fn replay_c_tool_result_patch() {
    let lint = spec(
        "lint-on-edit",
        "python3",
        "examples/extensions/python/lint_on_edit.py",
        json!({}),
    );
    let s = Scenario::start(
        "c_tool_result_patch",
        setup(
            json!([
                tool_call(
                    "c1",
                    "write",
                    json!({"path": "bad.py", "content": "def f(:\n    pass \n"})
                ),
                text("I will fix it")
            ]),
            vec![lint],
            "print",
        ),
    )
    .await;
    s.prompt("write bad.py").await;
    s.finish().await;
}

fn rules() -> ExtensionSpec {
    spec(
        "rules",
        "node",
        "examples/extensions/node/rules.mjs",
        json!({}),
    )
}

/// (d) `input`: `?? x` is transformed before the run, `/ping` is handled and never reaches
/// the model.
#[tokio::test(flavor = "multi_thread")]
async fn replay_d_input_transform_and_handled() {
    let s = Scenario::start(
        "d_input_transform_handled",
        setup(json!([text("it is a language")]), vec![rules()], "print"),
    )
    .await;
    s.prompt("?? rust").await;
    s.prompt("/ping").await;
    let requests = s.provider.requests.lock().unwrap().len();
    assert_eq!(requests, 1, "the handled prompt asked no model");
    s.finish().await;
}

/// (e) `before_agent_start`: the project's RULES.md is appended to the system prompt the
/// model gets, and a reminder is injected after the prompt.
#[tokio::test(flavor = "multi_thread")]
async fn replay_e_before_agent_start_injection() {
    let s = Scenario::start(
        "e_before_agent_start",
        setup(json!([text("ok")]), vec![rules()], "print"),
    )
    .await;
    std::fs::write(s.project().join("RULES.md"), "Use tabs.\n").unwrap();
    s.prompt("hello").await;
    let request = s.provider.requests.lock().unwrap()[0].clone();
    assert_eq!(
        request.system_prompt.as_deref(),
        Some("BASE\n\nProject rules:\nUse tabs.")
    );
    s.finish().await;
}

/// (f) An extension tool with progress whose state (a running total in the results'
/// details) follows the session through `/resume` and `/tree`.
#[tokio::test(flavor = "multi_thread")]
async fn replay_f_tool_state_survives_resume_and_tree() {
    let tally = spec(
        "tally",
        "python3",
        "cli/tests/cli/extensions/tally.py",
        json!({}),
    );
    let s = Scenario::start(
        "f_tool_state_resume_tree",
        setup(
            json!([
                tool_call("t1", "tally", json!({"n": 2})),
                tool_call("t2", "tally", json!({"n": 3})),
                text("5 it is")
            ]),
            vec![tally],
            "print",
        ),
    )
    .await;
    s.prompt("count").await;
    assert_eq!(s.command("tally", "").await.as_deref(), Some("total 5"));
    let file = s.rt.current_session().await.unwrap().session_file.unwrap();
    s.step("a new session, then resume the first one");
    s.rt.switch(SessionStart::New).await.unwrap();
    s.rt.switch(SessionStart::Resume(file)).await.unwrap();
    s.quiet().await;
    assert_eq!(s.command("tally", "").await.as_deref(), Some("total 5"));
    let first = s.entry(&[r#""toolCallId":"t1""#, "toolResult"]).await;
    s.step("tree to the first result");
    s.rt.navigate_tree(&first, Default::default())
        .await
        .unwrap();
    s.quiet().await;
    assert_eq!(s.command("tally", "").await.as_deref(), Some("total 2"));
    s.finish().await;
}

/// (g) A command that asks `ui/select` and records the choice.
#[tokio::test(flavor = "multi_thread")]
async fn replay_g_command_with_select() {
    let picker = spec(
        "picker",
        "python3",
        "cli/tests/cli/extensions/picker.py",
        json!({}),
    );
    let mut setup = setup(json!([]), vec![picker], "rpc");
    setup.answers = vec![json!({"value": "B"})];
    let s = Scenario::start("g_command_select", setup).await;
    assert_eq!(s.command("pick", "").await.as_deref(), Some("picked B"));
    s.finish().await;
}

fn hooks() -> ExtensionSpec {
    spec(
        "hooks",
        "python3",
        "cli/tests/cli/extensions/hooks.py",
        json!({}),
    )
}

/// (h) `session_before_fork` cancels the fork: no new file, the session goes on.
#[tokio::test(flavor = "multi_thread")]
async fn replay_h_before_fork_cancels() {
    let s = Scenario::start(
        "h_before_fork_cancel",
        setup(json!([text("one"), text("two")]), vec![hooks()], "print"),
    )
    .await;
    s.prompt("first").await;
    let user = s.entry(&[r#""role":"user""#]).await;
    s.step("fork at the first prompt");
    let forked =
        s.rt.switch(SessionStart::Fork { entry_id: user })
            .await
            .unwrap();
    assert_eq!(forked.cancelled.as_deref(), Some("no forks here"));
    s.prompt("second").await;
    s.finish().await;
}

/// (i) The extension supplies the compaction summary.
#[tokio::test(flavor = "multi_thread")]
async fn replay_i_extension_compaction_summary() {
    let mut setup = setup(json!([text("one"), text("two")]), vec![hooks()], "print");
    // Keeping 1 token keeps the last reply: the first turn is summarized.
    setup.settings = Some(r#"{"compaction":{"keepRecentTokens":1}}"#);
    let s = Scenario::start("i_compaction_summary", setup).await;
    s.prompt("first").await;
    s.prompt("second").await;
    s.step("compact");
    s.rt.compact(None).await.unwrap();
    s.quiet().await;
    s.finish().await;
}

fn fault(mode: &str, extra: Value) -> ExtensionSpec {
    let mut extra = extra;
    extra["env"] = json!({"FAULT_MODE": mode});
    spec(
        "fault",
        "python3",
        "cli/tests/cli/extensions/fault.py",
        extra,
    )
}

/// (j) The extension dies in the middle of a tool call: the call ends with an error result,
/// the process is started again and told `session_start {reason: "restart"}`, and the log
/// holds nothing but the run's own entries.
#[tokio::test(flavor = "multi_thread")]
async fn replay_j_crash_mid_tool_call() {
    let s = Scenario::start(
        "j_crash_mid_tool_call",
        setup(
            json!([tool_call("f1", "flaky", json!({"n": 1})), text("it broke")]),
            vec![fault("tool", json!({}))],
            "print",
        ),
    )
    .await;
    s.prompt("try flaky").await;
    // The respawn comes 0.5 s after the crash.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        s.kinds().await,
        ["user", "assistant", "toolResult", "assistant"]
    );
    let restarts = s
        .tap
        .lines()
        .iter()
        .filter(|l| {
            serde_json::to_string(l)
                .unwrap()
                .contains(r#""reason":"restart""#)
        })
        .count();
    assert_eq!(restarts, 1);
    s.finish().await;
}

/// (k) A gate that hangs: its deadline (300 ms here) passes, the call is blocked (gates fail
/// closed) and `extension_error` is reported.
#[tokio::test(flavor = "multi_thread")]
async fn replay_k_hang_blocks_at_the_deadline() {
    let s = Scenario::start(
        "k_hang_deadline",
        setup(
            json!([
                tool_call("r1", "read", json!({"path": "notes.txt"})),
                text("blocked")
            ]),
            vec![fault("hang", json!({"timeouts": {"interceptMs": 300}}))],
            "print",
        ),
    )
    .await;
    std::fs::write(s.project().join("notes.txt"), "secret\n").unwrap();
    s.prompt("read notes").await;
    s.finish().await;
}

/// (l) Three crashes within 60 s: the extension is disabled for the session, which goes on
/// healthy (the next call runs without the gate).
#[tokio::test(flavor = "multi_thread")]
async fn replay_l_three_crashes_disable() {
    let read = |id: &str| tool_call(id, "read", json!({"path": "notes.txt"}));
    let s = Scenario::start(
        "l_three_crashes",
        setup(
            json!([
                read("r1"),
                read("r2"),
                read("r3"),
                text("gave up"),
                read("r4"),
                text("read it")
            ]),
            vec![fault("crash", json!({}))],
            "print",
        ),
    )
    .await;
    std::fs::write(s.project().join("notes.txt"), "hello\n").unwrap();
    s.prompt("read notes").await;
    s.prompt("again").await;
    // Healthy: the call without the gate read the file.
    let snap = s.rt.snapshot().await.unwrap();
    let last_result = snap
        .entries()
        .iter()
        .rev()
        .find(|e| e.raw().contains(r#""role":"toolResult""#))
        .unwrap();
    assert!(last_result.raw().contains(r#""text":"hello\n""#));
    assert!(last_result.raw().contains(r#""isError":false"#));
    s.finish().await;
}
