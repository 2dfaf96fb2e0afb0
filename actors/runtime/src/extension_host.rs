//! A session's extensions as one value: every fan-out to them (agent events, lifecycle
//! events, `session_before_*` questions, slash commands) goes through [`Extensions`], in load
//! order, each awaited, and only to the extensions that subscribed to the event (so events
//! nobody subscribed to cost nothing).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use ractor::{Actor, ActorCell, ActorId, ActorRef, SpawnErr};

use pith_events::{AgentEvent, ExtensionEvent, StartReason};
use pith_store::Entry;

use crate::envelope::{Envelope, Origin};
use crate::extension::{
    Extension, ExtensionActor, ExtensionArgs, ExtensionMsg, InjectedMessage, SlashCommand, Verdict,
};
use pith_events::{ContentBlock, ImageContent};
use serde_json::Value;

/// What `input` leaves of a prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum InputOutcome {
    /// Go on with this text and these images.
    Continue {
        /// The prompt text, as transformed.
        text: String,
        /// Its images.
        images: Vec<ImageContent>,
    },
    /// An extension handled it: no run.
    Handled,
}

/// A tool call as `tool_call` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallEvent {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool.
    pub tool_name: String,
    /// The model's arguments.
    pub input: Value,
    /// `builtin`, `extension:<name>` or `mcp:<server>`.
    pub source: String,
    /// The tool's annotations, `{}` when none.
    pub annotations: Value,
}

/// A finished call as `tool_result` shows it, and as it leaves the chain.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultEvent {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool.
    pub tool_name: String,
    /// The arguments it ran with.
    pub input: Value,
    /// The content.
    pub content: Vec<ContentBlock>,
    /// The details (`null` when none).
    pub details: Value,
    /// Whether it is an error result.
    pub is_error: bool,
}
use crate::event::UiSink;
use crate::extensions::dialogs::Dialogs;
use crate::extensions::process::{AgentSlot, HostContext, ProcessArgs, ProcessExtension};
use crate::extensions::registry::ToolRegistry;
use crate::extensions::transcript::TranscriptTap;
use crate::trace::ActorName;
use crate::trace::{MessageIds, Trace};
use crate::writer::WriterRef;
use pith_events::ext::ExtensionSpec;

/// Builds a fresh extension for every session subtree.
pub type ExtensionFactory = Arc<dyn Fn() -> Box<dyn Extension> + Send + Sync>;

#[derive(Clone)]
struct Member {
    /// Which recipe builds it again.
    source: Source,
    actor: ActorRef<Envelope<ExtensionMsg>>,
    name: ActorName,
    /// Event names it subscribed to; a process's are known after `initialize` and may change
    /// when it restarts or is disabled.
    subscriptions: Arc<RwLock<Vec<String>>>,
}

/// Finds the extension processes of a session in `cwd` again, in load order, for `/reload`
/// (spec: extensions.md §1.2 "Hot reload": a reload discovers again). `Err` names what could
/// not be loaded; the extensions already running are then reloaded as they were.
pub type Rediscover =
    Arc<dyn Fn(&std::path::Path) -> Result<Vec<ExtensionSpec>, String> + Send + Sync>;

/// `Extension:<name>` without its prefix.
fn plain_name(name: &ActorName) -> String {
    let name = name.to_string();
    name.strip_prefix("Extension:").unwrap_or(&name).to_owned()
}

/// Extension processes to host in a session, and how (spec: extensions.md §1.2).
#[derive(Clone, Default)]
pub struct HostedExtensions {
    /// In load order, after the Rust extensions.
    pub specs: Vec<ExtensionSpec>,
    /// Discovery for `/reload`; `None` reloads the same list.
    pub rediscover: Option<Rediscover>,
    /// `tui`, `print`, `json` or `rpc`.
    pub mode: String,
    /// Whether dialogs reach a user.
    pub has_ui: bool,
    /// Where dialogs wait for the frontend's answer.
    pub dialogs: Dialogs,
    /// Records every line on the extensions' wires when set (tests, golden transcripts).
    pub transcript: Option<TranscriptTap>,
    /// Runs each process under `pith __guard`, so none outlives a killed pith; `None` starts
    /// them directly.
    pub guard: Option<pith_tools::ChildGuard>,
}

