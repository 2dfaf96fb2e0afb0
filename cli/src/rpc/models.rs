//! The model and thinking level of an rpc session: `set_model`, `cycle_model`,
//! `get_available_models`, `set_thinking_level`, `cycle_thinking_level` as pi's AgentSession
//! does them (spec: agent-and-events.md §9; pi's `setModel`, `cycleModel`,
//! `setThinkingLevel`, `cycleThinkingLevel`).

use std::path::PathBuf;
use std::sync::Arc;

use pith_actors::runtime::RuntimeHandle;
use pith_actors::settings::Settings;
use pith_events::{ModelRef, ThinkingLevel};
use pith_llm::auth::Credentials;
use pith_llm::model::{Api, Model};
use pith_llm::model_registry::{
    DEFAULT_THINKING_LEVEL, ModelRegistry, clamp_thinking_level, supported_thinking_levels,
};
use pith_llm::provider::Provider;
use pith_store::SessionEnv;

use crate::model_choice::Choice;

/// The runtime's model and thinking level as the client sees them. The runtime keeps both
/// for every later session too, so this mirror stays right across switches.
pub struct Models {
    /// The current model (pi's Model object in `get_state`).
    pub current: Model,
    /// The current thinking level, clamped to `current`.
    pub thinking: ThinkingLevel,
    /// Providers built so far, by model: going back to a model reuses its provider, so the
    /// offline model's script is not restarted.
    providers: Vec<(ModelRef, Arc<dyn Provider>)>,
    /// `--faux-script`, for the offline model.
    faux_script: Option<PathBuf>,
    /// `--api-key`, which belongs to the first model's provider.
    api_key: Option<(String, String)>,
    /// Agent dir, clock and ids.
    env: SessionEnv,
    /// The process's cwd: its settings give `defaultThinkingLevel`.
    cwd: PathBuf,
}

impl Models {
    /// The first model, as startup chose it and the provider serving it.
    pub fn new(
        choice: Choice,
        provider: Arc<dyn Provider>,
        api_key: Option<String>,
        faux_script: Option<PathBuf>,
        env: SessionEnv,
        cwd: PathBuf,
    ) -> Models {
        let key = ModelRef::new(&choice.model.provider, &choice.model.id);
        Models {
            api_key: api_key.map(|k| (choice.model.provider.clone(), k)),
            current: choice.model,
            thinking: choice.thinking_level,
            providers: vec![(key, provider)],
            faux_script,
            env,
            cwd,
        }
    }

    fn credentials(&self) -> Credentials {
        let creds = Credentials::load(&self.env.agent_dir);
        match &self.api_key {
            Some((provider, key)) => creds.with_runtime_key(provider, key.clone()),
            None => creds,
        }
    }

    /// Follows the runtime to the model and level its session runs (a resumed session's own).
    pub fn follow(&mut self, model: &ModelRef, level: ThinkingLevel) {
        self.thinking = level;
        if self.current.provider == model.provider && self.current.id == model.id {
            return;
        }
        if let Some(found) =
            ModelRegistry::load(&self.env.agent_dir).find(&model.provider, &model.id)
        {
            self.current = found.clone();
        }
    }

    /// pi's `getAvailable`: the models with a key, and the offline one.
    pub fn available(&self) -> Vec<Model> {
        let registry = ModelRegistry::load(&self.env.agent_dir);
        registry
            .available(&self.credentials())
            .into_iter()
            .cloned()
            .collect()
    }

    /// `set_model`: `provider/id` among the available models.
    ///
    /// Errors: pi's `Model not found: <provider>/<id>`; a provider that cannot be built; the
    /// runtime's errors.
    pub async fn set(
        &mut self,
        rt: &RuntimeHandle,
        provider: &str,
        id: &str,
    ) -> Result<Model, String> {
        let model = self
            .available()
            .into_iter()
            .find(|m| m.provider == provider && m.id == id)
            .ok_or_else(|| format!("Model not found: {provider}/{id}"))?;
        self.switch_to(rt, model.clone()).await?;
        Ok(model)
    }

    /// `cycle_model`: [`ModelRegistry::next_model`] after the current model.
    ///
    /// Errors: as [`Models::set`].
    pub async fn cycle(&mut self, rt: &RuntimeHandle) -> Result<Option<Model>, String> {
        let registry = ModelRegistry::load(&self.env.agent_dir);
        let current = ModelRef::new(&self.current.provider, &self.current.id);
        let Some(next) = registry.next_model(&self.credentials(), &current).cloned() else {
            return Ok(None);
        };
        self.switch_to(rt, next.clone()).await?;
        Ok(Some(next))
    }

