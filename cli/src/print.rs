//! Print mode: `pith -p "prompt"` runs the prompt on the actor runtime and prints the reply
//! (spec: agent-and-events.md §8 for the prompt rules, lifecycle.md §5 for session flags).

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;

use pith_actors::faux::{Faux, read_script};
use pith_actors::model::Api;
use pith_actors::runtime::{Runtime, RuntimeConfig, RuntimeEvent};
use pith_actors::tool::{ToolSpec, Toolset};
use pith_events::{AgentEvent, AgentMessage, ContentBlock, StopReason};
use pith_store::list::{Resolved, resolve_session_arg};
use pith_store::{OpenMode, Session, SessionEnv, dirs};

/// `--mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The last reply's text.
    Text,
    /// JSON lines: the header, then every event (spec: agent-and-events.md §8).
    Json,
}

/// Flags of a run (pi's names).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Print mode: run the prompt(s), print the reply, exit.
    #[arg(short = 'p', long = "print")]
    print: bool,
    /// Output mode: `text` (the last reply, as -p), or `json` (the session header, then
    /// every event as one JSON object per line, as pi's `--mode json`).
    #[arg(long, value_enum, value_name = "MODE")]
    mode: Option<Mode>,
    /// Continue the most recent session of this directory.
    #[arg(short = 'c', long = "continue")]
    continue_recent: bool,
    /// Open a session: a path, or a prefix of a session id.
    #[arg(long, value_name = "PATH|ID")]
    session: Option<String>,
    /// Copy a session (path or id prefix) into a new session of this directory.
    #[arg(long, value_name = "PATH|ID")]
    fork: Option<String>,
    /// Keep everything in memory; write no session file.
    #[arg(long)]
    no_session: bool,
    /// Open the session without writing to it (and without its writer lock): the prompt runs
    /// on a copy in memory. For a session another pith is writing.
    #[arg(long)]
    read_only: bool,
    /// Directory for session files instead of the per-project default.
    #[arg(long, value_name = "DIR")]
    session_dir: Option<PathBuf>,
    /// Provider of the model (`anthropic`, `openai`, a `models.json` provider, `faux`).
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// Model as provider/id[:thinking], a bare id, or part of one (`--list-models` shows them).
    #[arg(long, value_name = "PROVIDER/ID[:THINKING]")]
    model: Option<String>,
    /// API key for the model's provider, instead of the environment or auth.json.
    #[arg(long, value_name = "KEY")]
    api_key: Option<String>,
    /// List the models that have a key (and the offline one), optionally filtered, and exit.
    #[arg(long, value_name = "SEARCH", num_args = 0..=1, default_missing_value = "")]
    list_models: Option<String>,
    /// The tools the model may use, comma-separated (default: read,bash,edit,write).
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    tools: Option<Vec<String>>,
    /// No tools at all.
    #[arg(long, conflicts_with = "tools")]
    no_tools: bool,
    /// Thinking level: off, minimal, low, medium, high, xhigh.
    #[arg(long, value_name = "LEVEL")]
    thinking: Option<String>,
    /// Replies for the faux model, in order (a JSON array; see the spec's faux-model.md).
    #[arg(long, value_name = "FILE")]
    faux_script: Option<PathBuf>,
    /// Write a Chrome trace (open in Perfetto) of every actor message to FILE.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// The prompt(s). Text piped on stdin is put before the first one.
    messages: Vec<String>,
}

/// Runs print mode; exit status 1 when the last reply is an error or was aborted.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    if let Some(search) = &args.list_models {
        let env = SessionEnv::system();
        crate::model_choice::list_models(&env.agent_dir, Some(search.as_str()))?;
        return Ok(ExitCode::SUCCESS);
    }
    if !args.print && args.mode.is_none() {
        bail!(
            "interactive mode is not built yet: run `pith -p \"your prompt\"`, or see `pith --help`"
        );
    }
    let combined: Vec<&str> = [
        args.session.as_ref().map(|_| "--session"),
        args.continue_recent.then_some("--continue"),
        args.no_session.then_some("--no-session"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if args.fork.is_some() && !combined.is_empty() {
        bail!("--fork cannot be combined with {}", combined.join(", "));
    }
    let mut prompts = args.messages.clone();
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let mut piped = String::new();
        stdin
            .lock()
            .read_to_string(&mut piped)
            .context("reading the prompt from stdin")?;
        if !piped.is_empty() {
            match prompts.first_mut() {
                Some(first) => *first = format!("{piped}{first}"),
                None => prompts.push(piped),
            }
        }
    }
    if prompts.is_empty() {
        bail!("no prompt: give one as an argument (pith -p \"…\") or on stdin");
    }
    let _trace_guard = args.trace.as_deref().map(install_trace).transpose()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run_prompts(args, prompts))
}

