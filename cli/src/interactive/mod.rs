//! Interactive mode: `pith` with no `-p` (pi's `InteractiveMode`): the transcript is printed
//! into the terminal's scrollback and pith's own editor keeps a bottom area below it; with
//! `--tui-mode fullscreen` (pi's `tuiMode`) both are drawn in the alternate screen, the area
//! pinned to the bottom and the transcript scrolled with PageUp/PageDown.
//!
//! - [`editor`]: the editor on its own thread (a multi-line buffer, history in
//!   `<agent dir>/history`, the `/command` menu and Tab completion, large pastes as
//!   markers, Ctrl+G in `$VISUAL`/`$EDITOR`, keys from `<agent dir>/keybindings.json`) and
//!   the status line above it (working indicator with elapsed time, retry countdown,
//!   compaction), redrawn in place;
//! - [`app`]: the loop joining the editor, the runtime's events, runs, `!cmd` and signals;
//! - [`commands`]: the slash commands; [`export_jsonl`]: `/export file.jsonl`;
//!   [`settings_command`]: `/settings`; [`changelog`]: `/changelog` and the startup notes;
//!   [`trust_command`]: `/trust`; [`share`]: `/share`;
//! - [`transcript`], [`messages`], [`tools`]: what events and messages look like;
//!   [`footer`]: the status after each run and `/session`; [`screen`], [`style`]: output;
//!   [`scrollback`]: what was printed, laid out again on a resize, Ctrl+T and Ctrl+O.
//!
//! Keys (pi's defaults, each remappable by its pi action id, see [`editor::keys`]): Enter
//! sends (steers while a reply streams), Alt+Enter queues a follow-up, Shift+Enter and
//! Ctrl+J add a line, Esc interrupts (and gives the queued messages back to the editor;
//! Alt+Up gives them back without interrupting), Ctrl+C clears the editor (a second one
//! within 500 ms exits), Ctrl+D on an empty editor exits, Ctrl+G edits in an external
//! editor, Ctrl+Z suspends; Ctrl+L, Ctrl+P, Shift+Tab, Ctrl+T, Ctrl+O and Esc Esc are pi's
//! app keys ([`editor::KeyAction`]); Ctrl+A/E/K/U/W/Y, Alt+B/F/D, arrows, Home/End edit.
//! Replies are rendered by [`markdown`].

mod app;
mod changelog;
mod clipboard;
mod commands;
mod dialogs;
mod editor;
mod export_jsonl;
mod footer;
mod keys;
mod markdown;
mod messages;
mod quiet_wait;
mod resources_view;
mod screen;
mod scrollback;
mod settings_command;
mod share;
mod style;
mod tools;
mod transcript;
mod tree_command;
mod trust_command;

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
    // `@file` arguments are read before the screen is taken, as pi's main does; a missing
    // file ends the run with its error.
    let (messages, images) = crate::print::initial_prompts(&args.messages, None)?;
    args.messages = messages;
    // The screen is the terminal: diagnostics go to the log file only.
    let _log =
        crate::logging::install(&pith_store::dirs::agent_dir(), args.trace.as_deref(), false)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Quitting on a signal leaves the editor thread inside a read, in raw mode; the editor
    // changes the terminal's settings between reads too. A guard, so a panic restores them.
    let saved = RestoreTerminal(rustix::termios::tcgetattr(std::io::stdin()).ok());
    let result = runtime.block_on(interactive(args, images));
    // A full-screen view left behind by SIGTERM or SIGHUP still runs on a blocking thread,
    // which dropping the runtime would wait for without end; the process ends it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    drop(saved);
    if let Ok((true, _)) = result {
        // Quitting during a read: the editor's terminal modes (bracketed paste, the kitty
        // keyboard protocol) end with pith, and the shell's prompt goes below the editor's.
        print!("{}", editor::external::leave());
        println!();
    }
    if let Ok((_, Some(command))) = &result
        && std::io::stdout().is_terminal()
    {
        // Its own line, so a triple-click selects it (pi's exit hint).
        println!("{}\n{command}", style::dim("To resume this session:"));
    }
    result.map(|_| ExitCode::SUCCESS)
}

/// Puts the terminal's settings back as pith found them when dropped.
struct RestoreTerminal(Option<rustix::termios::Termios>);

impl Drop for RestoreTerminal {
    fn drop(&mut self) {
        if let Some(termios) = &self.0 {
            let _ = rustix::termios::tcsetattr(
                std::io::stdin(),
                rustix::termios::OptionalActions::Now,
                termios,
            );
        }
    }
}

