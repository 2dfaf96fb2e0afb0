//! Extensions: one actor each, implementing a small trait.
//!
//! An extension subscribes to the events it wants by name (pi's names: `session_start`,
//! `session_before_fork`, `message_end`, …), may cancel the `session_before_*` events with a
//! reason the user sees, appends custom entries and custom messages through the context it is
//! handed, and may register slash commands. Adding an extension is adding one value that
//! implements [`Extension`]; the runtime spawns an [`ExtensionActor`] for it in every session
//! subtree (fresh per session, as pi reloads extensions per runtime).

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::{Value, json};
use tracing::Instrument;

use std::sync::Arc;

use pith_events::{
    AgentEvent, AgentMessage, ContentBlock, EntryType, ExtensionEvent, ImageContent, UserContent,
};
use pith_store::Entry;

use pith_tools::tool::{ToolError, ToolOutput};

use crate::envelope::{Envelope, MessageKind, Origin};
use crate::trace::ActorName;
use crate::writer::{Append, WriterRef};

/// An extension's answer to an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Go on.
    Continue,
    /// Cancel the operation (only honoured for cancellable events); the reason is shown.
    Cancel(String),
    /// Use this summary instead of asking the model (only honoured for
    /// `session_before_compact` and `session_before_tree`; the entry gets `fromHook: true`).
    Summary(SuppliedSummary),
    /// `tool_call`: do not run the tool; the model gets pi's error result with this reason
    /// (`Tool execution was blocked` when empty).
    Block(String),
    /// `tool_call`: run the tool with these arguments instead; later extensions see them.
    ReplaceInput(Value),
    /// `tool_result`: replace the given parts of the result; later extensions see the patch.
    PatchResult(ResultPatch),
    /// `input`: go on with this text and these images instead.
    Transform {
        /// The new prompt text.
        text: String,
        /// The new images (`None` keeps the old ones).
        images: Option<Vec<ImageContent>>,
    },
    /// `input`: the extension took care of the prompt; nothing runs.
    Handled,
    /// `before_agent_start`: a message to add after the prompt and/or a system prompt change.
    Inject(Injection),
}

/// A partial patch of a tool result (`tool_result` → `{content?, details?, isError?}`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResultPatch {
    /// Replaces the content.
    pub content: Option<Vec<ContentBlock>>,
    /// Replaces the details.
    pub details: Option<Value>,
    /// Replaces the error flag.
    pub is_error: Option<bool>,
}

/// What `before_agent_start` may answer (`{message?, appendSystemPrompt?, systemPrompt?}`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Injection {
    /// A custom message delivered after the prompt (pi's `{message}`), all collected.
    pub message: Option<InjectedMessage>,
    /// Text appended to the system prompt (joined with a blank line).
    pub append_system_prompt: Option<String>,
    /// Replaces the system prompt (chained: the next extension sees it).
    pub system_prompt: Option<String>,
}

/// A custom message injected before a run (`{customType, content, display, details?}`).
#[derive(Debug, Clone, PartialEq)]
pub struct InjectedMessage {
    /// Extension id.
    pub custom_type: String,
    /// The text or blocks the model sees.
    pub content: UserContent,
    /// Shown in the UI.
    pub display: bool,
    /// Extension data.
    pub details: Option<Value>,
}

impl Verdict {
    /// Whether this answer means something for `event` (the table of which decisions each
    /// event accepts, spec: extensions.md §1.2); other answers count as [`Verdict::Continue`].
    pub fn accepted_by(&self, event: &ExtensionEvent) -> bool {
        use ExtensionEvent as E;
        match self {
            Verdict::Continue => true,
            Verdict::Cancel(_) => event.is_cancellable(),
            Verdict::Summary(_) => event.takes_a_summary(),
            Verdict::Block(_) | Verdict::ReplaceInput(_) => matches!(event, E::ToolCall { .. }),
            Verdict::PatchResult(_) => matches!(event, E::ToolResult { .. }),
            Verdict::Transform { .. } | Verdict::Handled => matches!(event, E::Input { .. }),
            Verdict::Inject(_) => matches!(event, E::BeforeAgentStart { .. }),
        }
    }
}

/// A summary an extension supplies (spec: compaction.md §10). For a compaction, pith keeps
/// its own cut point and token count; pi lets the extension set those too.
#[derive(Debug, Clone, PartialEq)]
pub struct SuppliedSummary {
    /// The summary text, used verbatim.
    pub summary: String,
    /// The entry's `details`.
    pub details: Option<Value>,
}

