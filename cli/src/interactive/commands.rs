//! The slash commands (pi's `onSubmit` handlers and `BUILTIN_SLASH_COMMANDS`), plus the ones
//! pith adds: `/thinking`, `/label`, `/help`, `/exit`. A `/word` that no built-in command and
//! no extension command has is an error and stays in the editor (pi sends it to the model as
//! text: docs/divergences.md); a line such as `/usr/bin/env is …` is a prompt.

use std::path::PathBuf;

use anyhow::Result;

use pith_events::{EntryType, SessionStart};
use pith_events::{ModelRef, ThinkingLevel};
use pith_llm::model_registry::{clamp_thinking_level, supported_thinking_levels};

use pith_actors::resources::Resources;

use super::app::{App, Flow, Question};
use super::editor::keys::Action;
use super::footer::{session_info, session_stats};
use super::style;
use crate::tui::select::{Item, select, select_or_save};
use pith_actors::settings::Settings;

/// Built-in commands and their `/help` line, in pi's order where pi has them.
pub const BUILTIN: [(&str, &str); 24] = [
    ("settings", "Open settings menu"),
    ("model", "Select model (opens selector UI)"),
    ("thinking", "Set thinking level"),
    (
        "export",
        "Export session (HTML default, or specify path: .html/.jsonl)",
    ),
    ("import", "Import and resume a session from a JSONL file"),
    // pi: "Share session via a Radius artifact or a GitHub gist"; pith has no Radius.
    ("share", "Share session via a GitHub gist"),
    ("name", "Set session display name"),
    ("session", "Show session info and stats"),
    ("changelog", "Show changelog entries"),
    (
        "label",
        "Label the current entry (/label text), or clear its label (/label)",
    ),
    ("fork", "Create a new fork from a previous user message"),
    (
        "clone",
        "Duplicate the current session at the current position",
    ),
    ("tree", "Navigate session tree (switch branches)"),
    ("trust", "Save project trust decision for future sessions"),
    ("new", "Start a new session"),
    ("compact", "Manually compact the session context"),
    (
        "reload",
        "Reload the extensions (/reload name: just that one, enabled again)",
    ),
    ("resume", "Resume a different session"),
    ("copy", "Copy last agent message to clipboard"),
    ("hotkeys", "Show all keyboard shortcuts"),
    ("mcp", crate::mcp_cmd::DESCRIPTION),
    ("help", "Show commands and keys"),
    ("quit", "Quit pith"),
    ("exit", "Quit pith"),
];

/// pi's `argumentHint`s of the built-in commands, shown before their descriptions in the
/// `/` menu.
const ARGUMENT_HINTS: [(&str, &str); 2] = [("model", "<provider/model>"), ("thinking", "<level>")];

/// A command's description as pi-tui's `/` menu shows it: `hint — description`.
fn with_hint(hint: Option<&str>, description: &str) -> String {
    match hint {
        Some(hint) if description.is_empty() => hint.to_owned(),
        Some(hint) => format!("{hint} — {description}"),
        None => description.to_owned(),
    }
}

/// Everything Tab completes after `/`, with its description: the built-in commands, the
/// extension commands, then the prompt templates (with their `argument-hint`) and, unless
/// the `enableSkillCommands` setting is `false`, `skill:name` for each skill, as pi's
/// autocomplete lists them (a typed `/skill:name` works either way).
pub fn completions(
    ext_commands: &[pith_actors::extension::SlashCommand],
    resources: &Resources,
    skill_commands: bool,
) -> Vec<(String, String)> {
    let mut names: Vec<(String, String)> = BUILTIN
        .iter()
        .map(|(n, d)| {
            let hint = ARGUMENT_HINTS.iter().find(|(c, _)| c == n).map(|(_, h)| *h);
            (n.to_string(), with_hint(hint, d))
        })
        .collect();
    names.extend(
        ext_commands
            .iter()
            .map(|c| (c.name.clone(), c.description.clone())),
    );
    names.extend(
        resource_commands(resources)
            .into_iter()
            .filter(|(n, _)| skill_commands || !n.starts_with("skill:")),
    );
    names
}

/// The prompt templates and skills as `/` commands: `(name, description)`, a template's
/// description followed by its `argument-hint` when it has one.
pub fn resource_commands(resources: &Resources) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = resources
        .templates
        .iter()
        .map(|t| {
            let description = with_hint(t.argument_hint.as_deref(), &t.description);
            (t.name.clone(), description)
        })
        .collect();
    out.extend(
        resources
            .skills
            .iter()
            .map(|s| (format!("skill:{}", s.name), s.description.clone())),
    );
    out
}

