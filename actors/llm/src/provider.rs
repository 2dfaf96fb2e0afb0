//! The seam to language models: one trait, one streaming call (spec: agent-and-events.md §1.2).

use pith_events::{AgentMessage, AssistantMessage, StreamUpdate, Usage};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What a provider is asked: the model and the context, already converted for the model
/// (`convert_to_llm`: only user, assistant and toolResult messages).
#[derive(Debug, Clone)]
pub struct ProviderRequest {
    /// Provider name, e.g. `faux`.
    pub provider: String,
    /// Model id within the provider, e.g. `faux-1`.
    pub model: String,
    /// How hard the model thinks (providers clamp it to what the model supports).
    pub thinking_level: pith_events::ThinkingLevel,
    /// The system prompt, when the request has its own (summaries do).
    pub system_prompt: Option<String>,
    /// The conversation, oldest first.
    pub messages: Vec<AgentMessage>,
    /// The tools the model may call (none for summaries).
    pub tools: Vec<pith_events::ToolSpec>,
    /// Output limit in tokens, pi-ai's `options.maxTokens`: `None` leaves it to the model, as
    /// the agent's turns do; summaries set their own (compaction.md §7, §9.3). Providers
    /// treat it exactly as their pi-ai does: Anthropic and Chat Completions (0.73.1) take
    /// `min(model.maxTokens, 32000)` for `None`, Anthropic models with budget-based thinking
    /// add the budget on top, and `Some(0)` is JavaScript's falsy `0` (on Chat Completions: no
    /// limit member at all); Gemini and the Responses API (1.6.0) take the model's
    /// `maxTokens` for `None` and fit the limit into the room the context window leaves.
    pub max_tokens: Option<u64>,
    /// The session the request belongs to (pi-ai's `sessionId`): OpenAI's `prompt_cache_key`
    /// and the session-affinity headers some compatible servers want. Per request, because
    /// a switch changes the session while the provider stays.
    pub session_id: Option<String>,
}

/// One step of a streamed reply.
#[derive(Debug, Clone)]
pub enum ProviderEvent {
    /// The reply began; the partial message so far.
    Start(AssistantMessage),
    /// A content block changed. Only the change travels (pi's wire form, spec
    /// agent-and-events.md §8.1): a reply of n deltas costs O(n), never a copy of the
    /// message so far per delta. The final message comes with [`ProviderEvent::Done`].
    Update {
        /// What changed (with the whole block at `*_end`, see [`StreamUpdate::of`]).
        update: StreamUpdate,
        /// The reply's usage when the change was made.
        usage: Usage,
    },
    /// The final message. Errors and aborts are final messages too, with `stopReason`
    /// `error`/`aborted` and `errorMessage`: a provider never fails any other way.
    Done(AssistantMessage),
}

/// A language model behind a streaming API.
pub trait Provider: Send + Sync + 'static {
    /// The provider's name (`faux`, `anthropic`, …).
    fn name(&self) -> &str;

    /// The context window of `model` in tokens, when known. Without one there is no threshold
    /// compaction: pi counts an unknown window as 0, which compacts after every reply
    /// (compaction.md §2.4 quirk).
    fn context_window(&self, _model: &str) -> Option<u64> {
        None
    }

    /// The most output tokens `model` may write in one reply (`maxTokens` of its definition),
    /// when known. A reply that stopped at `length` below it is recoverable (compaction.md §3,
    /// pi ≥ 0.87).
    fn max_tokens(&self, _model: &str) -> Option<u64> {
        None
    }

    /// Whether `model` takes image input (pi: `model.input.includes("image")`); tools mark
    /// image results for a model without it. `true` unless the provider knows otherwise.
    fn accepts_images(&self, _model: &str) -> bool {
        true
    }

    /// Starts a reply and returns its events; the last one is always [`ProviderEvent::Done`].
    /// `abort` being cancelled ends the reply with `stopReason: "aborted"`.
    fn stream(
        &self,
        request: ProviderRequest,
        abort: CancellationToken,
    ) -> mpsc::Receiver<ProviderEvent>;
}

impl std::fmt::Debug for dyn Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The name only: providers hold keys.
        write!(f, "Provider({})", self.name())
    }
}
