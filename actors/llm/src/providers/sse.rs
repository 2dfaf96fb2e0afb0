//! Server-sent events: bytes in, complete events out.
//!
//! Follows the decoders pi relies on: pi-ai's own Anthropic SSE reader (`iterateSseMessages`)
//! and the OpenAI SDK's `SSEDecoder`. Lines end at `\n`, `\r\n` or `\r`; a line starting with
//! `:` is a comment; `field:value` loses one space after the colon; `event` and `data` are
//! kept (several `data` lines join with `\n`), other fields are ignored; an empty line ends
//! an event. Chunks may split anywhere, even inside a UTF-8 character, because a line is only
//! decoded once its end has arrived. One UTF-8 byte order mark at the very start of the body
//! is dropped, as the SSE standard and JavaScript's `TextDecoder` do; kept, it would make the
//! first line's field `\u{feff}data` and lose the first event. (The OpenAI SDK decodes every
//! line on its own and so drops a mark at the start of any line; pith drops only the first,
//! as pi's Anthropic reader does.)
//!
//! [`GeminiChunks`] is `@google/genai`'s own splitter, which Gemini streams go through instead.

/// One event: its `event:` name, its joined `data:` lines, and every raw line it was made of
/// (comments included), which pi quotes in parse errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `None` when absent.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n` (empty when there were none).
    pub data: String,
    /// The lines seen since the previous event, as received (without line ends).
    pub raw: Vec<String>,
}

