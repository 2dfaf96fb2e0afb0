//! pi 1.6.0's `find` tool (`core/tools/find.js`). pi runs fd (`fd --color=never --hidden
//! [--no-require-git] --glob --max-results N+1 [--full-path] [--ignore-case] -- PATTERN
//! DIR`); pith runs fd's matching in process: the pattern becomes a regex through `globset`
//! as fd does it, with fd's smart case, and the walk is `walk::fd`.
//!
//! Order: fd sorts its results when it finds at most 1000 of them within 100 ms, and prints
//! them as found otherwise; pith always gives them in path order, and keeps the first ones in
//! that order when there are more than the limit.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use globset::GlobBuilder;
use pith_events::js::js_trim;
use regex::bytes::{Regex, RegexBuilder};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::args::{self, Object, Ty};
use super::listing::{LimitNotice, LineStore, Listing, plain};
use super::truncate::DEFAULT_MAX_BYTES;
use super::{aborted, paths, until_aborted, walk};
use crate::tool::{Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};

const SCHEMA: Object = Object {
    props: &[
        ("pattern", Ty::String),
        ("path", Ty::String),
        ("limit", Ty::Number),
    ],
    required: &["pattern"],
    additional: true,
};

/// pi's default result limit.
const DEFAULT_LIMIT: f64 = 1000.0;

/// The `find` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct FindTool;

impl Tool for FindTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            prefers_strict_schema: false,
            name: "find".to_owned(),
            description: format!(
                "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to {DEFAULT_LIMIT} results or {}KB (whichever is hit first).",
                DEFAULT_MAX_BYTES / 1024
            ),
            parameters: json!({
                "type": "object",
                "required": ["pattern"],
                "properties": {
                    "pattern": {"type": "string", "description": "Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth"},
                    "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
                    "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"}
                }
            }),
        }
    }

    /// Ok: one path per line, relative to the searched directory, directories with a
    /// trailing `/`, cut to the limit and 50 KB with pi's notices and details
    /// `{resultLimitReached, truncation}` (`null` when none applies); `No files found matching
    /// pattern` when nothing matched. Err: fd's messages (`[fd error]: Search path '<abs>' is
    /// not a directory.` …, `[fd error]: error parsing glob …`) or `Operation aborted`.
    fn run(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let args = args::validate("find", &SCHEMA, &args)?;
            if aborted(&ctx) {
                return Err(ToolError::Aborted);
            }
            let dir = args
                .get("path")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty());
            let request = Request {
                pattern: args
                    .get("pattern")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                search_path: paths::resolve_to_cwd(dir.unwrap_or("."), &ctx.cwd),
                limit: args
                    .get("limit")
                    .and_then(Value::as_f64)
                    .unwrap_or(DEFAULT_LIMIT)
                    .floor()
                    .max(1.0),
                cwd: ctx.cwd.clone(),
            };
            let abort = ctx.abort.clone();
            let work = tokio::task::spawn_blocking(move || request.run(&abort));
            until_aborted(&ctx, async {
                work.await
                    .unwrap_or_else(|e| Err(format!("the search failed: {e}")))
                    .map_err(ToolError::from)
            })
            .await
        })
    }
}

struct Request {
    pattern: String,
    search_path: PathBuf,
    limit: f64,
    cwd: PathBuf,
}

/// What fd matches a pattern against.
enum Target {
    /// The entry's file name (a pattern without `/`).
    Name,
    /// The entry's absolute path (`--full-path`).
    FullPath,
}

impl Request {
    fn run(&self, abort: &CancellationToken) -> Result<ToolOutput, String> {
        let (regex, target) = self.matcher()?;
        if !self.search_path.is_dir() {
            return Err(format!(
                "[fd error]: Search path '{}' is not a directory.\n[fd error]: No valid search paths given.",
                self.search_path.display()
            ));
        }
        let require_git = inside_git_repo(&self.search_path);
        let mut store = LineStore::default();
        let mut results = 0f64;
        let mut limit_reached = false;
        // fd stops after `--max-results limit+1` entries.
        let mut entries = 0f64;
        for entry in walk::fd(&self.search_path, require_git, &self.cwd) {
            if abort.is_cancelled() {
                return Err("Operation aborted".to_owned());
            }
            // fd does not show file-system errors unless asked to.
            let Ok(entry) = entry else { continue };
            if entry.depth() == 0 {
                continue;
            }
            let subject = match target {
                Target::Name => entry.file_name().as_bytes(),
                Target::FullPath => entry.path().as_os_str().as_bytes(),
            };
            if !regex.is_match(subject) {
                continue;
            }
            let mut printed = entry.path().to_string_lossy().into_owned();
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                printed.push('/');
            }
            for line in readline_lines(&printed) {
                let line = js_trim(line);
                if line.is_empty() {
                    continue;
                }
                if results == self.limit {
                    limit_reached = true;
                    continue;
                }
                results += 1.0;
                store.push(relativize(line, &self.search_path));
            }
            entries += 1.0;
            if entries >= self.limit + 1.0 {
                break;
            }
        }
        if results == 0.0 {
            return Ok(plain("No files found matching pattern"));
        }
        Ok(Listing {
            lines: &store.lines,
            totals: Some(store.totals()),
            limit: limit_reached.then(|| {
                LimitNotice::new(
                    "resultLimitReached",
                    self.limit,
                    "results",
                    ", or refine pattern",
                )
            }),
            lines_truncated: None,
        }
        .into_output())
    }

    /// fd's regex for pi's pattern: a leading `./` dropped; a pattern with `/` matched
    /// against the whole path, a relative one anchored at the glob-escaped search path; fd's
    /// smart case (case-insensitive unless the pattern has an upper-case letter), with pi's
    /// `--ignore-case` for an all-lower-case relative path pattern.
    fn matcher(&self) -> Result<(Regex, Target), String> {
        let mut pattern = self.pattern.as_str();
        while let Some(rest) = pattern.strip_prefix("./") {
            pattern = rest;
        }
        let is_path = pattern.contains('/');
        let lower_case = pattern == pattern.to_lowercase();
        let relative_path = is_path && !pattern.starts_with('/');
        let effective = if relative_path {
            let root = self.search_path.to_string_lossy();
            format!("{}/{pattern}", glob_escape(root.trim_end_matches('/')))
        } else {
            pattern.to_owned()
        };
        let regex = if effective.is_empty() {
            String::new()
        } else {
            GlobBuilder::new(&effective)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("[fd error]: {e}"))?
                .regex()
                .to_owned()
        };
        let ignore_case = (relative_path && lower_case) || !has_uppercase(&regex);
        let regex = RegexBuilder::new(&regex)
            .case_insensitive(ignore_case)
            .dot_matches_new_line(true)
            .build()
            .map_err(|e| format!("[fd error]: {e}"))?;
        Ok((
            regex,
            if is_path {
                Target::FullPath
            } else {
                Target::Name
            },
        ))
    }
}

