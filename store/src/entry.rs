//! One entry of the log as pith holds it: the raw JSON text plus the few members read eagerly.
//!
//! A line pith did not create is never re-serialized: `raw` is written back as it was read
//! (unknown members, key order and number spelling intact). The eager members (`type`, `id`,
//! `parentId`, `timestamp` span, `message` span and role) are what opening, the tree and the
//! context walk need; everything else is decoded on demand with [`Entry::decode`].

use std::borrow::Cow;
use std::sync::Arc;

use body_in_file::BodyInFile;
pub use body_in_file::BodySource;
pub(crate) use body_in_file::read_back_all;

use pith_events::{AgentMessage, EntryType, SessionEntry};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::scan::{self, Scanned, Span};

/// `parentId` as written. pi treats `null`, a missing key and any non-string alike as "no
/// parent" when walking a path; the tree additionally distinguishes them only for display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parent {
    /// `"parentId": null`, or missing, or not a string: a root.
    None,
    /// `"parentId": "<id>"`.
    Id(Arc<str>),
}

impl Parent {
    /// The parent id, if it is a string.
    pub fn id(&self) -> Option<&str> {
        match self {
            Parent::None => None,
            Parent::Id(id) => Some(id),
        }
    }
}

/// `message.role` of a `message` entry, when it is a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// `system` (pi ≥ 0.86): prompt and tool state (spec: format.md §3.3).
    System,
    /// `user`
    User,
    /// `assistant`
    Assistant,
    /// `toolResult`
    ToolResult,
    /// `bashExecution`
    BashExecution,
    /// `custom`
    Custom,
    /// Any other role string (including the v2 `hookMessage`).
    Other(Box<str>),
}

impl Role {
    /// The role string as written.
    pub fn as_str(&self) -> &str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::ToolResult => "toolResult",
            Role::BashExecution => "bashExecution",
            Role::Custom => "custom",
            Role::Other(other) => other,
        }
    }

    fn parse(s: &str) -> Role {
        match s {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "toolResult" => Role::ToolResult,
            "bashExecution" => Role::BashExecution,
            "custom" => Role::Custom,
            other => Role::Other(other.into()),
        }
    }
}

/// One entry line (spec: format.md §2). Cheap to clone: the text is shared.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The JSON object exactly as read or written (no line terminator, no surrounding blanks).
    raw: Arc<str>,
    /// `type`; [`EntryType::Unknown`] with `""` when the member is missing or not a string.
    kind: EntryType,
    /// `id`; entries always have a string id (lines without one are skipped on load).
    id: Arc<str>,
    parent: Parent,
    /// Span of the raw `timestamp` value, for the tree's ordering and projected timestamps.
    timestamp: Option<Span>,
    /// Span of the raw `message` value, so the context can hand it out without decoding.
    message: Option<Span>,
    role: Option<Role>,
    /// `message` is an object whose `content` is `null` or missing, which the context
    /// normalises (spec: tree-and-context.md §7.2 rule 7); known at scan time so the projection
    /// never re-reads a message body.
    null_content: bool,
    /// 1-based line in the file it was read from; 0 for entries appended in this process.
    line: usize,
    /// The text holds a number beyond f64's range (see [`Entry::js_raw`]).
    huge_numbers: bool,
    /// Set when `raw` is the line with its message body left out (see
    /// [`crate::load::Bodies::Elided`]): where the whole line is, read back on first use.
    in_file: Option<Arc<BodyInFile>>,
}

/// An entry's text as held and its eager members, as an outline keeps them (see
/// `crate::outline`): read back without scanning the text again.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Held<'a> {
    line: usize,
    raw: &'a str,
    kind: &'a str,
    id: &'a str,
    parent: Option<&'a str>,
    timestamp: Option<(usize, usize)>,
    message: Option<(usize, usize)>,
    role: Option<&'a str>,
    null_content: bool,
    huge_numbers: bool,
}