/// What a session's extension processes need from it.
pub struct SessionSide<'a> {
    /// Its writer.
    pub writer: &'a WriterRef,
    /// Its id.
    pub session_id: &'a str,
    /// Its file.
    pub session_file: Option<std::path::PathBuf>,
    /// Its cwd.
    pub cwd: std::path::PathBuf,
    /// The agent dir (logs).
    pub agent_dir: std::path::PathBuf,
    /// Frontends.
    pub ui: UiSink,
    /// Numbers messages.
    pub ids: MessageIds,
}

/// Where a member came from, to build it again.
#[derive(Clone, Copy)]
enum Source {
    /// `factories[i]`.
    Rust(usize),
    /// `hosted.specs[i]`.
    Process(usize),
}

/// What it takes to spawn the members again (a panic of one, `/reload`).
struct Recipe {
    factories: Vec<ExtensionFactory>,
    hosted: HostedExtensions,
    /// The processes' specs: `hosted.specs`, then what the last `/reload` discovered.
    specs: RwLock<Vec<ExtensionSpec>>,
    host: HostContext,
    supervisor: ActorCell,
}

/// The extension actors of one session, in load order. Cloning shares them; a member may be
/// replaced (respawned after a panic, reloaded) while the others go on.
#[derive(Clone, Default)]
pub struct Extensions {
    members: Arc<RwLock<Vec<Member>>>,
    /// The tools they register; the Agent reads it each turn.
    registry: ToolRegistry,
    recipe: Option<Arc<Recipe>>,
}

impl Recipe {
    /// Spawns the member built from `source` and, for a process, waits until it answered
    /// `initialize` (or failed to: its own deadline, 10 s by default, bounds the wait).
    async fn spawn(&self, source: Source) -> Result<Member, SpawnErr> {
        let (actor, name, subscriptions) = match source {
            Source::Rust(i) => {
                let Some(factory) = self.factories.get(i) else {
                    return Err(SpawnErr::StartupFailed("no such extension".into()));
                };
                let extension = factory();
                let name = ActorName::Extension(Arc::from(extension.name()));
                let subscriptions = Arc::new(RwLock::new(
                    extension
                        .subscriptions()
                        .iter()
                        .map(|s| (*s).to_owned())
                        .collect(),
                ));
                let args = ExtensionArgs {
                    extension,
                    writer: self.host.writer.clone(),
                    session_id: self.host.session_id.clone(),
                };
                let (actor, _) =
                    Actor::spawn_linked(None, ExtensionActor, args, self.supervisor.clone())
                        .await?;
                (actor, name, subscriptions)
            }
            Source::Process(i) => {
                let spec = self.specs.read().ok().and_then(|s| s.get(i).cloned());
                let Some(spec) = spec else {
                    return Err(SpawnErr::StartupFailed("no such extension".into()));
                };
                let subscriptions = Arc::new(RwLock::new(Vec::new()));
                let name = ActorName::Extension(Arc::from(spec.manifest.name.as_str()));
                let args = ProcessArgs {
                    spec,
                    host: self.host.clone(),
                    subscriptions: subscriptions.clone(),
                };
                let (actor, _) =
                    Actor::spawn_linked(None, ProcessExtension, args, self.supervisor.clone())
                        .await?;
                (actor, name, subscriptions)
            }
        };
        Ok(Member {
            actor,
            name,
            subscriptions,
            source,
        })
    }

    async fn ready(&self, m: &Member) {
        let _ = m
            .actor
            .call(
                |reply| Envelope {
                    trace: Trace::root(&self.host.ids, m.name.clone()),
                    msg: ExtensionMsg::Ready { reply },
                },
                None,
            )
            .await;
    }
}

