//! `AgentMessage` roles and content blocks (spec: format.md §3).
//!
//! Field order follows what pi writes. Decoding is tolerant where outside data may vary: an
//! unknown role or block type, or a known one whose fields do not fit, decodes to an
//! `Unknown` variant carrying the value, so nothing read from a file is refused here.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// `{"type":"text","text":…}` (spec: format.md §3.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Provider signature of the text block (OpenAI responses).
    #[serde(
        rename = "textSignature",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub text_signature: Option<String>,
}

/// `{"type":"thinking","thinking":…}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkingContent {
    /// The reasoning text.
    pub thinking: String,
    /// Provider signature that must be sent back with the block.
    #[serde(
        rename = "thinkingSignature",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub thinking_signature: Option<String>,
    /// Whether the provider redacted the reasoning.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub redacted: Option<bool>,
}

/// `{"type":"image","data":<base64>,"mimeType":…}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageContent {
    /// Base64-encoded image bytes.
    pub data: String,
    /// e.g. `image/png`.
    #[serde(rename = "mimeType")]
    pub mime_type: String,
}

/// `{"type":"toolCall","id":…,"name":…,"arguments":{…}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned call id; the matching toolResult carries it as `toolCallId`.
    pub id: String,
    /// Tool name, e.g. `read`.
    pub name: String,
    /// Arguments object.
    pub arguments: Value,
    /// Provider signature (Gemini).
    #[serde(
        rename = "thoughtSignature",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub thought_signature: Option<String>,
}

/// One content block of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `text`
    Text(TextContent),
    /// `thinking`
    Thinking(ThinkingContent),
    /// `image`
    Image(ImageContent),
    /// `toolCall`
    ToolCall(ToolCall),
    /// A block this version does not know (or a known type with unexpected fields).
    Unknown(Value),
}

/// A content block by reference, written with its `type` tag.
#[derive(Serialize)]
#[serde(tag = "type")]
pub(crate) enum TaggedBlock<'a> {
    #[serde(rename = "text")]
    Text(&'a TextContent),
    #[serde(rename = "thinking")]
    Thinking(&'a ThinkingContent),
    #[serde(rename = "image")]
    Image(&'a ImageContent),
    #[serde(rename = "toolCall")]
    ToolCall(&'a ToolCall),
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ContentBlock::Text(b) => TaggedBlock::Text(b).serialize(s),
            ContentBlock::Thinking(b) => TaggedBlock::Thinking(b).serialize(s),
            ContentBlock::Image(b) => TaggedBlock::Image(b).serialize(s),
            ContentBlock::ToolCall(b) => TaggedBlock::ToolCall(b).serialize(s),
            ContentBlock::Unknown(v) => v.serialize(s),
        }
    }
}

fn typed_or_unknown<T: DeserializeOwned, U>(
    v: Value,
    wrap: fn(T) -> U,
    unknown: fn(Value) -> U,
) -> U {
    match T::deserialize(&v) {
        Ok(t) => wrap(t),
        Err(_) => unknown(v),
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        Ok(match kind.as_str() {
            "text" => typed_or_unknown(v, ContentBlock::Text, ContentBlock::Unknown),
            "thinking" => typed_or_unknown(v, ContentBlock::Thinking, ContentBlock::Unknown),
            "image" => typed_or_unknown(v, ContentBlock::Image, ContentBlock::Unknown),
            "toolCall" => typed_or_unknown(v, ContentBlock::ToolCall, ContentBlock::Unknown),
            _ => ContentBlock::Unknown(v),
        })
    }
}

impl ContentBlock {
    /// A text block without signature.
    pub fn text(text: impl Into<String>) -> ContentBlock {
        ContentBlock::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })
    }
}

/// User (and custom) message content: a plain string or an array of text/image blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    /// `"content":"…"`
    Text(String),
    /// `"content":[{…},…]`
    Blocks(Vec<ContentBlock>),
}

