//! Replacing the session (`/new`, `/resume`, `/fork`, `/clone`, `/import`) and rebuilding it
//! after a crash (spec: lifecycle.md §7; docs/actors.md).

use std::path::{Path, PathBuf};

use ractor::ActorRef;

use pith_events::{AgentMessage, ExtensionEvent, ForkPosition, SessionStart, StartReason};
use pith_store::{Leaf, OpenMode, Session, SessionEnv};

use super::*;

impl Runtime {
    pub(super) async fn switch(
        me: &ActorRef<RuntimeMsg>,
        state: &mut RuntimeState,
        start: SessionStart,
    ) -> Result<SwitchOutcome, String> {
        let snapshot = match &state.subtree {
            Some(sub) => call(&sub.writer, |r| {
                WriterMsg::Snapshot(TraceIds::root(0, "Runtime"), r)
            })
            .await
            .ok_or("the session writer did not answer")?,
            None => return Err("no session".into()),
        };
        let env = state.config.env.clone();
        let (current_file, current_dir, current_cwd) = {
            let sub = state.subtree.as_ref().ok_or("no session")?;
            (
                sub.session_file.clone(),
                sub.session_dir.clone(),
                sub.cwd.clone(),
            )
        };
        // Where a fork/clone starts, validated before anyone is asked (pi: after; the event
        // would then announce an impossible fork).
        let mut selected_text = None;
        let fork_target: Option<Option<String>> = match &start {
            SessionStart::Fork { entry_id } => {
                let entry = snapshot
                    .entries
                    .iter()
                    .rev()
                    .find(|e| e.id() == entry_id)
                    .ok_or("Invalid entry ID for forking")?;
                let message = entry.decode_message().and_then(Result::ok);
                let Some(AgentMessage::User(user)) = message else {
                    return Err("Invalid entry ID for forking".into());
                };
                selected_text = Some(user.content.joined_text(""));
                Some(entry.parent().id().map(str::to_owned))
            }
            SessionStart::Clone => match snapshot.leaf {
                Leaf::At(i) => Some(Some(snapshot.entries[i].id().to_owned())),
                Leaf::Root => return Err("Cannot clone session: no current entry selected".into()),
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
        if let Some(reason) = Self::ask_extensions(state, veto).await {
            return Ok(SwitchOutcome {
                cancelled: Some(reason),
                ..SwitchOutcome::default()
            });
        }
        // Import copies before the switch (pi: the copy exists even if opening fails).
        let import_dest = match &start {
            SessionStart::Import(src) => {
                let src = std::path::absolute(src).map_err(|e| e.to_string())?;
                if !src.is_file() {
                    return Err(format!("File not found: {}", src.display()));
                }
                let dir = current_dir
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(&state.config.cwd));
                pith_store::dirs::ensure_dir(&dir).map_err(|e| e.to_string())?;
                let dest = dir.join(src.file_name().unwrap_or_default());
                if dest != src {
                    std::fs::copy(&src, &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
                }
                Some(dest)
            }
            _ => None,
        };
        let reason = start.reason();
        Self::tell_extensions(
            state,
            ExtensionEvent::SessionShutdown {
                reason,
                target_session_file: None,
            },
        )
        .await;
        Self::stop_subtree(state).await;
        let opened: Result<Session, String> = match &start {
            // The runtime's cwd is the current session's (pi's runtime.cwd follows a resume
            // into another project), so /new starts there.
            SessionStart::New => match Self::session_dir_for(state, &current_cwd) {
                Ok(Some(dir)) => {
                    Session::create(&current_cwd, Some(&dir), &env).map_err(|e| e.to_string())
                }
                Ok(None) => Ok(Session::in_memory(&current_cwd, &env)),
                Err(e) => Err(e),
            },
            SessionStart::Resume(path) => {
                Session::open(path, None, None, OpenMode::Write, &env).map_err(|e| e.to_string())
            }
            SessionStart::Import(_) => match &import_dest {
                Some(dest) => {
                    Session::open(dest, current_dir.as_deref(), None, OpenMode::Write, &env)
                        .map_err(|e| e.to_string())
                }
                None => Err("nothing imported".into()),
            },
            SessionStart::Fork { .. } | SessionStart::Clone => {
                let mut source = Session::from_snapshot(
                    snapshot.header.clone(),
                    snapshot.entries.clone(),
                    snapshot.leaf,
                    &current_cwd,
                    current_dir.as_deref(),
                    current_file.as_deref(),
                    &env,
                );
                match fork_target.clone().flatten() {
                    Some(target) => source
                        .create_branched_session(&target)
                        .map(|_| source)
                        .map_err(|e| e.to_string()),
                    None => {
                        let parent = current_file
                            .as_ref()
                            .map(|p| p.to_string_lossy().into_owned());
                        source.new_session(None, parent);
                        Ok(source)
                    }
                }
            }
        };
        let (session, failure) = match opened {
            Ok(s) => (s, None),
            // The old session comes back: a failed switch changes nothing.
            Err(e) => (
                Session::from_snapshot(
                    snapshot.header,
                    snapshot.entries,
                    snapshot.leaf,
                    &current_cwd,
                    current_dir.as_deref(),
                    current_file.as_deref(),
                    &env,
                ),
                Some(e),
            ),
        };
        let session_file = session.session_file().map(Path::to_owned);
        let start_reason = if failure.is_some() {
            StartReason::Restart
        } else {
            reason
        };
        Self::spawn_subtree(me, state, session, start_reason, current_file).await?;
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
        me: &ActorRef<RuntimeMsg>,
        state: &mut RuntimeState,
        failed: &str,
        why: String,
    ) {
        let (file, dir, cwd) = match &state.subtree {
            Some(s) => (s.session_file.clone(), s.session_dir.clone(), s.cwd.clone()),
            None => return,
        };
        let snapshot = Self::stop_subtree(state).await;
        let env = state.config.env.clone();
        let session = match (&file, snapshot) {
            (Some(f), _) if f.exists() => open_when_released(f, dir.as_deref(), &cwd, &env).await,
            (_, Some(s)) => Ok(Session::from_snapshot(
                s.header,
                s.entries,
                s.leaf,
                &cwd,
                dir.as_deref(),
                file.as_deref(),
                &env,
            )),
            (_, None) => Err("nothing to rebuild from".to_owned()),
        };
        match session {
            Ok(session) => {
                match Self::spawn_subtree(me, state, session, StartReason::Restart, file).await {
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

/// Reopens the session file for writing once the failed writer's lock is gone: a killed
/// actor's state (and with it the lock) is dropped as its task ends, which may trail the
/// failure notice by a moment.
pub(super) async fn open_when_released(
    file: &Path,
    dir: Option<&Path>,
    cwd: &str,
    env: &SessionEnv,
) -> Result<Session, String> {
    let mut tries = 0;
    loop {
        match Session::open(file, dir, Some(cwd), OpenMode::Write, env) {
            Err(pith_store::Error::Locked { pid: Some(pid), .. })
                if pid == std::process::id() && tries < 50 =>
            {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            other => return other.map_err(|e| e.to_string()),
        }
    }
}
