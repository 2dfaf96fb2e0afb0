//! The `pith` binary.
//!
//! Today it carries the session commands (`pith session dump|list|tree|context|info`); the
//! interactive, print, json and rpc modes build on the actor runtime.

mod session_cmd;
mod tree_view;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// pith: pi's session system, as an event-sourced actor runtime.
#[derive(Debug, Parser)]
#[command(name = "pith", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect, list and browse session files (pi's format v3, read as pi reads it).
    #[command(subcommand)]
    Session(session_cmd::SessionCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Session(cmd)) => session_cmd::run(cmd),
        None => {
            use clap::CommandFactory;
            let _ = Cli::command().print_help();
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // `pith session tree … | head` closes stdout early; that is not an error.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pith: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
