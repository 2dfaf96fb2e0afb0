//! PXP/1, pith's extension protocol: the messages between pith and an extension process
//! (spec: extensions.md §1.2). JSON-RPC 2.0, one message per line over stdio. What is here is
//! plain data: framing helpers, the `initialize` exchange, the manifest, the decisions an
//! `intercept` may answer, and each event's payload as pi spells it. The host that speaks it
//! is `pith_actors::extensions::process`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::lifecycle::{ExtensionEvent, ForkPosition};

pub mod schema;
pub mod transcript;

/// The protocol version pith speaks (`initialize.protocolVersion`).
pub const PROTOCOL_VERSION: u32 = 1;
/// The longest line either side may send: 16 MiB. A longer one counts as a crash.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// JSON-RPC error codes of PXP/1.
pub mod code {
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid params.
    pub const INVALID_PARAMS: i64 = -32602;
    /// A dialog in a mode without a UI (print, json): `{cancelled: true}` in `data`.
    pub const NO_UI: i64 = -32000;
    /// The session the request was about is gone.
    pub const STALE_SESSION: i64 = -32001;
    /// The request took too long.
    pub const TIMEOUT: i64 = -32002;
}

/// One incoming line, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request (`id` and `method`).
    Request {
        /// Its id, echoed in the response.
        id: Value,
        /// The method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// A notification (`method`, no `id`).
    Notification {
        /// The method.
        method: String,
        /// Its params.
        params: Value,
    },
    /// A response to one of our requests.
    Response {
        /// The id we sent.
        id: Value,
        /// `result`, or the `error` object.
        result: Result<Value, Value>,
    },
}

impl Incoming {
    /// Classifies a line. `None` when it is not JSON or not a JSON-RPC message (a crash,
    /// spec: extensions.md §1.2 "What counts as a crash").
    pub fn parse(line: &str) -> Option<Incoming> {
        let v: Value = serde_json::from_str(line).ok()?;
        let obj = v.as_object()?;
        let params = obj.get("params").cloned().unwrap_or(Value::Null);
        match (obj.get("id"), obj.get("method").and_then(Value::as_str)) {
            (Some(id), Some(method)) => Some(Incoming::Request {
                id: id.clone(),
                method: method.to_owned(),
                params,
            }),
            (None, Some(method)) => Some(Incoming::Notification {
                method: method.to_owned(),
                params,
            }),
            (Some(id), None) => {
                let result = match (obj.get("result"), obj.get("error")) {
                    (_, Some(e)) => Err(e.clone()),
                    (Some(r), None) => Ok(r.clone()),
                    (None, None) => Ok(Value::Null),
                };
                Some(Incoming::Response {
                    id: id.clone(),
                    result,
                })
            }
            (None, None) => None,
        }
    }
}

/// A request line (no newline).
pub fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string()
}

/// A notification line.
pub fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc":"2.0","method":method,"params":params}).to_string()
}

/// A success response line.
pub fn response(id: &Value, result: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"result":result}).to_string()
}

/// An error response line.
pub fn error_response(id: &Value, code: i64, message: &str, data: Option<Value>) -> String {
    let mut error = json!({"code":code,"message":message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc":"2.0","id":id,"error":error}).to_string()
}

/// How an extension wants an event (`initialize.subscribe`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SubscribeMode {
    /// The `event` notification; pith does not wait.
    Observe,
    /// The `intercept` request answered with `{}`: pith waits, so actions sent first land.
    Await,
    /// The `intercept` request answered with a decision.
    Intercept,
}

/// `initialize.tools[]`: MCP's Tool plus pi's fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolDecl {
    /// Its name.
    pub name: String,
    /// What the model is told.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of its arguments.
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    /// MCP's hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// A line for the system prompt's tool list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_snippet: Option<String>,
    /// Guidelines added to the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_guidelines: Option<Vec<String>>,
    /// `parallel` (default) or `sequential`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_mode: Option<String>,
    /// Deadline of one call, in milliseconds (default 600 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

fn empty_object_schema() -> Value {
    json!({"type":"object"})
}

/// `initialize.commands[]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandDecl {
    /// Name without the slash.
    pub name: String,
    /// One line for `/help`.
    #[serde(default)]
    pub description: String,
    /// What the arguments look like.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
}

/// The extension's answer to `initialize`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// Must be [`PROTOCOL_VERSION`].
    #[serde(default)]
    pub protocol_version: u32,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Its version.
    #[serde(default)]
    pub version: String,
    /// Event name → mode.
    #[serde(default)]
    pub subscribe: BTreeMap<String, SubscribeMode>,
    /// `customType`s of its entries, handed back in `session_start.customEntries`.
    #[serde(default)]
    pub custom_types: Vec<String>,
    /// Its tools.
    #[serde(default)]
    pub tools: Vec<ToolDecl>,
    /// Its commands.
    #[serde(default)]
    pub commands: Vec<CommandDecl>,
}

