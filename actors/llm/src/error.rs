//! The model layer's one error type.

/// Everything pith-llm can fail with. Texts are pi's where pi has one (they reach the user
/// or become a reply's `errorMessage`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The model's API is one pith cannot speak (`faux` is made elsewhere).
    #[error(
        "no streaming provider for api {api:?} (model {provider}/{id}); pith speaks anthropic-messages, openai-completions, openai-responses and google-generative-ai"
    )]
    UnsupportedApi {
        /// The model's `api`.
        api: String,
        /// Its provider.
        provider: String,
        /// Its id.
        id: String,
    },
    /// The Anthropic, Gemini and Responses APIs need a key (pi-ai's text).
    #[error("No API key for provider: {provider}")]
    NoApiKey {
        /// The model's provider.
        provider: String,
    },
    /// The HTTP client could not be built (TLS roots unavailable, …).
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// A reply's stream could not be read or reported an error; the text becomes the
    /// reply's `errorMessage` (pi-ai's wording).
    #[error("{0}")]
    Stream(String),
    /// `models.json` asks for something pi refuses (pi's text, naming the provider/model).
    #[error("{0}")]
    ModelsJson(String),
    /// `--model`/`--provider` name nothing pith knows (pi's `resolveCliModel` texts).
    #[error("{0}")]
    UnknownModel(String),
}

/// Reply streams build their error texts as strings.
impl From<String> for Error {
    fn from(text: String) -> Error {
        Error::Stream(text)
    }
}

impl From<&str> for Error {
    fn from(text: &str) -> Error {
        Error::Stream(text.to_owned())
    }
}
