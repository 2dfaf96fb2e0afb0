//! Print mode: `pith -p "prompt"` runs the prompt on the actor runtime and prints the reply
//! (spec: agent-and-events.md §8 for the prompt rules, lifecycle.md §5 for session flags).

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use pith_actors::RuntimeError;
use pith_actors::runtime::RuntimeEvent;
use pith_events::{AgentEvent, AgentMessage, ContentBlock, ImageContent, StopReason};
use pith_tools::image::Processed;
use pith_tools::sanitize::for_terminal;
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::startup::{Mode, RunArgs, Started, check_flags, start};

/// Runs print mode; exit status 1 when the last reply is an error, was aborted or stopped at
/// the output limit (`length`, pi 1.6.0).
pub fn run(args: RunArgs) -> Result<ExitCode> {
    check_flags(&args)?;
    let stdin = std::io::stdin();
    let mut piped = None;
    if !stdin.is_terminal() {
        let mut text = String::new();
        stdin
            .lock()
            .read_to_string(&mut text)
            .context("reading the prompt from stdin")?;
        // pi trims what is piped in and ignores it when nothing is left.
        piped = Some(pith_events::js::js_trim(&text).to_owned()).filter(|t| !t.is_empty());
    }
    let (prompts, images) = initial_prompts(&args.messages, piped)?;
    if prompts.is_empty() {
        bail!("no prompt: give one as an argument (pith -p \"…\") or on stdin");
    }
    // stderr carries warnings in print and json modes; stdout stays the reply or the events.
    let _log =
        crate::logging::install(&pith_store::dirs::agent_dir(), args.trace.as_deref(), true)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run_prompts(args, prompts, images))
}

/// The prompts of the command line (pi's `prepareInitialMessage`): `@file` arguments are
/// files for the first prompt, not prompts (pi's `fileArgs`); the first prompt is what was
/// piped in, then the files' text, then the first message, without separators; the images
/// go with that first prompt.
///
/// Errors: as [`file_arguments`].
pub(crate) fn initial_prompts(
    messages: &[String],
    piped: Option<String>,
) -> Result<(Vec<String>, Vec<ImageContent>)> {
    let (files, mut prompts): (Vec<String>, Vec<String>) =
        messages.iter().cloned().partition(|m| m.starts_with('@'));
    let (file_text, images) = file_arguments(&files)?;
    if piped.is_some() || !file_text.is_empty() {
        let first = if prompts.is_empty() {
            String::new()
        } else {
            prompts.remove(0)
        };
        prompts.insert(
            0,
            format!("{}{file_text}{first}", piped.unwrap_or_default()),
        );
    }
    Ok((prompts, images))
}

/// pi's `processFileArguments`: each non-empty text file as
/// `<file name="ABSOLUTE PATH">\nCONTENT\n</file>\n`, each image (judged by its first bytes,
/// `image::detect_mime`) as `<file name="ABSOLUTE PATH"></file>\n` (a BMP's conversion note
/// between the tags) plus the image itself, in order. The images are not resized here: as in
/// pi, the run resizes them when the prompt's user message starts. An image that cannot be
/// converted leaves pi's `[Image omitted: …]` note between the tags instead.
///
/// Errors: a missing file (`File not found: PATH`) or an unreadable one.
fn file_arguments(files: &[String]) -> Result<(String, Vec<ImageContent>)> {
    let cwd = std::env::current_dir()?;
    let mut text = String::new();
    let mut images = Vec::new();
    for arg in files {
        let path = pith_tools::paths::resolve_read_path(arg, &cwd);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                bail!("File not found: {}", path.display())
            }
            Err(e) => bail!("Could not read file {}: {e}", path.display()),
        };
        if bytes.is_empty() {
            continue;
        }
        let head = &bytes[..bytes.len().min(pith_tools::image::SNIFF_BYTES)];
        if let Some(mime) = pith_tools::image::detect_mime(head) {
            let note = match pith_tools::image::process(&bytes, mime, false) {
                Processed::Ok {
                    data,
                    mime_type,
                    hints,
                } => {
                    images.push(ImageContent { data, mime_type });
                    hints.join("\n")
                }
                Processed::Omitted(message) => message,
            };
            text.push_str(&format!(
                "<file name=\"{}\">{note}</file>\n",
                path.display()
            ));
            continue;
        }
        text.push_str(&format!(
            "<file name=\"{}\">\n{}\n</file>\n",
            path.display(),
            String::from_utf8_lossy(&bytes)
        ));
    }
    Ok((text, images))
}

