//! Which model a run uses, and its key: `--provider`, `--model provider/id[:thinking]`,
//! `--thinking`, `--api-key`, the `defaultProvider`/`defaultModel`/`defaultThinkingLevel`
//! settings, and pi's default per provider with a key; the offline `faux/faux-1` when no key
//! exists. `--list-models [search]` prints pi's table.

use std::path::Path;

use anyhow::{Result, bail};

use pith_actors::settings::Settings;
use pith_events::ThinkingLevel;
use pith_llm::auth::Credentials;
use pith_llm::model::{Api, Model};
use pith_llm::model_registry::{ModelRegistry, clamp_thinking_level};

/// The model of a run.
pub struct Choice {
    /// The model.
    pub model: Model,
    /// Its key; `None` for faux and for servers that need none.
    pub api_key: Option<String>,
    /// The thinking level after pi's clamping.
    pub thinking_level: ThinkingLevel,
}

/// What the flags ask for.
pub struct Request<'a> {
    /// `--provider`.
    pub provider: Option<&'a str>,
    /// `--model`.
    pub model: Option<&'a str>,
    /// `--thinking`.
    pub thinking: Option<&'a str>,
    /// `--api-key`.
    pub api_key: Option<&'a str>,
    /// `--faux-script` was given: without `--model`/`--provider` the offline model plays it.
    pub faux_script: bool,
}

/// Chooses the model (pi's `resolveCliModel` and `findInitialModel`). Problems with
/// `models.json` or `auth.json` are printed and the rest goes on, as pi does.
pub fn choose(req: &Request<'_>, agent_dir: &Path, cwd: &Path) -> Result<Choice> {
    let registry = ModelRegistry::load(agent_dir);
    let mut creds = Credentials::load(agent_dir);
    for p in registry.problems().iter().chain(creds.problems()) {
        eprintln!("pith: warning: {p}");
    }
    let settings = Settings::load(agent_dir, cwd);
    let asked_level = match req.thinking {
        Some(t) => match t.parse::<ThinkingLevel>() {
            Ok(level) => Some(level),
            Err(_) => bail!(
                "unknown thinking level {t}: use one of {}",
                ThinkingLevel::list()
            ),
        },
        None => None,
    };
    // pi treats an empty --model as none given.
    let requested_model = req.model.filter(|m| !m.trim().is_empty());
    let (model, suffix_level) = match (requested_model, req.provider) {
        (Some(pattern), provider) => {
            let resolved = registry
                .resolve(provider, pattern)
                .map_err(anyhow::Error::msg)?;
            if let Some(w) = &resolved.warning {
                eprintln!("pith: warning: {w}");
            }
            (resolved.model, resolved.thinking_level)
        }
        (None, Some(provider)) => {
            // `--provider` alone: pi's default model of that provider.
            let resolved = registry
                .resolve(Some(provider), default_id(&registry, provider)?)
                .map_err(anyhow::Error::msg)?;
            (resolved.model, None)
        }
        (None, None) if req.faux_script => (pith_llm::model_registry::faux_model(), None),
        (None, None) => {
            let saved = settings
                .get("defaultProvider")
                .and_then(|p| p.as_str())
                .zip(settings.get("defaultModel").and_then(|m| m.as_str()))
                .and_then(|(p, m)| registry.find(p, m))
                .cloned();
            match saved.or_else(|| registry.default_model(&creds).cloned()) {
                Some(m) => (m, None),
                None => {
                    eprintln!(
                        "pith: no API key found (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, auth.json or models.json); using the built-in offline model faux/faux-1"
                    );
                    (pith_llm::model_registry::faux_model(), None)
                }
            }
        }
    };
    if let Some(key) = req.api_key {
        if model.api == Api::Faux {
            bail!("--api-key requires a model to be specified via --model or --provider");
        }
        creds = creds.with_runtime_key(&model.provider, key.to_owned());
    }
    let api_key = key_for(&model, &creds, &registry, agent_dir)?;
    let requested = asked_level
        .or(suffix_level)
        .unwrap_or_else(|| settings.default_thinking_level());
    let thinking_level = clamp_thinking_level(&model, requested);
    Ok(Choice {
        model,
        api_key,
        thinking_level,
    })
}

/// `choice` following the runtime to the model and level its session runs (a resumed
/// session's own, spec: lifecycle.md §6): the frontends show what the next request uses. A
/// model the registry does not know leaves `choice.model` as it is.
pub fn follow(
    choice: &mut Choice,
    model: &pith_events::ModelRef,
    level: ThinkingLevel,
    agent_dir: &Path,
) {
    choice.thinking_level = level;
    if choice.model.provider == model.provider && choice.model.id == model.id {
        return;
    }
    if let Some(found) = ModelRegistry::load(agent_dir).find(&model.provider, &model.id) {
        choice.model = found.clone();
    }
}