/// Runs the mode; `true` when it ended with the editor's prompt on screen, and the command
/// that resumes the session.
async fn interactive(
    args: RunArgs,
    images: Vec<pith_events::ImageContent>,
) -> Result<(bool, Option<String>)> {
    let Started {
        rt,
        choice,
        dialogs,
        resources,
        prompt_files,
        mcp,
        ..
    } = start(&args).await?;
    let env = SessionEnv::system();
    let settings = {
        let cwd = rt.current_session().await?.cwd;
        pith_actors::settings::Settings::load(&env.agent_dir, std::path::Path::new(&cwd))
    };
    let flag = |key: &str| settings.get(key).and_then(serde_json::Value::as_bool);
    let skill_commands = flag("enableSkillCommands").unwrap_or(true);
    let quiet = settings_command::QuietStartup::of(&settings);
    let show_header = quiet != settings_command::QuietStartup::Quiet;
    let show_listings = quiet == settings_command::QuietStartup::Verbose;
    let names = commands::completions(&rt.commands().await?, &resources, skill_commands);
    let keybindings_file = env.agent_dir.join("keybindings.json");
    let (keys, key_warnings) = editor::keys::Keybindings::load(&keybindings_file);
    let (editor, inputs, printer) =
        editor::Editor::start(env.agent_dir.join("history"), names, keys)?;
    let fullscreen = match args.tui_mode {
        Some(mode) => mode == crate::startup::TuiMode::Fullscreen,
        None => settings.get("tuiMode").and_then(serde_json::Value::as_str) == Some("fullscreen"),
    };
    editor.set_fullscreen(fullscreen);
    let mut screen = screen::Screen::new(Some(printer));
    if show_header {
        screen.show(Box::new(|v| {
            let mut lines = vec![format!(
                "{}{}",
                style::bold(&style::accent("pith")),
                style::dim(&format!(" v{}", env!("CARGO_PKG_VERSION")))
            )];
            lines.extend(messages::wrap(
                "esc interrupt · ctrl+c twice/ctrl+d exit · / commands · ! bash · alt+enter follow-up · /help more",
                v.cols,
                &style::dim,
            ));
            lines
        }));
    }
    for warning in key_warnings {
        screen.print(&style::warning(&format!("Warning: {warning}")));
    }
    let cwd = rt.current_session().await?.cwd;
    let mut context_files = prompt_files;
    if !args.resources.no_context_files {
        context_files.extend(
            pith_actors::system_prompt::load_context_files(
                std::path::Path::new(&cwd),
                &env.agent_dir,
            )
            .into_iter()
            .map(|f| f.path),
        );
    }
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let show = |p: &std::path::Path| display_path(p, std::path::Path::new(&cwd), home.as_deref());
    if show_listings && !context_files.is_empty() {
        // pi's startup listing: which AGENTS.md/CLAUDE.md files the model is given.
        let shown: Vec<String> = context_files.iter().map(|f| show(f)).collect();
        screen.print_lines(&[
            String::new(),
            style::accent("[Context]"),
            style::dim(&format!("  {}", shown.join(", "))),
        ]);
    }
    if show_listings {
        screen.print_lines(&resources_view::startup_lines(&resources, &show));
    }
    let registry = ModelRegistry::load(&env.agent_dir);
    let creds = Credentials::load(&env.agent_dir);
    let available = registry.available(&creds);
    let providers: HashSet<&str> = available.iter().map(|m| m.provider.as_str()).collect();
    // pi completes `/model` with the models that have a key, `/thinking` with the levels.
    let mut model_ids: Vec<String> = available
        .iter()
        .map(|m| format!("{}/{}", m.provider, m.id))
        .collect();
    model_ids.sort();
    editor.set_arguments("model", model_ids);
    editor.set_arguments(
        "thinking",
        pith_events::ThinkingLevel::ALL
            .iter()
            .map(|l| l.as_str().to_owned())
            .collect(),
    );
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
        images,
        dialogs,
        resources,
        skill_commands,
        mcp: mcp.clone(),
    })
    .await?;
    // pi's `hideThinkingBlock`, which Ctrl-T and /settings change.
    app.transcript.hide_thinking = flag("hideThinkingBlock").unwrap_or(false);
    app.screen
        .set_toggles(app.transcript.hide_thinking, app.transcript.expand_tools);
    app.changelog_at_startup().await?;
    if !app.rt.context().await?.messages.is_empty() {
        app.show_history().await?;
    }
    let at_hit = args.session.as_deref().map(crate::startup::split_entry);
    if matches!(at_hit, Some((_, Some(_)))) {
        app.opened_at_hit_notice().await?;
    }
    app.untrusted_project_warning().await?;
    app.footer().await?;
    let ended = app.run().await;
    app.editor.leave_fullscreen();
    crate::mcp_cmd::stop(mcp).await;
    Ok((ended?, app.resume_command.take()))
}

/// pi's `formatContextPath`: relative to `cwd` when inside it, else with the home folder as
/// `~`, else as it is.
fn display_path(
    path: &std::path::Path,
    cwd: &std::path::Path,
    home: Option<&std::path::Path>,
) -> String {
    if let Ok(rel) = path.strip_prefix(cwd) {
        return rel.display().to_string();
    }
    if let Some(rest) = home.and_then(|h| path.strip_prefix(h).ok()) {
        return format!("~/{}", rest.display());
    }
    path.display().to_string()
}
