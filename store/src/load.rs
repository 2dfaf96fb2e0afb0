//! Loading a session file: header check, entries, warnings, migration (spec: format.md §5–6,
//! divergences.md "Reading").

use std::fs::File;
use std::io::Read;
use std::ops::ControlFlow;
use std::path::Path;

use crate::entry::Entry;
use crate::error::{Error, Result};
use crate::header::Header;
use crate::migrate::{self, Migration};
use crate::reader::{LineEvent, ReadSummary, read_lines};
use crate::scan::Scanned;

mod halves;
pub(crate) use halves::{append_part, read_part};

/// A line pith skipped, and why. Skipped lines stay in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// 1-based line number; 0 for problems that concern the whole tree (cycles).
    pub line: usize,
    /// What is wrong, e.g. `invalid JSON at byte 40: unterminated string`.
    pub problem: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            f.write_str(&self.problem)
        } else {
            write!(f, "line {}: {}", self.line, self.problem)
        }
    }
}

/// A file that holds a session.
#[derive(Debug, Clone)]
pub struct LoadedLog {
    /// The header (after migration).
    pub header: Header,
    /// Every entry in file order (after migration).
    pub entries: Vec<Entry>,
    /// Lines that were skipped, in file order.
    pub warnings: Vec<Warning>,
    /// Size and tail facts of the file as read.
    pub summary: ReadSummary,
    /// Migration steps that ran in memory.
    pub migration: Migration,
    /// After a migration: the file's new lines (skipped lines kept verbatim in place), to be
    /// written back atomically by the caller.
    pub rewrite: Option<Vec<String>>,
    /// With [`Bodies::Elided`]: the entries whose message body was left out, each with where
    /// its whole text is in the file (empty otherwise, and after a migration).
    pub elided: Vec<Elided>,
    /// With [`Bodies::Elided`] from [`load_file_with`]: the CRC-32 of the
    /// [`ReadSummary::bytes`] bytes that were read, the very bytes the entries come from (an
    /// outline is checked against the file by it, see `crate::outline`).
    pub checksum: Option<u32>,
}

/// Whether a load keeps every message body (spec: format.md §6; the answers never differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bodies {
    /// Every entry holds its whole line.
    Kept,
    /// Message bodies of `from_bytes` or more are left out: such an entry holds its line
    /// with `message` cut down to its `role` (and `content: []` when it had content), enough
    /// for the tree, and [`LoadedLog::elided`] says where the whole line is, to be read back
    /// for the entries a context needs. For opening a big file for one context.
    Elided {
        /// Bodies shorter than this (bytes of JSON) are kept; [`Bodies::for_context`] uses
        /// 512, below which a second read saves nothing.
        from_bytes: usize,
        /// Lines that start at this byte offset of the file or later keep their bodies
        /// (`u64::MAX`: none do).
        kept_from: u64,
    },
}

impl Bodies {
    /// [`Bodies::Elided`] as pith opens a `len`-byte file for the context at its last entry:
    /// bodies of 512 bytes and more left out, but those in the last quarter of the file kept,
    /// since that context mostly reads them: reading and checking them a second time was a
    /// fifth of opening a 100 MiB session, and keeping them costs a quarter of the file.
    pub fn for_context(len: u64) -> Bodies {
        Bodies::Elided {
            from_bytes: ELIDED_FROM_BYTES,
            kept_from: len - len / 4,
        }
    }

    /// [`Bodies::Elided`] as pith opens a file whose outline it keeps (`crate::outline`):
    /// every body of 512 bytes and more left out.
    pub fn for_outline() -> Bodies {
        Bodies::Elided {
            from_bytes: ELIDED_FROM_BYTES,
            kept_from: u64::MAX,
        }
    }
}

/// The size (bytes of JSON) from which a message body is worth leaving out of a first read.
const ELIDED_FROM_BYTES: usize = 512;

/// A message entry whose body was left out by [`Bodies::Elided`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elided {
    /// Index into [`LoadedLog::entries`].
    pub index: usize,
    /// Byte offset of the entry's JSON text in the file.
    pub offset: u64,
    /// Length of the JSON text in bytes.
    pub len: usize,
}

/// What a file turned out to hold.
#[derive(Debug, Clone)]
pub enum Loaded {
    /// The file is empty or holds only whitespace: there is nothing to lose (pi writes a
    /// fresh header there, and so does pith when it opens it for writing).
    Blank(ReadSummary),
    /// A session (boxed: it is large next to `Blank`).
    Log(Box<LoadedLog>),
}

/// One line kept while a migration is pending.
enum Pending {
    /// A parsed value: index into the migration records, line number.
    Record(usize, usize),
    /// A line kept as it is (invalid JSON).
    Verbatim(String),
}

/// Loads the session in `path`.
///
/// `new_id` supplies ids when a v1 file is migrated. Errors: [`Error::Io`] when the file
/// cannot be read (including when it does not exist), [`Error::NotAFile`] for a device, FIFO or
/// directory, [`Error::NotASession`] when it has content but its first JSON value is not a
/// session header.
pub fn load_file(path: &Path, new_id: &mut dyn FnMut() -> String) -> Result<Loaded> {
    load_file_with(path, Bodies::Kept, new_id)
}

