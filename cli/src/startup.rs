//! What every mode does before its first prompt: the flags (pi's names), the model and its
//! key, the tools, the session the flags ask for, and the actor runtime on top of them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Result, bail};
use clap::Args;

use pith_actors::runtime::{
    FirstSession, Runtime, RuntimeConfig, RuntimeError, RuntimeHandle, ToolChoice,
};
use pith_actors::settings::Settings;
use pith_llm::faux::{Faux, read_script};
use pith_llm::model::Api;
use pith_llm::provider::Provider;
use pith_store::list::{Resolved, resolve_session_arg};
use pith_store::{SessionEnv, dirs};
use pith_tools::tool::ToolSpec;

/// `--mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The last reply's text.
    Text,
    /// JSON lines: the header, then every event (spec: agent-and-events.md §8).
    Json,
    /// JSONL commands on stdin, responses and events on stdout (spec §9).
    Rpc,
}

/// Flags of a run (pi's names).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Print mode: run the prompt(s), print the reply, exit.
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    /// Output mode: `text` (the last reply, as -p), `json` (the session header, then every
    /// event as one JSON object per line, as pi's `--mode json`), or `rpc` (pi's JSONL
    /// protocol on stdin and stdout).
    #[arg(long, value_enum, value_name = "MODE")]
    pub mode: Option<Mode>,
    /// Pick a session to resume (interactive).
    #[arg(short = 'r', long = "resume")]
    pub resume: bool,
    /// Export a session file to HTML (OUT defaults to pi's name) and exit.
    #[arg(long, num_args = 1..=2, value_names = ["FILE", "OUT"])]
    pub export: Option<Vec<PathBuf>>,
    /// Continue the most recent session of this directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_recent: bool,
    /// Open a session: a path, or a prefix of a session id.
    #[arg(long, value_name = "PATH|ID")]
    pub session: Option<String>,
    /// Copy a session (path or id prefix) into a new session of this directory.
    #[arg(long, value_name = "PATH|ID")]
    pub fork: Option<String>,
    /// Keep everything in memory; write no session file.
    #[arg(long)]
    pub no_session: bool,
    /// Open the session without writing to it (and without its writer lock): the prompt runs
    /// on a copy in memory. For a session another pith is writing.
    #[arg(long)]
    pub read_only: bool,
    /// Directory for session files instead of the per-project default.
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,
    /// Provider of the model (`anthropic`, `openai`, a `models.json` provider, `faux`).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Model as `provider/id[:thinking]`, a bare id, or part of one (`--list-models` shows them).
    #[arg(long, value_name = "PROVIDER/ID[:THINKING]")]
    pub model: Option<String>,
    /// API key for the model's provider, instead of the environment or auth.json.
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// List the models that have a key (and the offline one), optionally filtered, and exit.
    #[arg(long, value_name = "SEARCH", num_args = 0..=1, default_missing_value = "")]
    pub list_models: Option<String>,
    /// The tools the model may use, comma-separated, from read, bash, edit, write, grep, find, ls
    /// (default: read,bash,edit,write).
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// No tools at all.
    #[arg(long, conflicts_with = "tools")]
    pub no_tools: bool,
    /// Start no MCP servers (mcp.json is not read).
    #[arg(long)]
    pub no_mcp: bool,
    /// Trust project-local files for this run (the project's .pith/mcp.json).
    #[arg(short = 'a', long)]
    pub approve: bool,
    /// Ignore project-local files for this run.
    #[arg(long, conflicts_with = "approve")]
    pub no_approve: bool,
    /// Thinking level: off, minimal, low, medium, high, xhigh.
    #[arg(long, value_name = "LEVEL")]
    pub thinking: Option<String>,
    /// Replies for the faux model, in order (a JSON array; see the spec's faux-model.md).
    #[arg(long, value_name = "FILE")]
    pub faux_script: Option<PathBuf>,
    /// Write a Chrome trace (open in Perfetto) of every actor message to FILE.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The prompt(s). Text piped on stdin is put before the first one.
    pub messages: Vec<String>,
}

