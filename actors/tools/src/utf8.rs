//! Streaming UTF-8 decoding with replacement, as a WHATWG `TextDecoder` (which pi uses on
//! command output) does: a character split across chunks is kept for the next chunk, invalid
//! bytes become U+FFFD (one per maximal invalid subpart) and a leading BOM is dropped.

/// Decodes a byte stream chunk by chunk.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    /// Bytes of a character that the last chunk ended inside of (at most 3).
    pending: Vec<u8>,
    /// Whether any text was produced yet (the BOM is only dropped at the very start).
    started: bool,
}

impl Utf8Stream {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes `chunk`, keeping an incomplete trailing character for the next call.
    pub fn decode(&mut self, chunk: &[u8]) -> String {
        let mut buf = std::mem::take(&mut self.pending);
        buf.extend_from_slice(chunk);
        let mut out = String::with_capacity(buf.len());
        let mut rest = buf.as_slice();
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    out.push_str(s);
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(n) => {
                            out.push('\u{FFFD}');
                            rest = &after[n..];
                        }
                        None => {
                            self.pending = after.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        self.strip_bom(out)
    }

    /// Ends the stream: an incomplete trailing character becomes one U+FFFD.
    pub fn finish(&mut self) -> String {
        if self.pending.is_empty() {
            return String::new();
        }
        self.pending.clear();
        self.strip_bom("\u{FFFD}".to_owned())
    }

    fn strip_bom(&mut self, text: String) -> String {
        if self.started || text.is_empty() {
            return text;
        }
        self.started = true;
        match text.strip_prefix('\u{FEFF}') {
            Some(rest) => rest.to_owned(),
            None => text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_characters_and_garbage() {
        let mut d = Utf8Stream::new();
        let euro = "€".as_bytes();
        assert_eq!(d.decode(&[0xEF, 0xBB, 0xBF, b'a', euro[0]]), "a");
        assert_eq!(d.decode(&euro[1..]), "€");
        assert_eq!(d.decode(&[0xFF, b'b', 0xE2, 0x82]), "\u{FFFD}b");
        assert_eq!(d.finish(), "\u{FFFD}");
    }
}
