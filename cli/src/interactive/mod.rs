//! Interactive mode: `pith` with no `-p` (pi's `InteractiveMode`, in a line editor instead of
//! pi's full-screen TUI).
//!
//! - [`editor`]: rustyline on its own thread (history in `<agent dir>/history`, Tab
//!   completes `/commands`, Alt-Enter queues a follow-up, Esc interrupts);
//! - [`app`]: the loop joining the editor, the runtime's events, runs, `!cmd` and signals;
//! - [`commands`]: the slash commands; [`export_jsonl`]: `/export file.jsonl`;
//! - [`transcript`], [`messages`], [`tools`]: what events and messages look like;
//!   [`footer`]: the status after each run and `/session`; [`screen`], [`style`]: output.
//!
//! Keys (pi's defaults where pi has them): Enter sends (steers while a reply streams),
//! Alt-Enter queues a follow-up, Esc interrupts, Ctrl-C interrupts and clears the line (a
//! second one within 500 ms exits), Ctrl-D on an empty line exits.

mod app;
mod commands;
mod editor;
mod export_jsonl;
mod footer;
mod messages;
mod quiet_wait;
mod screen;
mod style;
mod tools;
mod transcript;
mod tree_command;

use std::collections::HashSet;
use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Result, bail};

use pith_llm::auth::Credentials;
use pith_llm::model_registry::ModelRegistry;
use pith_store::SessionEnv;

use crate::startup::{RunArgs, Started, check_flags, start};

/// Runs the interactive mode until the user quits (exit status 0). Without a terminal on
/// stdin it is print mode, as in pi. `-r` opens the session picker first (nothing picked:
/// `No session selected`, status 0).
///
/// Errors: the flags, model or session cannot be set up (see [`start`]), the picker failed,
/// or the runtime stopped answering.
pub fn run(mut args: RunArgs) -> Result<ExitCode> {
    if !std::io::stdin().is_terminal() {
        return crate::print::run(args);
    }
    check_flags(&args)?;
    if args.resume && args.fork.is_some() {
        bail!("--fork cannot be combined with --resume");
    }
    // pi's precedence: --no-session > --fork > --session > --resume > --continue.
    if args.resume && !args.no_session && args.session.is_none() && args.fork.is_none() {
        let env = SessionEnv::system();
        let cwd = std::env::current_dir()?.to_string_lossy().into_owned();
        match crate::tui::picker::pick_session(&cwd, &env.agent_dir, args.session_dir.as_deref())? {
            Some(picked) => {
                // `PATH@ENTRY` opens at a search hit's entry (startup::split_entry).
                let path = picked.path.to_string_lossy().into_owned();
                args.session = Some(match picked.entry {
                    Some(entry) => format!("{path}@{entry}"),
                    None => path,
                });
                args.continue_recent = false;
            }
            None => {
                println!("{}", style::dim("No session selected"));
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
    // The screen is the terminal: diagnostics go to the log file only.
    let _log =
        crate::logging::install(&pith_store::dirs::agent_dir(), args.trace.as_deref(), false)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Quitting on a signal leaves the editor thread inside a read, in raw mode.
    let saved = rustix::termios::tcgetattr(std::io::stdin()).ok();
    let result = runtime.block_on(interactive(args));
    if let Some(termios) = saved {
        let _ = rustix::termios::tcsetattr(
            std::io::stdin(),
            rustix::termios::OptionalActions::Now,
            &termios,
        );
    }
    if let Ok(true) = result {
        // The shell's prompt goes below the editor's, not after it.
        println!();
    }
    result.map(|_| ExitCode::SUCCESS)
}

/// Runs the mode; `true` when it ended with the editor's prompt on screen.
async fn interactive(args: RunArgs) -> Result<bool> {
    let Started {
        rt, choice, mcp, ..
    } = start(&args).await?;
    let env = SessionEnv::system();
    let mut names: Vec<(String, String)> = commands::BUILTIN
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect();
    names.extend(
        rt.commands()
            .await?
            .into_iter()
            .map(|c| (c.name, c.description)),
    );
    let (editor, inputs, printer) = editor::Editor::start(env.agent_dir.join("history"), names)?;
    let mut screen = screen::Screen::new(printer);
    screen.print_lines(&[
        format!(
            "{}{}",
            style::bold(&style::accent("pith")),
            style::dim(&format!(" v{}", env!("CARGO_PKG_VERSION")))
        ),
        style::dim(
            "esc interrupt · ctrl+c twice/ctrl+d exit · / commands · ! bash · alt+enter follow-up · /help more",
        ),
    ]);
    let registry = ModelRegistry::load(&env.agent_dir);
    let creds = Credentials::load(&env.agent_dir);
    let providers: HashSet<&str> = registry
        .available(&creds)
        .iter()
        .map(|m| m.provider.as_str())
        .collect();
    let mut app = app::App::new(app::Parts {
        rt,
        env: env.clone(),
        session_dir: args.session_dir.clone(),
        faux_script: args.faux_script.clone(),
        choice,
        show_provider: providers.len() > 1,
        editor: (editor, inputs),
        screen,
        messages: args.messages.clone(),
        mcp: mcp.clone(),
    })
    .await?;
    if !app.rt.context().await?.messages.is_empty() {
        app.show_history().await?;
    }
    app.footer().await?;
    let ended = app.run().await;
    crate::mcp_cmd::stop(mcp).await;
    ended
}
