//! API keys, looked up as pi looks them up (`auth-storage.js` `getApiKey`): the `--api-key`
//! override, then `auth.json` in the agent directory, then the provider's environment
//! variable, then the `apiKey` a `models.json` provider names.
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
pub const KEY_VARS: [&str; 15] = [
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
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return creds,
            Err(e) => {
                creds.problems.push(format!("{}: {e}", path.display()));
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
    /// `models.json`, used last.
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
        for var in env_vars(provider) {
            if let Some(v) = std::env::var(var).ok().filter(|v| !v.is_empty()) {
                return Some(v);
            }
        }
        configured.and_then(resolve_config_value)
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

    /// Whether any key source exists for `provider` (without running `!command` values).
    pub fn has_key(&self, provider: &str, configured: Option<&str>) -> bool {
        self.runtime.as_ref().is_some_and(|(p, _)| p == provider)
            || matches!(self.stored.get(provider), Some(Credential::ApiKey { .. }))
            || (provider == "anthropic"
                && matches!(self.stored.get(provider), Some(Credential::OAuth { expires, .. }) if now_ms() < *expires))
            || env_vars(provider)
                .iter()
                .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
            || configured.is_some()
    }
}

/// pi's `resolveConfigValue`: `!command` runs the command in a shell and uses its trimmed
/// stdout; otherwise the value names an environment variable when one is set, else it is the
/// literal value. A failing or silent command gives `None`.
pub fn resolve_config_value(value: &str) -> Option<String> {
    if let Some(command) = value.strip_prefix('!') {
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
        let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        return Some(text).filter(|t| !t.is_empty());
    }
    match std::env::var(value) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => Some(value.to_owned()),
    }
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
    fn config_values_run_commands_read_variables_or_stand_for_themselves() {
        assert_eq!(resolve_config_value("!echo hi").as_deref(), Some("hi"));
        assert_eq!(resolve_config_value("!exit 3"), None);
        assert_eq!(resolve_config_value("!true"), None);
        assert_eq!(
            resolve_config_value("PITH_SURELY_UNSET_VARIABLE_1234").as_deref(),
            Some("PITH_SURELY_UNSET_VARIABLE_1234")
        );
        // PATH is always set: a name of a set variable gives its value.
        assert_eq!(resolve_config_value("PATH"), std::env::var("PATH").ok());
    }
}