/// `!cmd` → `(cmd, false)`, `!!cmd` → `(cmd, true)` (kept out of the context); `None` for
/// other text and for a bare `!`/`!!`, which pi sends as an ordinary prompt (spec §5).
fn user_command(text: &str) -> Option<(&str, bool)> {
    let text = text.trim();
    let (rest, exclude) = match text.strip_prefix("!!") {
        Some(rest) => (rest, true),
        None => (text.strip_prefix('!')?, false),
    };
    let command = rest.trim();
    (!command.is_empty()).then_some((command, exclude))
}

/// Runs `prompts` in order; `images` go with the first (pi's `initialImages`, from `@file`
/// arguments).
async fn run_prompts(
    args: RunArgs,
    prompts: Vec<String>,
    mut images: Vec<ImageContent>,
) -> Result<ExitCode> {
    let Started {
        rt,
        header_line,
        mcp,
        ..
    } = start(&args).await?;
    // Listened to from here to the end: a signal that arrives while an event is printed waits
    // for the loop's next look instead of being lost with a dropped listener.
    let mut shutdown = Shutdown::listen();
    let json = args.mode == Some(Mode::Json);
    if json {
        // pi prints the in-memory header first, even before the file exists.
        out(format_args!("{header_line}\n"));
    }
    let mut events = rt.subscribe().await?;
    let commands = rt.commands().await?;
    let pacer = rt.pacer().await?;
    if json {
        // Backpressure: a slow reader of stdout slows the agent, memory stays bounded.
        pacer.limit(crate::rpc::PACE_LIMIT);
    }
    let mut seen = Seen {
        json,
        pacer: Some(pacer),
        ..Seen::default()
    };
    let mut compaction_failed = false;
    let mut interrupted = false;
    let mut bash_failed = false;
    for prompt in prompts {
        // Only the first prompt has images; a command that takes it drops them, as in pi.
        let prompt_images = std::mem::take(&mut images);
        // `/name args` runs an extension command instead of prompting (agent-and-events §3.1).
        if let Some(rest) = prompt.strip_prefix('/') {
            let (name, args) = rest.split_once(' ').unwrap_or((rest, ""));
            if commands.iter().any(|c| c.name == name) {
                if let Some(out) = rt.command(name, args).await? {
                    self::out(format_args!("{}\n", for_stdout(&out)));
                }
                continue;
            }
            // pi's `/compact [focus]`, which its print mode would send to the model as text.
            if name == "compact" {
                let focus = Some(args.trim()).filter(|f| !f.is_empty());
                let compacting = rt.compact(focus);
                tokio::pin!(compacting);
                let outcome = tokio::select! {
                    outcome = &mut compacting => outcome,
                    _ = shutdown.recv() => {
                        // SIGINT/SIGTERM cancel the summary (pi's abort), and the prompts
                        // after it.
                        interrupted = true;
                        rt.abort().await?;
                        compacting.await
                    }
                };
                // The compaction's events are queued by the time it answered.
                while let Ok(event) = events.try_recv() {
                    seen.take(event);
                }
                match outcome {
                    Ok(_) => eprintln!("pith: compacted"),
                    Err(RuntimeError::CompactionCancelled) => {
                        compaction_failed = true;
                        eprintln!("pith: Compaction cancelled");
                    }
                    Err(e) => {
                        compaction_failed = true;
                        eprintln!("pith: Compaction failed: {}", for_terminal(&e.to_string()));
                    }
                }
                if interrupted {
                    break;
                }
                continue;
            }
        }
        // pi's `!cmd` / `!!cmd` (its interactive mode's; print mode would send the text).
        if let Some((command, exclude)) = user_command(&prompt) {
            let running = rt.bash(command, exclude);
            tokio::pin!(running);
            let outcome = tokio::select! {
                outcome = &mut running => outcome,
                _ = shutdown.recv() => {
                    // Cancelled, the command is still recorded (`cancelled: true`, spec §5).
                    rt.abort_bash();
                    interrupted = true;
                    running.await
                }
            };
            match outcome {
                // JSON mode's stdout holds only pi's events; pi emits none for `!cmd`.
                Ok(run) if json => bash_failed |= run.cancelled || run.exit_code != Some(0),
                Ok(run) => {
                    out(format_args!("{}", for_stdout(&run.output)));
                    if !run.output.is_empty() && !run.output.ends_with('\n') {
                        out(format_args!("\n"));
                    }
                    if let Some(path) = &run.full_output_path {
                        eprintln!("pith: output truncated; the full output is in {path}");
                    }
                    bash_failed |= run.cancelled || run.exit_code != Some(0);
                }
                Err(e) => {
                    bash_failed = true;
                    eprintln!("pith: {}", for_terminal(&e.to_string()));
                }
            }
            if interrupted {
                break;
            }
            continue;
        }
        rt.prompt_with_images(&prompt, prompt_images).await?;
        // A prompt is done when the agent is idle, not at the first agent_end: a compaction
        // and an overflow retry may follow it.
        let idle = rt.wait_idle();
        tokio::pin!(idle);
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Some(event) => seen.take(event),
                    None => bail!("the runtime stopped unexpectedly"),
                },
                done = &mut idle => {
                    done?;
                    break;
                }
                _ = shutdown.recv() => {
                    // SIGINT/SIGTERM: abort the run, then shut down cleanly (flush and fsync).
                    interrupted = true;
                    rt.abort().await?;
                    break;
                }
            }
        }
        // Whatever the run emitted is queued by the time the agent is idle.
        while let Ok(event) = events.try_recv() {
            seen.take(event);
        }
        if interrupted {
            break;
        }
    }
    rt.shutdown().await?;
    crate::mcp_cmd::stop(mcp).await;
    while let Ok(event) = events.try_recv() {
        if let RuntimeEvent::WriteFailed(n) = event {
            seen.write_failed = true;
            eprintln!("pith: {}", for_terminal(&n));
        }
    }
    let write_failed = seen.write_failed;
    // Like pi's print mode: every prompt runs; the exit status is the last reply's.
    let failed = match seen.last {
        // JSON mode has shown everything already; like pi's, its status ignores the reply.
        Some(_) if json => false,
        Some(AgentMessage::Assistant(a)) => {
            if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                // pi's line, without pith's `pith: ` prefix: the reply's `errorMessage`, or
                // `Request ${stopReason}`.
                let fallback = if a.stop_reason == StopReason::Aborted {
                    "Request aborted"
                } else {
                    "Request error"
                };
                eprintln!(
                    "{}",
                    for_terminal(a.error_message.as_deref().unwrap_or(fallback))
                );
                true
            } else {
                for block in &a.content {
                    if let ContentBlock::Text(t) = block {
                        out(format_args!("{}\n", for_stdout(&t.text)));
                    }
                }
                // pi 1.6.0: a reply cut at the output limit is a failed run.
                if a.stop_reason == StopReason::Length {
                    eprintln!("Response was truncated: the model reached its output token limit.");
                }
                a.stop_reason == StopReason::Length
            }
        }
        _ => false,
    };
    Ok(
        match (
            interrupted,
            failed || write_failed || compaction_failed || bash_failed,
        ) {
            (true, _) => ExitCode::from(130),
            (false, true) => ExitCode::FAILURE,
            (false, false) => ExitCode::SUCCESS,
        },
    )
}

