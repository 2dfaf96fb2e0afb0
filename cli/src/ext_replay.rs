//! `pith extension check <path> --transcript FILE` (spec: extensions.md §4 step 3): plays
//! the host side of a golden wire transcript (`docs/extension-protocol/transcripts/*.jsonl`)
//! against an extension and compares each line it writes with the transcript's, ids
//! normalised (`pith_events::ext::transcript`). No model and no session: the host's lines are
//! sent as recorded, so an author tests an extension against the protocol alone.
//!
//! Placeholders the replays redact are filled in: `[TMP]` becomes a fresh scratch directory
//! (the session cwd is `[TMP]/project`), `[VERSION]` pith's version, and the `initialize`
//! request names the extension's own directory. The transcript's `file` lines (what the
//! extension found in the session cwd) are written there first. Every host `initialize` starts a fresh
//! process (a restart or a new session in the transcript); an `exit` line waits for the
//! process to exit by itself when the transcript says it `exited`, and ends it otherwise
//! (pith ended it: a timeout, a garbage line).

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use pith_events::ext::ExtensionSpec;
use pith_events::ext::transcript::{IdNormalizer, Item, Side, TranscriptLine, parse_jsonl};

/// How long an expected line may take.
const REPLY_WITHIN: Duration = Duration::from_secs(10);
/// How long an extension the transcript says exited may take to exit.
const EXIT_WITHIN: Duration = Duration::from_secs(5);

struct Proc {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

/// What the replay fills in and takes out again.
struct Places {
    tmp: PathBuf,
    spec: ExtensionSpec,
}

impl Places {
    fn fill(&self, msg: &Value) -> Value {
        let text = msg
            .to_string()
            .replace("[TMP]", &self.tmp.to_string_lossy())
            .replace("[VERSION]", env!("CARGO_PKG_VERSION"));
        let mut msg: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if msg.get("method").and_then(Value::as_str) == Some("initialize")
            && let Some(ext) = msg.pointer_mut("/params/extension")
        {
            ext["dir"] = Value::String(self.spec.dir.to_string_lossy().into_owned());
        }
        msg
    }

    fn redact(&self, line: &str) -> String {
        line.replace(&*self.tmp.to_string_lossy(), "[TMP]")
    }

    fn cwd(&self) -> PathBuf {
        self.tmp.join("project")
    }
}

fn spawn(spec: &ExtensionSpec, places: &Places, mode: &str) -> Result<Proc> {
    let (child, stdin, lines) = start(spec, &places.cwd(), mode)?;
    Ok(Proc {
        child,
        stdin,
        lines,
    })
}

/// Starts an extension process as the host would (its resolved argv, its manifest's env and
/// the protocol env, in `cwd`) with no session, for `pith extension check`: the child, its
/// stdin and its stdout's lines. Errors: an empty command, or a program that cannot start.
pub(crate) fn start(
    spec: &ExtensionSpec,
    cwd: &std::path::Path,
    mode: &str,
) -> Result<(
    tokio::process::Child,
    tokio::process::ChildStdin,
    tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
)> {
    let argv = pith_actors::extensions::child::resolve_command(spec);
    let Some((program, args)) = argv.split_first() else {
        bail!("the command is empty");
    };
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .current_dir(cwd)
        .envs(spec.manifest.env.iter())
        .envs(pith_actors::extensions::child::protocol_env(
            spec, mode, cwd, "", None,
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {}", argv.join(" ")))?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        bail!("no stdio");
    };
    Ok((child, stdin, BufReader::new(stdout).lines()))
}

/// Where two JSON values differ, as `path: expected …, got …` lines (at most 10).
fn differences(path: &str, expected: &Value, actual: &Value, out: &mut Vec<String>) {
    if out.len() >= 10 {
        return;
    }
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                let p = format!("{path}/{k}");
                match a.get(k) {
                    Some(av) => differences(&p, ev, av, out),
                    None => out.push(format!("{p}: expected {ev}, missing")),
                }
            }
            for (k, av) in a {
                if !e.contains_key(k) {
                    out.push(format!("{path}/{k}: not expected, got {av}"));
                }
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                differences(&format!("{path}/{i}"), ev, av, out);
            }
        }
        _ if expected != actual => {
            let at = if path.is_empty() { "/" } else { path };
            out.push(format!("{at}: expected {expected}, got {actual}"));
        }
        _ => {}
    }
}

/// Replays `file` against `spec`; prints `ok: …` or the first difference (exit code 1).
///
/// Errors: the transcript cannot be read or parsed, the extension cannot be started.
pub async fn replay(spec: ExtensionSpec, file: &Path) -> Result<ExitCode> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let all = parse_jsonl(&text)
        .map_err(|(n, e)| anyhow!("{}:{n}: not a transcript line: {e}", file.display()))?;
    let Some(name) = all.first().map(|l| l.ext.clone()) else {
        bail!("{} holds no lines", file.display());
    };
    let tmp = std::env::temp_dir().join(format!("pith-check-{}", std::process::id()));
    std::fs::create_dir_all(tmp.join("project"))?;
    let places = Places { tmp, spec };
    let outcome = run(&places, &name, &all, file).await;
    let _ = std::fs::remove_dir_all(&places.tmp);
    outcome
}

