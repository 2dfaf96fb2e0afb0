//! What an OpenAI-compatible server accepts: pi-ai's `detectCompat` (known providers
//! recognised by name or base URL) overridden member by member by the model's `compat`
//! (`getCompat` in `openai-completions.js`).

use serde_json::Value;

use crate::model::Model;

/// Resolved compatibility switches; each member is named as in pi's `compat` object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpenAiCompat {
    /// `store: false` is sent.
    pub supports_store: bool,
    /// A reasoning model gets its system prompt as role `developer`.
    pub supports_developer_role: bool,
    /// `reasoning_effort` is sent.
    pub supports_reasoning_effort: bool,
    /// `stream_options: {include_usage: true}` is sent.
    pub supports_usage_in_streaming: bool,
    /// Streamed replies end with a `finish_reason`: a stream without one is an error
    /// (`Stream ended without finish_reason`); when false the stop reason is inferred.
    pub supports_finish_reason: bool,
    /// `max_completion_tokens` or `max_tokens`.
    pub max_tokens_field: String,
    /// Tool results carry the tool's `name`.
    pub requires_tool_result_name: bool,
    /// A user message may not follow tool results directly.
    pub requires_assistant_after_tool_result: bool,
    /// Earlier thinking goes back as text.
    pub requires_thinking_as_text: bool,
    /// Assistant messages of a reasoning model carry `reasoning_content` (DeepSeek).
    pub requires_reasoning_content_on_assistant_messages: bool,
    /// `openai`, `deepseek`, `zai`, `qwen`, `qwen-chat-template` or `openrouter`.
    pub thinking_format: String,
    /// Tool definitions carry `strict: false`.
    pub supports_strict_mode: bool,
    /// `anthropic` for OpenRouter's Anthropic models: prompt-cache markers are added.
    pub cache_control_format: Option<String>,
    /// `session_id`, `x-client-request-id` and `x-session-affinity` headers are sent.
    pub send_session_affinity_headers: bool,
    /// The 1-hour / 24-hour cache retentions are allowed.
    pub supports_long_cache_retention: bool,
    /// `tool_stream: true` is sent with tools (z.ai).
    pub zai_tool_stream: bool,
}

