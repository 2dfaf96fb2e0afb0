//! Tool calls (inside assistant messages) and tool results (their own entries): the call's
//! one-line description pi's tree shows, its arguments, and the result's output, images and
//! diff.

use std::io::{self, Write};

use pith_events::{ContentBlock, ToolCall, ToolResultMessage};
use serde_json::Value;

use super::html::Esc;
use crate::text::normalized_prefix;

/// Outputs longer than this many lines start folded (pi folds at 5–20 lines by tool).
const FOLD_LINES: usize = 20;

/// Nested arguments deeper than this are shown as JSON text.
const MAX_ARG_DEPTH: usize = 4;

/// pi's `formatToolCall`: `[read: ~/src/a.rs:10-29]`, `[bash: cargo test]`, `[name: {json}]`.
pub fn describe_call(name: &str, args: &Value) -> String {
    // `String(args.key ?? "")`.
    let text = |key: &str| {
        args.get(key)
            .filter(|v| !v.is_null())
            .map(|v| pith_events::js::to_js_string(Some(v)))
            .unwrap_or_default()
    };
    let path_or = |default: &str| {
        let p = text("path");
        shorten_path(if p.is_empty() { default } else { &p })
    };
    match name {
        "read" => {
            let mut path = text("path");
            if path.is_empty() {
                path = text("file_path");
            }
            let mut display = shorten_path(&path);
            let offset = args.get("offset").and_then(Value::as_i64);
            let limit = args.get("limit").and_then(Value::as_i64);
            if offset.is_some() || limit.is_some() {
                let start = offset.unwrap_or(1);
                display.push_str(&format!(":{start}"));
                if let Some(l) = limit {
                    display.push_str(&format!("-{}", start + l - 1));
                }
            }
            format!("[read: {display}]")
        }
        "write" | "edit" => {
            let mut path = text("path");
            if path.is_empty() {
                path = text("file_path");
            }
            format!("[{name}: {}]", shorten_path(&path))
        }
        "bash" => {
            let cmd = text("command");
            let flat: String = cmd.replace(['\n', '\t'], " ");
            let short: String = flat.trim().chars().take(50).collect();
            let more = if cmd.chars().count() > 50 { "..." } else { "" };
            format!("[bash: {short}{more}]")
        }
        "grep" => format!("[grep: /{}/ in {}]", text("pattern"), path_or(".")),
        "find" => format!("[find: {} in {}]", text("pattern"), path_or(".")),
        "ls" => format!("[ls: {}]", path_or(".")),
        _ => {
            let json = args.to_string();
            let short: String = json.chars().take(40).collect();
            let more = if json.chars().count() > 40 { "..." } else { "" };
            format!("[{name}: {short}{more}]")
        }
    }
}

/// pi's `shortenPath`: a home directory becomes `~`.
fn shorten_path(p: &str) -> String {
    for home in ["/Users/", "/home/"] {
        if let Some(rest) = p.strip_prefix(home) {
            let user_len = rest.find('/').unwrap_or(rest.len());
            if user_len > 0 {
                return format!("~{}", &rest[user_len..]);
            }
        }
    }
    p.to_owned()
}