/// What print mode keeps from the runtime's events.
#[derive(Default)]
struct Seen {
    /// `--mode json`: every agent event goes to stdout as it comes.
    json: bool,
    /// The last assistant reply: printed, and its stop reason is the exit status.
    last: Option<AgentMessage>,
    /// Some write failed (the user was told on stderr).
    write_failed: bool,
    /// Told of every event line written in json mode.
    pacer: Option<pith_actors::event::Pacer>,
}

impl Seen {
    fn take(&mut self, event: RuntimeEvent) {
        match event {
            RuntimeEvent::Agent(event) => {
                // `bash_execution_update` is rpc's alone (pi ≥ 0.82).
                let rpc_only = matches!(*event, AgentEvent::BashExecutionUpdate { .. });
                if self.json && !rpc_only {
                    // pi prints what its session listeners get, as `JSON.stringify` spells it.
                    match event.to_listener_json() {
                        Ok(line) => {
                            let mut out = std::io::stdout().lock();
                            if writeln!(out, "{line}").is_err()
                                && let Some(pacer) = &self.pacer
                            {
                                // No reader: nothing may wait for one.
                                pacer.limit(usize::MAX);
                            }
                        }
                        Err(e) => eprintln!("pith: an event could not be written: {e}"),
                    }
                }
                // Every agent event is done with here, printed or not.
                if let Some(pacer) = &self.pacer {
                    pacer.written();
                }
                if let AgentEvent::MessageEnd {
                    message: m @ AgentMessage::Assistant(_),
                } = *event
                {
                    self.last = Some(m);
                }
            }
            RuntimeEvent::Notice(n) => eprintln!("pith: {}", for_terminal(&n)),
            RuntimeEvent::Extension(notice) => {
                eprintln!(
                    "pith: {}",
                    for_terminal(&crate::text::extension_notice(&notice))
                )
            }
            RuntimeEvent::WriteFailed(n) => {
                self.write_failed = true;
                eprintln!("pith: {}", for_terminal(&n));
            }
            RuntimeEvent::SessionStarted { .. } => {}
        }
    }
}

