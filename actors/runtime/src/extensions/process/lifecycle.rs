//! A process host's own life: spawning and `initialize`, requests with deadlines, the fail
//! policy, crash, respawn with backoff, and disabling (spec: extensions.md §1.2 "Lifecycle",
//! "Crash and restart, without losing the session").

use std::collections::BTreeMap;
use std::time::Duration;

use ractor::ActorRef;
use serde_json::{Value, json};
use tokio::time::Instant;

use pith_events::ToolSpec;
use pith_events::ext::transcript::Side;
use pith_events::ext::{self, InitializeResult, OnFailure, PROTOCOL_VERSION, SubscribeMode};
use pith_tools::tool::ToolError;

use super::{
    CRASH_WINDOW, MAX_CRASHES, Pending, ProcessInput, ProcessState, Waiting, answer_disabled,
};
use crate::envelope::Envelope;
use crate::event::{ExtensionNotice, RuntimeEvent};
use crate::extension::{ExtensionMsg, SlashCommand, Verdict};
use crate::extensions::child::{self, Wiring};
use crate::extensions::registry::RegisteredTool;
use crate::extensions::tool::{ExtensionTool, shared};
use crate::system_prompt::PromptTool;

impl ProcessState {
    pub(super) fn ext_name(&self) -> &str {
        &self.spec.manifest.name
    }

    pub(super) fn notify_error(&self, event: &str, error: String) {
        tracing::warn!(extension = %self.ext_name(), event, "{error}");
        self.host
            .ui
            .notify(RuntimeEvent::Extension(ExtensionNotice::Error {
                extension: self.ext_name().to_owned(),
                event: event.to_owned(),
                error,
            }));
    }

    pub(super) fn last_stderr(&self) -> String {
        self.tail
            .lock()
            .ok()
            .and_then(|t| t.back().cloned())
            .unwrap_or_default()
    }

    pub(super) fn write(&self, line: String) {
        if let Some(child) = &self.child {
            self.tap(Side::Host, &line);
            child.stdin.send(line);
        }
    }

    /// Records a line on the wire when the runtime keeps a transcript.
    pub(super) fn tap(&self, from: Side, line: &str) {
        if let Some(tap) = &self.host.transcript {
            tap.line(self.ext_name(), from, line);
        }
    }

    /// Sends a request and keeps `waiting` until its answer or deadline.
    pub(super) fn request(
        &mut self,
        me: &ActorRef<Envelope<ExtensionMsg>>,
        method: &'static str,
        params: Value,
        waiting: Waiting,
        timeout: Duration,
    ) {
        self.next_id += 1;
        let id = self.next_id;
        self.write(ext::request(id, method, params));
        self.pending.insert(
            id,
            Pending {
                waiting,
                method,
                timeout,
            },
        );
        self.arm(me, id, timeout);
    }

    pub(super) fn arm(&self, me: &ActorRef<Envelope<ExtensionMsg>>, id: u64, timeout: Duration) {
        let generation = self.generation;
        let ids = self.host.ids.clone();
        let name = self.name.clone();
        me.send_after(timeout, move || Envelope {
            trace: crate::trace::Trace::root(&ids, name),
            msg: ExtensionMsg::Process(ProcessInput::Deadline { generation, id }),
        });
    }

    pub(super) fn env(&self) -> Vec<(String, String)> {
        child::protocol_env(
            &self.spec,
            &self.host.mode,
            &self.host.cwd,
            &self.host.session_id,
            self.host.session_file.as_deref(),
        )
    }