    /// pi's `setModel` after the lookup: the runtime's model (recorded as `model_change`), then
    /// the thinking level carried over and clamped to the new model.
    async fn switch_to(&mut self, rt: &RuntimeHandle, model: Model) -> Result<(), String> {
        let key = ModelRef::new(&model.provider, &model.id);
        let provider = match self.providers.iter().find(|(k, _)| *k == key) {
            Some((_, p)) => p.clone(),
            None => {
                let registry = ModelRegistry::load(&self.env.agent_dir);
                let api_key = match model.api {
                    Api::Faux => None,
                    _ => self
                        .credentials()
                        .api_key(&model.provider, registry.configured_key(&model.provider)),
                };
                let choice = Choice {
                    model: model.clone(),
                    api_key,
                    thinking_level: self.thinking,
                };
                let script = match model.api {
                    Api::Faux => self.faux_script.as_deref(),
                    _ => None,
                };
                let p = crate::startup::provider_for(&choice, script, &self.env)
                    .map_err(|e| format!("{e:#}"))?;
                self.providers.push((key.clone(), p.clone()));
                p
            }
        };
        rt.set_model(provider, key)
            .await
            .map_err(|e| e.to_string())?;
        // pi's `_getThinkingLevelForModelSwitch`: a model that cannot think holds no level
        // of its own, so the user's default comes back.
        let carried = if self.current.reasoning {
            Some(self.thinking)
        } else {
            Settings::load(&self.env.agent_dir, &self.cwd)
                .get("defaultThinkingLevel")
                .and_then(|v| v.as_str())
                .map_or(Some(DEFAULT_THINKING_LEVEL), |l| l.parse().ok())
        };
        self.current = model;
        self.set_level(rt, carried).await
    }

    /// `set_thinking_level`: `level` clamped to the model; recorded only when it changes. A
    /// level pi does not know clamps like the lowest one (pi's `clampThinkingLevel`).
    ///
    /// Errors: the runtime's.
    pub async fn set_thinking(&mut self, rt: &RuntimeHandle, level: &str) -> Result<(), String> {
        self.set_level(rt, level.parse().ok()).await
    }

    async fn set_level(
        &mut self,
        rt: &RuntimeHandle,
        level: Option<ThinkingLevel>,
    ) -> Result<(), String> {
        let level = clamp_thinking_level(&self.current, level.unwrap_or_default());
        rt.set_thinking_level(level)
            .await
            .map_err(|e| e.to_string())?;
        self.thinking = level;
        Ok(())
    }

    /// `get_available_thinking_levels` (pi ≥ 0.81): `["off"]` for a model without reasoning,
    /// else the levels its thinking map allows, lowest first.
    pub fn available_thinking_levels(&self) -> Vec<&'static str> {
        if !self.current.reasoning {
            return vec!["off"];
        }
        supported_thinking_levels(&self.current)
            .into_iter()
            .map(ThinkingLevel::as_str)
            .collect()
    }

    /// `cycle_thinking_level`: the next level the model supports; `None` for a model that
    /// cannot think.
    ///
    /// Errors: the runtime's.
    pub async fn cycle_thinking(
        &mut self,
        rt: &RuntimeHandle,
    ) -> Result<Option<ThinkingLevel>, String> {
        if !self.current.reasoning {
            return Ok(None);
        }
        let levels = supported_thinking_levels(&self.current);
        let next = levels
            .iter()
            .position(|l| *l == self.thinking)
            .map_or(0, |i| (i + 1) % levels.len());
        let Some(level) = levels.get(next) else {
            return Ok(None);
        };
        self.set_level(rt, Some(*level)).await?;
        Ok(Some(self.thinking))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_levels_follow_the_models_map() {
        let supported_levels = |m: &Model| -> Vec<&'static str> {
            supported_thinking_levels(m)
                .into_iter()
                .map(ThinkingLevel::as_str)
                .collect()
        };
        let mut model = pith_llm::model_registry::faux_model();
        assert_eq!(supported_levels(&model), ["off"]);
        model.reasoning = true;
        assert_eq!(
            supported_levels(&model),
            ["off", "minimal", "low", "medium", "high"]
        );
        model.thinking_level_map = Some(
            [
                ("xhigh".to_owned(), Some("max".to_owned())),
                ("minimal".to_owned(), None),
            ]
            .into(),
        );
        assert_eq!(
            supported_levels(&model),
            ["off", "low", "medium", "high", "xhigh"]
        );
    }
}
