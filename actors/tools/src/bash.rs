//! pi's `bash` tool (`core/tools/bash.js`) and user bash, `!cmd` (`core/bash-executor.js`,
//! spec: agent-and-events.md §5). Both run through [`super::shell`]; they differ in what they
//! do with the output: the tool keeps it raw (decoded) with throttled progress, user bash strips
//! ANSI codes, control characters and `\r` (as pi 1.6.0 does, also across chunk borders).

use crate::tool::ToolError;
use std::path::Path;
use std::time::Duration;

use pith_events::ContentBlock;
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use super::args::{self, Object, Ty};
use super::output::{OutputAccumulator, Snapshot};
use super::sanitize::{sanitize_binary_output, split_incomplete_ansi_suffix, strip_ansi};
use super::shell::{self, ExecEnd, ShellConfig, ShellError};
use super::spill::{OutputDir, SpillFile};
use super::truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Limits, TruncatedBy, format_size, truncate_tail,
};
use super::utf8::Utf8Stream;
use crate::tool::{Tool, ToolContext, ToolFuture, ToolOutput, ToolSpec};

/// pi's spill-file prefix for command output.
const SPILL_PREFIX: &str = "pi-bash";
/// How much of the output `structuredContent.output` holds (pi's
/// `STRUCTURED_OUTPUT_MAX_BYTES`, 1 MiB).
const STRUCTURED_OUTPUT_MAX_BYTES: usize = 1024 * 1024;

/// pi sends progress at most every 100 ms.
const UPDATE_THROTTLE: Duration = Duration::from_millis(100);

const SCHEMA: Object = Object {
    props: &[("command", Ty::String), ("timeout", Ty::Number)],
    required: &["command"],
    additional: true,
};

/// The `bash` tool: runs a command in the session cwd and returns its combined output,
/// tail-truncated to 2000 lines / 50 KB with the whole output in a `pi-bash-*.log` file in
/// the call's [`OutputDir`] (removed when pith exits, see [`crate::spill`]). The output is
/// not cleaned: like pi, the model gets escape sequences as they are (frontends print it
/// through [`crate::sanitize::for_terminal`]).
#[derive(Debug, Clone, Default)]
pub struct BashTool {
    shell: ShellConfig,
}

impl BashTool {
    /// A bash tool using `shell` (pi's `shellPath` / `shellCommandPrefix` settings).
    pub fn new(shell: ShellConfig) -> Self {
        Self { shell }
    }
}

impl Tool for BashTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            prefers_strict_schema: true,
            name: "bash".to_owned(),
            description: format!(
                "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last {DEFAULT_MAX_LINES} lines or {}KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.",
                DEFAULT_MAX_BYTES / 1024
            ),
            parameters: json!({
                "type": "object",
                "required": ["command"],
                "properties": {
                    "command": {"type": "string", "description": "Shell command to execute"},
                    "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"}
                }
            }),
        }
    }

    /// Ok: `{content: [text], details}` where details is `{truncation, fullOutputPath}` when
    /// the output was truncated, else `null` (pi's `undefined`). Err: pi's texts, the output
    /// followed by `Command exited with code N`, `Command timed out after N seconds` or
    /// `Command aborted`.
    fn run(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        let shell = self.shell.clone();
        Box::pin(async move { run_tool(&shell, &args, ctx).await })
    }
}