/// Why a parsed line cannot be an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotAnEntry {
    /// The line is valid JSON but not an object (`42`, `null`, `[…]`).
    NotAnObject,
    /// The object has no string `id`.
    NoStringId,
    /// The object is a session header (`type: "session"`), not an entry.
    Header,
}

impl std::fmt::Display for NotAnEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotAnEntry::NotAnObject => "a JSON value that is not an object",
            NotAnEntry::NoStringId => "an entry without a string \"id\"",
            NotAnEntry::Header => "a second session header",
        })
    }
}

impl Entry {
    /// Builds an entry from one scanned JSON text. `text` must be the slice [`scan::scan`] saw.
    ///
    /// Errors: [`NotAnEntry`] when the value cannot be an entry (spec: divergences.md
    /// "Reading": such lines are skipped with a warning).
    pub fn from_scanned(text: &str, scanned: &Scanned, line: usize) -> Result<Entry, NotAnEntry> {
        if !scanned.is_object {
            return Err(NotAnEntry::NotAnObject);
        }
        let m = &scanned.members;
        let string_at = |span: Option<Span>| span.and_then(|s| scan::string_value(s.of(text)));
        let kind = match string_at(m.kind) {
            Some(t) if t == "session" => return Err(NotAnEntry::Header),
            Some(t) => EntryType::parse(&t),
            None => EntryType::Unknown(String::new()),
        };
        let id: Arc<str> = match string_at(m.id) {
            Some(id) => id.into(),
            None => return Err(NotAnEntry::NoStringId),
        };
        let parent = match string_at(m.parent_id) {
            Some(p) => Parent::Id(p.into()),
            None => Parent::None,
        };
        let role = string_at(m.role).map(|r| Role::parse(&r));
        let message_is_object = m
            .message
            .is_some_and(|s| text.as_bytes().get(s.start) == Some(&b'{'));
        let null_content =
            message_is_object && m.message_content.is_none_or(|c| c.of(text) == "null");
        let base = scanned.value.start;
        let shift = |s: Span| Span {
            start: s.start - base,
            end: s.end - base,
        };
        Ok(Entry {
            raw: scanned.value.of(text).into(),
            kind,
            id,
            parent,
            timestamp: m.timestamp.map(shift),
            message: m.message.map(shift),
            role,
            null_content,
            line,
            huge_numbers: scanned.huge_numbers,
            in_file: None,
        })
    }

    /// Makes this entry, read with its message body left out, stand for the whole line of
    /// `len` bytes at byte `offset` of `source`: the eager members are this entry's, and
    /// everything that reads the body ([`Entry::raw`], [`Entry::message_raw`], decoding)
    /// reads the whole line back on first use and keeps it. If it cannot be read back as
    /// the same entry (same id, parent and type), the cut line stands and
    /// [`Entry::read_back`] says why.
    pub fn set_body_in(&mut self, source: Arc<BodySource>, offset: u64, len: usize) {
        self.in_file = Some(Arc::new(BodyInFile::new(source, offset, len)));
    }

    /// The entry with its whole line: `self`, or for an entry made by
    /// [`Entry::set_body_in`] the line read back (the cut one if that failed).
    fn whole(&self) -> &Entry {
        match &self.in_file {
            Some(body) => body.whole(self).unwrap_or(self),
            None => self,
        }
    }

    /// Whether this entry's message body is left in the file (see [`Entry::set_body_in`])
    /// and not read back yet.
    pub fn body_in_file(&self) -> bool {
        self.in_file.as_ref().is_some_and(|b| !b.is_read())
    }

    /// Reads the whole line back now if it is left in the file.
    ///
    /// Errors: [`crate::Error::BodyChanged`] when the line is no longer in the file as it
    /// was read (the file was changed in place); [`Entry::raw`] then gives the line with
    /// its body cut, which must not be copied anywhere as the entry.
    pub fn read_back(&self) -> Result<(), crate::Error> {
        match &self.in_file {
            Some(body) if body.whole(self).is_none() => Err(body.changed()),
            _ => Ok(()),
        }
    }

