//! Deterministic replays: a scripted faux session run through the whole runtime with
//! counting ids and a stepping clock. The session file and the event sequence are snapshots;
//! the projection's context must equal `build_session_context` on the resulting log.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pith_actors::extension::{NoForkWhileRunning, PromptCounter};
use pith_actors::projection::fold;
use pith_actors::runtime::{
    FirstSession, Runtime, RuntimeConfig, RuntimeEvent, RuntimeHandle, ToolChoice,
};
use pith_events::{AgentEvent, SessionStart};
use pith_llm::faux::Faux;
use pith_store::env::{SequentialIds, SteppingClock};
use pith_store::{SessionEnv, SessionTree};
use tokio::sync::mpsc::UnboundedReceiver;

struct Replay {
    rt: RuntimeHandle,
    events: UnboundedReceiver<RuntimeEvent>,
    log: Vec<String>,
    agent_dir: std::path::PathBuf,
}

impl Replay {
    async fn new(tmp: &Path, script: &str) -> Replay {
        Replay::with_extensions(
            tmp,
            script,
            vec![
                Arc::new(|| Box::new(PromptCounter::default())),
                Arc::new(|| Box::new(NoForkWhileRunning::default())),
            ],
        )
        .await
    }

    async fn with_extensions(
        tmp: &Path,
        script: &str,
        extensions: Vec<pith_actors::runtime::ExtensionFactory>,
    ) -> Replay {
        Replay::start(tmp, script, extensions, ToolChoice::none(), "/replay").await
    }

    /// pi's built-in tools working in `cwd` (a real directory under `tmp`).
    async fn with_tools(tmp: &Path, script: &str, cwd: &Path) -> Replay {
        let cwd = cwd.to_string_lossy().into_owned();
        Replay::start(tmp, script, Vec::new(), ToolChoice::defaults(), &cwd).await
    }

    async fn start(
        tmp: &Path,
        script: &str,
        extensions: Vec<pith_actors::runtime::ExtensionFactory>,
        tools: ToolChoice,
        cwd: &str,
    ) -> Replay {
        let env = SessionEnv {
            agent_dir: tmp.join("agent"),
            clock: Arc::new(SteppingClock::new(1_764_000_000_000, 1000)),
            ids: Arc::new(SequentialIds::default()),
        };
        let config = RuntimeConfig {
            env: env.clone(),
            cwd: cwd.into(),
            session_dir: None,
            persist: true,
            provider: Arc::new(Faux::new(
                serde_json::from_str(script).unwrap(),
                env.clock.clone(),
            )),
            model: pith_events::ModelRef::new("faux", "faux-1"),
            thinking_level: pith_events::ThinkingLevel::Off,
            selection: Default::default(),
            session_name: None,
            tools,
            system_prompt: None,
            extensions,
            hosted: Default::default(),
            resources: Default::default(),
        };
        let rt = Runtime::start(config, FirstSession::New)
            .await
            .unwrap()
            .handle;
        let events = rt.subscribe().await.unwrap();
        Replay {
            rt,
            events,
            log: Vec::new(),
            agent_dir: env.agent_dir,
        }
    }

    /// Records events until `agent_end` (updates are summarised by their kind).
    async fn until_idle(&mut self) {
        self.until("agent_end").await;
    }

