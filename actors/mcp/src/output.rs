//! An MCP `CallToolResult` as pith's tool result (pi 1.6.0 `convertMcpResult` and pi-mcp's
//! `limitMcpContent`; spec: extensions.md §1.3):
//!
//! - `text` and `image` blocks become pith's blocks; `resource` blocks give their text (or a
//!   note for binary ones), `resource_link`s a one-line note, `audio` a note;
//! - no content at all gives the `structuredContent` as JSON text;
//! - `details` is `{server, tool}`, plus `structuredContent` when the server sent one and
//!   `fullOutputPath` when the text was cut;
//! - text over [`MAX_OUTPUT_BYTES`] becomes one block with its start and end and a
//!   `…N chars truncated…` marker (Codex's format, as pi), the full text spilled to a file in
//!   the session's output folder (pith_tools' [`SpillFile`]);
//! - `isError` with no text gets `MCP tool <server>/<tool> returned an error`.

use serde_json::{Value, json};

use pith_events::{ContentBlock, ImageContent};
use pith_tools::OutputDir;
use pith_tools::spill::SpillFile;

/// Model-facing text of an MCP result beyond this (20 KB) is cut in the middle.
pub const MAX_OUTPUT_BYTES: usize = 20 * 1024;

/// A converted result: what the tool returns, and whether the server called it an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The blocks the model sees.
    pub content: Vec<ContentBlock>,
    /// `{server, tool, structuredContent?, fullOutputPath?}`.
    pub details: Value,
    /// The server's `isError`.
    pub is_error: bool,
}

/// Converts a `tools/call` result (as JSON, the MCP wire shape) of `server`'s `tool`.
pub fn convert(server: &str, tool: &str, result: &Value, output_dir: &OutputDir) -> Converted {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let structured = result.get("structuredContent").cloned();
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let mut content: Vec<ContentBlock> = if blocks.is_empty() {
        match &structured {
            Some(s) => vec![ContentBlock::text(s.to_string())],
            None => Vec::new(),
        }
    } else {
        blocks.iter().map(block).collect()
    };
    if is_error && text_of(&content).is_empty() {
        content.push(ContentBlock::text(format!(
            "MCP tool {server}/{tool} returned an error"
        )));
    }
    let mut details = json!({ "server": server, "tool": tool });
    let (content, full_output_path) = limit(content, output_dir);
    if let Some(path) = full_output_path {
        details["fullOutputPath"] = Value::String(path);
    }
    if let Some(s) = structured {
        details["structuredContent"] = s;
    }
    Converted {
        content,
        details,
        is_error,
    }
}

fn block(raw: &Value) -> ContentBlock {
    let str_field = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    match raw.get("type").and_then(Value::as_str) {
        Some("text") => ContentBlock::text(str_field(raw, "text").unwrap_or_default()),
        Some("image") => ContentBlock::Image(ImageContent {
            data: str_field(raw, "data").unwrap_or_default(),
            mime_type: str_field(raw, "mimeType").unwrap_or_else(|| "image/png".to_owned()),
        }),
        Some("resource") => {
            let resource = raw.get("resource").cloned().unwrap_or(Value::Null);
            let uri = str_field(&resource, "uri").unwrap_or_default();
            match str_field(&resource, "text") {
                Some(text) => ContentBlock::text(text),
                None => ContentBlock::text(format!("[Binary resource {uri}]")),
            }
        }
        Some("resource_link") => {
            let uri = str_field(raw, "uri").unwrap_or_default();
            let name = str_field(raw, "title")
                .or_else(|| str_field(raw, "name"))
                .unwrap_or_default();
            ContentBlock::text(format!("[Resource {uri} \"{name}\"]"))
        }
        Some("audio") => ContentBlock::text(format!(
            "[Audio ({})]",
            str_field(raw, "mimeType").unwrap_or_default()
        )),
        _ => ContentBlock::text(raw.to_string()),
    }
}

fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// pi-mcp's `limitMcpContent`: when the joined text is over the limit, one cut text block
/// (plus where the full text is) followed by the images.
fn limit(
    content: Vec<ContentBlock>,
    output_dir: &OutputDir,
) -> (Vec<ContentBlock>, Option<String>) {
    let combined = text_of(&content);
    let Some(cut) = truncate_middle(&combined, MAX_OUTPUT_BYTES) else {
        return (content, None);
    };
    let (path, where_) = match SpillFile::create(output_dir, "pith-mcp") {
        Ok(mut file) => {
            file.write(combined.as_bytes());
            file.close();
            let path = file.path().display().to_string();
            let where_ = format!("\n\n[Full output: {path} (read it with offset/limit)]");
            (Some(path), where_)
        }
        Err(e) => (None, format!("\n\n[Could not save the full output: {e}]")),
    };
    let tokens = combined.len().div_ceil(4);
    let text = format!(
        "Warning: truncated output (original token count: {tokens})\nTotal output lines: {}\n\n{}{where_}",
        cut.total_lines, cut.content
    );
    let mut limited = vec![ContentBlock::text(text)];
    limited.extend(
        content
            .into_iter()
            .filter(|b| matches!(b, ContentBlock::Image(_))),
    );
    (limited, path)
}

struct Cut {
    content: String,
    total_lines: usize,
}

/// The start and end of `text`, half of `max_bytes` each, cut at character boundaries, with
/// `…N chars truncated…` between; `None` when it fits.
fn truncate_middle(text: &str, max_bytes: usize) -> Option<Cut> {
    if text.len() <= max_bytes {
        return None;
    }
    let mut head_end = max_bytes / 2;
    while head_end > 0 && !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - (max_bytes - max_bytes / 2);
    while tail_start < text.len() && !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let removed = text[head_end..tail_start].chars().count();
    let total_lines = text.split('\n').count() - usize::from(text.ends_with('\n'));
    Some(Cut {
        content: format!(
            "{}…{removed} chars truncated…{}",
            &text[..head_end],
            &text[tail_start..]
        ),
        total_lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_structured_content_and_errors() {
        let dir = OutputDir::new();
        let converted = convert(
            "s",
            "t",
            &json!({"content":[{"type":"text","text":"hi"},{"type":"image","data":"AAA=","mimeType":"image/gif"}],
                    "structuredContent":{"n":1}}),
            &dir,
        );
        assert_eq!(
            converted,
            Converted {
                content: vec![
                    ContentBlock::text("hi"),
                    ContentBlock::Image(ImageContent {
                        data: "AAA=".into(),
                        mime_type: "image/gif".into()
                    })
                ],
                details: json!({"server":"s","tool":"t","structuredContent":{"n":1}}),
                is_error: false,
            }
        );
        let error = convert("s", "t", &json!({"content":[],"isError":true}), &dir);
        assert_eq!(
            error.content,
            vec![ContentBlock::text("MCP tool s/t returned an error")]
        );
        assert!(error.is_error);
        let structured_only = convert("s", "t", &json!({"structuredContent":{"a":[1]}}), &dir);
        assert_eq!(
            structured_only.content,
            vec![ContentBlock::text(r#"{"a":[1]}"#)]
        );
    }

    #[test]
    fn long_text_is_cut_in_the_middle_and_spilled() {
        let parent = tempfile::tempdir().unwrap();
        let dir = OutputDir::in_dir(parent.path());
        let text = format!("{}\n{}", "a".repeat(15_000), "é".repeat(10_000));
        let converted = convert(
            "s",
            "t",
            &json!({"content":[{"type":"text","text":text}]}),
            &dir,
        );
        let path = converted.details["fullOutputPath"].as_str().unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), text);
        let [ContentBlock::Text(block)] = converted.content.as_slice() else {
            panic!("one text block expected: {:?}", converted.content);
        };
        assert!(block.text.starts_with(
            "Warning: truncated output (original token count: 8751)\nTotal output lines: 2\n\naaa"
        ));
        // 35001 bytes: the head keeps 10240 bytes of 'a'; the tail starts at byte 24761.
        assert!(block.text.contains("a…9641 chars truncated…é"));
        assert!(block.text.ends_with(&format!(
            "é\n\n[Full output: {path} (read it with offset/limit)]"
        )));
    }
}
