//! Models: what pi-ai's `Model` says about one model (API kind, base URL, limits, cost), and
//! the cost of a reply's usage.
//!
//! The shape is pi's (`pi-ai` `types.d.ts` `Model`), so a `models.json` written for pi reads
//! here unchanged; members pith does not use (routing preferences, compat flags it has no
//! switch for) are kept in `extra`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use pith_events::Usage;

/// The wire protocol a model is reached through (pi-ai's `Api`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Api {
    /// Anthropic Messages (`POST {baseUrl}/v1/messages`, SSE).
    #[serde(rename = "anthropic-messages")]
    AnthropicMessages,
    /// OpenAI Chat Completions (`POST {baseUrl}/chat/completions`, SSE), also any
    /// OpenAI-compatible server.
    #[serde(rename = "openai-completions")]
    OpenAiCompletions,
    /// The built-in offline model.
    #[serde(rename = "faux")]
    Faux,
    /// An API pith cannot speak (kept so that listing pi's models still works).
    #[serde(untagged)]
    Other(String),
}

impl Api {
    /// pi's name for the API, e.g. `anthropic-messages`.
    pub fn as_str(&self) -> &str {
        match self {
            Api::AnthropicMessages => "anthropic-messages",
            Api::OpenAiCompletions => "openai-completions",
            Api::Faux => "faux",
            Api::Other(s) => s,
        }
    }
}

/// Prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCost {
    /// Input (uncached prompt) tokens.
    #[serde(default)]
    pub input: f64,
    /// Output tokens (thinking included).
    #[serde(default)]
    pub output: f64,
    /// Prompt tokens read from the cache.
    #[serde(default)]
    pub cache_read: f64,
    /// Prompt tokens written to the cache.
    #[serde(default)]
    pub cache_write: f64,
}

/// One model (pi-ai's `Model`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// The id sent to the API, e.g. `claude-sonnet-4-5`.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Wire protocol.
    pub api: Api,
    /// Provider name, e.g. `anthropic`, `openai`, or a custom one from `models.json`.
    pub provider: String,
    /// Base URL without the endpoint path, e.g. `https://api.anthropic.com`,
    /// `https://api.openai.com/v1`, `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// Whether the model can think (thinking levels other than `off` apply).
    #[serde(default)]
    pub reasoning: bool,
    /// Per-level provider values (`null` = unsupported level); see pi-ai's `ThinkingLevelMap`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level_map: Option<BTreeMap<String, Option<String>>>,
    /// `text`, `image`.
    #[serde(default = "text_only")]
    pub input: Vec<String>,
    /// Prices.
    #[serde(default)]
    pub cost: ModelCost,
    /// Context window in tokens.
    #[serde(default)]
    pub context_window: u64,
    /// Largest reply in tokens.
    #[serde(default)]
    pub max_tokens: u64,
    /// Extra HTTP headers sent with every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// Compatibility overrides for OpenAI-compatible servers (pi's `compat`), as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<Value>,
}

fn text_only() -> Vec<String> {
    vec!["text".to_owned()]
}

impl Model {
    /// `provider/id`, the form `--model` takes.
    pub fn qualified_id(&self) -> String {
        format!("{}/{}", self.provider, self.id)
    }

    /// Whether images can be sent to the model.
    pub fn accepts_images(&self) -> bool {
        self.input.iter().any(|i| i == "image")
    }

    /// Fills `usage.cost` from the token counts and this model's prices, as pi-ai's
    /// `calculateCost` does: each part is `tokens × price / 1e6`, `total` their sum.
    pub fn price(&self, usage: &mut Usage) {
        let per = |tokens: u64, price: f64| price / 1_000_000.0 * tokens as f64;
        usage.cost.input = per(usage.input, self.cost.input);
        usage.cost.output = per(usage.output, self.cost.output);
        usage.cost.cache_read = per(usage.cache_read, self.cost.cache_read);
        usage.cost.cache_write = per(usage.cache_write, self.cost.cache_write);
        usage.cost.total =
            usage.cost.input + usage.cost.output + usage.cost.cache_read + usage.cost.cache_write;
    }
}
