//! MCP from the command line (spec: extensions.md §1.3): `pith mcp add|remove|list` (pi
//! 1.6.0's `pi mcp`), and the hub a session run starts.
//!
//! Project trust: pith has no trust store yet, so a project's `.pith/mcp.json` is read only
//! when `--approve` (`-a`) is given, or when the user's `settings.json` has
//! `"defaultProjectTrust": "always"` and `--no-approve` is not given (pi's flag and setting;
//! pi also asks interactively and remembers the answer, which pith does not do yet).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};

use pith_actors::runtime::ToolChoice;
use pith_mcp::{McpConfig, McpHub, ServerState, ServerStatus, config};

/// `pith mcp …`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Add or replace a server in mcp.json: `pith mcp add NAME -- COMMAND [ARGS…]` or
    /// `pith mcp add NAME --url URL`.
    Add(AddArgs),
    /// Remove a server from mcp.json.
    Remove {
        /// The server.
        name: String,
        /// Use the project's .pith/mcp.json instead of the user's file.
        #[arg(short = 'l', long)]
        local: bool,
    },
    /// Connect to every configured server and show its state, tools and errors (exits 1 when
    /// a server fails or an entry is invalid).
    List {
        /// Print the list as JSON.
        #[arg(long)]
        json: bool,
        /// Read the project's .pith/mcp.json too (trust it for this run).
        #[arg(short = 'a', long)]
        approve: bool,
    },
}

/// `pith mcp add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// The server's name (letters, digits, `_` and `-`).
    name: String,
    /// Use the project's .pith/mcp.json instead of the user's file.
    #[arg(short = 'l', long)]
    local: bool,
    /// Streamable HTTP server URL (instead of a command).
    #[arg(long)]
    url: Option<String>,
    /// Environment variable for a stdio server (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// Working directory for a stdio server.
    #[arg(long)]
    cwd: Option<String>,
    /// HTTP header (repeatable).
    #[arg(long = "header", value_name = "KEY=VALUE")]
    header: Vec<String>,
    /// codemode, deferred, direct or hidden (pith offers all but hidden directly).
    #[arg(long)]
    exposure: Option<String>,
    /// What the server offers.
    #[arg(long)]
    description: Option<String>,
    /// Time limit of one call, in seconds (default 60).
    #[arg(long)]
    timeout: Option<f64>,
    /// The command and its arguments, after `--`.
    #[arg(last = true)]
    command: Vec<String>,
}

/// Runs a `pith mcp` command.
pub fn run(cmd: McpCommand) -> Result<ExitCode> {
    let env = pith_store::SessionEnv::system();
    let cwd = std::env::current_dir()?;
    match cmd {
        McpCommand::Add(args) => add(args, &env.agent_dir, &cwd),
        McpCommand::Remove { name, local } => {
            let path = file_for(local, &env.agent_dir, &cwd);
            let scope = scope(local);
            if config::remove_server(&path, &name)? {
                println!(
                    r#"Removed {scope} MCP server "{name}" from {}."#,
                    path.display()
                );
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!(
                    r#"No {scope} MCP server named "{name}" in {}."#,
                    path.display()
                );
                Ok(ExitCode::FAILURE)
            }
        }
        McpCommand::List { json, approve } => {
            let trusted = project_trusted(approve, false, &env.agent_dir, &cwd);
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            runtime.block_on(list(&env.agent_dir, &cwd, trusted, json))
        }
    }
}

fn scope(local: bool) -> &'static str {
    if local { "project" } else { "global" }
}

fn file_for(local: bool, agent_dir: &Path, cwd: &Path) -> PathBuf {
    if local {
        config::project_file(cwd)
    } else {
        config::user_file(agent_dir)
    }
}

fn pairs(kind: &str, items: &[String]) -> Result<Map<String, Value>> {
    items
        .iter()
        .map(|item| match item.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), Value::String(v.to_owned()))),
            _ => bail!("--{kind} takes KEY=VALUE, got {item:?}"),
        })
        .collect()
}

