//! The header line of a file that was read (spec: format.md §2.1, §6.1).

use std::sync::Arc;

use serde_json::{Map, Value};

/// A session header as read: its raw text plus the fields pith uses.
///
/// The raw text is what is written back; the fields are read from it once.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    raw: Arc<str>,
    id: String,
    version: f64,
    cwd: Option<String>,
    timestamp: Option<Value>,
    parent_session: Option<String>,
}

/// Why a first line is not a session header (spec: divergences.md "Reading").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadHeader {
    /// The value is not an object.
    NotAnObject,
    /// `type` is not `"session"`.
    WrongType,
    /// `id` is missing or not a string.
    NoStringId,
}

impl std::fmt::Display for BadHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BadHeader::NotAnObject => "the first JSON line is not an object",
            BadHeader::WrongType => {
                "the first JSON line is not a session header (type is not \"session\")"
            }
            BadHeader::NoStringId => "the session header has no string \"id\"",
        })
    }
}

impl Header {
    /// Reads a header from one JSON object text.
    ///
    /// Errors: [`BadHeader`] naming the first rule the value breaks.
    pub fn parse(raw: &str) -> Result<Header, BadHeader> {
        let map: Map<String, Value> =
            crate::entry::decode_json(raw).map_err(|_| BadHeader::NotAnObject)?;
        if map.get("type").and_then(Value::as_str) != Some("session") {
            return Err(BadHeader::WrongType);
        }
        let id = map
            .get("id")
            .and_then(Value::as_str)
            .ok_or(BadHeader::NoStringId)?
            .to_owned();
        Ok(Header {
            raw: raw.into(),
            id,
            version: version_of(map.get("version")),
            cwd: map.get("cwd").and_then(Value::as_str).map(str::to_owned),
            timestamp: map.get("timestamp").cloned(),
            parent_session: map
                .get("parentSession")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// Builds a header pith writes.
    pub fn from_new(header: &pith_events::SessionHeader) -> Header {
        let raw = pith_events::js::to_js_json(header).unwrap_or_default();
        Header {
            raw: raw.into(),
            id: header.id.clone(),
            version: f64::from(header.version),
            cwd: Some(header.cwd.clone()),
            timestamp: Some(Value::String(header.timestamp.clone())),
            parent_session: header.parent_session.clone(),
        }
    }

    /// The raw JSON text.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `version ?? 1` as a number (spec: format.md §5).
    pub fn version(&self) -> f64 {
        self.version
    }

    /// `cwd`, when it is a string.
    pub fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
    }

    /// The raw `timestamp` value.
    pub fn timestamp(&self) -> Option<&Value> {
        self.timestamp.as_ref()
    }

    /// `parentSession`, when it is a string.
    pub fn parent_session(&self) -> Option<&str> {
        self.parent_session.as_deref()
    }
}

/// `header.version ?? 1`, with JavaScript's number coercion for the comparison `>= 3`.
fn version_of(v: Option<&Value>) -> f64 {
    match v {
        None | Some(Value::Null) => 1.0,
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::String(s)) => {
            let t = pith_events::js::js_trim(s);
            if t.is_empty() {
                0.0
            } else {
                t.parse().unwrap_or(f64::NAN)
            }
        }
        Some(_) => f64::NAN,
    }
}
