//! What every mode does before its first prompt: the flags (pi's names), the model and its
//! key, the tools, the session the flags ask for, and the actor runtime on top of them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Result, bail};
use clap::Args;

use pith_actors::extensions::dialogs::Dialogs;
use pith_actors::runtime::{
    FirstSession, HostedExtensions, Runtime, RuntimeConfig, RuntimeError, RuntimeHandle, ToolChoice,
};
use pith_actors::selection::Selection;
use pith_events::ThinkingLevel;
use pith_llm::provider::Provider;
use pith_store::list::{Resolved, resolve_session_arg};
use pith_store::{SessionEnv, dirs};

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

/// `--tui-mode` (pi's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TuiMode {
    /// The transcript goes into the terminal's scrollback, the editor below it.
    Regular,
    /// The alternate screen: the transcript above, the editor at the bottom, PageUp and
    /// PageDown scroll; the transcript is printed on the normal screen on the way out.
    Fullscreen,
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
    /// Interactive layout: `regular` (the default) or `fullscreen`; the `tuiMode` setting
    /// when not given (pi's flag and setting; pi 1.6.0 defaults to fullscreen).
    #[arg(long, value_enum, value_name = "MODE")]
    pub tui_mode: Option<TuiMode>,
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
    /// Comma-separated allowlist of tool names or patterns (*) to enable, from read, bash, edit,
    /// write, grep, find, ls (default: read,bash,edit,write). Only +name/-name entries add to
    /// or remove from the defaults.
    #[arg(
        short = 't',
        long,
        value_name = "TOOLS",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    pub tools: Option<Vec<String>>,
    /// Comma-separated denylist of tool names or patterns (*) to disable (`-xt`).
    #[arg(long, value_name = "TOOLS", value_delimiter = ',')]
    pub exclude_tools: Option<Vec<String>>,
    /// Disable all tools by default (`-nt`); `--tools +name` adds some back.
    #[arg(long)]
    pub no_tools: bool,
    /// Set the session display name.
    #[arg(short = 'n', long, value_name = "NAME")]
    pub name: Option<String>,
    /// Use the current directory's existing session with this id, creating it otherwise.
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// Start no MCP servers (mcp.json is not read).
    #[arg(long)]
    pub no_mcp: bool,
    /// Thinking level: off, minimal, low, medium, high, xhigh, max.
    #[arg(long, value_name = "LEVEL")]
    pub thinking: Option<String>,
    /// Replies for the faux model, in order (a JSON array; see the spec's faux-model.md).
    #[arg(long, value_name = "FILE")]
    pub faux_script: Option<PathBuf>,
    /// Write a Chrome trace (open in Perfetto) of every actor message to FILE.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Load an extension (a directory with extension.json, a manifest, or a program);
    /// repeatable, loaded after the discovered ones, in this order.
    #[arg(short = 'e', long = "extension", value_name = "PATH")]
    pub extensions: Vec<PathBuf>,
    /// Discover no extensions (`-e` ones still load). `-ne` works too.
    #[arg(long = "no-extensions")]
    pub no_extensions: bool,
    /// Trust this project: its `.pith/` extensions, MCP servers, skills, templates and
    /// system-prompt files are used (the decision is stored).
    #[arg(short = 'a', long, conflicts_with = "no_approve")]
    pub approve: bool,
    /// Do not trust this project for this run: none of its extensions run.
    #[arg(long)]
    pub no_approve: bool,
    /// System-prompt flags, context files, skills and prompt templates.
    #[command(flatten)]
    pub resources: crate::prompt_resources::ResourceArgs,
    /// The prompt(s). Text piped on stdin is put before the first one.
    pub messages: Vec<String>,
}