fn add(args: AddArgs, agent_dir: &Path, cwd: &Path) -> Result<ExitCode> {
    let mut entry = Map::new();
    match (&args.url, args.command.split_first()) {
        (Some(url), None) => {
            entry.insert("url".into(), json!(url));
            let headers = pairs("header", &args.header)?;
            if !headers.is_empty() {
                entry.insert("headers".into(), Value::Object(headers));
            }
        }
        (None, Some((command, rest))) => {
            entry.insert("command".into(), json!(command));
            if !rest.is_empty() {
                entry.insert("args".into(), json!(rest));
            }
            let env = pairs("env", &args.env)?;
            if !env.is_empty() {
                entry.insert("env".into(), Value::Object(env));
            }
            if let Some(dir) = &args.cwd {
                entry.insert("cwd".into(), json!(dir));
            }
        }
        _ => bail!("Usage: pith mcp add <server> [options] (--url <url> | -- <command> [args...])"),
    }
    if let Some(exposure) = &args.exposure {
        entry.insert("exposure".into(), json!(exposure));
    }
    if let Some(description) = &args.description {
        entry.insert("description".into(), json!(description));
    }
    if let Some(timeout) = args.timeout {
        entry.insert("timeout".into(), json!(timeout));
    }
    let path = file_for(args.local, agent_dir, cwd);
    // The entry is checked as loading will check it.
    let probe = tempfile_config(&args.name, &entry)?;
    if let Some(problem) = probe.problems.first() {
        bail!("{}", problem.message);
    }
    let replaced = config::add_server(&path, &args.name, Value::Object(entry))?;
    println!(
        r#"{} {} MCP server "{}" in {}."#,
        if replaced { "Replaced" } else { "Added" },
        scope(args.local),
        args.name,
        path.display()
    );
    if args.local && !project_trusted(false, false, agent_dir, cwd) {
        println!(
            "The project is not trusted, so {} is read only with --approve (or \"defaultProjectTrust\": \"always\").",
            path.display()
        );
    }
    println!("Check it with: pith mcp list");
    Ok(ExitCode::SUCCESS)
}