/// SIGINT and SIGTERM, listened to for the whole run.
///
/// One listener for the run, not one per wait: under a flood of events the loop's `select!`
/// is always ready with an event, and a listener made afresh at each turn and dropped with it
/// lost a signal that arrived in between (a SIGINT in json mode under a flooding reply was
/// never answered). `Signal::recv` is cancel-safe: a signal waits for the next look.
struct Shutdown {
    /// `None` when the signals cannot be listened to: then they keep their default action.
    signals: Option<(Signal, Signal)>,
}

impl Shutdown {
    fn listen() -> Shutdown {
        let signals = match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => Some((term, int)),
            _ => None,
        };
        Shutdown { signals }
    }

    /// Resolves at the next SIGINT or SIGTERM (at once for one that came while nobody
    /// waited).
    async fn recv(&mut self) {
        let Some((term, int)) = &mut self.signals else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
}

/// Model text and tool output bound for stdout: without escape sequences or control
/// characters when stdout is a terminal (`pith_tools::sanitize::for_terminal`), so a reply
/// cannot set the clipboard or the window title; exactly as produced when stdout is a file or
/// a pipe, as pi prints it.
fn for_stdout(text: &str) -> std::borrow::Cow<'_, str> {
    if std::io::stdout().is_terminal() {
        std::borrow::Cow::Owned(for_terminal(text))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Writes to stdout. A reader that went away (`| head`, `| true`) is not an error: the run
/// goes on and is saved in its session, and its output is dropped; any other failure is
/// reported on stderr.
fn out(text: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(text).and_then(|()| stdout.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("pith: standard output: {e}");
    }
}
