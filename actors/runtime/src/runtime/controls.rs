//! Changes the user makes to the current session outside a prompt: model, thinking level,
//! name, labels (pi's `setModel`, `setThinkingLevel`, `setSessionName`, `setLabel`).

use std::sync::Arc;

use pith_events::{AgentEvent, ModelRef, ThinkingLevel};

use super::{Runtime, RuntimeState};
use crate::RuntimeError;
use crate::agent::AgentMsg;
use crate::compactor::CompactorMsg;
use crate::envelope::Origin;
use crate::tree_navigator::NavigatorMsg;
use crate::writer::Append;
use pith_llm::provider::Provider;

impl Runtime {
    /// Appends at the leaf of the current session; the new entry's id.
    pub(super) async fn append(
        state: &RuntimeState,
        from: &Origin,
        append: Append,
    ) -> Result<String, RuntimeError> {
        let Some(sub) = &state.subtree else {
            return Err(RuntimeError::NoSession);
        };
        sub.writer.append(from, append).await
    }

    /// pi's `setModel`: the agent, the Compactor and the TreeNavigator use `provider` from now
    /// on, later sessions of this runtime too, and the session records a `model_change`.
    pub(super) async fn set_model(
        state: &mut RuntimeState,
        from: &Origin,
        provider: Arc<dyn Provider>,
        model: ModelRef,
    ) -> Result<(), RuntimeError> {
        Self::append(state, from, Append::ModelChange(model.clone())).await?;
        state.config.provider = provider.clone();
        state.config.model = model.clone();
        if let Some(sub) = &mut state.subtree {
            sub.model = model.clone();
            from.cast(
                &sub.agent,
                AgentMsg::SetModel {
                    provider: provider.clone(),
                    model: model.clone(),
                },
            );
            from.cast(
                &sub.compactor,
                CompactorMsg::SetModel {
                    provider: provider.clone(),
                    model: model.clone(),
                },
            );
            from.cast(&sub.navigator, NavigatorMsg::SetModel { provider, model });
        }
        Ok(())
    }

    /// pi's `setThinkingLevel`: recorded only when it changes; `thinking_level_changed`. The
    /// agent and the Compactor (whose summaries think at the session's level) use it from
    /// now on.
    pub(super) async fn set_thinking_level(
        state: &mut RuntimeState,
        from: &Origin,
        level: ThinkingLevel,
    ) -> Result<(), RuntimeError> {
        let running = state
            .subtree
            .as_ref()
            .map_or(state.config.thinking_level, |s| s.thinking_level);
        if level == running {
            return Ok(());
        }
        Self::append(state, from, Append::ThinkingLevel(level)).await?;
        state.config.thinking_level = level;
        if let Some(sub) = &mut state.subtree {
            sub.thinking_level = level;
            from.cast(&sub.agent, AgentMsg::SetThinkingLevel { level });
            from.cast(&sub.compactor, CompactorMsg::SetThinkingLevel { level });
            sub.events.emit(AgentEvent::ThinkingLevelChanged { level });
        }
        Ok(())
    }

    /// Saves a setting ([`crate::settings::Settings::save_global`]) and hands the session
    /// cwd's settings, read again, to the agent (queue modes, retries) and the Compactor.
    pub(super) fn set_setting(
        state: &mut RuntimeState,
        from: &Origin,
        path: &str,
        value: serde_json::Value,
    ) -> Result<(), RuntimeError> {
        let agent_dir = state.config.env.agent_dir.clone();
        crate::settings::Settings::save_global(&agent_dir, path, value)?;
        if let Some(sub) = &state.subtree {
            let settings =
                crate::settings::Settings::load(&agent_dir, std::path::Path::new(&sub.cwd));
            from.cast(
                &sub.compactor,
                CompactorMsg::SetSettings {
                    settings: settings.compaction(),
                },
            );
            from.cast(&sub.agent, AgentMsg::SetSettings { settings });
        }
        Ok(())
    }

    /// pi's `setSessionName`: the name as stored ([`pith_store::session::stored_session_name`])
    /// as a `session_info` entry, then `session_info_changed` with it. An empty name is pi's
    /// error.
    pub(super) async fn set_session_name(
        state: &mut RuntimeState,
        from: &Origin,
        name: String,
    ) -> Result<(), RuntimeError> {
        let name = pith_store::session::stored_session_name(&name);
        if name.is_empty() {
            return Err(RuntimeError::EmptySessionName);
        }
        Self::append(state, from, Append::SessionInfo { name: name.clone() }).await?;
        if let Some(sub) = &state.subtree {
            sub.events
                .emit(AgentEvent::SessionInfoChanged { name: Some(name) });
        }
        Ok(())
    }
}
