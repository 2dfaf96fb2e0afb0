//! pi's `edit` tool (`core/tools/edit.js`, 0.73.1): `{path, edits: [{oldText, newText}]}`,
//! each `oldText` unique in the original file; the file keeps its BOM and line endings.

use crate::tool::ToolError;
use pith_events::ContentBlock;
use serde_json::{Map, Value, json};

use super::args::{self, Object, Ty};
use super::edit_diff::{
    Edit, apply_edits, detect_line_ending, diff_string, normalize_to_lf, restore_line_endings,
    unified_patch,
};
use super::{aborted, mutation_queue, node_error, paths, until_aborted};
use crate::tool::{Tool, ToolContext, ToolFuture, ToolOutput, ToolSpec};

const EDIT_ITEM: Object = Object {
    props: &[("oldText", Ty::String), ("newText", Ty::String)],
    required: &["oldText", "newText"],
    additional: true,
};

const SCHEMA: Object = Object {
    props: &[("path", Ty::String), ("edits", Ty::Array(&EDIT_ITEM))],
    required: &["path", "edits"],
    additional: true,
};

/// Unchanged lines shown around each change in `details.diff`.
const DIFF_CONTEXT: usize = 4;

/// The `edit` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditTool;

impl Tool for EditTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            prefers_strict_schema: true,
            name: "edit".to_owned(),
            description: "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.".to_owned(),
            parameters: json!({
                "type": "object",
                "required": ["path", "edits"],
                "properties": {
                    "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
                    "edits": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["oldText", "newText"],
                            "properties": {
                                "oldText": {"type": "string", "description": "Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call."},
                                "newText": {"type": "string", "description": "Replacement text for this targeted edit."}
                            }
                        },
                        "description": "One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead."
                    }
                }
            }),
        }
    }

    /// Ok: `Successfully replaced N block(s) in <path>.` with details `{diff, patch,
    /// firstChangedLine}` (`patch`: the unified diff pi 1.6.0 adds, [`unified_patch`]).
    /// Err: pi's texts (`Could not find the exact text in <path>. …`, `Found N occurrences of
    /// the text in <path>. …`, `Could not edit file: <path>. Error code: ENOENT.`, …).
    fn run(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let args = args::validate("edit", &SCHEMA, &prepare_arguments(args))?;
            let path = args
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let edits: Vec<Edit> = args
                .get("edits")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|e| Edit {
                            old_text: e
                                .get("oldText")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                            new_text: e
                                .get("newText")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            if edits.is_empty() {
                return Err(
                    "Edit tool input is invalid. edits must contain at least one replacement."
                        .into(),
                );
            }
            let absolute = paths::resolve_to_cwd(&path, &ctx.cwd);
            let _lock = mutation_queue::lock(&absolute).await;
            if aborted(&ctx) {
                return Err(ToolError::Aborted);
            }
            until_aborted(&ctx, async {
                let access = rustix::fs::Access::READ_OK | rustix::fs::Access::WRITE_OK;
                if let Err(e) = rustix::fs::access(&absolute, access) {
                    let e = std::io::Error::from(e);
                    let detail = match node_error::code_and_description(&e) {
                        Some((code, _)) => format!("Error code: {code}"),
                        None => e.to_string(),
                    };
                    return Err(format!("Could not edit file: {path}. {detail}.").into());
                }
                let bytes = tokio::fs::read(&absolute).await.map_err(|e| {
                    let syscall = if e.kind() == std::io::ErrorKind::IsADirectory {
                        "read"
                    } else {
                        "open"
                    };
                    node_error::message(
                        &e,
                        syscall,
                        (syscall == "open").then_some(absolute.as_path()),
                    )
                })?;
                let raw = String::from_utf8_lossy(&bytes);
                // The model never includes the invisible BOM in oldText.
                let (bom, content) = match raw.strip_prefix('\u{FEFF}') {
                    Some(rest) => ("\u{FEFF}", rest),
                    None => ("", raw.as_ref()),
                };
                let ending = detect_line_ending(content);
                let (base, new) = apply_edits(&normalize_to_lf(content), &edits, &path)?;
                let final_content = format!("{bom}{}", restore_line_endings(&new, ending));
                tokio::fs::write(&absolute, final_content.as_bytes())
                    .await
                    .map_err(|e| node_error::message(&e, "open", Some(&absolute)))?;
                let (diff, first_changed_line) = diff_string(&base, &new, DIFF_CONTEXT);
                let mut details = Map::new();
                details.insert("diff".to_owned(), Value::String(diff));
                details.insert(
                    "patch".to_owned(),
                    Value::String(unified_patch(&path, &base, &new, DIFF_CONTEXT)),
                );
                if let Some(line) = first_changed_line {
                    details.insert("firstChangedLine".to_owned(), json!(line));
                }
                Ok(ToolOutput {
                    content: vec![ContentBlock::text(format!(
                        "Successfully replaced {} block(s) in {path}.",
                        edits.len()
                    ))],
                    details: Value::Object(details),
                    structured_content: None,
                })
            })
            .await
        })
    }
}

/// pi's `prepareEditArguments`: `edits` sent as a JSON string is parsed, and the older
/// top-level `oldText`/`newText` pair is appended to `edits` (keys keep pi's order, which
/// shows in validation errors).
fn prepare_arguments(mut args: Value) -> Value {
    let Value::Object(map) = &mut args else {
        return args;
    };
    if let Some(Value::String(text)) = map.get("edits")
        && let Ok(parsed @ Value::Array(_)) = serde_json::from_str::<Value>(text)
    {
        map.insert("edits".to_owned(), parsed);
    }
    let (Some(Value::String(old_text)), Some(Value::String(new_text))) =
        (map.get("oldText"), map.get("newText"))
    else {
        return args;
    };
    let legacy = json!({ "oldText": old_text, "newText": new_text });
    let mut edits = match map.get("edits") {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    };
    edits.push(legacy);
    let mut out = Map::new();
    for (key, value) in map.iter() {
        match key.as_str() {
            "oldText" | "newText" => {}
            "edits" => {
                out.insert(key.clone(), Value::Array(std::mem::take(&mut edits)));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if !out.contains_key("edits") {
        out.insert("edits".to_owned(), Value::Array(edits));
    }
    Value::Object(out)
}
