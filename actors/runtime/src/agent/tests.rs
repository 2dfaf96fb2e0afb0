//! The Agent on its own (a writer, a projection and a Compactor beside it, no Runtime): what
//! it answers while a run streams, and how prompts wait for a run's compaction.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Duration;

use super::{AgentMsg, UserInput};
use crate::RuntimeError;
use crate::testing::Parts;

const SLOW_THEN_FAST: &str = r#"[{"content":[{"type":"text","text":"slow"}],"delayMs":5000},
    {"content":[{"type":"text","text":"fast"}]}]"#;

#[tokio::test(start_paused = true)]
async fn a_prompt_while_a_run_streams_is_refused_and_abort_answers_when_it_ended() {
    let tmp = tempfile::tempdir().unwrap();
    let mut parts = Parts::spawn(tmp.path(), SLOW_THEN_FAST, "{}").await;
    let from = parts.from();
    let ask = |text: &str| {
        let text = text.to_owned();
        from.call(&parts.agent, "agent", |reply| AgentMsg::Prompt {
            input: UserInput::text(text),
            reply,
        })
    };
    ask("one").await.unwrap().unwrap();
    assert!(matches!(
        ask("two").await.unwrap(),
        Err(RuntimeError::AgentBusy)
    ));
    let idle = || from.call(&parts.agent, "agent", |reply| AgentMsg::IsIdle { reply });
    assert!(!idle().await.unwrap());
    // The reply would take five seconds; abort is answered once the run has ended.
    let asked = tokio::time::Instant::now();
    from.wait(&parts.agent, "agent", |reply| AgentMsg::Abort { reply })
        .await
        .unwrap();
    assert!(asked.elapsed() < Duration::from_secs(5));
    assert!(idle().await.unwrap());
    assert_eq!(parts.log().await, ["user", "assistant"]);
    let names = parts.event_names();
    assert_eq!(names.first(), Some(&"agent_start"));
    // pi ≥ 0.80.4: the prompt settles after its run, before abort is answered.
    assert_eq!(names[names.len() - 2..], ["agent_end", "agent_settled"]);
}

#[tokio::test(start_paused = true)]
async fn prompts_sent_while_a_run_compacts_wait_for_it_and_then_run_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let mut parts = Parts::spawn(
        tmp.path(),
        r#"[{"content":[{"type":"text","text":"r1"}]},{"content":[{"type":"text","text":"r2"}]}]"#,
        "{}",
    )
    .await;
    let from = parts.from();
    // As a run does before its compaction check: prompts from now on wait.
    from.cast(&parts.agent, AgentMsg::Deferring { deferring: true });
    for text in ["one", "two"] {
        let text = text.to_owned();
        let started = from
            .call(&parts.agent, "agent", |reply| AgentMsg::Prompt {
                input: UserInput::text(text),
                reply,
            })
            .await
            .unwrap();
        assert!(started.is_ok(), "a waiting prompt is accepted");
    }
    assert!(
        parts.log().await.is_empty(),
        "nothing starts while deferring"
    );
    // The run is over: the first waiting prompt starts, the second follows it.
    from.cast(&parts.agent, AgentMsg::RunFinished);
    from.wait(&parts.agent, "agent", |reply| AgentMsg::WhenIdle { reply })
        .await
        .unwrap();
    assert_eq!(
        parts.log().await,
        ["user", "assistant", "user", "assistant"]
    );
    let names = parts.event_names();
    assert_eq!(names.iter().filter(|n| **n == "agent_end").count(), 1);
    assert!(names.contains(&"queue_update"));
}