impl UserContent {
    /// The text a picker or `/fork` shows: the string itself, or the `text` of every text
    /// block joined with `sep` (pi joins with `" "` for listings and `""` for the editor).
    pub fn joined_text(&self, sep: &str) -> String {
        match self {
            UserContent::Text(s) => s.clone(),
            UserContent::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(sep),
        }
    }
}

/// Token counts of one assistant reply, with cost in USD (spec: format.md §3.2).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens not read from cache.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the provider's cache.
    #[serde(rename = "cacheRead")]
    pub cache_read: u64,
    /// Input tokens written to the provider's cache.
    #[serde(rename = "cacheWrite")]
    pub cache_write: u64,
    /// Reasoning tokens among `output`, when the provider reports them (pi ≥ 1.x:
    /// OpenAI Chat Completions always, `0` without details; Anthropic with thinking
    /// tokens); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reasoning: Option<u64>,
    /// Sum the provider reports.
    #[serde(rename = "totalTokens")]
    pub total_tokens: u64,
    /// Cost in USD per category.
    pub cost: Cost,
    /// Anthropic: cache writes with the one-hour lifetime among `cacheWrite` (pi writes it,
    /// `0` included, once the reply's usage is known); absent for other providers.
    #[serde(
        rename = "cacheWrite1h",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub cache_write_1h: Option<u64>,
}

/// Cost of one reply in USD, by token category.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// USD for input tokens.
    pub input: f64,
    /// USD for output tokens.
    pub output: f64,
    /// USD for cache reads.
    #[serde(rename = "cacheRead")]
    pub cache_read: f64,
    /// USD for cache writes.
    #[serde(rename = "cacheWrite")]
    pub cache_write: f64,
    /// Sum of the above.
    pub total: f64,
    /// pi-ai's `calculateCost` marks a cost it computed from the model's prices with
    /// `false` (OpenRouter's reported cost: `true`); absent when no cost was computed (an
    /// error reply, the faux model).
    #[serde(
        rename = "totalFromProvider",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub total_from_provider: Option<bool>,
}

/// Why an assistant reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StopReason {
    /// The model finished.
    #[serde(rename = "stop")]
    Stop,
    /// The output token limit was hit.
    #[serde(rename = "length")]
    Length,
    /// The model wants tool results.
    #[serde(rename = "toolUse")]
    ToolUse,
    /// The request failed; `errorMessage` says why.
    #[serde(rename = "error")]
    Error,
    /// The user aborted the reply.
    #[serde(rename = "aborted")]
    Aborted,
    /// The reply is still streaming: the assistant `message_start` has it (pi ≥ 0.83); never
    /// in a final message or a file.
    #[serde(rename = "pending")]
    Pending,
}

/// `role: "user"`: `role, content, timestamp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// String or blocks; prompts pith submits always use blocks.
    pub content: UserContent,
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
}

/// `role: "assistant"`. Its members come in one of two orders, depending on which pi-ai code
/// builds such a message (see the `Serialize` impl):
/// real providers `role, content, api, provider, model, usage, stopReason, timestamp,
/// responseId?, responseModel?, diagnostics?, errorMessage?`; the faux provider
/// `role, content, api, provider, model, usage, stopReason, errorMessage?, responseId?, timestamp`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AssistantMessage {
    /// Text, thinking and tool-call blocks (may be empty).
    pub content: Vec<ContentBlock>,
    /// Wire API, e.g. `anthropic-messages`.
    pub api: String,
    /// Provider name.
    pub provider: String,
    /// Model id requested.
    pub model: String,
    /// Model id the provider says answered, when it differs.
    #[serde(
        rename = "responseModel",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub response_model: Option<String>,
    /// Provider's response id.
    #[serde(
        rename = "responseId",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub response_id: Option<String>,
    /// Provider diagnostics, any JSON.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub diagnostics: Option<Value>,
    /// Token counts and cost.
    pub usage: Usage,
    /// Why the reply ended.
    #[serde(rename = "stopReason")]
    pub stop_reason: StopReason,
    /// Present for `error` and `aborted`.
    #[serde(
        rename = "errorMessage",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub error_message: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// The provider's own stop reason (`stop`, `tool_calls`, `end_turn`, …), as pi ≥ 1.x
    /// records it once the stream names one.
    #[serde(rename = "rawStopReason", default)]
    pub raw_stop_reason: Option<String>,
    /// Milliseconds from the start of the request to the final message (pi-ai's
    /// `AssistantMessageEventStream` timing, pi ≥ 1.x); absent on streamed partials.
    #[serde(rename = "durationMs", default)]
    pub duration_ms: Option<u64>,
    /// The thinking level the request asked for (`off`, `low`, …), which pi's agent loop
    /// adds to every final reply (pi ≥ 1.x).
    #[serde(rename = "thinkingLevel", default)]
    pub thinking_level: Option<String>,
}

