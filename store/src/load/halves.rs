//! Reading a large session file on two threads: the first half as [`load_from_with`] reads a
//! file, the second from the first line boundary after the middle, joined as if read in one
//! pass (same entries, warnings, line numbers and summary). Validating every line is most of
//! an open; a second core halves it.
//!
//! Anything a half cannot judge alone falls back to one pass: a file whose header is not in
//! the first half, a migration, and a last line of the first half that was judged only after
//! trimming (pi's whole-file `trim()`).

use std::fs::File;
use std::io::Read;
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::{Bodies, Body, Checksummed, Loaded, LoadedLog, Warning, load_from_with};
use crate::error::{Error, Result};
use crate::reader::{ReadSummary, read_lines_after};

/// Files smaller than this (bytes) are read in one pass: a thread costs more than it saves.
pub(super) const FROM_BYTES: u64 = 16 << 20;

/// Loads `file` (`len` bytes, named `path` in errors) in two parts split at the first line
/// boundary after byte `middle`; `None` when it must be read in one pass instead (see the
/// module docs).
///
/// Errors: as [`super::load_file`].
pub(super) fn load_in_halves(
    file: &File,
    path: &Path,
    (middle, len): (u64, u64),
    bodies: Bodies,
    new_id: &mut dyn FnMut() -> String,
) -> Result<Option<Loaded>> {
    let Some(split) = line_start_after(file, middle, len).map_err(|e| Error::io(path, e))? else {
        return Ok(None);
    };
    let (first, second) = std::thread::scope(|scope| {
        let second = scope.spawn(|| read_part(file, split, len, bodies));
        let mut source = Checksummed::new(Part::new(file, 0, split), bodies);
        let first =
            load_from_with(&mut source, path, bodies, new_id).map(|loaded| (loaded, source));
        // The thread only reads; a panic there is a bug to surface, not to hide.
        let second = second
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (first, second)
    });
    // An error or a blank first half may be a header further on: one pass decides.
    let (mut log, hasher) = match first {
        // The first half must end exactly at the split, on a line end: a byte changed there
        // since the split was found would join two lines or cut one.
        Ok((Loaded::Log(log), source))
            if log.rewrite.is_none()
                && !log.summary.trimmed_last
                && log.summary.bytes == split
                && log.summary.ends_with_newline =>
        {
            (log, source.hasher().cloned())
        }
        _ => return Ok(None),
    };
    let part = second.map_err(|e| Error::io(path, e))?;
    append_part(&mut log, hasher, part, split);
    Ok(Some(Loaded::Log(log)))
}

/// The lines of a file after its header, read from a line boundary on by [`read_part`].
pub(crate) struct BodyPart {
    body: Body,
    summary: ReadSummary,
    hasher: Option<crc32fast::Hasher>,
}

/// Joins `part`, read from byte `split` (the end of what `log` read), to `log` as if read in
/// one pass: line numbers, entry indexes and offsets moved on, the summary and checksum
/// (`hasher`: of what `log` read) those of the whole.
pub(crate) fn append_part(
    log: &mut LoadedLog,
    hasher: Option<crc32fast::Hasher>,
    part: BodyPart,
    split: u64,
) {
    let BodyPart {
        body,
        summary: tail,
        hasher: tail_hasher,
    } = part;
    let lines_before = log.summary.lines;
    let entries_before = log.entries.len();
    log.entries.extend(body.entries.into_iter().map(|mut e| {
        e.shift_line(lines_before);
        e
    }));
    log.warnings
        .extend(body.warnings.into_iter().map(|w| Warning {
            line: w.line + lines_before,
            ..w
        }));
    log.elided.extend(body.elided.into_iter().map(|mut at| {
        at.index += entries_before;
        at.offset += split;
        at
    }));
    log.summary = ReadSummary {
        bytes: log.summary.bytes + tail.bytes,
        ends_with_newline: tail.ends_with_newline,
        has_content: log.summary.has_content || tail.has_content,
        lines: lines_before + tail.lines,
        trimmed_last: tail.trimmed_last,
    };
    log.checksum = hasher.zip(tail_hasher).map(|(mut head, tail)| {
        head.combine(&tail);
        head.finalize()
    });
}

/// The entries and warnings of the lines from `start` to `end` (after the header), with the
/// checksum of those bytes when `bodies` leaves bodies out.
pub(crate) fn read_part(
    file: &File,
    start: u64,
    end: u64,
    bodies: Bodies,
) -> std::io::Result<BodyPart> {
    // The part's offsets count from its start.
    let bodies = match bodies {
        Bodies::Elided {
            from_bytes,
            kept_from,
        } => Bodies::Elided {
            from_bytes,
            kept_from: kept_from.saturating_sub(start),
        },
        Bodies::Kept => Bodies::Kept,
    };
    let mut body = Body::new(bodies);
    let mut source = Checksummed::new(Part::new(file, start, end), bodies);
    let summary = read_lines_after(&mut source, true, |event| {
        body.line(event);
        ControlFlow::Continue(())
    })?;
    Ok(BodyPart {
        body,
        summary,
        hasher: source.hasher().cloned(),
    })
}

