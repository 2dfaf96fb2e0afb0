//! API keys, looked up as pi 1.6.0 looks them up (`provider-composer.js` `composeApiKeyAuth`):
//! the `--api-key` override, then `auth.json` in the agent directory, then the `apiKey` a
//! `models.json` provider gives, then the provider's environment variable. A configured
//! `apiKey` that cannot be resolved (an unset `$VAR`, a failing `!command`) leaves the
//! provider without a key: pi does not fall back to the environment variable then.
//!
//! Values in `auth.json` keys, `models.json` keys and headers are resolved by
//! [`resolve_config_value`] (pi 1.6.0's `resolve-config-value.js`).
//!
//! Keys are secrets: they are never logged, traced or written to a session; errors name the
//! source of a key, never its value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One stored credential of `auth.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type")]
enum Credential {
    /// `{"type": "api_key", "key": "…"}`; `key` is resolved like a models.json value.
    #[serde(rename = "api_key")]
    ApiKey { key: String },
    /// `{"type": "oauth", "access": "…", "refresh": "…", "expires": <ms>}`: a login made with
    /// pi's `/login`. pith uses the access token until it expires but cannot refresh it.
    #[serde(rename = "oauth")]
    OAuth {
        access: String,
        #[serde(default)]
        expires: f64,
    },
    /// Anything else; kept so the file still reads.
    #[serde(other)]
    Other,
}

/// Where the keys come from.
#[derive(Debug, Default, Clone)]
pub struct Credentials {
    /// `--api-key`, for one provider.
    runtime: Option<(String, String)>,
    /// `auth.json`.
    stored: BTreeMap<String, Credential>,
    /// Problems found reading `auth.json`, worded for the user.
    problems: Vec<String>,
}

/// Every environment variable [`env_vars`] reads, for tests that must run offline.
pub const KEY_VARS: [&str; 16] = [
    "ANTHROPIC_OAUTH_TOKEN",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "GROQ_API_KEY",
    "CEREBRAS_API_KEY",
    "XAI_API_KEY",
    "OPENROUTER_API_KEY",
    "ZAI_API_KEY",
    "MINIMAX_API_KEY",
    "MINIMAX_CN_API_KEY",
    "MOONSHOT_API_KEY",
    "HF_TOKEN",
    "FIREWORKS_API_KEY",
    "KIMI_API_KEY",
    "GEMINI_API_KEY",
];

