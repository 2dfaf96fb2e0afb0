//! Which model and thinking level a session runs with when its subtree starts (spec:
//! lifecycle.md §6, pi's `createAgentSession`): a session that already has messages goes on
//! with the model and level recorded on its branch (`-c`, `--session`, `/resume`, `/fork`,
//! `/clone`, a restart after a crash); a fresh one takes the runtime's. The writes pi makes at
//! session start follow from the choice (`Chosen::writes`).

use std::sync::Arc;

use pith_events::{EntryType, ModelRef, ThinkingLevel};
use pith_llm::provider::Provider;
use pith_store::Session;

use crate::settings::Settings;
use crate::writer::Append;

/// Where the runtime finds the model a resumed session last used (pi's `ModelRuntime`
/// lookups). The CLI answers from `models.json`, the built-in table and the user's keys.
pub trait ModelSource: Send + Sync {
    /// The provider serving `model` when the model is known and has a key (pi's
    /// `getModel(...) && hasConfiguredAuth(...)`); `None` otherwise.
    fn provider(&self, model: &ModelRef) -> Option<Arc<dyn Provider>>;

    /// `level` clamped to what `model` supports (pi's `clampThinkingLevel`); an unknown model
    /// keeps `level`.
    fn clamp(&self, model: &ModelRef, level: ThinkingLevel) -> ThinkingLevel;
}

/// How a starting session chooses its model and thinking level.
#[derive(Clone, Default)]
pub struct Selection {
    /// Finds a resumed session's model; `None`: only the runtime's own model is known, and a
    /// session recorded with another one falls back to it (with pi's notice).
    pub models: Option<Arc<dyn ModelSource>>,
    /// `--model`/`--provider` was given: every session runs the runtime's model (pi passes the
    /// CLI model to every runtime creation).
    pub pinned_model: bool,
    /// `--thinking` (or a `:level` suffix of `--model`): every session runs at this level,
    /// recorded when its branch says otherwise (pi's `setThinkingLevel` after creation).
    pub pinned_thinking: Option<ThinkingLevel>,
}

/// The choice for one session.
pub(crate) struct Chosen {
    /// The provider serving `model`.
    pub provider: Arc<dyn Provider>,
    /// The model.
    pub model: ModelRef,
    /// The thinking level, clamped to `model`.
    pub thinking_level: ThinkingLevel,
    /// pi's `Could not restore model …. Using …` when the recorded model is unavailable.
    pub notice: Option<String>,
    /// The session start entries pi appends (spec: lifecycle.md §6 step 4).
    pub writes: Vec<Append>,
}

/// The runtime's current model, provider and level, and how sessions choose.
pub(crate) struct Current<'a> {
    /// The provider of `model`.
    pub provider: &'a Arc<dyn Provider>,
    /// The model new sessions start with.
    pub model: &'a ModelRef,
    /// The level new sessions start with.
    pub thinking_level: ThinkingLevel,
    /// The rules.
    pub selection: &'a Selection,
}

/// Chooses the model and level of `session` (spec: lifecycle.md §6 steps 1–4).
pub(crate) fn choose(session: &Session, current: &Current<'_>, settings: &Settings) -> Chosen {
    let context = session.build_context();
    let has_existing = !context.messages.is_empty();
    let recorded_level = session
        .tree()
        .get_branch(None)
        .iter()
        .rev()
        .find(|e| e.kind() == &EntryType::ThinkingLevelChange)
        .map(|_| {
            context
                .thinking_level
                .as_ref()
                .and_then(|v| v.as_str())
                .and_then(|l| l.parse::<ThinkingLevel>().ok())
        });
    let selection = current.selection;
    if !has_existing {
        let level = selection.pinned_thinking.unwrap_or(current.thinking_level);
        return Chosen {
            provider: current.provider.clone(),
            model: current.model.clone(),
            thinking_level: level,
            notice: None,
            writes: vec![
                Append::ModelChange(current.model.clone()),
                Append::ThinkingLevel(level),
            ],
        };
    }
    let mut notice = None;
    // The last `model_change` or assistant message on the branch (pi's `getBranchSelection`).
    let recorded = context.model.as_ref().and_then(|m| {
        let provider = m.provider.as_ref()?.as_str()?;
        let id = m.model_id.as_ref()?.as_str()?;
        Some(ModelRef::new(provider, id))
    });
    let (provider, model) = match &recorded {
        Some(recorded) if !selection.pinned_model && recorded != current.model => {
            match selection.models.as_ref().and_then(|m| m.provider(recorded)) {
                Some(provider) => (provider, recorded.clone()),
                None => {
                    notice = Some(format!(
                        "Could not restore model {}/{}. Using {}/{}",
                        recorded.provider, recorded.id, current.model.provider, current.model.id
                    ));
                    (current.provider.clone(), current.model.clone())
                }
            }
        }
        _ => (current.provider.clone(), current.model.clone()),
    };
    let wanted = match (selection.pinned_thinking, recorded_level) {
        (Some(level), _) => level,
        (None, Some(Some(level))) => level,
        // A recorded level pith cannot read, or none: the user's default.
        (None, Some(None) | None) => settings.default_thinking_level(),
    };
    let level = match &selection.models {
        Some(models) => models.clamp(&model, wanted),
        None => wanted,
    };
    let writes = match recorded_level {
        None => vec![Append::ThinkingLevel(level)],
        Some(recorded) if selection.pinned_thinking.is_some() && recorded != Some(level) => {
            vec![Append::ThinkingLevel(level)]
        }
        Some(_) => Vec::new(),
    };
    Chosen {
        provider,
        model,
        thinking_level: level,
        notice,
        writes,
    }
}
