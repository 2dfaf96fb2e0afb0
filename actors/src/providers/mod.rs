//! Streaming providers for real models: the Anthropic Messages API ([`anthropic`]) and OpenAI
//! Chat Completions, which any OpenAI-compatible server speaks ([`openai`]).
//!
//! Each follows pi-ai's provider of the same API (`pi-ai/dist/providers/anthropic.js`,
//! `openai-completions.js`): the same request body, headers, stream events, usage and cost,
//! stop reasons and error texts, so the retry classifier (agent-and-events.md §4) and the
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
mod http;
pub mod openai;
mod openai_compat;
mod openai_request;
pub mod partial_json;
pub mod sse;
mod transform;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use pith_events::{AssistantMessage, StopReason, StreamKind, StreamUpdate};
use pith_store::env::{Clock, SystemClock};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::{mpsc, watch};

use crate::faux::aborted_signal;
use crate::model::{Api, Model};
use crate::provider::{Provider, ProviderEvent};
use http::{ErrorShape, HttpRequest, SendFailure, SseBody};
use sse::SseEvent;

/// Why no provider could be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The model's API is one pith cannot speak (`faux` is made elsewhere).
    #[error(
        "no streaming provider for api {api:?} (model {provider}/{id}); pith speaks anthropic-messages and openai-completions"
    )]
    UnsupportedApi {
        /// The model's `api`.
        api: String,
        /// Its provider.
        provider: String,
        /// Its id.
        id: String,
    },
    /// The Anthropic API needs a key (pi-ai's text).
    #[error("No API key for provider: {provider}")]
    NoApiKey {
        /// The model's provider.
        provider: String,
    },
    /// The HTTP client could not be built (TLS roots unavailable, …).
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

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
    /// Retries of one request inside the provider, as the SDKs do by default (2); pi's
    /// `retry.provider.maxRetries`. The agent's own retry (§4) comes on top.
    pub max_retries: u32,
    /// Longest wait for the response head of one attempt; the SDKs' default is 10 minutes,
    /// pi's `retry.provider.timeoutMs` overrides it.
    pub timeout: Duration,
    /// Prompt-cache markers (Anthropic, and OpenRouter's Anthropic models).
    pub cache_retention: CacheRetention,
    /// pi's session id: OpenAI's `prompt_cache_key` and the session-affinity headers some
    /// compatible servers want.
    pub session_id: Option<String>,
    /// Thinking budgets in tokens by level (`minimal`, `low`, `medium`, `high`) replacing
    /// pi's defaults 1024/2048/8192/16384 (settings `thinkingBudgets`).
    pub thinking_budgets: BTreeMap<String, u64>,
    /// Extra headers sent after the model's own (pi's `options.headers`).
    pub headers: BTreeMap<String, String>,
}

