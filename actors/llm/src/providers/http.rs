//! The HTTP side shared by both providers, shaped after the Anthropic and OpenAI TypeScript
//! SDKs that pi uses: one POST with the SDKs' retry policy, their error texts, and the body
//! read as server-sent events.

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{Client, Response, StatusCode};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use pith_events::js::to_js_json;

use super::sse::{GeminiChunks, SseEvent, SseParser};

/// The text of an abort before the response arrived: pi-ai 1.6.0 sends every request through
/// its own retry loop (`retryProviderRequest`), which answers an aborted signal with
/// `Request aborted` whatever the SDK threw.
pub(crate) const ABORTED_BEFORE_RESPONSE: &str = "Request aborted";
/// The SDKs' `APIConnectionError` text (refused, reset, DNS, TLS …).
const CONNECTION_ERROR: &str = "Connection error.";
/// The SDKs' `APIConnectionTimeoutError` text.
const TIMED_OUT: &str = "Request timed out.";
/// What pi 1.6.0 writes when the server closes the connection mid-body: Node's fetch (undici)
/// says `terminated`, and pi-ai's providers append the cause (`withCauseDetail`); checked
/// against pi 1.6.0 for OpenAI Chat Completions and Anthropic. The retry classifier matches
/// it (`terminated`).
pub(crate) const BODY_TERMINATED: &str = "terminated: other side closed (UND_ERR_SOCKET)";

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
/// OpenAI's takes its `error` member, Google's quotes the whole body (wrapping a body that is
/// not JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorShape {
    /// `@anthropic-ai/sdk`: `error` = the body.
    Anthropic,
    /// `openai`: `error` = `body.error`.
    OpenAi,
    /// `@google/genai`: the message is the body as JSON; its retries ignore the response
    /// headers (pi-ai's `retryGoogleRequest` drops them).
    Google,
}

/// Why no response came.
#[derive(Debug)]
pub(crate) enum SendFailure {
    /// The abort signal fired first.
    Aborted,
    /// The server refused, or could not be reached.
    Failed(Failed),
}

/// A request that got no usable response.
#[derive(Debug, Clone, Default)]
pub(crate) struct Failed {
    /// The SDK's error text: `"<status> <message or JSON>"`, `"<status> status code (no
    /// body)"`, `"Connection error."`, `"Request timed out."`, or Google's body as JSON.
    pub message: String,
    /// The `error` value the SDK kept (OpenAI's provider reads OpenRouter details from it).
    pub error: Option<Value>,
    /// The HTTP status, for an answer that was an error.
    pub status: Option<u16>,
    /// What failed.
    pub kind: FailureKind,
}

/// What kind of failure a [`Failed`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum FailureKind {
    /// An HTTP error status.
    #[default]
    Status,
    /// No connection (refused, reset, DNS, TLS …).
    Connection,
    /// No response head within the timeout.
    Timeout,
    /// The request could not be made at all, or the server asked for a longer wait than
    /// allowed: the message says which.
    Other,
}

/// How a request is retried inside the provider (pi-ai's `retryProviderRequest`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    /// Retries after the first attempt (`retry.provider.maxRetries`, default 0).
    pub max_retries: u32,
    /// Longest wait for the response head of one attempt.
    pub timeout: Duration,
    /// Longest wait a server may ask for (`retry-after`); longer fails at once. `None`: no
    /// limit (`retry.provider.maxRetryDelayMs` 0).
    pub max_retry_delay: Option<Duration>,
}