    /// Records events until one whose summary line is `stop`.
    async fn until(&mut self, stop: &str) {
        loop {
            let e = tokio::time::timeout(Duration::from_secs(20), self.events.recv())
                .await
                .unwrap()
                .unwrap();
            let RuntimeEvent::Agent(e) = e else { continue };
            let v = serde_json::to_value(&*e).unwrap();
            let line = match &*e {
                AgentEvent::MessageUpdate { update, .. } => {
                    format!("message_update {:?}", update.kind)
                }
                AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
                    format!("{} {}", v["type"].as_str().unwrap(), message.role())
                }
                _ => v["type"].as_str().unwrap().to_owned(),
            };
            let done = line == stop;
            // How a command's output is split into progress updates depends on the pipe.
            if line == "tool_execution_update"
                && self
                    .log
                    .last()
                    .is_some_and(|l| l == "tool_execution_update")
            {
                continue;
            }
            self.log.push(line);
            if done {
                return;
            }
        }
    }

    /// The projection equals the full fold of the writer's log.
    async fn check_projection(&self) {
        let snap = self.rt.snapshot().await.unwrap();
        let (mut tree, _) = SessionTree::new(snap.entries().to_vec());
        tree.set_leaf(snap.leaf());
        assert_eq!(self.rt.context().await.unwrap(), fold(&tree, tree.leaf()));
    }

    /// Every session file under the agent dir, with its path relative to the agent dir.
    fn files(&self) -> String {
        let mut out = String::new();
        let mut dirs = vec![self.agent_dir.clone()];
        let mut files = Vec::new();
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p)
                } else {
                    files.push(p)
                }
            }
        }
        files.sort();
        for f in files {
            out.push_str(&format!(
                "== {}\n",
                f.strip_prefix(&self.agent_dir).unwrap().display()
            ));
            out.push_str(&std::fs::read_to_string(&f).unwrap());
        }
        // The temporary directory differs per run (it shows up in parentSession).
        let tmp = self
            .agent_dir
            .parent()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // …and, encoded, in the session directory of a cwd under it.
        let encoded = tmp.trim_start_matches('/').replace('/', "-");
        redact_durations(&out.replace(&tmp, "[TMP]").replace(&encoded, "[TMP]"))
    }
}

/// `"durationMs":<n>` → `"durationMs":"[MS]"`: how long a real tool took varies run to run.
pub(super) fn redact_durations(text: &str) -> String {
    const KEY: &str = "\"durationMs\":";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(KEY) {
        out.push_str(&rest[..at + KEY.len()]);
        rest = rest[at + KEY.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push_str("\"[MS]\"");
    }
    out.push_str(rest);
    out
}

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({ snapshot_path => "../../../../snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, text);
    });
}

#[tokio::test(start_paused = true)]
async fn replay_tool_call_steering_and_follow_up() {
    let tmp = tempfile::tempdir().unwrap();
    // The second reply waits a second before streaming: the window in which the test queues
    // its steering and follow-up (faux-model.md: delayMs opens race windows in tests).
    let mut r = Replay::new(
        tmp.path(),
        r#"[{"content":[{"type":"thinking","thinking":"look first"},{"type":"toolCall","id":"t1","name":"read","arguments":{"path":"a.txt"}}]},
            {"content":[{"type":"toolCall","id":"t2","name":"ls","arguments":{}}],"delayMs":1000},
            {"content":[{"type":"text","text":"steered"}]},
            {"content":[{"type":"text","text":"followed up"}]}]"#,
    )
    .await;
    r.rt.prompt("read a.txt").await.unwrap();
    r.until("turn_end").await;
    r.until("turn_start").await;
    r.rt.steer("also check b.txt");
    r.rt.follow_up("summarise");
    r.until_idle().await;
    r.check_projection().await;
    r.rt.shutdown().await.unwrap();
    snapshot(
        "replay_tool_call_steering_and_follow_up__events",
        &r.log.join("\n"),
    );
    snapshot("replay_tool_call_steering_and_follow_up__files", &r.files());
}

#[tokio::test(start_paused = true)]
async fn replay_compaction_fork_and_clone() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = Replay::new(tmp.path(), r#"[{"content":[{"type":"text","text":"one"}]},{"content":[{"type":"text","text":"two"}]},{"content":[{"type":"text","text":"three"}]}]"#).await;
    r.rt.prompt("first").await.unwrap();
    r.until_idle().await;
    r.rt.compact_with("The user said first; the model said one.")
        .await
        .unwrap();
    r.check_projection().await;
    r.rt.prompt("second").await.unwrap();
    r.until_idle().await;
    r.check_projection().await;
    let snap = r.rt.snapshot().await.unwrap();
    let second = snap
        .entries()
        .iter()
        .find(|e| e.raw().contains("\"text\":\"second\""))
        .unwrap()
        .id()
        .to_owned();
    let fork =
        r.rt.switch(SessionStart::Fork { entry_id: second })
            .await
            .unwrap();
    assert_eq!(fork.selected_text.as_deref(), Some("second"));
    r.check_projection().await;
    r.rt.prompt("second, again").await.unwrap();
    r.until_idle().await;
    r.rt.switch(SessionStart::Clone).await.unwrap();
    r.check_projection().await;
    r.rt.shutdown().await.unwrap();
    snapshot("replay_compaction_fork_and_clone__files", &r.files());
}