async fn run_tool(
    shell: &ShellConfig,
    args: &Value,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let args = args::validate("bash", &SCHEMA, args)?;
    let command = args
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let timeout = args.get("timeout").and_then(Value::as_f64);
    let resolved = shell.apply_prefix(command);
    let started = Instant::now();
    let mut output = OutputAccumulator::new(SPILL_PREFIX, ctx.output_dir.clone());
    let mut updates = Updates::new(ctx.progress.clone());

    let (tx, mut rx) = mpsc::unbounded_channel();
    let exec = shell::exec(
        &resolved,
        &ctx.cwd,
        shell.shell_path.as_deref(),
        timeout,
        ctx.abort.clone(),
        tx,
    );
    tokio::pin!(exec);
    let mut end = None;
    let mut open = true;
    while open || end.is_none() {
        tokio::select! {
            chunk = rx.recv(), if open => match chunk {
                Some(data) => {
                    output.append(&data);
                    updates.data(&mut output);
                }
                None => open = false,
            },
            r = &mut exec, if end.is_none() => end = Some(r),
            _ = sleep_until(updates.due.unwrap_or_else(Instant::now)), if updates.due.is_some() => {
                updates.due = None;
                updates.emit(&mut output);
            }
        }
    }
    output.finish();
    updates.due = None;
    updates.emit(&mut output);
    let snapshot = output.snapshot();
    output.close();
    let last_line_bytes = output.last_line_bytes();
    let status = |text: String, status: String| {
        if text.is_empty() {
            status
        } else {
            format!("{text}\n\n{status}")
        }
    };
    match end {
        Some(Ok(ExecEnd::Exited(code))) => {
            let (text, details) = format_output(&snapshot, "(no output)", last_line_bytes);
            // pi 1.6.0's `structuredContent`; seconds rounded to a tenth.
            let wall_time_seconds = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
            let (full, truncated) = output.read_full_output(STRUCTURED_OUTPUT_MAX_BYTES);
            let mut structured = Map::new();
            structured.insert("output".into(), json!(full));
            structured.insert("truncated".into(), json!(truncated));
            if truncated && let Some(path) = &snapshot.full_output_path {
                structured.insert("full_output_path".into(), json!(path));
            }
            structured.insert("exit_code".into(), json!(code));
            structured.insert("wall_time_seconds".into(), json!(wall_time_seconds));
            match code {
                // pi returns a non-zero exit as an error result of its own: the details and
                // structured content stay with it.
                Some(code) if code != 0 => Err(ToolError::Result(Box::new(ToolOutput {
                    content: vec![ContentBlock::text(status(
                        text,
                        format!("Command exited with code {code}"),
                    ))],
                    details,
                    structured_content: Some(Value::Object(structured)),
                }))),
                _ => Ok(ToolOutput {
                    content: vec![ContentBlock::text(text)],
                    details,
                    structured_content: Some(Value::Object(structured)),
                }),
            }
        }
        Some(Ok(ExecEnd::Aborted)) => {
            let (text, _) = format_output(&snapshot, "", last_line_bytes);
            Err(status(text, "Command aborted".to_owned()).into())
        }
        Some(Ok(ExecEnd::TimedOut)) => {
            let (text, _) = format_output(&snapshot, "", last_line_bytes);
            let secs = pith_events::js::format_js_number(timeout.unwrap_or_default());
            Err(status(text, format!("Command timed out after {secs} seconds")).into())
        }
        Some(Err(e)) => Err(e.to_string().into()),
        None => Err("the command did not finish".into()),
    }
}

/// pi's `formatOutput`: the kept text (or `empty` when there is none) plus, when truncated,
/// the `[Showing …. Full output: <path>]` notice; details `{truncation, fullOutputPath}` then.
fn format_output(snapshot: &Snapshot, empty: &str, last_line_bytes: usize) -> (String, Value) {
    let t = &snapshot.truncation;
    let mut text = if snapshot.content.is_empty() {
        empty.to_owned()
    } else {
        snapshot.content.clone()
    };
    if !t.truncated {
        return (text, Value::Null);
    }
    let path = snapshot.full_output_path.clone().unwrap_or_default();
    let start = t.total_lines + 1 - t.output_lines;
    let end = t.total_lines;
    if t.last_line_partial {
        text.push_str(&format!(
            "\n\n[Showing last {} of line {end} (line is {}). Full output: {path}]",
            format_size(t.output_bytes),
            format_size(last_line_bytes)
        ));
    } else if t.truncated_by == Some(TruncatedBy::Lines) {
        text.push_str(&format!(
            "\n\n[Showing lines {start}-{end} of {}. Full output: {path}]",
            t.total_lines
        ));
    } else {
        text.push_str(&format!(
            "\n\n[Showing lines {start}-{end} of {} ({} limit). Full output: {path}]",
            t.total_lines,
            format_size(DEFAULT_MAX_BYTES)
        ));
    }
    (text, truncation_details(snapshot))
}

/// `{truncation, fullOutputPath}`, leaving out what pi leaves `undefined`.
fn truncation_details(snapshot: &Snapshot) -> Value {
    let mut details = Map::new();
    if snapshot.truncation.truncated {
        details.insert(
            "truncation".to_owned(),
            serde_json::to_value(&snapshot.truncation).unwrap_or_default(),
        );
    }
    if let Some(path) = &snapshot.full_output_path {
        details.insert("fullOutputPath".to_owned(), Value::String(path.clone()));
    }
    Value::Object(details)
}