/// A runtime ready for prompts.
pub struct Started {
    /// The runtime.
    pub rt: RuntimeHandle,
    /// The session header line as it is in memory (pi's JSON mode prints it first).
    pub header_line: String,
    /// The model, its key and thinking level.
    pub choice: crate::model_choice::Choice,
    /// The provider serving `choice` (the runtime holds it too): a mode that switches models
    /// and back reuses it, so the offline model's script goes on where it was.
    pub provider: Arc<dyn Provider>,
    /// The MCP servers, when any are configured: stopped with
    /// [`crate::mcp_cmd::stop`] after the runtime.
    pub mcp: Option<pith_mcp::McpHub>,
}

/// Checks flag combinations every mode shares.
pub fn check_flags(args: &RunArgs) -> Result<()> {
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
    Ok(())
}

/// The model, tools and session the flags ask for, and the runtime running them.
///
/// Errors: unknown models or tools, missing keys, sessions that cannot be opened or are
/// locked by another pith, a stored cwd that no longer exists.
pub async fn start(args: &RunArgs) -> Result<Started> {
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
    let tools = toolset(args)?;
    let first = choose_session(args, &cwd, &env)?;
    let flags = crate::mcp_cmd::RunFlags {
        off: args.no_mcp || args.no_tools,
        approve: args.approve,
        no_approve: args.no_approve,
    };
    let (tools, mcp) = crate::mcp_cmd::start_hub(flags, &env.agent_dir, Path::new(&cwd), tools);
    let config_provider = provider_for(&choice, args.faux_script.as_deref(), &env)?;
    let agent_dir = env.agent_dir.clone();
    let config = RuntimeConfig {
        env: env.clone(),
        cwd: cwd.clone(),
        session_dir: args.session_dir.clone(),
        persist: !args.no_session,
        provider: config_provider.clone(),
        model: pith_events::ModelRef::new(&choice.model.provider, &choice.model.id),
        thinking_level: choice.thinking_level,
        tools,
        system_prompt: Some(Arc::new(move |cwd: &Path, specs: &[ToolSpec]| {
            pith_actors::system_prompt::build(cwd, &agent_dir, specs, &today())
        })),
        // The example extensions (PromptCounter, NoForkWhileRunning) are for tests and the
        // README; a user's sessions get no entries pi would not write.
        extensions: Vec::new(),
    };
    let started = Runtime::start(config, first).await.map_err(locked_hint)?;
    if let Some(file) = &started.opened.session_file {
        for w in &started.opened.warnings {
            eprintln!("pith: {}: {w}", file.display());
        }
    }
    Ok(Started {
        rt: started.handle,
        header_line: started.opened.header_line,
        choice,
        provider: config_provider,
        mcp,
    })
}

/// The provider serving `choice` (faux plays `faux_script`, if any). A real model's
/// `models.json` header values are resolved (pi 1.6.0's rule, see
/// `pith_llm::auth::resolve_config_value`), and the provider retries requests as the
/// `retry.provider.*` settings of the agent directory and the current directory say (none by
/// default, as pi 1.6.0).
///
/// Errors: a `--faux-script` with a real model; a header value that cannot be resolved; a
/// provider that cannot be built.
pub fn provider_for(
    choice: &crate::model_choice::Choice,
    faux_script: Option<&Path>,
    env: &SessionEnv,
) -> Result<Arc<dyn Provider>> {
    Ok(match choice.model.api {
        Api::Faux => {
            let script = match faux_script {
                Some(p) => read_script(p)?,
                None => Vec::new(),
            };
            Arc::new(Faux::new(script, env.clock.clone()))
        }
        _ => {
            if faux_script.is_some() {
                bail!(
                    "--faux-script plays replies of the offline model: use it with --model faux/faux-1"
                );
            }
            let mut model = choice.model.clone();
            pith_llm::auth::resolve_model_headers(&mut model)?;
            let cwd = std::env::current_dir().unwrap_or_default();
            let mut options = pith_llm::providers::ProviderOptions::default();
            options.apply_retry(&Settings::load(&env.agent_dir, &cwd).provider_retry());
            pith_llm::providers::provider_with(model, choice.api_key.clone(), options)?
        }
    })
}