impl Extensions {
    /// Spawns one actor per factory, then one per extension process, linked to `supervisor`,
    /// in load order, and waits until every process answered `initialize` (or failed to:
    /// its own deadline, 10 s by default, bounds the wait).
    ///
    /// Errors: an actor that cannot be spawned.
    pub async fn spawn(
        factories: &[ExtensionFactory],
        hosted: &HostedExtensions,
        session: SessionSide<'_>,
        supervisor: ActorCell,
    ) -> Result<Extensions, SpawnErr> {
        let registry = ToolRegistry::default();
        let host = HostContext {
            writer: session.writer.clone(),
            session_id: session.session_id.to_owned(),
            session_file: session.session_file,
            cwd: session.cwd,
            mode: hosted.mode.clone(),
            has_ui: hosted.has_ui,
            agent_dir: session.agent_dir,
            registry: registry.clone(),
            ui: session.ui,
            dialogs: hosted.dialogs.clone(),
            ids: session.ids,
            agent: AgentSlot::default(),
            transcript: hosted.transcript.clone(),
            guard: hosted.guard.clone(),
        };
        let recipe = Recipe {
            factories: factories.to_vec(),
            hosted: hosted.clone(),
            specs: RwLock::new(hosted.specs.clone()),
            host,
            supervisor,
        };
        let sources = (0..factories.len())
            .map(Source::Rust)
            .chain((0..hosted.specs.len()).map(Source::Process));
        let mut members = Vec::new();
        for source in sources {
            members.push(recipe.spawn(source).await?);
        }
        // Processes start side by side; the session waits for all of them.
        for m in &members {
            recipe.ready(m).await;
        }
        Ok(Extensions {
            members: Arc::new(RwLock::new(members)),
            registry,
            recipe: Some(Arc::new(recipe)),
        })
    }

    /// Hands the session's Agent to the extension processes (`session/sendMessage`).
    pub fn set_agent(&self, agent: ActorRef<Envelope<crate::agent::messages::AgentMsg>>) {
        if let Some(r) = &self.recipe {
            let _ = r.host.agent.set(agent);
        }
    }

