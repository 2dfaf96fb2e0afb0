//! The `pith` binary.
//!
//! `pith` alone is the interactive mode (`interactive`, with the full-screen `/resume` and
//! `/tree` views in `tui`); `pith -p "prompt"` runs prompts and prints the reply (`print`),
//! `--mode json` prints every event and `--mode rpc` speaks pi's JSONL protocol (`rpc`);
//! `--export` writes a session as HTML (`export`). All of them start the same way
//! (`startup`, `model_choice`). `pith session …` inspects and lists session files;
//! `pith trace mermaid` draws a `--trace` file as a sequence diagram.

mod export;
mod ext_cmd;
mod ext_discovery;
mod ext_replay;
mod ext_trust;
mod interactive;
mod logging;
mod mcp_cmd;
mod model_choice;
mod model_source;
mod print;
mod prompt_resources;
mod rpc;
mod session_cmd;
mod session_search;
mod startup;
mod text;
mod trace_cmd;
mod tree_view;
mod tui;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// pith: pi's session system, as an event-sourced actor runtime.
#[derive(Debug, Parser)]
#[command(name = "pith", version, about, long_about = None, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: startup::RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect, list and browse session files (pi's format v3, read as pi reads it).
    #[command(subcommand)]
    Session(session_cmd::SessionCommand),
    /// Work with `--trace` files.
    #[command(subcommand)]
    Trace(trace_cmd::TraceCommand),
    /// List extensions, or check one against the protocol.
    #[command(subcommand)]
    Extension(ext_cmd::ExtensionCommand),
    /// Configure and check MCP servers (~/.pith/agent/mcp.json, a project's .pith/mcp.json).
    #[command(subcommand)]
    Mcp(mcp_cmd::McpCommand),
}

/// A run without a subcommand: the mode the flags ask for.
fn run(args: startup::RunArgs) -> anyhow::Result<ExitCode> {
    if let Some(search) = &args.list_models {
        let env = pith_store::SessionEnv::system();
        model_choice::list_models(&env.agent_dir, Some(search.as_str()))?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(paths) = &args.export {
        let (file, out) = (&paths[0], paths.get(1));
        let written = export::export_html(file, out.map(|p| p.as_path()))?;
        println!("Exported to: {}", written.display());
        return Ok(ExitCode::SUCCESS);
    }
    match (args.print, args.mode) {
        (_, Some(startup::Mode::Rpc)) => rpc::run(args),
        (true, _) | (false, Some(startup::Mode::Text | startup::Mode::Json)) => print::run(args),
        (false, None) => interactive::run(args),
    }
}

/// pi's multi-letter short flags (`-xt`, `-nt`), which clap cannot declare, spelled long.
pub(crate) fn pi_short_flags(
    args: impl Iterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let mut out = Vec::new();
    let mut rest_are_prompts = false;
    for arg in args {
        let long = match arg.to_str() {
            _ if rest_are_prompts => None,
            Some("--") => {
                rest_are_prompts = true;
                None
            }
            Some("-xt") => Some("--exclude-tools"),
            Some("-nt") => Some("--no-tools"),
            Some("-ne") => Some("--no-extensions"),
            _ => None,
        };
        out.push(long.map_or(arg, std::ffi::OsString::from));
    }
    out
}

/// Whether `e` is a write to a closed stdout, as an I/O error or inside a JSON writer's
/// (`pith session search --json | head`).
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        let kind = cause
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| {
                cause
                    .downcast_ref::<serde_json::Error>()
                    .and_then(serde_json::Error::io_error_kind)
            });
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}

fn main() -> ExitCode {
    // `pith __guard PROGRAM ARGS…`: an extension or MCP server that must not outlive pith.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == pith_tools::guard::GUARD_ARG)
    {
        std::process::exit(pith_tools::guard::run(&args[2..]));
    }
    let cli = Cli::parse_from(pi_short_flags(std::env::args_os()));
    let result = match cli.command {
        Some(Command::Session(cmd)) => session_cmd::run(cmd).map(|()| ExitCode::SUCCESS),
        Some(Command::Trace(cmd)) => trace_cmd::run(cmd).map(|()| ExitCode::SUCCESS),
        Some(Command::Extension(cmd)) => ext_cmd::run(cmd),
        Some(Command::Mcp(cmd)) => mcp_cmd::run(cmd),
        None => run(cli.run),
    };
    match result {
        Ok(code) => code,
        // `pith session tree … | head` closes stdout early; that is not an error.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pith: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