async fn run(places: &Places, name: &str, all: &[TranscriptLine], file: &Path) -> Result<ExitCode> {
    for line in all {
        if let Item::File {
            file: path,
            content,
        } = &line.item
        {
            let rel = Path::new(path);
            if rel.is_absolute()
                || rel
                    .components()
                    .any(|c| matches!(c, std::path::Component::ParentDir))
            {
                bail!(
                    "{}: the file {path} is outside the session cwd",
                    file.display()
                );
            }
            let to = places.cwd().join(rel);
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&to, content)?;
        }
    }
    let mut ids = IdNormalizer::default();
    let mut proc: Option<Proc> = None;
    let mut replies = 0;
    for (n, line) in all.iter().enumerate().filter(|(_, l)| l.ext == name) {
        let at = format!("{}:{}", file.display(), n + 1);
        match &line.item {
            Item::Line {
                from: Side::Host,
                msg,
            } => {
                let mut msg = places.fill(msg);
                if msg.get("method").and_then(Value::as_str) == Some("initialize") {
                    if let Some(mut old) = proc.take() {
                        let _ = old.child.kill().await;
                    }
                    let mode = msg
                        .pointer("/params/mode")
                        .and_then(Value::as_str)
                        .unwrap_or("print")
                        .to_owned();
                    proc = Some(spawn(&places.spec, places, &mode)?);
                }
                // An answer to one of the extension's own requests carries its own id.
                if msg.get("method").is_none()
                    && let Some(id) = msg.get("id").and_then(|id| ids.original(name, id))
                {
                    msg["id"] = id;
                }
                ids.normalize(&TranscriptLine {
                    ext: name.to_owned(),
                    item: Item::Line {
                        from: Side::Host,
                        msg: msg.clone(),
                    },
                });
                let Some(p) = proc.as_mut() else {
                    bail!("{at}: a line for the extension before any initialize");
                };
                // It may have exited already (after `shutdown`): that is for its lines to say.
                let _ = p.stdin.write_all(format!("{msg}\n").as_bytes()).await;
                let _ = p.stdin.flush().await;
            }
            Item::Line {
                from: Side::Ext,
                msg: expected,
            } => {
                let Some(p) = proc.as_mut() else {
                    bail!("{at}: a line from the extension before any initialize");
                };
                let got = match tokio::time::timeout(REPLY_WITHIN, p.lines.next_line()).await {
                    Ok(Ok(Some(raw))) => raw,
                    Ok(_) => {
                        return differs(&at, expected, None, "the extension exited instead");
                    }
                    Err(_) => {
                        return differs(&at, expected, None, "no line within 10 s");
                    }
                };
                let got =
                    ids.normalize(&TranscriptLine::line(name, Side::Ext, &places.redact(&got)));
                let Item::Line { msg: actual, .. } = &got.item else {
                    bail!("{at}: a line became an exit");
                };
                if actual != expected {
                    return differs(&at, expected, Some(actual), "");
                }
                replies += 1;
            }
            Item::Exit { exit } => {
                let Some(mut p) = proc.take() else {
                    bail!("{at}: an exit before any initialize");
                };
                if exit.starts_with("exited") {
                    if tokio::time::timeout(EXIT_WITHIN, p.child.wait())
                        .await
                        .is_err()
                    {
                        println!("{at}: the transcript's extension {exit}; this one did not");
                        return Ok(ExitCode::FAILURE);
                    }
                } else {
                    let _ = p.child.kill().await;
                }
            }
            // Written before the replay began.
            Item::File { .. } => {}
        }
    }
    if let Some(mut p) = proc.take() {
        drop(p.stdin);
        if tokio::time::timeout(Duration::from_secs(2), p.child.wait())
            .await
            .is_err()
        {
            let _ = p.child.kill().await;
        }
    }
    println!(
        "ok: {} replays {} ({replies} lines from the extension match)",
        places.spec.manifest.name,
        file.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Prints where the extension's line differs from the transcript's.
fn differs(at: &str, expected: &Value, actual: Option<&Value>, why: &str) -> Result<ExitCode> {
    println!("{at}: the extension's line differs from the transcript");
    println!("- {expected}");
    match actual {
        Some(actual) => {
            println!("+ {actual}");
            let mut diffs = Vec::new();
            differences("", expected, actual, &mut diffs);
            for d in diffs {
                println!("  {d}");
            }
        }
        None => println!("+ ({why})"),
    }
    Ok(ExitCode::FAILURE)
}
