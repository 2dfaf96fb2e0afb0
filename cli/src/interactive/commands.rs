//! The slash commands (pi's `onSubmit` handlers and `BUILTIN_SLASH_COMMANDS`), plus the ones
//! pith adds: `/thinking`, `/label`, `/help`, `/exit`. A `/name` no built-in command and no
//! extension command has is sent to the model as text, as pi does.

use std::path::PathBuf;

use anyhow::Result;

use pith_events::{EntryType, SessionStart};
use pith_events::{ModelRef, ThinkingLevel};
use pith_llm::model_registry::{clamp_thinking_level, supported_thinking_levels};

use super::app::{App, Flow, Question};
use super::footer::session_info;
use super::style;

/// Built-in commands and their `/help` line, in pi's order where pi has them.
pub const BUILTIN: [(&str, &str); 17] = [
    (
        "model",
        "Switch model (/model provider/id), or list the models",
    ),
    (
        "thinking",
        "Set the thinking level (/thinking off|minimal|low|medium|high|xhigh)",
    ),
    (
        "export",
        "Export session (HTML default, or specify path: .html/.jsonl)",
    ),
    ("import", "Import and resume a session from a JSONL file"),
    ("name", "Set session display name"),
    ("session", "Show session info and stats"),
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
    ("new", "Start a new session"),
    ("compact", "Manually compact the session context"),
    ("resume", "Resume a different session"),
    (
        "mcp",
        "Show MCP servers and their tools (/mcp reconnect <server>)",
    ),
    ("help", "Show commands and keys"),
    ("quit", "Quit pith"),
    ("exit", "Quit pith"),
];

/// Commands that replace or rewrite the session: they wait until nothing runs.
const NEED_IDLE: [&str; 7] = [
    "new", "resume", "fork", "clone", "tree", "compact", "import",
];