/// `onFailure` of the manifest: what a gate that crashes or times out means.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// The call is blocked (the default: gates fail closed).
    #[default]
    Block,
    /// The call goes on.
    Allow,
}

/// `timeouts` of the manifest, each in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct Timeouts {
    /// Spawn + `initialize` (10 s).
    pub initialize_ms: u64,
    /// An `intercept` answer (30 s); stopped while a dialog of the extension is open.
    pub intercept_ms: u64,
    /// An `await` event (10 s).
    pub await_ms: u64,
    /// A `tool/call` of a tool without its own `timeoutMs` (600 s).
    pub tool_ms: u64,
    /// A `command/run` (600 s).
    pub command_ms: u64,
    /// `shutdown` (3 s).
    pub shutdown_ms: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            initialize_ms: 10_000,
            intercept_ms: 30_000,
            await_ms: 10_000,
            tool_ms: 600_000,
            command_ms: 600_000,
            shutdown_ms: 3_000,
        }
    }
}

/// `extension.json` (spec: extensions.md §1.2 "Discovery and manifest").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Its name (the directory's name when absent).
    #[serde(default)]
    pub name: String,
    /// Its version.
    #[serde(default)]
    pub version: String,
    /// Protocol version (1).
    #[serde(default = "protocol_one")]
    pub protocol: u32,
    /// argv, no shell; a relative program resolves against the extension's directory.
    pub command: Vec<String>,
    /// Extra environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// What a failed gate means.
    #[serde(default)]
    pub on_failure: OnFailure,
    /// Deadlines.
    #[serde(default)]
    pub timeouts: Timeouts,
    /// Its tools may replace built-ins of the same name (a warning is printed).
    #[serde(default, rename = "override")]
    pub overrides: bool,
}

fn protocol_one() -> u32 {
    PROTOCOL_VERSION
}

/// Where an extension was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// `~/.pith/agent/extensions/`.
    User,
    /// A trusted project's `.pith/extensions/`.
    Project,
    /// `settings.json` `extensions`.
    Settings,
    /// `-e/--extension`.
    Cli,
}

impl Scope {
    /// Its wire spelling (`initialize.extension.scope`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Settings => "settings",
            Scope::Cli => "cli",
        }
    }
}

/// An extension to run: its manifest, resolved, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtensionSpec {
    /// The manifest (a bare executable gets one with `command: [file]`).
    pub manifest: Manifest,
    /// Its directory: relative command paths resolve against it.
    pub dir: PathBuf,
    /// Where it was found.
    pub scope: Scope,
}

/// A decision as any `intercept` answer may hold it; which fields count depends on the event
/// (spec: extensions.md §1.2 events table). Unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// `tool_call`: `{block: {reason}}` (pi's `{block: true, reason}` is read too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<Value>,
    /// pi's spelling of the block reason, beside `block: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `tool_call`: replaced arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// `tool_result`: replaced content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    /// `tool_result`: replaced details; `session_before_compact`: the summary's details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// `tool_result`: replaced error flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `input`: `continue`, `transform` or `handled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// `input` transform: the new text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `input` transform: the new images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Value>,
    /// `before_agent_start`: `{customType, content, display, details?}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Value>,
    /// `before_agent_start`: appended to the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append_system_prompt: Option<String>,
    /// `before_agent_start`: replaces the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// `session_before_*`: the reason of a cancel (`true` means no reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<Value>,
    /// `session_before_compact`: the summary to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

impl Decision {
    /// The reason of a block, when the decision blocks: `{block: {reason}}`, or pi's
    /// `{block: true, reason}` (an empty reason gives pi's "Tool execution was blocked").
    pub fn block_reason(&self) -> Option<String> {
        match &self.block {
            Some(Value::Object(o)) => Some(
                o.get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            ),
            Some(Value::Bool(true)) => Some(self.reason.clone().unwrap_or_default()),
            _ => None,
        }
    }
}

fn path_json(p: &Option<PathBuf>) -> Value {
    p.as_ref()
        .map(|p| Value::String(p.to_string_lossy().into_owned()))
        .unwrap_or(Value::Null)
}

