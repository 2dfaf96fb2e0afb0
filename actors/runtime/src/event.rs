//! What frontends receive from the runtime, and the sinks that deliver it: [`UiSink`] to
//! frontends, [`EventSink`] for a session's agent events (to frontends and subscribers).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use pith_events::{AgentEvent, StartReason};

/// What frontends receive.
#[derive(Debug, Clone, PartialEq)]
pub enum RuntimeEvent {
    /// An agent event of the current session (boxed: messages are large).
    Agent(Box<AgentEvent>),
    /// A session subtree started.
    SessionStarted {
        /// Why.
        reason: StartReason,
        /// Its file, if persisted.
        session_file: Option<PathBuf>,
        /// Its id.
        session_id: String,
    },
    /// Something the user must hear (a crash recovered from, a rewritten file, settings ignored).
    Notice(String),
    /// Writing the session failed: what was not saved stays in memory and is written by the
    /// next successful write, but until then it is not on disk.
    WriteFailed(String),
    /// An extension failed, asks the user something, or tells them something.
    Extension(ExtensionNotice),
}

/// Backpressure from a frontend that writes agent events somewhere slow (`--mode rpc` and
/// `--mode json` to stdout; spec: agent-and-events.md §8, issue 13 item 5): counts the agent
/// events sent to frontends and not yet written, and makes the agent wait before emitting
/// while `limit` are outstanding. A slow reader of stdout thereby slows the agent (and, through
/// the provider's bounded channel, the model's stream) instead of growing memory. Unlimited
/// until a frontend calls [`Pacer::limit`]; the interactive mode never does.
#[derive(Clone, Debug)]
pub struct Pacer {
    inner: Arc<PacerInner>,
}

#[derive(Debug)]
struct PacerInner {
    /// Agent events sent to frontends and not yet written.
    outstanding: std::sync::atomic::AtomicUsize,
    /// The most outstanding events before emitters wait; `usize::MAX`: no pacing.
    limit: std::sync::atomic::AtomicUsize,
    /// Woken whenever events are written.
    written: tokio::sync::Notify,
}

impl Default for Pacer {
    fn default() -> Pacer {
        Pacer {
            inner: Arc::new(PacerInner {
                outstanding: std::sync::atomic::AtomicUsize::new(0),
                limit: std::sync::atomic::AtomicUsize::new(usize::MAX),
                written: tokio::sync::Notify::new(),
            }),
        }
    }
}

impl Pacer {
    /// Paces emitters at `max` outstanding events (`usize::MAX`: stops pacing and wakes
    /// every waiter, e.g. once the reader has gone).
    pub fn limit(&self, max: usize) {
        use std::sync::atomic::Ordering;
        self.inner.limit.store(max, Ordering::SeqCst);
        self.inner.written.notify_waiters();
    }