/// pi: `searchPath.replace(/[\\*?[\]{}]/g, "\\$&")`.
fn glob_escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if matches!(c, '\\' | '*' | '?' | '[' | ']' | '{' | '}') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// fd's `pattern_has_uppercase_char`: whether the regex holds an upper-case literal or a
/// class bound that is upper case.
fn has_uppercase(regex: &str) -> bool {
    use regex_syntax::hir::{Class, Hir, HirKind};
    fn walk(hir: &Hir) -> bool {
        match hir.kind() {
            HirKind::Literal(lit) => match std::str::from_utf8(&lit.0) {
                Ok(s) => s.chars().any(char::is_uppercase),
                Err(_) => lit.0.iter().any(|b| char::from(*b).is_uppercase()),
            },
            HirKind::Class(Class::Unicode(ranges)) => ranges
                .iter()
                .any(|r| r.start().is_uppercase() || r.end().is_uppercase()),
            HirKind::Class(Class::Bytes(ranges)) => ranges.iter().any(|r| {
                char::from(r.start()).is_uppercase() || char::from(r.end()).is_uppercase()
            }),
            HirKind::Capture(c) => walk(&c.sub),
            HirKind::Repetition(r) => walk(&r.sub),
            HirKind::Concat(hirs) | HirKind::Alternation(hirs) => hirs.iter().any(walk),
            HirKind::Empty | HirKind::Look(_) => false,
        }
    }
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(regex)
        .map(|hir| walk(&hir))
        .unwrap_or(false)
}

/// pi's git check: whether `dir` or a parent holds `.git` (then pi lets fd require a
/// repository for `.gitignore` rules, so parent rules stop at nested repositories).
fn inside_git_repo(dir: &Path) -> bool {
    dir.ancestors().any(|d| d.join(".git").exists())
}

/// Node's `readline` lines of one fd output line: it also ends lines at `\r` and `\r\n`,
/// so a file name holding a line break gives several lines.
fn readline_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&text[start..i]);
                start = i + 1;
            }
            b'\r' => {
                lines.push(&text[start..i]);
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    lines.push(&text[start..]);
    lines
}

/// pi's `relativizeFindResultPath`: an absolute line relative to the search path (Node's
/// `path.relative`), keeping a trailing `/`; other lines as they are.
fn relativize(line: &str, search_path: &Path) -> String {
    if !line.starts_with('/') {
        return line.to_owned();
    }
    let parts = |p: &str| {
        let mut out: Vec<String> = Vec::new();
        for seg in p.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    out.pop();
                }
                s => out.push(s.to_owned()),
            }
        }
        out
    };
    let from = parts(&search_path.to_string_lossy());
    let to = parts(line);
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut rel: Vec<&str> = vec![".."; from.len() - common];
    rel.extend(to[common..].iter().map(String::as_str));
    let mut out = rel.join("/");
    if line.ends_with('/') && !out.ends_with('/') {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readline_splits_like_node() {
        assert_eq!(readline_lines("/a/b"), vec!["/a/b"]);
        assert_eq!(readline_lines("/a/x\ry\r\nz\n"), vec!["/a/x", "y", "z", ""]);
    }

    #[test]
    fn relativizes_like_node() {
        let root = Path::new("/r/s");
        assert_eq!(relativize("/r/s/a/b", root), "a/b");
        assert_eq!(relativize("/r/s/d/", root), "d/");
        assert_eq!(relativize("/r/t", root), "../t");
        assert_eq!(relativize("x", root), "x");
    }

    #[test]
    fn smart_case_like_fd() {
        let re = |g: &str| {
            GlobBuilder::new(g)
                .literal_separator(true)
                .build()
                .map(|g| g.regex().to_owned())
                .unwrap_or_default()
        };
        assert!(!has_uppercase(&re("*.rs")));
        assert!(has_uppercase(&re("*.RS")));
        assert!(has_uppercase(&re("[A-Z]*")));
        assert_eq!(
            glob_escape("/a[b]/c*{d}?\\"),
            "/a\\[b\\]/c\\*\\{d\\}\\?\\\\"
        );
    }
}