/// [`load_file`] with a choice of [`Bodies`]. Files of 16 MiB and more are read on two
/// threads where there are two cores (`load/halves.rs`), with the same result.
///
/// Errors: as [`load_file`].
pub fn load_file_with(
    path: &Path,
    bodies: Bodies,
    new_id: &mut dyn FnMut() -> String,
) -> Result<Loaded> {
    // A device or FIFO reads as empty (or blocks), and a blank file would get a fresh header
    // written over it: only regular files are sessions.
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::NotAFile(path.to_owned()));
    }
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    load_open_file(&file, meta.len(), path, bodies, new_id)
}

/// [`load_file_with`] over `file`, already open and `len` bytes long when its metadata was
/// read (a part written after that is read only by the one-pass reader).
///
/// Errors: as [`load_file`].
pub(crate) fn load_open_file(
    file: &File,
    len: u64,
    path: &Path,
    bodies: Bodies,
    new_id: &mut dyn FnMut() -> String,
) -> Result<Loaded> {
    let two_cores = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    if two_cores
        && len >= halves::FROM_BYTES
        && let Some(loaded) = halves::load_in_halves(file, path, (len / 2, len), bodies, new_id)?
    {
        return Ok(loaded);
    }
    let mut source = Checksummed::new(file, bodies);
    let mut loaded = load_from_with(&mut source, path, bodies, new_id)?;
    if let Loaded::Log(log) = &mut loaded {
        log.checksum = source.checksum();
    }
    Ok(loaded)
}

/// A reader that keeps the CRC-32 of what it has read, when bodies are left out (the load
/// may become an outline); otherwise it only reads.
pub(crate) struct Checksummed<R> {
    source: R,
    hasher: Option<crc32fast::Hasher>,
}

impl<R: Read> Checksummed<R> {
    pub(crate) fn new(source: R, bodies: Bodies) -> Checksummed<R> {
        Checksummed {
            source,
            hasher: matches!(bodies, Bodies::Elided { .. }).then(crc32fast::Hasher::new),
        }
    }

    /// The hasher of the bytes read so far, when bodies are left out.
    pub(crate) fn hasher(&self) -> Option<&crc32fast::Hasher> {
        self.hasher.as_ref()
    }

    pub(crate) fn checksum(&self) -> Option<u32> {
        self.hasher.clone().map(crc32fast::Hasher::finalize)
    }
}

impl<R: Read> Read for Checksummed<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.source.read(buf)?;
        if let Some(hasher) = &mut self.hasher {
            hasher.update(&buf[..n]);
        }
        Ok(n)
    }
}

/// [`load_file`] over any reader; `path` only names the source in errors.
///
/// Errors: as [`load_file`].
pub fn load_from<R: Read>(
    source: R,
    path: &Path,
    new_id: &mut dyn FnMut() -> String,
) -> Result<Loaded> {
    load_from_with(source, path, Bodies::Kept, new_id)
}

/// [`load_from`] with a choice of [`Bodies`].
///
/// Errors: as [`load_file`].
pub fn load_from_with<R: Read>(
    source: R,
    path: &Path,
    bodies: Bodies,
    new_id: &mut dyn FnMut() -> String,
) -> Result<Loaded> {
    let mut body = Body::new(bodies);
    let mut header: Option<Header> = None;
    let mut refusal: Option<(usize, String)> = None;
    let mut first_invalid: Option<(usize, String)> = None;
    let mut steps = Migration::default();
    // Lines before the header, kept for a migration rewrite.
    let mut pre_header: Vec<String> = Vec::new();
    let mut pending: Vec<Pending> = Vec::new();
    let mut records: Vec<String> = Vec::new();

    let summary = read_lines(source, |event| {
        match event {
            LineEvent::Invalid { line, text, reason } => {
                if header.is_none() {
                    first_invalid.get_or_insert((line, reason.clone()));
                    pre_header.push(text.to_owned());
                } else if steps.ran() {
                    pending.push(Pending::Verbatim(text.to_owned()));
                }
                body.invalid(line, reason);
            }
            LineEvent::Parsed {
                line,
                text,
                scanned,
                offset,
            } => {
                let value_text = scanned.value.of(text);
                let Some(_) = &header else {
                    match Header::parse(value_text) {
                        Ok(h) => {
                            steps = migrate::steps_for(h.version());
                            if steps.ran() {
                                records.push(value_text.to_owned());
                                pending.push(Pending::Record(0, line));
                            }
                            header = Some(h);
                        }
                        Err(bad) => {
                            refusal = Some((line, bad.to_string()));
                            return ControlFlow::Break(());
                        }
                    }
                    return ControlFlow::Continue(());
                };
                if steps.ran() {
                    pending.push(Pending::Record(records.len(), line));
                    records.push(value_text.to_owned());
                    return ControlFlow::Continue(());
                }
                body.add(text, scanned, line, offset);
            }
        }
        ControlFlow::Continue(())
    })
    .map_err(|e| Error::io(path, e))?;

    if let Some((line, reason)) = refusal {
        return Err(Error::NotASession {
            path: path.to_owned(),
            line,
            reason,
        });
    }
    let Some(header) = header else {
        return match first_invalid {
            Some((line, reason)) => Err(Error::NotASession {
                path: path.to_owned(),
                line,
                reason,
            }),
            None => Ok(Loaded::Blank(summary)),
        };
    };
    if !steps.ran() {
        return Ok(Loaded::Log(Box::new(LoadedLog {
            header,
            entries: body.entries,
            warnings: body.warnings,
            summary,
            migration: steps,
            rewrite: None,
            elided: body.elided,
            checksum: None,
        })));
    }
    let Body {
        mut entries,
        mut warnings,
        ..
    } = body;

    // Migration: edited texts in pi's index space, then back to lines.
    migrate::migrate(&mut records, steps, new_id);
    let mut lines = pre_header;
    let mut header = header;
    for item in pending {
        let (index, line) = match item {
            Pending::Verbatim(text) => {
                lines.push(text);
                continue;
            }
            Pending::Record(index, line) => (index, line),
        };
        let text = std::mem::take(&mut records[index]);
        if index == 0 {
            if let Ok(h) = Header::parse(&text) {
                header = h;
            }
        } else {
            match Entry::parse(&text, line) {
                Ok(entry) => entries.push(entry),
                Err(why) => warnings.push(Warning {
                    line,
                    problem: why.to_string(),
                }),
            }
        }
        lines.push(text);
    }
    warnings.sort_by_key(|w| w.line);
    Ok(Loaded::Log(Box::new(LoadedLog {
        header,
        entries,
        warnings,
        summary,
        migration: steps,
        rewrite: Some(lines),
        elided: Vec::new(),
        checksum: None,
    })))
}

