//! The tolerant streaming line reader (spec: format.md §6.1, divergences.md "Reading").
//!
//! pi reads a whole file into one string, `trim()`s it, splits on `"\n"`, skips blank lines
//! and silently drops lines `JSON.parse` rejects. This reader gives the same lines the same
//! verdicts while holding at most one line (plus a 64 KiB buffer) at a time, and reports every
//! line it rejects with its number instead of dropping it silently.

use std::io::{self, Read};
use std::ops::ControlFlow;

use crate::scan::{self, Scanned};
use pith_events::js::{is_js_whitespace, js_trim};

/// Buffer size of the reader (bytes read at a time); lines longer than this are still read
/// whole, the buffer growing to hold them.
const READ_BUFFER_BYTES: usize = 256 * 1024;

/// One non-blank line, as the reader judged it.
#[derive(Debug)]
pub enum LineEvent<'a> {
    /// The line is one JSON value.
    Parsed {
        /// 1-based line number (lines are counted by `\n`).
        line: usize,
        /// The line's text (UTF-8; invalid bytes replaced by U+FFFD as Node's decoder does).
        text: &'a str,
        /// Where the value and its eager members are in `text`.
        scanned: &'a Scanned,
        /// Byte offset of `text`'s first byte in the source, when `text` is the source's own
        /// bytes (`None` for a line whose invalid UTF-8 was replaced).
        offset: Option<u64>,
    },
    /// `JSON.parse` would reject the line.
    Invalid {
        /// 1-based line number.
        line: usize,
        /// The line's text, without its `\n`.
        text: &'a str,
        /// Why, e.g. `invalid JSON at byte 12: expected ':'`.
        reason: String,
    },
}

/// What the reader saw besides the lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadSummary {
    /// Bytes read.
    pub bytes: u64,
    /// Whether the data is empty or ends with `\n`. `false` means a torn last line: the next
    /// append must start a new line first (spec: divergences.md "Writing").
    pub ends_with_newline: bool,
    /// Whether any line held something other than whitespace.
    pub has_content: bool,
    /// Lines counted (the last one even without `\n`).
    pub lines: usize,
    /// The last non-blank line was judged only after its trailing JavaScript whitespace was
    /// trimmed (pi's whole-file `trim()`); a reader of part of a file must not do that.
    pub trimmed_last: bool,
}

