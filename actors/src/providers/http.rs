//! The HTTP side shared by both providers, shaped after the Anthropic and OpenAI TypeScript
//! SDKs that pi uses: one POST with the SDKs' retry policy, their error texts, and the body
//! read as server-sent events.

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{Client, Response, StatusCode};
use serde_json::Value;
use tokio::sync::watch;

use super::sse::{SseEvent, SseParser};
use crate::faux::aborted_signal;

/// The SDKs' `APIUserAbortError` text, for an abort before the response arrived.
pub(crate) const ABORTED_BEFORE_RESPONSE: &str = "Request was aborted.";
/// The SDKs' `APIConnectionError` text (refused, reset, DNS, TLS …).
const CONNECTION_ERROR: &str = "Connection error.";
/// The SDKs' `APIConnectionTimeoutError` text.
const TIMED_OUT: &str = "Request timed out.";
/// What Node's fetch (undici) says when the body breaks off; pi passes it on unchanged, and
/// the retry classifier matches it (`terminated`).
pub(crate) const BODY_TERMINATED: &str = "terminated";

/// One request, ready to send (and to send again on a retry).
pub(crate) struct HttpRequest {
    /// Full endpoint URL.
    pub url: String,
    /// Every header, the key among them (marked sensitive).
    pub headers: HeaderMap,
    /// The JSON body.
    pub body: Vec<u8>,
}

/// How the provider's SDK reads an error body: Anthropic's SDK quotes the whole JSON body,
/// OpenAI's takes its `error` member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorShape {
    /// `@anthropic-ai/sdk`: `error` = the body.
    Anthropic,
    /// `openai`: `error` = `body.error`.
    OpenAi,
}

/// Why no response came.
#[derive(Debug)]
pub(crate) enum SendFailure {
    /// The abort signal fired first.
    Aborted,
    /// The server refused, or could not be reached: the SDK's error text and, for HTTP
    /// errors, the `error` value the SDK kept (OpenAI's provider reads OpenRouter details
    /// from it).
    Failed {
        message: String,
        error: Option<Value>,
    },
}

/// Sends `request`, retrying as the SDKs do: up to `max_retries` more times on a connection
/// error, a timeout, or a 408/409/429/5xx answer (an `x-should-retry` header overrides),
/// waiting `retry-after-ms`/`retry-after` or 0.5 s × 2ⁿ (at most 8 s, minus up to 25%
/// jitter). `timeout` bounds the wait for the response head of each attempt. The waits end
/// early on abort.
///
/// Errors: [`SendFailure::Aborted`], or the SDK's text for the last failure: `"<status>
/// <message or JSON>"`, `"<status> status code (no body)"`, `"Connection error."`,
/// `"Request timed out."`.
pub(crate) async fn send(
    client: &Client,
    request: &HttpRequest,
    max_retries: u32,
    timeout: Duration,
    shape: ErrorShape,
    abort: &mut watch::Receiver<bool>,
) -> Result<Response, SendFailure> {
    let mut retries_left = max_retries;
    loop {
        if *abort.borrow() {
            return Err(SendFailure::Aborted);
        }
        let attempt = client
            .post(&request.url)
            .headers(request.headers.clone())
            .body(request.body.clone())
            .send();
        let outcome = tokio::select! {
            biased;
            _ = aborted_signal(abort) => return Err(SendFailure::Aborted),
            r = tokio::time::timeout(timeout, attempt) => r,
        };
        let (failure, retry_after) = match outcome {
            Err(_) => (failed(TIMED_OUT), None),
            Ok(Err(e)) if e.is_builder() => {
                // A URL the client cannot use: retrying will not help.
                return Err(failed(&format!("Invalid request: {}", e.without_url())));
            }
            Ok(Err(e)) => {
                tracing::debug!(error = %e.without_url(), "provider connection failed");
                (failed(CONNECTION_ERROR), None)
            }
            Ok(Ok(response)) if response.status().is_success() => return Ok(response),
            Ok(Ok(response)) => {
                let status = response.status();
                let retry = should_retry(status, response.headers());
                let after = retry_after(response.headers());
                if retry && retries_left > 0 {
                    tracing::debug!(%status, "provider answered with an error; retrying");
                    (failed(""), after)
                } else {
                    let text = tokio::select! {
                        biased;
                        _ = aborted_signal(abort) => return Err(SendFailure::Aborted),
                        t = response.text() => t.unwrap_or_else(|e| e.without_url().to_string()),
                    };
                    return Err(status_failure(status, &text, shape));
                }
            }
        };
        if retries_left == 0 {
            return Err(failure);
        }
        let delay = retry_after.unwrap_or_else(|| default_delay(max_retries - retries_left));
        retries_left -= 1;
        tokio::select! {
            biased;
            _ = aborted_signal(abort) => return Err(SendFailure::Aborted),
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

fn failed(message: &str) -> SendFailure {
    SendFailure::Failed {
        message: message.to_owned(),
        error: None,
    }
}

fn should_retry(status: StatusCode, headers: &HeaderMap) -> bool {
    match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
        Some("true") => return true,
        Some("false") => return false,
        _ => {}
    }
    matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error()
}

/// `retry-after-ms` (ms) or `retry-after` (seconds); an HTTP date is not read (the default
/// backoff applies instead).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_float)
    };
    let ms = number("retry-after-ms")
        .filter(|ms| *ms != 0.0)
        .or_else(|| number("retry-after").map(|s| s * 1000.0))
        .or_else(|| number("retry-after-ms"))?;
    Duration::try_from_secs_f64(ms.max(0.0) / 1000.0).ok()
}