fn install_trace(path: &Path) -> Result<tracing_chrome::FlushGuard> {
    use std::os::unix::fs::OpenOptionsExt;
    use tracing_subscriber::prelude::*;
    // Created here (not by the trace layer, which panics on errors), private like sessions.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write the trace file {}", path.display()))?;
    let (layer, guard) = tracing_chrome::ChromeLayerBuilder::new()
        .writer(file)
        .include_args(true)
        .trace_style(tracing_chrome::TraceStyle::Async)
        .build();
    tracing_subscriber::registry()
        .with(layer)
        .try_init()
        .context("installing the trace writer")?;
    Ok(guard)
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

/// `--tools a,b` / `--no-tools` / pi's default set.
fn toolset(args: &RunArgs) -> Result<Toolset> {
    if args.no_tools {
        return Ok(Toolset::none());
    }
    let Some(names) = &args.tools else {
        return Ok(Toolset::new(pith_actors::tools::builtin_tools()));
    };
    let mut tools = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        match pith_actors::tools::tool_by_name(name) {
            Some(t) => tools.push(t),
            None => bail!(
                "unknown tool {name}: pith has {}",
                pith_actors::tools::builtin_tools()
                    .iter()
                    .map(|t| t.spec().name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
    Ok(Toolset::new(tools))
}

/// Today's date for the system prompt, `YYYY-MM-DD` in UTC.
fn today() -> String {
    let iso = SessionEnv::system().now_iso();
    iso.get(..10).unwrap_or(&iso).to_owned()
}

fn open_mode(args: &RunArgs) -> OpenMode {
    if args.read_only {
        OpenMode::ReadOnly
    } else {
        OpenMode::Write
    }
}

/// A locked session gets the way out in its message.
fn locked_hint(e: pith_store::Error) -> anyhow::Error {
    match e {
        pith_store::Error::Locked { .. } => {
            anyhow::anyhow!("{e}, or add --read-only to work on a copy in memory")
        }
        other => other.into(),
    }
}

/// The session the flags ask for (spec: lifecycle.md §5.1, §5.3).
fn choose_session(args: &RunArgs, cwd: &str, env: &SessionEnv) -> Result<Session> {
    let dir = args.session_dir.as_deref();
    let local_dir = match dir {
        Some(d) => d.to_owned(),
        None => dirs::default_session_dir(&env.agent_dir, cwd)?,
    };
    let root = dirs::sessions_root(&env.agent_dir);
    if args.no_session {
        return Ok(Session::in_memory(cwd, env));
    }
    if let Some(arg) = &args.fork {
        let source = match resolve_session_arg(arg, &local_dir, &root)? {
            Resolved::Path(p) | Resolved::Local(p) | Resolved::Global { path: p, .. } => p,
        };
        return Ok(Session::fork_from(&source, cwd, dir, env)?);
    }
    if let Some(arg) = &args.session {
        return match resolve_session_arg(arg, &local_dir, &root)? {
            Resolved::Path(p) | Resolved::Local(p) => {
                Ok(Session::open(&p, dir, None, open_mode(args), env).map_err(locked_hint)?)
            }
            Resolved::Global { cwd: other, .. } => bail!(
                "Session found in different project: {other}\nuse --fork {arg} to copy it into this directory"
            ),
        };
    }
    if args.continue_recent {
        if args.read_only {
            return match pith_store::session::most_recent_session(&local_dir) {
                Some(p) => Ok(Session::open(&p, dir, Some(cwd), OpenMode::ReadOnly, env)?),
                None => Ok(Session::in_memory(cwd, env)),
            };
        }
        return Session::continue_recent(cwd, dir, env).map_err(locked_hint);
    }
    Ok(Session::create(cwd, dir, env)?)
}

async fn run_prompts(args: RunArgs, prompts: Vec<String>) -> Result<ExitCode> {
    let env = SessionEnv::system();
    let cwd = std::env::current_dir()?.to_string_lossy().into_owned();
    let choice = crate::model_choice::choose(
        &crate::model_choice::Request {
            provider: args.provider.as_deref(),
            model: args.model.as_deref(),
            thinking: args.thinking.as_deref(),
            api_key: args.api_key.as_deref(),
            faux_script: args.faux_script.is_some(),
        },
        &env.agent_dir,
        Path::new(&cwd),
    )?;
    let tools = toolset(&args)?;
    let session = choose_session(&args, &cwd, &env)?;
    if let Some(file) = session.session_file() {
        for w in session.warnings() {
            eprintln!("pith: {}: {w}", file.display());
        }
        if !Path::new(session.cwd()).is_dir() {
            bail!(
                "Stored session working directory does not exist: {}\nSession: {}\nCurrent directory: {cwd}",
                session.cwd(),
                file.display()
            );
        }
    }
    let script = match &args.faux_script {
        Some(p) => read_script(p)?,
        None => Vec::new(),
    };
    let provider: Arc<dyn pith_actors::provider::Provider> = match choice.model.api {
        Api::Faux => Arc::new(Faux::new(script, env.clock.clone())),
        _ => {
            if args.faux_script.is_some() {
                bail!(
                    "--faux-script plays replies of the offline model: use it with --model faux/faux-1"
                );
            }
            pith_actors::providers::provider_for(choice.model.clone(), choice.api_key.clone())?
        }
    };
    let agent_dir = env.agent_dir.clone();
    let config = RuntimeConfig {
        env: env.clone(),
        cwd: cwd.clone(),
        session_dir: args.session_dir.clone(),
        persist: !args.no_session,
        provider,
        model: (choice.model.provider.clone(), choice.model.id.clone()),
        thinking_level: choice.thinking_level.clone(),
        tools,
        system_prompt: Some(Arc::new(move |cwd: &Path, specs: &[ToolSpec]| {
            pith_actors::system_prompt::build(cwd, &agent_dir, specs, &today())
        })),
        // The example extensions (PromptCounter, NoForkWhileRunning) are for tests and the
        // README; a user's sessions get no entries pi would not write.
        extensions: Vec::new(),
    };
    let json = args.mode == Some(Mode::Json);
    if json {
        // pi prints the in-memory header first, even before the file exists.
        println!("{}", session.header().raw());
    }
    let rt = Runtime::start(config, session).await?;
    let mut events = rt.subscribe().await?;
    let commands = rt.commands().await?;
    let mut seen = Seen {
        json,
        ..Seen::default()
    };
    let mut compaction_failed = false;
    let mut interrupted = false;
    let mut bash_failed = false;
    for prompt in prompts {
        // `/name args` runs an extension command instead of prompting (agent-and-events §3.1).
        if let Some(rest) = prompt.strip_prefix('/') {
            let (name, args) = rest.split_once(' ').unwrap_or((rest, ""));
            if commands.iter().any(|c| c.name == name) {
                if let Some(out) = rt.command(name, args).await? {
                    println!("{out}");
                }
                continue;
            }
            // pi's `/compact [focus]`, which its print mode would send to the model as text.
            if name == "compact" {
                let focus = Some(args.trim()).filter(|f| !f.is_empty());
                let outcome = tokio::select! {
                    outcome = rt.compact_now(focus) => outcome,
                    _ = shutdown_signal() => {
                        // The summary cannot be aborted yet; the prompts after it are.
                        interrupted = true;
                        break;
                    }
                };
                match outcome {
                    Ok(_) => eprintln!("pith: compacted"),
                    Err(e) => {
                        compaction_failed = true;
                        eprintln!("pith: Compaction failed: {e}");
                    }
                }
                continue;
            }
        }
        // pi's `!cmd` / `!!cmd` (its interactive mode's; print mode would send the text).
        if let Some((command, exclude)) = user_command(&prompt) {
            let outcome = tokio::select! {
                outcome = rt.bash(command, exclude) => outcome,
                _ = shutdown_signal() => {
                    rt.abort_bash();
                    interrupted = true;
                    break;
                }
            };
            match outcome {
                // JSON mode's stdout holds only pi's events; pi emits none for `!cmd`.
                Ok(run) if json => bash_failed |= run.cancelled || run.exit_code != Some(0),
                Ok(run) => {
                    print!("{}", run.output);
                    if !run.output.is_empty() && !run.output.ends_with('\n') {
                        println!();
                    }
                    if let Some(path) = &run.full_output_path {
                        eprintln!("pith: output truncated; the full output is in {path}");
                    }
                    bash_failed |= run.cancelled || run.exit_code != Some(0);
                }
                Err(e) => {
                    bash_failed = true;
                    eprintln!("pith: {e}");
                }
            }
            continue;
        }
        rt.prompt(&prompt).await?;
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
                _ = shutdown_signal() => {
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
    while let Ok(event) = events.try_recv() {
        if let RuntimeEvent::WriteFailed(n) = event {
            seen.write_failed = true;
            eprintln!("pith: {n}");
        }
    }
    let write_failed = seen.write_failed;
    // Like pi's print mode: every prompt runs; the exit status is the last reply's.
    let failed = match seen.last {
        // JSON mode has shown everything already; like pi's, its status ignores the reply.
        Some(_) if json => false,
        Some(AgentMessage::Assistant(a)) => {
            if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                let fallback = if a.stop_reason == StopReason::Aborted {
                    "Request aborted"
                } else {
                    "Request failed"
                };
                eprintln!("pith: {}", a.error_message.as_deref().unwrap_or(fallback));
                true
            } else {
                for block in &a.content {
                    if let ContentBlock::Text(t) = block {
                        println!("{}", t.text);
                    }
                }
                false
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
}

impl Seen {
    fn take(&mut self, event: RuntimeEvent) {
        match event {
            RuntimeEvent::Agent(event) => {
                if self.json {
                    match serde_json::to_string(&event) {
                        Ok(line) => println!("{line}"),
                        Err(e) => eprintln!("pith: an event could not be written: {e}"),
                    }
                }
                if let AgentEvent::MessageEnd {
                    message: m @ AgentMessage::Assistant(_),
                } = *event
                {
                    self.last = Some(m);
                }
            }
            RuntimeEvent::Notice(n) => eprintln!("pith: {n}"),
            RuntimeEvent::WriteFailed(n) => {
                self.write_failed = true;
                eprintln!("pith: {n}");
            }
            RuntimeEvent::SessionStarted { .. } => {}
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