impl RunArgs {
    /// `PITH_MODE` of this run: `tui`, `print`, `json` or `rpc`.
    pub fn mode_name(&self) -> &'static str {
        match (self.print, self.mode) {
            (_, Some(Mode::Rpc)) => "rpc",
            (_, Some(Mode::Json)) => "json",
            (true, _) | (false, Some(Mode::Text)) => "print",
            (false, None) => "tui",
        }
    }
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
    /// Extension dialogs waiting for the frontend (rpc's `extension_ui_response`).
    pub dialogs: Dialogs,
    /// The prompt templates and skills of this run (the interactive mode lists them).
    pub resources: Arc<pith_actors::resources::Resources>,
    /// SYSTEM.md / APPEND_SYSTEM.md / `--system-prompt FILE` files in use.
    pub prompt_files: Vec<PathBuf>,
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
    let resume = args.resume.then_some("--resume");
    if args.fork.is_some() && !(combined.is_empty() && resume.is_none()) {
        let all: Vec<&str> = combined.iter().copied().chain(resume).collect();
        bail!("--fork cannot be combined with {}", all.join(", "));
    }
    if let Some(id) = &args.session_id {
        let with: Vec<&str> = [
            args.session.as_ref().map(|_| "--session"),
            args.continue_recent.then_some("--continue"),
            resume,
        ]
        .into_iter()
        .flatten()
        .collect();
        if !with.is_empty() {
            bail!("--session-id cannot be combined with {}", with.join(", "));
        }
        if !pith_store::dirs::valid_session_id(id) {
            bail!(
                "Invalid session id '{id}': use letters, digits, '.', '_' and '-', starting and ending with a letter or digit"
            );
        }
    }
    if args.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
        bail!("--name requires a non-empty value");
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
    let models = Arc::new(crate::model_source::RegistryModels::new(
        env.clone(),
        &choice,
        config_provider.clone(),
        args.api_key.clone(),
        args.faux_script.clone(),
    ));
    let hosted = hosted_extensions(args, &env.agent_dir, Path::new(&cwd))?;
    let dialogs = hosted.dialogs.clone();
    // Project trust (pi 1.6.0 `resolveProjectTrusted`), decided after the extensions' question
    // so an answer given there counts: project-local templates, skills, SYSTEM.md and
    // APPEND_SYSTEM.md are read only in a trusted project.
    let project_trusted = crate::ext_trust::project_trusted(&crate::ext_trust::Ask {
        agent_dir: &env.agent_dir,
        cwd: Path::new(&cwd),
        approve: approve_flag(args),
        interactive: args.mode_name() == "tui",
    });
    let loaded = crate::prompt_resources::load(
        &args.resources,
        Path::new(&cwd),
        &env.agent_dir,
        project_trusted,
    );
    let config = RuntimeConfig {
        env: env.clone(),
        cwd: cwd.clone(),
        session_dir: args.session_dir.clone(),
        persist: !args.no_session,
        provider: config_provider.clone(),
        model: pith_events::ModelRef::new(&choice.model.provider, &choice.model.id),
        thinking_level: choice.thinking_level,
        selection: selection(args, &choice, models.clone()),
        session_name: args.name.as_ref().map(|n| n.trim().to_owned()),
        tools,
        system_prompt: Some(loaded.system_prompt),
        // The example extensions (PromptCounter, NoForkWhileRunning) are for tests and the
        // README; a user's sessions get no entries pi would not write.
        extensions: Vec::new(),
        hosted,
        resources: loaded.resources.clone(),
    };
    let started = Runtime::start(config, first).await.map_err(locked_hint)?;
    if let Some(file) = &started.opened.session_file {
        for w in &started.opened.warnings {
            eprintln!("pith: {}: {w}", file.display());
        }
    }
    // A resumed session runs its own model and level: the frontends show those.
    let (choice, provider) =
        running_choice(&started.handle, &models, choice, config_provider).await?;
    Ok(Started {
        rt: started.handle,
        header_line: started.opened.header_line,
        choice,
        provider,
        dialogs,
        resources: loaded.resources,
        prompt_files: loaded.prompt_files,
        mcp,
    })
}

