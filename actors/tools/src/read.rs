//! pi's `read` tool (`core/tools/read.js`): a text file's lines (1-based `offset`, `limit`,
//! head-truncated to 2000 lines / 50 KB with a continuation hint), or an image as an image
//! block.

use crate::tool::ToolError;
use std::io::Read as _;
use std::path::Path;

use pith_events::{ContentBlock, ImageContent};
use serde_json::{Value, json};

use super::args::{self, Object, Ty};
use super::image::{self, SNIFF_BYTES};
use super::truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Limits, TruncatedBy, format_size, truncate_head,
};
use super::{aborted, node_error, paths, until_aborted};
use crate::tool::{Tool, ToolContext, ToolFuture, ToolModel, ToolOutput, ToolSpec};

const SCHEMA: Object = Object {
    props: &[
        ("path", Ty::String),
        ("offset", Ty::Number),
        ("limit", Ty::Number),
    ],
    required: &["path"],
    additional: true,
};

/// The `read` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadTool;

impl Tool for ReadTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            prefers_strict_schema: true,
            name: "read".to_owned(),
            description: format!(
                "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as attachments. For text files, output is truncated to {DEFAULT_MAX_LINES} lines or {}KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.",
                DEFAULT_MAX_BYTES / 1024
            ),
            parameters: json!({
                "type": "object",
                "required": ["path"],
                "properties": {
                    "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
                    "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
                    "limit": {"type": "number", "description": "Maximum number of lines to read"}
                }
            }),
        }
    }

    /// Ok, text: `[text]` with details `{truncation}` when truncated, else `null` (pi's
    /// `undefined`). Ok, image: `[text "Read image file [mime]", image]`, with details
    /// `{imageUnsupportedByModel: <id>}` when the call's model takes no images (pi 1.6.0). Err: Node's
    /// file-system message (`ENOENT: no such file or directory, access '<abs>'`), pi's
    /// `Offset N is beyond end of file (M lines total)`, or `Operation aborted`.
    fn run(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let args = args::validate("read", &SCHEMA, &args)?;
            let path = args
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let offset = args.get("offset").and_then(Value::as_f64);
            let limit = args.get("limit").and_then(Value::as_f64);
            if aborted(&ctx) {
                return Err(ToolError::Aborted);
            }
            let absolute = paths::resolve_read_path(&path, &ctx.cwd);
            let model = ctx.model.clone();
            let work = tokio::task::spawn_blocking(move || {
                read(&path, &absolute, offset, limit, model.as_ref())
            });
            until_aborted(&ctx, async {
                work.await
                    .unwrap_or_else(|e| Err(format!("the read failed: {e}").into()))
            })
            .await
            .map(with_read_output)
        })
    }
}

/// pi 1.6.0's `toReadOutput` as the result's structured content: the first text block, or
/// for an image `{type: "image", data, mimeType, note: <that text>}`.
fn with_read_output(mut out: ToolOutput) -> ToolOutput {
    let text = out
        .content
        .iter()
        .find_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let image = out.content.iter().find_map(|b| match b {
        ContentBlock::Image(i) => Some(i),
        _ => None,
    });
    out.structured_content = Some(match image {
        Some(i) => {
            serde_json::json!({"type": "image", "data": i.data, "mimeType": i.mime_type, "note": text})
        }
        None => Value::String(text),
    });
    out
}

fn read(
    path: &str,
    absolute: &Path,
    offset: Option<f64>,
    limit: Option<f64>,
    model: Option<&ToolModel>,
) -> Result<ToolOutput, ToolError> {
    rustix::fs::access(absolute, rustix::fs::Access::READ_OK)
        .map_err(|e| node_error::message(&e.into(), "access", Some(absolute)))?;
    let head = sniff(absolute)?;
    let bytes = std::fs::read(absolute).map_err(|e| read_error(&e, absolute))?;
    match image::detect_mime(&head) {
        Some(mime) => Ok(read_image(&bytes, mime, model)),
        None => read_text(path, &bytes, offset, limit),
    }
}

/// The first bytes, for image detection (Node opens the file, then reads: a directory fails
/// at the read).
fn sniff(absolute: &Path) -> Result<Vec<u8>, ToolError> {
    let file = std::fs::File::open(absolute)
        .map_err(|e| node_error::message(&e, "open", Some(absolute)))?;
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    file.take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| node_error::message(&e, "read", None))?;
    Ok(head)
}

fn read_error(e: &std::io::Error, absolute: &Path) -> String {
    match e.kind() {
        std::io::ErrorKind::IsADirectory => node_error::message(e, "read", None),
        _ => node_error::message(e, "open", Some(absolute)),
    }
}