#[tokio::test(start_paused = true)]
async fn replay_threshold_then_manual_compaction() {
    let tmp = tempfile::tempdir().unwrap();
    // A small tail so both compactions cut (compaction.md §5).
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    std::fs::write(
        tmp.path().join("agent/settings.json"),
        r#"{"compaction":{"keepRecentTokens":8}}"#,
    )
    .unwrap();
    let big = r#"{"input":119000,"output":1000,"cacheRead":0,"cacheWrite":0,"totalTokens":120000,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
    let mut r = Replay::new(
        tmp.path(),
        &format!(
            r#"[{{"content":[{{"type":"toolCall","id":"t1","name":"read","arguments":{{"path":"a.rs"}}}}]}},
                {{"content":[{{"type":"toolCall","id":"t2","name":"edit","arguments":{{"path":"a.rs"}}}}]}},
                {{"content":[{{"type":"text","text":"edited a.rs as asked"}}],"usage":{big}}},
                {{"content":[{{"type":"text","text":"AUTO SUMMARY"}}],"delayMs":300}},
                {{"content":[{{"type":"text","text":"the next answer"}}]}},
                {{"content":[{{"type":"text","text":"MANUAL SUMMARY"}}]}}]"#
        ),
    )
    .await;
    r.rt.prompt("edit a.rs").await.unwrap();
    r.until_idle().await;
    // Sent while the threshold compaction summarizes: it waits for it.
    // Long enough (11 tokens) to fill the kept budget alone: the manual compaction cuts at it
    // and summarizes what the first one kept (pi 1.6.0 refuses when nothing lies before the cut).
    r.rt.prompt("next, tell me which files changed")
        .await
        .unwrap();
    r.until_idle().await;
    r.check_projection().await;
    r.rt.compact(Some("file names")).await.unwrap();
    r.until("compaction_end").await;
    r.check_projection().await;
    r.rt.shutdown().await.unwrap();
    snapshot(
        "replay_threshold_then_manual_compaction__events",
        &r.log.join("\n"),
    );
    snapshot("replay_threshold_then_manual_compaction__files", &r.files());
}

