//! Issue 13: no accepted prompt is ever lost. Random interleavings of prompts, steering,
//! follow-ups, aborts, compactions and switches (new, fork, clone, resume) on a model that
//! answers slowly and fails transiently (so prompts land in retry waits and compactions):
//! every prompt the runtime accepted, and every steering or follow-up message, ends up in a
//! session file.

use proptest::prelude::*;

use crate::support::*;

#[derive(Debug, Clone)]
enum Op {
    Prompt,
    Steer,
    FollowUp,
    Abort,
    Compact,
    New,
    Fork,
    Clone,
    Resume,
    /// Let the model get on for this many milliseconds of (paused) time.
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Prompt),
        2 => Just(Op::Steer),
        2 => Just(Op::FollowUp),
        1 => Just(Op::Abort),
        1 => Just(Op::Compact),
        1 => Just(Op::New),
        1 => Just(Op::Fork),
        1 => Just(Op::Clone),
        1 => Just(Op::Resume),
        3 => (0u64..120).prop_map(Op::Wait),
    ]
}

/// Slow replies, transient errors (a retry wait each) and tool-free text.
fn replies() -> Vec<ScriptedReply> {
    let mut all = Vec::new();
    for i in 0..60 {
        all.push(match i % 3 {
            0 => format!(r#"{{"content":[{{"type":"text","text":"r{i}"}}],"delayMs":30}}"#),
            1 => r#"{"content":[],"errorMessage":"503 service unavailable","delayMs":10}"#.into(),
            _ => format!(r#"{{"content":[{{"type":"text","text":"r{i}"}}]}}"#),
        });
    }
    script(&format!("[{}]", all.join(",")))
}

/// Every line of every session file under `agent`.
fn all_lines(agent: &Path) -> String {
    pith_tests::files::session_files(agent)
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .collect()
}

async fn play(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    std::fs::write(
        tmp.path().join("agent/settings.json"),
        r#"{"retry":{"baseDelayMs":40,"maxRetries":2}}"#,
    )
    .unwrap();
    let (rt, _events, _env) = start(tmp.path(), replies()).await;
    let mut accepted: Vec<String> = Vec::new();
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for (i, op) in ops.into_iter().enumerate() {
        let text = format!("m{i}x");
        match op {
            Op::Prompt => {
                if rt.prompt(&text).await.is_ok() {
                    accepted.push(text);
                }
            }
            Op::Steer => {
                rt.steer(&text);
                accepted.push(text);
            }
            Op::FollowUp => {
                rt.follow_up(&text);
                accepted.push(text);
            }
            Op::Abort => {
                let _ = rt.abort().await;
            }
            Op::Compact => {
                let rt = rt.clone();
                tokio::spawn(async move {
                    let _ = rt.compact(None).await;
                });
            }
            Op::New => {
                let _ = rt.switch(SessionStart::New).await;
            }
            Op::Clone => {
                let _ = rt.switch(SessionStart::Clone).await;
            }
            Op::Fork => {
                let snapshot = rt.snapshot().await.unwrap();
                let user = snapshot
                    .entries()
                    .iter()
                    .rev()
                    .find(|e| matches!(e.decode_message(), Some(Ok(AgentMessage::User(_)))));
                if let Some(entry) = user {
                    let entry_id = entry.id().to_owned();
                    let _ = rt.switch(SessionStart::Fork { entry_id }).await;
                }
            }
            Op::Resume => {
                if let Some(file) = files.iter().find(|f| f.exists()).cloned() {
                    let _ = rt.switch(SessionStart::Resume(file)).await;
                }
            }
            Op::Wait(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
        }
        if let Ok(current) = rt.current_session().await
            && let Some(file) = current.session_file
            && !files.contains(&file)
        {
            files.push(file);
        }
    }
    // The end is a switch too: whatever was accepted runs before it.
    let _ = rt.switch(SessionStart::New).await;
    rt.shutdown().await.unwrap();
    let lines = all_lines(&tmp.path().join("agent"));
    for text in &accepted {
        prop_assert!(
            lines.contains(&format!("\"text\":\"{text}\"")),
            "accepted message {text} is in no session file"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PITH_PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(24),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_accepted_prompt_is_in_a_file(ops in proptest::collection::vec(op(), 1..14)) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(play(ops))?;
    }
}

/// The reported case: a prompt during the retry wait, answered success, then a switch.
#[tokio::test(start_paused = true)]
async fn a_prompt_accepted_during_a_retry_wait_survives_every_switch() {
    for start_of in [|_: &str| SessionStart::New, |_: &str| SessionStart::Clone] {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
        std::fs::write(
            tmp.path().join("agent/settings.json"),
            r#"{"retry":{"baseDelayMs":2000}}"#,
        )
        .unwrap();
        let (rt, mut events, _env) = start(
            tmp.path(),
            script(
                r#"[{"content":[],"errorMessage":"503 service unavailable"},
                    {"content":[{"type":"text","text":"never"}]},
                    {"content":[{"type":"text","text":"second answered"}]}]"#,
            ),
        )
        .await;
        rt.prompt("first").await.unwrap();
        loop {
            if let Some(RuntimeEvent::Agent(e)) = events.recv().await
                && matches!(*e, AgentEvent::AutoRetryStart { .. })
            {
                break;
            }
        }
        rt.prompt("second").await.unwrap();
        let old = rt.current_session().await.unwrap().session_file.unwrap();
        rt.switch(start_of("")).await.unwrap();
        rt.shutdown().await.unwrap();
        let text = std::fs::read_to_string(&old).unwrap();
        assert!(text.contains("\"text\":\"second\""), "{text}");
        assert!(text.contains("\"text\":\"never\"") || text.contains("second answered"));
    }
}
