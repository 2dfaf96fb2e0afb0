//! Changes the user makes to the current session outside a prompt: model, thinking level,
//! name, labels (pi's `setModel`, `setThinkingLevel`, `setSessionName`, `setLabel`).

use std::sync::Arc;

use pith_events::AgentEvent;

use super::{Runtime, RuntimeState, call};
use crate::agent::AgentMsg;
use crate::compactor::CompactorMsg;
use crate::provider::Provider;
use crate::writer::{Append, WriterMsg};

impl Runtime {
    /// Appends at the leaf of the current session; the new entry's id.
    pub(super) async fn append(state: &RuntimeState, append: Append) -> Result<String, String> {
        let Some(sub) = &state.subtree else {
            return Err("no session".into());
        };
        let ids = state.ids();
        call(&sub.writer, |r| WriterMsg::Append(ids, append, r))
            .await
            .unwrap_or_else(|| Err("the session writer did not answer".into()))
    }

    /// pi's `setModel`: the agent and the Compactor use `provider` from now on, later
    /// sessions of this runtime too, and the session records a `model_change`.
    pub(super) async fn set_model(
        state: &mut RuntimeState,
        provider: Arc<dyn Provider>,
        model: (String, String),
    ) -> Result<(), String> {
        Self::append(
            state,
            Append::ModelChange {
                provider: model.0.clone(),
                model_id: model.1.clone(),
            },
        )
        .await?;
        state.config.provider = provider.clone();
        state.config.model = model.clone();
        if let Some(sub) = &state.subtree {
            let _ = sub
                .agent
                .cast(AgentMsg::SetModel(provider.clone(), model.clone()));
            let _ = sub.compactor.cast(CompactorMsg::SetModel(provider, model));
        }
        Ok(())
    }

    /// pi's `setThinkingLevel`: recorded only when it changes; `thinking_level_changed`. The
    /// agent and the Compactor (whose summaries think at the session's level) use it from
    /// now on.
    pub(super) async fn set_thinking_level(
        state: &mut RuntimeState,
        level: String,
    ) -> Result<(), String> {
        if level == state.config.thinking_level {
            return Ok(());
        }
        Self::append(state, Append::ThinkingLevel(level.clone())).await?;
        state.config.thinking_level = level.clone();
        if let Some(sub) = &state.subtree {
            let _ = sub.agent.cast(AgentMsg::SetThinkingLevel(level.clone()));
            let _ = sub
                .compactor
                .cast(CompactorMsg::SetThinkingLevel(level.clone()));
            sub.events.emit(AgentEvent::ThinkingLevelChanged { level });
        }
        Ok(())
    }

    /// pi's `setSessionName`: the trimmed name as a `session_info` entry, then
    /// `session_info_changed`. An empty name is pi's error.
    pub(super) async fn set_session_name(
        state: &mut RuntimeState,
        name: String,
    ) -> Result<(), String> {
        let name = name.trim().to_owned();
        if name.is_empty() {
            return Err("Session name cannot be empty".into());
        }
        Self::append(state, Append::SessionInfo(name.clone())).await?;
        if let Some(sub) = &state.subtree {
            sub.events
                .emit(AgentEvent::SessionInfoChanged { name: Some(name) });
        }
        Ok(())
    }
}