/// Something an extension asks the session to do, carried out after its handler returns.
#[derive(Debug, Clone, PartialEq)]
pub enum ExtensionAction {
    /// `pi.appendEntry(customType, data)`: a `custom` entry (never in the context).
    AppendEntry {
        /// Extension id.
        custom_type: String,
        /// Its data.
        data: Option<Value>,
    },
    /// `pi.sendMessage` while idle: a `custom_message` entry (part of the context).
    SendMessage {
        /// Extension id.
        custom_type: String,
        /// Text.
        content: String,
        /// Shown in the UI.
        display: bool,
    },
}

/// What a handler sees and can do.
#[derive(Debug, Default)]
pub struct ExtensionContext {
    /// The session's entries at `session_start` (file order); empty for other events.
    pub entries: Vec<Entry>,
    /// Actions to carry out, in order.
    pub actions: Vec<ExtensionAction>,
}

impl ExtensionContext {
    /// Queues a `custom` entry.
    pub fn append_entry(&mut self, custom_type: &str, data: Option<Value>) {
        self.actions.push(ExtensionAction::AppendEntry {
            custom_type: custom_type.to_owned(),
            data,
        });
    }

    /// Queues a `custom_message` entry.
    pub fn send_message(&mut self, custom_type: &str, content: &str, display: bool) {
        self.actions.push(ExtensionAction::SendMessage {
            custom_type: custom_type.to_owned(),
            content: content.to_owned(),
            display,
        });
    }
}

/// A slash command an extension registers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlashCommand {
    /// Name without the slash.
    pub name: String,
    /// One line for `/help`.
    pub description: String,
}

/// An extension (spec: agent-and-events.md §6).
///
/// ```
/// use pith_actors::extension::{Extension, ExtensionContext, Verdict};
/// use pith_events::{AgentEvent, ExtensionEvent};
///
/// #[derive(Default)]
/// struct TurnLog;
///
/// impl Extension for TurnLog {
///     fn name(&self) -> &str { "turn-log" }
///     fn subscriptions(&self) -> &[&str] { &["turn_end"] }
///     fn on_event(&mut self, event: &ExtensionEvent, ctx: &mut ExtensionContext) -> Verdict {
///         if let ExtensionEvent::Agent(e) = event {
///             if let AgentEvent::TurnEnd { turn_index, .. } = &**e {
///                 ctx.append_entry("turn-log", Some(serde_json::json!({ "turn": turn_index })));
///             }
///         }
///         Verdict::Continue
///     }
/// }
/// ```
pub trait Extension: Send + 'static {
    /// Its name, used in errors and traces.
    fn name(&self) -> &str;
    /// Event names it wants; it is sent no others.
    fn subscriptions(&self) -> &[&str];
    /// Handles one event. [`Verdict::Cancel`] cancels the `session_before_*` events;
    /// [`Verdict::Summary`] answers `session_before_compact`/`_tree`; `tool_call` takes
    /// [`Verdict::Block`]/[`Verdict::ReplaceInput`], `tool_result` [`Verdict::PatchResult`],
    /// `input` [`Verdict::Transform`]/[`Verdict::Handled`], `before_agent_start`
    /// [`Verdict::Inject`] ([`Verdict::accepted_by`] is the table).
    fn on_event(&mut self, event: &ExtensionEvent, ctx: &mut ExtensionContext) -> Verdict;
    /// The slash commands it registers.
    fn commands(&self) -> Vec<SlashCommand> {
        Vec::new()
    }
    /// Runs one of its commands; returns the text to show.
    fn on_command(&mut self, _name: &str, _args: &str, _ctx: &mut ExtensionContext) -> String {
        String::new()
    }
}

