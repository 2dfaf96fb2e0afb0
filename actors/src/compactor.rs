//! Compactor: owns compaction decisions.
//!
//! This version carries out manual compactions with a given summary: it appends a
//! `compaction` entry at the leaf that keeps the leaf entry verbatim, and reports the context
//! size before it (pi's chars/4 estimate). Choosing cut points and generating summaries as pi
//! does is the compaction issue's work; its messages will land here.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use pith_store::Leaf;

use crate::projection::ProjectionMsg;
use crate::trace::TraceIds;
use crate::writer::{Append, WriterMsg};

const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Messages of the Compactor.
#[derive(Debug)]
pub enum CompactorMsg {
    /// Compact now with this summary; answered with the compaction entry's id, or why not.
    Manual(TraceIds, String, RpcReplyPort<Result<String, String>>),
}

/// The Compactor actor.
pub struct Compactor;

/// What the compactor works with.
pub struct CompactorState {
    writer: ActorRef<WriterMsg>,
    projection: ActorRef<ProjectionMsg>,
}

impl Actor for Compactor {
    type Msg = CompactorMsg;
    type State = CompactorState;
    type Arguments = (ActorRef<WriterMsg>, ActorRef<ProjectionMsg>);

    async fn pre_start(
        &self,
        _me: ActorRef<CompactorMsg>,
        (writer, projection): Self::Arguments,
    ) -> Result<CompactorState, ActorProcessingErr> {
        Ok(CompactorState { writer, projection })
    }

    async fn handle(
        &self,
        _me: ActorRef<CompactorMsg>,
        msg: CompactorMsg,
        state: &mut CompactorState,
    ) -> Result<(), ActorProcessingErr> {
        let CompactorMsg::Manual(ids, summary, reply) = msg;
        let snapshot = match state
            .writer
            .call(
                |r| WriterMsg::Snapshot(ids.sent_by("Compactor"), r),
                Some(CALL_TIMEOUT),
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(s)) => s,
            _ => {
                let _ = reply.send(Err("the session writer did not answer".into()));
                return Ok(());
            }
        };
        let Leaf::At(leaf) = snapshot.leaf else {
            let _ = reply.send(Err("Nothing to compact (session too small)".into()));
            return Ok(());
        };
        let first_kept = snapshot.entries[leaf].id().to_owned();
        let tokens_before = match state
            .projection
            .call(
                |r| ProjectionMsg::GetContext(ids.sent_by("Compactor"), r),
                Some(CALL_TIMEOUT),
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(ctx)) => ctx
                .messages
                .iter()
                .map(|m| {
                    serde_json::to_string(m)
                        .map_or(0, |s| s.chars().count())
                        .div_ceil(4) as u64
                })
                .sum(),
            _ => 0,
        };
        let append = Append::Compaction {
            summary,
            first_kept_entry_id: first_kept,
            tokens_before,
            from_hook: Some(false),
        };
        let result = match state
            .writer
            .call(
                |r| WriterMsg::Append(ids.sent_by("Compactor"), append, r),
                Some(CALL_TIMEOUT),
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(r)) => r,
            _ => Err("the session writer did not answer".into()),
        };
        let _ = reply.send(result);
        Ok(())
    }
}
