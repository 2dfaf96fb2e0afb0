//! Wire transcripts of PXP/1: every line between pith and an extension process, both ways, in
//! the order the host handled them (spec: extensions.md §4 steps 2–3). The replay snapshots
//! hold them and `docs/extension-protocol/transcripts/` keeps them as golden files, one JSON
//! line per [`TranscriptLine`]; `pith extension check --transcript` plays the host side of one
//! against an extension and compares what it answers.
//!
//! JSON-RPC ids differ from run to run (pith's `shutdown` uses `u64::MAX`, an extension picks
//! its own), so transcripts are compared with ids normalised by [`IdNormalizer`]: the
//! requests pith sends are numbered 1, 2, … per extension in order of appearance, the
//! extension's own requests `"x1"`, `"x2"`, …, and each response carries its request's number.
//! An `initialize` starts a new process, whose numbering starts again.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Who wrote a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// pith, to the extension's stdin.
    Host,
    /// The extension, on its stdout.
    Ext,
}

/// What happened on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Item {
    /// One JSON-RPC line (a line that is not JSON is kept as a string).
    Line {
        /// Its writer.
        from: Side,
        /// The message.
        msg: Value,
    },
    /// The process ended or was ended by the host (a crash: it exited, wrote garbage, timed
    /// out too often); `exit` is why, as the host reports it.
    Exit {
        /// `exited (status 3)`, `timed out on intercept 3 times in a row`, …
        exit: String,
    },
    /// A file of the session cwd the extension may read (`RULES.md`, a file a tool wrote):
    /// part of the world the transcript was recorded in, written before a replay starts.
    File {
        /// Its path relative to the session cwd.
        file: String,
        /// Its text.
        content: String,
    },
}

/// One transcript line: `{"ext":"gate","from":"host","msg":{…}}`,
/// `{"ext":"gate","exit":"exited (status 3)"}` or `{"ext":"gate","file":"RULES.md","content":"…"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptLine {
    /// The extension's name (its manifest's).
    pub ext: String,
    /// The line or the exit.
    #[serde(flatten)]
    pub item: Item,
}

impl TranscriptLine {
    /// A line `from` one side; `raw` is parsed, kept as a string when it is not JSON.
    pub fn line(ext: &str, from: Side, raw: &str) -> TranscriptLine {
        let msg = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()));
        TranscriptLine {
            ext: ext.to_owned(),
            item: Item::Line { from, msg },
        }
    }

    /// The process ended, for `why`.
    pub fn exit(ext: &str, why: &str) -> TranscriptLine {
        TranscriptLine {
            ext: ext.to_owned(),
            item: Item::Exit {
                exit: why.to_owned(),
            },
        }
    }
}

impl TranscriptLine {
    /// A file of the session cwd, at `file` relative to it.
    pub fn file(ext: &str, file: &str, content: &str) -> TranscriptLine {
        TranscriptLine {
            ext: ext.to_owned(),
            item: Item::File {
                file: file.to_owned(),
                content: content.to_owned(),
            },
        }
    }
}

/// Renumbers JSON-RPC ids (see the module docs). One per transcript: numbering follows the
/// order lines are given to [`IdNormalizer::normalize`].
#[derive(Debug, Default)]
pub struct IdNormalizer {
    /// (extension, side that sent the request, raw id as text) → normalised id.
    ids: HashMap<(String, Side, String), Value>,
    /// (extension, side) → requests numbered so far.
    counts: HashMap<(String, Side), u64>,
    /// (extension, normalised id as text) → the extension's own id (for answering it).
    originals: HashMap<(String, String), Value>,
}

impl IdNormalizer {
    fn id_for(&mut self, ext: &str, requester: Side, raw: &Value, assign: bool) -> Value {
        let key = (ext.to_owned(), requester, raw.to_string());
        if let Some(id) = self.ids.get(&key) {
            return id.clone();
        }
        if !assign {
            // A response to nothing we saw: keep it visible as it is.
            return raw.clone();
        }
        let n = self.counts.entry((ext.to_owned(), requester)).or_default();
        *n += 1;
        let id = match requester {
            Side::Host => json!(*n),
            Side::Ext => json!(format!("x{n}")),
        };
        if requester == Side::Ext {
            self.originals
                .insert((ext.to_owned(), id.to_string()), raw.clone());
        }
        self.ids.insert(key, id.clone());
        id
    }

