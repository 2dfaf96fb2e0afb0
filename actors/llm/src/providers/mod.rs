//! Streaming providers for real models: the Anthropic Messages API ([`anthropic`]), OpenAI
//! Chat Completions, which any OpenAI-compatible server speaks ([`openai`]), the OpenAI
//! Responses API ([`responses`]) and Google's Generative Language API for Gemini
//! ([`google`]).
//!
//! Each follows pi-ai's provider of the same API (0.73.1's `providers/anthropic.js` and
//! `openai-completions.js`; 1.6.0's `api/openai-responses.js` and
//! `api/google-generative-ai.js`): the same request body, headers, stream events, usage and
//! cost, stop reasons and error texts, so the retry classifier (agent-and-events.md §4) and the
//! overflow check ([`crate::overflow`], compaction.md §3) react to a reply as pi's do.
//!
//! - [`provider_for`] / [`provider_with`]: pick the provider for a [`Model`] by its `api`.
//! - [`sse`]: server-sent events; [`partial_json`]: tool arguments that are still arriving.
//! - `http`: the SDKs' retries and error texts; `transform`: pi-ai's `transformMessages`.
//!
//! A provider never fails other than through its final message (`stopReason` `error` or
//! `aborted` with `errorMessage`), and the API key is never part of an error, a log line or a
//! trace.

pub mod anthropic;
mod anthropic_request;
mod error_text;
pub mod google;
mod google_request;
mod http;
pub mod openai;
mod openai_compat;
mod openai_request;
pub mod partial_json;
pub mod responses;
mod responses_errors;
mod responses_request;
mod responses_stream;
mod simple_options;
pub mod sse;
pub(crate) mod strict_schema;
mod transform;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use pith_events::clock::{Clock, SystemClock};
use pith_events::{AssistantMessage, StopReason, StreamKind, StreamUpdate};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::model::{Api, Model};
use crate::provider::{Provider, ProviderEvent};
use http::{
    BodyError, ErrorShape, Failed, Framing, HttpRequest, RetryPolicy, SendFailure, SseBody,
};
use sse::SseEvent;

pub use crate::error::Error;

/// How long Anthropic may keep the prompt cache (pi-ai's `CacheRetention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheRetention {
    /// No `cache_control` markers at all.
    None,
    /// `{"type":"ephemeral"}` (5 minutes).
    Short,
    /// `{"type":"ephemeral","ttl":"1h"}` where the model allows it.
    Long,
}

impl CacheRetention {
    /// pi's default: `long` when `PI_CACHE_RETENTION=long`, else `short`.
    pub fn from_env() -> CacheRetention {
        match std::env::var("PI_CACHE_RETENTION").as_deref() {
            Ok("long") => CacheRetention::Long,
            _ => CacheRetention::Short,
        }
    }
}

/// What pi passes to a provider besides the model and context (its `SimpleStreamOptions`).
#[derive(Clone)]
pub struct ProviderOptions {
    /// Stamps `timestamp` (ms) on each reply when the request starts, as pi's `Date.now()`.
    pub clock: Arc<dyn Clock>,
    /// Retries of one request inside the provider: pi's `retry.provider.maxRetries`, 0 by
    /// default since pi 0.76 (the SDKs retried twice on their own before), so every failure
    /// reaches the agent's own retry (agent-and-events.md §4) and is recorded.
    pub max_retries: u32,
    /// Longest wait a server may ask for between those retries (`retry-after`); a longer one
    /// fails the request at once. pi's `retry.provider.maxRetryDelayMs` (60000; 0 = no limit,
    /// `None` here).
    pub max_retry_delay: Option<Duration>,
    /// Longest wait for the response head of one attempt: pi's `retry.provider.timeoutMs`,
    /// which defaults to `httpIdleTimeoutMs` (300000 ms).
    pub timeout: Duration,
    /// Longest silence while the body streams: pi's `httpIdleTimeoutMs` (300000 ms; `None`
    /// when 0 or `"disabled"`). A stalled stream ends the reply with an error instead of
    /// waiting for ever.
    pub idle_timeout: Option<Duration>,
    /// Prompt-cache markers (Anthropic, and OpenRouter's Anthropic models).
    pub cache_retention: CacheRetention,
    /// Thinking budgets in tokens by level (`minimal`, `low`, `medium`, `high`) replacing
    /// pi's defaults 1024/2048/8192/16384 (settings `thinkingBudgets`).
    pub thinking_budgets: BTreeMap<String, u64>,
    /// Extra headers sent after the model's own (pi's `options.headers`).
    pub headers: BTreeMap<String, String>,
}