/// Writes one tool-call block: its description and every argument.
///
/// Errors: those of `out`.
pub fn write_call(out: &mut dyn Write, call: &ToolCall) -> io::Result<()> {
    write!(
        out,
        r#"<div class="tool-call"><div class="tool-head"><span class="tool-name">{}</span> <span class="tool-desc">{}</span> <span class="call-id">{}</span></div>"#,
        Esc(&call.name),
        Esc(&describe_call(&call.name, &call.arguments)),
        Esc(&call.id),
    )?;
    match (&call.arguments, call.arguments.get("command")) {
        (Value::Object(map), Some(Value::String(cmd))) if call.name == "bash" => {
            write!(out, r#"<pre class="cmd">$ {}</pre>"#, Esc(cmd))?;
            let rest: Vec<_> = map.iter().filter(|(k, _)| *k != "command").collect();
            write_fields(out, rest.into_iter(), 0)?;
        }
        (Value::Object(map), _) => write_fields(out, map.iter(), 0)?,
        (other, _) => write!(out, r#"<pre class="args">{}</pre>"#, Esc(&pretty(other)))?,
    }
    out.write_all(b"</div>")
}

/// Arguments as a definition list: text as text (line breaks kept), objects and arrays nested.
fn write_fields<'a>(
    out: &mut dyn Write,
    fields: impl Iterator<Item = (&'a String, &'a Value)>,
    depth: usize,
) -> io::Result<()> {
    let mut fields = fields.peekable();
    if fields.peek().is_none() {
        return Ok(());
    }
    out.write_all(br#"<dl class="args">"#)?;
    for (key, value) in fields {
        write!(out, "<dt>{}</dt><dd>", Esc(key))?;
        write_value(out, value, depth + 1)?;
        out.write_all(b"</dd>")?;
    }
    out.write_all(b"</dl>")
}

fn write_value(out: &mut dyn Write, value: &Value, depth: usize) -> io::Result<()> {
    match value {
        Value::String(s) => write_text_block(out, "arg-text", s),
        Value::Object(map) if depth < MAX_ARG_DEPTH && !map.is_empty() => {
            write_fields(out, map.iter(), depth)
        }
        Value::Array(items) if depth < MAX_ARG_DEPTH && !items.is_empty() => {
            out.write_all(br#"<ol class="arg-list">"#)?;
            for item in items {
                out.write_all(b"<li>")?;
                write_value(out, item, depth + 1)?;
                out.write_all(b"</li>")?;
            }
            out.write_all(b"</ol>")
        }
        other => write!(
            out,
            r#"<code class="arg-json">{}</code>"#,
            Esc(&other.to_string())
        ),
    }
}

/// A pre-formatted text box; long texts start folded to a scrollable height.
pub fn write_text_block(out: &mut dyn Write, class: &str, text: &str) -> io::Result<()> {
    let lines = text.lines().count();
    if lines > FOLD_LINES {
        write!(
            out,
            r#"<pre class="{class} long" data-lines="{lines}">{}</pre>"#,
            Esc(text)
        )
    } else {
        write!(out, r#"<pre class="{class}">{}</pre>"#, Esc(text))
    }
}

/// Writes a tool result's body: images, then the text output, then an edit's diff.
///
/// Errors: those of `out`.
pub fn write_result(out: &mut dyn Write, result: &ToolResultMessage) -> io::Result<()> {
    write_images(out, &result.content)?;
    let text = joined_text(&result.content, "\n");
    if !text.trim().is_empty() {
        write_text_block(out, "out", &text)?;
    }
    for block in &result.content {
        if let ContentBlock::Unknown(v) = block {
            write!(out, r#"<pre class="args">{}</pre>"#, Esc(&pretty(v)))?;
        }
    }
    if let Some(Value::String(diff)) = result.details.as_ref().and_then(|d| d.get("diff")) {
        out.write_all(br#"<div class="diff">"#)?;
        for line in diff.split('\n') {
            let class = if line.starts_with('+') {
                "add"
            } else if line.starts_with('-') {
                "del"
            } else {
                "ctx"
            };
            write!(out, r#"<div class="{class}">{}</div>"#, Esc(line))?;
        }
        out.write_all(b"</div>")?;
    }
    Ok(())
}

/// The `text` of every text block joined with `sep`.
pub fn joined_text(blocks: &[ContentBlock], sep: &str) -> String {
    let texts: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    texts.join(sep)
}

/// Every image block as an `<img>` with a data URL: the page stays self-contained.
///
/// Errors: those of `out`.
pub fn write_images(out: &mut dyn Write, blocks: &[ContentBlock]) -> io::Result<()> {
    let mut images = blocks.iter().filter_map(|b| match b {
        ContentBlock::Image(i) => Some(i),
        _ => None,
    });
    let Some(first) = images.next() else {
        return Ok(());
    };
    out.write_all(br#"<div class="images">"#)?;
    for image in std::iter::once(first).chain(images) {
        let mime = if image.mime_type.is_empty() {
            "image/png"
        } else {
            &image.mime_type
        };
        write!(
            out,
            r#"<img class="image" alt="{}" src="data:{};base64,{}">"#,
            Esc(mime),
            Esc(mime),
            Esc(&image.data)
        )?;
    }
    out.write_all(b"</div>")
}

/// Indented JSON (for arguments and blocks that are not objects).
pub fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// A result's one-line tree text: the call it answers, else its tool name.
pub fn describe_result(result: &ToolResultMessage, call: Option<&str>) -> String {
    match call {
        Some(c) => c.to_owned(),
        None if result.tool_name.is_empty() => "[tool]".into(),
        None => format!("[{}]", normalized_prefix(&result.tool_name, 60)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn calls_are_described_like_pi() {
        assert_eq!(
            describe_call(
                "read",
                &json!({"path": "/home/me/p/a.rs", "offset": 10, "limit": 20})
            ),
            "[read: ~/p/a.rs:10-29]"
        );
        assert_eq!(
            describe_call("bash", &json!({"command": "cargo\ntest"})),
            "[bash: cargo test]"
        );
        assert_eq!(describe_call("ls", &json!({})), "[ls: .]");
        assert_eq!(
            describe_call("grep", &json!({"pattern": "fn main", "path": "src"})),
            "[grep: /fn main/ in src]"
        );
        assert_eq!(
            describe_call("mcp", &json!({"q": "x"})),
            r#"[mcp: {"q":"x"}]"#
        );
    }

    #[test]
    fn arguments_are_escaped_and_nested() {
        let call = ToolCall {
            id: "c1".into(),
            name: "edit".into(),
            arguments: json!({"path": "a<b>.rs", "edits": [{"oldText": "</pre>", "newText": "x"}]}),
            thought_signature: None,
        };
        let mut out = Vec::new();
        write_call(&mut out, &call).unwrap();
        let html = String::from_utf8(out).unwrap();
        assert!(html.contains("a&lt;b&gt;.rs"), "{html}");
        assert!(
            html.contains("<dt>oldText</dt><dd><pre class=\"arg-text\">&lt;/pre&gt;</pre>"),
            "{html}"
        );
    }
}
