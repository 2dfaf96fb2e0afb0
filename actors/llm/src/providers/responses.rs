//! The OpenAI Responses API (`POST {baseUrl}/responses`, streamed), as pi-ai 1.6.0's
//! `openai-responses` api speaks it through the `openai` SDK 7.59
//! (`api/openai-responses.js`, `api/openai-responses-shared.js`); pi reaches OpenAI's and
//! xAI's models this way. The body is built in `responses_request`.
//!
//! Stream (parsed in `responses_stream`): output items become blocks by their `output_index`: a `reasoning` item is thinking
//! (its summary streams in, `\n\n` after each summary part; when the item is done the
//! thinking is its summary and the whole item, encrypted content included, is kept as the
//! block's signature to send back), a `message` item is text (its id, and phase, kept as the
//! text signature), a `function_call` item is a tool call with id `<call_id>|<item id>` whose
//! arguments stream. `response.completed`/`incomplete` give the response id, usage (cached
//! prompt tokens are cache reads, reasoning tokens are part of the output) and the stop
//! reason; `response.failed` and `error` events end the reply with an error. A stream that
//! ends without a terminal event is an error, as is a finished reply with a call whose item
//! never finished.
//!
//! HTTP errors read `OpenAI API error (<status>): <error JSON>` (pi's `formatProviderError`).

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use pith_events::AssistantMessage;
use pith_events::js::to_js_json;

use super::http::{ErrorShape, HttpRequest};
use super::responses_request::{ResponsesCompat, request_body};
use super::responses_stream::ResponsesStream;
use super::{
    ApiKey, CacheRetention, Call, ProviderOptions, endpoint, failed_now, header_map, spawn,
};
use crate::model::Model;
use crate::provider::{Provider, ProviderEvent, ProviderRequest};

/// A model behind the OpenAI Responses API.
pub struct OpenAiResponses {
    model: Model,
    key: Option<ApiKey>,
    options: ProviderOptions,
    client: reqwest::Client,
}

impl std::fmt::Debug for OpenAiResponses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The model's headers may carry credentials (models.json): name the model only.
        f.debug_struct("OpenAiResponses")
            .field("model", &self.model.qualified_id())
            .field("base_url", &self.model.base_url)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl OpenAiResponses {
    /// A provider for `model`, with `key` (a model whose headers carry the authorization may
    /// have none), sharing `client`.
    pub(crate) fn new(
        model: Model,
        key: Option<ApiKey>,
        options: ProviderOptions,
        client: reqwest::Client,
    ) -> OpenAiResponses {
        OpenAiResponses {
            model,
            key,
            options,
            client,
        }
    }

    /// The SDK's `Authorization`, the model's headers, the session-affinity headers, then the
    /// options' headers (later names win).
    fn headers(
        &self,
        compat: &ResponsesCompat,
        request: &ProviderRequest,
    ) -> reqwest::header::HeaderMap {
        let mut headers: Vec<(&str, String)> = vec![("accept", "application/json".to_owned())];
        if let Some(key) = &self.key {
            headers.push(("authorization", format!("Bearer {}", key.expose())));
        }
        headers.extend(
            self.model
                .headers
                .iter()
                .flatten()
                .map(|(k, v)| (k.as_str(), v.clone())),
        );
        let session = match self.options.cache_retention {
            CacheRetention::None => None,
            _ => request.session_id.as_deref(),
        };
        if let Some(id) = session {
            match compat.session_affinity_format() {
                "openrouter" => headers.push(("x-session-id", id.to_owned())),
                format => {
                    if format == "openai" {
                        headers.push(("session-id", id.to_owned()));
                    }
                    headers.push(("x-client-request-id", id.to_owned()));
                }
            }
        }
        headers.extend(
            self.options
                .headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.clone())),
        );
        headers.push(("content-type", "application/json".to_owned()));
        header_map(
            headers.iter().map(|(k, v)| (*k, v.as_str())),
            &["authorization"],
        )
    }
}

impl Provider for OpenAiResponses {
    /// The provider's name (`Provider::name` means `openai`, … — not the model's display
    /// name, which is what clippy guesses from the field names).
    #[allow(clippy::misnamed_getters)]
    fn name(&self) -> &str {
        &self.model.provider
    }

    fn context_window(&self, _model: &str) -> Option<u64> {
        (self.model.context_window > 0).then_some(self.model.context_window)
    }

    fn max_tokens(&self, _model: &str) -> Option<u64> {
        (self.model.max_tokens > 0).then_some(self.model.max_tokens)
    }

    /// Streams one reply of this provider's model (the request's `provider`/`model` names
    /// are not consulted: a provider is made for one model).
    fn stream(
        &self,
        request: ProviderRequest,
        abort: CancellationToken,
    ) -> mpsc::Receiver<ProviderEvent> {
        let msg = AssistantMessage::new(
            self.model.api.as_str(),
            self.model.provider.clone(),
            self.model.id.clone(),
            Vec::new(),
            self.options.clock.now_ms(),
        );
        let compat = ResponsesCompat::of(&self.model);
        let key = self.key.as_ref().map(ApiKey::expose);
        let body = match request_body(&self.model, &request, &self.options, &compat, key) {
            Ok(b) => b,
            Err(e) => return failed_now(msg, e),
        };
        let call = Call::new(
            self.client.clone(),
            HttpRequest {
                url: endpoint(&self.model.base_url, "/responses"),
                headers: self.headers(&compat, &request),
                body: to_js_json(&body).unwrap_or_default().into_bytes(),
            },
            &self.options,
            ErrorShape::OpenAi,
        );
        let reply = ResponsesStream::new(self.model.clone(), self.options.clock.clone());
        spawn(call, reply, msg, abort)
    }
}