/// Sends `request`, retrying as pi-ai's `retryProviderRequest` does: up to
/// `policy.max_retries` more times on a connection error, a timeout, or a 408/409/429/5xx
/// answer (an `x-should-retry` header overrides), waiting `retry-after-ms`/`retry-after` or
/// 0.5 s × 2ⁿ (at most 8 s, minus up to 25% jitter). A server asking for a longer wait than
/// `policy.max_retry_delay` ends the request with `Server requested <n>s retry delay (max:
/// <m>s). <message>`. Google's errors carry no headers, so for [`ErrorShape::Google`] only
/// the status counts. `policy.timeout` bounds the wait for the response head of each
/// attempt. The waits end early on abort.
///
/// Errors: [`SendFailure::Aborted`], or the SDK's text for the last failure (see [`Failed`]).
pub(crate) async fn send(
    client: &Client,
    request: &HttpRequest,
    policy: RetryPolicy,
    shape: ErrorShape,
    abort: &CancellationToken,
) -> Result<Response, SendFailure> {
    let mut retries_left = policy.max_retries;
    loop {
        if abort.is_cancelled() {
            return Err(SendFailure::Aborted);
        }
        let attempt = client
            .post(&request.url)
            .headers(request.headers.clone())
            .body(request.body.clone())
            .send();
        let outcome = tokio::select! {
            biased;
            () = abort.cancelled() => return Err(SendFailure::Aborted),
            r = tokio::time::timeout(policy.timeout, attempt) => r,
        };
        let (failure, retry_after) = match outcome {
            Err(_) => (failed(TIMED_OUT, FailureKind::Timeout), None),
            Ok(Err(e)) if e.is_builder() => {
                // A URL the client cannot use: retrying will not help.
                return Err(SendFailure::Failed(failed(
                    &format!("Invalid request: {}", e.without_url()),
                    FailureKind::Other,
                )));
            }
            Ok(Err(e)) => {
                let text = connection_error_text(&e, &request.url).await;
                tracing::debug!(error = %e.without_url(), "provider connection failed");
                (failed(&text, FailureKind::Connection), None)
            }
            Ok(Ok(response)) if response.status().is_success() => return Ok(response),
            Ok(Ok(response)) => {
                let status = response.status();
                let headers = (shape != ErrorShape::Google).then(|| response.headers().clone());
                let retry = match &headers {
                    Some(h) => should_retry(status, h),
                    None => is_retryable_status(status),
                };
                let content_type = response
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                let text = tokio::select! {
                    biased;
                    () = abort.cancelled() => return Err(SendFailure::Aborted),
                    t = response.text() => t.unwrap_or_else(|e| e.without_url().to_string()),
                };
                let failure = status_failure(status, &text, &content_type, shape);
                if !retry || retries_left == 0 {
                    return Err(SendFailure::Failed(failure));
                }
                tracing::debug!(%status, "provider answered with an error; retrying");
                (failure, headers.as_ref().and_then(retry_after))
            }
        };
        if retries_left == 0 {
            return Err(SendFailure::Failed(failure));
        }
        if let (Some(wait), Some(max)) = (retry_after, policy.max_retry_delay)
            && wait > max
        {
            let secs = |d: Duration| (d.as_secs_f64()).ceil() as u64;
            return Err(SendFailure::Failed(failed(
                &format!(
                    "Server requested {}s retry delay (max: {}s). {}",
                    secs(wait),
                    secs(max),
                    failure.message
                ),
                FailureKind::Other,
            )));
        }
        let delay = retry_after.unwrap_or_else(|| default_delay(policy.max_retries - retries_left));
        retries_left -= 1;
        tokio::select! {
            biased;
            () = abort.cancelled() => return Err(SendFailure::Aborted),
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// The SDKs' `Connection error.` with the deepest cause appended as pi-ai's `withCauseDetail`
/// does (`Connection error.: connect ECONNREFUSED 127.0.0.1:8080`), where Node's text for the
/// cause is known: a refused connection (Node names the address it tried: the URL's IP, or
/// the first address a host name resolves to, e.g. `localhost`), a host name that does not
/// resolve (`getaddrinfo ENOTFOUND <host>`). Other causes keep the bare text.
async fn connection_error_text(error: &reqwest::Error, url: &str) -> String {
    let mut io_kind = None;
    let mut dns = false;
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            io_kind = Some(io.kind());
        }
        dns |= e.to_string().contains("dns error");
        source = e.source();
    }
    let Ok(url) = reqwest::Url::parse(url) else {
        return CONNECTION_ERROR.to_owned();
    };
    let port = url.port_or_known_default().unwrap_or(0);
    let host = url.host_str().unwrap_or("");
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let ip = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => Some(ip),
        Err(_) if io_kind == Some(std::io::ErrorKind::ConnectionRefused) => {
            tokio::net::lookup_host((bare, port))
                .await
                .ok()
                .and_then(|mut addrs| addrs.next())
                .map(|a| a.ip())
        }
        Err(_) => None,
    };
    match (ip, io_kind) {
        (Some(ip), Some(std::io::ErrorKind::ConnectionRefused)) => {
            format!("{CONNECTION_ERROR}: connect ECONNREFUSED {ip}:{port}")
        }
        (_, _) if dns && !host.is_empty() => {
            format!("{CONNECTION_ERROR}: getaddrinfo ENOTFOUND {host}")
        }
        _ => CONNECTION_ERROR.to_owned(),
    }
}