    /// Parses one JSON text (a line without its terminator) into an entry.
    ///
    /// Errors: a message naming what is wrong (invalid JSON with its byte offset, or why the
    /// value is not an entry).
    pub fn parse(text: &str, line: usize) -> Result<Entry, crate::Error> {
        let invalid = |e: &dyn std::fmt::Display| crate::Error::InvalidEntry {
            reason: e.to_string(),
        };
        let scanned = scan::scan(text.as_bytes()).map_err(|e| invalid(&e))?;
        Entry::from_scanned(text, &scanned, line).map_err(|e| invalid(&e))
    }

    /// What this entry holds, for an outline (its body left in the file stays there).
    pub(crate) fn held(&self) -> Held<'_> {
        let span = |s: Option<Span>| s.map(|s| (s.start, s.end));
        Held {
            line: self.line,
            raw: &self.raw,
            kind: self.kind.as_str(),
            id: &self.id,
            parent: self.parent.id(),
            timestamp: span(self.timestamp),
            message: span(self.message),
            role: self.role.as_ref().map(Role::as_str),
            null_content: self.null_content,
            huge_numbers: self.huge_numbers,
        }
    }

    /// The entry an outline held (see [`Entry::held`]); `None` when a span falls outside
    /// its text (a damaged outline).
    pub(crate) fn from_held(held: &Held<'_>) -> Option<Entry> {
        let span = |s: Option<(usize, usize)>| match s {
            None => Some(None),
            Some((start, end)) => held.raw.get(start..end).map(|_| Some(Span { start, end })),
        };
        Some(Entry {
            raw: held.raw.into(),
            kind: EntryType::parse(held.kind),
            id: held.id.into(),
            parent: held.parent.map_or(Parent::None, |p| Parent::Id(p.into())),
            timestamp: span(held.timestamp)?,
            message: span(held.message)?,
            role: held.role.map(Role::parse),
            null_content: held.null_content,
            line: held.line,
            huge_numbers: held.huge_numbers,
            in_file: None,
        })
    }

    /// The raw JSON object text.
    pub fn raw(&self) -> &str {
        &self.whole().raw
    }

    /// The raw text as pi would print the parsed entry: identical to [`Entry::raw`] unless a
    /// number is beyond f64's range, which `JSON.stringify` writes as `null`.
    pub fn js_raw(&self) -> Cow<'_, str> {
        let whole = self.whole();
        if whole.huge_numbers {
            scan::js_compatible(&whole.raw)
        } else {
            Cow::Borrowed(&whole.raw)
        }
    }

    /// The `message` member as pi would print it (see [`Entry::js_raw`]).
    pub fn js_message_raw(&self) -> Option<Cow<'_, str>> {
        let m = self.message_raw()?;
        Some(if self.whole().huge_numbers {
            scan::js_compatible(m)
        } else {
            Cow::Borrowed(m)
        })
    }

    /// The shared raw text (for copying an entry into another session without re-encoding).
    pub fn raw_shared(&self) -> &Arc<str> {
        &self.whole().raw
    }

    /// `type`.
    pub fn kind(&self) -> &EntryType {
        &self.kind
    }

    /// `id`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The shared `id` string.
    pub fn id_shared(&self) -> &Arc<str> {
        &self.id
    }

    /// `parentId`.
    pub fn parent(&self) -> &Parent {
        &self.parent
    }

    /// The raw JSON of `timestamp`, if present.
    pub fn timestamp_raw(&self) -> Option<&str> {
        self.timestamp.map(|s| s.of(&self.raw))
    }

    /// `timestamp` as JavaScript's `new Date(timestamp).getTime()`: ms since the epoch or NaN.
    pub fn timestamp_ms(&self) -> f64 {
        pith_events::js::js_date_value(self.timestamp_raw())
    }

    /// The raw JSON of `message` (for `message` entries).
    pub fn message_raw(&self) -> Option<&str> {
        let whole = self.whole();
        whole.message.map(|s| s.of(&whole.raw))
    }

    /// Whether the entry has a `message` member that is not `null` (known without reading
    /// a body left in the file: the cut line keeps an object there).
    pub fn has_message(&self) -> bool {
        self.message.is_some_and(|s| s.of(&self.raw) != "null")
    }

    /// `message.role`, when `message` is an object with a string role.
    pub fn role(&self) -> Option<&Role> {
        self.role.as_ref()
    }

    /// Whether `message` is an object whose `content` is `null` or missing (`content == null`
    /// in pi's projection, spec: tree-and-context.md §7.2 rule 7).
    pub fn has_null_content(&self) -> bool {
        self.null_content
    }

    /// Whether this is a `message` entry holding an assistant message; pi creates a session
    /// file only once one exists (spec: format.md §7.1).
    pub fn is_assistant_message(&self) -> bool {
        self.kind == EntryType::Message && self.role == Some(Role::Assistant)
    }

    /// 1-based line number in the file it was read from; 0 when appended by this process.
    pub fn line(&self) -> usize {
        self.line
    }

    /// Moves the line number `by` lines on (for an entry read from a part of a file).
    pub(crate) fn shift_line(&mut self, by: usize) {
        if self.line > 0 {
            self.line += by;
        }
    }

    /// This entry with the top-level member `key` set to the JSON text `value`, changing no
    /// other byte of the line; a missing member is appended last (as a JavaScript assignment
    /// adds it). Used where pith must re-link a copied entry (spec: divergences.md "Writing").
    ///
    /// Errors: [`crate::Error::InvalidEntry`] when `value` is not JSON or the result is not
    /// an entry; [`crate::Error::BodyChanged`] as [`Entry::read_back`].
    pub fn with_member(&self, key: &str, value: &str) -> Result<Entry, crate::Error> {
        // The copy is a new line: never one with its body cut.
        self.read_back()?;
        let invalid = |reason: String| crate::Error::InvalidEntry { reason };
        scan::scan(value.as_bytes()).map_err(|e| invalid(format!("{value}: {e}")))?;
        let text = scan::set_member(&self.whole().raw, key, value)
            .ok_or_else(|| invalid("the entry is not an object".to_owned()))?;
        Entry::parse(&text, self.line)
    }

    /// Decodes the whole entry into the typed vocabulary.
    ///
    /// Errors: the entry's JSON does not decode (only possible for values serde_json cannot
    /// represent, e.g. numbers beyond f64 range); lone surrogates decode as U+FFFD.
    pub fn decode(&self) -> Result<SessionEntry, serde_json::Error> {
        decode_json(self.raw())
    }

    /// Decodes the `message` member; `None` when the entry has none.
    ///
    /// Errors: as [`Entry::decode`].
    pub fn decode_message(&self) -> Option<Result<AgentMessage, serde_json::Error>> {
        self.message_raw().map(decode_json)
    }

    /// Decodes the entry into any serde type (e.g. a struct of borrowed raw members).
    ///
    /// Errors: as [`Entry::decode`].
    pub fn decode_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        decode_json(self.raw())
    }
}