/// The entries of a file's lines after its header, as they are read.
struct Body {
    bodies: Bodies,
    entries: Vec<Entry>,
    warnings: Vec<Warning>,
    elided: Vec<Elided>,
}

impl Body {
    fn new(bodies: Bodies) -> Body {
        Body {
            bodies,
            entries: Vec::new(),
            warnings: Vec::new(),
            elided: Vec::new(),
        }
    }

    /// A line `JSON.parse` would reject: skipped, with `reason` as its warning.
    fn invalid(&mut self, line: usize, reason: String) {
        self.warnings.push(Warning {
            line,
            problem: reason,
        });
    }

    /// Takes in one line after the header of a file without a pending migration.
    fn line(&mut self, event: LineEvent<'_>) {
        match event {
            LineEvent::Invalid { line, reason, .. } => self.invalid(line, reason),
            LineEvent::Parsed {
                line,
                text,
                scanned,
                offset,
            } => self.add(text, scanned, line, offset),
        }
    }

    /// Takes in one parsed line after the header (no migration pending): an entry, an
    /// entry without its body, or a warning saying why it is none.
    fn add(&mut self, text: &str, scanned: &Scanned, line: usize, offset: Option<u64>) {
        if let (
            Bodies::Elided {
                from_bytes,
                kept_from,
            },
            Some(offset),
        ) = (self.bodies, offset)
            && offset < kept_from
            && let Some(cut) = skeleton(text, scanned, from_bytes)
            // A line that scanned as an entry always gives one; if not, it is kept whole.
            && let Ok(entry) = Entry::parse(&cut, line)
        {
            self.elided.push(Elided {
                index: self.entries.len(),
                offset: offset + scanned.value.start as u64,
                len: scanned.value.end - scanned.value.start,
            });
            self.entries.push(entry);
            return;
        }
        match Entry::from_scanned(text, scanned, line) {
            Ok(entry) => self.entries.push(entry),
            Err(why) => self.warnings.push(Warning {
                line,
                problem: why.to_string(),
            }),
        }
    }
}

/// The line of a `message` entry with a large object `message` cut down to what the tree
/// reads: `role`, and whether there is `content` (see [`Bodies::Elided`]); `None` for any
/// other line, and for a body under `from_bytes`, which are kept whole.
fn skeleton(text: &str, scanned: &Scanned, from_bytes: usize) -> Option<String> {
    use crate::scan::string_value;
    let m = &scanned.members;
    if !scanned.is_object {
        return None;
    }
    let message = m.message?;
    if message.end - message.start < from_bytes
        || text.as_bytes().get(message.start) != Some(&b'{')
        || string_value(m.kind?.of(text)).as_deref() != Some("message")
        || string_value(m.id?.of(text)).is_none()
    {
        return None;
    }
    let mut stub = String::from("{");
    if let Some(role) = m.role {
        stub.push_str("\"role\":");
        stub.push_str(role.of(text));
    }
    if m.message_content.is_some_and(|c| c.of(text) != "null") {
        if m.role.is_some() {
            stub.push(',');
        }
        stub.push_str("\"content\":[]");
    }
    stub.push('}');
    let value = scanned.value;
    let mut out =
        String::with_capacity(value.end - value.start - (message.end - message.start) + stub.len());
    out.push_str(text.get(value.start..message.start)?);
    out.push_str(&stub);
    out.push_str(text.get(message.end..value.end)?);
    Some(out)
}