/// The extension processes of this run: the trust decision first, then discovery (spec:
/// extensions.md §1.2).
///
/// Errors: a `-e` path that cannot be loaded.
pub fn hosted_extensions(args: &RunArgs, agent_dir: &Path, cwd: &Path) -> Result<HostedExtensions> {
    let mode = args.mode_name();
    let project = if args.no_extensions {
        crate::ext_trust::Allowed::default()
    } else {
        crate::ext_trust::decide(&crate::ext_trust::Ask {
            agent_dir,
            cwd,
            approve: approve_flag(args),
            interactive: mode == "tui",
        })
    };
    let specs = crate::ext_discovery::discover(&crate::ext_discovery::Sources {
        agent_dir,
        cwd,
        cli: &args.extensions,
        no_discovery: args.no_extensions,
        project: &project,
    })?;
    // `/reload` discovers again (extensions.md §1.2 "Hot reload"): the same sources and
    // flags, in the session's cwd; a project extension new or changed since startup runs only
    // when trusted already (or `--approve`), since a reload asks nobody.
    let rediscover: pith_actors::extension_host::Rediscover = {
        let agent_dir = agent_dir.to_path_buf();
        let cli = args.extensions.clone();
        let no_extensions = args.no_extensions;
        let approve = approve_flag(args);
        Arc::new(move |cwd: &Path| {
            let project = if no_extensions {
                crate::ext_trust::Allowed::default()
            } else {
                crate::ext_trust::decide(&crate::ext_trust::Ask {
                    agent_dir: &agent_dir,
                    cwd,
                    approve,
                    interactive: false,
                })
            };
            crate::ext_discovery::discover(&crate::ext_discovery::Sources {
                agent_dir: &agent_dir,
                cwd,
                cli: &cli,
                no_discovery: no_extensions,
                project: &project,
            })
            .map_err(|e| format!("{e:#}"))
        })
    };
    Ok(HostedExtensions {
        specs,
        rediscover: Some(rediscover),
        mode: mode.to_owned(),
        has_ui: matches!(mode, "rpc" | "tui"),
        dialogs: Dialogs::default(),
        transcript: None,
        guard: pith_tools::ChildGuard::this_executable(),
    })
}

/// How sessions choose their model (spec: lifecycle.md §6): `--model`/`--provider` (and
/// `--faux-script`, which plays the offline model) pin the model for every session;
/// `--thinking` or a `:level` suffix pins the first session's level.
fn selection(
    args: &RunArgs,
    choice: &crate::model_choice::Choice,
    models: Arc<crate::model_source::RegistryModels>,
) -> Selection {
    let model_flag = args.model.as_deref().filter(|m| !m.trim().is_empty());
    let suffixed = model_flag.is_some_and(|m| {
        m.rsplit_once(':')
            .is_some_and(|(_, l)| l.parse::<ThinkingLevel>().is_ok())
    });
    Selection {
        models: Some(models),
        pinned_model: model_flag.is_some() || args.provider.is_some() || args.faux_script.is_some(),
        pinned_thinking: (args.thinking.is_some() || suffixed).then_some(choice.thinking_level),
    }
}

/// `choice` brought up to the model and level the runtime's session runs (a resumed session's
/// own), with the provider serving it.
///
/// Errors: the runtime is gone.
pub async fn running_choice(
    rt: &RuntimeHandle,
    models: &crate::model_source::RegistryModels,
    mut choice: crate::model_choice::Choice,
    provider: Arc<dyn Provider>,
) -> Result<(crate::model_choice::Choice, Arc<dyn Provider>)> {
    let current = rt.current_session().await?;
    choice.thinking_level = current.thinking_level;
    if current.model.provider == choice.model.provider && current.model.id == choice.model.id {
        return Ok((choice, provider));
    }
    use pith_actors::selection::ModelSource;
    match (
        models.lookup(&current.model),
        models.provider(&current.model),
    ) {
        (Some((model, api_key)), Some(provider)) => {
            choice.model = model;
            choice.api_key = api_key;
            Ok((choice, provider))
        }
        _ => Ok((choice, provider)),
    }
}

pub use crate::model_source::provider_for;

