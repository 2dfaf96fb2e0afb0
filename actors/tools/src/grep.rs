//! pi 1.6.0's `grep` tool (`core/tools/grep.js`). pi runs ripgrep
//! (`rg --no-config --json --line-number --color=never --hidden [--ignore-case]
//! [--fixed-strings] [--glob G] [--context N] -- PATTERN .|FILE`); pith runs ripgrep's own
//! crates in process with the same settings (`walk::ripgrep`, `grep-regex`,
//! `grep-searcher`), so no `rg` binary is needed.
//!
//! Order: ripgrep searches files in parallel and prints them as they finish; pith searches
//! them in path order (what `rg --sort path` prints), so the matches kept under the limit
//! are the first in path order.

use std::io;
use std::path::{Path, PathBuf};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::overrides::{Override, OverrideBuilder};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::args::{self, Object, Ty};
use super::listing::{LimitNotice, LineStore, Listing, plain};
use super::truncate::{DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, truncate_line};
use super::{aborted, paths, until_aborted, walk};
use crate::tool::{Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};

const SCHEMA: Object = Object {
    props: &[
        ("pattern", Ty::String),
        ("path", Ty::String),
        ("glob", Ty::String),
        ("ignoreCase", Ty::Boolean),
        ("literal", Ty::Boolean),
        ("context", Ty::Number),
        ("limit", Ty::Number),
    ],
    required: &["pattern"],
    additional: true,
};

/// pi's default match limit.
const DEFAULT_LIMIT: f64 = 100.0;

/// An explicitly named file is read whole and searched as one slice, as ripgrep searches it
/// through a memory map (so a NUL byte does not end the search); past this size it is
/// streamed instead, where a NUL byte becomes a line break as in ripgrep's buffered search.
const WHOLE_FILE_MAX: u64 = 256 * 1024 * 1024;

/// The `grep` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrepTool;