    /// The line with its ids (and a `cancel`'s `params.id`) normalised.
    pub fn normalize(&mut self, line: &TranscriptLine) -> TranscriptLine {
        let Item::Line { from, msg } = &line.item else {
            return line.clone();
        };
        let mut msg = msg.clone();
        let ext = line.ext.as_str();
        let is_request = msg.get("method").is_some();
        if *from == Side::Host && msg.get("method").and_then(Value::as_str) == Some("initialize") {
            // A new process: its numbering starts again.
            self.ids.retain(|(e, _, _), _| e != ext);
            self.counts.retain(|(e, _), _| e != ext);
            self.originals.retain(|(e, _), _| e != ext);
        }
        if let Some(raw) = msg.get("id").cloned() {
            let (requester, assign) = match (is_request, from) {
                (true, side) => (*side, true),
                (false, Side::Host) => (Side::Ext, false),
                (false, Side::Ext) => (Side::Host, false),
            };
            msg["id"] = self.id_for(ext, requester, &raw, assign);
        }
        if msg.get("method").and_then(Value::as_str) == Some("cancel")
            && let Some(raw) = msg.pointer("/params/id").cloned()
        {
            msg["params"]["id"] = self.id_for(ext, Side::Host, &raw, false);
        }
        TranscriptLine {
            ext: line.ext.clone(),
            item: Item::Line { from: *from, msg },
        }
    }

    /// The id the extension `ext` itself used for the request normalised as `id`.
    pub fn original(&self, ext: &str, id: &Value) -> Option<Value> {
        self.originals
            .get(&(ext.to_owned(), id.to_string()))
            .cloned()
    }
}

/// Normalises a whole transcript (a fresh [`IdNormalizer`]).
pub fn normalize_all(lines: &[TranscriptLine]) -> Vec<TranscriptLine> {
    let mut n = IdNormalizer::default();
    lines.iter().map(|l| n.normalize(l)).collect()
}

/// A transcript as JSON lines (each ending with `\n`).
pub fn to_jsonl(lines: &[TranscriptLine]) -> String {
    lines
        .iter()
        .map(|l| format!("{}\n", serde_json::to_string(l).unwrap_or_default()))
        .collect()
}

/// Reads JSON lines; blank lines are skipped.
///
/// Errors: the 1-based number of the first line that is not a [`TranscriptLine`], with why.
pub fn parse_jsonl(text: &str) -> Result<Vec<TranscriptLine>, (usize, String)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| (i + 1, e.to_string())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_numbered_per_side_and_responses_follow_their_requests() {
        let lines = [
            TranscriptLine::line(
                "g",
                Side::Host,
                r#"{"jsonrpc":"2.0","id":7,"method":"intercept","params":{}}"#,
            ),
            TranscriptLine::line(
                "g",
                Side::Ext,
                r#"{"jsonrpc":"2.0","id":"g1","method":"ui/select","params":{}}"#,
            ),
            TranscriptLine::line(
                "g",
                Side::Host,
                r#"{"jsonrpc":"2.0","id":"g1","result":{"value":"No"}}"#,
            ),
            TranscriptLine::line("g", Side::Ext, r#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
            TranscriptLine::line(
                "g",
                Side::Host,
                r#"{"jsonrpc":"2.0","method":"cancel","params":{"id":7}}"#,
            ),
            TranscriptLine::exit("g", "exited (status 3)"),
        ];
        let mut n = IdNormalizer::default();
        let out: Vec<String> = lines
            .iter()
            .map(|l| serde_json::to_string(&n.normalize(l)).unwrap())
            .collect();
        assert_eq!(
            out,
            [
                r#"{"ext":"g","from":"host","msg":{"jsonrpc":"2.0","id":1,"method":"intercept","params":{}}}"#,
                r#"{"ext":"g","from":"ext","msg":{"jsonrpc":"2.0","id":"x1","method":"ui/select","params":{}}}"#,
                r#"{"ext":"g","from":"host","msg":{"jsonrpc":"2.0","id":"x1","result":{"value":"No"}}}"#,
                r#"{"ext":"g","from":"ext","msg":{"jsonrpc":"2.0","id":1,"result":{}}}"#,
                r#"{"ext":"g","from":"host","msg":{"jsonrpc":"2.0","method":"cancel","params":{"id":1}}}"#,
                r#"{"ext":"g","exit":"exited (status 3)"}"#,
            ]
        );
        assert_eq!(n.original("g", &json!("x1")), Some(json!("g1")));
        let text = to_jsonl(&normalize_all(&lines));
        assert_eq!(parse_jsonl(&text).unwrap(), normalize_all(&lines));
    }
}