/// Reads back at once every message body of `entries` still left in a session file (see
/// [`Entry::set_body_in`]): one pass over the file, nearby lines per read, instead of one
/// read per entry when each is asked for. Entries read whole are untouched; this is cheap
/// when none is left.
///
/// Errors: [`crate::Error::BodyChanged`] when a line is no longer as it was read (the file
/// was changed in place); [`crate::Error::Io`].
pub fn read_back_bodies(entries: &[Entry]) -> Result<(), crate::Error> {
    // The pass reads what is not read yet; then each entry is only looked at (a body read
    // before, or one that failed now or before, says so).
    read_back_all(entries)?;
    entries.iter().try_for_each(Entry::read_back)
}

/// Whether `a` and `b` are the same entry: id, parent and type (one may lack its body).
pub(crate) fn same_entry(a: &Entry, b: &Entry) -> bool {
    a.id == b.id && a.parent == b.parent && a.kind == b.kind
}

/// serde_json decoding of a JSON text `JSON.parse` accepted; lone surrogate escapes, which
/// serde_json refuses, are read as U+FFFD.
pub fn decode_json<T: DeserializeOwned>(raw: &str) -> Result<T, serde_json::Error> {
    match decode_exact(&scan::without_lone_surrogates(raw)) {
        // Numbers beyond f64's range are Infinity for JSON.parse and `null` once written;
        // serde_json refuses them, so they are read as `null` rather than losing the value.
        Err(e) if e.is_data() || e.is_syntax() => {
            decode_exact(&scan::js_compatible(&scan::without_lone_surrogates(raw)))
        }
        other => other,
    }
}

