//! How actors send each other messages: every message travels in an [`Envelope`] with its
//! [`Trace`], and every send goes through an [`Origin`] (who sends, and which message made
//! them send), so a trace can show what caused what.
//!
//! One timeout policy, here and nowhere else: a [`Origin::call`] asks for an answer that is
//! the other actor's own work in memory (an append, a snapshot, an extension's handler), so
//! it gets [`CALL_TIMEOUT`]; past it the actor is stuck, which is a bug, and the caller goes
//! on without the answer. An [`Origin::wait`] asks for an answer that waits for a model, a
//! shell command or a run (a prompt's run, a compaction, a branch summary, `!cmd`): it has no
//! timeout, because such work takes as long as it takes, and the user ends it with abort.

use std::time::Duration;

use ractor::rpc::CallResult;
use ractor::{ActorRef, Message, RpcReplyPort};

use crate::trace::{ActorName, Trace};

/// How long an actor may take to answer a [`Origin::call`].
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// A message and its trace.
#[derive(Debug)]
pub struct Envelope<M> {
    /// Who sent it, in which flow, caused by what.
    pub trace: Trace,
    /// The message itself.
    pub msg: M,
}

/// A short name for a message, as traces show it (`prompt`, `append_message`, …).
pub trait MessageKind {
    /// The name.
    fn kind(&self) -> &'static str;
}

/// Why a call got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The actor is gone (stopped, or crashed and not yet rebuilt).
    #[error("the {0} is gone")]
    Gone(&'static str),
    /// The actor took longer than [`CALL_TIMEOUT`].
    #[error("the {0} did not answer in time")]
    TimedOut(&'static str),
    /// The actor dropped the question without answering (it stopped while handling it).
    #[error("the {0} stopped before answering")]
    Dropped(&'static str),
}

/// The actor that sends, and the message whose handling makes it send: every message sent
/// through it is caused by that message.
#[derive(Debug, Clone)]
pub struct Origin {
    me: ActorName,
    cause: Trace,
}

impl Origin {
    /// `me` sends while handling the message traced by `cause`.
    pub fn new(me: ActorName, cause: &Trace) -> Origin {
        Origin {
            me,
            cause: cause.clone(),
        }
    }

    /// The message being handled.
    pub fn cause(&self) -> &Trace {
        &self.cause
    }

    /// Who sends.
    pub fn me(&self) -> &ActorName {
        &self.me
    }

    /// `msg` in an envelope caused by the message being handled.
    pub fn envelope<M>(&self, msg: M) -> Envelope<M> {
        Envelope {
            trace: self.cause.caused(self.me.clone()),
            msg,
        }
    }

    /// Sends without waiting; `false` (and a warning) when `to` is gone, which the caller may
    /// ignore: a gone actor belongs to a subtree being replaced.
    pub fn cast<M: Message + MessageKind>(&self, to: &ActorRef<Envelope<M>>, msg: M) -> bool {
        let kind = msg.kind();
        match to.cast(self.envelope(msg)) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(from = %self.me, msg = kind, "not delivered: {e}");
                false
            }
        }
    }

    /// Asks `to` (named `whom` in errors) and waits at most [`CALL_TIMEOUT`] for the answer.
    ///
    /// Errors: [`CallError`] when `to` is gone, too slow, or stops before answering.
    pub async fn call<M: Message, T: Send + 'static>(
        &self,
        to: &ActorRef<Envelope<M>>,
        whom: &'static str,
        build: impl FnOnce(RpcReplyPort<T>) -> M,
    ) -> Result<T, CallError> {
        self.ask(to, whom, build, Some(CALL_TIMEOUT)).await
    }

    /// Asks `to` for work that waits on a model, a command or a run, and waits as long as it
    /// takes.
    ///
    /// Errors: [`CallError`] when `to` is gone or stops before answering.
    pub async fn wait<M: Message, T: Send + 'static>(
        &self,
        to: &ActorRef<Envelope<M>>,
        whom: &'static str,
        build: impl FnOnce(RpcReplyPort<T>) -> M,
    ) -> Result<T, CallError> {
        self.ask(to, whom, build, None).await
    }

    async fn ask<M: Message, T: Send + 'static>(
        &self,
        to: &ActorRef<Envelope<M>>,
        whom: &'static str,
        build: impl FnOnce(RpcReplyPort<T>) -> M,
        timeout: Option<Duration>,
    ) -> Result<T, CallError> {
        let trace = self.cause.caused(self.me.clone());
        let asked = to
            .call(
                |reply| Envelope {
                    trace,
                    msg: build(reply),
                },
                timeout,
            )
            .await;
        match asked {
            Ok(CallResult::Success(answer)) => Ok(answer),
            Ok(CallResult::Timeout) => Err(CallError::TimedOut(whom)),
            Ok(CallResult::SenderError) => Err(CallError::Dropped(whom)),
            Err(_) => Err(CallError::Gone(whom)),
        }
    }
}