impl Default for ProviderOptions {
    fn default() -> ProviderOptions {
        ProviderOptions {
            clock: Arc::new(SystemClock),
            max_retries: 2,
            timeout: Duration::from_secs(600),
            cache_retention: CacheRetention::from_env(),
            session_id: None,
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
            .field("timeout", &self.timeout)
            .field("cache_retention", &self.cache_retention)
            .field("session_id", &self.session_id)
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
/// [`anthropic::Anthropic`], `openai-completions` → [`openai::OpenAiCompletions`]. Requests
/// go to `{baseUrl}/v1/messages` and `{baseUrl}/chat/completions`. `api_key` is sent as
/// `x-api-key` / `Authorization: Bearer`; an OpenAI-compatible server may need none (the
/// header is then left out). All providers share one HTTP client.
///
/// Errors: [`Error::UnsupportedApi`] for any other API (also `faux`), [`Error::NoApiKey`] for
/// Anthropic without a key, [`Error::Client`] when no HTTP client can be built.
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

/// pi-ai's `clampThinkingLevel`: the level itself when the model supports it, else the
/// nearest supported one above, else below (`off` for a model that cannot think). `xhigh`
/// counts as supported only when `thinkingLevelMap` names it; a level mapped to `null` never
/// does.
pub(crate) fn clamp_thinking_level(model: &Model, level: &str) -> String {
    const LEVELS: [&str; 6] = ["off", "minimal", "low", "medium", "high", "xhigh"];
    let map = model.thinking_level_map.as_ref();
    let supported = |l: &str| {
        if !LEVELS.contains(&l) {
            return false;
        }
        if !model.reasoning {
            return l == "off";
        }
        match map.and_then(|m| m.get(l)) {
            Some(None) => false,
            Some(Some(_)) => true,
            None => l != "xhigh",
        }
    };
    if supported(level) {
        return level.to_owned();
    }
    let available: Vec<&str> = LEVELS.into_iter().filter(|l| supported(l)).collect();
    let first = available.first().copied().unwrap_or("off");
    let Some(at) = LEVELS.iter().position(|l| *l == level) else {
        return first.to_owned();
    };
    LEVELS[at..]
        .iter()
        .chain(LEVELS[..at].iter().rev())
        .find(|l| available.contains(l))
        .copied()
        .unwrap_or(first)
        .to_owned()
}

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

    /// Queues a `StreamUpdate` with a copy of the message after the change.
    pub(crate) fn update(&mut self, kind: StreamKind, content_index: usize, delta: Option<String>) {
        self.pending.push(ProviderEvent::Update {
            update: StreamUpdate {
                kind,
                content_index,
                delta,
            },
            partial: self.msg.clone(),
        });
    }
}

/// What turns one API's event stream into a reply.
pub(crate) trait ReplyStream: Send + 'static {
    /// Whether an event cut off by the end of the body still counts (see
    /// [`sse::SseParser::finish`]).
    const DISPATCH_TRAILING: bool;

    /// The error text of a reply aborted while the body was streaming.
    const ABORTED_MID_STREAM: &'static str;

    /// Applies one event. `Err` ends the reply with that error text.
    fn event(&mut self, event: SseEvent, out: &mut Output) -> Result<(), String>;

    /// The body ended. `Err` ends the reply with that error text (e.g. a final stop reason
    /// that is an error).
    fn end(&mut self, out: &mut Output) -> Result<(), String>;

    /// The user aborted while the body was streaming; last words before the aborted reply.
    fn aborted(&mut self, out: &mut Output);

    /// The error text for a request that failed before streaming.
    fn request_failed(&self, message: String, _error: Option<&serde_json::Value>) -> String {
        message
    }
}

/// Everything one streamed request needs.
pub(crate) struct Call {
    pub client: reqwest::Client,
    pub request: HttpRequest,
    pub max_retries: u32,
    pub timeout: Duration,
    pub shape: ErrorShape,
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
    mut abort: watch::Receiver<bool>,
) -> mpsc::Receiver<ProviderEvent> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let mut out = Output::new(msg);
        let sent = run(&call, &mut reply, &mut out, &mut abort, &tx).await;
        let final_message = match sent {
            Ok(()) => out.msg,
            Err(Stop::Receiver) => return,
            Err(Stop::Failed(message)) => {
                let mut m = out.msg;
                m.stop_reason = if *abort.borrow() {
                    StopReason::Aborted
                } else {
                    StopReason::Error
                };
                m.error_message = Some(message);
                m
            }
        };
        let _ = tx.send(ProviderEvent::Done(final_message)).await;
    });
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
    abort: &mut watch::Receiver<bool>,
    tx: &mpsc::Sender<ProviderEvent>,
) -> Result<(), Stop> {
    let response = match http::send(
        &call.client,
        &call.request,
        call.max_retries,
        call.timeout,
        call.shape,
        abort,
    )
    .await
    {
        Ok(r) => r,
        Err(SendFailure::Aborted) => {
            return Err(Stop::Failed(http::ABORTED_BEFORE_RESPONSE.to_owned()));
        }
        Err(SendFailure::Failed { message, error }) => {
            return Err(Stop::Failed(reply.request_failed(message, error.as_ref())));
        }
    };
    tracing::debug!(status = %response.status(), "provider streaming");
    tx.send(ProviderEvent::Start(out.msg.clone()))
        .await
        .map_err(|_| Stop::Receiver)?;
    let mut body = SseBody::new(response, R::DISPATCH_TRAILING);
    loop {
        let next = tokio::select! {
            biased;
            _ = aborted_signal(abort) => None,
            n = body.next() => Some(n),
        };
        let step = match next {
            None => {
                reply.aborted(out);
                flush(out, tx).await?;
                return Err(Stop::Failed(R::ABORTED_MID_STREAM.to_owned()));
            }
            Some(Err(e)) => Err(e),
            Some(Ok(Some(event))) => reply.event(event, out),
            Some(Ok(None)) => {
                let end = reply.end(out);
                flush(out, tx).await?;
                if *abort.borrow() {
                    return Err(Stop::Failed(ABORTED.to_owned()));
                }
                return end.map_err(Stop::Failed);
            }
        };
        flush(out, tx).await?;
        step.map_err(Stop::Failed)?;
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
        assert_eq!(clamp_thinking_level(&plain, "high"), "high");
        assert_eq!(clamp_thinking_level(&plain, "xhigh"), "high");
        assert_eq!(
            clamp_thinking_level(&model(false, json!(null)), "high"),
            "off"
        );
        let mapped = model(true, json!({"xhigh": "max", "minimal": null, "off": null}));
        assert_eq!(clamp_thinking_level(&mapped, "xhigh"), "xhigh");
        assert_eq!(clamp_thinking_level(&mapped, "minimal"), "low");
        assert_eq!(clamp_thinking_level(&mapped, "off"), "low");
        assert_eq!(clamp_thinking_level(&mapped, "bogus"), "low");
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