/// Messages of an extension actor.
#[derive(Debug)]
pub enum ExtensionMsg {
    /// An event; answered with the verdict once handled and its actions carried out.
    Event {
        /// The event.
        event: Box<ExtensionEvent>,
        /// The session's entries (file order) for `session_start`; empty for other events.
        entries: Vec<Entry>,
        /// The verdict ([`Verdict::Continue`] for events that cannot be answered).
        reply: RpcReplyPort<Verdict>,
    },
    /// An event nobody waits for: a `message_update` (observe only, extensions.md §1.2
    /// events table), sent without a reply so a streaming reply never waits for extensions.
    Observe {
        /// The event.
        event: Box<ExtensionEvent>,
    },
    /// A slash command; answered with the text to show.
    Command {
        /// Its name, without the slash.
        name: String,
        /// What followed the name.
        args: String,
        /// The text.
        reply: RpcReplyPort<String>,
    },
    /// Answered with the extension's commands.
    Commands {
        /// The commands.
        reply: RpcReplyPort<Vec<SlashCommand>>,
    },
    /// A call of one of its tools; answered when the call ends (its deadline and abort
    /// included: spec: extensions.md §1.2 "Tools").
    CallTool {
        /// The call.
        call: ToolCallRequest,
        /// The result, or what the model gets as an error.
        reply: RpcReplyPort<Result<ToolOutput, ToolError>>,
    },
    /// The user aborted a running tool call (`cancel {id, reason}` on the wire).
    CancelTool {
        /// The call's id.
        tool_call_id: String,
    },
    /// Answered once the extension is ready for events: at once for a Rust extension, after
    /// `initialize` (or its failure) for a process.
    Ready {
        /// Ready.
        reply: RpcReplyPort<()>,
    },
    /// What a process-hosted extension's child and timers report (internal to that host).
    Process(crate::extensions::process_input::ProcessInput),
}

/// A tool call as the extension host gets it.
#[derive(Debug)]
pub struct ToolCallRequest {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool.
    pub name: String,
    /// Its arguments (validated, possibly replaced by a gate).
    pub arguments: Value,
    /// The session cwd.
    pub cwd: std::path::PathBuf,
    /// Partial results (`tool/progress`).
    pub progress: Option<tokio::sync::mpsc::UnboundedSender<ToolOutput>>,
}

impl MessageKind for ExtensionMsg {
    fn kind(&self) -> &'static str {
        match self {
            ExtensionMsg::Event { event, .. } | ExtensionMsg::Observe { event } => event.name(),
            ExtensionMsg::Command { .. } => "command",
            ExtensionMsg::Commands { .. } => "commands",
            ExtensionMsg::CallTool { .. } => "tool_call",
            ExtensionMsg::CancelTool { .. } => "cancel_tool",
            ExtensionMsg::Ready { .. } => "ready",
            ExtensionMsg::Process(p) => p.kind(),
        }
    }
}

/// What an extension actor is started with.
pub struct ExtensionArgs {
    /// The extension.
    pub extension: Box<dyn Extension>,
    /// Where its entries go.
    pub writer: WriterRef,
    /// The session, for traces.
    pub session_id: String,
}

/// State of an extension actor.
pub struct ExtensionState {
    extension: Box<dyn Extension>,
    writer: WriterRef,
    /// `Extension:<name>` in traces.
    name: ActorName,
    session_id: String,
}

/// The actor that hosts one [`Extension`].
pub struct ExtensionActor;

impl ExtensionActor {
    async fn carry_out(from: &Origin, writer: &WriterRef, actions: Vec<ExtensionAction>) {
        for action in actions {
            let append = match action {
                ExtensionAction::AppendEntry { custom_type, data } => {
                    Append::Custom { custom_type, data }
                }
                ExtensionAction::SendMessage {
                    custom_type,
                    content,
                    display,
                } => Append::CustomMessage {
                    custom_type,
                    content: UserContent::Text(content),
                    display,
                    details: None,
                },
            };
            if let Err(e) = writer.append(from, append).await {
                tracing::error!("extension action not persisted: {e}");
            }
        }
    }
}

