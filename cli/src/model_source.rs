//! The runtime's view of the models this user can run: what a resumed session's recorded model
//! resolves to (spec: lifecycle.md §6 step 2, pi's `getModel` + `hasConfiguredAuth`), looked up
//! in `models.json`, pi's built-in table and the user's keys when a session starts.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Result, bail};

use pith_actors::selection::ModelSource;
use pith_actors::settings::Settings;
use pith_events::{ModelRef, ThinkingLevel};
use pith_llm::auth::Credentials;
use pith_llm::faux::{Faux, read_script};
use pith_llm::model::{Api, Model};
use pith_llm::model_registry::{ModelRegistry, clamp_thinking_level};
use pith_llm::provider::Provider;
use pith_store::SessionEnv;

use crate::model_choice::{Choice, key_for};

/// Models from the agent dir, with the providers built so far: going back to a model reuses
/// its provider, so the offline model's script goes on where it was.
pub struct RegistryModels {
    env: SessionEnv,
    /// `--faux-script`, played by the offline model.
    faux_script: Option<PathBuf>,
    /// `--api-key`, which belongs to the first model's provider.
    api_key: Option<(String, String)>,
    providers: Mutex<Vec<(ModelRef, Arc<dyn Provider>)>>,
}

impl RegistryModels {
    /// The models of `env`'s agent dir; `first` is the provider startup built for `choice`.
    pub fn new(
        env: SessionEnv,
        choice: &Choice,
        first: Arc<dyn Provider>,
        api_key: Option<String>,
        faux_script: Option<PathBuf>,
    ) -> RegistryModels {
        let key = ModelRef::new(&choice.model.provider, &choice.model.id);
        RegistryModels {
            env,
            faux_script,
            api_key: api_key.map(|k| (choice.model.provider.clone(), k)),
            providers: Mutex::new(vec![(key, first)]),
        }
    }

    /// The model `model` names, and its key, when it is known and usable.
    pub fn lookup(&self, model: &ModelRef) -> Option<(Model, Option<String>)> {
        let registry = ModelRegistry::load(&self.env.agent_dir);
        let found = registry.find(&model.provider, &model.id)?.clone();
        let mut creds = Credentials::load(&self.env.agent_dir);
        if let Some((provider, key)) = &self.api_key {
            creds = creds.with_runtime_key(provider, key.clone());
        }
        let key = key_for(&found, &creds, &registry, &self.env.agent_dir).ok()?;
        Some((found, key))
    }
}

impl ModelSource for RegistryModels {
    fn provider(&self, model: &ModelRef) -> Option<Arc<dyn Provider>> {
        let mut providers = self.providers.lock().ok()?;
        if let Some((_, p)) = providers.iter().find(|(k, _)| k == model) {
            return Some(p.clone());
        }
        let (found, api_key) = self.lookup(model)?;
        let script = match found.api {
            Api::Faux => self.faux_script.as_deref(),
            _ => None,
        };
        let choice = Choice {
            model: found,
            api_key,
            thinking_level: ThinkingLevel::Off,
        };
        let provider = provider_for(&choice, script, &self.env).ok()?;
        providers.push((model.clone(), provider.clone()));
        Some(provider)
    }

    fn clamp(&self, model: &ModelRef, level: ThinkingLevel) -> ThinkingLevel {
        let registry = ModelRegistry::load(&self.env.agent_dir);
        match registry.find(&model.provider, &model.id) {
            Some(m) => clamp_thinking_level(m, level),
            None => level,
        }
    }
}

/// The provider serving `choice` (faux plays `faux_script`, if any). A real model's
/// `models.json` header values are resolved (pi 1.6.0's rule, see
/// `pith_llm::auth::resolve_config_value`), and the provider retries requests as the
/// `retry.provider.*` settings of the agent directory and the current directory say (none by
/// default, as pi 1.6.0).
///
/// Errors: a `--faux-script` with a real model; a header value that cannot be resolved; a
/// provider that cannot be built.
pub fn provider_for(
    choice: &crate::model_choice::Choice,
    faux_script: Option<&Path>,
    env: &SessionEnv,
) -> Result<Arc<dyn Provider>> {
    Ok(match choice.model.api {
        Api::Faux => {
            let script = match faux_script {
                Some(p) => read_script(p)?,
                None => Vec::new(),
            };
            Arc::new(Faux::new(script, env.clock.clone()))
        }
        _ => {
            if faux_script.is_some() {
                bail!(
                    "--faux-script plays replies of the offline model: use it with --model faux/faux-1"
                );
            }
            let mut model = choice.model.clone();
            pith_llm::auth::resolve_model_headers(&mut model)?;
            let cwd = std::env::current_dir().unwrap_or_default();
            let mut options = pith_llm::providers::ProviderOptions::default();
            options.apply_retry(&Settings::load(&env.agent_dir, &cwd).provider_retry());
            pith_llm::providers::provider_with(model, choice.api_key.clone(), options)?
        }
    })
}