/// Whether `/name` is a prompt template or a `/skill:name` of a loaded skill.
fn is_resource_command(resources: &Resources, name: &str) -> bool {
    match name.strip_prefix("skill:") {
        Some(skill) => resources.skills.iter().any(|s| s.name == skill),
        None => resources.templates.iter().any(|t| t.name == name),
    }
}

/// Commands that replace or rewrite the session: they wait until nothing runs.
const NEED_IDLE: [&str; 7] = [
    "new", "resume", "fork", "clone", "tree", "compact", "import",
];

impl App {
    /// Runs `text` as a slash command; `None` when it is none (then it is a prompt).
    ///
    /// Errors: the runtime stopped answering.
    pub(super) async fn command(&mut self, text: &str) -> Result<Option<Flow>> {
        let Some(rest) = text.strip_prefix('/') else {
            return Ok(None);
        };
        let (name, args) = match rest.split_once(char::is_whitespace) {
            Some((name, args)) => (name, args.trim()),
            None => (rest, ""),
        };
        let builtin = BUILTIN.iter().any(|(n, _)| *n == name);
        if !builtin {
            if self.ext_commands.iter().any(|c| c.name == name) {
                if self.task.is_some() {
                    self.warn("A command is already running. Press Esc to cancel it first.");
                    return Ok(Some(Flow::Go));
                }
                // Beside the editor: the command's dialogs are answered by the next lines.
                let (rt, name, args) = (self.rt.clone(), name.to_owned(), args.to_owned());
                self.task = Some(tokio::spawn(async move {
                    super::app::TaskDone::Command(rt.command(&name, &args).await)
                }));
                return Ok(Some(Flow::Go));
            }
            if is_resource_command(&self.resources, name) {
                // A prompt template or `/skill:name`: a prompt, expanded by the runtime.
                return Ok(None);
            }
            if looks_like_command(name) {
                self.error(&format!(
                    "Unknown command: /{name}. Type /help for the commands."
                ));
                // What was typed is not lost: it comes back to be corrected.
                self.next_initial = text.to_owned();
                return Ok(Some(Flow::Go));
            }
            return Ok(None);
        }
        if NEED_IDLE.contains(&name) && self.busy() {
            self.warn("Wait for the current reply or command to finish (Esc interrupts it).");
            return Ok(Some(Flow::Go));
        }
        match name {
            "quit" | "exit" => return Ok(Some(Flow::Quit)),
            "help" => self.help(),
            "hotkeys" => self.hotkeys(),
            "copy" => self.copy().await?,
            "new" => {
                self.new_session().await?;
                self.footer().await?;
            }
            "resume" => {
                self.resume().await?;
                self.footer().await?;
            }
            "fork" => self.fork(args).await?,
            "clone" => {
                self.clone_session().await?;
                self.footer().await?;
            }
            // The footer again only after a move (pi's tree leaves nothing behind when it is
            // closed).
            "tree" => {
                if self.tree().await? {
                    self.footer().await?;
                }
            }
            "compact" => self.compact(args).await?,
            // The footer shows the name, model and thinking level: printed again after each.
            "name" => {
                self.name(args).await?;
                self.refresh_footer().await?;
            }
            "session" => {
                self.session_cmd().await?;
                self.refresh_footer().await?;
            }
            "model" => {
                self.model(args).await?;
                self.refresh_footer().await?;
            }
            "thinking" => {
                self.thinking(args).await?;
                self.refresh_footer().await?;
            }
            "settings" => self.settings().await?,
            "changelog" => self.changelog(),
            "trust" => self.trust().await?,
            "share" => self.share().await?,
            "label" => self.label(args).await?,
            "export" => self.export(args).await?,
            "import" => self.import(args).await?,
            "reload" => {
                let name = Some(args.trim()).filter(|a| !a.is_empty());
                // pi's /reload reads keybindings.json again too.
                if name.is_none() {
                    let file = self.env.agent_dir.join("keybindings.json");
                    let (keys, warnings) = super::editor::keys::Keybindings::load(&file);
                    self.editor.set_keys(keys);
                    for warning in warnings {
                        self.screen
                            .print(&style::warning(&format!("Warning: {warning}")));
                    }
                }
                let reloaded = self.rt.reload(name).await?;
                self.ext_commands = self.rt.commands().await?;
                match (name, reloaded.is_empty()) {
                    (Some(_), true) => self.status("No extension to reload"),
                    (Some(_), false) => self.status(&format!("Reloaded: {}", reloaded.join(", "))),
                    (None, true) => self.status("Reloaded keybindings (no extension to reload)"),
                    (None, false) => self.status(&format!(
                        "Reloaded keybindings and extensions: {}",
                        reloaded.join(", ")
                    )),
                }
            }
            "mcp" => self.mcp(args).await,
            _ => return Ok(None),
        }
        Ok(Some(Flow::Go))
    }