/// The environment variables pi reads a provider's key from, in order
/// (pi-ai `env-api-keys.js`).
pub fn env_vars(provider: &str) -> &'static [&'static str] {
    match provider {
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "openai" => &["OPENAI_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "minimax-cn" => &["MINIMAX_CN_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "kimi-coding" => &["KIMI_API_KEY"],
        "google" => &["GEMINI_API_KEY"],
        _ => &[],
    }
}

impl Credentials {
    /// Reads `<agent_dir>/auth.json` when it exists. A file others can read is used but
    /// reported (it should be mode 0600, as pi writes it); a file that is not pi's shape is
    /// reported and ignored.
    pub fn load(agent_dir: &Path) -> Self {
        let path = agent_dir.join("auth.json");
        let mut creds = Self::default();
        let text = match crate::config_file::read_text_limited(
            &path,
            crate::config_file::CONFIG_MAX_BYTES,
        ) {
            Ok(Some(t)) => t,
            Ok(None) => return creds,
            Err(e) => {
                creds.problems.push(e.to_string());
                return creds;
            }
        };
        {
            use std::os::unix::fs::PermissionsExt;
            if let Ok(meta) = std::fs::metadata(&path)
                && meta.permissions().mode() & 0o077 != 0
            {
                creds.problems.push(format!(
                    "{}: readable by other users (mode {:o}); run chmod 600 on it",
                    path.display(),
                    meta.permissions().mode() & 0o777
                ));
            }
        }
        match serde_json::from_str::<BTreeMap<String, Credential>>(&text) {
            Ok(stored) => creds.stored = stored,
            Err(e) => creds.problems.push(format!(
                "{}: line {}, column {}: {e}; its keys are not used",
                path.display(),
                e.line(),
                e.column()
            )),
        }
        creds
    }

    /// The same credentials with `--api-key` set for `provider`.
    pub fn with_runtime_key(mut self, provider: &str, key: String) -> Self {
        self.runtime = Some((provider.to_owned(), key));
        self
    }

    /// Problems found while loading, for the user.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// The key for `provider`, or `None`. `configured` is the provider's `apiKey` from
    /// `models.json`: it comes before the environment variable and, when given, is the
    /// answer even if it resolves to nothing.
    pub fn api_key(&self, provider: &str, configured: Option<&str>) -> Option<String> {
        if let Some((p, key)) = &self.runtime
            && p == provider
        {
            return Some(key.clone());
        }
        match self.stored.get(provider) {
            Some(Credential::ApiKey { key }) => return resolve_config_value(key),
            // Only Anthropic's login token works as a key (pi-ai's anthropic OAuth
            // `getApiKey` returns `access`); other logins need pi's provider-specific flows.
            Some(Credential::OAuth { access, expires })
                if provider == "anthropic" && now_ms() < *expires =>
            {
                return Some(access.clone());
            }
            _ => {}
        }
        if let Some(configured) = configured {
            return resolve_config_value(configured);
        }
        env_vars(provider)
            .iter()
            .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
    }

    /// Why the stored login of `provider` cannot be used, if it has one pith skips: expired
    /// (pith cannot refresh it) or for a provider whose login pith cannot use.
    pub fn unusable_login(&self, provider: &str) -> Option<String> {
        match self.stored.get(provider) {
            Some(Credential::OAuth { expires, .. }) if provider == "anthropic" => (now_ms()
                >= *expires)
                .then(|| {
                    "its login in auth.json has expired and pith cannot refresh logins: run pi once to refresh it".to_owned()
                }),
            Some(Credential::OAuth { .. }) => {
                Some("pith cannot use its login in auth.json (only Anthropic logins work)".into())
            }
            _ => None,
        }
    }

    /// Whether any key source exists for `provider` (without running `!command` values): a
    /// configured `apiKey` counts when every variable it names is set (pi's `check`).
    pub fn has_key(&self, provider: &str, configured: Option<&str>) -> bool {
        if self.runtime.as_ref().is_some_and(|(p, _)| p == provider)
            || matches!(self.stored.get(provider), Some(Credential::ApiKey { .. }))
            || (provider == "anthropic"
                && matches!(self.stored.get(provider), Some(Credential::OAuth { expires, .. }) if now_ms() < *expires))
        {
            return true;
        }
        match configured {
            Some(value) => config_value_env_names(value)
                .iter()
                .all(|name| env_value(name).is_some()),
            None => env_vars(provider).iter().any(|v| env_value(v).is_some()),
        }
    }
}

/// pi 1.6.0's `resolveConfigValue` for an `apiKey` or header value of `models.json` or a key
/// of `auth.json`:
///
/// - `!command` runs the command in a shell (`sh -c`) and uses its trimmed stdout; a failing or
///   silent command gives `None`.
/// - Anything else is a template: `$NAME` and `${NAME}` are replaced by that environment
///   variable (`NAME` is `[A-Za-z_][A-Za-z0-9_]*`), `$$` is `$` and `$!` is `!`; every other
///   character stands for itself. A named variable that is unset or empty gives `None`.
///
/// So `"sk-123"` is that literal key and `"OPENAI_API_KEY"` is the literal text too (pi 0.73.1
/// read a bare name as a variable); write `"$OPENAI_API_KEY"` for the variable.
pub fn resolve_config_value(value: &str) -> Option<String> {
    if let Some(command) = value.strip_prefix('!') {
        return run_command(command);
    }
    let mut out = String::new();
    for part in parse_template(value) {
        match part {
            TemplatePart::Literal(text) => out.push_str(&text),
            TemplatePart::Env(name) => out.push_str(&env_value(&name)?),
        }
    }
    Some(out)
}

/// [`resolve_config_value`], or pi's `resolveConfigValueOrThrow` error naming `what` (e.g.
/// `API key for provider "x"`) and the variables that are missing.
///
/// Errors: [`ConfigValueError`] when the command fails or a variable is unset.
pub fn resolve_config_value_or_error(value: &str, what: &str) -> Result<String, ConfigValueError> {
    if let Some(resolved) = resolve_config_value(value) {
        return Ok(resolved);
    }
    let message = if let Some(command) = value.strip_prefix('!') {
        format!("Failed to resolve {what} from shell command: {command}")
    } else {
        let missing: Vec<String> = config_value_env_names(value)
            .into_iter()
            .filter(|n| env_value(n).is_none())
            .collect();
        match missing.as_slice() {
            [] => format!("Failed to resolve {what}"),
            [one] => format!("Failed to resolve {what} from environment variable: {one}"),
            many => format!(
                "Failed to resolve {what} from environment variables: {}",
                many.join(", ")
            ),
        }
    };
    Err(ConfigValueError(message))
}

/// Resolves the values of `model`'s headers (those of `models.json`; pi's table has none for
/// the providers pith knows) as pi 1.6.0 does before a request (`resolveHeadersOrThrow`).
///
/// Errors: the first header that cannot be resolved, e.g. `Failed to resolve model
/// "local/qwen" header "X-Token" from environment variable: TOKEN`.
pub fn resolve_model_headers(model: &mut crate::model::Model) -> Result<(), ConfigValueError> {
    let qualified = model.qualified_id();
    for (name, value) in model.headers.iter_mut().flatten() {
        let what = format!("model \"{qualified}\" header \"{name}\"");
        *value = resolve_config_value_or_error(value, &what)?;
    }
    Ok(())
}

/// A `models.json` value that could not be resolved; the text is pi's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigValueError(pub String);

/// The environment variables a value names (none for a `!command`), each once, in order.
pub fn config_value_env_names(value: &str) -> Vec<String> {
    if value.starts_with('!') {
        return Vec::new();
    }
    let mut names: Vec<String> = Vec::new();
    for part in parse_template(value) {
        if let TemplatePart::Env(name) = part
            && !names.contains(&name)
        {
            names.push(name);
        }
    }
    names
}

/// One piece of a template value.
#[derive(Debug, PartialEq)]
enum TemplatePart {
    Literal(String),
    Env(String),
}

/// pi's `parseConfigValueTemplate`.
fn parse_template(config: &str) -> Vec<TemplatePart> {
    fn literal(parts: &mut Vec<TemplatePart>, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(TemplatePart::Literal(last)) = parts.last_mut() {
            last.push_str(text);
        } else {
            parts.push(TemplatePart::Literal(text.to_owned()));
        }
    }
    let is_start = |c: char| c.is_ascii_alphabetic() || c == '_';
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut parts = Vec::new();
    let mut rest = config;
    while let Some(at) = rest.find('$') {
        literal(&mut parts, &rest[..at]);
        let after = &rest[at + 1..];
        match after.chars().next() {
            Some(c @ ('$' | '!')) => {
                literal(&mut parts, &c.to_string());
                rest = &after[1..];
            }
            Some('{') => match after[1..].find('}') {
                None => {
                    literal(&mut parts, "$");
                    rest = after;
                }
                Some(end) => {
                    let name = &after[1..1 + end];
                    if name.starts_with(is_start) && name.chars().all(is_name) {
                        parts.push(TemplatePart::Env(name.to_owned()));
                    } else {
                        literal(&mut parts, &rest[at..at + 2 + end + 1]);
                    }
                    rest = &after[2 + end..];
                }
            },
            Some(c) if is_start(c) => {
                let len = after.find(|c: char| !is_name(c)).unwrap_or(after.len());
                parts.push(TemplatePart::Env(after[..len].to_owned()));
                rest = &after[len..];
            }
            _ => {
                literal(&mut parts, "$");
                rest = after;
            }
        }
    }
    literal(&mut parts, rest);
    parts
}

/// An environment variable that is set and not empty (pi's `env[name] || undefined`).
fn env_value(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// `!command`: its trimmed stdout, `None` when it fails or prints nothing.
fn run_command(command: &str) -> Option<String> {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = pith_events::js::js_trim(&String::from_utf8_lossy(&out.stdout)).to_owned();
    Some(text).filter(|t| !t.is_empty())
}

fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64)
}