impl Tool for GrepTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            prefers_strict_schema: false,
            name: "grep".to_owned(),
            description: format!(
                "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to {} matches or {}KB (whichever is hit first). Long lines are truncated to {GREP_MAX_LINE_LENGTH} chars.",
                DEFAULT_LIMIT,
                DEFAULT_MAX_BYTES / 1024
            ),
            parameters: json!({
                "type": "object",
                "required": ["pattern"],
                "properties": {
                    "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
                    "path": {"type": "string", "description": "Directory or file to search (default: current directory)"},
                    "glob": {"type": "string", "description": "Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth"},
                    "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
                    "literal": {"type": "boolean", "description": "Treat pattern as literal string instead of regex (default: false)"},
                    "context": {"type": "number", "description": "Number of lines to show before and after each match (default: 0)"},
                    "limit": {"type": "number", "description": "Maximum number of matches to return (default: 100)"}
                }
            }),
        }
    }

    /// Ok: `path:line: text` for matches and `path-line- text` for context lines (paths
    /// relative to the searched directory, or the file's name), cut to the match limit and
    /// 50 KB, with pi's notices and details `{matchLimitReached, truncation, linesTruncated}`
    /// (`null` when none applies); `No matches found` when nothing matched. Err: `Path not
    /// found: <abs>`, ripgrep's own messages (`rg: regex parse error: …`, `rg: error parsing
    /// glob …`), or `Operation aborted`.
    fn run(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let args = args::validate("grep", &SCHEMA, &args)?;
            if aborted(&ctx) {
                return Err(ToolError::Aborted);
            }
            let request = Request::from_args(&args, &ctx.cwd);
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

/// One call's settings, after pi's defaults and clamps.
struct Request {
    pattern: String,
    search_path: PathBuf,
    glob: Option<String>,
    ignore_case: bool,
    literal: bool,
    /// pi: `context > 0 ? min(floor(context), MAX_SAFE_INTEGER) : 0`.
    context: usize,
    /// pi: `max(1, floor(limit ?? 100))`.
    limit: f64,
}

impl Request {
    fn from_args(args: &serde_json::Map<String, Value>, cwd: &Path) -> Self {
        let text = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_owned);
        let flag = |k: &str| args.get(k).and_then(Value::as_bool).unwrap_or(false);
        let number = |k: &str| args.get(k).and_then(Value::as_f64);
        // `searchDir || "."`: an empty path means the cwd.
        let dir = text("path").filter(|p| !p.is_empty());
        let context = number("context")
            .filter(|c| *c > 0.0)
            .map_or(0, |c| c.floor().min(9_007_199_254_740_991.0) as usize);
        Self {
            pattern: text("pattern").unwrap_or_default(),
            search_path: paths::resolve_to_cwd(dir.as_deref().unwrap_or("."), cwd),
            glob: text("glob").filter(|g| !g.is_empty()),
            ignore_case: flag("ignoreCase"),
            literal: flag("literal"),
            context,
            limit: number("limit").unwrap_or(DEFAULT_LIMIT).floor().max(1.0),
        }
    }

    fn run(&self, abort: &CancellationToken) -> Result<ToolOutput, String> {
        let is_dir = std::fs::metadata(&self.search_path)
            .map_err(|_| format!("Path not found: {}", self.search_path.display()))?
            .is_dir();
        // ripgrep checks its globs before it compiles the pattern.
        let overrides = if is_dir {
            self.overrides()?
        } else {
            Override::empty()
        };
        let matcher = self.matcher()?;
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(self.context)
            .after_context(self.context)
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .build();
        let mut state = State::new(self.limit, self.context);
        let mut errors = Vec::new();
        if is_dir {
            for entry in walk::ripgrep(&self.search_path, overrides) {
                if state.done || abort.is_cancelled() {
                    break;
                }
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(e) => {
                        errors.push(format!("rg: {e}"));
                        continue;
                    }
                };
                if entry.depth() == 0 || !entry.file_type().is_some_and(|t| t.is_file()) {
                    continue;
                }
                let relative = walk::relative(&self.search_path, entry.path());
                let mut sink = LineSink {
                    state: &mut state,
                    path: &relative,
                    abort,
                };
                if let Err(e) = searcher.search_path(&matcher, entry.path(), &mut sink) {
                    errors.push(format!("rg: ./{relative}: {e}"));
                }
            }
        } else {
            let name = self
                .search_path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| self.search_path.display().to_string());
            searcher.set_binary_detection(BinaryDetection::convert(b'\x00'));
            let mut sink = LineSink {
                state: &mut state,
                path: &name,
                abort,
            };
            if let Err(e) = search_explicit(&mut searcher, &matcher, &self.search_path, &mut sink) {
                errors.push(format!("rg: {}: {e}", self.search_path.display()));
            }
        }
        if abort.is_cancelled() {
            return Err("Operation aborted".to_owned());
        }
        // ripgrep exits with 2 after any error (unless pi stopped it at the limit), and pi
        // then reports its stderr instead of the matches.
        if !errors.is_empty() && !state.done {
            return Err(errors.join("\n"));
        }
        Ok(state.into_output())
    }

    /// ripgrep's `--glob`, rooted at the searched directory; pi drops a leading `./`
    /// (ripgrep never matches it), keeping a leading `!`.
    fn overrides(&self) -> Result<Override, String> {
        let Some(glob) = &self.glob else {
            return Ok(Override::empty());
        };
        let (negated, mut rest) = match glob.strip_prefix('!') {
            Some(rest) => ("!", rest),
            None => ("", glob.as_str()),
        };
        while let Some(r) = rest.strip_prefix("./") {
            rest = r;
        }
        let mut builder = OverrideBuilder::new(&self.search_path);
        builder
            .add(&format!("{negated}{rest}"))
            .map_err(|e| format!("rg: {e}"))?;
        builder.build().map_err(|e| format!("rg: {e}"))
    }

    /// ripgrep's matcher: case-sensitive unless `--ignore-case`, no NUL byte matchable
    /// (binary detection is on), `\n` not allowed in the pattern.
    fn matcher(&self) -> Result<RegexMatcher, String> {
        RegexMatcherBuilder::new()
            .multi_line(true)
            .unicode(true)
            .octal(false)
            .fixed_strings(self.literal)
            .case_insensitive(self.ignore_case)
            .line_terminator(Some(b'\n'))
            .dot_matches_new_line(false)
            .ban_byte(Some(b'\x00'))
            .build(&self.pattern)
            .map_err(|e| format!("rg: {}", ripgrep_hints(e.to_string())))
    }
}