impl OpenAiCompat {
    /// The switches for `model`.
    pub(crate) fn of(model: &Model) -> OpenAiCompat {
        let d = detect(model);
        let given = model.compat.as_ref();
        let flag = |name: &str, default: bool| {
            given
                .and_then(|c| c.get(name))
                .and_then(Value::as_bool)
                .unwrap_or(default)
        };
        let text = |name: &str| {
            given
                .and_then(|c| c.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        OpenAiCompat {
            supports_store: flag("supportsStore", d.supports_store),
            supports_developer_role: flag("supportsDeveloperRole", d.supports_developer_role),
            supports_reasoning_effort: flag("supportsReasoningEffort", d.supports_reasoning_effort),
            supports_usage_in_streaming: flag(
                "supportsUsageInStreaming",
                d.supports_usage_in_streaming,
            ),
            supports_finish_reason: flag("supportsFinishReason", d.supports_finish_reason),
            max_tokens_field: text("maxTokensField").unwrap_or(d.max_tokens_field),
            requires_tool_result_name: flag("requiresToolResultName", d.requires_tool_result_name),
            requires_assistant_after_tool_result: flag(
                "requiresAssistantAfterToolResult",
                d.requires_assistant_after_tool_result,
            ),
            requires_thinking_as_text: flag("requiresThinkingAsText", d.requires_thinking_as_text),
            requires_reasoning_content_on_assistant_messages: flag(
                "requiresReasoningContentOnAssistantMessages",
                d.requires_reasoning_content_on_assistant_messages,
            ),
            thinking_format: text("thinkingFormat").unwrap_or(d.thinking_format),
            supports_strict_mode: flag("supportsStrictMode", d.supports_strict_mode),
            cache_control_format: text("cacheControlFormat").or(d.cache_control_format),
            send_session_affinity_headers: flag(
                "sendSessionAffinityHeaders",
                d.send_session_affinity_headers,
            ),
            supports_long_cache_retention: flag(
                "supportsLongCacheRetention",
                d.supports_long_cache_retention,
            ),
            zai_tool_stream: flag("zaiToolStream", d.zai_tool_stream),
        }
    }
}

/// pi-ai's `detectCompat` (pi 1.6.0): only OpenAI's own API gets the `developer` role (other
/// hosts' chat templates reject it), and strict tool schemas are never assumed.
fn detect(model: &Model) -> OpenAiCompat {
    let provider = model.provider.as_str();
    let url = model.base_url.as_str();
    let is_zai = matches!(provider, "zai" | "zai-coding-cn")
        || url.contains("api.z.ai")
        || url.contains("open.bigmodel.cn");
    let is_together = provider == "together"
        || url.contains("api.together.ai")
        || url.contains("api.together.xyz");
    let is_moonshot =
        matches!(provider, "moonshotai" | "moonshotai-cn") || url.contains("api.moonshot.");
    let is_openrouter = provider == "openrouter" || url.contains("openrouter.ai");
    let is_cf_workers = provider == "cloudflare-workers-ai" || url.contains("api.cloudflare.com");
    let is_cf_gateway =
        provider == "cloudflare-ai-gateway" || url.contains("gateway.ai.cloudflare.com");
    let is_nvidia = provider == "nvidia" || url.contains("integrate.api.nvidia.com");
    let is_ant_ling = provider == "ant-ling" || url.contains("api.ant-ling.com");
    let is_cerebras = provider == "cerebras" || url.contains("cerebras.ai");
    let is_deepseek = provider == "deepseek" || url.to_lowercase().contains("deepseek.com");
    let is_grok = provider == "xai" || url.contains("api.x.ai");
    let non_standard = is_nvidia
        || is_cerebras
        || is_grok
        || is_together
        || url.contains("chutes.ai")
        || is_deepseek
        || is_zai
        || is_moonshot
        || provider == "opencode"
        || url.contains("opencode.ai")
        || is_cf_workers
        || is_cf_gateway
        || is_ant_ling;
    let use_max_tokens = url.contains("chutes.ai")
        || is_deepseek
        || is_moonshot
        || is_cf_gateway
        || is_together
        || is_nvidia
        || is_ant_ling
        || is_zai;
    let is_openai = provider == "openai" || url.contains("api.openai.com");
    let thinking_format = if is_deepseek {
        "deepseek"
    } else if is_zai {
        "zai"
    } else if is_together {
        "together"
    } else if is_ant_ling {
        "ant-ling"
    } else if is_openrouter {
        "openrouter"
    } else {
        "openai"
    };
    OpenAiCompat {
        supports_store: !non_standard,
        supports_developer_role: is_openai,
        supports_reasoning_effort: !is_grok
            && !is_zai
            && !is_moonshot
            && !is_together
            && !is_cf_gateway
            && !is_nvidia
            && !is_ant_ling,
        supports_usage_in_streaming: true,
        supports_finish_reason: true,
        max_tokens_field: if use_max_tokens {
            "max_tokens"
        } else {
            "max_completion_tokens"
        }
        .to_owned(),
        requires_tool_result_name: false,
        requires_assistant_after_tool_result: false,
        requires_thinking_as_text: false,
        requires_reasoning_content_on_assistant_messages: is_deepseek,
        thinking_format: thinking_format.to_owned(),
        supports_strict_mode: false,
        cache_control_format: (provider == "openrouter" && model.id.starts_with("anthropic/"))
            .then(|| "anthropic".to_owned()),
        send_session_affinity_headers: is_openrouter,
        supports_long_cache_retention: !(is_together
            || is_cf_workers
            || is_cf_gateway
            || is_nvidia
            || is_ant_ling),
        zai_tool_stream: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn model(provider: &str, url: &str, compat: Value) -> Model {
        serde_json::from_value(json!({
            "id": "m", "name": "m", "api": "openai-completions", "provider": provider,
            "baseUrl": url, "compat": compat
        }))
        .expect("model")
    }

    #[test]
    fn detection_and_overrides() {
        let openai = OpenAiCompat::of(&model("openai", "https://api.openai.com/v1", json!(null)));
        assert!(openai.supports_store && openai.supports_developer_role);
        assert!(
            !openai.supports_strict_mode,
            "pi 1.6.0 never assumes strict schemas"
        );
        assert_eq!(openai.max_tokens_field, "max_completion_tokens");
        assert_eq!(openai.thinking_format, "openai");
        let deepseek =
            OpenAiCompat::of(&model("deepseek", "https://api.deepseek.com", json!(null)));
        assert!(!deepseek.supports_store);
        assert!(deepseek.requires_reasoning_content_on_assistant_messages);
        assert_eq!(deepseek.thinking_format, "deepseek");
        let local = OpenAiCompat::of(&model(
            "llama",
            "http://127.0.0.1:8080/v1",
            json!({"maxTokensField": "max_tokens", "supportsUsageInStreaming": false,
                   "supportsDeveloperRole": false}),
        ));
        assert_eq!(local.max_tokens_field, "max_tokens");
        assert!(!local.supports_usage_in_streaming);
        assert!(!local.supports_developer_role);
        assert!(local.supports_store);
        let plain = OpenAiCompat::of(&model("mock", "http://127.0.0.1:9/v1", json!(null)));
        assert!(
            !plain.supports_developer_role,
            "only OpenAI's own API gets the developer role"
        );
    }
}
