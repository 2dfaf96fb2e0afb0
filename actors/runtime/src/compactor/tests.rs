//! The Compactor on its own: compacting with a given summary, and its decisions after a run.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use tokio_util::sync::CancellationToken;

use pith_events::{AgentEvent, AgentMessage, AssistantMessage, StopReason};

use super::{CompactorMsg, NextStep, OVERFLOW_GAVE_UP};
use crate::RuntimeError;
use crate::testing::Parts;
use crate::writer::Append;

fn faux_reply(stop: StopReason, error: Option<&str>) -> AssistantMessage {
    let mut reply = AssistantMessage::new("faux", "faux", "faux-1", Vec::new(), 5);
    reply.stop_reason = stop;
    reply.error_message = error.map(str::to_owned);
    reply
}

async fn after_run(parts: &Parts, reply: AssistantMessage, retried: bool) -> NextStep {
    parts
        .from()
        .wait(&parts.compactor, "compactor", |reply_port| {
            CompactorMsg::AfterRun {
                last_reply: Box::new(reply),
                retried,
                attempt: Vec::new(),
                abort: CancellationToken::new(),
                reply: reply_port,
            }
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn compacting_with_a_given_summary_needs_an_entry_and_keeps_the_leaf() {
    let tmp = tempfile::tempdir().unwrap();
    let parts = Parts::spawn(tmp.path(), "[]", "{}").await;
    let from = parts.from();
    let with = |summary: &str| {
        let summary = summary.to_owned();
        from.wait(&parts.compactor, "compactor", |reply| {
            CompactorMsg::CompactWith { summary, reply }
        })
    };
    assert!(matches!(
        with("too early").await.unwrap(),
        Err(RuntimeError::NothingToCompact)
    ));
    let user = Append::Message(Box::new(AgentMessage::user_text("hi", 1)));
    let leaf = parts.writer.append(&from, user).await.unwrap();
    let id = with("the summary").await.unwrap().unwrap();
    let snapshot = parts.writer.snapshot(&from).await.unwrap();
    let entry: serde_json::Value = serde_json::from_str(snapshot.entries()[1].raw()).unwrap();
    assert_eq!(entry["id"], id.as_str());
    assert_eq!(entry["summary"], "the summary");
    assert_eq!(entry["firstKeptEntryId"], leaf.as_str());
    assert_eq!(entry["fromHook"], false);
}

#[tokio::test]
async fn after_a_run_an_aborted_or_small_reply_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mut parts = Parts::spawn(tmp.path(), "[]", "{}").await;
    // Even an overflow message: an aborted reply never triggers after a run.
    let aborted = faux_reply(StopReason::Aborted, Some("prompt is too long"));
    assert_eq!(after_run(&parts, aborted, false).await, NextStep::Idle);
    assert_eq!(
        after_run(&parts, faux_reply(StopReason::Stop, None), false).await,
        NextStep::Idle
    );
    assert!(parts.event_names().is_empty());
    assert!(parts.log().await.is_empty());
}

#[tokio::test]
async fn an_overflowing_retry_gives_up_with_pis_message_and_compacts_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mut parts = Parts::spawn(tmp.path(), "[]", "{}").await;
    let from = parts.from();
    let user = Append::Message(Box::new(AgentMessage::user_text("big", 1)));
    parts.writer.append(&from, user).await.unwrap();
    let overflow = faux_reply(
        StopReason::Error,
        Some("prompt is too long: 213462 tokens > 200000 maximum"),
    );
    let appended = Append::Message(Box::new(AgentMessage::Assistant(overflow.clone())));
    parts.writer.append(&from, appended).await.unwrap();
    assert_eq!(after_run(&parts, overflow, true).await, NextStep::Idle);
    let mut ends = Vec::new();
    while let Ok(event) = parts.events.try_recv() {
        if let AgentEvent::CompactionEnd { error_message, .. } = event {
            ends.push(error_message);
        }
    }
    assert_eq!(ends, [Some(OVERFLOW_GAVE_UP.to_owned())]);
    assert_eq!(parts.log().await, ["user", "assistant"]);
}

#[tokio::test]
async fn with_compaction_disabled_an_overflow_is_left_to_the_user() {
    let tmp = tempfile::tempdir().unwrap();
    let mut parts = Parts::spawn(tmp.path(), "[]", r#"{"compaction":{"enabled":false}}"#).await;
    let overflow = faux_reply(StopReason::Error, Some("prompt is too long"));
    assert_eq!(after_run(&parts, overflow, false).await, NextStep::Idle);
    // Enabled, the same reply would have started an overflow compaction.
    assert!(parts.event_names().is_empty());
}