#[tokio::test(start_paused = true)]
async fn replay_tree_with_and_without_a_summary() {
    use pith_actors::tree_navigator::NavigateOptions;
    let tmp = tempfile::tempdir().unwrap();
    let mut r = Replay::new(
        tmp.path(),
        r#"[{"content":[{"type":"text","text":"one"}]},
            {"content":[{"type":"toolCall","id":"e","name":"edit","arguments":{"path":"x.rs"}}]},
            {"content":[{"type":"text","text":"edited"}]},
            {"content":[{"type":"text","text":"THE BRANCH"}]},
            {"content":[{"type":"text","text":"two again"}]}]"#,
    )
    .await;
    for prompt in ["first", "second"] {
        r.rt.prompt(prompt).await.unwrap();
        r.until_idle().await;
    }
    let id_of = |snap: &pith_actors::writer::Snapshot, needle: &str| {
        snap.entries()
            .iter()
            .find(|e| e.raw().contains(needle))
            .unwrap()
            .id()
            .to_owned()
    };
    let snap = r.rt.snapshot().await.unwrap();
    let (second, one) = (
        id_of(&snap, r#""text":"second""#),
        id_of(&snap, r#""text":"one""#),
    );
    // Back to the second prompt with a summary of what followed it, then ask differently.
    let moved =
        r.rt.navigate_tree(
            &second,
            NavigateOptions {
                summarize: true,
                ..NavigateOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(moved.editor_text.as_deref(), Some("second"));
    r.check_projection().await;
    r.rt.prompt("second, again").await.unwrap();
    r.until_idle().await;
    // Then back to the first answer without a summary, labelling it.
    r.rt.navigate_tree(
        &one,
        NavigateOptions {
            label: Some("start".into()),
            ..NavigateOptions::default()
        },
    )
    .await
    .unwrap();
    r.check_projection().await;
    r.rt.shutdown().await.unwrap();
    snapshot("replay_tree_with_and_without_a_summary__files", &r.files());
}

#[tokio::test(start_paused = true)]
async fn replay_overflow_retry_then_double_overflow() {
    let tmp = tempfile::tempdir().unwrap();
    // pi 1.6.0 recovers from an overflow only when something lies before the kept prompt: a
    // first turn, and a budget of 1 token; the overflowed prompt becomes a split turn's prefix
    // (compaction.md §5.1), so each compaction asks for two summaries.
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    std::fs::write(
        tmp.path().join("agent/settings.json"),
        r#"{"compaction":{"keepRecentTokens":1}}"#,
    )
    .unwrap();
    let overflow =
        r#"{"content":[],"errorMessage":"prompt is too long: 213462 tokens > 200000 maximum"}"#;
    let mut r = Replay::new(
        tmp.path(),
        &format!(
            r#"[{{"content":[{{"type":"text","text":"zero done"}}]}},
                {overflow},{{"content":[{{"type":"text","text":"SUMMARY ONE"}}]}},{{"content":[{{"type":"text","text":"PREFIX ONE"}}]}},{{"content":[{{"type":"text","text":"retried"}}]}},
                {overflow},{{"content":[{{"type":"text","text":"SUMMARY TWO"}}]}},{{"content":[{{"type":"text","text":"PREFIX TWO"}}]}},{overflow}]"#
        ),
    )
    .await;
    r.rt.prompt("zero").await.unwrap();
    r.rt.wait_idle().await.unwrap();
    r.until("agent_end").await;
    r.rt.prompt("first").await.unwrap();
    r.rt.wait_idle().await.unwrap();
    r.rt.prompt("second").await.unwrap();
    r.rt.wait_idle().await.unwrap();
    // Everything was emitted by now: overflow, compaction, retry; then the give-up.
    r.until("agent_end").await;
    r.until("agent_end").await;
    r.until("agent_end").await;
    r.until("agent_end").await;
    r.until("compaction_end").await;
    r.check_projection().await;
    r.rt.shutdown().await.unwrap();
    snapshot(
        "replay_overflow_retry_then_double_overflow__events",
        &r.log.join("\n"),
    );
    snapshot(
        "replay_overflow_retry_then_double_overflow__files",
        &r.files(),
    );
}

#[tokio::test(start_paused = true)]
async fn replay_compact_during_tool_calls_waits_for_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    // keepRecentTokens 5 is reached at the last tool result, which is no valid cut point: the
    // cut moves to the reply after it, never between a call and its result (compaction.md §5).
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    std::fs::write(
        tmp.path().join("agent/settings.json"),
        r#"{"compaction":{"keepRecentTokens":5}}"#,
    )
    .unwrap();
    let mut r = Replay::new(
        tmp.path(),
        r#"[{"content":[{"type":"toolCall","id":"t1","name":"read","arguments":{"path":"a.rs"}}]},
            {"content":[{"type":"toolCall","id":"t2","name":"read","arguments":{"path":"b.rs"}}],"delayMs":600},
            {"content":[{"type":"text","text":"both files read"}]},
            {"content":[{"type":"text","text":"TURN PREFIX SUMMARY"}]}]"#,
    )
    .await;
    r.rt.prompt("read two files").await.unwrap();
    r.until("tool_execution_end").await;
    // The second reply is still streaming, its tool call to come: the compaction waits for
    // the run to end.
    r.rt.compact(None).await.unwrap();
    r.rt.wait_idle().await.unwrap();
    r.until_idle().await;
    r.until("compaction_end").await;
    r.check_projection().await;
    let context = r.rt.context().await.unwrap();
    let pairs =
        pith_llm::tool_pairs::pair_tool_calls(pith_store::llm::convert_to_llm(&context.messages));
    // Nothing to repair: every call in the context has its result right after it.
    assert_eq!(pairs, pith_store::llm::convert_to_llm(&context.messages));
    r.rt.shutdown().await.unwrap();
    snapshot(
        "replay_compact_during_tool_calls_waits_for_the_run__events",
        &r.log.join("\n"),
    );
    snapshot(
        "replay_compact_during_tool_calls_waits_for_the_run__files",
        &r.files(),
    );
}

/// Supplies every compaction and branch summary itself (a team's own summarizer).
struct OwnSummaries;

impl pith_actors::extension::Extension for OwnSummaries {
    fn name(&self) -> &str {
        "own-summaries"
    }