/// An assistant message in the member order of pi-ai's real providers (anthropic.js,
/// openai-completions.js, …): they create `output` with `usage, stopReason, timestamp` and
/// assign `responseId` (first chunk), `responseModel` (openai-completions, right after it),
/// `diagnostics` and `errorMessage` (the catch) later, and JavaScript keeps insertion order.
#[derive(Serialize)]
struct ProviderOrder<'a> {
    content: &'a [ContentBlock],
    api: &'a str,
    provider: &'a str,
    model: &'a str,
    usage: &'a Usage,
    #[serde(rename = "stopReason")]
    stop_reason: StopReason,
    timestamp: i64,
    #[serde(rename = "responseId", skip_serializing_if = "Option::is_none")]
    response_id: Option<&'a str>,
    #[serde(rename = "responseModel", skip_serializing_if = "Option::is_none")]
    response_model: Option<&'a str>,
    #[serde(rename = "rawStopReason", skip_serializing_if = "Option::is_none")]
    raw_stop_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    diagnostics: Option<&'a Value>,
    /// The Responses API records its diagnostics while it reads the final response, before
    /// it maps the status: there `rawStopReason` comes after them.
    #[serde(rename = "rawStopReason", skip_serializing_if = "Option::is_none")]
    raw_stop_reason_after_diagnostics: Option<&'a str>,
    #[serde(rename = "errorMessage", skip_serializing_if = "Option::is_none")]
    error_message: Option<&'a str>,
    #[serde(rename = "durationMs", skip_serializing_if = "Option::is_none")]
    duration_ms: Option<u64>,
    #[serde(rename = "thinkingLevel", skip_serializing_if = "Option::is_none")]
    thinking_level: Option<&'a str>,
}

/// An assistant message in the member order of pi-ai's faux provider (faux.js
/// `fauxAssistantMessage`): its literal lists `errorMessage` and `responseId` (often
/// `undefined`, hence absent) before `timestamp`, and every later copy spreads it, keeping
/// that order. It never sets `responseModel` or `diagnostics`; a message that has them got
/// them afterwards, so they come last.
#[derive(Serialize)]
struct FauxOrder<'a> {
    content: &'a [ContentBlock],
    api: &'a str,
    provider: &'a str,
    model: &'a str,
    usage: &'a Usage,
    #[serde(rename = "stopReason")]
    stop_reason: StopReason,
    #[serde(rename = "errorMessage", skip_serializing_if = "Option::is_none")]
    error_message: Option<&'a str>,
    #[serde(rename = "responseId", skip_serializing_if = "Option::is_none")]
    response_id: Option<&'a str>,
    timestamp: i64,
    #[serde(rename = "responseModel", skip_serializing_if = "Option::is_none")]
    response_model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    diagnostics: Option<&'a Value>,
    #[serde(rename = "rawStopReason", skip_serializing_if = "Option::is_none")]
    raw_stop_reason: Option<&'a str>,
    #[serde(rename = "durationMs", skip_serializing_if = "Option::is_none")]
    duration_ms: Option<u64>,
    #[serde(rename = "thinkingLevel", skip_serializing_if = "Option::is_none")]
    thinking_level: Option<&'a str>,
}

