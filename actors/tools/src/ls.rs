//! pi 1.6.0's `ls` tool (`core/tools/ls.js`): a directory's entries, dotfiles included,
//! sorted as JavaScript's `a.toLowerCase().localeCompare(b.toLowerCase())` sorts them (ICU
//! root collation; Node reads names in byte order first, and the sort is stable), with a `/`
//! after directories.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use icu_collator::Collator;
use icu_collator::options::CollatorOptions;
use serde_json::{Value, json};

use super::args::{self, Object, Ty};
use super::listing::{LimitNotice, Listing, plain};
use super::truncate::DEFAULT_MAX_BYTES;
use super::{aborted, node_error, paths, until_aborted};
use crate::tool::{Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};

const SCHEMA: Object = Object {
    props: &[("path", Ty::String), ("limit", Ty::Number)],
    required: &[],
    additional: true,
};

/// pi's default entry limit.
const DEFAULT_LIMIT: f64 = 500.0;

/// The `ls` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct LsTool;

impl Tool for LsTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            prefers_strict_schema: false,
            name: "ls".to_owned(),
            description: format!(
                "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to {DEFAULT_LIMIT} entries or {}KB (whichever is hit first).",
                DEFAULT_MAX_BYTES / 1024
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory to list (default: current directory)"},
                    "limit": {"type": "number", "description": "Maximum number of entries to return (default: 500)"}
                }
            }),
        }
    }

    /// Ok: one entry per line (directories with `/`, entries that cannot be stat'ed, such as
    /// broken links, left out), cut to the limit and 50 KB with pi's notices and details
    /// `{entryLimitReached, truncation}` (`null` when none applies); `(empty directory)` when
    /// nothing is listed. Err: `Path not found: <abs>`, `Not a directory: <abs>`, `Cannot read
    /// directory: <Node's message>` or `Operation aborted`.
    fn run(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let args = args::validate("ls", &SCHEMA, &args)?;
            if aborted(&ctx) {
                return Err(ToolError::Aborted);
            }
            let dir = args
                .get("path")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty());
            let dir = paths::resolve_to_cwd(dir.unwrap_or("."), &ctx.cwd);
            let limit = args
                .get("limit")
                .and_then(Value::as_f64)
                .unwrap_or(DEFAULT_LIMIT)
                .floor()
                .max(1.0);
            let work = tokio::task::spawn_blocking(move || list(&dir, limit));
            until_aborted(&ctx, async {
                work.await
                    .unwrap_or_else(|e| Err(format!("the listing failed: {e}")))
                    .map_err(ToolError::from)
            })
            .await
        })
    }
}

fn list(dir: &Path, limit: f64) -> Result<ToolOutput, String> {
    if !dir.exists() {
        return Err(format!("Path not found: {}", dir.display()));
    }
    let meta = std::fs::metadata(dir).map_err(|e| node_error::message(&e, "stat", Some(dir)))?;
    if !meta.is_dir() {
        return Err(format!("Not a directory: {}", dir.display()));
    }
    let mut names = read_names(dir).map_err(|e| {
        format!(
            "Cannot read directory: {}",
            node_error::message(&e, "scandir", Some(dir))
        )
    })?;
    sort_like_locale_compare(&mut names);
    let mut lines = Vec::new();
    let mut limit_reached = false;
    for name in names {
        if lines.len() as f64 >= limit {
            limit_reached = true;
            break;
        }
        // Node joins the decoded name, so a name that is not UTF-8 is looked up under its
        // replacement-character spelling (and is left out when that does not exist).
        let Ok(meta) = std::fs::metadata(dir.join(&name)) else {
            continue;
        };
        let suffix = if meta.is_dir() { "/" } else { "" };
        lines.push(format!("{name}{suffix}"));
    }
    if lines.is_empty() {
        return Ok(plain("(empty directory)"));
    }
    Ok(Listing {
        lines: &lines,
        totals: None,
        limit: limit_reached.then(|| LimitNotice::new("entryLimitReached", limit, "entries", "")),
        lines_truncated: None,
    }
    .into_output())
}

/// The directory's names as Node's `readdir` gives them: decoded as UTF-8 (invalid bytes
/// replaced), in byte order (libuv's `scandir` sorts with `strcmp`).
fn read_names(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut raw: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        raw.push(PathBuf::from(entry?.file_name()));
    }
    raw.sort_by(|a, b| a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes()));
    Ok(raw
        .iter()
        .map(|n| n.to_string_lossy().into_owned())
        .collect())
}

/// Stable sort by `a.toLowerCase().localeCompare(b.toLowerCase())`.
fn sort_like_locale_compare(names: &mut Vec<String>) {
    let mut keyed: Vec<(String, String)> = names.drain(..).map(|n| (n.to_lowercase(), n)).collect();
    match Collator::try_new(Default::default(), CollatorOptions::default()) {
        Ok(collator) => keyed.sort_by(|a, b| collator.compare(&a.0, &b.0)),
        // Compiled-in data cannot fail to load; the code-point order is the fallback.
        Err(_) => keyed.sort_by(|a, b| a.0.cmp(&b.0)),
    }
    names.extend(keyed.into_iter().map(|(_, n)| n));
}