/// `--tools` / `--exclude-tools` / `--no-tools` / pi's default set (built per session by the
/// runtime, once the session's settings are known), as pi 1.6.0's `createAgentSession` picks
/// them: an allowlist of names and `*` patterns replaces the defaults; a list of only
/// `+name`/`-name` entries changes the defaults (an empty set with `--no-tools`); the denylist
/// applies last.
///
/// Errors: names and modifiers mixed, a modifier with a pattern (pi's messages), a tool pith
/// does not have.
pub fn toolset(args: &RunArgs) -> Result<ToolChoice> {
    let entries: Vec<String> = args
        .tools
        .iter()
        .flatten()
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .collect();
    if let Some(problem) = tool_list_error(&entries) {
        bail!("--tools: {problem}");
    }
    let defaults: Vec<String> = if args.no_tools {
        Vec::new()
    } else {
        pith_tools::BUILTIN_TOOL_NAMES
            .iter()
            .map(|n| (*n).to_owned())
            .collect()
    };
    let modifiers = entries.iter().any(|e| is_modifier(e));
    let selected: Vec<String> = if modifiers {
        let mut tools = defaults;
        for entry in &entries {
            let name = &entry[1..];
            let at = tools.iter().position(|t| t == name);
            match (entry.starts_with('+'), at) {
                (true, None) if !name.is_empty() => tools.push(name.to_owned()),
                (false, Some(i)) => {
                    tools.remove(i);
                }
                _ => {}
            }
        }
        tools
    } else if args.tools.is_some() {
        let mut tools: Vec<String> = Vec::new();
        for entry in &entries {
            let matched: Vec<&str> = if entry.contains('*') {
                pith_tools::ALL_TOOL_NAMES
                    .iter()
                    .copied()
                    .filter(|n| tool_pattern_matches(entry, n))
                    .collect()
            } else {
                vec![entry.as_str()]
            };
            for name in matched {
                if !tools.iter().any(|t| t == name) {
                    tools.push(name.to_owned());
                }
            }
        }
        tools
    } else {
        defaults
    };
    for name in &selected {
        if pith_tools::tool_by_name(name).is_none() {
            bail!(
                "unknown tool {name}: pith has {}",
                pith_tools::ALL_TOOL_NAMES.join(", ")
            );
        }
    }
    let excluded: Vec<&str> = args
        .exclude_tools
        .iter()
        .flatten()
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
        .collect();
    let tools = selected
        .into_iter()
        .filter(|name| !excluded.iter().any(|p| tool_pattern_matches(p, name)))
        .collect();
    Ok(ToolChoice::Builtin(tools))
}

/// A `+name` or `-name` entry of `--tools` (pi's `isToolModifier`).
fn is_modifier(entry: &str) -> bool {
    entry.starts_with('+') || entry.starts_with('-')
}

/// pi's `getToolListError`: a list is names and patterns, or only exact `+name`/`-name`.
fn tool_list_error(entries: &[String]) -> Option<String> {
    let modifiers: Vec<&String> = entries.iter().filter(|e| is_modifier(e)).collect();
    if modifiers.is_empty() {
        return None;
    }
    if modifiers.len() < entries.len() {
        return Some("tool names cannot be mixed with +name or -name entries".into());
    }
    modifiers
        .iter()
        .find(|e| e.contains('*'))
        .map(|p| format!("+name and -name entries take exact tool names, not patterns: {p}"))
}

/// Whether `name` is `pattern`, where `*` in the pattern matches any characters (pi's
/// `createToolNameMatcher`).
pub fn tool_pattern_matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == name;
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
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
        return Ok(match &args.session_id {
            Some(id) => FirstSession::NewWithId(id.clone()),
            None => FirstSession::New,
        });
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
        if let Some(id) = &args.session_id
            && session_with_id(&local_dir, cwd, id, args.session_dir.is_some()).is_some()
        {
            bail!("Session already exists with id '{id}'");
        }
        return Ok(FirstSession::Fork {
            source,
            id: args.session_id.clone(),
        });
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
    if let Some(id) = &args.session_id {
        // pi's `findById`: this project's session with exactly that id, else a new one.
        return Ok(
            match session_with_id(&local_dir, cwd, id, args.session_dir.is_some()) {
                Some(path) => FirstSession::Open {
                    path,
                    read_only: args.read_only,
                    at: None,
                },
                None => {
                    eprintln!(
                        "No project session found with id '{id}'; creating a new session with that id."
                    );
                    FirstSession::NewWithId(id.clone())
                }
            },
        );
    }
    Ok(FirstSession::New)
}

