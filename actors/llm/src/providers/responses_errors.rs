//! pi's error texts for the OpenAI Responses API: `formatProviderError` with the `OpenAI API
//! error` prefix ([`super::error_text`]) and the ChatGPT usage-limit hints of
//! `api/openai-responses.js`.

use super::error_text::format_provider_error;
use super::http::Failed;
use crate::model::Model;

/// Sign in with ChatGPT: where the shared usage limit is shown.
const CHATGPT_USAGE_URL: &str = "https://chatgpt.com/settings/usage";
const CHATGPT_WORKSPACE_LIMIT_HINT: &str = "You've reached your ChatGPT workspace's usage limit. Ask your workspace admin to increase it at admin.openai.com → Workspace → Usage limits.";

/// pi's hints for ChatGPT logins that ran out of their shared usage.
pub(crate) fn with_hint(message: String) -> String {
    if message.contains("subscription_sharing_usage_limit_exceeded") {
        format!("{message}\nCheck your ChatGPT usage: {CHATGPT_USAGE_URL}")
    } else if message.contains("subscription_sharing_workplace_individual_usage_limit_exceeded") {
        format!("{message}\n{CHATGPT_WORKSPACE_LIMIT_HINT}")
    } else {
        message
    }
}

/// The text of a request that failed before streaming: an HTTP error with an error object
/// reads `<prefix> (<status>): <object as JSON>`, one without `<prefix> (<status>): <SDK
/// text>` (`OpenAI API error`, or `<provider> API error` for other providers); failures
/// without a status keep their text.
pub(crate) fn request_failure(model: &Model, failure: Failed) -> String {
    let prefix = if model.provider == "openai" {
        "OpenAI API error".to_owned()
    } else {
        format!("{} API error", model.provider)
    };
    with_hint(format_provider_error(failure, Some(&prefix)))
}
