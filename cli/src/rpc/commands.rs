//! What each rpc command does (spec: agent-and-events.md §9; pi's `rpc-mode.js`), and when
//! its response goes out.

use std::future::Future;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use pith_actors::runtime::{RuntimeError, RuntimeHandle};
use pith_actors::settings::{QueueMode, Settings};
use pith_events::{BashExecutionMessage, ImageContent, SessionStart};

use super::Rpc;
use super::command::Command;
use super::framing::Response;

/// pi's refusal of a prompt while a run streams.
const BUSY: &str = "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.";

/// pith's `SessionStart::New` has no parent to record.
const NO_PARENT_SESSION: &str =
    "pith cannot set parentSession on a new session yet; send new_session without it";

/// What a command answered: its `data` (`None` leaves the member out) or its error.
pub type Outcome = Result<Option<Value>, String>;

/// When a command's response is written.
pub enum Answer {
    /// After the events it caused (pi's listeners run before the command returns).
    Now(Outcome),
    /// Before the events already queued: an accepted prompt is answered before its run's
    /// first event, as pi answers at preflight.
    BeforeEvents(Outcome),
    /// A background task answers (bash and compact take as long as they take, and the
    /// client may send `abort_bash` or `abort` meanwhile).
    Later,
}

/// `{disposition}` of a `prompt`/`steer`/`follow_up` response (pi ≥ 0.99, spec §3.1):
/// `started`, `queued` or `handled`. pi's `RpcClient` fails on a response without it.
fn disposition(what: &str) -> Option<Value> {
    Some(json!({ "disposition": what }))
}

/// The response to `command` with `outcome`.
pub fn respond(id: Option<Value>, command: &str, outcome: Outcome) -> Response {
    match outcome {
        Ok(data) => Response::ok(id, command, data),
        Err(e) => Response::err(id, Some(command.into()), e),
    }
}

fn failed(e: RuntimeError) -> String {
    e.to_string()
}

/// The `images` of `prompt`, `steer` and `follow_up`: pi's `ImageContent[]`
/// (`{"type":"image","data":<base64>,"mimeType":…}`), in order; they become image blocks of
/// the user message, resized as pi resizes them.
///
/// Errors: an item without a string `data` and `mimeType` (pi would fail on it later, when
/// it decodes the image).
fn images_of(images: Option<Vec<Value>>) -> Result<Vec<ImageContent>, String> {
    images
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            serde_json::from_value::<ImageContent>(v)
                .map_err(|e| format!("images[{i}] is not an image ({{type, data, mimeType}}): {e}"))
        })
        .collect()
}

fn queue_mode_name(mode: QueueMode) -> &'static str {
    match mode {
        QueueMode::OneAtATime => "one-at-a-time",
        QueueMode::All => "all",
    }
}

/// `{output, exitCode, cancelled, truncated, fullOutputPath}` without the undefined ones.
fn bash_result(run: BashExecutionMessage) -> Value {
    let mut data = serde_json::Map::new();
    data.insert("output".into(), json!(run.output));
    if let Some(code) = run.exit_code {
        data.insert("exitCode".into(), json!(code));
    }
    data.insert("cancelled".into(), json!(run.cancelled));
    data.insert("truncated".into(), json!(run.truncated));
    if let Some(path) = run.full_output_path {
        data.insert("fullOutputPath".into(), json!(path));
    }
    Value::Object(data)
}

/// `compact`: compacts (after the running turn, if any) and answers pi's `CompactionResult`,
/// the one `compaction_end` reported.
async fn compact(rt: RuntimeHandle, focus: Option<String>) -> Outcome {
    let focus = focus.filter(|f| !f.trim().is_empty());
    let (_, result) = rt
        .compact_reporting(focus.as_deref())
        .await
        .map_err(failed)?;
    Ok(Some(
        serde_json::to_value(result).map_err(|e| e.to_string())?,
    ))
}

