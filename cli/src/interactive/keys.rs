//! pi's app keys in the interactive mode (Ctrl-L, Ctrl-P, Shift-Tab, Ctrl-T, Ctrl-O, Esc Esc)
//! and the queue Esc gives back to the editor.

use anyhow::Result;

use super::app::{App, Flow};
use super::editor::KeyAction;

impl App {
    /// pi's app keys.
    ///
    /// Errors: the runtime stopped answering.
    pub(super) async fn key_action(&mut self, action: KeyAction) -> Result<Flow> {
        match action {
            KeyAction::SelectModel => return Ok(self.command("/model").await?.unwrap_or(Flow::Go)),
            KeyAction::Tree => {
                // pi's `doubleEscapeAction`: /tree (the default), /fork, or nothing.
                use super::settings_command::DoubleEscape;
                let cwd = self.rt.current_session().await?.cwd;
                let settings = pith_actors::settings::Settings::load(
                    &self.env.agent_dir,
                    std::path::Path::new(&cwd),
                );
                let command = match DoubleEscape::of(&settings) {
                    DoubleEscape::Nothing => return Ok(Flow::Go),
                    DoubleEscape::Fork => "/fork",
                    DoubleEscape::Tree => "/tree",
                };
                return Ok(self.command(command).await?.unwrap_or(Flow::Go));
            }
            KeyAction::NewSession => return Ok(self.command("/new").await?.unwrap_or(Flow::Go)),
            KeyAction::Fork => return Ok(self.command("/fork").await?.unwrap_or(Flow::Go)),
            KeyAction::Resume => return Ok(self.command("/resume").await?.unwrap_or(Flow::Go)),
            KeyAction::CycleModel => self.cycle_model().await?,
            KeyAction::CycleThinking => self.cycle_thinking().await?,
            // pi's toggles change every message shown: the transcript is printed again.
            KeyAction::ToggleThinking => {
                self.transcript.hide_thinking = !self.transcript.hide_thinking;
                // Saved as pi's `setHideThinkingBlock` saves it.
                let hidden = serde_json::Value::Bool(self.transcript.hide_thinking);
                if let Err(e) = self.rt.set_setting("hideThinkingBlock", hidden).await {
                    self.warn(&e.to_string());
                }
                let status = if self.transcript.hide_thinking {
                    "Thinking blocks: hidden"
                } else {
                    "Thinking blocks: visible"
                };
                self.screen.toggle(
                    self.transcript.hide_thinking,
                    self.transcript.expand_tools,
                    Some(status),
                );
            }
            KeyAction::ExpandOutput => {
                self.transcript.expand_tools = !self.transcript.expand_tools;
                // pi's `setToolsExpanded` status, word for word.
                let status = if self.transcript.expand_tools {
                    "Tool output: expanded"
                } else {
                    "Tool output: collapsed"
                };
                self.screen.toggle(
                    self.transcript.hide_thinking,
                    self.transcript.expand_tools,
                    Some(status),
                );
            }
        }
        Ok(Flow::Go)
    }

    /// Ctrl-P: the next model with a key (pi's `cycleModel("forward")` over the available
    /// models, [`pith_llm::model_registry::ModelRegistry::next_model`]).
    async fn cycle_model(&mut self) -> Result<()> {
        let registry = pith_llm::model_registry::ModelRegistry::load(&self.env.agent_dir);
        let creds = pith_llm::auth::Credentials::load(&self.env.agent_dir);
        let current =
            pith_events::ModelRef::new(&self.choice.model.provider, &self.choice.model.id);
        let Some(next) = registry.next_model(&creds, &current) else {
            self.status("Only one model available");
            return Ok(());
        };
        let target = format!("{}/{}", next.provider, next.id);
        self.command(&format!("/model {target}")).await?;
        Ok(())
    }

    /// Shift-Tab: the next thinking level the model supports (pi's `cycleThinkingLevel`).
    async fn cycle_thinking(&mut self) -> Result<()> {
        let levels = pith_llm::model_registry::supported_thinking_levels(&self.choice.model);
        if levels.len() < 2 {
            self.status("Current model does not support thinking");
            return Ok(());
        }
        let next = levels
            .iter()
            .position(|l| *l == self.choice.thinking_level)
            .map_or(0, |i| (i + 1) % levels.len());
        self.command(&format!("/thinking {}", levels[next].as_str()))
            .await?;
        Ok(())
    }

    /// Takes the queued steering and follow-ups out of the agent before Esc aborts the run
    /// (pi's `restoreQueuedMessagesToEditor`): the editor holds `restored` already; one
    /// queued after the editor looked is shown so it can be typed again, never run unasked.
    pub(super) async fn restore_queue(&mut self, restored: &[String]) -> Result<()> {
        let taken = self.rt.clear_queue().await?;
        let mut in_editor = restored.to_vec();
        for text in taken.steering.iter().chain(&taken.follow_up) {
            match in_editor.iter().position(|r| r == text) {
                Some(at) => {
                    in_editor.remove(at);
                }
                None => self.warn(&format!("Not sent (queued as Esc was pressed): {text}")),
            }
        }
        Ok(())
    }
}