/// Validates one entry by loading it from a scratch file.
fn tempfile_config(name: &str, entry: &Map<String, Value>) -> Result<McpConfig> {
    let dir = std::env::temp_dir().join(format!("pith-mcp-add-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("mcp.json");
    std::fs::write(
        &file,
        serde_json::to_string(&json!({ "mcpServers": { name: entry } }))?,
    )?;
    let loaded = config::load(&dir, &dir, false);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(loaded)
}

async fn list(agent_dir: &Path, cwd: &Path, trusted: bool, json: bool) -> Result<ExitCode> {
    let loaded = config::load(agent_dir, cwd, trusted);
    let hub = McpHub::start(&loaded, cwd.to_path_buf());
    hub.wait_settled(pith_mcp::server::CONNECT_TIMEOUT + Duration::from_secs(1))
        .await;
    let statuses = hub.statuses();
    hub.shutdown().await;
    let failed = !loaded.problems.is_empty()
        || statuses
            .iter()
            .any(|s| !matches!(s.state, ServerState::Connected | ServerState::Disabled));
    let project = config::project_file(cwd);
    let untrusted_note = (!trusted && project.exists()).then(|| {
        format!(
            "{} is ignored because the project is not trusted (use --approve).",
            project.display()
        )
    });
    let mut stdout = std::io::stdout().lock();
    if json {
        let servers: Vec<Value> = statuses.iter().map(status_json).collect();
        let errors: Vec<String> = loaded.problems.iter().map(|p| p.to_string()).collect();
        let mut out = json!({ "servers": servers, "errors": errors });
        if let Some(note) = &untrusted_note {
            out["note"] = json!(note);
        }
        writeln!(stdout, "{}", serde_json::to_string_pretty(&out)?)?;
    } else {
        if statuses.is_empty() && loaded.problems.is_empty() {
            writeln!(
                stdout,
                "No MCP servers configured. Add them to {} or .pith/mcp.json.",
                config::user_file(agent_dir).display()
            )?;
        }
        for s in &statuses {
            writeln!(stdout, "{}: {}", s.name, state_line(s))?;
            writeln!(stdout, "  {}", s.target)?;
            if !s.listed.is_empty() {
                writeln!(stdout, "  tools: {}", s.listed.join(", "))?;
            }
            if let ServerState::Failed(why) = &s.state {
                writeln!(stdout, "  {}", why.replace('\n', "\n  "))?;
            }
        }
        for problem in &loaded.problems {
            writeln!(stdout, "config error: {problem}")?;
        }
        if let Some(note) = untrusted_note {
            writeln!(stdout, "{note}")?;
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// A server's state in a word or two: `connected, 3 tools`, `failed`, `disabled`, … (the
/// reason of a failure goes on lines of its own).
pub fn state_line(status: &ServerStatus) -> String {
    match &status.state {
        ServerState::Connected => format!(
            "connected, {} tool{}",
            status.tools.len(),
            if status.tools.len() == 1 { "" } else { "s" }
        ),
        ServerState::Failed(_) => "failed".to_owned(),
        other @ (ServerState::Connecting | ServerState::Disabled) => other.to_string(),
    }
}

/// One server as `pith mcp list --json` and the rpc `mcp` command give it: `{name, source,
/// enabled, transport, state, tools, error?}` (`tools`: every tool the server lists, by its
/// own name; `state`: connecting, connected, failed or disabled).
pub fn status_json(status: &ServerStatus) -> Value {
    let (state, error) = match &status.state {
        ServerState::Failed(why) => ("failed", Some(why.clone())),
        ServerState::Connected => ("connected", None),
        ServerState::Connecting => ("connecting", None),
        ServerState::Disabled => ("disabled", None),
    };
    let mut v = json!({
        "name": status.name, "source": status.source,
        "enabled": status.state != ServerState::Disabled,
        "transport": status.target, "state": state, "tools": status.listed,
    });
    if let Some(error) = error {
        v["error"] = json!(error);
    }
    v
}

/// What `/mcp` does, as the interactive command list and rpc `get_commands` describe it.
pub const DESCRIPTION: &str =
    "Show MCP servers and their tools (/mcp reconnect|enable|disable <server>)";

/// pith's `/mcp` subcommands (pi 1.6.0 has `reconnect` as a subcommand and enable/disable in
/// its manager; pith takes all three typed, in the interactive mode and through rpc).
pub const MCP_USAGE: &str =
    "Usage: /mcp, /mcp reconnect <server>, /mcp enable <server>, /mcp disable <server>";

/// What `/mcp …` (or the rpc `mcp` command) asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpAction {
    /// Every server's state and tools.
    Status,
    /// Drop and reopen a server's connection.
    Reconnect(String),
    /// Start a disabled server, saved in its `mcp.json`.
    Enable(String),
    /// Stop a server and take its tools away, saved in its `mcp.json`.
    Disable(String),
}

impl McpAction {
    /// Reads `reconnect NAME`, `enable NAME`, `disable NAME` or nothing (the status).
    ///
    /// Errors: anything else, with [`MCP_USAGE`].
    pub fn parse(args: &str) -> Result<McpAction, String> {
        let words: Vec<&str> = args.split_whitespace().collect();
        match words.as_slice() {
            [] => Ok(McpAction::Status),
            ["reconnect", name] => Ok(McpAction::Reconnect((*name).to_owned())),
            ["enable", name] => Ok(McpAction::Enable((*name).to_owned())),
            ["disable", name] => Ok(McpAction::Disable((*name).to_owned())),
            _ => Err(MCP_USAGE.to_owned()),
        }
    }

    /// Does it on `hub` and says what happened, e.g. `Reconnected to MCP server "fs"
    /// (connected, 14 tools).` (pi's words); [`McpAction::Status`] says nothing. Servers
    /// still connecting, and an enabled one, are waited for (at most the 10 s connect
    /// timeout each time).
    ///
    /// Errors: no such server, a reconnect that failed, or a file that could not be saved.
    pub async fn run(&self, hub: &McpHub) -> Result<Option<String>, String> {
        let described = |name: &str| {
            hub.statuses()
                .iter()
                .find(|s| s.name == name)
                .map(state_line)
                .unwrap_or_default()
        };
        // pi's `/mcp` waits for the servers still connecting before it answers.
        hub.wait_settled(pith_mcp::server::CONNECT_TIMEOUT).await;
        match self {
            McpAction::Status => Ok(None),
            McpAction::Reconnect(name) => match hub.reconnect(name).await? {
                ServerState::Failed(why) => {
                    Err(format!(r#"MCP server "{name}" did not reconnect: {why}"#))
                }
                _ => Ok(Some(format!(
                    r#"Reconnected to MCP server "{name}" ({})."#,
                    described(name)
                ))),
            },
            McpAction::Enable(name) => {
                hub.set_enabled(name, true).await?;
                hub.wait_settled(pith_mcp::server::CONNECT_TIMEOUT).await;
                Ok(Some(format!(
                    r#"Enabled MCP server "{name}" ({})."#,
                    described(name)
                )))
            }
            McpAction::Disable(name) => {
                hub.set_enabled(name, false).await?;
                Ok(Some(format!(r#"Disabled MCP server "{name}"."#)))
            }
        }
    }
}

/// Whether the project's `.pith/mcp.json` is read: the project trust every project-local
/// file follows ([`crate::ext_trust::project_trusted`], pi's `resolveProjectTrusted`).
pub fn project_trusted(approve: bool, no_approve: bool, agent_dir: &Path, cwd: &Path) -> bool {
    crate::ext_trust::project_trusted(&crate::ext_trust::Ask {
        agent_dir,
        cwd,
        approve: match (approve, no_approve) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        interactive: false,
    })
}

/// The run flags that decide which servers start.
#[derive(Debug, Clone, Copy)]
pub struct RunFlags {
    /// `--no-mcp` or `--no-tools`: none.
    pub off: bool,
    /// `--approve`.
    pub approve: bool,
    /// `--no-approve`.
    pub no_approve: bool,
}

/// Starts the MCP servers of a session run (none with `--no-mcp` or `--no-tools`), reporting
/// skipped entries on stderr, and wraps `tools` so every session offers their tools.
pub fn start_hub(
    flags: RunFlags,
    agent_dir: &Path,
    cwd: &Path,
    tools: ToolChoice,
) -> (ToolChoice, Option<McpHub>) {
    if flags.off {
        return (tools, None);
    }
    let trusted = project_trusted(flags.approve, flags.no_approve, agent_dir, cwd);
    let loaded = config::load(agent_dir, cwd, trusted);
    for problem in &loaded.problems {
        eprintln!("pith: MCP config error: {problem}");
    }
    // A switch to a session of another directory reloads its project's file.
    let agent = agent_dir.to_path_buf();
    let loader: pith_mcp::hub::Loader =
        Arc::new(move |dir: &Path| config::load(&agent, dir, trusted));
    let hub = McpHub::start_with_loader(
        loader,
        cwd.to_path_buf(),
        pith_tools::ChildGuard::this_executable(),
    );
    (
        ToolChoice::WithSource(Box::new(tools), Arc::new(hub.clone())),
        Some(hub),
    )
}

/// Stops the servers (after the runtime), waiting until their processes are gone.
pub async fn stop(hub: Option<McpHub>) {
    if let Some(hub) = hub {
        hub.shutdown().await;
    }
}
