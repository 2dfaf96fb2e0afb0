//! What an extension process asks of pith: its `session/*` and `ui/*` requests and its
//! notifications (`ui/notify`, `ui/setStatus`, `tool/progress`, `log`), answered without
//! ever waiting for the child (spec: extensions.md §1.2 "Extension → host requests").

use std::time::Duration;

use ractor::ActorRef;
use serde_json::{Value, json};

use pith_events::ext::{self, code};
use pith_tools::tool::ToolOutput;

use super::{ProcessExtension, ProcessInput, ProcessState, Waiting};
use crate::envelope::{Envelope, Origin};
use crate::event::{ExtensionNotice, RuntimeEvent};
use crate::extension::ExtensionMsg;
use crate::extensions::session_api;

impl ProcessExtension {
    pub(super) async fn on_request(
        me: &ActorRef<Envelope<ExtensionMsg>>,
        state: &mut ProcessState,
        from: &Origin,
        id: Value,
        method: &str,
        params: Value,
    ) {
        let line = match method {
            "session/appendEntry" | "session/sendMessage" | "session/getBranch" => {
                let agent = state.host.agent.get();
                match session_api::handle(&state.host.writer, agent, from, method, &params).await {
                    Ok(result) => ext::response(&id, result),
                    Err(message) => ext::error_response(&id, code::INVALID_PARAMS, &message, None),
                }
            }
            "ui/confirm" | "ui/select" | "ui/input" => {
                if !state.host.has_ui {
                    ext::error_response(&id, code::NO_UI, "no-ui", Some(json!({"cancelled": true})))
                } else {
                    Self::open_dialog(me, state, id, method, params);
                    return;
                }
            }
            _ => ext::error_response(&id, code::METHOD_NOT_FOUND, "unknown method", None),
        };
        state.write(line);
    }

    /// Forwards a dialog to the frontends and answers the extension when they do (or when
    /// its own `timeoutMs` passes: pi's semantics, select → undefined, confirm → false).
    fn open_dialog(
        me: &ActorRef<Envelope<ExtensionMsg>>,
        state: &mut ProcessState,
        id: Value,
        method: &str,
        params: Value,
    ) {
        let short = method.trim_start_matches("ui/").to_owned();
        let (ui_id, answer) = state.host.dialogs.open();
        let timeout = params.get("timeoutMs").and_then(Value::as_u64);
        state
            .host
            .ui
            .notify(RuntimeEvent::Extension(ExtensionNotice::UiRequest {
                id: ui_id.clone(),
                method: short.clone(),
                params,
            }));
        state.open_dialogs += 1;
        let dialogs = state.host.dialogs.clone();
        let me = me.clone();
        let generation = state.generation;
        let ids = state.host.ids.clone();
        let name = state.name.clone();
        tokio::spawn(async move {
            let answered = match timeout {
                Some(ms) => tokio::time::timeout(Duration::from_millis(ms), answer)
                    .await
                    .ok()
                    .and_then(Result::ok),
                None => answer.await.ok(),
            };
            dialogs.close(&ui_id);
            let result = match answered {
                Some(a) if a.get("cancelled").and_then(Value::as_bool) == Some(true) => {
                    json!({"cancelled": true})
                }
                Some(a) if short == "confirm" => {
                    json!({"confirmed": a.get("confirmed").and_then(Value::as_bool).unwrap_or(false)})
                }
                Some(a) => json!({"value": a.get("value").cloned().unwrap_or(Value::Null)}),
                None if short == "confirm" => json!({"confirmed": false}),
                None => json!({"cancelled": true}),
            };
            let _ = me.cast(Envelope {
                trace: crate::trace::Trace::root(&ids, name),
                msg: ExtensionMsg::Process(ProcessInput::DialogAnswered {
                    generation,
                    line: ext::response(&id, result),
                }),
            });
        });
    }

    pub(super) fn on_notification(state: &mut ProcessState, method: &str, params: Value) {
        match method {
            "ui/notify" | "ui/setStatus" => {
                if state.host.has_ui {
                    let (ui_id, _) = (format!("ext-notify-{}", state.next_id), ());
                    state
                        .host
                        .ui
                        .notify(RuntimeEvent::Extension(ExtensionNotice::UiRequest {
                            id: ui_id,
                            method: method.trim_start_matches("ui/").to_owned(),
                            params,
                        }));
                } else {
                    tracing::info!(extension = %state.ext_name(), "{method}: {params}");
                }
            }
            "tool/progress" => {
                let call = params.get("toolCallId").and_then(Value::as_str);
                for p in state.pending.values() {
                    if let Waiting::Tool {
                        tool_call_id,
                        progress: Some(progress),
                        ..
                    } = &p.waiting
                        && Some(tool_call_id.as_str()) == call
                    {
                        let content = params
                            .get("content")
                            .cloned()
                            .and_then(|c| serde_json::from_value(c).ok())
                            .unwrap_or_default();
                        let _ = progress.send(ToolOutput {
                            content,
                            details: params.get("details").cloned().unwrap_or(Value::Null),
                            structured_content: None,
                        });
                    }
                }
            }
            "log" => {
                let message = params.get("message").and_then(Value::as_str).unwrap_or("");
                tracing::info!(extension = %state.ext_name(), "{message}");
            }
            _ => {}
        }
    }
}