/// The offset just after the first `\n` at or after `from`; `None` when there is none
/// before `len` (or it is the last byte).
fn line_start_after(file: &File, from: u64, len: u64) -> std::io::Result<Option<u64>> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut pos = from;
    while pos < len {
        let n = file.read_at(&mut buf, pos)?;
        if n == 0 {
            return Ok(None);
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            let start = pos + i as u64 + 1;
            return Ok((start < len).then_some(start));
        }
        pos += n as u64;
    }
    Ok(None)
}

/// Bytes `pos..end` of a file, read by offset (so two threads can share the file).
struct Part<'f> {
    file: &'f File,
    pos: u64,
    end: u64,
}

impl<'f> Part<'f> {
    fn new(file: &'f File, pos: u64, end: u64) -> Part<'f> {
        Part { file, pos, end }
    }
}

impl Read for Part<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of every kind the reader judges: entries with large and small bodies, invalid
    /// JSON, a non-entry, blank and CRLF lines, invalid UTF-8, trailing U+00A0, and a torn
    /// last line.
    fn sample() -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(br#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#);
        out.push(b'\n');
        let mut parent = "null".to_owned();
        for i in 0..24 {
            let text = "x".repeat(if i % 3 == 0 { 900 } else { 20 });
            let line = format!(
                r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2025-01-01T00:00:{:02}.000Z","message":{{"role":"user","content":"{text}"}}}}"#,
                i % 60
            );
            out.extend_from_slice(line.as_bytes());
            out.extend_from_slice(match i % 7 {
                0 => b"\r\n".as_slice(),
                1 => b"\n\n  \n",
                _ => b"\n",
            });
            match i % 11 {
                3 => out.extend_from_slice(b"{not json\n"),
                5 => out.extend_from_slice(b"[1,2]\n"),
                7 => out.extend_from_slice(b"{\"type\":\"label\",\"id\":\"l\xff\"}\n"),
                // Valid only if it were the file's last line (trailing U+00A0).
                9 => out.extend_from_slice(b"{\"type\":\"label\",\"id\":\"nb\"}\xc2\xa0\n"),
                _ => {}
            }
            parent = format!("\"e{i}\"");
        }
        out.extend_from_slice(br#"{"type":"label","id":"torn""#);
        out
    }

    fn facts(loaded: &Loaded) -> String {
        let Loaded::Log(log) = loaded else {
            return "blank".into();
        };
        let entries: Vec<(usize, &str)> = log.entries.iter().map(|e| (e.line(), e.raw())).collect();
        format!(
            "{entries:?}\n{:?}\n{:?}\n{:?}",
            log.warnings, log.summary, log.elided
        )
    }

    #[test]
    fn every_split_point_gives_the_one_pass_result() {
        let data = sample();
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, &data).expect("write");
        let file = File::open(&path).expect("open");
        let len = data.len() as u64;
        let elided = |kept_from| Bodies::Elided {
            from_bytes: 100,
            kept_from,
        };
        for bodies in [Bodies::Kept, elided(u64::MAX), elided(len / 2), elided(0)] {
            let whole =
                load_from_with(data.as_slice(), &path, bodies, &mut || "id".into()).expect("loads");
            let mut split_runs = 0;
            // Every 5th byte: lands on every kind of line and on both ends of each.
            for middle in (0..len).step_by(5) {
                let halves =
                    load_in_halves(&file, &path, (middle, len), bodies, &mut || "id".into())
                        .expect("loads");
                if let Some(halves) = halves {
                    assert_eq!(facts(&halves), facts(&whole), "split after byte {middle}");
                    split_runs += 1;
                }
            }
            assert!(split_runs as u64 > len / 10, "only {split_runs} splits ran");
        }
    }

    #[test]
    fn a_first_half_without_the_header_reads_in_one_pass() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("s.jsonl");
        std::fs::write(
            &path,
            b"garbage\n{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n",
        )
        .expect("write");
        let file = File::open(&path).expect("open");
        let halves = load_in_halves(&file, &path, (0, 47), Bodies::Kept, &mut || "id".into());
        assert!(matches!(halves, Ok(None)), "{halves:?}");
        let whole = super::super::load_file(&path, &mut || "id".into()).expect("one pass");
        assert!(matches!(whole, Loaded::Log(_)));
    }
}