impl Actor for ExtensionActor {
    type Msg = Envelope<ExtensionMsg>;
    type State = ExtensionState;
    type Arguments = ExtensionArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<Envelope<ExtensionMsg>>,
        args: ExtensionArgs,
    ) -> Result<ExtensionState, ActorProcessingErr> {
        let name = ActorName::Extension(Arc::from(args.extension.name()));
        Ok(ExtensionState {
            extension: args.extension,
            writer: args.writer,
            name,
            session_id: args.session_id,
        })
    }

    async fn handle(
        &self,
        _me: ActorRef<Envelope<ExtensionMsg>>,
        Envelope { trace, msg }: Envelope<ExtensionMsg>,
        state: &mut ExtensionState,
    ) -> Result<(), ActorProcessingErr> {
        let span = trace.span(&state.name, msg.kind(), &state.session_id);
        let from = Origin::new(state.name.clone(), &trace);
        async {
            match msg {
                ExtensionMsg::Event {
                    event,
                    entries,
                    reply,
                } => {
                    let verdict = if state.extension.subscriptions().contains(&event.name()) {
                        let mut ctx = ExtensionContext {
                            entries,
                            actions: Vec::new(),
                        };
                        let v = state.extension.on_event(&event, &mut ctx);
                        Self::carry_out(&from, &state.writer, ctx.actions).await;
                        if v.accepted_by(&event) {
                            v
                        } else {
                            Verdict::Continue
                        }
                    } else {
                        Verdict::Continue
                    };
                    let _ = reply.send(verdict);
                }
                ExtensionMsg::Observe { event } => {
                    if state.extension.subscriptions().contains(&event.name()) {
                        let mut ctx = ExtensionContext::default();
                        let _ = state.extension.on_event(&event, &mut ctx);
                        Self::carry_out(&from, &state.writer, ctx.actions).await;
                    }
                }
                ExtensionMsg::Command { name, args, reply } => {
                    let mut ctx = ExtensionContext::default();
                    let text = state.extension.on_command(&name, &args, &mut ctx);
                    Self::carry_out(&from, &state.writer, ctx.actions).await;
                    let _ = reply.send(text);
                }
                ExtensionMsg::Commands { reply } => {
                    let _ = reply.send(state.extension.commands());
                }
                // Rust extensions register no tools (yet): their tools are plain `Tool`s.
                ExtensionMsg::CallTool { call, reply } => {
                    let _ = reply.send(Err(ToolError::Failed(format!(
                        "Tool {} not found",
                        call.name
                    ))));
                }
                ExtensionMsg::CancelTool { .. } | ExtensionMsg::Process(_) => {}
                ExtensionMsg::Ready { reply } => {
                    let _ = reply.send(());
                }
            }
        }
        .instrument(span)
        .await;
        Ok(())
    }
}

/// Example: counts the prompts of a session in `custom` entries (`{"count": n}`) and picks the
/// count up again from the log on every `session_start` — state that survives restarts and
/// resumes because it lives in the event log. Registers `/count`.
#[derive(Debug, Default)]
pub struct PromptCounter {
    count: u64,
}

impl PromptCounter {
    /// The `customType` of its entries.
    pub const CUSTOM_TYPE: &'static str = "prompt-counter";
}

impl Extension for PromptCounter {
    fn name(&self) -> &str {
        "prompt-counter"
    }

    fn subscriptions(&self) -> &[&str] {
        &["session_start", "message_end"]
    }

    fn on_event(&mut self, event: &ExtensionEvent, ctx: &mut ExtensionContext) -> Verdict {
        match event {
            ExtensionEvent::SessionStart { .. } => {
                self.count = ctx
                    .entries
                    .iter()
                    .rev()
                    .filter(|e| e.kind() == &EntryType::Custom)
                    .find_map(|e| {
                        let v: Value = e.decode_as().ok()?;
                        (v["customType"] == Self::CUSTOM_TYPE)
                            .then(|| v["data"]["count"].as_u64())
                            .flatten()
                    })
                    .unwrap_or(0);
            }
            ExtensionEvent::Agent(e) => {
                if let AgentEvent::MessageEnd {
                    message: AgentMessage::User(_),
                } = &**e
                {
                    self.count += 1;
                    ctx.append_entry(Self::CUSTOM_TYPE, Some(json!({ "count": self.count })));
                }
            }
            _ => {}
        }
        Verdict::Continue
    }

    fn commands(&self) -> Vec<SlashCommand> {
        vec![SlashCommand {
            name: "count".into(),
            description: "How many prompts this session has had".into(),
        }]
    }

    fn on_command(&mut self, _name: &str, _args: &str, _ctx: &mut ExtensionContext) -> String {
        format!("{} prompt(s) in this session", self.count)
    }
}

/// Example: refuses `/fork` and `/clone` while the agent is running (forking a half-written
/// turn would copy a tool call without its result).
#[derive(Debug, Default)]
pub struct NoForkWhileRunning {
    running: bool,
}

impl Extension for NoForkWhileRunning {
    fn name(&self) -> &str {
        "no-fork-while-running"
    }

    fn subscriptions(&self) -> &[&str] {
        &["agent_start", "agent_end", "session_before_fork"]
    }

    fn on_event(&mut self, event: &ExtensionEvent, _ctx: &mut ExtensionContext) -> Verdict {
        match event {
            ExtensionEvent::Agent(e) => {
                match &**e {
                    AgentEvent::AgentStart => self.running = true,
                    AgentEvent::AgentEnd { .. } => self.running = false,
                    _ => {}
                }
                Verdict::Continue
            }
            ExtensionEvent::SessionBeforeFork { .. } if self.running => {
                Verdict::Cancel("the agent is still running; fork when it has finished".into())
            }
            _ => Verdict::Continue,
        }
    }
}