/// pi's throttled `onUpdate`: the first chunk is reported at once, later ones at most every
/// 100 ms (a timer reports what arrived in between).
struct Updates {
    progress: Option<mpsc::UnboundedSender<ToolOutput>>,
    last: Option<Instant>,
    dirty: bool,
    /// When the pending report is due.
    due: Option<Instant>,
}

impl Updates {
    fn new(progress: Option<mpsc::UnboundedSender<ToolOutput>>) -> Self {
        if let Some(p) = &progress {
            let _ = p.send(ToolOutput {
                content: Vec::new(),
                details: Value::Null,
                structured_content: None,
            });
        }
        Self {
            progress,
            last: None,
            dirty: false,
            due: None,
        }
    }

    fn data(&mut self, output: &mut OutputAccumulator) {
        if self.progress.is_none() {
            return;
        }
        self.dirty = true;
        let now = Instant::now();
        match self
            .last
            .map(|l| l + UPDATE_THROTTLE)
            .filter(|at| *at > now)
        {
            None => {
                self.due = None;
                self.emit(output);
            }
            Some(at) => {
                self.due.get_or_insert(at);
            }
        }
    }

    fn emit(&mut self, output: &mut OutputAccumulator) {
        let Some(progress) = &self.progress else {
            return;
        };
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.last = Some(Instant::now());
        let snapshot = output.snapshot();
        let _ = progress.send(ToolOutput {
            content: vec![ContentBlock::text(snapshot.content.clone())],
            details: truncation_details(&snapshot),
            structured_content: None,
        });
    }
}

/// What user bash (`!cmd`) produced: pi's `BashResult`, which becomes the `bashExecution`
/// message (`output, exitCode?, cancelled, truncated, fullOutputPath?`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BashResult {
    /// ANSI-stripped, sanitized output without `\r`, tail-truncated to 2000 lines / 50 KB.
    pub output: String,
    /// The exit code; `None` when cancelled or killed by a signal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Whether the abort flag stopped it.
    pub cancelled: bool,
    /// Whether `output` is only the tail.
    pub truncated: bool,
    /// `<tmpdir>/pith-<pid>-<hex>/pi-bash-<16 hex>.log` with the whole (cleaned) output,
    /// when the output was over 50 KB or truncated; removed when pith exits (see
    /// [`crate::spill`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
}

/// Runs a user `!cmd` as pi's `executeBash` with the `shellCommandPrefix` setting
/// (`shell_prefix`) and pi's default shell; see [`execute_bash_with`]. A full output file goes
/// to `output_dir` (see [`crate::spill`]).
///
/// pi throws when the command cannot run at all (the cwd is gone, no shell); this signature
/// has no error path, so such a failure comes back as a result whose `output` is pi's error
/// text, with no exit code. Callers that can report errors should use [`execute_bash_with`].
pub async fn execute_bash(
    command: &str,
    cwd: &Path,
    shell_prefix: Option<&str>,
    output_dir: &OutputDir,
    abort: CancellationToken,
) -> BashResult {
    let shell = ShellConfig {
        shell_path: None,
        command_prefix: shell_prefix.map(str::to_owned),
    };
    match execute_bash_with(command, cwd, &shell, output_dir, abort, None).await {
        Ok(result) => result,
        Err(e) => BashResult {
            output: e.to_string(),
            exit_code: None,
            cancelled: false,
            truncated: false,
            full_output_path: None,
        },
    }
}

/// Runs a user `!cmd` as pi 1.6.0's `executeBash`: `shell.command_prefix` (if any) is
/// prepended with a newline, the command runs in `cwd` until it ends or `abort` turns `true`
/// (the process group is then killed and the result is `cancelled`).
///
/// Output is cleaned chunk by chunk ([`strip_ansi`], [`sanitize_binary_output`], `\r`
/// removed); an escape sequence split across chunks is held back until it is complete
/// ([`split_incomplete_ansi_suffix`]). Non-empty cleaned chunks go to `on_chunk` as they
/// arrive. A rolling buffer of about 100 KB (UTF-16 units, as pi counts) is kept; once the
/// output passed 50 KB the cleaned output also goes to a file in `output_dir`.
///
/// Errors: the cwd is missing, the configured shell does not exist or cannot be started.
pub async fn execute_bash_with(
    command: &str,
    cwd: &Path,
    shell: &ShellConfig,
    output_dir: &OutputDir,
    abort: CancellationToken,
    on_chunk: Option<mpsc::UnboundedSender<String>>,
) -> Result<BashResult, ShellError> {
    let resolved = shell.apply_prefix(command);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let exec = shell::exec(
        &resolved,
        cwd,
        shell.shell_path.as_deref(),
        None,
        abort.clone(),
        tx,
    );
    tokio::pin!(exec);
    let mut output = UserOutput::new(output_dir.clone(), on_chunk);
    let mut end = None;
    let mut open = true;
    while open || end.is_none() {
        tokio::select! {
            chunk = rx.recv(), if open => match chunk {
                Some(data) => output.data(&data),
                None => open = false,
            },
            r = &mut exec, if end.is_none() => end = Some(r),
        }
    }
    let cancelled = abort.is_cancelled();
    let exit_code = match end {
        Some(Ok(ExecEnd::Exited(code))) => code,
        Some(Ok(ExecEnd::Aborted | ExecEnd::TimedOut)) => None,
        Some(Err(e)) if !cancelled => {
            output.close();
            return Err(e);
        }
        Some(Err(_)) | None => None,
    };
    output.flush();
    Ok(output.finish(if cancelled { None } else { exit_code }, cancelled))
}

