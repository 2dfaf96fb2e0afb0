//! Models: what pi-ai's `Model` says about one model (API kind, base URL, limits, cost), and
//! the cost of a reply's usage.
//!
//! The shape is pi's (`pi-ai` `types.d.ts` `Model`), so a `models.json` written for pi reads
//! here unchanged; members pith does not use (routing preferences, compat flags it has no
//! switch for) are kept in `extra`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use pith_events::{ThinkingLevel, Usage};

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
    /// The OpenAI Responses API (`POST {baseUrl}/responses`, SSE): OpenAI's own models (the
    /// `-pro`, `codex` and `deep-research` ones only speak it) and xAI's.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Google's Generative Language API (`POST
    /// {baseUrl}/models/{id}:streamGenerateContent?alt=sse`): Gemini and Gemma.
    #[serde(rename = "google-generative-ai")]
    GoogleGenerativeAi,
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
            Api::OpenAiResponses => "openai-responses",
            Api::GoogleGenerativeAi => "google-generative-ai",
            Api::Faux => "faux",
            Api::Other(s) => s,
        }
    }
}

/// Prices in USD per million tokens, with the higher rates some models charge for long
/// prompts (`tiers`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
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
    /// Rates that replace the ones above once a prompt (input, cache reads and writes
    /// together) is longer than a tier's `inputTokensAbove` (pi-ai's `cost.tiers`, e.g.
    /// Gemini 2.5 Pro above 200000 tokens).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<CostTier>,
}

/// One tier of [`ModelCost::tiers`]: USD per million tokens for prompts longer than
/// `input_tokens_above` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostTier {
    /// The tier applies to prompts of more tokens than this.
    pub input_tokens_above: f64,
    /// Input (uncached prompt) tokens.
    #[serde(default)]
    pub input: f64,
    /// Output tokens.
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

/// pi-ai's `clampThinkingLevel`: the level itself when the model supports it, else the nearest
/// supported level above it, else below it. Models that do not reason only have `off`;
/// `xhigh` and `max` need a `thinkingLevelMap` entry; a level mapped to `null` is unsupported.
pub fn clamp_thinking_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    let supported = |l: ThinkingLevel| {
        if !model.reasoning {
            return l == ThinkingLevel::Off;
        }
        let mapped = model
            .thinking_level_map
            .as_ref()
            .and_then(|m| m.get(l.as_str()));
        match mapped {
            Some(None) => false,
            Some(Some(_)) => true,
            None => !matches!(l, ThinkingLevel::Xhigh | ThinkingLevel::Max),
        }
    };
    if supported(level) {
        return level;
    }
    let all = ThinkingLevel::ALL;
    let at = all.iter().position(|l| *l == level).unwrap_or(0);
    all[at..]
        .iter()
        .chain(all[..at].iter().rev())
        .copied()
        .find(|l| supported(*l))
        .unwrap_or(ThinkingLevel::Off)
}

/// The levels `model` supports, lowest first (pi's `getSupportedThinkingLevels`).
pub fn supported_thinking_levels(model: &Model) -> Vec<ThinkingLevel> {
    ThinkingLevel::ALL
        .into_iter()
        .filter(|l| clamp_thinking_level(model, *l) == *l)
        .collect()
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
    /// `calculateCost` does: each part is `tokens × price / 1e6`, `total` their sum; a prompt
    /// (input + cache reads + cache writes) longer than a tier's threshold is priced at the
    /// highest such tier's rates.
    pub fn price(&self, usage: &mut Usage) {
        let prompt = (usage.input + usage.cache_read + usage.cache_write) as f64;
        let (mut rates, mut threshold) = (
            (
                self.cost.input,
                self.cost.output,
                self.cost.cache_read,
                self.cost.cache_write,
            ),
            -1.0,
        );
        for tier in &self.cost.tiers {
            if prompt > tier.input_tokens_above && tier.input_tokens_above > threshold {
                rates = (tier.input, tier.output, tier.cache_read, tier.cache_write);
                threshold = tier.input_tokens_above;
            }
        }
        let per = |tokens: u64, price: f64| price / 1_000_000.0 * tokens as f64;
        usage.cost.input = per(usage.input, rates.0);
        usage.cost.output = per(usage.output, rates.1);
        usage.cost.cache_read = per(usage.cache_read, rates.2);
        // Anthropic charges twice the base input price for one-hour cache writes.
        let long_write = usage.cache_write_1h.unwrap_or(0);
        let short_write = usage.cache_write.saturating_sub(long_write);
        usage.cost.cache_write =
            (rates.3 * short_write as f64 + rates.0 * 2.0 * long_write as f64) / 1_000_000.0;
        usage.cost.total =
            usage.cost.input + usage.cost.output + usage.cost.cache_read + usage.cost.cache_write;
        // pi ≥ 1.x marks a cost computed from the model's prices.
        usage.cost.total_from_provider = Some(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn model(reasoning: bool, map: serde_json::Value) -> Model {
        serde_json::from_value(json!({
            "id": "m", "name": "m", "api": "openai-completions", "provider": "p",
            "baseUrl": "http://x", "reasoning": reasoning, "thinkingLevelMap": map
        }))
        .expect("model")
    }

    #[test]
    fn thinking_levels_clamp_like_pi() {
        let plain = model(true, json!(null));
        use ThinkingLevel::*;
        assert_eq!(clamp_thinking_level(&plain, High), High);
        assert_eq!(clamp_thinking_level(&plain, Xhigh), High);
        assert_eq!(clamp_thinking_level(&model(false, json!(null)), High), Off);
        let mapped = model(true, json!({"xhigh": "max", "minimal": null, "off": null}));
        assert_eq!(clamp_thinking_level(&mapped, Xhigh), Xhigh);
        assert_eq!(clamp_thinking_level(&mapped, Minimal), Low);
        assert_eq!(clamp_thinking_level(&mapped, Off), Low);
        assert_eq!(
            supported_thinking_levels(&mapped),
            [Low, Medium, High, Xhigh]
        );
    }
}