impl Rpc {
    /// Runs `command`; `name` is its `type`, `id` goes into a background task's response.
    pub(super) async fn execute(
        &mut self,
        id: Option<Value>,
        name: &str,
        command: Command,
    ) -> Answer {
        let rt = self.rt.clone();
        match command {
            Command::Prompt {
                message,
                images,
                streaming_behavior,
            } => self.prompt(id, message, images, streaming_behavior).await,
            Command::Steer { message, images } => Answer::Now(match images_of(images) {
                Ok(images) => self.queue(&message, images, true).await,
                Err(e) => Err(e),
            }),
            Command::FollowUp { message, images } => Answer::Now(match images_of(images) {
                Ok(images) => self.queue(&message, images, false).await,
                Err(e) => Err(e),
            }),
            // Awaited here (pi's abort waits for idle too): once idle, no run is on, whatever
            // events the aborted run did or did not get to emit. The rpc loop answers `abort`
            // itself (`Rpc::abort`, which writes events while it waits); this is for callers
            // of `execute` alone.
            Command::Abort => Answer::Now(rt.abort().await.map_err(failed).map(|()| {
                self.tracked.streaming = false;
                None
            })),
            // Switches run in the background: a `session_before_*` handler may ask a dialog,
            // answered by a line this loop reads.
            Command::NewSession { parent_session } => match parent_session {
                Some(_) => Answer::Now(Err(NO_PARENT_SESSION.into())),
                None => self.later(id, name, async move {
                    rt.switch(SessionStart::New)
                        .await
                        .map_err(failed)
                        .map(|o| Some(json!({"cancelled": o.cancelled.is_some()})))
                }),
            },
            Command::GetState => Answer::Now(self.state().await.map(Some)),
            Command::SetModel { provider, model_id } => Answer::Now(
                self.models
                    .set(&rt, &provider, &model_id)
                    .await
                    .map(|m| Some(json!(m))),
            ),
            Command::CycleModel => Answer::Now(self.models.cycle(&rt).await.map(|m| {
                Some(match m {
                    Some(model) => json!({
                        "model": model,
                        "thinkingLevel": self.models.thinking,
                        "isScoped": false,
                    }),
                    None => Value::Null,
                })
            })),
            Command::GetAvailableModels => {
                Answer::Now(Ok(Some(json!({"models": self.models.available()}))))
            }
            Command::SetThinkingLevel { level } => {
                Answer::Now(self.models.set_thinking(&rt, &level).await.map(|()| None))
            }
            Command::CycleThinkingLevel => Answer::Now(
                self.models
                    .cycle_thinking(&rt)
                    .await
                    .map(|l| Some(l.map_or(Value::Null, |level| json!({"level": level})))),
            ),
            Command::SetSteeringMode { mode } => {
                Answer::Now(save_setting(&rt, "steeringMode", json!(mode)).await)
            }
            Command::SetFollowUpMode { mode } => {
                Answer::Now(save_setting(&rt, "followUpMode", json!(mode)).await)
            }
            Command::SetAutoCompaction { enabled } => {
                Answer::Now(save_setting(&rt, "compaction.enabled", json!(enabled)).await)
            }
            Command::SetAutoRetry { enabled } => {
                Answer::Now(save_setting(&rt, "retry.enabled", json!(enabled)).await)
            }
            Command::Compact {
                custom_instructions,
            } => self.later(id, name, compact(rt, custom_instructions)),
            Command::AbortRetry => {
                // Only the wait before a retry is cancelled; pith's abort does exactly that
                // while the agent waits (`auto_retry_end` "Retry cancelled"). pi answers
                // without waiting for it.
                if self.tracked.retry_waiting {
                    tokio::spawn(async move {
                        if let Err(e) = rt.abort().await {
                            eprintln!("pith: abort_retry: {e}");
                        }
                    });
                }
                Answer::Now(Ok(None))
            }
            Command::Bash {
                command,
                exclude_from_context,
            } => {
                self.bash_id.clone_from(&id);
                self.later(id, name, async move {
                    rt.bash(&command, exclude_from_context)
                        .await
                        .map_err(failed)
                        .map(|run| Some(bash_result(run)))
                })
            }
            Command::AbortBash => {
                rt.abort_bash();
                Answer::Now(Ok(None))
            }
            Command::GetSessionStats => Answer::Now(self.session_stats().await.map(Some)),
            Command::ExportHtml { output_path } => {
                Answer::Now(self.export_html(output_path).await.map(Some))
            }
            Command::SwitchSession { session_path } => self.later(id, name, async move {
                rt.switch(SessionStart::Resume(PathBuf::from(session_path)))
                    .await
                    .map_err(failed)
                    .map(|o| Some(json!({"cancelled": o.cancelled.is_some()})))
            }),
            Command::Fork { entry_id } => self.later(id, name, async move {
                rt.switch(SessionStart::Fork { entry_id })
                    .await
                    .map_err(failed)
                    .map(|o| {
                        Some(match (o.cancelled, o.selected_text) {
                            (None, Some(text)) => json!({"text": text, "cancelled": false}),
                            (None, None) => json!({"cancelled": false}),
                            (Some(_), _) => json!({"cancelled": true}),
                        })
                    })
            }),
            Command::Clone => self.later(id, name, async move {
                rt.switch(SessionStart::Clone)
                    .await
                    .map_err(failed)
                    .map(|o| Some(json!({"cancelled": o.cancelled.is_some()})))
            }),
            Command::GetForkMessages => Answer::Now(
                rt.snapshot()
                    .await
                    .map_err(failed)
                    .and_then(|s| super::queries::fork_messages(&s))
                    .map(Some),
            ),
            Command::GetLastAssistantText => {
                Answer::Now(rt.context().await.map_err(failed).map(|c| {
                    Some(match super::queries::last_assistant_text(&c.messages) {
                        Some(text) => json!({ "text": text }),
                        None => json!({}),
                    })
                }))
            }
            Command::SetSessionName { name } => Answer::Now(
                rt.set_session_name(&name)
                    .await
                    .map_err(failed)
                    .map(|()| None),
            ),
            Command::GetMessages => Answer::Now(
                rt.context()
                    .await
                    .map_err(failed)
                    .map(|c| Some(json!({ "messages": c.messages }))),
            ),
            Command::Mcp { action, server } => self.mcp(id, name, action, server),
            Command::Reload { name } => Answer::Now(
                rt.reload(name.as_deref())
                    .await
                    .map_err(failed)
                    .map(|names| Some(json!({ "reloaded": names }))),
            ),
            Command::GetCommands => {
                let mcp = self.mcp.is_some();
                let resources = self.resources.clone();
                Answer::Now(rt.commands().await.map_err(failed).map(|cmds| {
                    let mut commands: Vec<Value> = cmds
                        .iter()
                        .map(|c| {
                            json!({"name": c.name, "description": c.description, "source": "extension"})
                        })
                        .collect();
                    // pi 1.6.0 lists `/mcp` as its built-in mcp extension's command; pith's
                    // `/mcp` is built in, and said the same way (docs/divergences.md).
                    if mcp {
                        commands.push(json!({
                            "name": "mcp",
                            "description": crate::mcp_cmd::DESCRIPTION,
                            "source": "extension",
                            "sourceInfo": {"path": "builtin:mcp", "source": "builtin",
                                "scope": "temporary", "origin": "top-level"}
                        }));
                    }
                    // pi: the templates, then the skills (`skill:name`), with their sources.
                    commands.extend(resources.commands().iter().map(|c| c.to_json()));
                    Some(json!({ "commands": commands }))
                }))
            }
            Command::GetEntries { since } => Answer::Now(
                rt.snapshot()
                    .await
                    .map_err(failed)
                    .and_then(|s| super::queries::entries(&s, since.as_deref()))
                    .map(Some),
            ),
            Command::GetTree => Answer::Now(
                rt.snapshot()
                    .await
                    .map_err(failed)
                    .and_then(|s| super::queries::tree(&s))
                    .map(Some),
            ),
            Command::ClearQueue => Answer::Now(
                rt.clear_queue()
                    .await
                    .map_err(failed)
                    .map(|q| Some(json!({"steering": q.steering, "followUp": q.follow_up}))),
            ),
            Command::GetAvailableThinkingLevels => Answer::Now(Ok(Some(
                json!({"levels": self.models.available_thinking_levels()}),
            ))),
            // `parse` answers unknown types itself.
            Command::Unknown => Answer::Now(Err(format!("Unknown command: {name}"))),
        }
    }