/// JavaScript's `parseFloat`: the longest numeric prefix after leading whitespace.
fn parse_float(text: &str) -> Option<f64> {
    let t = text.trim_start();
    (1..=t.len())
        .rev()
        .filter(|&n| t.is_char_boundary(n))
        .find_map(|n| t[..n].parse::<f64>().ok().filter(|v| v.is_finite()))
}

/// The SDKs' default backoff for retry number `n` (0-based).
fn default_delay(n: u32) -> Duration {
    let seconds = (0.5 * 2f64.powi(n as i32)).min(8.0);
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let jitter = 1.0 - (random as f64 / u64::MAX as f64) * 0.25;
    Duration::from_secs_f64(seconds * jitter)
}

/// The SDK error for an HTTP error answer with body `text`.
pub(crate) fn status_failure(status: StatusCode, text: &str, shape: ErrorShape) -> SendFailure {
    // safeJSON: a body that parses to a falsy value counts as no JSON, but is then not quoted
    // as text either.
    let json = serde_json::from_str::<Value>(text).ok();
    let message = match &json {
        Some(v) if truthy(v) => None,
        _ => Some(text),
    };
    let error = match shape {
        ErrorShape::Anthropic => json.filter(truthy),
        ErrorShape::OpenAi => json.filter(truthy).and_then(|v| v.get("error").cloned()),
    };
    SendFailure::Failed {
        message: make_message(Some(status.as_u16()), error.as_ref(), message),
        error,
    }
}

/// The SDKs' `APIError.makeMessage`: the error's `message`, else the error as JSON, else the
/// plain message, prefixed with the status when there is one.
pub(crate) fn make_message(
    status: Option<u16>,
    error: Option<&Value>,
    message: Option<&str>,
) -> String {
    let text = match error {
        Some(e) if e.get("message").is_some_and(truthy) => match e.get("message") {
            Some(Value::String(s)) => Some(s.clone()),
            other => other.map(Value::to_string),
        },
        Some(e) if truthy(e) => Some(e.to_string()),
        _ => message.filter(|m| !m.is_empty()).map(str::to_owned),
    };
    match (status, text) {
        (Some(s), Some(t)) => format!("{s} {t}"),
        (Some(s), None) => format!("{s} status code (no body)"),
        (None, Some(t)) => t,
        (None, None) => "(no status code or body)".to_owned(),
    }
}

/// JavaScript truthiness of a JSON value.
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// A response body read as server-sent events.
pub(crate) struct SseBody {
    response: Response,
    parser: SseParser,
    ready: VecDeque<SseEvent>,
    ended: bool,
    dispatch_trailing: bool,
}

impl SseBody {
    /// Reads `response`; `dispatch_trailing` as in [`SseParser::finish`].
    pub(crate) fn new(response: Response, dispatch_trailing: bool) -> SseBody {
        SseBody {
            response,
            parser: SseParser::new(),
            ready: VecDeque::new(),
            ended: false,
            dispatch_trailing,
        }
    }

    /// The next event, `None` at the end of the body.
    ///
    /// Errors: [`BODY_TERMINATED`] when the body breaks off (connection reset, incomplete
    /// chunked encoding …).
    pub(crate) async fn next(&mut self) -> Result<Option<SseEvent>, String> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            if self.ended {
                return Ok(None);
            }
            match self.response.chunk().await {
                Ok(Some(bytes)) => self.ready.extend(self.parser.push(&bytes)),
                Ok(None) => {
                    self.ended = true;
                    self.ready
                        .extend(self.parser.finish(self.dispatch_trailing));
                }
                Err(e) => {
                    tracing::debug!(error = %e.without_url(), "provider body broke off");
                    return Err(BODY_TERMINATED.to_owned());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(status: u16, body: &str, shape: ErrorShape) -> String {
        match status_failure(StatusCode::from_u16(status).expect("status"), body, shape) {
            SendFailure::Failed { message, .. } => message,
            SendFailure::Aborted => "aborted".into(),
        }
    }

    #[test]
    fn error_texts_are_the_sdks() {
        let anthropic =
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
        assert_eq!(
            message(429, anthropic, ErrorShape::Anthropic),
            format!("429 {anthropic}")
        );
        let openai = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
        assert_eq!(
            message(429, openai, ErrorShape::OpenAi),
            "429 Rate limit reached"
        );
        assert_eq!(
            message(500, "upstream broke", ErrorShape::OpenAi),
            "500 upstream broke"
        );
        assert_eq!(
            message(413, "", ErrorShape::Anthropic),
            "413 status code (no body)"
        );
        assert_eq!(
            message(400, r#"{"detail":"x"}"#, ErrorShape::OpenAi),
            "400 status code (no body)"
        );
        assert_eq!(
            message(400, r#"{"message":"top"}"#, ErrorShape::Anthropic),
            "400 top"
        );
        assert_eq!(
            make_message(None, Some(&json!({"code": 1})), None),
            r#"{"code":1}"#
        );
        assert_eq!(make_message(None, None, None), "(no status code or body)");
    }

    #[test]
    fn retry_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", "2".parse().expect("value"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "15.5ms".parse().expect("value"));
        assert_eq!(retry_after(&h), Some(Duration::from_micros(15_500)));
        h.insert("x-should-retry", "false".parse().expect("value"));
        assert!(!should_retry(StatusCode::TOO_MANY_REQUESTS, &h));
        assert!(should_retry(StatusCode::BAD_GATEWAY, &HeaderMap::new()));
        assert!(!should_retry(StatusCode::BAD_REQUEST, &HeaderMap::new()));
        let d = default_delay(1);
        assert!(d <= Duration::from_secs(1) && d >= Duration::from_millis(750));
    }
}
