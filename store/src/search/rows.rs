//! What is searchable in a session file: one row per user or assistant message with text
//! (pi's `allMessagesText` pieces, read as the listing reads them), and the file's fields
//! (the header's id, cwd and time, the last `session_info` name, the last activity time).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::os::unix::fs::FileExt;

use crate::list::message_text::MessageView;
use crate::list::{activity_time, session_info_name};
use crate::scan;
use pith_events::js::js_trim;

/// One searchable text and where its line is.
#[derive(Debug, Clone, PartialEq)]
pub struct TextRow {
    /// The entry's id; `None` for an entry without one (a legacy file's).
    pub entry_id: Option<String>,
    /// The text as the session holds it (not normalised).
    pub text: String,
    /// Byte offset of the line in the file.
    pub offset: u64,
    /// Length of the line in bytes, without its `\n`.
    pub len: u32,
}

/// The rows of a file from byte `from` on, and how far they reach.
#[derive(Debug, Default)]
pub struct FileRows {
    /// Rows in file order.
    pub rows: Vec<TextRow>,
    /// Offset just past the last `\n`-terminated line read: where the next read starts.
    pub indexed_to: u64,
    /// The file ended with a line that has no `\n` (a torn or unterminated tail). Its row, if
    /// any, is in `rows`; the next read must start again from 0, since it may grow.
    pub torn: bool,
    /// The header's session id and cwd, when the header was read.
    pub session_id: Option<String>,
    /// See `session_id`.
    pub cwd: Option<String>,
    /// The last `session_info` name read, trimmed (`Some("")`: the name was cleared).
    pub name: Option<String>,
    /// The header's time in ms, when the header was read and has one.
    pub header_ms: Option<f64>,
    /// The latest activity time (ms) of the messages read, if any has one.
    pub activity_ms: Option<f64>,
}

/// What one line holds for search.
enum Line {
    /// The header: the session id, cwd and time (ms; `NaN`: none).
    Header { id: String, cwd: String, time: f64 },
    /// A `session_info` entry: its trimmed name (empty when it clears the name).
    Name { name: String },
    /// A user or assistant message with content: its entry id (none in a legacy file, whose
    /// entries pi still reads), text (maybe empty) and activity time.
    Message {
        entry_id: Option<String>,
        text: String,
        activity: Option<f64>,
    },
}

impl Line {
    /// The row of a message with text: its entry id and text. The header's id and cwd and
    /// the session's name are searched as the file's fields, as pi searches them, never as
    /// rows (pi's `allMessagesText` holds messages only).
    fn into_row(self) -> Option<(Option<String>, String)> {
        match self {
            Line::Message { entry_id, text, .. } if !text.is_empty() => Some((entry_id, text)),
            _ => None,
        }
    }
}

/// How many characters of the messages before it a message's row starts with: pi searches
/// the messages joined by spaces, so a phrase that runs from earlier messages into this one,
/// with up to this many characters before the boundary, is found in this message's row.
pub const TAIL_CHARS: usize = 64;

/// The last [`TAIL_CHARS`] characters of the session's normalised messages joined by
/// spaces, once `next` (a normalised message) follows those ending in `tail`. A blank
/// message vanishes in the join.
pub fn tail_after(tail: &str, next: &str) -> String {
    let joined = with_tail(tail, next);
    let skip = joined.chars().count().saturating_sub(TAIL_CHARS);
    joined.chars().skip(skip).collect()
}

/// What a message's row holds: the tail of the messages before it (see [`tail_after`]), a
/// space, and the normalised message, as in pi's joined text.
pub fn with_tail(tail: &str, message: &str) -> String {
    if tail.is_empty() || message.is_empty() {
        return format!("{tail}{message}");
    }
    format!("{tail} {message}")
}

