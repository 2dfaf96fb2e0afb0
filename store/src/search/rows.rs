//! The searchable texts of a session file, one per line that has any: the header (`id` and
//! `cwd`), each `session_info` name, and the text of each user and assistant message (pi's
//! `allMessagesText` pieces, read as the listing reads them).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::os::unix::fs::FileExt;

use crate::list::message_text::MessageView;
use crate::scan;
use pith_events::js::js_trim;

/// One searchable text and where its line is.
#[derive(Debug, Clone, PartialEq)]
pub struct TextRow {
    /// The entry's id; `None` for the header.
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
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        let terminated = buf.last() == Some(&b'\n');
        let len = if terminated { n - 1 } else { n };
        let line = String::from_utf8_lossy(&buf[..len]);
        if let Some((entry_id, text)) = text_of_line(&line, offset == 0) {
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

/// The searchable text of one line, with its entry id (`None` for the header). `first`
/// marks the file's first line, where a BOM and leading whitespace are allowed.
pub fn text_of_line(line: &str, first: bool) -> Option<(Option<String>, String)> {
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
            let id = string_at(m.id)?;
            let cwd = crate::header::Header::parse(scanned.value.of(line))
                .ok()
                .and_then(|h| h.cwd().map(str::to_owned))
                .unwrap_or_default();
            Some((None, format!("{id} {cwd}")))
        }
        Some("session_info") => {
            let id = string_at(m.id)?;
            let fields: serde_json::Map<String, serde_json::Value> =
                crate::entry::decode_json(scanned.value.of(line)).ok()?;
            let name = fields.get("name")?.as_str()?;
            let name = js_trim(name);
            (!name.is_empty()).then(|| (Some(id.into_owned()), name.to_owned()))
        }
        Some("message") => {
            let role = string_at(m.role)?;
            if role != "user" && role != "assistant" {
                return None;
            }
            let id = string_at(m.id)?;
            let view = MessageView::<true>::read(m.message?.of(line))?;
            let text = view.content?.text();
            (!text.is_empty()).then(|| (Some(id.into_owned()), text))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

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
            [
                (None, "S1 /w/p"),
                (Some("u1"), "Hello there"),
                (Some("a1"), "General Kenobi"),
                (Some("n1"), "my name"),
            ]
        );
        assert_eq!(rows.indexed_to, body.len() as u64);
        assert!(!rows.torn);
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
