//! A tap on the wire between pith and its extension processes, for tests and golden
//! transcripts (spec: extensions.md §4 step 2). Set through
//! [`crate::extension_host::HostedExtensions::transcript`]; when it is `None` nothing is parsed
//! or kept. The host records each line as it writes it (requests, responses, notifications,
//! observe events as queued: a `message_update` later coalesced still shows) and each line of
//! the child's as it handles it, so the order is the extension actor's.

use std::sync::{Arc, Mutex};

use pith_events::ext::transcript::{Side, TranscriptLine};

/// The recorded lines of every extension of a runtime, in order; clones share them.
#[derive(Clone, Default)]
pub struct TranscriptTap {
    lines: Arc<Mutex<Vec<TranscriptLine>>>,
}

impl TranscriptTap {
    /// Records `raw`, written by `from`, on the wire of extension `ext`.
    pub fn line(&self, ext: &str, from: Side, raw: &str) {
        self.push(TranscriptLine::line(ext, from, raw));
    }

    /// Records that the process of `ext` ended (or was ended), for `why`.
    pub fn exit(&self, ext: &str, why: &str) {
        self.push(TranscriptLine::exit(ext, why));
    }

    fn push(&self, line: TranscriptLine) {
        if let Ok(mut lines) = self.lines.lock() {
            lines.push(line);
        }
    }

    /// Everything recorded so far, ids as they were sent.
    pub fn lines(&self) -> Vec<TranscriptLine> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }
}