fn failed(message: &str, kind: FailureKind) -> Failed {
    Failed {
        message: message.to_owned(),
        error: None,
        status: None,
        kind,
    }
}

fn should_retry(status: StatusCode, headers: &HeaderMap) -> bool {
    match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
        Some("true") => return true,
        Some("false") => return false,
        _ => {}
    }
    is_retryable_status(status)
}

fn is_retryable_status(status: StatusCode) -> bool {
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

/// The SDK error for an HTTP error answer with body `text` of `content_type`.
pub(crate) fn status_failure(
    status: StatusCode,
    text: &str,
    content_type: &str,
    shape: ErrorShape,
) -> Failed {
    if shape == ErrorShape::Google {
        return google_status_failure(status, text, content_type);
    }
    // safeJSON: a body that parses to a falsy value counts as no JSON, but is then not quoted
    // as text either.
    let json = serde_json::from_str::<Value>(text).ok();
    let message = match &json {
        Some(v) if truthy(v) => None,
        _ => Some(text),
    };
    let error = match shape {
        ErrorShape::Anthropic => json.filter(truthy),
        ErrorShape::OpenAi | ErrorShape::Google => {
            json.filter(truthy).and_then(|v| v.get("error").cloned())
        }
    };
    Failed {
        message: make_message(Some(status.as_u16()), error.as_ref(), message),
        error,
        status: Some(status.as_u16()),
        kind: FailureKind::Status,
    }
}

/// `@google/genai`'s `throwErrorIfNotOK`: a JSON body (by `content-type`) as
/// `JSON.stringify` writes it, any other body wrapped as `{"error":{"message":<text>,
/// "code":<status>,"status":<status text>}}`. A JSON `content-type` with a body that is not
/// JSON fails to parse, and that parse error is the message.
fn google_status_failure(status: StatusCode, text: &str, content_type: &str) -> Failed {
    let code = status.as_u16();
    let body = if content_type.contains("application/json") {
        match serde_json::from_str::<Value>(text) {
            Ok(v) => v,
            Err(e) => {
                return Failed {
                    message: json_syntax_error(text, &e),
                    error: None,
                    status: None,
                    kind: FailureKind::Other,
                };
            }
        }
    } else {
        serde_json::json!({"error": {
            "message": text,
            "code": code,
            "status": status.canonical_reason().unwrap_or(""),
        }})
    };
    Failed {
        message: to_js_json(&body).unwrap_or_default(),
        error: None,
        status: Some(code),
        kind: FailureKind::Status,
    }
}

/// V8's `SyntaxError` text for `JSON.parse(text)` failing as `error` says (close to it: V8
/// quotes long texts in part).
pub(crate) fn json_syntax_error(text: &str, error: &serde_json::Error) -> String {
    if error.is_eof() || text.trim().is_empty() {
        return "Unexpected end of JSON input".to_owned();
    }
    // serde_json's column is 1-based and points at the offending character.
    let line = text
        .lines()
        .nth(error.line().saturating_sub(1))
        .unwrap_or("");
    let bad = line
        .chars()
        .nth(error.column().saturating_sub(1))
        .or_else(|| text.trim_start().chars().next())
        .unwrap_or(' ');
    format!("Unexpected token '{bad}', \"{text}\" is not valid JSON")
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

/// How a response body is cut into events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Server-sent events; `dispatch_trailing` as in [`SseParser::finish`].
    Sse {
        /// Whether an event cut off by the end of the body still counts.
        dispatch_trailing: bool,
    },
    /// `@google/genai`'s splitter ([`GeminiChunks`]).
    Gemini,
}

enum Framer {
    Sse(SseParser, bool),
    Gemini(GeminiChunks),
}

/// Why a body stopped yielding events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// The connection broke off (reset, incomplete chunked encoding …).
    Terminated,
    /// The framing rejected the end of the body; the text says why.
    Framing(String),
    /// No byte arrived for this long (`httpIdleTimeoutMs`).
    Idle(Duration),
}