fn decode_exact<T: DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    // Messages may nest deeply (tool arguments); the scanner already accepted the text.
    de.disable_recursion_limit();
    // ... and serde_stacker grows the stack on the heap instead of overflowing it.
    let value = T::deserialize(serde_stacker::Deserializer::new(&mut de))?;
    de.end()?;
    Ok(value)
}

mod body_in_file;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eager_members_are_read() {
        let e = Entry::parse(
            r#"{"type":"message","id":"a","parentId":"p","timestamp":"2025-01-01T00:00:05.000Z","message":{"role":"assistant","content":[]}} "#,
            3,
        )
        .expect("entry");
        assert_eq!(e.kind(), &EntryType::Message);
        assert_eq!(e.id(), "a");
        assert_eq!(e.parent().id(), Some("p"));
        assert_eq!(e.timestamp_ms(), 1735689605000.0);
        assert_eq!(
            e.message_raw(),
            Some(r#"{"role":"assistant","content":[]}"#)
        );
        assert!(e.is_assistant_message());
        assert_eq!(e.line(), 3);
        assert!(e.raw().ends_with('}'));
    }

    #[test]
    fn non_entries_are_named() {
        assert_eq!(
            Entry::parse("42", 1)
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            Some("a JSON value that is not an object")
        );
        assert_eq!(
            Entry::parse(r#"{"type":"message","id":5}"#, 1)
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            Some("an entry without a string \"id\"")
        );
        assert!(Entry::parse(r#"{"type":"session","id":"s"}"#, 1).is_err());
        let e = Entry::parse(r#"{"id":"x","parentId":7}"#, 1).expect("typeless entry is kept");
        assert_eq!(e.kind(), &EntryType::Unknown(String::new()));
        assert_eq!(e.parent(), &Parent::None);
    }

    #[test]
    fn with_member_changes_only_that_member() {
        let e = Entry::parse(r#"{"type":"compaction","id":"c","parentId":"l","timestamp":"t","summary":"parentId: 1.0","firstKeptEntryId":"l","tokensBefore":1.0}"#, 4).expect("entry");
        let moved = e.with_member("parentId", "\"x\"").expect("set");
        assert_eq!(
            moved.raw(),
            r#"{"type":"compaction","id":"c","parentId":"x","timestamp":"t","summary":"parentId: 1.0","firstKeptEntryId":"l","tokensBefore":1.0}"#
        );
        assert_eq!(moved.parent().id(), Some("x"));
        assert_eq!(moved.line(), 4);
        let added = e.with_member("fromHook", "false").expect("set");
        assert!(
            added
                .raw()
                .ends_with(r#""tokensBefore":1.0,"fromHook":false}"#)
        );
        assert!(e.with_member("x", "nope").is_err());
    }

    #[test]
    fn lone_surrogates_decode_as_replacement() {
        let e = Entry::parse(
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x\ud800","timestamp":1}}"#,
            1,
        )
        .expect("entry");
        let Some(Ok(AgentMessage::User(u))) = e.decode_message() else {
            panic!("decodes")
        };
        assert_eq!(
            u.content,
            pith_events::UserContent::Text("x\u{fffd}".into())
        );
        assert!(e.raw().contains(r"\ud800"), "raw keeps the escape");
    }
}