/// The auth file of an agent directory.
pub fn auth_file(agent_dir: &Path) -> PathBuf {
    agent_dir.join("auth.json")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn keys_come_from_the_flag_then_auth_json_then_models_json() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("auth.json");
        std::fs::write(
            &file,
            r#"{"local": {"type": "api_key", "key": "from-auth-json"},
                "cmd": {"type": "api_key", "key": "!printf ' from-a-command \n'"},
                "sub": {"type": "oauth", "access": "a", "refresh": "r", "expires": 1},
                "anthropic": {"type": "oauth", "access": "sk-ant-oat-live", "refresh": "r", "expires": 4102444800000}}"#,
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let creds = Credentials::load(dir.path());
        assert!(creds.problems().is_empty(), "{:?}", creds.problems());
        assert_eq!(
            creds.api_key("local", Some("configured")).as_deref(),
            Some("from-auth-json")
        );
        assert_eq!(
            creds.api_key("cmd", None).as_deref(),
            Some("from-a-command")
        );
        // Other providers' logins are not usable by pith: the next source is used.
        assert_eq!(
            creds.api_key("sub", Some("literal-key")).as_deref(),
            Some("literal-key")
        );
        assert_eq!(
            creds.unusable_login("sub").as_deref(),
            Some("pith cannot use its login in auth.json (only Anthropic logins work)")
        );
        // An Anthropic login that has not expired is a key.
        assert_eq!(
            creds.api_key("anthropic", None).as_deref(),
            Some("sk-ant-oat-live")
        );
        assert_eq!(creds.unusable_login("anthropic"), None);
        assert_eq!(creds.api_key("nobody", None), None);
        assert!(!creds.has_key("nobody", None));
        let creds = creds.with_runtime_key("local", "from-the-flag".into());
        assert_eq!(
            creds.api_key("local", None).as_deref(),
            Some("from-the-flag")
        );
    }

    #[test]
    fn an_expired_anthropic_login_is_skipped_and_explained() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("auth.json");
        std::fs::write(
            &file,
            r#"{"anthropic": {"type": "oauth", "access": "old", "refresh": "r", "expires": 1000}}"#,
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let creds = Credentials::load(dir.path());
        assert_eq!(
            creds.api_key("anthropic", Some("fallback")).as_deref(),
            Some("fallback")
        );
        assert_eq!(
            creds.unusable_login("anthropic").as_deref(),
            Some(
                "its login in auth.json has expired and pith cannot refresh logins: run pi once to refresh it"
            )
        );
    }

    #[test]
    fn a_readable_or_broken_auth_file_is_reported_without_its_keys() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("auth.json");
        std::fs::write(&file, r#"{"local": {"type": "api_key", "key": "k"}}"#).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let creds = Credentials::load(dir.path());
        assert_eq!(
            creds.problems(),
            [format!(
                "{}: readable by other users (mode 644); run chmod 600 on it",
                file.display()
            )]
        );
        // Still used, as pi uses it.
        assert_eq!(creds.api_key("local", None).as_deref(), Some("k"));

        std::fs::write(&file, "{\"local\": ").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let creds = Credentials::load(dir.path());
        assert_eq!(creds.problems().len(), 1);
        assert!(
            creds.problems()[0].contains("auth.json: line 1, column 10"),
            "{:?}",
            creds.problems()
        );
        assert_eq!(creds.api_key("local", None), None);
    }

    #[test]
    fn config_values_run_commands_interpolate_variables_or_stand_for_themselves() {
        assert_eq!(resolve_config_value("!echo hi").as_deref(), Some("hi"));
        assert_eq!(resolve_config_value("!exit 3"), None);
        assert_eq!(resolve_config_value("!true"), None);
        // pi 1.6.0: a bare name is a literal, even when such a variable is set.
        assert_eq!(resolve_config_value("PATH").as_deref(), Some("PATH"));
        let path = std::env::var("PATH").expect("PATH is set");
        assert_eq!(resolve_config_value("$PATH"), Some(path.clone()));
        assert_eq!(
            resolve_config_value("a${PATH}b$$c$!d").as_deref(),
            Some(format!("a{path}b$c!d").as_str())
        );
        assert_eq!(
            resolve_config_value("$PITH_SURELY_UNSET_VARIABLE_1234"),
            None
        );
        assert_eq!(
            resolve_config_value("x-${PITH_SURELY_UNSET_VARIABLE_1234}"),
            None
        );
        // Not a name: kept as written.
        assert_eq!(
            resolve_config_value("${1x} $ $9 ${oops").as_deref(),
            Some("${1x} $ $9 ${oops")
        );
        assert_eq!(
            resolve_config_value("$PATH-suffix"),
            Some(format!("{path}-suffix"))
        );
        assert_eq!(
            config_value_env_names("$A ${B} $A $$C !D"),
            ["A".to_owned(), "B".to_owned()]
        );
        assert!(config_value_env_names("!echo $A").is_empty());
    }

    #[test]
    fn unresolved_values_are_explained_as_pi_explains_them() {
        assert_eq!(
            resolve_config_value_or_error("$PITH_UNSET_A_1 ${PITH_UNSET_B_1}", "API key for provider \"x\"")
                .map_err(|e| e.to_string()),
            Err("Failed to resolve API key for provider \"x\" from environment variables: PITH_UNSET_A_1, PITH_UNSET_B_1".to_owned())
        );
        assert_eq!(
            resolve_config_value_or_error("!exit 1", "header \"h\"").map_err(|e| e.to_string()),
            Err("Failed to resolve header \"h\" from shell command: exit 1".to_owned())
        );
        assert_eq!(
            resolve_config_value_or_error("lit", "k").as_deref(),
            Ok("lit")
        );
    }

    #[test]
    fn header_values_resolve_like_keys() {
        let mut model: crate::model::Model = serde_json::from_value(serde_json::json!({
            "id": "m", "name": "m", "api": "openai-completions", "provider": "local",
            "baseUrl": "http://x", "headers": {"x-a": "lit", "x-b": "!echo cmd", "x-c": "$$5"}
        }))
        .unwrap();
        resolve_model_headers(&mut model).unwrap();
        let headers = model.headers.clone().unwrap();
        assert_eq!(
            headers.values().map(String::as_str).collect::<Vec<_>>(),
            ["lit", "cmd", "$5"]
        );
        model.headers = Some([("x-t".to_owned(), "$PITH_UNSET_D_1".to_owned())].into());
        assert_eq!(
            resolve_model_headers(&mut model).map_err(|e| e.to_string()),
            Err("Failed to resolve model \"local/m\" header \"x-t\" from environment variable: PITH_UNSET_D_1".to_owned())
        );
    }

    #[test]
    fn a_configured_key_comes_before_the_variable_and_has_no_fallback() {
        let creds = Credentials::default();
        // HOME is always set and names no provider's key; PATH stands in for a set variable.
        assert_eq!(
            creds.api_key("openai", Some("literal")).as_deref(),
            Some("literal")
        );
        assert_eq!(creds.api_key("openai", Some("$PITH_UNSET_C_1")), None);
        assert!(!creds.has_key("openai", Some("$PITH_UNSET_C_1")));
        assert!(creds.has_key("openai", Some("$PATH")));
        assert!(creds.has_key("openai", Some("!false")));
    }
}
