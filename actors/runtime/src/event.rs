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
}

/// Delivers runtime events to every subscriber in order, never dropping one. Notices and write
/// failures raised before anyone subscribed are kept and handed to the first subscriber, so a
/// frontend that subscribes right after start misses none.
#[derive(Clone, Default)]
pub struct UiSink {
    inner: Arc<Mutex<UiInner>>,
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

    /// Sends `event` to every live subscriber (or keeps a notice for the first one).
    pub fn notify(&self, event: RuntimeEvent) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.subscribers.retain(|s| s.send(event.clone()).is_ok());
            if inner.subscribers.is_empty()
                && matches!(
                    event,
                    RuntimeEvent::Notice(_) | RuntimeEvent::WriteFailed(_)
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