/// U+FEFF in UTF-8.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Incremental SSE decoder. Feed it with [`SseParser::push`]; call [`SseParser::finish`] when
/// the body ends.
#[derive(Debug, Default)]
pub struct SseParser {
    /// The body's first bytes, held while they may still be a byte order mark split across
    /// chunks.
    head: Vec<u8>,
    /// The body's start has been checked for a byte order mark.
    started: bool,
    /// Bytes of the line not yet ended.
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` starting the next one belongs to it.
    skip_lf: bool,
    event: Option<String>,
    data: Vec<String>,
    raw: Vec<String>,
}

impl SseParser {
    /// An empty decoder.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Decodes `bytes` (any slice of the body) and returns the events they complete, in
    /// order. Invalid UTF-8 becomes U+FFFD, as JavaScript's `TextDecoder` does.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        if self.started {
            return self.decode(bytes);
        }
        self.head.extend_from_slice(bytes);
        if self.head.len() < BOM.len() && BOM.starts_with(&self.head) {
            return Vec::new();
        }
        self.started = true;
        let head = std::mem::take(&mut self.head);
        self.decode(head.strip_prefix(BOM).unwrap_or(&head))
    }

    fn decode(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in bytes {
            if std::mem::take(&mut self.skip_lf) && b == b'\n' {
                continue;
            }
            if b == b'\n' || b == b'\r' {
                self.skip_lf = b == b'\r';
                let line = String::from_utf8_lossy(&self.line).into_owned();
                self.line.clear();
                if let Some(event) = self.line_done(line) {
                    out.push(event);
                }
            } else {
                self.line.push(b);
            }
        }
        out
    }

    /// The body ended. With `dispatch_trailing` (pi's Anthropic reader) an unterminated last
    /// line is decoded and a pending event without its closing empty line is still returned;
    /// without it (the OpenAI SDK) both are dropped.
    pub fn finish(&mut self, dispatch_trailing: bool) -> Option<SseEvent> {
        if !dispatch_trailing {
            return None;
        }
        // A body of only a partial byte order mark: those bytes are a line's start after all.
        if !self.started {
            self.started = true;
            self.line = std::mem::take(&mut self.head);
        }
        if !self.line.is_empty() {
            let line = String::from_utf8_lossy(&self.line).into_owned();
            self.line.clear();
            if let Some(event) = self.line_done(line) {
                return Some(event);
            }
        }
        self.dispatch()
    }

    fn line_done(&mut self, line: String) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        let (field, value) = match line.find(':') {
            Some(0) => {
                self.raw.push(line);
                return None;
            }
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => self.data.push(value.to_owned()),
            _ => {}
        }
        self.raw.push(line);
        None
    }

    /// Ends the current event. Like both JavaScript decoders, an empty line with neither a
    /// (non-empty) name nor data yields nothing and keeps the raw lines gathered so far.
    fn dispatch(&mut self) -> Option<SseEvent> {
        let unnamed = self.event.as_deref().is_none_or(str::is_empty);
        if unnamed && self.data.is_empty() {
            return None;
        }
        Some(SseEvent {
            event: self.event.take(),
            data: std::mem::take(&mut self.data).join("\n"),
            raw: std::mem::take(&mut self.raw),
        })
    }
}

/// `@google/genai`'s stream splitter (`processStreamResponse`): the body is cut at the first
/// of `\n\n`, `\r\r` or `\r\n\r\n`; a piece that starts with `data:` once trimmed is one
/// chunk, its text after the prefix trimmed again; other pieces are dropped. Bytes left over
/// when the body ends are an error unless they are only whitespace.
#[derive(Debug, Default)]
pub struct GeminiChunks {
    buffer: Vec<u8>,
}

/// The SDK's error for a body that ends inside a chunk.
pub const INCOMPLETE_SEGMENT: &str = "Incomplete JSON segment at the end";

impl GeminiChunks {
    /// An empty splitter.
    pub fn new() -> GeminiChunks {
        GeminiChunks::default()
    }

    /// Splits `bytes` (any slice of the body) and returns the chunks they complete, as
    /// events without a name. Invalid UTF-8 becomes U+FFFD.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some((at, len)) = first_delimiter(&self.buffer) {
            let piece = String::from_utf8_lossy(&self.buffer[..at]).into_owned();
            self.buffer.drain(..at + len);
            let trimmed = pith_events::js::js_trim(&piece);
            if let Some(data) = trimmed.strip_prefix("data:") {
                out.push(SseEvent {
                    event: None,
                    data: pith_events::js::js_trim(data).to_owned(),
                    raw: vec![piece.clone()],
                });
            }
        }
        out
    }

    /// The body ended.
    ///
    /// Errors: [`INCOMPLETE_SEGMENT`] when more than whitespace is left.
    pub fn finish(&mut self) -> Result<(), String> {
        let rest = String::from_utf8_lossy(&self.buffer).into_owned();
        self.buffer.clear();
        if pith_events::js::js_trim(&rest).is_empty() {
            Ok(())
        } else {
            Err(INCOMPLETE_SEGMENT.to_owned())
        }
    }
}

/// The earliest delimiter in `buffer`: its position and length.
fn first_delimiter(buffer: &[u8]) -> Option<(usize, usize)> {
    let find = |d: &[u8]| {
        buffer
            .windows(d.len())
            .position(|w| w == d)
            .map(|i| (i, d.len()))
    };
    [&b"\n\n"[..], b"\r\r", b"\r\n\r\n"]
        .into_iter()
        .filter_map(find)
        .min_by_key(|(at, _)| *at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_at_once(body: &[u8]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = p.push(body);
        out.extend(p.finish(true));
        out
    }

    fn byte_by_byte(body: &[u8]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for b in body {
            out.extend(p.push(std::slice::from_ref(b)));
        }
        out.extend(p.finish(true));
        out
    }

    #[test]
    fn splits_anywhere_and_handles_every_line_end() {
        let body = ": hello\r\nevent: a\r\ndata: x\u{e9}\u{1f600}\r\ndata:  two\r\n\r\nevent:b\rdata:y\r\rdata: z\n\nid: 5\nretry: 1\n\n";
        let expected = vec![
            SseEvent {
                event: Some("a".into()),
                data: "x\u{e9}\u{1f600}\n two".into(),
                raw: vec![
                    ": hello".into(),
                    "event: a".into(),
                    "data: x\u{e9}\u{1f600}".into(),
                    "data:  two".into(),
                ],
            },
            SseEvent {
                event: Some("b".into()),
                data: "y".into(),
                raw: vec!["event:b".into(), "data:y".into()],
            },
            SseEvent {
                event: None,
                data: "z".into(),
                raw: vec!["data: z".into()],
            },
        ];
        assert_eq!(all_at_once(body.as_bytes()), expected);
        assert_eq!(byte_by_byte(body.as_bytes()), expected);
    }

    #[test]
    fn trailing_event_is_dispatched_only_when_asked() {
        let mut p = SseParser::new();
        assert!(p.push(b"data: [DONE]").is_empty());
        assert_eq!(p.finish(true).map(|e| e.data), Some("[DONE]".to_owned()));
        let mut p = SseParser::new();
        assert!(p.push(b"data: {}\n").is_empty());
        assert_eq!(p.finish(false), None);
    }

    #[test]
    fn one_leading_byte_order_mark_is_dropped_even_split_across_chunks() {
        let body = "\u{feff}data: first\n\ndata: \u{feff}second\n\n";
        let expected = vec![
            SseEvent {
                event: None,
                data: "first".into(),
                raw: vec!["data: first".into()],
            },
            SseEvent {
                event: None,
                data: "\u{feff}second".into(),
                raw: vec!["data: \u{feff}second".into()],
            },
        ];
        assert_eq!(all_at_once(body.as_bytes()), expected);
        assert_eq!(byte_by_byte(body.as_bytes()), expected);
        let mut p = SseParser::new();
        let mut split = p.push(&body.as_bytes()[..2]);
        split.extend(p.push(&body.as_bytes()[2..9]));
        split.extend(p.push(&body.as_bytes()[9..]));
        assert_eq!(split, expected);
        // Only one: a second mark is part of the first line's field name.
        let twice = format!("\u{feff}{body}");
        assert_eq!(all_at_once(twice.as_bytes())[0].data, "\u{feff}second");
        // A body that only starts like a mark is decoded as it is.
        let mut p = SseParser::new();
        assert!(p.push(b"\xEF\xBB").is_empty());
        assert_eq!(p.finish(true), None);
        assert_eq!(
            byte_by_byte(b"\xEF\n\ndata: x\n\n")[0].raw,
            vec!["\u{fffd}".to_owned(), "data: x".to_owned()]
        );
    }

    #[test]
    fn field_without_colon_and_empty_data() {
        let events = all_at_once(b"data\n\nevent: ping\n\n");
        assert_eq!(events[0].data, "");
        assert_eq!(events[0].event, None);
        assert_eq!(events[1].event.as_deref(), Some("ping"));
    }

    #[test]
    fn gemini_chunks_split_as_the_google_sdk_does() {
        let body = "data: {\"a\":1}\r\n\r\n: comment\n\ndata:{\"b\":\"\u{e9}\"}\n\n  data: x \r\r";
        let mut whole = GeminiChunks::new();
        let got: Vec<String> = whole
            .push(body.as_bytes())
            .into_iter()
            .map(|e| e.data)
            .collect();
        assert_eq!(got, ["{\"a\":1}", "{\"b\":\"\u{e9}\"}", "x"]);
        assert_eq!(whole.finish(), Ok(()));
        let mut split = GeminiChunks::new();
        let mut got = Vec::new();
        for b in body.as_bytes() {
            got.extend(
                split
                    .push(std::slice::from_ref(b))
                    .into_iter()
                    .map(|e| e.data),
            );
        }
        assert_eq!(got, ["{\"a\":1}", "{\"b\":\"\u{e9}\"}", "x"]);
        let mut cut = GeminiChunks::new();
        assert!(cut.push(b"data: {\"a\":").is_empty());
        assert_eq!(cut.finish(), Err(INCOMPLETE_SEGMENT.to_owned()));
        let mut blank = GeminiChunks::new();
        assert!(blank.push(b"data: {}\n\n \n").len() == 1);
        assert_eq!(blank.finish(), Ok(()));
    }
}