/// Reads the searchable rows of `file` from byte `from` (0, or a line start recorded by an
/// earlier read). Lines that are not JSON or not entries give no row.
///
/// Errors: I/O errors of the file.
pub fn read_rows(file: &mut File, from: u64) -> io::Result<FileRows> {
    file.seek(SeekFrom::Start(from))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut out = FileRows {
        indexed_to: from,
        ..FileRows::default()
    };
    let mut buf = Vec::with_capacity(4096);
    let mut offset = from;
    // pi's rule, as the listing reads it (`list::InfoBuilder`): the first line that is JSON
    // must be a session header, else the file is no session; later header lines are nothing.
    let mut header_seen = from > 0;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        let terminated = buf.last() == Some(&b'\n');
        let len = if terminated { n - 1 } else { n };
        let line = String::from_utf8_lossy(&buf[..len]);
        let mut parsed = line_of(&line, offset == 0);
        if !header_seen {
            match parsed {
                Some(Line::Header { .. }) => header_seen = true,
                // Read again from the start if it changes.
                _ if is_json(&line, offset == 0) => {
                    return Ok(FileRows {
                        torn: true,
                        ..FileRows::default()
                    });
                }
                _ => {}
            }
        } else if matches!(parsed, Some(Line::Header { .. })) {
            parsed = None;
        }
        match &parsed {
            Some(Line::Header { id, cwd, time }) => {
                out.session_id = Some(id.clone());
                out.cwd = Some(cwd.clone());
                out.header_ms = Some(*time).filter(|t| !t.is_nan());
            }
            Some(Line::Name { name, .. }) => out.name = Some(name.clone()),
            Some(Line::Message {
                activity: Some(t), ..
            }) => out.activity_ms = Some(out.activity_ms.unwrap_or(0.0).max(*t)),
            _ => {}
        }
        if let Some((entry_id, text)) = parsed.and_then(Line::into_row) {
            out.rows.push(TextRow {
                entry_id,
                text,
                offset,
                len: u32::try_from(len).unwrap_or(u32::MAX),
            });
        }
        offset += n as u64;
        if terminated {
            out.indexed_to = offset;
        } else {
            out.torn = true;
        }
    }
    Ok(out)
}

/// Reads the line at `offset` (`len` bytes) of `file` and returns its row text again, as
/// [`read_rows`] would: how a search checks a candidate against the file, the truth.
pub fn row_at(file: &File, offset: u64, len: u32) -> Option<(Option<String>, String)> {
    let mut buf = vec![0u8; len as usize];
    file.read_exact_at(&mut buf, offset).ok()?;
    text_of_line(&String::from_utf8_lossy(&buf), offset == 0)
}

/// The searchable text of one line, with its entry id: a user or assistant message with
/// text. `first` marks the file's first line, where a BOM and leading whitespace are allowed.
pub fn text_of_line(line: &str, first: bool) -> Option<(Option<String>, String)> {
    line_of(line, first).and_then(Line::into_row)
}

/// Whether `line` holds one JSON value (blank and broken lines are skipped, as pi skips them).
fn is_json(line: &str, first: bool) -> bool {
    let line = if first { js_trim(line) } else { line.trim() };
    !line.is_empty() && scan::scan(line.as_bytes()).is_ok()
}