/// The key `model` is used with: `None` for faux, a local server or a `models.json`
/// `Authorization` header.
///
/// Errors: pi's missing-key message; an API pith cannot speak.
pub fn key_for(
    model: &Model,
    creds: &Credentials,
    registry: &ModelRegistry,
    agent_dir: &Path,
) -> Result<Option<String>> {
    Ok(match model.api {
        Api::Faux => None,
        Api::AnthropicMessages
        | Api::OpenAiCompletions
        | Api::OpenAiResponses
        | Api::GoogleGenerativeAi => {
            let key = creds.api_key(&model.provider, registry.configured_key(&model.provider));
            let local = is_local(&model.base_url);
            // The Responses API takes an `Authorization` header of models.json instead.
            let header_auth = model.api == Api::OpenAiResponses
                && model
                    .headers
                    .iter()
                    .flatten()
                    .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
            if key.is_none() && !local && !header_auth {
                let vars = pith_llm::auth::env_vars(&model.provider);
                let hint = match vars.last() {
                    Some(v) => format!("set {v}, "),
                    None => String::new(),
                };
                let login = creds
                    .unusable_login(&model.provider)
                    .map(|why| format!(" ({why})"))
                    .unwrap_or_default();
                bail!(
                    "No API key found for {}{login}: {hint}add it to {} or pass --api-key",
                    model.provider,
                    pith_llm::auth::auth_file(agent_dir).display()
                );
            }
            key
        }
        Api::Other(ref api) => bail!(
            "{} uses the {api} API, which pith cannot speak yet (it speaks anthropic-messages, openai-completions, openai-responses and google-generative-ai)",
            model.qualified_id()
        ),
    })
}

/// pi's default model id of `provider`, or its first model.
fn default_id<'a>(registry: &'a ModelRegistry, provider: &str) -> Result<&'a str> {
    let ids: Vec<&Model> = registry
        .all()
        .iter()
        .filter(|m| m.provider.eq_ignore_ascii_case(provider))
        .collect();
    let Some(first) = ids.first() else {
        bail!(
            "Unknown provider \"{provider}\". Use --list-models to see available providers/models."
        );
    };
    Ok(pith_llm::model_registry::default_model_id(&first.provider)
        .and_then(|d| ids.iter().find(|m| m.id == d))
        .unwrap_or(first)
        .id
        .as_str())
}

/// A server on this machine (a local model server needs no key).
fn is_local(base_url: &str) -> bool {
    let rest = base_url
        .strip_prefix("http://")
        .or_else(|| base_url.strip_prefix("https://"))
        .unwrap_or(base_url);
    let host = rest.split(['/', ':']).next().unwrap_or_default();
    matches!(host, "localhost" | "127.0.0.1" | "0.0.0.0") || rest.starts_with("[::1]")
}

/// `--list-models [search]`: pi's table of the models with a key (faux included), sorted by
/// provider and id, filtered by every word of `search` appearing in order in
/// `provider id` (pi's fuzzy filter).
pub fn list_models(agent_dir: &Path, search: Option<&str>) -> Result<()> {
    let registry = ModelRegistry::load(agent_dir);
    let creds = Credentials::load(agent_dir);
    for p in registry.problems().iter().chain(creds.problems()) {
        eprintln!("pith: warning: {p}");
    }
    let mut models = registry.available(&creds);
    if let Some(search) = search.filter(|s| !s.trim().is_empty()) {
        models.retain(|m| fuzzy_match(&format!("{} {}", m.provider, m.id), search));
        if models.is_empty() {
            println!("No models matching \"{search}\"");
            return Ok(());
        }
    }
    models.sort_by(|a, b| (&a.provider, &a.id).cmp(&(&b.provider, &b.id)));
    let rows: Vec<[String; 6]> = models
        .iter()
        .map(|m| {
            [
                m.provider.clone(),
                m.id.clone(),
                token_count(m.context_window),
                token_count(m.max_tokens),
                yes_no(m.reasoning),
                yes_no(m.accepts_images()),
            ]
        })
        .collect();
    let header = [
        "provider", "model", "context", "max-out", "thinking", "images",
    ]
    .map(String::from);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", cells.join("  "));
    }
    Ok(())
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

/// pi's `formatTokenCount`: 200000 → `200K`, 1000000 → `1M`, 1500 → `1.5K`.
fn token_count(n: u64) -> String {
    let fmt = |v: f64, unit: &str| {
        if v.fract() == 0.0 {
            format!("{v}{unit}")
        } else {
            format!("{v:.1}{unit}")
        }
    };
    if n >= 1_000_000 {
        fmt(n as f64 / 1_000_000.0, "M")
    } else if n >= 1_000 {
        fmt(n as f64 / 1_000.0, "K")
    } else {
        n.to_string()
    }
}

/// Every whitespace-separated word of `query` is a case-insensitive subsequence of `text`.
fn fuzzy_match(text: &str, query: &str) -> bool {
    let text = text.to_lowercase();
    query.split_whitespace().all(|word| {
        let mut chars = text.chars();
        word.to_lowercase().chars().all(|c| chars.any(|t| t == c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_read_as_pi_prints_them() {
        assert_eq!(
            [200_000, 1_000_000, 1_500, 128_000, 16_384, 999, 1_048_576].map(token_count),
            ["200K", "1M", "1.5K", "128K", "16.4K", "999", "1.0M"]
        );
    }

    #[test]
    fn local_servers_need_no_key() {
        assert!(is_local("http://127.0.0.1:8080/v1"));
        assert!(is_local("http://localhost:11434/v1"));
        assert!(is_local("http://[::1]:8080/v1"));
        assert!(!is_local("https://api.openai.com/v1"));
    }

    #[test]
    fn fuzzy_search_takes_every_word() {
        assert!(fuzzy_match("anthropic claude-sonnet-4-5", "sonnet 45"));
        assert!(fuzzy_match("anthropic claude-sonnet-4-5", "ANT son"));
        assert!(!fuzzy_match("openai gpt-4o", "sonnet"));
    }
}
