//! pi's error texts for the OpenAI Responses API (`formatProviderError` with the `OpenAI API
//! error` prefix, `truncateErrorText`, the ChatGPT usage-limit hints of
//! `api/openai-responses.js`).

use pith_events::js::{js_trim, to_js_json};

use super::http::{Failed, FailureKind};
use super::simple_options::utf16_len;
use crate::model::Model;

/// pi's cap on an error body quoted in an error text (UTF-16 units).
const MAX_ERROR_BODY: usize = 4000;
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

/// pi's `truncateErrorText`: at most [`MAX_ERROR_BODY`] UTF-16 units, then how many were cut.
fn truncate_error(text: &str) -> String {
    let len = utf16_len(text);
    if len <= MAX_ERROR_BODY {
        return text.to_owned();
    }
    format!(
        "{}... [truncated {} chars]",
        super::transform::js_prefix(text, MAX_ERROR_BODY),
        len - MAX_ERROR_BODY
    )
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
    let message = match (failure.kind, failure.status) {
        (FailureKind::Status, Some(status)) => {
            let body = failure
                .error
                .as_ref()
                .filter(|e| e.as_object().is_some_and(|o| !o.is_empty()))
                .and_then(|e| to_js_json(e).ok())
                .map(|b| truncate_error(js_trim(&b)))
                .filter(|b| !b.is_empty());
            match body {
                Some(b) if !failure.message.contains(&b) => {
                    format!("{prefix} ({status}): {b}")
                }
                _ => format!("{prefix} ({status}): {}", failure.message),
            }
        }
        _ => failure.message,
    };
    with_hint(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_error_bodies_are_cut() {
        let long = "é".repeat(4005);
        assert_eq!(
            truncate_error(&long),
            format!("{}... [truncated 5 chars]", "é".repeat(4000))
        );
        assert_eq!(truncate_error("short"), "short");
    }
}