    /// Starts the process and sends `initialize`.
    pub(super) fn start(&mut self, me: &ActorRef<Envelope<ExtensionMsg>>) {
        self.generation += 1;
        let log = self
            .host
            .agent_dir
            .join("logs")
            .join("extensions")
            .join(format!("{}.log", self.ext_name()));
        let wiring = Wiring {
            me: me.clone(),
            ids: self.host.ids.clone(),
            name: self.name.clone(),
            generation: self.generation,
        };
        let env = self.env();
        match child::spawn(
            &self.spec,
            &self.host.cwd,
            &env,
            self.host.guard.as_ref(),
            log,
            self.tail.clone(),
            wiring,
        ) {
            Ok(child) => self.child = Some(child),
            Err(e) => {
                self.disable(&format!("could not be started: {e}"));
                return;
            }
        }
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "host": {"name": "pith", "version": env!("CARGO_PKG_VERSION")},
            "mode": self.host.mode,
            "hasUI": self.host.has_ui,
            "cwd": self.host.cwd,
            "session": {"id": self.host.session_id, "file": self.host.session_file},
            "extension": {"name": self.ext_name(), "scope": self.spec.scope.as_str(), "dir": self.spec.dir},
        });
        let timeout = Duration::from_millis(self.spec.manifest.timeouts.initialize_ms);
        self.request(me, "initialize", params, Waiting::Initialize, timeout);
    }

    /// The answer to `initialize`: subscriptions, tools and commands; then whatever waited.
    pub(super) fn initialized(
        &mut self,
        me: &ActorRef<Envelope<ExtensionMsg>>,
        result: InitializeResult,
    ) {
        let mut subscribe = BTreeMap::new();
        for (event, mode) in result.subscribe {
            // `intercept` only where a decision means something; elsewhere it waits.
            let mode = match mode {
                SubscribeMode::Intercept if !ext::is_interceptable(&event) => SubscribeMode::Await,
                SubscribeMode::Observe | SubscribeMode::Await
                    if ext::is_interceptable(&event) && event != "session_shutdown" =>
                {
                    mode
                }
                m => m,
            };
            subscribe.insert(event, mode);
        }
        if let Ok(mut subs) = self.subscriptions.write() {
            *subs = subscribe.keys().cloned().collect();
        }
        self.subscribe = subscribe;
        self.custom_types = result.custom_types;
        self.commands = result
            .commands
            .into_iter()
            .map(|c| SlashCommand {
                name: c.name,
                description: c.description,
            })
            .collect();
        self.tool_timeouts = result
            .tools
            .iter()
            .filter_map(|t| Some((t.name.clone(), t.timeout_ms?)))
            .collect();
        let overrides = self.spec.manifest.overrides;
        for t in &result.tools {
            if pith_tools::ALL_TOOL_NAMES.contains(&t.name.as_str()) {
                let what = if overrides {
                    format!("tool {} replaces the built-in of that name", t.name)
                } else {
                    format!(
                        "tool {} has a built-in's name and is ignored (the manifest may set \"override\": true)",
                        t.name
                    )
                };
                self.notify_error("initialize", what);
            }
        }
        let tools = result
            .tools
            .into_iter()
            .map(|t| RegisteredTool {
                extension: self.ext_name().to_owned(),
                annotations: t.annotations.clone().unwrap_or_else(|| json!({})),
                overrides,
                schema: t.input_schema.clone(),
                prompt: PromptTool::declared(
                    &t.name,
                    t.prompt_snippet.as_deref(),
                    t.prompt_guidelines.as_deref().unwrap_or_default(),
                ),
                sequential: t.execution_mode.as_deref() == Some("sequential"),
                tool: shared(ExtensionTool {
                    spec: ToolSpec {
                        prefers_strict_schema: false,
                        name: t.name,
                        description: t.description,
                        parameters: t.input_schema,
                    },
                    actor: me.clone(),
                    name: self.name.clone(),
                    ids: self.host.ids.clone(),
                }),
            })
            .collect();
        self.host.registry.set(self.ext_name(), tools);
        self.ready = true;
        self.started_once = true;
        for waiter in self.waiting_ready.drain(..) {
            let _ = waiter.send(());
        }
    }

    /// The process is gone (or must go): settle what waited for it by the fail policy, then
    /// respawn with backoff, or disable it after too many crashes.
    pub(super) fn crashed(&mut self, me: &ActorRef<Envelope<ExtensionMsg>>, why: &str) {
        let Some(child) = self.child.take() else {
            return;
        };
        child.signal(rustix::process::Signal::KILL);
        drop(child);
        if let Some(tap) = &self.host.transcript {
            tap.exit(self.ext_name(), why);
        }
        self.generation += 1;
        self.ready = false;
        self.open_dialogs = 0;
        self.timeouts_in_row.clear();
        let stderr = self.last_stderr();
        let what = format!("extension `{}` {why}: {stderr}", self.ext_name());
        let first_start = !self.started_once;
        // The user hears of the crash (and of a disabling) before what waited learns of it,
        // so the notices come before the failed calls' results in the event stream.
        let pending = std::mem::take(&mut self.pending);
        self.notify_error("crash", what.clone());
        let now = Instant::now();
        self.crashes.push_back(now);
        while self
            .crashes
            .front()
            .is_some_and(|t| now.duration_since(*t) > CRASH_WINDOW)
        {
            self.crashes.pop_front();
        }
        if first_start || self.crashes.len() >= MAX_CRASHES {
            let reason = if first_start {
                format!("did not start: {what}")
            } else {
                format!("crashed {MAX_CRASHES} times within 60 s; disabled for this session")
            };
            self.disable(&reason);
            for (_, p) in pending {
                self.settle_failed(p.waiting, &what);
            }
            return;
        }
        for (_, p) in pending {
            self.settle_failed(p.waiting, &what);
        }
        let backoff = Duration::from_millis(500 << (self.crashes.len() - 1).min(6))
            .min(Duration::from_secs(30));
        let generation = self.generation;
        let ids = self.host.ids.clone();
        let name = self.name.clone();
        me.send_after(backoff, move || Envelope {
            trace: crate::trace::Trace::root(&ids, name),
            msg: ExtensionMsg::Process(ProcessInput::Respawn { generation }),
        });
    }

    pub(super) fn settle_failed(&self, waiting: Waiting, what: &str) {
        match waiting {
            Waiting::Initialize => {}
            Waiting::Event { event, reply, .. } => {
                if let Some(reply) = reply {
                    let _ = reply.send(self.fail_verdict(event.name(), what));
                }
            }
            Waiting::Tool { reply, .. } => {
                let _ = reply.send(Err(ToolError::Failed(what.to_owned())));
            }
            Waiting::Command { reply } => {
                let _ = reply.send(format!("error: {what}"));
            }
        }
    }

    /// Disabled for the session: its tools go, its subscriptions go, whatever waits goes on.
    pub(super) fn disable(&mut self, reason: &str) {
        if let Some(child) = self.child.take() {
            child.signal(rustix::process::Signal::KILL);
        }
        self.disabled = true;
        self.ready = false;
        self.host.registry.remove(self.ext_name());
        if let Ok(mut subs) = self.subscriptions.write() {
            subs.clear();
        }
        let what = format!("extension `{}` {reason}", self.ext_name());
        for (_, p) in std::mem::take(&mut self.pending) {
            self.settle_failed(p.waiting, &what);
        }
        for waiter in self.waiting_ready.drain(..) {
            let _ = waiter.send(());
        }
        for (_, msg) in std::mem::take(&mut self.queued) {
            answer_disabled(msg, &what);
        }
        self.notify_error("disabled", what);
    }

    /// The decision an event's failure means (spec: extensions.md §1.2 events table).
    pub(super) fn fail_verdict(&self, event: &str, why: &str) -> Verdict {
        match (event, self.spec.manifest.on_failure) {
            ("tool_call", OnFailure::Block) => Verdict::Block(why.to_owned()),
            _ => Verdict::Continue,
        }
    }
}