impl ProviderOptions {
    /// Takes the `retry.provider.*` and `httpIdleTimeoutMs` settings (pi 1.6.0's names and
    /// defaults: [`crate::retry::ProviderRetrySettings`]).
    pub fn apply_retry(&mut self, settings: &crate::retry::ProviderRetrySettings) {
        self.max_retries = settings.max_retries;
        self.max_retry_delay = (settings.max_retry_delay_ms > 0)
            .then(|| Duration::from_millis(settings.max_retry_delay_ms));
        let limit = |ms: u64| (ms > 0).then(|| Duration::from_millis(ms));
        self.idle_timeout = limit(settings.http_idle_timeout_ms);
        // No limit is a wait longer than any run (tokio clamps far deadlines).
        self.timeout = limit(settings.timeout_ms.unwrap_or(settings.http_idle_timeout_ms))
            .unwrap_or(Duration::MAX);
    }
}

impl Default for ProviderOptions {
    fn default() -> ProviderOptions {
        ProviderOptions {
            clock: Arc::new(SystemClock),
            max_retries: 0,
            max_retry_delay: Some(Duration::from_secs(60)),
            timeout: Duration::from_millis(crate::retry::HTTP_IDLE_TIMEOUT_MS),
            idle_timeout: Some(Duration::from_millis(crate::retry::HTTP_IDLE_TIMEOUT_MS)),
            cache_retention: CacheRetention::from_env(),
            thinking_budgets: BTreeMap::new(),
            headers: BTreeMap::new(),
        }
    }
}