/// ripgrep's hints after a pattern error (`suggest_multiline`, `suggest_text`).
fn ripgrep_hints(msg: String) -> String {
    if msg.contains("the literal") && msg.contains("not allowed") {
        format!(
            "{msg}\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched."
        )
    } else if msg.contains("pattern contains \"\\0\"") {
        format!(
            "{msg}\n\nConsider enabling text mode with the --text flag (or -a for short). Otherwise,\nbinary detection is enabled and matching a NUL byte is impossible."
        )
    } else {
        msg
    }
}

/// Searches a file named by the call itself, as one slice when it fits (see
/// [`WHOLE_FILE_MAX`]).
fn search_explicit(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    sink: &mut LineSink<'_>,
) -> io::Result<()> {
    let size = std::fs::metadata(path)?.len();
    if size == 0 || size > WHOLE_FILE_MAX {
        return searcher.search_path(matcher, path, sink);
    }
    let bytes = std::fs::read(path)?;
    searcher.search_slice(matcher, &bytes, sink)
}

/// pi's bookkeeping over ripgrep's `match`/`context` lines.
struct State {
    limit: f64,
    context: usize,
    store: LineStore,
    matches: f64,
    /// Set at the last allowed match; later lines are only kept inside its trailing context.
    limit_hit: bool,
    trailing_context_end: u64,
    /// Another match after the limit proved that results were cut.
    limit_reached: bool,
    lines_truncated: bool,
    last_file: Option<String>,
    /// pi killed ripgrep here.
    done: bool,
}

impl State {
    fn new(limit: f64, context: usize) -> Self {
        Self {
            limit,
            context,
            store: LineStore::default(),
            matches: 0.0,
            limit_hit: false,
            trailing_context_end: 0,
            limit_reached: false,
            lines_truncated: false,
            last_file: None,
            done: false,
        }
    }

    /// One line as ripgrep reports it (pi's `rl.on("line")` handler).
    fn line(&mut self, file: &str, number: u64, text: &[u8], is_match: bool) {
        if self.done {
            return;
        }
        if !self.limit_hit {
            self.push(file, number, text, is_match);
            if !is_match {
                return;
            }
            self.matches += 1.0;
            if self.matches >= self.limit {
                self.limit_hit = true;
                self.trailing_context_end = number.saturating_add(self.context as u64);
            }
            return;
        }
        let in_window =
            self.last_file.as_deref() == Some(file) && number <= self.trailing_context_end;
        if in_window {
            self.push(file, number, text, false);
        }
        if is_match {
            self.limit_reached = true;
        }
        if self.limit_reached && !(in_window && number < self.trailing_context_end) {
            self.done = true;
        }
    }

    fn push(&mut self, file: &str, number: u64, text: &[u8], is_match: bool) {
        self.last_file = Some(file.to_owned());
        let text = String::from_utf8_lossy(text);
        // pi strips only the line terminator (`/\r?\n?$/`): a lone CR inside is content.
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let (shown, cut) = truncate_line(text, GREP_MAX_LINE_LENGTH);
        self.lines_truncated |= cut;
        let sep = if is_match { ':' } else { '-' };
        self.store.push(format!("{file}{sep}{number}{sep} {shown}"));
    }

    fn into_output(self) -> ToolOutput {
        if self.matches == 0.0 {
            return plain("No matches found");
        }
        Listing {
            lines: &self.store.lines,
            totals: Some(self.store.totals()),
            limit: self.limit_reached.then(|| {
                LimitNotice::new("matchLimitReached", self.limit, "matches", ", or refine pattern")
            }),
            lines_truncated: self.lines_truncated.then(|| {
                format!(
                    "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
                )
            }),
        }
        .into_output()
    }
}

/// Feeds one file's lines to [`State`].
struct LineSink<'a> {
    state: &'a mut State,
    path: &'a str,
    abort: &'a CancellationToken,
}

impl LineSink<'_> {
    fn keep_going(&self) -> bool {
        !self.state.done && !self.abort.is_cancelled()
    }
}

impl Sink for LineSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let number = mat.line_number().unwrap_or(0);
        self.state.line(self.path, number, mat.bytes(), true);
        Ok(self.keep_going())
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        if matches!(ctx.kind(), SinkContextKind::Other) {
            return Ok(self.keep_going());
        }
        let number = ctx.line_number().unwrap_or(0);
        self.state.line(self.path, number, ctx.bytes(), false);
        Ok(self.keep_going())
    }
}