    /// Prints the footer again after a command changed what it shows, unless a reply is
    /// streaming (the footer follows the run then).
    ///
    /// Errors: the runtime stopped answering.
    async fn refresh_footer(&mut self) -> Result<()> {
        if self.busy() {
            return Ok(());
        }
        self.footer().await
    }

    /// `/import`'s confirmed replacement of the session by `path`.
    ///
    /// Errors: the runtime stopped answering.
    async fn import_confirmed(&mut self, path: PathBuf) -> Result<()> {
        let shown = path.display().to_string();
        if self.switch(SessionStart::Import(path)).await?.is_some() {
            self.status(&format!("Session imported from: {shown}"));
            self.footer().await?;
        }
        Ok(())
    }

    /// The answer to an extension's dialog, typed at the editor (an empty line cancels).
    ///
    /// Errors: none yet; `Result` for the callers' `?`.
    pub(super) async fn answer(&mut self, question: Question, text: &str) -> Result<Flow> {
        match question {
            Question::Extension(dialog) => {
                let response = super::dialogs::response(&dialog, text);
                self.dialogs.answer(&dialog.id, response);
            }
        }
        Ok(Flow::Go)
    }

    /// `/hotkeys`: the keys, as `/help` lists them.
    fn hotkeys(&mut self) {
        let mut lines = vec![String::new()];
        lines.extend(self.key_lines());
        self.screen.print_lines(&lines);
    }

    /// The effective keys (pi's defaults with `keybindings.json` applied), for `/hotkeys`
    /// and `/help`.
    fn key_lines(&self) -> Vec<String> {
        let mut lines = vec![style::bold("Keys")];
        let keys = self.editor.keys();
        let listing = keys.listing();
        let width = listing
            .iter()
            .map(|(k, _)| k.len())
            .max()
            .unwrap_or(0)
            .max(10);
        for (key, what) in listing {
            lines.push(format!(
                "{} {what}",
                style::accent(&format!("{key:<width$}"))
            ));
        }
        lines.push(format!(
            "{} /tree (when idle)",
            style::accent(&format!("{:<width$}", "escape escape"))
        ));
        lines
    }

    /// `/copy`: the last reply's text to the clipboard through the terminal (OSC 52), which
    /// works over ssh and needs no clipboard program; pi's messages.
    async fn copy(&mut self) -> Result<()> {
        let context = self.rt.context().await?;
        match crate::rpc::queries::last_assistant_text(&context.messages) {
            None => self.error("No agent messages to copy yet."),
            Some(text) => {
                self.screen.write_raw(&osc52(&text));
                self.status("Copied last agent message to clipboard");
            }
        }
        Ok(())
    }

    fn help(&mut self) {
        let mut lines = vec![String::new(), style::bold("Commands")];
        for (name, description) in BUILTIN {
            lines.push(format!(
                "{} {}",
                style::accent(&format!("/{name:<9}")),
                description
            ));
        }
        for c in &self.ext_commands {
            lines.push(format!(
                "{} {}",
                style::accent(&format!("/{:<9}", c.name)),
                c.description
            ));
        }
        for (name, description) in resource_commands(&self.resources) {
            lines.push(format!(
                "{} {}",
                style::accent(&format!("/{name:<9}")),
                description
            ));
        }
        lines.push(format!(
            "{} {}",
            style::accent(&format!("{:<10}", "!cmd")),
            "run a shell command (!!cmd: keep it out of the context)"
        ));
        lines.push(String::new());
        lines.extend(self.key_lines());
        self.screen.print_lines(&lines);
    }