/// An image result; for a model without image input pi 1.6.0 adds
/// `details: {imageUnsupportedByModel: <model id>}` (the provider then sends a placeholder
/// instead of the image, and the interactive mode shows a note).
fn read_image(bytes: &[u8], mime: &str, model: Option<&ToolModel>) -> ToolOutput {
    // Decoding and re-encoding a large image is CPU work; this runs on a blocking thread.
    // pi passes `images.autoResize` (on by default); pith's tools do not see settings.
    match image::process(bytes, mime, true) {
        image::Processed::Omitted(message) => ToolOutput {
            content: vec![ContentBlock::text(format!(
                "Read image file [{mime}]\n{message}"
            ))],
            details: Value::Null,
            structured_content: None,
        },
        image::Processed::Ok {
            data,
            mime_type,
            hints,
        } => {
            let mut note = format!("Read image file [{mime_type}]");
            if !hints.is_empty() {
                note.push('\n');
                note.push_str(&hints.join("\n"));
            }
            ToolOutput {
                content: vec![
                    ContentBlock::text(note),
                    ContentBlock::Image(ImageContent { data, mime_type }),
                ],
                details: match model {
                    Some(m) if !m.accepts_images => json!({ "imageUnsupportedByModel": m.id }),
                    _ => Value::Null,
                },
                structured_content: None,
            }
        }
    }
}

/// JavaScript's `Array.prototype.slice(start, end)` bounds for a list of `len` items
/// (negative values count from the end; fractions are cut toward zero).
fn js_slice(len: usize, start: f64, end: f64) -> (usize, usize) {
    let clamp = |v: f64| -> usize {
        let v = v.trunc();
        let len_f = len as f64;
        let r = if v < 0.0 {
            (len_f + v).max(0.0)
        } else {
            v.min(len_f)
        };
        r as usize
    };
    let (s, e) = (clamp(start), clamp(end));
    (s, e.max(s))
}

fn read_text(
    path: &str,
    bytes: &[u8],
    offset: Option<f64>,
    limit: Option<f64>,
) -> Result<ToolOutput, ToolError> {
    // Node's `buffer.toString("utf-8")`: invalid bytes become U+FFFD, nothing fails.
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.split('\n').collect();
    let total = lines.len();
    // pi: `offset ? Math.max(0, offset - 1) : 0` (0 and absent mean the start).
    let start = match offset {
        Some(o) if o != 0.0 && !o.is_nan() => (o - 1.0).max(0.0).trunc(),
        _ => 0.0,
    };
    if start >= total as f64 {
        let shown = offset
            .map(pith_events::js::format_js_number)
            .unwrap_or_default();
        return Err(format!("Offset {shown} is beyond end of file ({total} lines total)").into());
    }
    let start_display = start + 1.0;
    let (selected, user_limited) = match limit {
        Some(l) => {
            let end = (start + l).min(total as f64);
            let (s, e) = js_slice(total, start, end);
            (lines[s..e].join("\n"), Some(end - start))
        }
        None => {
            let (s, e) = js_slice(total, start, total as f64);
            (lines[s..e].join("\n"), None)
        }
    };
    let truncation = truncate_head(&selected, Limits::default());
    let n = pith_events::js::format_js_number;
    let (text, details) = if truncation.first_line_exceeds_limit {
        let first = lines.get(start as usize).map_or(0, |l| l.len());
        (
            format!(
                "[Line {} is {}, exceeds {} limit. Use bash: sed -n '{}p' {path} | head -c {DEFAULT_MAX_BYTES}]",
                n(start_display),
                format_size(first),
                format_size(DEFAULT_MAX_BYTES),
                n(start_display)
            ),
            json!({ "truncation": truncation }),
        )
    } else if truncation.truncated {
        let end_display = start_display + truncation.output_lines as f64 - 1.0;
        let next = n(end_display + 1.0);
        let range = format!("{}-{}", n(start_display), n(end_display));
        let notice = match truncation.truncated_by {
            Some(TruncatedBy::Lines) => {
                format!("[Showing lines {range} of {total}. Use offset={next} to continue.]")
            }
            _ => format!(
                "[Showing lines {range} of {total} ({} limit). Use offset={next} to continue.]",
                format_size(DEFAULT_MAX_BYTES)
            ),
        };
        (
            format!("{}\n\n{notice}", truncation.content),
            json!({ "truncation": truncation }),
        )
    } else if let Some(taken) = user_limited.filter(|taken| start + taken < total as f64) {
        let remaining = total as f64 - (start + taken);
        (
            format!(
                "{}\n\n[{} more lines in file. Use offset={} to continue.]",
                truncation.content,
                n(remaining),
                n(start + taken + 1.0)
            ),
            Value::Null,
        )
    } else {
        (truncation.content, Value::Null)
    };
    Ok(ToolOutput {
        content: vec![ContentBlock::text(text)],
        details,
        structured_content: None,
    })
}
