//! What the tree view needs of each entry, read once from the session: its one-line text,
//! its search text and the facts the filters test (pi's `TreeList.getEntryDisplayText`,
//! `getSearchableText`, `hasTextContent`, `formatToolCall`).
//!
//! Entries are read as plain JSON, as pi reads them, so an odd or unknown entry still shows.

use std::collections::HashMap;

use pith_store::Session;
use pith_store::tree::Tree;
use serde_json::Value;

use crate::text::one_line;
use pith_events::js::{is_truthy, to_js_string};

/// The colour role of a piece of an entry's line (pi's theme names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Plain text.
    Text,
    /// `user: `
    Accent,
    /// `assistant: `
    Success,
    /// Tool results, `(aborted)`, `(no content)`.
    Muted,
    /// Bookkeeping entries.
    Dim,
    /// An assistant error.
    Error,
    /// `[branch summary]: `
    Warning,
    /// `[compaction: …]`
    Border,
    /// `[customType]: `
    Custom,
}

/// The kind of entry, as far as the filters care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A `message` entry with this role.
    Message(String),
    /// `label`, `context_edit`, `custom`, `model_change`, `thinking_level_change`,
    /// `session_info`: hidden in the default view.
    Setting,
    /// Everything else (`compaction`, `branch_summary`, `custom_message`, unknown types).
    Other,
}

/// One entry, prepared for display.
#[derive(Debug, Clone)]
pub struct Node {
    /// The entry id.
    pub id: String,
    /// The entry's parent in the displayed tree (index into the nodes), `None` for roots.
    pub parent: Option<usize>,
    /// Children in the displayed tree, oldest first.
    pub children: Vec<usize>,
    /// Filter facts.
    pub kind: Kind,
    /// An assistant message with no text that did not end in an error or abort: pi hides it
    /// (unless it is the leaf).
    pub empty_assistant: bool,
    /// The line, as (tone, text) pieces.
    pub display: Vec<(Tone, String)>,
    /// pi's searchable text without the label (lower-cased).
    pub search: String,
    /// The label, if any.
    pub label: Option<String>,
    /// When the label was set (ISO string), if known.
    pub label_time: Option<String>,
}

/// The nodes of `session` (index = entry index) and the roots in file order.
pub fn build(session: &Session) -> (Vec<Node>, Vec<usize>) {
    let tree = session.tree();
    let shape: Tree = tree.get_tree();
    let home = std::env::var("HOME").unwrap_or_default();
    // Every entry is decoded: bodies a large session left in its file are read in one pass,
    // not one read each. One that cannot be read shows as its cut line (the read logs why).
    let _ = tree.read_back_bodies();
    let values: Vec<Value> = tree
        .entries()
        .iter()
        .map(|e| e.decode_as::<Value>().unwrap_or(Value::Null))
        .collect();
    // Tool calls by id, for naming tool results (pi collects them while flattening; every
    // assistant is visited before it matters).
    let mut calls: HashMap<String, (String, Value)> = HashMap::new();
    for v in &values {
        if v["type"] == "message" && v["message"]["role"] == "assistant" {
            for block in v["message"]["content"].as_array().into_iter().flatten() {
                if block["type"] == "toolCall"
                    && let Some(id) = block["id"].as_str()
                {
                    let name = block["name"].as_str().unwrap_or("").to_owned();
                    calls.insert(id.to_owned(), (name, block["arguments"].clone()));
                }
            }
        }
    }
    let mut parent = vec![None; values.len()];
    for (p, kids) in shape.children.iter().enumerate() {
        for &k in kids {
            parent[k] = Some(p);
        }
    }
    let nodes = tree
        .entries()
        .iter()
        .zip(&values)
        .enumerate()
        .map(|(i, (entry, v))| {
            let label = tree.label(entry.id());
            Node {
                id: entry.id().to_owned(),
                parent: parent[i],
                children: shape.children[i].clone(),
                kind: kind(v),
                empty_assistant: empty_assistant(v),
                display: display(v, &calls, &home),
                search: searchable(v).to_lowercase(),
                label: label.map(|l| l.text()),
                label_time: label
                    .and_then(|l| l.timestamp.as_deref())
                    .and_then(|t| serde_json::from_str::<String>(t).ok()),
            }
        })
        .collect();
    (nodes, shape.roots)
}

fn kind(v: &Value) -> Kind {
    match v["type"].as_str().unwrap_or("") {
        "message" => Kind::Message(v["message"]["role"].as_str().unwrap_or("").to_owned()),
        "label"
        | "context_edit"
        | "custom"
        | "model_change"
        | "thinking_level_change"
        | "session_info" => Kind::Setting,
        _ => Kind::Other,
    }
}

fn empty_assistant(v: &Value) -> bool {
    let m = &v["message"];
    if v["type"] != "message" || m["role"] != "assistant" {
        return false;
    }
    // pi: `stopReason && stopReason !== "stop" && stopReason !== "toolUse"`.
    let error_or_aborted = match &m["stopReason"] {
        Value::String(s) => !s.is_empty() && s != "stop" && s != "toolUse",
        other => is_truthy(other),
    };
    !has_text(&m["content"]) && !error_or_aborted
}

