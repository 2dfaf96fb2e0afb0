//! Replacing the session (`/new`, `/resume`, `/fork`, `/clone`, `/import`) and rebuilding it
//! after a crash (spec: lifecycle.md §7; docs/actors.md).

use std::path::{Path, PathBuf};

use ractor::ActorRef;

use pith_events::{AgentMessage, ExtensionEvent, ForkPosition, SessionStart, StartReason};

use super::open::{Current, from_snapshot, open_target, reopen_when_released};
use super::{Runtime, RuntimeEvent, RuntimeMsg, RuntimeState, SwitchOutcome};
use crate::RuntimeError;
use crate::agent::AgentMsg;
use crate::envelope::{Envelope, Origin};

impl Runtime {
    pub(super) async fn switch(
        me: &ActorRef<Envelope<RuntimeMsg>>,
        state: &mut RuntimeState,
        from: &Origin,
        start: SessionStart,
    ) -> Result<SwitchOutcome, RuntimeError> {
        let snapshot = match &state.subtree {
            Some(sub) => sub.writer.snapshot(from).await?,
            None => return Err(RuntimeError::NoSession),
        };
        let env = state.config.env.clone();
        let current = {
            let sub = state.subtree.as_ref().ok_or(RuntimeError::NoSession)?;
            Current {
                snapshot,
                file: sub.session_file.clone(),
                dir: sub.session_dir.clone(),
                cwd: sub.cwd.clone(),
            }
        };
        let snapshot = &current.snapshot;
        // Where a fork/clone starts, validated before anyone is asked (pi: after; the event
        // would then announce an impossible fork).
        let mut selected_text = None;
        let fork_target: Option<Option<String>> = match &start {
            SessionStart::Fork { entry_id } => {
                let entry = snapshot
                    .entries()
                    .iter()
                    .rev()
                    .find(|e| e.id() == entry_id)
                    .ok_or(RuntimeError::InvalidForkEntry)?;
                let message = entry.decode_message().and_then(Result::ok);
                let Some(AgentMessage::User(user)) = message else {
                    return Err(RuntimeError::InvalidForkEntry);
                };
                selected_text = Some(user.content.joined_text(""));
                Some(entry.parent().id().map(str::to_owned))
            }
            SessionStart::Clone => match snapshot.tree.leaf_id() {
                Some(id) => Some(Some(id.to_owned())),
                None => return Err(RuntimeError::NothingToClone),
            },
            _ => None,
        };
        let veto = match &start {
            SessionStart::New => ExtensionEvent::SessionBeforeSwitch {
                reason: StartReason::New,
                target_session_file: None,
            },
            SessionStart::Resume(p) | SessionStart::Import(p) => {
                ExtensionEvent::SessionBeforeSwitch {
                    reason: StartReason::Resume,
                    target_session_file: Some(p.clone()),
                }
            }
            SessionStart::Fork { entry_id } => ExtensionEvent::SessionBeforeFork {
                entry_id: entry_id.clone(),
                position: ForkPosition::Before,
            },
            SessionStart::Clone => ExtensionEvent::SessionBeforeFork {
                entry_id: fork_target.clone().flatten().unwrap_or_default(),
                position: ForkPosition::At,
            },
        };
        if let Some(reason) = Self::ask_extensions(state, from, veto).await {
            return Ok(SwitchOutcome {
                cancelled: Some(reason),
                ..SwitchOutcome::default()
            });
        }
        // Nothing accepted is lost (issue 13): the current run is aborted, then every prompt,
        // steering and follow-up message it accepted and did not run yet runs here, in the
        // session that accepted it, before the switch goes on. What they wrote is in the copy
        // a fork or a failed switch starts from.
        state.cancel_summaries();
        let mut current = current;
        if let Some(sub) = &state.subtree {
            let _ = from
                .wait(&sub.agent, "agent", |reply| AgentMsg::Settle { reply })
                .await;
            current.snapshot = sub.writer.snapshot(from).await?;
        }
        // Import copies before the switch (pi: the copy exists even if opening fails).
        let import_dest = match &start {
            SessionStart::Import(src) => {
                let src =
                    std::path::absolute(src).map_err(|e| pith_store::Error::io(src.clone(), e))?;
                if !src.is_file() {
                    return Err(RuntimeError::ImportNotFound(src));
                }
                let dir = current
                    .dir
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(&state.config.cwd));
                pith_store::dirs::ensure_dir(&dir)?;
                let dest = dir.join(src.file_name().unwrap_or_default());
                if dest != src {
                    std::fs::copy(&src, &dest)
                        .map_err(|e| pith_store::Error::io(dest.clone(), e))?;
                }
                Some(dest)
            }
            _ => None,
        };
        let reason = start.reason();
        let shutdown = ExtensionEvent::SessionShutdown {
            reason,
            target_session_file: None,
        };
        Self::tell_extensions(state, from, shutdown).await;
        Self::stop_subtree(state, from).await;
        let opened = open_target(
            &state.config,
            &current,
            &start,
            import_dest.as_deref(),
            fork_target,
        );
        let current_file = current.file.clone();
        let (session, failure) = match opened {
            Ok(s) => (s, None),
            // The old session comes back: a failed switch changes nothing.
            Err(e) => (current.restore(&env), Some(e)),
        };
        let session_file = session.session_file().map(Path::to_owned);
        let start_reason = if failure.is_some() {
            StartReason::Restart
        } else {
            reason
        };
        Self::spawn_subtree(me, state, from, session, start_reason, current_file).await?;
        match failure {
            Some(e) => Err(e),
            None => Ok(SwitchOutcome {
                cancelled: None,
                session_file,
                selected_text,
            }),
        }
    }

    pub(super) async fn restart(
        me: &ActorRef<Envelope<RuntimeMsg>>,
        state: &mut RuntimeState,
        from: &Origin,
        failed: &str,
        why: String,
    ) {
        let (file, dir, cwd) = match &state.subtree {
            Some(s) => (s.session_file.clone(), s.session_dir.clone(), s.cwd.clone()),
            None => return,
        };
        let snapshot = Self::stop_subtree(state, from).await;
        let env = state.config.env.clone();
        let session = match (&file, snapshot) {
            (Some(f), _) if f.exists() => reopen_when_released(f, dir.as_deref(), &cwd, &env).await,
            (_, Some(s)) => Ok(from_snapshot(s, &cwd, dir.clone(), file.clone(), &env)),
            (_, None) => Err(RuntimeError::NothingToRebuild),
        };
        match session {
            Ok(session) => {
                match Self::spawn_subtree(me, state, from, session, StartReason::Restart, file)
                    .await
                {
                    Ok(()) => state.notify(RuntimeEvent::Notice(format!(
                        "The {failed} actor failed ({why}); the session was rebuilt from its log."
                    ))),
                    Err(e) => state.notify(RuntimeEvent::Notice(format!(
                        "The {failed} actor failed ({why}); restarting the session failed: {e}"
                    ))),
                }
            }
            Err(e) => state.notify(RuntimeEvent::Notice(format!(
                "The {failed} actor failed ({why}) and the session could not be rebuilt: {e}"
            ))),
        }
    }
}