/// The keys, for `/help` and the startup header.
pub const KEYS: [(&str, &str); 7] = [
    ("enter", "send; while a reply streams: steer"),
    ("alt+enter", "queue a follow-up while a reply streams"),
    ("esc", "interrupt the reply or the running !command"),
    (
        "ctrl+c",
        "interrupt and clear the line; twice quickly to exit",
    ),
    ("ctrl+d", "exit (empty line)"),
    ("tab", "complete /commands"),
    ("up/down", "history"),
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
                if let Some(out) = self.rt.command(name, args).await? {
                    self.screen.print_lines(&[String::new(), out]);
                }
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
            "tree" => {
                self.tree().await?;
                self.footer().await?;
            }
            "compact" => self.compact(args).await?,
            "name" => self.name(args).await?,
            "session" => self.session_cmd().await?,
            "model" => self.model(args).await?,
            "thinking" => self.thinking(args).await?,
            "label" => self.label(args).await?,
            "export" => self.export(args).await?,
            "import" => self.import(args),
            "mcp" => self.mcp(args),
            _ => return Ok(None),
        }
        Ok(Some(Flow::Go))
    }

    /// The answer to a question the editor asked.
    ///
    /// Errors: the runtime stopped answering.
    pub(super) async fn answer(&mut self, question: Question, text: &str) -> Result<Flow> {
        match question {
            Question::Fork(ids) => match text.parse::<usize>() {
                Ok(n) if (1..=ids.len()).contains(&n) => {
                    self.fork_at(&ids[n - 1]).await?;
                    self.footer().await?;
                }
                _ => self.status("Fork cancelled"),
            },
            Question::Import(path) => {
                if matches!(text.to_lowercase().as_str(), "y" | "yes") {
                    let shown = path.display().to_string();
                    if self.switch(SessionStart::Import(path)).await?.is_some() {
                        self.status(&format!("Session imported from: {shown}"));
                        self.footer().await?;
                    }
                } else {
                    self.status("Import cancelled");
                }
            }
        }
        Ok(Flow::Go)
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
        lines.push(format!(
            "{} {}",
            style::accent(&format!("{:<10}", "!cmd")),
            "run a shell command (!!cmd: keep it out of the context)"
        ));
        lines.extend([String::new(), style::bold("Keys")]);
        for (key, what) in KEYS {
            lines.push(format!("{} {what}", style::accent(&format!("{key:<10}"))));
        }
        self.screen.print_lines(&lines);
    }

    /// Replaces the session; `Some(new file)` when it happened, after showing its history.
    /// Failures and cancellations are shown.
    async fn switch(&mut self, start: SessionStart) -> Result<Option<Option<PathBuf>>> {
        match self.rt.switch(start).await {
            Ok(outcome) => {
                if let Some(reason) = outcome.cancelled {
                    self.status(&format!("Cancelled: {reason}"));
                    return Ok(None);
                }
                self.drain_events();
                self.ext_commands = self.rt.commands().await?;
                let mut names: Vec<(String, String)> = BUILTIN
                    .iter()
                    .map(|(n, d)| (n.to_string(), d.to_string()))
                    .collect();
                names.extend(
                    self.ext_commands
                        .iter()
                        .map(|c| (c.name.clone(), c.description.clone())),
                );
                self.editor.set_commands(names);
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
            Err(e) => self.error(&format!("{e:#}")),
        }
        Ok(())
    }

    /// `/fork [n]`: pi's selector of every user message with text, in file order across all
    /// branches, the last preselected (spec: lifecycle.md §7.4), as a numbered list.
    async fn fork(&mut self, args: &str) -> Result<()> {
        let session = self.session().await?;
        let mut ids = Vec::new();
        let mut lines = vec![String::new()];
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
            lines.push(format!(
                "{} {}",
                style::accent(&format!("{:>3}.", ids.len())),
                super::screen::truncate(first, super::screen::columns().saturating_sub(6))
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
        self.screen.print_lines(&lines);
        self.next_initial = ids.len().to_string();
        self.question = Some(Question::Fork(ids));
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

    async fn compact(&mut self, focus: &str) -> Result<()> {
        let session = self.session().await?;
        let messages = session
            .entries()
            .iter()
            .filter(|e| e.kind() == &EntryType::Message)
            .count();
        if messages < 2 {
            self.warn("Nothing to compact (no messages yet)");
            return Ok(());
        }
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
        let context = self.rt.context().await?;
        let lines = session_info(
            name.as_deref(),
            current.session_file.as_deref(),
            &current.session_id,
            &context.messages,
        );
        self.screen.print_lines(&lines);
        Ok(())
    }

    /// `/mcp`: each server's state and tools; `/mcp reconnect <server>` reopens one.
    fn mcp(&mut self, args: &str) {
        let Some(hub) = self.mcp.clone() else {
            self.status("No MCP servers (add one with: pith mcp add)");
            return;
        };
        if let Some(name) = args.strip_prefix("reconnect") {
            let name = name.trim();
            if hub.reconnect(name) {
                self.status(&format!("Reconnecting MCP server {name}"));
            } else {
                self.warn(&format!("No MCP server named {name:?}"));
            }
            return;
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
                match &status.state {
                    pith_mcp::ServerState::Connected =>
                        format!("connected, {} tools", status.tools.len()),
                    other => other.to_string(),
                },
                status.target
            ));
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
        if pattern.is_empty() {
            crate::model_choice::list_models(&self.env.agent_dir, None)?;
            let current = self.choice.model.qualified_id();
            self.status(&format!(
                "Current model: {current}. Switch with /model provider/id"
            ));
            return Ok(());
        }
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
        self.choice = choice;
        self.status(&format!("Model: {id}"));
        Ok(())
    }

    async fn thinking(&mut self, level: &str) -> Result<()> {
        let model = &self.choice.model;
        if level.is_empty() {
            let supported: Vec<&str> = supported_thinking_levels(model)
                .into_iter()
                .map(ThinkingLevel::as_str)
                .collect();
            let text = format!(
                "Thinking level: {} (available: {})",
                self.choice.thinking_level,
                supported.join(", ")
            );
            self.status(&text);
            return Ok(());
        }
        let Ok(asked) = level.parse::<ThinkingLevel>() else {
            self.error(&format!(
                "unknown thinking level {level}: use one of {}",
                ThinkingLevel::list()
            ));
            return Ok(());
        };
        let clamped = clamp_thinking_level(model, asked);
        match self.rt.set_thinking_level(clamped).await {
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
        let (mut tree, _) = pith_store::SessionTree::new(snapshot.entries);
        tree.set_leaf(snapshot.leaf);
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
    fn import(&mut self, args: &str) {
        let Some(path) = path_argument(args) else {
            self.error("Usage: /import <path.jsonl>");
            return;
        };
        self.screen.print_lines(&[
            String::new(),
            format!("Replace current session with {path}?"),
        ]);
        self.question = Some(Question::Import(PathBuf::from(path)));
    }
}

/// Runs a full-screen view off the async threads; a view that panics is an error like any
/// other, and the interactive mode goes on.
pub(super) async fn view<T: Send + 'static>(
    show: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(show)
        .await
        .unwrap_or_else(|e| Err(anyhow::anyhow!("the view failed: {e}")))
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
}
