//! pi-ai's `formatProviderError` (`utils/error-body.js`): how a request that failed before
//! streaming reads in `errorMessage`, shared by the providers that use it (OpenAI Chat
//! Completions without a prefix, the OpenAI Responses API with one).

use pith_events::js::{js_trim, to_js_json};

use super::http::{Failed, FailureKind};
use super::simple_options::utf16_len;

/// pi's cap on an error body quoted in an error text (UTF-16 units).
const MAX_ERROR_BODY: usize = 4000;

/// pi's `truncateErrorText`: at most [`MAX_ERROR_BODY`] UTF-16 units, then how many were cut.
pub(crate) fn truncate_error(text: &str) -> String {
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

/// pi's `formatProviderError(normalizeProviderError(error), prefix)` for an SDK error: an HTTP
/// error whose body held a non-empty `error` object reads `<status>: <object as JSON>` (with
/// a prefix: `<prefix> (<status>): <object as JSON>`), unless the SDK's text already quotes
/// it; one without such a body keeps the SDK's text (`500 upstream broke`), prefixed as
/// `<prefix> (<status>): <SDK text>` when there is a prefix. Failures without a status
/// (connection, timeout) keep their text.
pub(crate) fn format_provider_error(failure: Failed, prefix: Option<&str>) -> String {
    let (FailureKind::Status, Some(status)) = (failure.kind, failure.status) else {
        return failure.message;
    };
    let body = failure
        .error
        .as_ref()
        .filter(|e| e.as_object().is_some_and(|o| !o.is_empty()))
        .and_then(|e| to_js_json(e).ok())
        .map(|b| truncate_error(js_trim(&b)))
        .filter(|b| !b.is_empty());
    match (body, prefix) {
        (Some(b), Some(p)) if !failure.message.contains(&b) => format!("{p} ({status}): {b}"),
        (Some(b), None) if !failure.message.contains(&b) => format!("{status}: {b}"),
        (_, Some(p)) => format!("{p} ({status}): {}", failure.message),
        (_, None) => failure.message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn status(message: &str, error: Option<serde_json::Value>) -> Failed {
        Failed {
            message: message.to_owned(),
            error,
            status: Some(500),
            kind: FailureKind::Status,
        }
    }

    #[test]
    fn long_error_bodies_are_cut() {
        let long = "é".repeat(4005);
        assert_eq!(
            truncate_error(&long),
            format!("{}... [truncated 5 chars]", "é".repeat(4000))
        );
        assert_eq!(truncate_error("short"), "short");
    }

    #[test]
    fn an_error_object_is_quoted_as_pi_quotes_it() {
        let boom = || {
            status(
                "500 boom",
                Some(json!({"message":"boom","type":"server_error"})),
            )
        };
        assert_eq!(
            format_provider_error(boom(), None),
            r#"500: {"message":"boom","type":"server_error"}"#
        );
        assert_eq!(
            format_provider_error(boom(), Some("OpenAI API error")),
            r#"OpenAI API error (500): {"message":"boom","type":"server_error"}"#
        );
        // No error object: the SDK's text stays.
        assert_eq!(
            format_provider_error(status("500 upstream broke", None), None),
            "500 upstream broke"
        );
        assert_eq!(
            format_provider_error(status("500 {}", Some(json!({}))), None),
            "500 {}"
        );
        let refused = Failed {
            message: "Connection error.".to_owned(),
            error: None,
            status: None,
            kind: FailureKind::Connection,
        };
        assert_eq!(format_provider_error(refused, None), "Connection error.");
    }
}