fn line_of(line: &str, first: bool) -> Option<Line> {
    let line = if first { js_trim(line) } else { line.trim() };
    if line.is_empty() {
        return None;
    }
    let scanned = scan::scan(line.as_bytes()).ok()?;
    if !scanned.is_object {
        return None;
    }
    let m = &scanned.members;
    let string_at = |span: Option<scan::Span>| span.and_then(|s| scan::string_value(s.of(line)));
    let kind = string_at(m.kind);
    match kind.as_deref() {
        Some("session") => {
            // What the listing takes for a header (a string id among other things).
            let header = crate::header::Header::parse(scanned.value.of(line)).ok()?;
            let time = match header.timestamp() {
                Some(serde_json::Value::String(s)) => pith_events::js::date_parse(s),
                _ => f64::NAN,
            };
            Some(Line::Header {
                id: header.id().to_owned(),
                cwd: header.cwd().unwrap_or_default().to_owned(),
                time,
            })
        }
        Some("session_info") => {
            let fields: serde_json::Map<String, serde_json::Value> =
                crate::entry::decode_json(scanned.value.of(line)).ok()?;
            Some(Line::Name {
                name: session_info_name(&fields)?.unwrap_or_default(),
            })
        }
        Some("message") => {
            let role = string_at(m.role)?;
            if role != "user" && role != "assistant" {
                return None;
            }
            let id = string_at(m.id);
            let view = MessageView::<true>::read(m.message?.of(line))?;
            let text = view.content?.text();
            let entry_ts = string_at(m.timestamp);
            Some(Line::Message {
                entry_id: id.map(|id| id.into_owned()),
                text,
                activity: activity_time(view.timestamp, entry_ts.as_deref()),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_tail_is_the_end_of_the_joined_messages() {
        let long = "x".repeat(70);
        let tail = tail_after("", &long);
        assert_eq!(tail.chars().count(), TAIL_CHARS);
        let tail = tail_after(&tail, "ab");
        assert_eq!(tail, format!("{} ab", "x".repeat(TAIL_CHARS - 3)));
        assert_eq!(tail_after("é end", ""), "é end");
        assert_eq!(with_tail("é end", "next one"), "é end next one");
        assert_eq!(with_tail("", "first"), "first");
    }

    #[test]
    fn rows_offsets_and_torn_tails() {
        let mut f = tempfile::tempfile().expect("tmp");
        let lines = [
            "\u{feff}{\"type\":\"session\",\"version\":3,\"id\":\"S1\",\"timestamp\":\"t\",\"cwd\":\"/w/p\"}",
            "{\"type\":\"message\",\"id\":\"u1\",\"parentId\":null,\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"Hello there\"}}",
            "not json",
            "{\"type\":\"message\",\"id\":\"t1\",\"parentId\":\"u1\",\"timestamp\":\"t\",\"message\":{\"role\":\"toolResult\",\"content\":[{\"type\":\"text\",\"text\":\"hidden\"}]}}",
            "{\"type\":\"message\",\"id\":\"a1\",\"parentId\":\"t1\",\"timestamp\":\"t\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"x\"},{\"type\":\"text\",\"text\":\"General\"},{\"type\":\"text\",\"text\":\"Kenobi\"}]}}",
            "{\"type\":\"session_info\",\"id\":\"n1\",\"parentId\":\"a1\",\"timestamp\":\"t\",\"name\":\"  my name \"}",
        ];
        let body = lines.join("\n") + "\n";
        f.write_all(body.as_bytes()).expect("write");
        let rows = read_rows(&mut f, 0).expect("rows");
        let got: Vec<(Option<&str>, &str)> = rows
            .rows
            .iter()
            .map(|r| (r.entry_id.as_deref(), r.text.as_str()))
            .collect();
        assert_eq!(
            got,
            [(Some("u1"), "Hello there"), (Some("a1"), "General Kenobi"),]
        );
        assert_eq!(rows.session_id.as_deref(), Some("S1"));
        assert_eq!(rows.indexed_to, body.len() as u64);
        assert!(!rows.torn);
        assert_eq!(rows.cwd.as_deref(), Some("/w/p"));
        assert_eq!(rows.name.as_deref(), Some("my name"));
        for r in &rows.rows {
            let (id, text) = row_at(&f, r.offset, r.len).expect("row again");
            assert_eq!((id, text), (r.entry_id.clone(), r.text.clone()));
        }
        // Appending a torn line: read from where the last read stopped.
        f.write_all(b"{\"type\":\"message\",\"id\":\"u2\",\"parentId\":\"n1\",\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"more\"}}")
            .expect("write");
        let more = read_rows(&mut f, rows.indexed_to).expect("rows");
        assert_eq!(more.rows.len(), 1);
        assert!(more.torn);
        assert_eq!(more.indexed_to, body.len() as u64);
    }
}
