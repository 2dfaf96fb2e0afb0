//! The bash tool's view of a running command's output, ported from pi's
//! `core/tools/output-accumulator.js`: bounded memory (a decoded tail of about 100 KB), line
//! and byte counts of everything, and the raw bytes spilled to a file once the output is over
//! the limits.

use super::spill::{OutputDir, SpillFile};
use super::truncate::{Limits, TruncatedBy, Truncation, truncate_tail};
use super::utf8::Utf8Stream;

/// A point-in-time view: what the model would be shown now.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The kept tail (same as `truncation.content`).
    pub content: String,
    /// Truncation facts about the whole output so far.
    pub truncation: Truncation,
    /// The spill file, once there is one.
    pub full_output_path: Option<String>,
}

/// Accumulates one command's output.
#[derive(Debug)]
pub struct OutputAccumulator {
    limits: Limits,
    /// The tail is trimmed back to this many bytes when it grows past twice as much.
    max_rolling_bytes: usize,
    prefix: &'static str,
    output_dir: OutputDir,
    decoder: Utf8Stream,
    /// Raw chunks held until a spill file is needed.
    raw_chunks: Vec<Vec<u8>>,
    tail: String,
    /// Whether `tail` begins at the start of a line (else its first line is partial).
    tail_starts_at_line_boundary: bool,
    total_raw_bytes: usize,
    total_decoded_bytes: usize,
    total_lines: usize,
    current_line_bytes: usize,
    finished: bool,
    spill: Option<SpillFile>,
    /// Set when the spill file could not be created, so it is not retried on every chunk.
    spill_failed: bool,
}

impl OutputAccumulator {
    /// An empty accumulator with pi's limits; spill files are `<prefix>-<hex>.log` in
    /// `output_dir`.
    pub fn new(prefix: &'static str, output_dir: OutputDir) -> Self {
        let limits = Limits::default();
        Self {
            limits,
            max_rolling_bytes: (limits.max_bytes * 2).max(1),
            prefix,
            output_dir,
            decoder: Utf8Stream::new(),
            raw_chunks: Vec::new(),
            tail: String::new(),
            tail_starts_at_line_boundary: true,
            total_raw_bytes: 0,
            total_decoded_bytes: 0,
            total_lines: 1,
            current_line_bytes: 0,
            finished: false,
            spill: None,
            spill_failed: false,
        }
    }

    /// Adds raw output bytes (stdout and stderr interleaved as they arrive).
    pub fn append(&mut self, data: &[u8]) {
        if self.finished {
            return;
        }
        self.total_raw_bytes += data.len();
        let text = self.decoder.decode(data);
        self.append_decoded(&text);
        if self.spill.is_some() || self.should_spill() {
            self.ensure_spill();
            if let Some(s) = self.spill.as_mut() {
                s.write(data);
            }
        } else if !data.is_empty() {
            self.raw_chunks.push(data.to_vec());
        }
    }

