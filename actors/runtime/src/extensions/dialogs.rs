//! Dialogs an extension opens (`ui/confirm|select|input`), routed to the frontend and back
//! (spec: extensions.md §1.2 "Dialogs"): the extension host registers each open dialog here
//! and tells frontends through [`crate::event::ExtensionNotice::UiRequest`]; the frontend answers with
//! [`Dialogs::answer`] (pi's rpc `extension_ui_response`). One registry per runtime.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::oneshot;

/// The open dialogs of a runtime; clones share them.
#[derive(Clone, Default)]
pub struct Dialogs {
    open: Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>,
    next: Arc<AtomicU64>,
}

impl Dialogs {
    /// Opens a dialog: its id for the frontend, and the answer to wait for.
    pub fn open(&self) -> (String, oneshot::Receiver<Value>) {
        let id = format!("ext-ui-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut open) = self.open.lock() {
            open.insert(id.clone(), tx);
        }
        (id, rx)
    }

    /// Answers dialog `id` with the frontend's response (`{value}`, `{confirmed}` or
    /// `{cancelled: true}`); `false` when no such dialog is open.
    pub fn answer(&self, id: &str, response: Value) -> bool {
        let tx = self.open.lock().ok().and_then(|mut o| o.remove(id));
        match tx {
            Some(tx) => tx.send(response).is_ok(),
            None => false,
        }
    }

    /// Forgets dialog `id` (it timed out).
    pub fn close(&self, id: &str) {
        if let Ok(mut open) = self.open.lock() {
            open.remove(id);
        }
    }
}
