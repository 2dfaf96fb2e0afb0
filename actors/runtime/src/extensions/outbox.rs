//! What pith writes to an extension's stdin, queued (spec: extensions.md §1.2 "Actor
//! design"): requests and responses always wait their turn; observe events are bounded at
//! 1,000 per extension (the oldest dropped and counted) and a `message_update` replaces a
//! `message_update` still waiting at the end of the queue, so a slow reader keeps memory flat.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// Observe events kept waiting at most.
pub const OBSERVE_LIMIT: usize = 1_000;

/// A line to write, or what builds it when it is written.
enum Line {
    Ready(String),
    Later(Box<dyn FnOnce() -> String + Send>),
}

struct Item {
    line: Line,
    observe: bool,
    update: bool,
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Item>,
    observe: usize,
    dropped: u64,
    closed: bool,
}

/// The queue; clones share it.
#[derive(Clone, Default)]
pub struct Outbox {
    queue: Arc<Mutex<Queue>>,
    ready: Arc<Notify>,
}

impl Outbox {
    /// A request, response or notification that must arrive.
    pub fn send(&self, line: String) {
        self.push(Item {
            line: Line::Ready(line),
            observe: false,
            update: false,
        });
    }

    /// An observe event; `update` marks a `message_update` (coalesced).
    pub fn observe(&self, line: String, update: bool) {
        self.push(Item {
            line: Line::Ready(line),
            observe: true,
            update,
        });
    }

    /// [`Outbox::observe`] with the line built by `make` when it is written (never, when a
    /// later update replaces it first).
    pub fn observe_with(&self, make: Box<dyn FnOnce() -> String + Send>, update: bool) {
        self.push(Item {
            line: Line::Later(make),
            observe: true,
            update,
        });
    }

    fn push(&self, item: Item) {
        if let Ok(mut q) = self.queue.lock() {
            if q.closed {
                return;
            }
            if item.update
                && let Some(last) = q.items.back_mut()
                && last.update
            {
                last.line = item.line;
                return;
            }
            if item.observe {
                if q.observe >= OBSERVE_LIMIT
                    && let Some(oldest) = q.items.iter().position(|i| i.observe)
                {
                    q.items.remove(oldest);
                    q.observe -= 1;
                    q.dropped += 1;
                }
                q.observe += 1;
            }
            q.items.push_back(item);
        }
        self.ready.notify_one();
    }

    /// Observe events dropped so far.
    pub fn dropped(&self) -> u64 {
        self.queue.lock().map(|q| q.dropped).unwrap_or(0)
    }

    /// No more lines: the writer ends (stdin closes) once the queue is written.
    pub fn close(&self) {
        if let Ok(mut q) = self.queue.lock() {
            q.closed = true;
        }
        self.ready.notify_one();
    }

    /// The next line to write; `None` once closed and empty.
    pub async fn next(&self) -> Option<String> {
        loop {
            let popped = match self.queue.lock() {
                Ok(mut q) => match q.items.pop_front() {
                    Some(item) => {
                        if item.observe {
                            q.observe -= 1;
                        }
                        Some(item.line)
                    }
                    None if q.closed => return None,
                    None => None,
                },
                Err(_) => None,
            };
            // Built outside the lock, so pushes never wait for a serialisation.
            match popped {
                Some(Line::Ready(line)) => return Some(line),
                Some(Line::Later(make)) => return Some(make()),
                None => self.ready.notified().await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn updates_coalesce_and_observe_events_are_bounded() {
        let out = Outbox::default();
        out.send("req".into());
        out.observe("u1".into(), true);
        out.observe("u2".into(), true);
        out.observe("end".into(), false);
        out.observe("u3".into(), true);
        assert_eq!(out.next().await.as_deref(), Some("req"));
        assert_eq!(out.next().await.as_deref(), Some("u2"));
        assert_eq!(out.next().await.as_deref(), Some("end"));
        assert_eq!(out.next().await.as_deref(), Some("u3"));
        for i in 0..OBSERVE_LIMIT + 5 {
            out.observe(format!("e{i}"), false);
        }
        out.send("answer".into());
        assert_eq!(out.dropped(), 5);
        assert_eq!(out.next().await.as_deref(), Some("e5"));
        out.close();
        let mut rest = 0;
        while out.next().await.is_some() {
            rest += 1;
        }
        assert_eq!(rest, OBSERVE_LIMIT);
    }
}