impl AssistantMessage {
    /// Whether pi-ai's faux provider built this message. pi-ai picks a message's stream
    /// function by `api`, so the api names the code that chose the member order; the faux
    /// provider registers `faux` (pith) or `faux:<time>:<random>` (pi's default).
    fn built_by_faux(&self) -> bool {
        self.api == "faux" || self.api.starts_with("faux:")
    }
}

impl Serialize for AssistantMessage {
    /// The member order of the pi-ai code that would have built this message, so the line
    /// pith writes is the line pi writes: it depends on the provider (see `ProviderOrder`
    /// and `FauxOrder`).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.built_by_faux() {
            FauxOrder {
                content: &self.content,
                api: &self.api,
                provider: &self.provider,
                model: &self.model,
                usage: &self.usage,
                stop_reason: self.stop_reason,
                error_message: self.error_message.as_deref(),
                response_id: self.response_id.as_deref(),
                timestamp: self.timestamp,
                response_model: self.response_model.as_deref(),
                diagnostics: self.diagnostics.as_ref(),
                raw_stop_reason: self.raw_stop_reason.as_deref(),
                duration_ms: self.duration_ms,
                thinking_level: self.thinking_level.as_deref(),
            }
            .serialize(s)
        } else {
            let responses_api = self.api.ends_with("-responses");
            let raw = self.raw_stop_reason.as_deref();
            ProviderOrder {
                content: &self.content,
                api: &self.api,
                provider: &self.provider,
                model: &self.model,
                usage: &self.usage,
                stop_reason: self.stop_reason,
                timestamp: self.timestamp,
                response_id: self.response_id.as_deref(),
                response_model: self.response_model.as_deref(),
                raw_stop_reason: raw.filter(|_| !responses_api),
                diagnostics: self.diagnostics.as_ref(),
                raw_stop_reason_after_diagnostics: raw.filter(|_| responses_api),
                error_message: self.error_message.as_deref(),
                duration_ms: self.duration_ms,
                thinking_level: self.thinking_level.as_deref(),
            }
            .serialize(s)
        }
    }
}

/// `role: "toolResult"`: `role, toolCallId, toolName, content, details?, isError, durationMs?,
/// timestamp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultMessage {
    /// The `id` of the tool call this answers.
    #[serde(rename = "toolCallId")]
    pub tool_call_id: String,
    /// The tool's name.
    #[serde(rename = "toolName")]
    pub tool_name: String,
    /// Text and image blocks.
    pub content: Vec<ContentBlock>,
    /// Tool-specific JSON (e.g. the path of a spilled full output); omitted when `None`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub details: Option<Value>,
    /// Whether the tool failed.
    #[serde(rename = "isError")]
    pub is_error: bool,
    /// How long the tool's execute took, in ms (pi ≥ 1.1); absent when it never ran (a
    /// blocked or unknown tool).
    #[serde(
        rename = "durationMs",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub duration_ms: Option<u64>,
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
}

/// `role: "bashExecution"` (user `!`/`!!` commands):
/// `role, command, output, exitCode?, cancelled, truncated, fullOutputPath?, timestamp,
/// excludeFromContext?`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BashExecutionMessage {
    /// The command line.
    pub command: String,
    /// Combined output (possibly truncated).
    pub output: String,
    /// Exit code; omitted when cancelled or unknown.
    #[serde(rename = "exitCode", skip_serializing_if = "Option::is_none", default)]
    pub exit_code: Option<i64>,
    /// Whether the user cancelled it.
    pub cancelled: bool,
    /// Whether `output` was truncated.
    pub truncated: bool,
    /// Where the full output was saved when truncated.
    #[serde(
        rename = "fullOutputPath",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub full_output_path: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// `true` for `!!` commands: kept out of the LLM context.
    #[serde(
        rename = "excludeFromContext",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub exclude_from_context: Option<bool>,
}