    /// An agent event went to the frontends (counted only while pacing).
    fn sent(&self) {
        use std::sync::atomic::Ordering;
        if self.inner.limit.load(Ordering::SeqCst) != usize::MAX {
            self.inner.outstanding.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The frontend wrote one agent event it was sent.
    pub fn written(&self) {
        use std::sync::atomic::Ordering;
        let _ = self
            .inner
            .outstanding
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        self.inner.written.notify_waiters();
    }

    /// Agent events sent and not yet written.
    pub fn outstanding(&self) -> usize {
        self.inner
            .outstanding
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Returns once fewer than the limit are outstanding.
    pub async fn room(&self) {
        use std::sync::atomic::Ordering;
        loop {
            // Created before the check: a `written` between the check and the await wakes it.
            let written = self.inner.written.notified();
            if self.inner.outstanding.load(Ordering::SeqCst)
                < self.inner.limit.load(Ordering::SeqCst)
            {
                return;
            }
            written.await;
        }
    }
}

/// What an extension host tells frontends (spec: extensions.md §1.2 "Dialogs").
#[derive(Debug, Clone, PartialEq)]
pub enum ExtensionNotice {
    /// pi's rpc `extension_error {extensionPath, event, error}`: a handler crashed, timed out
    /// or the extension was disabled.
    Error {
        /// The extension's name.
        extension: String,
        /// The event (or method) it failed on.
        event: String,
        /// What happened.
        error: String,
    },
    /// A dialog or a fire-and-forget UI call, as pi's rpc `extension_ui_request`:
    /// `{id, method, ...params}`. Dialogs (`select`, `confirm`, `input`) wait for
    /// [`crate::extensions::dialogs::Dialogs::answer`] with the same id.
    UiRequest {
        /// The request's id (unique in the runtime).
        id: String,
        /// `select`, `confirm`, `input`, `notify` or `setStatus`.
        method: String,
        /// The extension's params (`title`, `options`, `message`, …).
        params: serde_json::Value,
    },
}

/// Delivers runtime events to every subscriber in order, never dropping one. Notices, write
/// failures and extension notices (dialogs) raised before anyone subscribed are kept and
/// handed to the first subscriber, so a
/// frontend that subscribes right after start misses none.
#[derive(Clone, Default)]
pub struct UiSink {
    inner: Arc<Mutex<UiInner>>,
    /// Backpressure from the frontends that write agent events out.
    pacer: Pacer,
}

#[derive(Default)]
struct UiInner {
    subscribers: Vec<mpsc::UnboundedSender<RuntimeEvent>>,
    backlog: Vec<RuntimeEvent>,
}

impl UiSink {
    /// A new subscription; the first one also gets the backlog.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<RuntimeEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut inner) = self.inner.lock() {
            for event in inner.backlog.drain(..) {
                let _ = tx.send(event);
            }
            inner.subscribers.push(tx);
        }
        rx
    }

    /// The frontends' backpressure on agent events.
    pub fn pacer(&self) -> &Pacer {
        &self.pacer
    }

    /// Sends `event` to every live subscriber (or keeps a notice for the first one).
    pub fn notify(&self, event: RuntimeEvent) {
        if matches!(event, RuntimeEvent::Agent(_)) {
            self.pacer.sent();
        }
        if let Ok(mut inner) = self.inner.lock() {
            inner.subscribers.retain(|s| s.send(event.clone()).is_ok());
            // Extension notices too: a dialog asked before the frontend subscribed (in a
            // `session_start` handler) must still reach it, or the extension waits forever.
            if inner.subscribers.is_empty()
                && matches!(
                    event,
                    RuntimeEvent::Notice(_)
                        | RuntimeEvent::WriteFailed(_)
                        | RuntimeEvent::Extension(_)
                )
            {
                inner.backlog.push(event);
            }
        }
    }
}

/// Where agent events go: every frontend and extension subscribed, in order, never dropped.
#[derive(Clone, Default)]
pub struct EventSink {
    subscribers: Arc<Mutex<Vec<mpsc::UnboundedSender<AgentEvent>>>>,
    /// Frontends, fed in the emitting call itself: an event is with them before anything the
    /// emitter does next (e.g. answering "idle").
    ui: Arc<Mutex<Option<UiSink>>>,
}

impl EventSink {
    /// A sink whose events also reach `ui` as [`RuntimeEvent::Agent`].
    pub fn to_ui(ui: UiSink) -> EventSink {
        EventSink {
            ui: Arc::new(Mutex::new(Some(ui))),
            ..EventSink::default()
        }
    }

    /// Stops feeding frontends (the session subtree is gone; late events are not its).
    pub fn detach_ui(&self) {
        if let Ok(mut ui) = self.ui.lock() {
            *ui = None;
        }
    }

    /// Returns once the frontends have room for another event ([`Pacer`]); at once when
    /// none paces.
    pub async fn room(&self) {
        let pacer = self
            .ui
            .lock()
            .ok()
            .and_then(|ui| ui.as_ref().map(|u| u.pacer.clone()));
        if let Some(pacer) = pacer {
            pacer.room().await;
        }
    }

    /// A new subscription; events arrive in emission order.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<AgentEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut subs) = self.subscribers.lock() {
            subs.push(tx);
        }
        rx
    }

    /// Tells the frontends something outside the agent's events (a failed write), while the
    /// session is attached to them.
    pub fn notify_ui(&self, event: RuntimeEvent) {
        if let Ok(ui) = self.ui.lock()
            && let Some(ui) = ui.as_ref()
        {
            ui.notify(event);
        }
    }

    /// Sends `event` to every live subscriber.
    pub fn emit(&self, event: AgentEvent) {
        if let Ok(mut subs) = self.subscribers.lock() {
            subs.retain(|s| s.send(event.clone()).is_ok());
        }
        if let Ok(ui) = self.ui.lock()
            && let Some(ui) = ui.as_ref()
        {
            ui.notify(RuntimeEvent::Agent(Box::new(event)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn agent_event() -> RuntimeEvent {
        RuntimeEvent::Agent(Box::new(AgentEvent::AgentStart))
    }

    #[tokio::test(start_paused = true)]
    async fn a_paced_sink_makes_emitters_wait_until_lines_are_written() {
        let ui = UiSink::default();
        let _events = ui.subscribe();
        let pacer = ui.pacer().clone();
        // Unpaced: nothing is counted, nobody waits.
        ui.notify(agent_event());
        assert_eq!(pacer.outstanding(), 0);
        pacer.limit(2);
        ui.notify(agent_event());
        ui.notify(agent_event());
        assert_eq!(pacer.outstanding(), 2);
        let waiting = tokio::spawn({
            let pacer = pacer.clone();
            async move { pacer.room().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "two unwritten: the emitter waits");
        pacer.written();
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("room once one is written")
            .unwrap();
        // Notices are not paced; a reader that went away lifts the limit.
        ui.notify(RuntimeEvent::Notice("n".into()));
        assert_eq!(pacer.outstanding(), 1);
        ui.notify(agent_event());
        pacer.limit(usize::MAX);
        tokio::time::timeout(Duration::from_secs(1), pacer.room())
            .await
            .expect("no limit, no wait");
    }
}