    /// The tools they register.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    fn list(&self) -> Vec<Member> {
        self.members.read().map(|m| m.clone()).unwrap_or_default()
    }

    /// The name of the extension actor with this id, if it is one of them.
    pub fn name_of(&self, id: ActorId) -> Option<ActorName> {
        self.list()
            .into_iter()
            .find(|m| m.actor.get_id() == id)
            .map(|m| m.name)
    }

    /// Their actor ids.
    pub fn ids(&self) -> Vec<ActorId> {
        self.list().iter().map(|m| m.actor.get_id()).collect()
    }

    /// The actor of the extension called `name` (for tests that crash it).
    pub fn cell_named(&self, name: &str) -> Option<ActorCell> {
        self.list()
            .into_iter()
            .find(|m| m.name.to_string() == format!("Extension:{name}"))
            .map(|m| m.actor.get_cell())
    }

    /// Their names, in load order.
    pub fn names(&self) -> Vec<String> {
        self.list().iter().map(|m| m.name.to_string()).collect()
    }

    /// Stops each and waits for it.
    pub async fn stop(&self) {
        for m in self.list() {
            let _ = m
                .actor
                .stop_and_wait(None, Some(crate::envelope::CALL_TIMEOUT))
                .await;
        }
    }

    /// Builds the member `id` again after its actor died (a host bug, not a crash of its
    /// process: those the actor handles itself) and tells it `session_start {reason:
    /// "restart"}`; the other members and the session go on (one-for-one). Its name when it
    /// was one of them.
    pub async fn respawn(&self, from: &Origin, id: ActorId) -> Option<ActorName> {
        let recipe = self.recipe.clone()?;
        let index = self.list().iter().position(|m| m.actor.get_id() == id)?;
        let source = self.list().get(index)?.source;
        let fresh = match recipe.spawn(source).await {
            Ok(m) => m,
            Err(e) => {
                tracing::error!("extension actor not respawned: {e}");
                return None;
            }
        };
        recipe.ready(&fresh).await;
        let name = fresh.name.clone();
        if let Ok(mut members) = self.members.write()
            && let Some(slot) = members.get_mut(index)
        {
            *slot = fresh.clone();
        }
        self.start_one(from, &fresh, StartReason::Restart).await;
        Some(name)
    }

    async fn start_one(&self, from: &Origin, m: &Member, reason: StartReason) {
        let subscribed = m
            .subscriptions
            .read()
            .is_ok_and(|s| s.iter().any(|e| e == "session_start"));
        if !subscribed {
            return;
        }
        let entries = match &self.recipe {
            Some(r) => r
                .host
                .writer
                .snapshot(from)
                .await
                .map(|s| s.entries().to_vec())
                .unwrap_or_default(),
            None => Vec::new(),
        };
        let event = Box::new(ExtensionEvent::SessionStart {
            reason,
            previous_session_file: None,
        });
        let _ = from
            .wait(&m.actor, "extension", |reply| ExtensionMsg::Event {
                event,
                entries,
                reply,
            })
            .await;
    }

    /// `/reload [name]` (spec: extensions.md §1.2 "Hot reload"): the extensions are
    /// discovered again; each one named (all when `None`) gets `session_shutdown {reason:
    /// "reload"}`, is stopped, spawned again from what discovery found now (a process is
    /// started afresh, a disabled one enabled again) and gets `session_start {reason:
    /// "reload"}`. A full reload also starts the extensions discovered since and drops
    /// those gone; `/reload name` starts `name` when it is new. Returns the names reloaded
    /// or started, in load order.
    pub async fn reload(&self, from: &Origin, name: Option<&str>) -> Vec<String> {
        let Some(recipe) = self.recipe.clone() else {
            return Vec::new();
        };
        let found = match &recipe.hosted.rediscover {
            Some(rediscover) => match rediscover(&recipe.host.cwd) {
                Ok(found) => Some(found),
                Err(e) => {
                    tracing::warn!("reload: extensions not discovered again: {e}");
                    None
                }
            },
            None => None,
        };
        match (name, found) {
            (None, Some(found)) => self.reload_all(from, &recipe, found).await,
            (name, found) => self.reload_each(from, &recipe, name, found).await,
        }
    }

    /// Stops every member and starts the Rust ones and the `found` processes afresh.
    async fn reload_all(
        &self,
        from: &Origin,
        recipe: &Recipe,
        found: Vec<ExtensionSpec>,
    ) -> Vec<String> {
        for m in self.list() {
            self.retire(from, &m).await;
        }
        let count = found.len();
        if let Ok(mut specs) = recipe.specs.write() {
            *specs = found;
        }
        let sources = (0..recipe.factories.len())
            .map(Source::Rust)
            .chain((0..count).map(Source::Process));
        let mut fresh = Vec::new();
        for source in sources {
            match recipe.spawn(source).await {
                Ok(m) => fresh.push(m),
                Err(e) => tracing::error!("reload: an extension actor was not spawned: {e}"),
            }
        }
        for m in &fresh {
            recipe.ready(m).await;
        }
        if let Ok(mut members) = self.members.write() {
            *members = fresh.clone();
        }
        let mut reloaded = Vec::new();
        for m in &fresh {
            self.start_one(from, m, StartReason::Reload).await;
            reloaded.push(plain_name(&m.name));
        }
        reloaded
    }

    /// Reloads the members called `name` (all when `None`) in place, each from its
    /// rediscovered spec when there is one; a `name` discovered but not running is started.
    async fn reload_each(
        &self,
        from: &Origin,
        recipe: &Recipe,
        name: Option<&str>,
        found: Option<Vec<ExtensionSpec>>,
    ) -> Vec<String> {
        let mut reloaded = Vec::new();
        for (index, m) in self.list().into_iter().enumerate() {
            let plain = plain_name(&m.name);
            if name.is_some_and(|n| n != plain) {
                continue;
            }
            if let (Source::Process(i), Some(found)) = (m.source, &found)
                && let Some(spec) = found.iter().find(|s| s.manifest.name == plain)
                && let Ok(mut specs) = recipe.specs.write()
                && let Some(slot) = specs.get_mut(i)
            {
                *slot = spec.clone();
            }
            self.retire(from, &m).await;
            let Ok(fresh) = recipe.spawn(m.source).await else {
                continue;
            };
            recipe.ready(&fresh).await;
            if let Ok(mut members) = self.members.write()
                && let Some(slot) = members.get_mut(index)
            {
                *slot = fresh.clone();
            }
            self.start_one(from, &fresh, StartReason::Reload).await;
            reloaded.push(plain);
        }
        if let (Some(name), Some(found)) = (name, found)
            && reloaded.is_empty()
            && let Some(spec) = found.into_iter().find(|s| s.manifest.name == name)
        {
            let index = recipe.specs.write().ok().map(|mut specs| {
                specs.push(spec);
                specs.len() - 1
            });
            if let Some(index) = index
                && let Ok(fresh) = recipe.spawn(Source::Process(index)).await
            {
                recipe.ready(&fresh).await;
                if let Ok(mut members) = self.members.write() {
                    members.push(fresh.clone());
                }
                self.start_one(from, &fresh, StartReason::Reload).await;
                reloaded.push(name.to_owned());
            }
        }
        reloaded
    }

    /// `session_shutdown {reason: "reload"}` to `m` when it subscribed, then stops it.
    async fn retire(&self, from: &Origin, m: &Member) {
        let bye = Box::new(ExtensionEvent::SessionShutdown {
            reason: StartReason::Reload,
            target_session_file: None,
        });
        if m.subscriptions
            .read()
            .is_ok_and(|s| s.iter().any(|e| e == "session_shutdown"))
        {
            let _ = from
                .wait(&m.actor, "extension", |reply| ExtensionMsg::Event {
                    event: bye,
                    entries: Vec::new(),
                    reply,
                })
                .await;
        }
        let _ = m
            .actor
            .stop_and_wait(None, Some(crate::envelope::CALL_TIMEOUT))
            .await;
    }

    fn subscribed(&self, event: &str) -> Vec<Member> {
        self.list()
            .into_iter()
            .filter(|m| {
                m.subscriptions
                    .read()
                    .is_ok_and(|subs| subs.iter().any(|s| s == event))
            })
            .collect()
    }

    /// Tells the subscribed extensions about an event nobody can answer, `entries` being the
    /// log for `session_start` (empty otherwise).
    pub async fn tell(&self, from: &Origin, event: ExtensionEvent, entries: &[Entry]) {
        let members = self.subscribed(event.name());
        if !members.is_empty() {
            // Each entry is sent whole: bodies a large session left in its file are read in
            // one pass, not one read each. One that cannot be read goes as its cut line (the
            // read logs why).
            let _ = pith_store::entry::read_back_bodies(entries);
        }
        for m in members {
            let event = Box::new(event.clone());
            let entries = entries.to_vec();
            let _ = from
                .call(&m.actor, "extension", |reply| ExtensionMsg::Event {
                    event,
                    entries,
                    reply,
                })
                .await;
        }
    }

    /// An agent event, to the extensions that subscribed to it (before frontends get it).
    /// Nothing is built for an event nobody subscribed to: this runs for every streamed delta.
    pub async fn agent_event(&self, from: &Origin, event: &AgentEvent) {
        for m in self.subscribed(event.name()) {
            let event = Box::new(ExtensionEvent::Agent(Box::new(event.clone())));
            // Observe only: the stream goes on at once (ordered after what was sent before).
            if matches!(event.as_ref(), ExtensionEvent::Agent(e) if e.name() == "message_update") {
                from.cast(&m.actor, ExtensionMsg::Observe { event });
                continue;
            }
            let _ = from
                .call(&m.actor, "extension", |reply| ExtensionMsg::Event {
                    event,
                    entries: Vec::new(),
                    reply,
                })
                .await;
        }
    }

    /// Asks about a `session_before_*` event: in load order, each answer other than Continue
    /// replaces the one before, and a cancel wins at once (compaction.md §10). An extension
    /// that does not answer does not cancel (pi reports it and goes on).
    pub async fn consult(&self, from: &Origin, event: ExtensionEvent) -> Verdict {
        let mut verdict = Verdict::Continue;
        for m in self.subscribed(event.name()) {
            // Waited for as long as the extension's own deadline says (a dialog may be open).
            match self.ask(&m, from, &event).await {
                Some(v @ Verdict::Cancel(_)) => return v,
                Some(Verdict::Continue) | None => {}
                Some(v) => verdict = v,
            }
        }
        verdict
    }

    /// Asks one extension about an intercept event and waits for its answer as long as its
    /// actor takes: a process-hosted extension applies its own deadlines and fail policy
    /// (spec: extensions.md §1.2 "Timeouts"), so the answer always comes.
    async fn ask(&self, m: &Member, from: &Origin, event: &ExtensionEvent) -> Option<Verdict> {
        let asked = Box::new(event.clone());
        match from
            .wait(&m.actor, "extension", |reply| ExtensionMsg::Event {
                event: asked,
                entries: Vec::new(),
                reply,
            })
            .await
        {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::warn!("{} did not answer {}: {e}", m.name, event.name());
                None
            }
        }
    }

    /// `input` (spec: extensions.md §1.2): chained in load order, each extension sees the
    /// text the one before made; the first `handled` stops the chain and the prompt.
    pub async fn input(
        &self,
        from: &Origin,
        text: String,
        images: Vec<ImageContent>,
        source: &str,
    ) -> InputOutcome {
        let mut event = ExtensionEvent::Input {
            text,
            images,
            source: source.to_owned(),
        };
        for m in self.subscribed("input") {
            match self.ask(&m, from, &event).await {
                Some(Verdict::Handled) => return InputOutcome::Handled,
                Some(Verdict::Transform {
                    text: new_text,
                    images: new_images,
                }) => {
                    if let ExtensionEvent::Input { text, images, .. } = &mut event {
                        *text = new_text;
                        if let Some(new_images) = new_images {
                            *images = new_images;
                        }
                    }
                }
                _ => {}
            }
        }
        match event {
            ExtensionEvent::Input { text, images, .. } => InputOutcome::Continue { text, images },
            _ => InputOutcome::Handled,
        }
    }

    /// `before_agent_start` (spec: extensions.md §1.2): every injected message is kept, in
    /// load order; `systemPrompt` replaces and `appendSystemPrompt` appends, chained (the next
    /// extension sees the prompt as changed so far). Returns the messages and the system
    /// prompt for this run (`None` when no extension changed it).
    pub async fn before_agent_start(
        &self,
        from: &Origin,
        prompt: &str,
        images: &[ImageContent],
        system_prompt: Option<&str>,
    ) -> (Vec<InjectedMessage>, Option<String>) {
        let mut messages = Vec::new();
        let mut current = system_prompt.unwrap_or_default().to_owned();
        let mut changed = false;
        for m in self.subscribed("before_agent_start") {
            let event = ExtensionEvent::BeforeAgentStart {
                prompt: prompt.to_owned(),
                images: images.to_vec(),
                system_prompt: current.clone(),
            };
            if let Some(Verdict::Inject(injection)) = self.ask(&m, from, &event).await {
                if let Some(message) = injection.message {
                    messages.push(message);
                }
                if let Some(replaced) = injection.system_prompt {
                    current = replaced;
                    changed = true;
                }
                if let Some(extra) = injection.append_system_prompt {
                    if current.is_empty() {
                        current = extra;
                    } else {
                        current = format!("{current}\n\n{extra}");
                    }
                    changed = true;
                }
            }
        }
        (messages, changed.then_some(current))
    }

    /// `tool_call` (spec: extensions.md §1.2): chained in load order; a replaced `input` is
    /// what later extensions see and what the tool runs with; the first block wins. An
    /// extension whose actor is gone blocks (gates fail closed). `Ok` holds the arguments to
    /// run with, `Err` the reason of the block.
    pub async fn tool_call(&self, from: &Origin, call: ToolCallEvent) -> Result<Value, String> {
        let mut input = call.input;
        for m in self.subscribed("tool_call") {
            let event = ExtensionEvent::ToolCall {
                tool_call_id: call.tool_call_id.clone(),
                tool_name: call.tool_name.clone(),
                input: input.clone(),
                source: call.source.clone(),
                annotations: call.annotations.clone(),
            };
            match self.ask(&m, from, &event).await {
                Some(Verdict::Block(reason)) => return Err(reason),
                Some(Verdict::ReplaceInput(replaced)) => input = replaced,
                Some(_) => {}
                None => {
                    return Err(format!(
                        "extension {} did not answer: the call is blocked",
                        m.name
                    ));
                }
            }
        }
        Ok(input)
    }

    /// `tool_result` (spec: extensions.md §1.2): each patch applies in load order and the next
    /// extension sees the patched result; an extension that does not answer leaves it as is.
    pub async fn tool_result(&self, from: &Origin, mut result: ToolResultEvent) -> ToolResultEvent {
        for m in self.subscribed("tool_result") {
            let event = ExtensionEvent::ToolResult {
                tool_call_id: result.tool_call_id.clone(),
                tool_name: result.tool_name.clone(),
                input: result.input.clone(),
                content: result.content.clone(),
                details: result.details.clone(),
                is_error: result.is_error,
            };
            if let Some(Verdict::PatchResult(patch)) = self.ask(&m, from, &event).await {
                if let Some(content) = patch.content {
                    result.content = content;
                }
                if let Some(details) = patch.details {
                    result.details = details;
                }
                if let Some(is_error) = patch.is_error {
                    result.is_error = is_error;
                }
            }
        }
        result
    }

    /// `input.source` for prompts from the frontend: `rpc` in the rpc mode, else
    /// `interactive` (pi's default, print mode included).
    pub fn input_source(&self) -> &'static str {
        match &self.recipe {
            Some(r) if r.hosted.mode == "rpc" => "rpc",
            _ => "interactive",
        }
    }

    /// Whether any extension subscribed to `event`.
    pub fn wants(&self, event: &str) -> bool {
        !self.subscribed(event).is_empty()
    }

    /// Every command with the extension that has it and its invocation name: pi's
    /// `resolveRegisteredCommands` (spec: extensions.md §1.2 "Commands"): a name that several
    /// extensions register becomes `name:1`, `name:2`, … in load order.
    async fn resolved(&self, from: &Origin) -> Vec<(Member, SlashCommand, String)> {
        let mut all = Vec::new();
        for m in self.list() {
            if let Ok(commands) = from
                .call(&m.actor, "extension", |reply| ExtensionMsg::Commands {
                    reply,
                })
                .await
            {
                all.extend(commands.into_iter().map(|c| (m.clone(), c)));
            }
        }
        let mut counts: HashMap<String, usize> = HashMap::new();
        for (_, c) in &all {
            *counts.entry(c.name.clone()).or_default() += 1;
        }
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut taken: HashSet<String> = HashSet::new();
        all.into_iter()
            .map(|(m, c)| {
                let occurrence = {
                    let n = seen.entry(c.name.clone()).or_default();
                    *n += 1;
                    *n
                };
                let mut invocation = if counts.get(&c.name).copied().unwrap_or(0) > 1 {
                    format!("{}:{occurrence}", c.name)
                } else {
                    c.name.clone()
                };
                let mut suffix = occurrence;
                while taken.contains(&invocation) {
                    suffix += 1;
                    invocation = format!("{}:{suffix}", c.name);
                }
                taken.insert(invocation.clone());
                (m, c, invocation)
            })
            .collect()
    }

    /// Every extension's slash commands, in load order, by invocation name.
    pub async fn commands(&self, from: &Origin) -> Vec<SlashCommand> {
        self.resolved(from)
            .await
            .into_iter()
            .map(|(_, c, invocation)| SlashCommand {
                name: invocation,
                description: c.description,
            })
            .collect()
    }

    /// Runs the slash command invoked as `name` (`todos`, or `todos:2` when names collide);
    /// `None` when no extension has it (or it did not answer).
    pub async fn command(&self, from: &Origin, name: &str, args: &str) -> Option<String> {
        let (m, c, _) = self
            .resolved(from)
            .await
            .into_iter()
            .find(|(_, _, invocation)| invocation == name)?;
        let (name, args) = (c.name, args.to_owned());
        // The extension's own deadline (600 s, none while a dialog is open) bounds it.
        from.wait(&m.actor, "extension", |reply| ExtensionMsg::Command {
            name,
            args,
            reply,
        })
        .await
        .ok()
    }
}