/// pi's `hasTextContent`.
fn has_text(content: &Value) -> bool {
    match content {
        Value::String(s) => !s.trim().is_empty(),
        Value::Array(blocks) => blocks.iter().any(|b| {
            b["type"] == "text" && b["text"].as_str().is_some_and(|t| !t.trim().is_empty())
        }),
        _ => false,
    }
}

/// pi's `extractContent`: up to 200 characters of the text (blocks joined without a separator).
fn extract(content: &Value) -> String {
    const MAX: usize = 200;
    match content {
        Value::String(s) => s.chars().take(MAX).collect(),
        Value::Array(blocks) => {
            let mut out = String::new();
            for b in blocks {
                if b["type"] == "text" {
                    out.push_str(&to_js_string(Some(&b["text"])));
                    if out.chars().count() >= MAX {
                        return out.chars().take(MAX).collect();
                    }
                }
            }
            out
        }
        _ => String::new(),
    }
}

/// `a || b || ""` over JSON members, then `String(…)`.
fn first_truthy(a: &Value, b: &Value, fallback: &str) -> String {
    if is_truthy(a) {
        to_js_string(Some(a))
    } else if is_truthy(b) {
        to_js_string(Some(b))
    } else {
        fallback.to_owned()
    }
}

fn display(v: &Value, calls: &HashMap<String, (String, Value)>, home: &str) -> Vec<(Tone, String)> {
    let m = &v["message"];
    match v["type"].as_str().unwrap_or("") {
        "message" => match m["role"].as_str().unwrap_or("") {
            "user" => vec![
                (Tone::Accent, "user: ".into()),
                (Tone::Text, one_line(&extract(&m["content"]))),
            ],
            "assistant" => {
                let text = one_line(&extract(&m["content"]));
                let rest = if !text.is_empty() {
                    (Tone::Text, text)
                } else if m["stopReason"] == "aborted" {
                    (Tone::Muted, "(aborted)".into())
                } else if let Some(err) = m["errorMessage"].as_str().filter(|e| !e.is_empty()) {
                    (Tone::Error, one_line(err).chars().take(80).collect())
                } else {
                    (Tone::Muted, "(no content)".into())
                };
                vec![(Tone::Success, "assistant: ".into()), rest]
            }
            "toolResult" => {
                let call = m["toolCallId"].as_str().and_then(|id| calls.get(id));
                let text = match call {
                    Some((name, args)) => format_tool_call(name, args, home),
                    None => format!("[{}]", m["toolName"].as_str().unwrap_or("tool")),
                };
                vec![(Tone::Muted, one_line(&text))]
            }
            "bashExecution" => vec![(
                Tone::Dim,
                format!("[bash]: {}", one_line(m["command"].as_str().unwrap_or(""))),
            )],
            role => vec![(Tone::Dim, one_line(&format!("[{role}]")))],
        },
        "custom_message" => {
            let content = match &v["content"] {
                Value::String(s) => s.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .map(|b| to_js_string(Some(&b["text"])))
                    .collect(),
                _ => String::new(),
            };
            vec![
                (
                    Tone::Custom,
                    format!("[{}]: ", one_line(&to_js_string(Some(&v["customType"])))),
                ),
                (Tone::Text, one_line(&content)),
            ]
        }
        "compaction" => {
            let tokens = v["tokensBefore"].as_f64().unwrap_or(f64::NAN) / 1000.0;
            let k = if tokens.is_nan() {
                "NaN".to_owned()
            } else {
                format!("{}", js_round(tokens))
            };
            vec![(Tone::Border, format!("[compaction: {k}k tokens]"))]
        }
        "branch_summary" => vec![
            (Tone::Warning, "[branch summary]: ".into()),
            (Tone::Text, one_line(v["summary"].as_str().unwrap_or(""))),
        ],
        "model_change" => vec![(
            Tone::Dim,
            one_line(&format!("[model: {}]", to_js_string(Some(&v["modelId"])))),
        )],
        "thinking_level_change" => vec![(
            Tone::Dim,
            one_line(&format!(
                "[thinking: {}]",
                to_js_string(Some(&v["thinkingLevel"]))
            )),
        )],
        "custom" => vec![(
            Tone::Dim,
            one_line(&format!(
                "[custom: {}]",
                to_js_string(Some(&v["customType"]))
            )),
        )],
        "context_edit" => vec![(
            Tone::Dim,
            one_line(&format!(
                "[context {}: {}]",
                context_edit_kind(v),
                to_js_string(Some(&v["targetId"]))
            )),
        )],
        "label" => {
            let label = match &v["label"] {
                Value::Null => "(cleared)".to_owned(),
                other => to_js_string(Some(other)),
            };
            vec![(Tone::Dim, one_line(&format!("[label: {label}]")))]
        }
        "session_info" => {
            let name = if is_truthy(&v["name"]) {
                to_js_string(Some(&v["name"]))
            } else {
                "empty".into()
            };
            vec![(Tone::Dim, one_line(&format!("[title: {name}]")))]
        }
        _ => Vec::new(),
    }
}

