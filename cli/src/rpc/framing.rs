//! The wire of the rpc mode: LF-delimited JSON lines in both directions, and the response
//! object (spec: agent-and-events.md §9, "Framing").

use std::io::{BufRead, Write};
use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

use pith_actors::event::Pacer;
use pith_events::AgentEvent;

/// `{id?, type:"response", command, success, data?|error}`, members in pi's order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Response {
    /// The command's `id`, echoed as given; absent when the command had none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// Always `"response"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The command's `type` (absent only for a command without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Value>,
    /// Whether the command did what it was asked.
    pub success: bool,
    /// The result: `None` leaves the member out, `Some(Value::Null)` writes `null` (pi's
    /// `cycle_model` with one model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Response {
    /// A success, with `data` when there is any.
    pub fn ok(id: Option<Value>, command: &str, data: Option<Value>) -> Response {
        Response {
            id,
            kind: "response",
            command: Some(Value::String(command.to_owned())),
            success: true,
            data,
            error: None,
        }
    }

    /// A failure with pi's (or pith's) message.
    pub fn err(id: Option<Value>, command: Option<Value>, error: impl Into<String>) -> Response {
        Response {
            id,
            kind: "response",
            command,
            success: false,
            data: None,
            error: Some(error.into()),
        }
    }
}

/// Reads stdin on a thread of its own (a blocking read must not hold a runtime worker) and
/// sends every line: split at LF only, so U+2028/U+2029 stay inside strings; a trailing CR
/// removed; invalid UTF-8 replaced by U+FFFD as Node's decoder does; a last line without LF
/// sent too. The channel closes at end of input (or a read error, which ends input as well).
pub fn read_lines() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut input = std::io::stdin().lock();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match input.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => {
                    if buf.last() == Some(&b'\n') {
                        buf.pop();
                    }
                    if buf.last() == Some(&b'\r') {
                        buf.pop();
                    }
                    if tx.send(String::from_utf8_lossy(&buf).into_owned()).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    eprintln!("pith: reading stdin: {e}");
                    break;
                }
            }
        }
    });
    rx
}

/// How many agent events may wait to be written before the agent waits for the reader
/// (backpressure; about 1,024 short lines, a few hundred KB at most for streamed deltas).
pub const PACE_LIMIT: usize = 1024;

/// Writes lines to stdout on a thread of its own, in the order given: a slow reader of a
/// large event stream holds that thread, not the runtime, and through the runtime's
/// [`Pacer`] the agent waits once [`PACE_LIMIT`] events are unwritten, so memory stays
/// bounded whatever the reader does (issue 13 item 5).
pub struct Output {
    tx: Option<std_mpsc::Sender<(String, bool)>>,
    thread: Option<JoinHandle<()>>,
}

impl Output {
    /// Starts the writer; `pacer` learns of every agent event written.
    pub fn start(pacer: Pacer) -> Output {
        let (tx, rx) = std_mpsc::channel::<(String, bool)>();
        let thread = std::thread::spawn(move || {
            // Buffered: one write per burst, not one per line.
            let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
            while let Ok(first) = rx.recv() {
                let mut events = 0;
                let written = std::iter::once(first)
                    .chain(rx.try_iter())
                    .try_for_each(|(line, event)| {
                        events += usize::from(event);
                        out.write_all(line.as_bytes())?;
                        out.write_all(b"\n")
                    })
                    .and_then(|()| out.flush());
                for _ in 0..events {
                    pacer.written();
                }
                if written.is_err() {
                    // The client went away; what is left to say has no reader, and nothing
                    // may wait for it.
                    pacer.limit(usize::MAX);
                    break;
                }
            }
        });
        Output {
            tx: Some(tx),
            thread: Some(thread),
        }
    }

    /// Queues `value` as one line, spelled as `JSON.stringify` spells it.
    pub fn line<T: Serialize + ?Sized>(&self, value: &T) {
        self.send(pith_events::js::to_js_json(value), false);
    }

    /// Queues an agent event as pi's session listeners get it (its `to_listener_json`).
    pub fn event(&self, event: &AgentEvent) {
        self.send(event.to_listener_json(), true);
    }

    fn send(&self, line: Result<String, serde_json::Error>, event: bool) {
        match line {
            Ok(line) => {
                if let Some(tx) = &self.tx {
                    let _ = tx.send((line, event));
                }
            }
            Err(e) => eprintln!("pith: a line could not be written: {e}"),
        }
    }

    /// Writes what is queued and stops the writer.
    pub fn finish(mut self) {
        self.tx = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn responses_keep_pis_member_order_and_leave_out_what_is_undefined() {
        let line = |r: &Response| pith_events::js::to_js_json(r).unwrap();
        assert_eq!(
            line(&Response::ok(
                Some(json!("a")),
                "get_state",
                Some(json!({"x": 1.0}))
            )),
            r#"{"id":"a","type":"response","command":"get_state","success":true,"data":{"x":1}}"#
        );
        assert_eq!(
            line(&Response::ok(None, "cycle_model", Some(Value::Null))),
            r#"{"type":"response","command":"cycle_model","success":true,"data":null}"#
        );
        assert_eq!(
            line(&Response::err(None, None, "Unknown command: undefined")),
            r#"{"type":"response","success":false,"error":"Unknown command: undefined"}"#
        );
    }
}