    /// Replaces the session; `Some(new file)` when it happened, after showing its history.
    /// Failures and cancellations are shown.
    async fn switch(&mut self, start: SessionStart) -> Result<Option<Option<PathBuf>>> {
        let rt = self.rt.clone();
        let switched = self.with_dialogs(rt.switch(start)).await;
        match switched {
            Ok(outcome) => {
                if let Some(reason) = outcome.cancelled {
                    self.status(&format!("Cancelled: {reason}"));
                    return Ok(None);
                }
                self.drain_events();
                let running = self.rt.current_session().await?;
                crate::model_choice::follow(
                    &mut self.choice,
                    &running.model,
                    running.thinking_level,
                    &self.env.agent_dir,
                );
                self.ext_commands = self.rt.commands().await?;
                self.editor.set_commands(completions(
                    &self.ext_commands,
                    &self.resources,
                    self.skill_commands,
                ));
                self.show_history().await?;
                if let Some(text) = outcome.selected_text {
                    self.next_initial = text;
                }
                Ok(Some(outcome.session_file))
            }
            Err(e) => {
                self.error(&e.to_string());
                Ok(None)
            }
        }
    }

    async fn new_session(&mut self) -> Result<()> {
        if self.switch(SessionStart::New).await?.is_some() {
            self.screen
                .print_lines(&[String::new(), style::accent("✓ New session started")]);
        }
        Ok(())
    }

    async fn resume(&mut self) -> Result<()> {
        let current = self.rt.current_session().await?;
        let (agent_dir, session_dir) = (self.env.agent_dir.clone(), self.session_dir.clone());
        let options = crate::tui::picker::PickerOptions {
            current_session: current.session_file.clone(),
            ..Default::default()
        };
        let open_now = current.session_file.clone();
        let picked = view(move || {
            crate::tui::picker::pick_session_with(
                &current.cwd,
                &agent_dir,
                session_dir.as_deref(),
                &options,
            )
        })
        .await;
        match picked {
            // /resume opens the session at its leaf, even from a search hit (switching
            // sessions in a running runtime has no way to move the leaf yet).
            // The session already open: nothing to switch (its writer's lock is this
            // process's own), as pi resumes it in place.
            Ok(Some(picked)) if open_now.as_deref() == Some(picked.path.as_path()) => {
                self.status("Resumed session");
            }
            Ok(Some(picked)) => {
                if self
                    .switch(SessionStart::Resume(picked.path))
                    .await?
                    .is_some()
                {
                    self.status("Resumed session");
                }
            }
            Ok(None) => {}
            Err(e) => self.view_failed(&e),
        }
        Ok(())
    }

