//! Tool calls and their results as pi's tool renderers show them, collapsed (pi's default
//! before Ctrl-O): `$ command` with the last 5 output lines for bash, `read path:from-to`
//! with the first 10 lines, `write path` with the first 10 lines of the content, `edit path`
//! with the diff, and the tool name with its arguments for any other tool. Errors are red.

use serde_json::Value;

use super::screen::truncate;
use super::style;

/// `value` with every string passed through `pith_tools::sanitize::for_terminal`.
fn sanitized(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(pith_tools::sanitize::for_terminal(s)),
        Value::Array(items) => Value::Array(items.iter().map(sanitized).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (pith_tools::sanitize::for_terminal(k), sanitized(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// pi's `BASH_PREVIEW_LINES`.
const BASH_PREVIEW: usize = 5;
/// pi's collapsed read/write preview.
const FILE_PREVIEW: usize = 10;
/// Lines of an edit diff or of another tool's output shown collapsed.
const OTHER_PREVIEW: usize = 20;

/// pi's hint after a cut tool output (`app.tools.expand`'s default key).
const EXPAND_HINT: &str = "ctrl+o to expand";

/// The lines announcing a call of `name` with `args` (pi's `renderCall`), each within `cols`.
pub fn call_lines(name: &str, args: &Value, cols: usize) -> Vec<String> {
    // Arguments come from the model: no escape sequence reaches the terminal.
    let args = &sanitized(args);
    let name = &pith_tools::sanitize::for_terminal(name);
    let name = name.as_str();
    let path = || {
        let raw = args
            .get("path")
            .or_else(|| args.get("file_path"))
            .and_then(Value::as_str);
        match raw {
            Some(p) => style::accent(&shorten_path(p)),
            None => style::error("[invalid arg]"),
        }
    };
    match name {
        "bash" => {
            let command = args.get("command").and_then(Value::as_str).unwrap_or("...");
            let mut lines: Vec<String> = command.lines().map(str::to_owned).collect();
            if lines.is_empty() {
                lines.push(String::new());
            }
            lines[0] = format!("$ {}", lines[0]);
            let mut out: Vec<String> = lines
                .iter()
                .map(|l| style::bold(&truncate(l, cols)))
                .collect();
            if let Some(t) = args.get("timeout").and_then(Value::as_u64)
                && let Some(last) = out.last_mut()
            {
                last.push_str(&style::muted(&format!(" (timeout {t}s)")));
            }
            out
        }
        "read" => {
            let range = match (
                args.get("offset").and_then(Value::as_u64),
                args.get("limit").and_then(Value::as_u64),
            ) {
                (None, None) => String::new(),
                (offset, limit) => {
                    let start = offset.unwrap_or(1);
                    match limit {
                        Some(l) => format!(":{start}-{}", start + l.saturating_sub(1)),
                        None => format!(":{start}"),
                    }
                }
            };
            vec![format!(
                "{} {}{}",
                style::bold("read"),
                path(),
                style::warning(&range)
            )]
        }
        "write" => {
            let mut out = vec![format!("{} {}", style::bold("write"), path())];
            if let Some(content) = args.get("content").and_then(Value::as_str) {
                let lines = trim_trailing_empty(content.lines().collect());
                let total = lines.len();
                if total > 0 {
                    out.push(String::new());
                }
                out.extend(
                    lines
                        .iter()
                        .take(FILE_PREVIEW)
                        .map(|l| style::muted(&truncate(&l.replace('\t', "   "), cols))),
                );
                if total > FILE_PREVIEW {
                    out.push(style::muted(&format!(
                        "... ({} more lines, {total} total, {EXPAND_HINT})",
                        total - FILE_PREVIEW
                    )));
                }
            }
            out
        }
        "edit" => vec![format!("{} {}", style::bold("edit"), path())],
        _ => {
            let args = match args {
                Value::Object(m) if m.is_empty() => String::new(),
                Value::Null => String::new(),
                other => format!(" {other}"),
            };
            let room = cols.saturating_sub(super::screen::width(name));
            vec![format!(
                "{}{}",
                style::bold(name),
                style::muted(&truncate(&args, room))
            )]
        }
    }
}

/// A tool's result as the transcript shows it: [`result_lines`]' preview, or with `expanded`
/// (Ctrl+O) the whole text under a `name (full output)` title; a bash result ends with pi's
/// `Took 1.2s` when `duration_ms` (how long the tool ran) is known.
pub fn result_view(
    name: &str,
    result: &Value,
    is_error: bool,
    expanded: bool,
    cols: usize,
    duration_ms: Option<u64>,
) -> Vec<String> {
    let mut out = result_body(name, result, is_error, expanded, cols);
    if let Some(ms) = duration_ms.filter(|_| name == "bash") {
        out.push(String::new());
        out.push(style::muted(&format!("Took {}", format_duration(ms))));
    }
    out
}

/// pi's `formatToolDuration`: `4.2s`, `3m 5s`, `1h 2m 3s`.
fn format_duration(ms: u64) -> String {
    let seconds = ms as f64 / 1000.0;
    if seconds < 60.0 {
        return format!("{seconds:.1}s");
    }
    let total = ms / 1000;
    let (minutes, rest) = (total / 60, total % 60);
    if minutes < 60 {
        return format!("{minutes}m {rest}s");
    }
    format!("{}h {}m {rest}s", minutes / 60, minutes % 60)
}

fn result_body(
    name: &str,
    result: &Value,
    is_error: bool,
    expanded: bool,
    cols: usize,
) -> Vec<String> {
    if !expanded {
        return result_lines(name, result, is_error, cols);
    }
    let text = text_output(result);
    let styled: &dyn Fn(&str) -> String = if is_error {
        &style::error
    } else {
        &style::muted
    };
    let mut out = vec![style::bold(&format!("{name} (full output)"))];
    out.extend(super::messages::wrap(text.trim_end(), cols, styled));
    out
}

/// The lines showing the result of a call (pi's `renderResult`, collapsed). `result` is the
/// `{content, details}` of `tool_execution_end`.
pub fn result_lines(name: &str, result: &Value, is_error: bool, cols: usize) -> Vec<String> {
    let text = text_output(result);
    let lines = trim_trailing_empty(text.trim_end().lines().collect());
    if is_error {
        return lines
            .iter()
            .take(OTHER_PREVIEW)
            .map(|l| style::error(&truncate(l, cols)))
            .collect();
    }
    let details = result.get("details");
    let mut out = Vec::new();
    match name {
        "bash" => {
            let skipped = lines.len().saturating_sub(BASH_PREVIEW);
            if skipped > 0 {
                out.push(style::muted(&format!(
                    "... ({skipped} earlier lines, {EXPAND_HINT})"
                )));
            }
            out.extend(
                lines[skipped..]
                    .iter()
                    .map(|l| style::muted(&truncate(l, cols))),
            );
            if let Some(path) = details
                .and_then(|d| d.get("fullOutputPath"))
                .and_then(Value::as_str)
            {
                out.push(style::warning(&format!(
                    "[Full output: {}]",
                    pith_tools::sanitize::for_terminal(path)
                )));
            }
        }
        "read" => {
            // pi 1.6.0: the model saw a placeholder instead of the image.
            if let Some(model) = details
                .and_then(|d| d.get("imageUnsupportedByModel"))
                .and_then(Value::as_str)
            {
                out.push(style::warning(&format!(
                    "[{} does not support images; it saw a placeholder instead]",
                    pith_tools::sanitize::for_terminal(model)
                )));
            }
            out.extend(
                lines
                    .iter()
                    .take(FILE_PREVIEW)
                    .map(|l| style::muted(&truncate(&l.replace('\t', "   "), cols))),
            );
            if lines.len() > FILE_PREVIEW {
                out.push(style::muted(&format!(
                    "... ({} more lines, {EXPAND_HINT})",
                    lines.len() - FILE_PREVIEW
                )));
            }
        }
        // pi shows the written content with the call; a success says nothing more.
        "write" => {}
        "edit" => {
            if let Some(diff) = details.and_then(|d| d.get("diff")).and_then(Value::as_str) {
                out.extend(diff_lines(diff, cols));
            }
        }
        _ => {
            out.extend(
                lines
                    .iter()
                    .take(OTHER_PREVIEW)
                    .map(|l| style::muted(&truncate(l, cols))),
            );
            if lines.len() > OTHER_PREVIEW {
                out.push(style::muted(&format!(
                    "... ({} more lines, {EXPAND_HINT})",
                    lines.len() - OTHER_PREVIEW
                )));
            }
        }
    }
    out
}

/// A diff of pi's edit tool, added lines green and removed ones red.
fn diff_lines(diff: &str, cols: usize) -> Vec<String> {
    let lines: Vec<&str> = diff.lines().collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(OTHER_PREVIEW)
        .map(|l| {
            let l = truncate(l, cols);
            match l.chars().next() {
                Some('+') => style::success(&l),
                Some('-') => style::error(&l),
                _ => style::muted(&l),
            }
        })
        .collect();
    if lines.len() > OTHER_PREVIEW {
        out.push(style::muted(&format!(
            "... ({} more lines, {EXPAND_HINT})",
            lines.len() - OTHER_PREVIEW
        )));
    }
    out
}

/// pi's `getTextOutput`: the text blocks joined with newlines, cleaned for the terminal
/// ([`pith_tools::sanitize::for_terminal`]: escape sequences, control characters and `\r`
/// removed); images as a placeholder (pith draws no images in the terminal).
pub fn text_output(result: &Value) -> String {
    let Some(blocks) = result.get("content").and_then(Value::as_array) else {
        return String::new();
    };
    blocks
        .iter()
        .filter_map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => b.get("text").and_then(Value::as_str).map(str::to_owned),
            Some("image") => Some(format!(
                "[image: {}]",
                b.get("mimeType")
                    .and_then(Value::as_str)
                    .unwrap_or("image/unknown")
            )),
            _ => None,
        })
        .map(|t| pith_tools::sanitize::for_terminal(&t))
        .collect::<Vec<_>>()
        .join("\n")
}

fn trim_trailing_empty(mut lines: Vec<&str>) -> Vec<&str> {
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    lines
}

/// pi's `shortenPath`: the home directory as `~`.
pub fn shorten_path(path: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && path.starts_with(&home) => {
            format!("~{}", &path[home.len()..])
        }
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plain(lines: Vec<String>) -> Vec<String> {
        let ansi = regex::Regex::new("\x1b\\[[0-9;]*m").unwrap_or_else(|_| unreachable!());
        lines
            .iter()
            .map(|l| ansi.replace_all(l, "").into_owned())
            .collect()
    }

    #[test]
    fn results_reach_the_terminal_without_live_escapes() {
        let result = json!({"content": [{"type": "text", "text": "a\u{1b}]52;c;aGk=\u{7}b\r\n"}]});
        assert_eq!(text_output(&result), "ab\n");
        let image = json!({
            "content": [{"type": "text", "text": "Read image file [image/png]"}],
            "details": {"imageUnsupportedByModel": "text-only"}
        });
        assert_eq!(
            plain(result_lines("read", &image, false, 80)),
            [
                "[text-only does not support images; it saw a placeholder instead]",
                "Read image file [image/png]"
            ]
        );
    }

    #[test]
    fn calls_read_as_pi_shows_them() {
        assert_eq!(
            plain(call_lines(
                "bash",
                &json!({"command": "ls -la", "timeout": 5}),
                80
            )),
            ["$ ls -la (timeout 5s)"]
        );
        assert_eq!(
            plain(call_lines(
                "read",
                &json!({"path": "/x/a.rs", "offset": 10, "limit": 5}),
                80
            )),
            ["read /x/a.rs:10-14"]
        );
        assert_eq!(
            plain(call_lines("mytool", &json!({"a": 1}), 80)),
            [r#"mytool {"a":1}"#]
        );
    }

    #[test]
    fn a_bash_result_ends_with_how_long_it_took() {
        let result = json!({"content": [{"type": "text", "text": "done"}]});
        let view = |ms| plain(result_view("bash", &result, false, false, 80, ms));
        assert_eq!(view(Some(1234)), ["done", "", "Took 1.2s"]);
        assert_eq!(view(Some(185_000)), ["done", "", "Took 3m 5s"]);
        assert_eq!(view(Some(3_723_000)), ["done", "", "Took 1h 2m 3s"]);
        assert_eq!(view(None), ["done"]);
        // Only bash shows it, as in pi.
        assert_eq!(
            plain(result_view("ls", &result, false, false, 80, Some(5))),
            ["done"]
        );
    }

    #[test]
    fn bash_results_keep_the_last_five_lines() {
        let out = (1..=8).map(|i| format!("line {i}")).collect::<Vec<_>>();
        let result = json!({"content": [{"type": "text", "text": out.join("\n")}]});
        assert_eq!(
            plain(result_lines("bash", &result, false, 80)),
            [
                "... (3 earlier lines, ctrl+o to expand)",
                "line 4",
                "line 5",
                "line 6",
                "line 7",
                "line 8"
            ]
        );
    }

    #[test]
    fn errors_are_shown_whole() {
        let result = json!({"content": [{"type": "text", "text": "No such file"}]});
        assert_eq!(
            plain(result_lines("read", &result, true, 80)),
            ["No such file"]
        );
    }
}