    /// Ends the output (flushes a split trailing character).
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let text = self.decoder.finish();
        self.append_decoded(&text);
        if self.should_spill() {
            self.ensure_spill();
        }
    }

    /// What would be shown now; creates the spill file if the output is truncated.
    pub fn snapshot(&mut self) -> Snapshot {
        let tail = truncate_tail(self.snapshot_text(), self.limits);
        let truncated = self.total_lines > self.limits.max_lines
            || self.total_decoded_bytes > self.limits.max_bytes;
        let truncated_by = truncated.then(|| {
            tail.truncated_by
                .unwrap_or(if self.total_decoded_bytes > self.limits.max_bytes {
                    TruncatedBy::Bytes
                } else {
                    TruncatedBy::Lines
                })
        });
        let truncation = Truncation {
            truncated,
            truncated_by,
            total_lines: self.total_lines,
            total_bytes: self.total_decoded_bytes,
            max_lines: self.limits.max_lines,
            max_bytes: self.limits.max_bytes,
            ..tail
        };
        if truncation.truncated {
            self.ensure_spill();
        }
        Snapshot {
            content: truncation.content.clone(),
            truncation,
            full_output_path: self.full_output_path(),
        }
    }

    /// The spill file's path, if one was created.
    pub fn full_output_path(&self) -> Option<String> {
        self.spill.as_ref().map(|s| s.path().display().to_string())
    }

    /// pi's `readFullOutput(maxBytes)`: the whole output as text (U+FFFD for invalid UTF-8)
    /// and `false`; when the spill file holds more than `max_bytes`, its first and last halves
    /// of `max_bytes` around `[... N bytes omitted ...]`, and `true`. Call after [`Self::close`].
    pub fn read_full_output(&self, max_bytes: usize) -> (String, bool) {
        let Some(path) = self.spill.as_ref().map(|s| s.path().to_path_buf()) else {
            return (
                String::from_utf8_lossy(&self.raw_chunks.concat()).into_owned(),
                false,
            );
        };
        let Ok(bytes) = std::fs::read(&path) else {
            return (String::new(), true);
        };
        if bytes.len() <= max_bytes {
            return (String::from_utf8_lossy(&bytes).into_owned(), false);
        }
        let head_bytes = max_bytes / 2;
        let tail_bytes = max_bytes - head_bytes;
        let head = &bytes[..head_bytes];
        // The head drops an incomplete last character; the tail skips continuation bytes.
        let head = match std::str::from_utf8(head) {
            Ok(t) => t.to_owned(),
            Err(e) if e.error_len().is_none() => {
                String::from_utf8_lossy(&head[..e.valid_up_to()]).into_owned()
            }
            Err(_) => String::from_utf8_lossy(head).into_owned(),
        };
        let mut tail = &bytes[bytes.len() - tail_bytes..];
        while tail.first().is_some_and(|b| b & 0xC0 == 0x80) {
            tail = &tail[1..];
        }
        let omitted = bytes.len() - head_bytes - tail_bytes;
        (
            format!(
                "{head}\n\n[... {omitted} bytes omitted ...]\n\n{}",
                String::from_utf8_lossy(tail)
            ),
            true,
        )
    }

    /// Bytes of the last (unfinished) line, for pi's "line is N KB" notice.
    pub fn last_line_bytes(&self) -> usize {
        self.current_line_bytes
    }

    /// Flushes the spill file.
    pub fn close(&mut self) {
        if let Some(s) = self.spill.as_mut() {
            s.close();
        }
    }

    fn append_decoded(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.total_decoded_bytes += text.len();
        self.tail.push_str(text);
        if self.tail.len() > self.max_rolling_bytes * 2 {
            self.trim_tail();
        }
        match text.rfind('\n') {
            None => self.current_line_bytes += text.len(),
            Some(last) => {
                self.total_lines += text.matches('\n').count();
                self.current_line_bytes = text.len() - last - 1;
            }
        }
    }

    fn trim_tail(&mut self) {
        let mut start = self.tail.len() - self.max_rolling_bytes;
        while !self.tail.is_char_boundary(start) {
            start += 1;
        }
        if start > 0 {
            self.tail_starts_at_line_boundary = self.tail.as_bytes()[start - 1] == b'\n';
        }
        self.tail.drain(..start);
    }

    fn snapshot_text(&self) -> &str {
        if self.tail_starts_at_line_boundary {
            return &self.tail;
        }
        match self.tail.find('\n') {
            Some(i) => &self.tail[i + 1..],
            None => &self.tail,
        }
    }

    fn should_spill(&self) -> bool {
        self.total_raw_bytes > self.limits.max_bytes
            || self.total_decoded_bytes > self.limits.max_bytes
            || self.total_lines > self.limits.max_lines
    }

    fn ensure_spill(&mut self) {
        if self.spill.is_some() || self.spill_failed {
            return;
        }
        match SpillFile::create(&self.output_dir, self.prefix) {
            Ok(mut s) => {
                for chunk in self.raw_chunks.drain(..) {
                    s.write(&chunk);
                }
                self.spill = Some(s);
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not create the full output file");
                self.spill_failed = true;
            }
        }
    }
}