    /// `/fork [n]`: pi's selector of every user message with text, in file order across all
    /// branches, the last preselected (spec: lifecycle.md §7.4), as a numbered list.
    async fn fork(&mut self, args: &str) -> Result<()> {
        let session = self.session().await?;
        let mut ids = Vec::new();
        let mut texts = Vec::new();
        for entry in session.entries() {
            if entry.kind() != &EntryType::Message {
                continue;
            }
            let Some(Ok(pith_events::AgentMessage::User(u))) = entry.decode_message() else {
                continue;
            };
            let text = u.content.joined_text("");
            if text.is_empty() {
                continue;
            }
            ids.push(entry.id().to_owned());
            let first = text.lines().next().unwrap_or_default();
            texts.push(super::screen::truncate(
                first,
                super::screen::columns().saturating_sub(24),
            ));
        }
        if ids.is_empty() {
            self.status("No messages to fork from");
            return Ok(());
        }
        if !args.is_empty() {
            match args.parse::<usize>() {
                Ok(n) if (1..=ids.len()).contains(&n) => {
                    self.fork_at(&ids[n - 1]).await?;
                    self.footer().await?;
                }
                _ => self.error(&format!("No user message {args}: use 1-{}", ids.len())),
            }
            return Ok(());
        }
        // pi's user-message selector, on the last message.
        let n = texts.len();
        let items: Vec<Item> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| Item::new(t.clone(), format!("Message {} of {n}", i + 1)))
            .collect();
        let picked = view(move || select("Fork from which message?", items, n - 1, true)).await;
        match picked {
            Ok(Some(i)) => {
                self.fork_at(&ids[i]).await?;
                self.footer().await?;
            }
            Ok(None) => self.status("Fork cancelled"),
            Err(e) => self.view_failed(&e),
        }
        Ok(())
    }

    async fn fork_at(&mut self, entry_id: &str) -> Result<()> {
        let start = SessionStart::Fork {
            entry_id: entry_id.to_owned(),
        };
        if self.switch(start).await?.is_some() {
            self.status("Forked to new session");
        }
        Ok(())
    }

    async fn clone_session(&mut self) -> Result<()> {
        if self.rt.current_session().await?.leaf_id.is_none() {
            self.status("Nothing to clone yet");
            return Ok(());
        }
        if self.switch(SessionStart::Clone).await?.is_some() {
            self.next_initial.clear();
            self.status("Cloned to new session");
        }
        Ok(())
    }

    /// `/compact [focus]`: the runtime decides, as pi 1.6.0's `compact()` does; a session with
    /// nothing to summarize ends with `Error: Compaction failed: Nothing to compact (session
    /// too small)`.
    async fn compact(&mut self, focus: &str) -> Result<()> {
        self.start_compaction((!focus.is_empty()).then(|| focus.to_owned()));
        Ok(())
    }

    async fn name(&mut self, name: &str) -> Result<()> {
        if name.is_empty() {
            match self.session().await?.session_name() {
                Some(current) => self.screen.print_lines(&[
                    String::new(),
                    style::dim(&format!("Session name: {current}")),
                ]),
                None => self.warn("Usage: /name <name>"),
            }
            return Ok(());
        }
        match self.rt.set_session_name(name).await {
            Ok(()) => self.screen.print_lines(&[
                String::new(),
                style::dim(&format!("Session name set: {name}")),
            ]),
            Err(e) => self.error(&e.to_string()),
        }
        Ok(())
    }

    async fn session_cmd(&mut self) -> Result<()> {
        let current = self.rt.current_session().await?;
        let name = self.session().await?.session_name();
        let stats = session_stats(&self.session().await?);
        let lines = session_info(
            name.as_deref(),
            current.session_file.as_deref(),
            &current.session_id,
            &stats,
        );
        self.screen.print_lines(&lines);
        Ok(())
    }

    /// `/mcp`: each server's state and tools; `/mcp reconnect|enable|disable <server>`
    /// ([`crate::mcp_cmd::McpAction`]).
    async fn mcp(&mut self, args: &str) {
        let action = match crate::mcp_cmd::McpAction::parse(args) {
            Ok(action) => action,
            Err(usage) => return self.warn(&usage),
        };
        let Some(hub) = self.mcp.clone() else {
            self.status("No MCP servers (add one with: pith mcp add)");
            return;
        };
        match action.run(&hub).await {
            Ok(Some(done)) => return self.status(&pith_tools::sanitize::for_terminal(&done)),
            Ok(None) => {}
            Err(e) => return self.error(&pith_tools::sanitize::for_terminal(&e)),
        }
        let statuses = hub.statuses();
        if statuses.is_empty() {
            self.status("No MCP servers configured (add one with: pith mcp add)");
            return;
        }
        let mut lines = vec![String::new()];
        for status in statuses {
            lines.push(format!(
                "{}: {} ({})",
                status.name,
                crate::mcp_cmd::state_line(&status),
                status.target
            ));
            if let pith_mcp::ServerState::Failed(why) = &status.state {
                lines.push(format!("  {}", why.replace('\n', "\n  ")));
            }
            if !status.tools.is_empty() {
                lines.push(format!("  {}", status.tools.join(", ")));
            }
        }
        let lines: Vec<String> = lines
            .iter()
            .map(|l| pith_tools::sanitize::for_terminal(l))
            .collect();
        self.screen.print_lines(&lines);
    }

    /// `/model [pattern]`: resolved as `--model` is (a `:level` suffix sets the thinking
    /// level; otherwise the current level is kept, clamped to the new model).
    async fn model(&mut self, pattern: &str) -> Result<()> {
        let cwd = self.rt.current_session().await?.cwd;
        let picked;
        // Ctrl+S in the selector: also the default for new sessions (pi's `persist`).
        let mut save_default = false;
        let pattern = if pattern.is_empty() {
            // pi's model selector: every model that has a key, on the current one.
            let registry = pith_llm::model_registry::ModelRegistry::load(&self.env.agent_dir);
            let creds = pith_llm::auth::Credentials::load(&self.env.agent_dir);
            let mut models = registry.available(&creds);
            models.sort_by(|a, b| (&a.provider, &a.id).cmp(&(&b.provider, &b.id)));
            let current = self.choice.model.qualified_id();
            let names: Vec<String> = models
                .iter()
                .map(|m| format!("{}/{}", m.provider, m.id))
                .collect();
            let initial = names.iter().position(|n| *n == current).unwrap_or(0);
            let items: Vec<Item> = models
                .iter()
                .zip(&names)
                .map(|(m, n)| {
                    let note = if *n == current {
                        "✓ current".to_owned()
                    } else {
                        m.name.clone()
                    };
                    Item::new(n.clone(), note)
                })
                .collect();
            match view(move || select_or_save("Select model", Vec::new(), items, initial)).await {
                Ok(Some((i, saved))) => {
                    save_default = saved;
                    picked = names[i].clone();
                    picked.as_str()
                }
                Ok(None) => {
                    self.status(&format!("Current model: {current}"));
                    return Ok(());
                }
                Err(e) => {
                    self.view_failed(&e);
                    return Ok(());
                }
            }
        } else {
            pattern
        };
        let suffixed = pattern
            .rsplit_once(':')
            .is_some_and(|(_, level)| level.parse::<ThinkingLevel>().is_ok());
        let request = crate::model_choice::Request {
            provider: None,
            model: Some(pattern),
            thinking: (!suffixed).then_some(self.choice.thinking_level.as_str()),
            api_key: None,
            faux_script: false,
        };
        let choice = match crate::model_choice::choose(&request, &self.env.agent_dir, cwd.as_ref())
        {
            Ok(c) => c,
            Err(e) => {
                self.error(&format!("{e:#}"));
                return Ok(());
            }
        };
        let provider =
            match crate::startup::provider_for(&choice, self.faux_script.as_deref(), &self.env) {
                Ok(p) => p,
                Err(e) => {
                    self.error(&format!("{e:#}"));
                    return Ok(());
                }
            };
        let model = ModelRef::new(&choice.model.provider, &choice.model.id);
        if let Err(e) = self.rt.set_model(provider, model).await {
            self.error(&e.to_string());
            return Ok(());
        }
        if let Err(e) = self.rt.set_thinking_level(choice.thinking_level).await {
            self.error(&e.to_string());
        }
        let id = choice.model.id.clone();
        let provider = choice.model.provider.clone();
        self.choice = choice;
        if save_default {
            // pi's `setDefaultModelAndProvider`.
            let saved = async {
                self.rt
                    .set_setting("defaultProvider", provider.clone().into())
                    .await?;
                self.rt.set_setting("defaultModel", id.clone().into()).await
            };
            if let Err(e) = saved.await {
                self.error(&e.to_string());
                return Ok(());
            }
            self.status(&format!("Default model: {provider}/{id}"));
        } else {
            self.status(&format!("Model: {id}"));
        }
        Ok(())
    }

    async fn thinking(&mut self, level: &str) -> Result<()> {
        let model = self.choice.model.clone();
        let mut save_default = false;
        let level = if level.is_empty() {
            // pi's thinking selector: the levels this model supports, on the current one,
            // each described, the default marked; Ctrl+S sets the default.
            let supported = supported_thinking_levels(&model);
            let current = self.choice.thinking_level;
            let cwd = self.rt.current_session().await?.cwd;
            let default = Settings::load(&self.env.agent_dir, std::path::Path::new(&cwd))
                .default_thinking_level();
            let initial = supported.iter().position(|l| *l == current).unwrap_or(0);
            let items: Vec<Item> = supported
                .iter()
                .map(|&l| {
                    let mark = if l == current { "✓ " } else { "  " };
                    let about = level_description(l);
                    let note = if l == default {
                        format!("{about} · default")
                    } else {
                        about.to_owned()
                    };
                    Item::new(format!("{mark}{l}"), note)
                })
                .collect();
            let cycle = self.editor.keys().text(Action::CycleThinking);
            let about = vec![format!("{cycle} cycles thinking levels in-session")];
            match view(move || select_or_save("Thinking Level", about, items, initial)).await {
                Ok(Some((i, saved))) => {
                    save_default = saved;
                    supported[i].as_str()
                }
                Ok(None) => {
                    self.status(&format!("Thinking level: {current}"));
                    return Ok(());
                }
                Err(e) => {
                    self.view_failed(&e);
                    return Ok(());
                }
            }
        } else {
            level
        };
        let model = &model;
        let Ok(asked) = level.parse::<ThinkingLevel>() else {
            self.error(&format!(
                "unknown thinking level {level}: use one of {}",
                ThinkingLevel::list()
            ));
            return Ok(());
        };
        let clamped = clamp_thinking_level(model, asked);
        match self.rt.set_thinking_level(clamped).await {
            Ok(()) if save_default => {
                self.choice.thinking_level = clamped;
                // pi's `setThinkingLevel(level, { persist: true })`.
                match self
                    .rt
                    .set_setting("defaultThinkingLevel", clamped.as_str().into())
                    .await
                {
                    Ok(()) => self.status(&format!("Default thinking level: {clamped}")),
                    Err(e) => self.error(&e.to_string()),
                }
            }
            Ok(()) => {
                self.choice.thinking_level = clamped;
                if clamped == asked {
                    self.status(&format!("Thinking level: {clamped}"));
                } else {
                    self.status(&format!(
                        "Thinking level: {clamped} ({} does not support {level})",
                        model.qualified_id()
                    ));
                }
            }
            Err(e) => self.error(&e.to_string()),
        }
        Ok(())
    }

    /// `/label [text]`: labels the last entry of the branch, or clears its label. Label and
    /// session-name entries are bookkeeping, not something to label: they are skipped, so a
    /// second `/label` clears the label the first one set.
    async fn label(&mut self, text: &str) -> Result<()> {
        let snapshot = self.rt.snapshot().await?;
        let tree = &snapshot.tree;
        let target = match tree.leaf() {
            pith_store::Leaf::At(leaf) => tree
                .path_to(leaf)
                .into_iter()
                .rev()
                .map(|i| &tree.entries()[i])
                .find(|e| {
                    !matches!(
                        e.kind(),
                        pith_events::EntryType::Label | pith_events::EntryType::SessionInfo
                    )
                })
                .map(|e| e.id().to_owned()),
            _ => None,
        };
        let Some(leaf) = target else {
            self.status("Nothing to label yet");
            return Ok(());
        };
        let label = (!text.is_empty()).then_some(text);
        match self.rt.set_label(&leaf, label).await {
            Ok(()) => match label {
                Some(l) => self.status(&format!("Label set on {leaf}: {l}")),
                None => self.status(&format!("Label cleared on {leaf}")),
            },
            Err(e) => self.error(&e.to_string()),
        }
        Ok(())
    }

    /// `/export [path]`: `.jsonl` writes pi's `exportToJsonl`, anything else the HTML export.
    async fn export(&mut self, args: &str) -> Result<()> {
        let path = path_argument(args);
        let written = if let Some(p) = path.as_deref().filter(|p| p.ends_with(".jsonl")) {
            let session = self.session().await?;
            super::export_jsonl::export_jsonl(&session, &self.env, std::path::Path::new(p))
        } else {
            match self.rt.current_session().await?.session_file {
                Some(file) if file.exists() => {
                    crate::export::export_html(&file, path.as_deref().map(std::path::Path::new))
                }
                _ => Err(anyhow::anyhow!(
                    "the session has no file yet (it is written with the first reply)"
                )),
            }
        };
        match written {
            Ok(p) => self.status(&format!("Session exported to: {}", p.display())),
            Err(e) => self.error(&format!("Failed to export session: {e:#}")),
        }
        Ok(())
    }

    /// `/import <path>`: asks first, as pi does.
    async fn import(&mut self, args: &str) -> Result<()> {
        let Some(path) = path_argument(args) else {
            self.error("Usage: /import <path.jsonl>");
            return Ok(());
        };
        // pi's confirmation, as a Yes/No selector.
        let title = format!("Replace current session with {path}?");
        let items = vec![Item::new("Yes", ""), Item::new("No", "")];
        match view(move || select(&title, items, 0, false)).await {
            Ok(Some(0)) => self.import_confirmed(PathBuf::from(path)).await,
            Ok(_) => {
                self.status("Import cancelled");
                Ok(())
            }
            Err(e) => {
                self.view_failed(&e);
                Ok(())
            }
        }
    }
}