    fn subscriptions(&self) -> &[&str] {
        &["session_before_compact", "session_before_tree"]
    }

    fn on_event(
        &mut self,
        event: &pith_events::ExtensionEvent,
        _ctx: &mut pith_actors::extension::ExtensionContext,
    ) -> pith_actors::extension::Verdict {
        use pith_actors::extension::{SuppliedSummary, Verdict};
        use pith_events::ExtensionEvent as E;
        let summary = match event {
            E::SessionBeforeCompact { preparation, .. } => format!(
                "own compaction of {} messages",
                preparation.messages_to_summarize.len()
            ),
            E::SessionBeforeTree {
                entries_to_summarize,
                ..
            } => format!(
                "own branch summary of {} entries",
                entries_to_summarize.len()
            ),
            _ => return Verdict::Continue,
        };
        Verdict::Summary(SuppliedSummary {
            summary,
            details: Some(serde_json::json!({"summarizer": "own"})),
        })
    }
}

#[tokio::test(start_paused = true)]
async fn replay_extension_supplied_summaries() {
    use pith_actors::tree_navigator::NavigateOptions;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    std::fs::write(
        tmp.path().join("agent/settings.json"),
        r#"{"compaction":{"keepRecentTokens":3}}"#,
    )
    .unwrap();
    let mut r = Replay::with_extensions(
        tmp.path(),
        r#"[{"content":[{"type":"text","text":"one"}]},{"content":[{"type":"text","text":"two"}]}]"#,
        vec![Arc::new(|| Box::new(OwnSummaries))],
    )
    .await;
    for prompt in ["first", "second"] {
        r.rt.prompt(prompt).await.unwrap();
        r.until_idle().await;
    }
    r.rt.compact(None).await.unwrap();
    r.until("compaction_end").await;
    let snap = r.rt.snapshot().await.unwrap();
    let one = snap
        .entries()
        .iter()
        .find(|e| e.raw().contains(r#""text":"one""#))
        .unwrap()
        .id()
        .to_owned();
    r.rt.navigate_tree(
        &one,
        NavigateOptions {
            summarize: true,
            ..NavigateOptions::default()
        },
    )
    .await
    .unwrap();
    r.check_projection().await;
    r.rt.shutdown().await.unwrap();
    snapshot(
        "replay_extension_supplied_summaries__events",
        &r.log.join("\n"),
    );
    snapshot("replay_extension_supplied_summaries__files", &r.files());
}

#[tokio::test]
async fn replay_the_built_in_tools_on_a_real_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    // One call per reply: calls of one reply run concurrently and would end in any order.
    let mut r = Replay::with_tools(
        tmp.path(),
        r#"[{"content":[{"type":"toolCall","id":"w","name":"write","arguments":{"path":"notes/todo.txt","content":"alpha\nbeta\n"}}]},
            {"content":[{"type":"toolCall","id":"e","name":"edit","arguments":{"path":"notes/todo.txt","edits":[{"oldText":"beta","newText":"gamma"}]}}]},
            {"content":[{"type":"toolCall","id":"e2","name":"edit","arguments":{"path":"notes/todo.txt","edits":[{"oldText":"delta","newText":"x"}]}}]},
            {"content":[{"type":"toolCall","id":"r","name":"read","arguments":{"path":"notes/todo.txt","offset":2}}]},
            {"content":[{"type":"toolCall","id":"b","name":"bash","arguments":{"command":"cat notes/todo.txt; exit 3"}}]},
            {"content":[{"type":"text","text":"done"}]}]"#,
        &project,
    )
    .await;
    r.rt.prompt("tidy the notes").await.unwrap();
    r.until_idle().await;
    r.check_projection().await;
    let bash = r.rt.bash("printf 'from the user'", false).await.unwrap();
    assert_eq!(bash.output, "from the user");
    r.rt.shutdown().await.unwrap();
    assert_eq!(
        std::fs::read_to_string(project.join("notes/todo.txt")).unwrap(),
        "alpha\ngamma\n"
    );
    snapshot(
        "replay_the_built_in_tools_on_a_real_directory__events",
        &r.log.join("\n"),
    );
    snapshot(
        "replay_the_built_in_tools_on_a_real_directory__files",
        &r.files(),
    );
}