/// The error text of a body that stalled for `idle`: names the setting, and reads as a
/// timeout so that the agent's retry takes it (agent-and-events.md §4).
pub(crate) fn idle_message(idle: Duration) -> String {
    let ms = idle.as_millis();
    let span = if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    };
    format!(
        "Stream timed out: no data from the provider for {span} (settings.json: httpIdleTimeoutMs)"
    )
}

/// How much of an HTML page is read to say what it is.
const PAGE_PEEK_BYTES: usize = 4096;
/// How long reading that may take.
const PAGE_PEEK_TIME: Duration = Duration::from_secs(10);

/// `response` itself, unless it is an HTML page (`content-type: text/html`: a proxy's or a
/// captive portal's page, or a `baseUrl` that names a web site): that is no model stream, and
/// read as one it would end as an empty reply. Its `<title>` (or its first words) go into the
/// error text.
///
/// Errors: the text for the failed reply.
pub(crate) async fn refuse_html_page(mut response: Response) -> Result<Response, String> {
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if !content_type.starts_with("text/html") {
        return Ok(response);
    }
    let mut bytes = Vec::new();
    let peek = async {
        while bytes.len() < PAGE_PEEK_BYTES {
            match response.chunk().await {
                Ok(Some(b)) => bytes.extend_from_slice(&b),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(PAGE_PEEK_TIME, peek).await;
    Err(format!(
        "The server answered with an HTML page instead of a model stream (check the provider's baseUrl): {}",
        page_summary(&String::from_utf8_lossy(&bytes))
    ))
}

/// A page's `<title>`, else its first 120 characters, whitespace collapsed.
fn page_summary(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let title = lower.find("<title").and_then(|start| {
        let open = start + lower[start..].find('>')? + 1;
        let close = open + lower[open..].find("</title")?;
        Some(&html[open..close])
    });
    let text = title.unwrap_or(html);
    let collapsed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let short: String = collapsed.chars().take(120).collect();
    if short.is_empty() {
        "(empty page)".to_owned()
    } else {
        short
    }
}

/// A response body read as events.
pub(crate) struct SseBody {
    response: Response,
    framer: Framer,
    ready: VecDeque<SseEvent>,
    ended: bool,
    /// Longest wait for the next bytes; `None`: no limit.
    idle: Option<Duration>,
}

impl SseBody {
    /// Reads `response`, cut as `framing` says.
    /// Reading fails with [`BodyError::Idle`] once no byte arrived for `idle`.
    pub(crate) fn new(response: Response, framing: Framing, idle: Option<Duration>) -> SseBody {
        let framer = match framing {
            Framing::Sse { dispatch_trailing } => Framer::Sse(SseParser::new(), dispatch_trailing),
            Framing::Gemini => Framer::Gemini(GeminiChunks::new()),
        };
        SseBody {
            response,
            framer,
            ready: VecDeque::new(),
            ended: false,
            idle,
        }
    }

    /// The next event, `None` at the end of the body.
    ///
    /// Errors: [`BodyError::Terminated`] when the body breaks off; [`BodyError::Framing`] when
    /// the framing rejects how it ends; [`BodyError::Idle`] when it stalls.
    pub(crate) async fn next(&mut self) -> Result<Option<SseEvent>, BodyError> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            if self.ended {
                return Ok(None);
            }
            let chunk = match self.idle {
                Some(idle) => match tokio::time::timeout(idle, self.response.chunk()).await {
                    Ok(chunk) => chunk,
                    Err(_) => return Err(BodyError::Idle(idle)),
                },
                None => self.response.chunk().await,
            };
            match chunk {
                Ok(Some(bytes)) => match &mut self.framer {
                    Framer::Sse(p, _) => self.ready.extend(p.push(&bytes)),
                    Framer::Gemini(g) => self.ready.extend(g.push(&bytes)),
                },
                Ok(None) => {
                    self.ended = true;
                    match &mut self.framer {
                        Framer::Sse(p, trailing) => self.ready.extend(p.finish(*trailing)),
                        Framer::Gemini(g) => g.finish().map_err(BodyError::Framing)?,
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e.without_url(), "provider body broke off");
                    return Err(BodyError::Terminated);
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
        let content_type = if body.starts_with('{') {
            "application/json"
        } else {
            "text/plain"
        };
        status_failure(
            StatusCode::from_u16(status).expect("status"),
            body,
            content_type,
            shape,
        )
        .message
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