/// `role: "custom"`: `role, customType, content, display, details?, timestamp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomMessage {
    /// The extension's id.
    #[serde(rename = "customType")]
    pub custom_type: String,
    /// String or text/image blocks.
    pub content: UserContent,
    /// Whether the UI shows it.
    pub display: bool,
    /// Any JSON; omitted when `None`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub details: Option<Value>,
    /// Milliseconds since the Unix epoch; `None` when the source timestamp did not parse.
    pub timestamp: Option<i64>,
}

/// `role: "system"` (pi ≥ 0.86): the prompt and tool state recorded in the transcript, a full
/// state or a patch of the previous one (spec: format.md §3.2–3.3):
/// `role, content, sections?, timestamp, toolsAdded?, toolsRemoved?`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemMessage {
    /// Prompt text appended to the base prompt (pi's own are `""`: its text is in `sections`);
    /// a string or text blocks.
    pub content: UserContent,
    /// Section name → text, or `null` to remove that section; patched in order.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sections: Option<serde_json::Map<String, Value>>,
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// Complete tool declarations `{name, description, parameters, constrainedSampling?}`.
    #[serde(
        rename = "toolsAdded",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub tools_added: Option<Vec<Value>>,
    /// `{name}` of tools no longer declared.
    #[serde(
        rename = "toolsRemoved",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub tools_removed: Option<Vec<Value>>,
}

/// `role: "branchSummary"`: projection of a `branch_summary` entry (spec: tree-and-context.md §7.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchSummaryMessage {
    /// Summary text.
    pub summary: String,
    /// The entry's `fromId`.
    #[serde(rename = "fromId")]
    pub from_id: String,
    /// Milliseconds since the Unix epoch; `None` (written `null`) when unparseable.
    pub timestamp: Option<i64>,
}

/// `role: "compactionSummary"`: projection of a `compaction` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionSummaryMessage {
    /// Summary text.
    pub summary: String,
    /// Context tokens before the compaction.
    #[serde(rename = "tokensBefore")]
    pub tokens_before: u64,
    /// Milliseconds since the Unix epoch; `None` (written `null`) when unparseable.
    pub timestamp: Option<i64>,
}

/// A message in the agent's history, tagged by `role`.
// The largest variant, `Assistant`, is also the most common one (every reply, in every
// event and context): boxing it would add an allocation per reply to save memory only on
// the rarer variants.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum AgentMessage {
    /// `system` (pi ≥ 0.86)
    System(SystemMessage),
    /// `user`
    User(UserMessage),
    /// `assistant`
    Assistant(AssistantMessage),
    /// `toolResult`
    ToolResult(ToolResultMessage),
    /// `bashExecution`
    BashExecution(BashExecutionMessage),
    /// `custom` (and the v2 legacy `hookMessage`, which migration renames)
    Custom(CustomMessage),
    /// `branchSummary`
    BranchSummary(BranchSummaryMessage),
    /// `compactionSummary`
    CompactionSummary(CompactionSummaryMessage),
    /// Anything else, or a known role whose fields do not fit.
    Unknown(Value),
}