    /// Runs `work` in the background; its response goes through the loop, after the events
    /// emitted before it.
    pub(super) fn later(
        &self,
        id: Option<Value>,
        name: &str,
        work: impl Future<Output = Outcome> + Send + 'static,
    ) -> Answer {
        let (done, name) = (self.done.clone(), name.to_owned());
        tokio::spawn(async move {
            let outcome = work.await;
            let _ = done.send(respond(id, &name, outcome));
        });
        Answer::Later
    }

    /// pi's `prompt` as rpc calls it: an extension command runs; an idle agent starts a run
    /// (answered before its first event; one finishing its run takes the prompt next); a
    /// streaming one queues the text per `streamingBehavior`, or refuses with pi's message
    /// without one.
    async fn prompt(
        &mut self,
        id: Option<Value>,
        message: String,
        images: Option<Vec<Value>>,
        behavior: Option<String>,
    ) -> Answer {
        let images = match images_of(images) {
            Ok(images) => images,
            Err(e) => return Answer::Now(Err(e)),
        };
        if let Some(rest) = message.strip_prefix('/') {
            let (name, args) = rest.split_once(' ').unwrap_or((rest, ""));
            match self.rt.commands().await {
                Ok(cmds) if cmds.iter().any(|c| c.name == name) => {
                    // pi's extension commands speak through events and dialogs, not through
                    // the response; pith's text reply has no place in the protocol.
                    // In the background: its dialogs are answered by lines this loop reads.
                    let (rt, name, args) = (self.rt.clone(), name.to_owned(), args.to_owned());
                    return self.later(id, "prompt", async move {
                        rt.command(&name, &args)
                            .await
                            .map_err(failed)
                            .map(|_| disposition("handled"))
                    });
                }
                Ok(_) => {}
                Err(e) => return Answer::Now(Err(failed(e))),
            }
        }
        // The agent decides, not a flag read before: a prompt sent as a run ends waits
        // for it and starts (pi's run is over once its client has seen `agent_end`).
        match self.rt.prompt_with_images(&message, images.clone()).await {
            Ok(()) => {
                self.tracked.streaming = true;
                return Answer::BeforeEvents(Ok(disposition("started")));
            }
            Err(RuntimeError::AgentBusy) => {}
            Err(e) => return Answer::Now(Err(failed(e))),
        }
        // pi tests the option for truthiness, and anything but "followUp" steers.
        match behavior.as_deref() {
            None | Some("") => Answer::Now(Err(BUSY.into())),
            Some("followUp") => Answer::Now(self.queue(&message, images, false).await),
            Some(_) => Answer::Now(self.queue(&message, images, true).await),
        }
    }