/// The error a full-screen view ends with when a signal asks pith to stop: the mode's own
/// loop quits on the same signal, so nothing is shown for it.
#[derive(Debug)]
pub(super) struct Stopping(&'static str);

impl std::fmt::Display for Stopping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Stopping {}

impl App {
    /// Shows why a full-screen view failed, unless pith is stopping ([`Stopping`]).
    pub(super) fn view_failed(&mut self, e: &anyhow::Error) {
        if e.downcast_ref::<Stopping>().is_none() {
            self.error(&format!("{e:#}"));
        }
    }
}

/// Runs a full-screen view off the async threads; a view that panics is an error like any
/// other, and the interactive mode goes on. SIGTERM or SIGHUP while it is open gives the
/// terminal back and ends the wait with an error at once (the view's thread is left to end
/// with the process), so the mode's own loop, which has seen the signal too, quits.
///
/// Errors: the view failed, or a signal asked pith to stop ([`Stopping`]).
pub(super) async fn view<T: Send + 'static>(
    show: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let shown = tokio::task::spawn_blocking(show);
    tokio::select! {
        shown = shown => shown.unwrap_or_else(|e| Err(anyhow::anyhow!("the view failed: {e}"))),
        _ = term.recv() => {
            crate::tui::terminal::restore();
            Err(Stopping("pith was asked to stop").into())
        }
        _ = hup.recv() => {
            crate::tui::terminal::restore();
            Err(Stopping("the terminal hung up").into())
        }
    }
}