#[derive(Serialize)]
#[serde(tag = "role")]
enum TaggedMessage<'a> {
    #[serde(rename = "system")]
    System(&'a SystemMessage),
    #[serde(rename = "user")]
    User(&'a UserMessage),
    #[serde(rename = "assistant")]
    Assistant(&'a AssistantMessage),
    #[serde(rename = "toolResult")]
    ToolResult(&'a ToolResultMessage),
    #[serde(rename = "bashExecution")]
    BashExecution(&'a BashExecutionMessage),
    #[serde(rename = "custom")]
    Custom(&'a CustomMessage),
    #[serde(rename = "branchSummary")]
    BranchSummary(&'a BranchSummaryMessage),
    #[serde(rename = "compactionSummary")]
    CompactionSummary(&'a CompactionSummaryMessage),
}

impl Serialize for AgentMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AgentMessage::System(m) => TaggedMessage::System(m).serialize(s),
            AgentMessage::User(m) => TaggedMessage::User(m).serialize(s),
            AgentMessage::Assistant(m) => TaggedMessage::Assistant(m).serialize(s),
            AgentMessage::ToolResult(m) => TaggedMessage::ToolResult(m).serialize(s),
            AgentMessage::BashExecution(m) => TaggedMessage::BashExecution(m).serialize(s),
            AgentMessage::Custom(m) => TaggedMessage::Custom(m).serialize(s),
            AgentMessage::BranchSummary(m) => TaggedMessage::BranchSummary(m).serialize(s),
            AgentMessage::CompactionSummary(m) => TaggedMessage::CompactionSummary(m).serialize(s),
            AgentMessage::Unknown(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if !v.is_object() {
            return Err(D::Error::custom("a message must be a JSON object"));
        }
        let role = v
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        Ok(match role.as_str() {
            "system" => typed_or_unknown(v, AgentMessage::System, AgentMessage::Unknown),
            "user" => typed_or_unknown(v, AgentMessage::User, AgentMessage::Unknown),
            "assistant" => typed_or_unknown(v, AgentMessage::Assistant, AgentMessage::Unknown),
            "toolResult" => typed_or_unknown(v, AgentMessage::ToolResult, AgentMessage::Unknown),
            "bashExecution" => {
                typed_or_unknown(v, AgentMessage::BashExecution, AgentMessage::Unknown)
            }
            "custom" | "hookMessage" => {
                typed_or_unknown(v, AgentMessage::Custom, AgentMessage::Unknown)
            }
            "branchSummary" => {
                typed_or_unknown(v, AgentMessage::BranchSummary, AgentMessage::Unknown)
            }
            "compactionSummary" => {
                typed_or_unknown(v, AgentMessage::CompactionSummary, AgentMessage::Unknown)
            }
            _ => AgentMessage::Unknown(v),
        })
    }
}

impl AssistantMessage {
    /// Its tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(c),
            _ => None,
        })
    }

    /// The text of its text blocks, in order (thinking excluded).
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
    }

    /// A reply with `content` that stopped normally: zero usage, no response id or error.
    /// Providers fill in the rest as the reply streams.
    pub fn new(
        api: impl Into<String>,
        provider: impl Into<String>,
        model: impl Into<String>,
        content: Vec<ContentBlock>,
        timestamp: i64,
    ) -> AssistantMessage {
        AssistantMessage {
            content,
            api: api.into(),
            provider: provider.into(),
            model: model.into(),
            response_model: None,
            response_id: None,
            diagnostics: None,
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            error_message: None,
            timestamp,
            raw_stop_reason: None,
            duration_ms: None,
            thinking_level: None,
        }
    }
}

impl AgentMessage {
    /// A user prompt as pith submits it: `content` is one text block (the array form pi's
    /// AgentSession always uses, spec: format.md §3.2); `timestamp` in ms since the epoch.
    pub fn user_text(text: impl Into<String>, timestamp: i64) -> AgentMessage {
        AgentMessage::User(UserMessage {
            content: UserContent::Blocks(vec![ContentBlock::text(text)]),
            timestamp,
        })
    }

    /// The `role` string.
    pub fn role(&self) -> &str {
        match self {
            AgentMessage::System(_) => "system",
            AgentMessage::User(_) => "user",
            AgentMessage::Assistant(_) => "assistant",
            AgentMessage::ToolResult(_) => "toolResult",
            AgentMessage::BashExecution(_) => "bashExecution",
            AgentMessage::Custom(_) => "custom",
            AgentMessage::BranchSummary(_) => "branchSummary",
            AgentMessage::CompactionSummary(_) => "compactionSummary",
            AgentMessage::Unknown(v) => v.get("role").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::js::to_js_json;

    #[test]
    fn assistant_round_trips_with_costs_exactly() {
        let line = r#"{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"ok","textSignature":"s"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a"}}],"api":"anthropic-messages","provider":"anthropic","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.00007500000000000001,"output":0.001468,"cacheRead":0,"cacheWrite":0,"total":0.0035372}},"stopReason":"toolUse","timestamp":1759890470640}"#;
        let m: AgentMessage = serde_json::from_str(line).expect("parses");
        let AgentMessage::Assistant(a) = &m else {
            panic!("not typed: {m:?}")
        };
        assert_eq!(a.usage.cost.input, 0.00007500000000000001);
        assert_eq!(a.stop_reason, StopReason::ToolUse);
        assert_eq!(to_js_json(&m).expect("serializes"), line);
    }

    #[test]
    fn assistant_member_order_follows_the_provider_that_built_it() {
        let mut m = AssistantMessage::new(
            "anthropic-messages",
            "anthropic",
            "m",
            vec![ContentBlock::text("x")],
            5,
        );
        m.stop_reason = StopReason::Error;
        m.response_id = Some("msg_1".into());
        m.error_message = Some("overloaded".into());
        let usage = r#""usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
        // anthropic.js: `output` is built with `timestamp`; `responseId` and `errorMessage`
        // are assigned later.
        assert_eq!(
            to_js_json(&AgentMessage::Assistant(m.clone())).expect("serializes"),
            format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"x"}}],"api":"anthropic-messages","provider":"anthropic","model":"m",{usage},"stopReason":"error","timestamp":5,"responseId":"msg_1","errorMessage":"overloaded"}}"#
            )
        );
        // faux.js `fauxAssistantMessage`: `errorMessage, responseId, timestamp`.
        m.api = "faux".into();
        m.provider = "faux".into();
        assert_eq!(
            to_js_json(&AgentMessage::Assistant(m.clone())).expect("serializes"),
            format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"x"}}],"api":"faux","provider":"faux","model":"m",{usage},"stopReason":"error","errorMessage":"overloaded","responseId":"msg_1","timestamp":5}}"#
            )
        );
        // pi's default faux api is `faux:<time>:<random>`.
        m.api = "faux:1:abc".into();
        let line = to_js_json(&m).expect("serializes");
        assert!(
            line.ends_with(r#""errorMessage":"overloaded","responseId":"msg_1","timestamp":5}"#),
            "{line}"
        );
    }

    #[test]
    fn system_messages_round_trip_in_pis_key_order() {
        let line = r#"{"role":"system","content":"","sections":{"preamble":"P","docs":null},"timestamp":5,"toolsAdded":[{"name":"read","description":"d","parameters":{"type":"object"}}],"toolsRemoved":[{"name":"bash"}]}"#;
        let m: AgentMessage = serde_json::from_str(line).expect("parses");
        assert!(
            matches!(&m, AgentMessage::System(s) if s.sections.as_ref().is_some_and(|s| s["docs"].is_null()))
        );
        assert_eq!(m.role(), "system");
        assert_eq!(to_js_json(&m).expect("serializes"), line);
    }

    #[test]
    fn unknown_role_and_block_are_kept() {
        let m: AgentMessage = serde_json::from_str(r#"{"role":"weird","x":1}"#).expect("parses");
        assert_eq!(m.role(), "weird");
        let u: AgentMessage = serde_json::from_str(
            r#"{"role":"user","content":[{"type":"audio","data":"x"}],"timestamp":5}"#,
        )
        .expect("parses");
        let AgentMessage::User(u) = u else {
            panic!("user expected")
        };
        assert!(
            matches!(&u.content, UserContent::Blocks(b) if matches!(b[0], ContentBlock::Unknown(_)))
        );
    }

    #[test]
    fn joined_text_uses_text_blocks_only() {
        let c = UserContent::Blocks(vec![
            ContentBlock::text("a"),
            ContentBlock::Image(ImageContent {
                data: "x".into(),
                mime_type: "image/png".into(),
            }),
            ContentBlock::text("b"),
        ]);
        assert_eq!(c.joined_text(" "), "a b");
        assert_eq!(c.joined_text(""), "ab");
    }
}