    /// `steer` / `follow_up`: queued in the agent; answered once the agent has queued it, so
    /// its `queue_update` comes first, as in pi.
    async fn queue(&mut self, message: &str, images: Vec<ImageContent>, steer: bool) -> Outcome {
        if steer {
            self.rt.steer_with_images(message, images);
        } else {
            self.rt.follow_up_with_images(message, images);
        }
        self.rt.is_idle().await.map_err(failed)?;
        Ok(disposition("queued"))
    }

    /// A switch that ran in the background is over: the new session runs its own model and
    /// level (a resumed or forked one's; lifecycle.md §6), which `get_state` then reports.
    pub(super) async fn follow_session(&mut self) {
        if let Ok(running) = self.rt.current_session().await {
            self.models.follow(&running.model, running.thinking_level);
        }
    }

    /// `get_state` with pi's members, in pi's order; undefined ones left out.
    async fn state(&self) -> Result<Value, String> {
        let snapshot = self.rt.snapshot().await.map_err(failed)?;
        let context = self.rt.context().await.map_err(failed)?;
        let settings = Settings::load(&self.env.agent_dir, Path::new(&snapshot.cwd));
        let tree = &snapshot.tree;
        let mut state = serde_json::Map::new();
        state.insert("model".into(), json!(self.models.current));
        state.insert("thinkingLevel".into(), json!(self.models.thinking));
        state.insert("isStreaming".into(), json!(self.tracked.streaming));
        state.insert("isCompacting".into(), json!(self.tracked.compacting));
        state.insert(
            "steeringMode".into(),
            json!(queue_mode_name(settings.steering_mode())),
        );
        state.insert(
            "followUpMode".into(),
            json!(queue_mode_name(settings.follow_up_mode())),
        );
        if let Some(file) = &snapshot.session_file {
            state.insert("sessionFile".into(), json!(file.to_string_lossy()));
        }
        state.insert("sessionId".into(), json!(snapshot.header.id()));
        if let Some(name) = tree.session_name() {
            state.insert("sessionName".into(), json!(name));
        }
        state.insert(
            "autoCompactionEnabled".into(),
            json!(settings.compaction().enabled),
        );
        state.insert("messageCount".into(), json!(context.messages.len()));
        state.insert("pendingMessageCount".into(), json!(self.tracked.pending));
        Ok(Value::Object(state))
    }

    async fn session_stats(&self) -> Result<Value, String> {
        let snapshot = self.rt.snapshot().await.map_err(failed)?;
        let context = self.rt.context().await.map_err(failed)?;
        Ok(super::queries::session_stats(
            &snapshot,
            &context.messages,
            &self.models.current,
        ))
    }

    /// `export_html`: the session's file as HTML, `{path}`.
    async fn export_html(&self, output_path: Option<String>) -> Result<Value, String> {
        let snapshot = self.rt.snapshot().await.map_err(failed)?;
        let file = snapshot
            .session_file
            .ok_or("Cannot export: the session has no file (--no-session)")?;
        let written = crate::export::export_html(&file, output_path.as_deref().map(Path::new))
            .map_err(|e| format!("{e:#}"))?;
        Ok(json!({ "path": written.to_string_lossy() }))
    }
}

/// pi's `SettingsManager` setters behind `set_steering_mode`, `set_follow_up_mode`,
/// `set_auto_compaction` and `set_auto_retry`: saved in the agent directory's
/// `settings.json` and applied to the session at once; no data.
async fn save_setting(rt: &RuntimeHandle, path: &str, value: Value) -> Outcome {
    rt.set_setting(path, value).await.map_err(failed)?;
    Ok(None)
}