/// An event's payload on the wire: `{type, …}` with pi's camelCase fields (spec:
/// extensions.md §1.2 events table). `session_start`'s `leafId` and `customEntries` are the
/// host's to add.
pub fn event_json(event: &ExtensionEvent) -> Value {
    use ExtensionEvent as E;
    let ty = event.name();
    match event {
        E::SessionStart {
            reason,
            previous_session_file,
        } => {
            json!({"type":ty,"reason":reason,"previousSessionFile":path_json(previous_session_file)})
        }
        E::SessionBeforeSwitch {
            reason,
            target_session_file,
        }
        | E::SessionShutdown {
            reason,
            target_session_file,
        } => json!({"type":ty,"reason":reason,"targetSessionFile":path_json(target_session_file)}),
        E::SessionBeforeFork { entry_id, position } => json!({"type":ty,"entryId":entry_id,
            "position": match position { ForkPosition::Before => "before", ForkPosition::At => "at" }}),
        E::SessionBeforeCompact {
            reason,
            preparation,
            custom_instructions,
        } => json!({"type":ty,"reason":reason,"preparation":{
                "firstKeptEntryId": preparation.first_kept_entry_id,
                "messagesToSummarize": preparation.messages_to_summarize,
                "turnPrefixMessages": preparation.turn_prefix_messages,
                "isSplitTurn": preparation.is_split_turn,
                "tokensBefore": preparation.tokens_before,
                "previousSummary": preparation.previous_summary,
            },"customInstructions":custom_instructions}),
        E::SessionCompact {
            entry_id,
            summary,
            from_extension,
        } => json!({"type":ty,"entryId":entry_id,"summary":summary,"fromExtension":from_extension}),
        E::SessionBeforeTree {
            target_id,
            old_leaf_id,
            common_ancestor_id,
            entries_to_summarize,
            user_wants_summary,
            custom_instructions,
        } => json!({"type":ty,"targetId":target_id,"oldLeafId":old_leaf_id,
            "commonAncestorId":common_ancestor_id,"entriesToSummarize":entries_to_summarize,
            "userWantsSummary":user_wants_summary,"customInstructions":custom_instructions}),
        E::SessionTree {
            new_leaf_id,
            old_leaf_id,
            summary_entry_id,
            from_extension,
        } => json!({"type":ty,"newLeafId":new_leaf_id,"oldLeafId":old_leaf_id,
            "summaryEntryId":summary_entry_id,"fromExtension":from_extension}),
        E::Agent(e) => serde_json::to_value(e).unwrap_or_else(|_| json!({"type":ty})),
        E::Input {
            text,
            images,
            source,
        } => json!({"type":ty,"text":text,"images":images,"source":source}),
        E::BeforeAgentStart {
            prompt,
            images,
            system_prompt,
        } => json!({"type":ty,"prompt":prompt,"images":images,"systemPrompt":system_prompt}),
        E::ToolCall {
            tool_call_id,
            tool_name,
            input,
            source,
            annotations,
        } => json!({"type":ty,"toolCallId":tool_call_id,"toolName":tool_name,"input":input,
            "source":source,"annotations":annotations}),
        E::ToolResult {
            tool_call_id,
            tool_name,
            input,
            content,
            details,
            is_error,
        } => json!({"type":ty,"toolCallId":tool_call_id,"toolName":tool_name,"input":input,
            "content":content,"details":details,"isError":is_error}),
        E::AgentSettled { aborted } => json!({"type":ty,"aborted":aborted}),
    }
}

/// Whether an extension may answer `event` with a decision (`intercept` mode); the others
/// allow `observe` and `await` only.
pub fn is_interceptable(event: &str) -> bool {
    matches!(
        event,
        "session_before_switch"
            | "session_before_fork"
            | "session_before_compact"
            | "session_before_tree"
            | "input"
            | "before_agent_start"
            | "tool_call"
            | "tool_result"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_classified_as_json_rpc_says() {
        assert_eq!(
            Incoming::parse(r#"{"jsonrpc":"2.0","id":3,"method":"ui/select","params":{"a":1}}"#),
            Some(Incoming::Request {
                id: json!(3),
                method: "ui/select".into(),
                params: json!({"a":1})
            })
        );
        assert_eq!(
            Incoming::parse(r#"{"jsonrpc":"2.0","id":9,"result":{"block":{"reason":"no"}}}"#),
            Some(Incoming::Response {
                id: json!(9),
                result: Ok(json!({"block":{"reason":"no"}}))
            })
        );
        assert_eq!(Incoming::parse("garbage"), None);
        let d: Decision = serde_json::from_value(json!({"block":{"reason":"no"}})).unwrap();
        assert_eq!(d.block_reason().as_deref(), Some("no"));
        let d: Decision = serde_json::from_value(json!({"block":true,"reason":"pi"})).unwrap();
        assert_eq!(d.block_reason().as_deref(), Some("pi"));
        let d: Decision = serde_json::from_value(json!({"block":false})).unwrap();
        assert_eq!(d.block_reason(), None);
    }

    #[test]
    fn a_manifest_takes_the_defaults_of_the_spec() {
        let m: Manifest =
            serde_json::from_str(r#"{"name":"gate","command":["python3","gate.py"]}"#).unwrap();
        assert_eq!(m.on_failure, OnFailure::Block);
        assert_eq!(m.timeouts.intercept_ms, 30_000);
        assert_eq!(m.protocol, 1);
    }
}