/// User bash's output as pi 1.6.0 keeps it (`executeBashWithOperations`).
struct UserOutput {
    decoder: Utf8Stream,
    /// An unfinished escape sequence from the end of the last chunk.
    pending_ansi: String,
    /// Cleaned chunks with their UTF-16 lengths, oldest first.
    chunks: std::collections::VecDeque<(String, usize)>,
    rolling: usize,
    /// Whether the rolling buffer dropped chunks.
    discarded: bool,
    total_raw: usize,
    output_dir: OutputDir,
    spill: Option<SpillFile>,
    on_chunk: Option<mpsc::UnboundedSender<String>>,
}

impl UserOutput {
    fn new(output_dir: OutputDir, on_chunk: Option<mpsc::UnboundedSender<String>>) -> Self {
        Self {
            decoder: Utf8Stream::new(),
            pending_ansi: String::new(),
            chunks: Default::default(),
            rolling: 0,
            discarded: false,
            total_raw: 0,
            output_dir,
            spill: None,
            on_chunk,
        }
    }

    fn data(&mut self, data: &[u8]) {
        self.total_raw += data.len();
        let text = std::mem::take(&mut self.pending_ansi) + &self.decoder.decode(data);
        let (complete, pending) = split_incomplete_ansi_suffix(&text);
        self.pending_ansi = pending.to_owned();
        self.append(complete);
    }

    /// pi's `flushOutput`: the held-back sequence and the decoder's rest.
    fn flush(&mut self) {
        let rest = std::mem::take(&mut self.pending_ansi) + &self.decoder.finish();
        self.append(&rest);
    }

    fn append(&mut self, raw: &str) {
        let text = sanitize_binary_output(&strip_ansi(raw)).replace('\r', "");
        if text.is_empty() {
            return;
        }
        if self.total_raw > DEFAULT_MAX_BYTES {
            self.ensure_spill();
        }
        if let Some(s) = self.spill.as_mut() {
            s.write(text.as_bytes());
        }
        let units = text.encode_utf16().count();
        self.rolling += units;
        if let Some(c) = &self.on_chunk {
            let _ = c.send(text.clone());
        }
        self.chunks.push_back((text, units));
        while self.rolling > DEFAULT_MAX_BYTES * 2 && self.chunks.len() > 1 {
            if let Some((_, n)) = self.chunks.pop_front() {
                self.rolling -= n;
                self.discarded = true;
            }
        }
    }

    fn ensure_spill(&mut self) {
        if self.spill.is_some() {
            return;
        }
        match SpillFile::create(&self.output_dir, SPILL_PREFIX) {
            Ok(mut s) => {
                for (text, _) in &self.chunks {
                    s.write(text.as_bytes());
                }
                self.spill = Some(s);
            }
            Err(e) => tracing::warn!(error = %e, "could not create the full output file"),
        }
    }

    fn close(&mut self) {
        if let Some(s) = self.spill.as_mut() {
            s.close();
        }
    }

    fn finish(mut self, exit_code: Option<i64>, cancelled: bool) -> BashResult {
        let full: String = self.chunks.iter().map(|(t, _)| t.as_str()).collect();
        let truncation = truncate_tail(&full, Limits::default());
        if truncation.truncated {
            self.ensure_spill();
        }
        self.close();
        BashResult {
            output: if truncation.truncated {
                truncation.content
            } else {
                full
            },
            exit_code,
            cancelled,
            truncated: self.discarded || truncation.truncated,
            full_output_path: self.spill.as_ref().map(|s| s.path().display().to_string()),
        }
    }
}