impl std::fmt::Debug for ProviderOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values may hold credentials: only their names are shown.
        f.debug_struct("ProviderOptions")
            .field("max_retries", &self.max_retries)
            .field("max_retry_delay", &self.max_retry_delay)
            .field("timeout", &self.timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("cache_retention", &self.cache_retention)
            .field("thinking_budgets", &self.thinking_budgets)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The provider for `model` with default [`ProviderOptions`]; see [`provider_with`].
///
/// Errors: as [`provider_with`].
pub fn provider_for(model: Model, api_key: Option<String>) -> Result<Arc<dyn Provider>, Error> {
    provider_with(model, api_key, ProviderOptions::default())
}

/// The provider for `model`, chosen by `model.api`: `anthropic-messages` →
/// [`anthropic::Anthropic`], `openai-completions` → [`openai::OpenAiCompletions`],
/// `openai-responses` → [`responses::OpenAiResponses`], `google-generative-ai` →
/// [`google::Gemini`]. Requests go to `{baseUrl}/v1/messages`, `{baseUrl}/chat/completions`,
/// `{baseUrl}/responses` and `{baseUrl}/models/{id}:streamGenerateContent?alt=sse`. `api_key`
/// is sent as `x-api-key` / `Authorization: Bearer` / `x-goog-api-key`; an OpenAI-compatible
/// server may need none (the header is then left out). All providers share one HTTP client.
///
/// Errors: [`Error::UnsupportedApi`] for any other API (also `faux`), [`Error::NoApiKey`] for
/// Anthropic and Gemini without a key and the Responses API without a key or an
/// `Authorization` header, [`Error::Client`] when no HTTP client can be built.
pub fn provider_with(
    model: Model,
    api_key: Option<String>,
    options: ProviderOptions,
) -> Result<Arc<dyn Provider>, Error> {
    let api_key = api_key.filter(|k| !k.is_empty()).map(ApiKey);
    match model.api {
        Api::AnthropicMessages => {
            let Some(key) = api_key else {
                return Err(Error::NoApiKey {
                    provider: model.provider,
                });
            };
            Ok(Arc::new(anthropic::Anthropic::new(
                model,
                key,
                options,
                client()?,
            )))
        }
        Api::OpenAiCompletions => Ok(Arc::new(openai::OpenAiCompletions::new(
            model,
            api_key,
            options,
            client()?,
        ))),
        Api::GoogleGenerativeAi => {
            let Some(key) = api_key else {
                return Err(Error::NoApiKey {
                    provider: model.provider,
                });
            };
            Ok(Arc::new(google::Gemini::new(
                model,
                key,
                options,
                client()?,
            )))
        }
        Api::OpenAiResponses => {
            // pi's `getClientApiKey`: an `Authorization` header of the model or the options
            // stands in for a key.
            let authorized = model
                .headers
                .iter()
                .flatten()
                .chain(options.headers.iter())
                .any(|(k, v)| {
                    (k.eq_ignore_ascii_case("authorization")
                        || k.eq_ignore_ascii_case("cf-aig-authorization"))
                        && !v.trim().is_empty()
                });
            if api_key.is_none() && !authorized {
                return Err(Error::NoApiKey {
                    provider: model.provider,
                });
            }
            Ok(Arc::new(responses::OpenAiResponses::new(
                model,
                api_key,
                options,
                client()?,
            )))
        }
        Api::Faux | Api::Other(_) => Err(Error::UnsupportedApi {
            api: model.api.as_str().to_owned(),
            provider: model.provider,
            id: model.id,
        }),
    }
}

/// The one HTTP client (connection pools are per client).
fn client() -> Result<reqwest::Client, Error> {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    if let Some(c) = CLIENT.get() {
        return Ok(c.clone());
    }
    let built = reqwest::Client::builder()
        .user_agent(concat!("pith/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::Client(e.to_string()))?;
    Ok(CLIENT.get_or_init(|| built).clone())
}

/// An API key. Its `Debug` hides it, so no derived `Debug` of a provider can print it.
#[derive(Clone)]
pub(crate) struct ApiKey(String);

impl ApiKey {
    /// The key itself, for the one header that carries it.
    fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// `{base}{path}` joined as the SDKs' `buildURL` does: one slash between them.
fn endpoint(base: &str, path: &str) -> String {
    if base.ends_with('/') && path.starts_with('/') {
        format!("{base}{}", &path[1..])
    } else {
        format!("{base}{path}")
    }
}

/// Headers in order, later ones replacing earlier ones of the same name (case-insensitive),
/// as the SDKs merge them. A name or value HTTP cannot carry is skipped (and named in a
/// debug log without its value).
fn header_map<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    sensitive: &[&str],
) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let (Ok(n), Ok(mut v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) else {
            tracing::debug!(header = name, "skipping a header HTTP cannot carry");
            continue;
        };
        if sensitive.iter().any(|s| n.as_str().eq_ignore_ascii_case(s)) {
            v.set_sensitive(true);
        }
        map.insert(n, v);
    }
    map
}

pub(crate) use crate::model::clamp_thinking_level;

/// The reply being built, and the events it has produced but not yet sent.
pub(crate) struct Output {
    /// The message so far (pi's `output`).
    pub msg: AssistantMessage,
    pending: Vec<ProviderEvent>,
}

impl Output {
    fn new(msg: AssistantMessage) -> Output {
        Output {
            msg,
            pending: Vec::new(),
        }
    }

    /// Queues a `StreamUpdate` for the change just made to the message (only the change,
    /// and the whole block at its end: [`StreamUpdate::of`]).
    pub(crate) fn update(&mut self, kind: StreamKind, content_index: usize, delta: Option<String>) {
        self.pending.push(ProviderEvent::Update {
            update: StreamUpdate::of(kind, content_index, delta, &self.msg),
            usage: self.msg.usage.clone(),
        });
    }
}

/// What turns one API's event stream into a reply.
pub(crate) trait ReplyStream: Send + 'static {
    /// How the body is cut into events.
    const FRAMING: Framing;

    /// Applies one event. `Err` ends the reply with that error text.
    fn event(&mut self, event: SseEvent, out: &mut Output) -> Result<(), Error>;

    /// The body ended. `Err` ends the reply with that error text (e.g. a final stop reason
    /// that is an error).
    fn end(&mut self, out: &mut Output) -> Result<(), Error>;

    /// The user aborted while the body was streaming: last words before the aborted reply,
    /// and its error text.
    fn aborted(&mut self, out: &mut Output) -> &'static str;

    /// The error text for a request that failed before streaming.
    fn request_failed(&self, failure: Failed) -> String {
        failure.message
    }
}

/// Everything one streamed request needs.
pub(crate) struct Call {
    pub client: reqwest::Client,
    pub request: HttpRequest,
    pub retry: RetryPolicy,
    pub shape: ErrorShape,
    /// Longest silence of the body (`httpIdleTimeoutMs`); `None`: no limit.
    pub idle: Option<Duration>,
}

impl Call {
    /// A call of `request` with the retry settings of `options`.
    pub(crate) fn new(
        client: reqwest::Client,
        request: HttpRequest,
        options: &ProviderOptions,
        shape: ErrorShape,
    ) -> Call {
        Call {
            client,
            request,
            retry: RetryPolicy {
                max_retries: options.max_retries,
                timeout: options.timeout,
                max_retry_delay: options.max_retry_delay,
            },
            shape,
            idle: options.idle_timeout,
        }
    }
}

/// pi's text for an abort noticed between two reads of the body (pi-ai checks the signal
/// before each read).
pub(crate) const ABORTED: &str = "Request was aborted";

/// Starts `call` on its own task and streams `reply`'s events; the last one is always a
/// [`ProviderEvent::Done`]. The reply's stop reason on failure is `aborted` when `abort` is
/// set, else `error`, as in pi's `catch`. `Start` is only sent once the response arrived, as
/// pi pushes `start` after the SDK returned.
pub(crate) fn spawn<R: ReplyStream>(
    call: Call,
    mut reply: R,
    msg: AssistantMessage,
    abort: CancellationToken,
) -> mpsc::Receiver<ProviderEvent> {
    let (tx, rx) = mpsc::channel(64);
    // pi-ai's `AssistantMessageEventStream` times the response from the stream's creation
    // with a monotonic clock (tokio's: paused in tests).
    let started = tokio::time::Instant::now();
    tokio::spawn(async move {
        let mut out = Output::new(msg);
        let sent = run(&call, &mut reply, &mut out, &abort, &tx).await;
        let final_message = match sent {
            Ok(()) => out.msg,
            Err(Stop::Receiver) => return,
            Err(Stop::Failed(message)) => {
                let mut m = out.msg;
                m.stop_reason = if abort.is_cancelled() {
                    StopReason::Aborted
                } else {
                    StopReason::Error
                };
                m.error_message = Some(message);
                m
            }
        };
        let mut final_message = final_message;
        // `durationMs` of the final message (done or error), in whole ms, rounded as pi does.
        final_message.duration_ms = Some((started.elapsed().as_secs_f64() * 1000.0).round() as u64);
        let _ = tx.send(ProviderEvent::Done(final_message)).await;
    });
    rx
}

/// A reply that fails before any request: `Done(msg)` with `text` as its error.
pub(crate) fn failed_now(mut msg: AssistantMessage, text: String) -> mpsc::Receiver<ProviderEvent> {
    let (tx, rx) = mpsc::channel(1);
    msg.stop_reason = StopReason::Error;
    msg.error_message = Some(text);
    // Timed like every response; this one took no time.
    msg.duration_ms = Some(0);
    // The channel is new and has room for this one event.
    let _ = tx.try_send(ProviderEvent::Done(msg));
    rx
}

enum Stop {
    /// Nobody listens any more: drop everything.
    Receiver,
    /// The reply failed with this text.
    Failed(String),
}

async fn flush(out: &mut Output, tx: &mpsc::Sender<ProviderEvent>) -> Result<(), Stop> {
    for event in out.pending.drain(..) {
        tx.send(event).await.map_err(|_| Stop::Receiver)?;
    }
    Ok(())
}

async fn run<R: ReplyStream>(
    call: &Call,
    reply: &mut R,
    out: &mut Output,
    abort: &CancellationToken,
    tx: &mpsc::Sender<ProviderEvent>,
) -> Result<(), Stop> {
    let response =
        match http::send(&call.client, &call.request, call.retry, call.shape, abort).await {
            Ok(r) => r,
            Err(SendFailure::Aborted) => {
                return Err(Stop::Failed(http::ABORTED_BEFORE_RESPONSE.to_owned()));
            }
            Err(SendFailure::Failed(failure)) => {
                return Err(Stop::Failed(reply.request_failed(failure)));
            }
        };
    tracing::debug!(status = %response.status(), "provider streaming");
    tx.send(ProviderEvent::Start(out.msg.clone()))
        .await
        .map_err(|_| Stop::Receiver)?;
    let response = http::refuse_html_page(response)
        .await
        .map_err(Stop::Failed)?;
    let mut body = SseBody::new(response, R::FRAMING, call.idle);
    loop {
        let next = tokio::select! {
            biased;
            () = abort.cancelled() => None,
            n = body.next() => Some(n),
        };
        let step = match next {
            None => {
                let text = reply.aborted(out);
                flush(out, tx).await?;
                return Err(Stop::Failed(text.to_owned()));
            }
            Some(Err(BodyError::Terminated)) => Err(Error::from(http::BODY_TERMINATED)),
            Some(Err(BodyError::Framing(e))) => Err(Error::from(e)),
            Some(Err(BodyError::Idle(idle))) => Err(Error::from(http::idle_message(idle))),
            Some(Ok(Some(event))) => reply.event(event, out),
            Some(Ok(None)) => {
                let end = reply.end(out);
                flush(out, tx).await?;
                if abort.is_cancelled() {
                    return Err(Stop::Failed(ABORTED.to_owned()));
                }
                return end.map_err(|e| Stop::Failed(e.to_string()));
            }
        };
        flush(out, tx).await?;
        step.map_err(|e| Stop::Failed(e.to_string()))?;
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
    fn endpoints_join_like_the_sdks() {
        assert_eq!(
            endpoint("https://api.anthropic.com", "/v1/messages"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            endpoint("http://h/v1/", "/chat/completions"),
            "http://h/v1/chat/completions"
        );
    }

    #[test]
    fn keys_do_not_show_in_debug() {
        let key = ApiKey("sk-secret".into());
        assert!(!format!("{key:?}").contains("secret"));
        let map = header_map([("x-api-key", "sk-secret")], &["x-api-key"]);
        assert!(!format!("{map:?}").contains("secret"));
        let mut m = model(true, json!(null));
        m.headers = Some([("authorization".to_owned(), "Bearer hdr-secret".to_owned())].into());
        let options = ProviderOptions {
            headers: [("x-token".to_owned(), "opt-secret".to_owned())].into(),
            ..ProviderOptions::default()
        };
        let client = reqwest::Client::new();
        let a = anthropic::Anthropic::new(m.clone(), key.clone(), options.clone(), client.clone());
        let o = openai::OpenAiCompletions::new(m, Some(key), options, client);
        for text in [format!("{a:?}"), format!("{o:?}")] {
            assert!(!text.contains("secret"), "{text}");
        }
    }
}