/// `--tools a,b` / `--no-tools` / pi's default set (built per session by the runtime, once
/// the session's settings are known).
pub fn toolset(args: &RunArgs) -> Result<ToolChoice> {
    if args.no_tools {
        return Ok(ToolChoice::none());
    }
    let Some(names) = &args.tools else {
        return Ok(ToolChoice::defaults());
    };
    let mut tools = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        match pith_tools::tool_by_name(name) {
            Some(_) => tools.push(name.to_owned()),
            None => bail!(
                "unknown tool {name}: pith has {}",
                pith_tools::ALL_TOOL_NAMES.join(", ")
            ),
        }
    }
    Ok(ToolChoice::Builtin(tools))
}

/// Today's date for the system prompt, `YYYY-MM-DD` in UTC.
pub fn today() -> String {
    let iso = SessionEnv::system().now_iso();
    iso.get(..10).unwrap_or(&iso).to_owned()
}

/// A locked session gets the way out in its message.
fn locked_hint(e: RuntimeError) -> anyhow::Error {
    match e {
        RuntimeError::Store(pith_store::Error::Locked { .. }) => {
            anyhow::anyhow!("{e}, or add --read-only to work on a copy in memory")
        }
        other => other.into(),
    }
}

/// Splits `--session ID@ENTRY` into the session argument and the entry id; an argument that
/// names an existing file, or has nothing after its last `@`, is taken whole.
pub fn split_entry(arg: &str) -> (&str, Option<&str>) {
    if std::path::Path::new(arg).exists() {
        return (arg, None);
    }
    match arg.rsplit_once('@') {
        Some((session, entry)) if !session.is_empty() && !entry.is_empty() => {
            (session, Some(entry))
        }
        _ => (arg, None),
    }
}

/// The session the flags ask for (spec: lifecycle.md §5.1, §5.3).
/// The session the flags ask for (spec: lifecycle.md §5.1, §5.3): `--session`/`--fork`
/// arguments resolved to files here; the runtime opens it.
///
/// Errors: no session or several sessions match an id prefix; a session of another project.
pub fn choose_session(args: &RunArgs, cwd: &str, env: &SessionEnv) -> Result<FirstSession> {
    if args.no_session {
        return Ok(FirstSession::New);
    }
    let local_dir = match args.session_dir.as_deref() {
        Some(d) => d.to_owned(),
        None => dirs::default_session_dir(&env.agent_dir, cwd)?,
    };
    let root = dirs::sessions_root(&env.agent_dir);
    if let Some(arg) = &args.fork {
        let source = match resolve_session_arg(arg, &local_dir, &root)? {
            Resolved::Path(p) | Resolved::Local(p) | Resolved::Global { path: p, .. } => p,
        };
        return Ok(FirstSession::Fork { source });
    }
    if let Some(arg) = &args.session {
        // `ID@ENTRY` (what `pith session search` prints): the session with its leaf moved to
        // that entry, as pi's `/tree` navigation does, nothing written until the next append.
        let (arg, at) = split_entry(arg);
        return match resolve_session_arg(arg, &local_dir, &root)? {
            Resolved::Path(path) | Resolved::Local(path) => Ok(FirstSession::Open {
                path,
                read_only: args.read_only,
                at: at.map(str::to_owned),
            }),
            Resolved::Global { cwd: other, .. } => bail!(
                "Session found in different project: {other}\nuse --fork {arg} to copy it into this directory"
            ),
        };
    }
    if args.continue_recent {
        return Ok(FirstSession::Continue {
            read_only: args.read_only,
        });
    }
    Ok(FirstSession::New)
}

#[cfg(test)]
mod entry_arg_tests {
    use super::split_entry;

    #[test]
    fn id_at_entry_splits_at_the_last_at() {
        assert_eq!(split_entry("0197abc@e1f2"), ("0197abc", Some("e1f2")));
        assert_eq!(
            split_entry("/x/a@b/s.jsonl@e9"),
            ("/x/a@b/s.jsonl", Some("e9"))
        );
        assert_eq!(split_entry("0197abc"), ("0197abc", None));
        assert_eq!(split_entry("0197abc@"), ("0197abc@", None));
        assert_eq!(split_entry("@e1"), ("@e1", None));
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let odd = tmp.path().join("s@e.jsonl");
        std::fs::write(&odd, "").unwrap_or_else(|e| panic!("{e}"));
        let arg = odd.to_string_lossy().into_owned();
        assert_eq!(
            split_entry(&arg),
            (arg.as_str(), None),
            "an existing file is whole"
        );
    }
}