/// pi's `getPathCommandArgument`: the first word, or a `"…"`/`'…'` quoted path.
pub fn path_argument(args: &str) -> Option<String> {
    let args = args.trim_start();
    let first = args.chars().next()?;
    if first == '"' || first == '\'' {
        let end = args[1..].find(first)?;
        return Some(args[1..1 + end].to_owned());
    }
    Some(
        args.split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// Whether `/name` is meant as a command (a word such as `/hepl` or `/skill:x`), not the start
/// of a path such as `/usr/bin` (which has a second `/`) or text such as `/ 2`.
fn looks_like_command(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
}

/// The OSC 52 sequence that puts `text` on the system clipboard (`c`), base64 as the
/// sequence requires; terminals that do not support it ignore it.
fn osc52(text: &str) -> String {
    use base64::Engine;
    format!(
        "\x1b]52;c;{}\x07",
        base64::engine::general_purpose::STANDARD.encode(text)
    )
}

/// pi's description of a thinking level in its selector.
fn level_description(level: ThinkingLevel) -> &'static str {
    match level {
        ThinkingLevel::Off => "No reasoning",
        ThinkingLevel::Minimal => "Very brief reasoning (~1k tokens)",
        ThinkingLevel::Low => "Light reasoning (~2k tokens)",
        ThinkingLevel::Medium => "Moderate reasoning (~8k tokens)",
        ThinkingLevel::High => "Deep reasoning (~16k tokens)",
        ThinkingLevel::Xhigh => "Extra-high reasoning (~32k tokens)",
        ThinkingLevel::Max => "Maximum reasoning",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_may_be_quoted() {
        assert_eq!(path_argument(""), None);
        assert_eq!(path_argument("a.jsonl b"), Some("a.jsonl".into()));
        assert_eq!(
            path_argument("\"my file.jsonl\" x"),
            Some("my file.jsonl".into())
        );
        assert_eq!(path_argument("'unclosed"), None);
    }

    #[test]
    fn words_are_commands_and_paths_are_prompts() {
        assert!(looks_like_command("hepl"));
        assert!(looks_like_command("skill:review"));
        assert!(!looks_like_command("usr/bin/env"));
        assert!(!looks_like_command(""));
        assert!(!looks_like_command("2"));
    }

    #[test]
    fn templates_and_skills_complete_after_the_commands() {
        use pith_actors::resources::{PromptTemplate, Skill};
        let resources = Resources {
            templates: vec![PromptTemplate {
                name: "review".into(),
                description: "Review a file".into(),
                argument_hint: Some("<file>".into()),
                content: String::new(),
                file_path: "/p/review.md".into(),
                source_info: None,
            }],
            skills: vec![Skill {
                name: "pdf".into(),
                description: "PDFs".into(),
                file_path: "/s/pdf/SKILL.md".into(),
                base_dir: "/s/pdf".into(),
                disable_model_invocation: true,
                source_info: None,
            }],
            ..Resources::default()
        };
        let all = completions(&[], &resources, true);
        assert_eq!(all.len(), BUILTIN.len() + 2);
        // pi's argument hints come before a built-in command's description.
        assert!(all.contains(&(
            "model".to_owned(),
            "<provider/model> — Select model (opens selector UI)".to_owned()
        )));
        assert!(all.contains(&(
            "thinking".to_owned(),
            "<level> — Set thinking level".to_owned()
        )));
        assert_eq!(
            all[BUILTIN.len()..],
            [
                ("review".to_owned(), "<file> — Review a file".to_owned()),
                ("skill:pdf".to_owned(), "PDFs".to_owned())
            ]
        );
        // enableSkillCommands: false hides skills from completion only.
        assert_eq!(completions(&[], &resources, false).len(), BUILTIN.len() + 1);
        assert!(is_resource_command(&resources, "skill:pdf"));
        assert!(is_resource_command(&resources, "review"));
        assert!(!is_resource_command(&resources, "skill:nope"));
        assert!(!is_resource_command(&resources, "revie"));
    }

    #[test]
    fn osc52_carries_the_text_in_base64() {
        assert_eq!(osc52("héllo"), "\x1b]52;c;aMOpbGxv\x07");
    }
}