/// pi's `entry.replacement === null ? "omit" : "replace"` (a missing member is no `null`).
fn context_edit_kind(v: &Value) -> &'static str {
    if v.get("replacement").is_some_and(Value::is_null) {
        "omit"
    } else {
        "replace"
    }
}

/// JavaScript's `Math.round` (halves round up, also for negatives).
fn js_round(x: f64) -> f64 {
    (x + 0.5).floor()
}

fn searchable(v: &Value) -> String {
    let m = &v["message"];
    let mut parts: Vec<String> = Vec::new();
    match v["type"].as_str().unwrap_or("") {
        "message" => {
            parts.push(to_js_string(Some(&m["role"])));
            if is_truthy(&m["content"]) {
                parts.push(extract(&m["content"]));
            }
            if m["role"] == "bashExecution" && is_truthy(&m["command"]) {
                parts.push(to_js_string(Some(&m["command"])));
            }
        }
        "custom_message" => {
            parts.push(to_js_string(Some(&v["customType"])));
            match &v["content"] {
                Value::String(s) => parts.push(s.clone()),
                other => parts.push(extract(other)),
            }
        }
        "compaction" => parts.push("compaction".into()),
        "branch_summary" => {
            parts.push("branch summary".into());
            parts.push(to_js_string(Some(&v["summary"])));
        }
        "session_info" => {
            parts.push("title".into());
            if is_truthy(&v["name"]) {
                parts.push(to_js_string(Some(&v["name"])));
            }
        }
        "model_change" => {
            parts.push("model".into());
            parts.push(to_js_string(Some(&v["modelId"])));
        }
        "thinking_level_change" => {
            parts.push("thinking".into());
            parts.push(to_js_string(Some(&v["thinkingLevel"])));
        }
        "custom" => {
            parts.push("custom".into());
            parts.push(to_js_string(Some(&v["customType"])));
        }
        "context_edit" => {
            parts.push("context edit".into());
            parts.push(context_edit_kind(v).into());
            parts.push(to_js_string(Some(&v["targetId"])));
        }
        "label" => {
            parts.push("label".into());
            parts.push(match &v["label"] {
                Value::Null => String::new(),
                other => to_js_string(Some(other)),
            });
        }
        _ => {}
    }
    parts.join(" ")
}

/// pi's `formatToolCall`: a short description of a tool call, e.g. `[read: ~/a.rs:10-29]`.
pub fn format_tool_call(name: &str, args: &Value, home: &str) -> String {
    let shorten = |p: String| -> String {
        if !home.is_empty() && p.starts_with(home) {
            format!("~{}", &p[home.len()..])
        } else {
            p
        }
    };
    let path_of =
        |fallback: &str| shorten(first_truthy(&args["path"], &args["file_path"], fallback));
    match name {
        "read" => {
            let mut display = path_of("");
            let (offset, limit) = (args.get("offset"), args.get("limit"));
            if offset.is_some() || limit.is_some() {
                let start = offset.and_then(Value::as_f64).unwrap_or(1.0);
                let end = limit.map(|l| start + l.as_f64().unwrap_or(0.0) - 1.0);
                display.push_str(&format!(":{}", num(start)));
                if let Some(end) = end.filter(|e| *e != 0.0 && !e.is_nan()) {
                    display.push_str(&format!("-{}", num(end)));
                }
            }
            format!("[read: {display}]")
        }
        "write" => format!("[write: {}]", path_of("")),
        "edit" => format!("[edit: {}]", path_of("")),
        "bash" => {
            let raw = first_truthy(&args["command"], &Value::Null, "");
            let cmd: String = raw
                .replace(['\n', '\t'], " ")
                .trim()
                .chars()
                .take(50)
                .collect();
            let more = if raw.chars().count() > 50 { "..." } else { "" };
            format!("[bash: {cmd}{more}]")
        }
        "grep" => format!(
            "[grep: /{}/ in {}]",
            first_truthy(&args["pattern"], &Value::Null, ""),
            shorten(first_truthy(&args["path"], &Value::Null, "."))
        ),
        "find" => format!(
            "[find: {} in {}]",
            first_truthy(&args["pattern"], &Value::Null, ""),
            shorten(first_truthy(&args["path"], &Value::Null, "."))
        ),
        "ls" => format!(
            "[ls: {}]",
            shorten(first_truthy(&args["path"], &Value::Null, "."))
        ),
        _ => {
            let json = serde_json::to_string(args).unwrap_or_default();
            let short: String = json.chars().take(40).collect();
            let more = if json.chars().count() > 40 { "..." } else { "" };
            format!("[{name}: {short}{more}]")
        }
    }
}

/// A number as JavaScript prints it (integers without `.0`).
fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}
