//! Server-sent events: bytes in, complete events out.
//!
//! Follows the decoders pi relies on: pi-ai's own Anthropic SSE reader (`iterateSseMessages`)
//! and the OpenAI SDK's `SSEDecoder`. Lines end at `\n`, `\r\n` or `\r`; a line starting with
//! `:` is a comment; `field:value` loses one space after the colon; `event` and `data` are
//! kept (several `data` lines join with `\n`), other fields are ignored; an empty line ends
//! an event. Chunks may split anywhere, even inside a UTF-8 character, because a line is only
//! decoded once its end has arrived.

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

/// Incremental SSE decoder. Feed it with [`SseParser::push`]; call [`SseParser::finish`] when
/// the body ends.
#[derive(Debug, Default)]
pub struct SseParser {
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
    fn field_without_colon_and_empty_data() {
        let events = all_at_once(b"data\n\nevent: ping\n\n");
        assert_eq!(events[0].data, "");
        assert_eq!(events[0].event, None);
        assert_eq!(events[1].event.as_deref(), Some("ping"));
    }
}