/// Reads `source` line by line and calls `on_line` for every non-blank line, in order, until
/// it returns `ControlFlow::Break`.
///
/// Reproduces pi's whole-file `trim()`: the first non-blank line loses leading JavaScript
/// whitespace (a BOM, U+00A0 …) and the last one trailing JavaScript whitespace; any other
/// line is handed to the JSON grammar as it is (so a line starting with U+00A0 is invalid,
/// as in pi). A trailing `\r` is JSON whitespace, so CRLF files read like LF files.
///
/// Errors: only I/O errors of `source`.
pub fn read_lines<R: Read>(
    source: R,
    on_line: impl FnMut(LineEvent<'_>) -> ControlFlow<()>,
) -> io::Result<ReadSummary> {
    read_lines_after(source, false, on_line)
}

/// [`read_lines`] over a part of a file that starts at a line boundary: `after_content`
/// says whether a non-blank line came before it (then the first line is not trimmed at its
/// start). Line numbers and offsets count from the part's start.
///
/// Errors: only I/O errors of `source`.
pub fn read_lines_after<R: Read>(
    source: R,
    after_content: bool,
    mut on_line: impl FnMut(LineEvent<'_>) -> ControlFlow<()>,
) -> io::Result<ReadSummary> {
    let mut lines = Lines::new(source);
    let mut summary = ReadSummary {
        ends_with_newline: true,
        ..ReadSummary::default()
    };
    // Whether a non-blank line came before (in this part or before it).
    let mut seen_content = after_content;
    // A line that failed only possibly because of trailing JavaScript whitespace: it is
    // retried trimmed if it turns out to be the last non-blank line.
    let mut deferred: Option<(usize, String, String, Option<u64>)> = None;
    let mut line_no = 0;
    while let Some((raw, newline)) = lines.next_line()? {
        line_no += 1;
        let line_start = summary.bytes;
        summary.bytes += (raw.len() + usize::from(newline)) as u64;
        summary.ends_with_newline = newline;
        // Valid UTF-8 is the rule; Node's decoder turns invalid bytes into U+FFFD.
        let text = match std::str::from_utf8(raw) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(raw),
        };
        let lossless = matches!(text, std::borrow::Cow::Borrowed(_));
        let mut text: &str = &text;
        if !seen_content {
            text = text.trim_start_matches(is_js_whitespace);
        }
        // Only the start is ever trimmed before scanning, so the text begins that many bytes
        // into the line.
        let offset = lossless.then(|| line_start + (raw.len() - text.len()) as u64);
        if js_trim(text).is_empty() {
            continue;
        }
        summary.has_content = true;
        seen_content = true;
        if let Some((line, text, reason, _)) = deferred.take()
            && on_line(LineEvent::Invalid {
                line,
                text: &text,
                reason,
            })
            .is_break()
        {
            return Ok(summary);
        }
        let flow = match scan::scan(text.as_bytes()) {
            Ok(scanned) => on_line(LineEvent::Parsed {
                line: line_no,
                text,
                scanned: &scanned,
                offset,
            }),
            Err(e) => {
                if text.trim_end_matches(is_js_whitespace).len()
                    != text.trim_end_matches([' ', '\t', '\r', '\n']).len()
                {
                    deferred = Some((line_no, text.to_owned(), e.to_string(), offset));
                    ControlFlow::Continue(())
                } else {
                    on_line(LineEvent::Invalid {
                        line: line_no,
                        text,
                        reason: e.to_string(),
                    })
                }
            }
        };
        if flow.is_break() {
            return Ok(summary);
        }
    }
    summary.lines = line_no;
    if let Some((line, text, reason, offset)) = deferred {
        summary.trimmed_last = true;
        let trimmed = text.trim_end_matches(is_js_whitespace);
        // Nothing follows, so whether the callback wants more does not matter.
        let _ = match scan::scan(trimmed.as_bytes()) {
            Ok(scanned) => on_line(LineEvent::Parsed {
                line,
                text: trimmed,
                scanned: &scanned,
                offset,
            }),
            Err(_) => on_line(LineEvent::Invalid {
                line,
                text: &text,
                reason,
            }),
        };
    }
    Ok(summary)
}

/// The lines of a source, each borrowed from one buffer that holds a chunk of the source (or
/// a line longer than that), so a line is never copied on its way to the scanner.
struct Lines<R> {
    source: R,
    buf: Vec<u8>,
    /// Start of the next line in `buf`.
    start: usize,
    /// Bytes of `buf` that hold data.
    filled: usize,
    eof: bool,
}

impl<R: Read> Lines<R> {
    fn new(source: R) -> Lines<R> {
        Lines {
            source,
            buf: vec![0; READ_BUFFER_BYTES],
            start: 0,
            filled: 0,
            eof: false,
        }
    }

    /// The next line without its `\n`, and whether it had one; `None` at the end.
    ///
    /// Errors: the source's, but for `Interrupted`, which is retried.
    fn next_line(&mut self) -> io::Result<Option<(&[u8], bool)>> {
        // Bytes of the pending line already searched for a newline.
        let mut searched = 0;
        loop {
            let pending = &self.buf[self.start + searched..self.filled];
            if let Some(i) = memchr::memchr(b'\n', pending) {
                let (from, to) = (self.start, self.start + searched + i);
                self.start = to + 1;
                return Ok(Some((&self.buf[from..to], true)));
            }
            searched = self.filled - self.start;
            if self.eof {
                if searched == 0 {
                    return Ok(None);
                }
                let from = self.start;
                self.start = self.filled;
                return Ok(Some((&self.buf[from..self.filled], false)));
            }
            // Keep the pending line's start, and room for more of it.
            self.buf.copy_within(self.start..self.filled, 0);
            self.filled -= self.start;
            self.start = 0;
            if self.filled == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            match self.source.read(&mut self.buf[self.filled..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdicts(data: &[u8]) -> (Vec<(usize, bool, String)>, ReadSummary) {
        let mut out = Vec::new();
        let summary = read_lines(data, |ev| match ev {
            LineEvent::Parsed {
                line,
                text,
                scanned,
                ..
            } => {
                out.push((line, true, scanned.value.of(text).to_owned()));
                ControlFlow::Continue(())
            }
            LineEvent::Invalid { line, text, .. } => {
                out.push((line, false, text.to_owned()));
                ControlFlow::Continue(())
            }
        })
        .expect("reads");
        (out, summary)
    }

    #[test]
    fn bom_crlf_blank_and_garbage_lines() {
        let (v, s) =
            verdicts(b"\xEF\xBB\xBF{\"a\":1}\r\n\r\n  \ngarbage\n\xC2\xA0{\"b\":2}\n[3]\r\n");
        assert_eq!(
            v,
            vec![
                (1, true, "{\"a\":1}".into()),
                (4, false, "garbage".into()),
                (5, false, "\u{a0}{\"b\":2}".into()),
                (6, true, "[3]".into()),
            ]
        );
        assert!(s.ends_with_newline && s.has_content);
        assert_eq!(s.lines, 6);
    }

    #[test]
    fn torn_tail_and_trailing_js_whitespace() {
        let (v, s) = verdicts(b"{\"a\":1}\n{\"b\":2}\xC2\xA0\n{\"c\":");
        assert_eq!(v.len(), 3);
        assert!(!v[1].1, "NBSP after a middle line makes it invalid");
        assert!(!v[2].1);
        assert!(!s.ends_with_newline);
        let (v, _) = verdicts(b"{\"a\":1}\n{\"b\":2}\xE2\x80\xA8\n\n");
        assert_eq!(
            v[1],
            (2, true, "{\"b\":2}".into()),
            "the whole-file trim strips it at the end"
        );
    }

    #[test]
    fn leading_whitespace_lines_and_invalid_utf8() {
        let (v, s) = verdicts(b"\n\xC2\xA0\n {\"a\":\"\xFF\"}\n");
        assert_eq!(v, vec![(3, true, "{\"a\":\"\u{fffd}\"}".into())]);
        assert!(s.has_content);
        let (v, s) = verdicts(b" \n\t\n");
        assert!(v.is_empty() && !s.has_content);
        let (_, s) = verdicts(b"");
        assert!(s.ends_with_newline && !s.has_content);
    }
}