/// pi's `findById`: the session file in `dir` whose header has exactly `id` (in a custom
/// `--session-dir`, only one of `cwd`).
fn session_with_id(dir: &Path, cwd: &str, id: &str, custom_dir: bool) -> Option<PathBuf> {
    pith_store::list::list(dir)
        .sessions
        .into_iter()
        .find(|s| s.id == id && (!custom_dir || Path::new(&s.cwd) == Path::new(cwd)))
        .map(|s| s.path)
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

#[cfg(test)]
mod tool_flag_tests {
    use clap::Parser;

    use super::{RunArgs, tool_pattern_matches, toolset};
    use pith_actors::runtime::ToolChoice;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn tools(args: &[&str]) -> Result<Vec<String>, String> {
        let cli = Cli::try_parse_from(std::iter::once("pith").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        match toolset(&cli.run).map_err(|e| e.to_string())? {
            ToolChoice::Builtin(names) => Ok(names),
            ToolChoice::Fixed(_) => Err("fixed".into()),
            ToolChoice::WithSource(..) => Err("with a source".into()),
        }
    }

    #[test]
    fn tools_take_pis_lists_modifiers_patterns_and_exclusions() {
        assert_eq!(tools(&[]).unwrap(), ["read", "bash", "edit", "write"]);
        assert_eq!(
            tools(&["--tools", "+grep,-bash"]).unwrap(),
            ["read", "edit", "write", "grep"]
        );
        assert_eq!(tools(&["-t", "ls,*ea*"]).unwrap(), ["ls", "read"]);
        assert_eq!(
            tools(&["--no-tools", "--tools", "+find"]).unwrap(),
            ["find"]
        );
        assert_eq!(tools(&["--no-tools"]).unwrap(), Vec::<String>::new());
        assert_eq!(
            tools(&["--exclude-tools", "b*,write"]).unwrap(),
            ["read", "edit"]
        );
        assert!(
            tools(&["--tools", "read,+grep"])
                .unwrap_err()
                .contains("tool names cannot be mixed with +name or -name entries")
        );
        assert!(
            tools(&["--tools", "+g*"])
                .unwrap_err()
                .contains("+name and -name entries take exact tool names, not patterns: +g*")
        );
        assert!(
            tools(&["--tools", "nope"])
                .unwrap_err()
                .contains("unknown tool nope")
        );
    }

    #[test]
    fn patterns_match_as_pis_tool_matcher() {
        assert!(tool_pattern_matches("mcp__radius__*", "mcp__radius__scan"));
        assert!(!tool_pattern_matches("mcp__radius__*", "mcp__other__scan"));
        assert!(tool_pattern_matches("*", ""));
        assert!(tool_pattern_matches("a*a", "aa"));
        assert!(!tool_pattern_matches("a*a", "a"));
        assert!(tool_pattern_matches("read", "read"));
        assert!(!tool_pattern_matches("rea", "read"));
    }

    #[test]
    fn pis_two_letter_short_flags_are_spelled_long() {
        let args = crate::pi_short_flags(
            ["pith", "-xt", "bash", "-nt", "--", "-xt"]
                .into_iter()
                .map(std::ffi::OsString::from),
        );
        assert_eq!(
            args,
            ["pith", "--exclude-tools", "bash", "--no-tools", "--", "-xt"]
        );
    }
}

/// `--approve` (`Some(true)`), `--no-approve` (`Some(false)`) or neither.
fn approve_flag(args: &RunArgs) -> Option<bool> {
    match (args.approve, args.no_approve) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    }
}
