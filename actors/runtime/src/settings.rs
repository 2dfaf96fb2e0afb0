//! Settings: `settings.json` in the agent directory, overridden by `.pith/settings.json` in the
//! session's cwd, with pi's keys. They are cwd-bound: the runtime reads them again for the
//! target of every switch.

use std::path::Path;

use serde_json::{Map, Value};

/// A setting could not be saved: what went wrong, naming `settings.json` (left unchanged).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SettingNotSaved(pub String);

/// The merged settings of one cwd.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    values: Map<String, Value>,
    /// Files that could not be used, with why (reported, never fatal).
    pub problems: Vec<String>,
}

/// How queued steering or follow-up messages are delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueMode {
    /// One message per delivery (pi's default `one-at-a-time`).
    #[default]
    OneAtATime,
    /// Everything queued at once (`all`).
    All,
}

impl Settings {
    /// Reads `<agent_dir>/settings.json` and, in a trusted project ([`crate::trust`]),
    /// `<cwd>/.pith/settings.json`; objects merge key by key, the project's values win.
    /// Missing files are fine; unreadable or invalid ones, and an untrusted project's, are
    /// listed in [`Settings::problems`] and ignored.
    pub fn load(agent_dir: &Path, cwd: &Path) -> Settings {
        let mut settings = Settings::default();
        let project = cwd.join(".pith").join("settings.json");
        let mut files = vec![agent_dir.join("settings.json")];
        // A repository's settings can run code (`shellCommandPrefix`) or send prompts
        // elsewhere (`defaultProvider`): only a trusted project's count (crate::trust).
        if crate::trust::project_trusted(agent_dir, cwd, None) {
            files.push(project);
        } else if project.exists() {
            settings.problems.push(format!(
                "{}: not used, the project is not trusted (pith --approve trusts it)",
                project.display()
            ));
        }
        for file in files {
            let text = match pith_llm::config_file::read_text_limited(
                &file,
                pith_llm::config_file::CONFIG_MAX_BYTES,
            ) {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(e) => {
                    settings.problems.push(e.to_string());
                    continue;
                }
            };
            match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(map)) => merge(&mut settings.values, map),
                Ok(_) => settings
                    .problems
                    .push(format!("{}: not a JSON object", file.display())),
                Err(e) => settings.problems.push(format!(
                    "{}: line {}, column {}: {e}",
                    file.display(),
                    e.line(),
                    e.column()
                )),
            }
        }
        settings
    }

    /// pi's `SettingsManager` setters (`setSteeringMode`, `setFollowUpMode`,
    /// `setCompactionEnabled`, `setRetryEnabled`): `value` at the dotted `path` of the agent
    /// directory's `settings.json` (created when missing), every other member kept, the
    /// file replaced atomically and written as pi writes it (two-space indentation).
    ///
    /// Errors: [`SettingNotSaved`] when the file cannot be read, is not a JSON object, or
    /// cannot be written; it names the file, which is left as it was.
    pub fn save_global(agent_dir: &Path, path: &str, value: Value) -> Result<(), SettingNotSaved> {
        Self::save_global_text(agent_dir, path, value).map_err(SettingNotSaved)
    }

    fn save_global_text(agent_dir: &Path, path: &str, value: Value) -> Result<(), String> {
        let file = agent_dir.join("settings.json");
        let mut root = match pith_llm::config_file::read_text_limited(
            &file,
            pith_llm::config_file::CONFIG_MAX_BYTES,
        ) {
            Ok(None) => Map::new(),
            Ok(Some(text)) => match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(map)) => map,
                Ok(_) => {
                    return Err(format!(
                        "{}: not a JSON object; not changed",
                        file.display()
                    ));
                }
                Err(e) => {
                    return Err(format!(
                        "{}: line {}, column {}: {e}; not changed",
                        file.display(),
                        e.line(),
                        e.column()
                    ));
                }
            },
            Err(e) => return Err(format!("{e}; not changed")),
        };
        let mut keys: Vec<&str> = path.split('.').collect();
        let last = keys.pop().unwrap_or(path);
        let mut at = &mut root;
        for key in keys {
            let slot = at
                .entry(key.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            let Value::Object(inner) = slot else {
                return Err(format!("{}: {key} is not an object", file.display()));
            };
            at = inner;
        }
        at.insert(last.to_owned(), value);
        let text = serde_json::to_string_pretty(&Value::Object(root))
            .map_err(|e| format!("{}: {e}", file.display()))?;
        std::fs::create_dir_all(agent_dir).map_err(|e| format!("{}: {e}", agent_dir.display()))?;
        // pi's `JSON.stringify(settings, null, 2)`, with no newline after it.
        pith_store::writer::replace_file(
            &file,
            pith_store::writer::Replace::RegularOrNothing,
            |w| std::io::Write::write_all(w, text.as_bytes()),
        )
        .map_err(|e| e.to_string())
    }

    /// The value at a dotted path (`compaction.reserveTokens`).
    pub fn get(&self, path: &str) -> Option<&Value> {
        let mut parts = path.split('.');
        let mut v = self.values.get(parts.next()?)?;
        for p in parts {
            v = v.get(p)?;
        }
        Some(v)
    }

    /// `defaultThinkingLevel`: the level a session starts at; pi's default (`medium`) when
    /// it is unset or names no level.
    pub fn default_thinking_level(&self) -> pith_events::ThinkingLevel {
        self.get("defaultThinkingLevel")
            .and_then(Value::as_str)
            .and_then(|l| l.parse().ok())
            .unwrap_or(pith_llm::model_registry::DEFAULT_THINKING_LEVEL)
    }

    /// `compaction.*` with pi's defaults for what is missing. Values are read as JavaScript
    /// would use them: `enabled` by truthiness (`null` counts as absent), token counts from numbers or numeric strings
    /// (fractions round up, which compares the same against whole token counts; negatives
    /// count as 0).
    pub fn compaction(&self) -> pith_store::compaction::CompactionSettings {
        let d = pith_store::compaction::CompactionSettings::default();
        let tokens = |key: &str, default: u64| self.tokens(key).unwrap_or(default);
        pith_store::compaction::CompactionSettings {
            enabled: self
                .get("compaction.enabled")
                .filter(|v| !v.is_null())
                .map_or(d.enabled, pith_events::js::is_truthy),
            reserve_tokens: tokens("compaction.reserveTokens", d.reserve_tokens),
            keep_recent_tokens: tokens("compaction.keepRecentTokens", d.keep_recent_tokens),
        }
    }

    /// `branchSummary.reserveTokens` (default 16384): taken off the context window to get the
    /// input budget of a branch summary (compaction.md §9.2). Read as [`Settings::compaction`]
    /// reads numbers.
    pub fn branch_summary_reserve_tokens(&self) -> u64 {
        self.tokens("branchSummary.reserveTokens")
            .unwrap_or(pith_store::branch_summary::DEFAULT_RESERVE_TOKENS)
    }

    fn tokens(&self, key: &str) -> Option<u64> {
        // `null` is absent for pi's `??`; what JavaScript cannot make a finite number of
        // (`NaN`, `Infinity`) falls back to the default (pi would never compact with `NaN`).
        self.get(key)
            .filter(|v| !v.is_null())
            .map(pith_events::js::to_number)
            .filter(|n| n.is_finite())
            .map(|n| n.max(0.0).ceil() as u64)
    }

    /// `retry.*` with pi's defaults, numbers and `enabled` read as [`Settings::compaction`]
    /// reads them (spec: agent-and-events.md §4).
    pub fn retry(&self) -> pith_llm::retry::RetrySettings {
        let d = pith_llm::retry::RetrySettings::default();
        pith_llm::retry::RetrySettings {
            enabled: self
                .get("retry.enabled")
                .filter(|v| !v.is_null())
                .map_or(d.enabled, pith_events::js::is_truthy),
            max_retries: self
                .tokens("retry.maxRetries")
                .map_or(d.max_retries, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            base_delay_ms: self.tokens("retry.baseDelayMs").unwrap_or(d.base_delay_ms),
        }
    }

    /// `retry.provider.*` with pi's defaults, numbers read as [`Settings::compaction`] reads
    /// them (spec: agent-and-events.md §4).
    pub fn provider_retry(&self) -> pith_llm::retry::ProviderRetrySettings {
        let d = pith_llm::retry::ProviderRetrySettings::default();
        pith_llm::retry::ProviderRetrySettings {
            max_retries: self
                .tokens("retry.provider.maxRetries")
                .map_or(d.max_retries, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            max_retry_delay_ms: self
                .tokens("retry.provider.maxRetryDelayMs")
                .unwrap_or(d.max_retry_delay_ms),
            timeout_ms: self.tokens("retry.provider.timeoutMs"),
            http_idle_timeout_ms: match self.get("httpIdleTimeoutMs") {
                Some(Value::String(s)) if s == "disabled" => 0,
                _ => self
                    .tokens("httpIdleTimeoutMs")
                    .unwrap_or(d.http_idle_timeout_ms),
            },
        }
    }

    /// `shellCommandPrefix`: put before every `!cmd` and bash tool command, on its own line.
    pub fn shell_command_prefix(&self) -> Option<String> {
        self.get("shellCommandPrefix")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    }

    /// `steeringMode`.
    pub fn steering_mode(&self) -> QueueMode {
        mode(self.get("steeringMode"))
    }

    /// `images.autoResize` (pi's default: on): whether images attached to prompts are
    /// shrunk to the inline size limit (`pith_tools::image::process`).
    pub fn images_auto_resize(&self) -> bool {
        self.get("images.autoResize")
            .and_then(Value::as_bool)
            .unwrap_or(true)
    }

    /// `images.blockImages` (pi's default: off): every image is left out of the requests
    /// (`Image reading is disabled.` in its place); the session keeps them.
    pub fn images_blocked(&self) -> bool {
        self.get("images.blockImages")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// `followUpMode`.
    pub fn follow_up_mode(&self) -> QueueMode {
        mode(self.get("followUpMode"))
    }
}

fn mode(v: Option<&Value>) -> QueueMode {
    match v.and_then(Value::as_str) {
        Some("all") => QueueMode::All,
        _ => QueueMode::OneAtATime,
    }
}

fn merge(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(Value::Object(a)), Value::Object(b)) => merge(a, b),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_settings_override_global_ones_key_by_key() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("proj"));
        std::fs::create_dir_all(&agent).expect("mkdir");
        std::fs::create_dir_all(cwd.join(".pith")).expect("mkdir");
        std::fs::write(
            agent.join("settings.json"),
            r#"{"compaction":{"enabled":true,"reserveTokens":16384},"steeringMode":"all"}"#,
        )
        .expect("write");
        std::fs::write(
            cwd.join(".pith/settings.json"),
            r#"{"compaction":{"reserveTokens":1000},"followUpMode":"all"}"#,
        )
        .expect("write");
        // Only a trusted project's settings count; an untrusted one's are reported.
        let s = Settings::load(&agent, &cwd);
        assert_eq!(s.get("followUpMode"), None);
        assert!(s.problems[0].contains("not trusted"), "{:?}", s.problems);
        std::fs::write(
            crate::trust::trust_file(&agent),
            serde_json::json!({ crate::trust::project_key(&cwd): {"decision": "trusted"} })
                .to_string(),
        )
        .expect("write");
        let s = Settings::load(&agent, &cwd);
        assert_eq!(s.get("compaction.enabled"), Some(&Value::Bool(true)));
        assert_eq!(s.get("compaction.reserveTokens"), Some(&Value::from(1000)));
        assert_eq!(
            (s.steering_mode(), s.follow_up_mode()),
            (QueueMode::All, QueueMode::All)
        );
        std::fs::write(cwd.join(".pith/settings.json"), "{oops").expect("write");
        let s = Settings::load(&agent, &cwd);
        assert_eq!(s.problems.len(), 1);
        assert!(
            s.problems[0].contains("line 1, column 2"),
            "{:?}",
            s.problems
        );
        assert_eq!(
            Settings::load(&tmp.path().join("none"), &tmp.path().join("none")),
            Settings::default()
        );
    }

    #[test]
    fn compaction_values_are_read_as_javascript_uses_them() {
        let with = |json: &str| {
            Settings {
                values: serde_json::from_str(json).expect("json"),
                ..Settings::default()
            }
            .compaction()
        };
        let c =
            with(r#"{"compaction":{"keepRecentTokens":8.0,"reserveTokens":"20000","enabled":0}}"#);
        assert_eq!(
            (c.keep_recent_tokens, c.reserve_tokens, c.enabled),
            (8, 20000, false)
        );
        let c =
            with(r#"{"compaction":{"keepRecentTokens":8.5,"reserveTokens":-5,"enabled":"yes"}}"#);
        assert_eq!(
            (c.keep_recent_tokens, c.reserve_tokens, c.enabled),
            (9, 0, true)
        );
        let c = with(r#"{"compaction":{"keepRecentTokens":"lots","enabled":null}}"#);
        // `null` is absent for pi's `??`.
        assert_eq!((c.keep_recent_tokens, c.enabled), (20_000, true));
        assert_eq!(
            with("{}"),
            pith_store::compaction::CompactionSettings::default()
        );
    }

    #[test]
    fn a_saved_setting_keeps_the_rest_of_the_file_and_a_broken_file_is_left_alone() {
        let tmp = tempfile::tempdir().expect("tmp");
        let file = tmp.path().join("settings.json");
        std::fs::write(
            &file,
            r#"{"theme":"dark","compaction":{"reserveTokens":100}}"#,
        )
        .expect("write");
        Settings::save_global(tmp.path(), "compaction.enabled", Value::Bool(false)).expect("saved");
        Settings::save_global(tmp.path(), "steeringMode", Value::from("all")).expect("saved");
        assert_eq!(
            std::fs::read_to_string(&file).expect("read"),
            "{\n  \"theme\": \"dark\",\n  \"compaction\": {\n    \"reserveTokens\": 100,\n    \"enabled\": false\n  },\n  \"steeringMode\": \"all\"\n}"
        );
        let settings = Settings::load(tmp.path(), tmp.path());
        assert!(!settings.compaction().enabled);
        assert_eq!(settings.steering_mode(), QueueMode::All);

        std::fs::write(&file, "{ not json").expect("write");
        let err = Settings::save_global(tmp.path(), "retry.enabled", Value::Bool(false))
            .expect_err("refused");
        assert!(
            err.0.contains("settings.json") && err.0.contains("not changed"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&file).expect("read"), "{ not json");
    }

    #[test]
    fn a_saved_setting_replaces_the_file_atomically_and_never_writes_through_a_symlink() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().expect("tmp");
        let file = tmp.path().join("settings.json");
        std::fs::write(&file, r#"{"unknown":{"kept":[1,"two"]}}"#).expect("write");
        // A reader holding the old file (a hard link to it) keeps the old bytes: the new file
        // is renamed into place, never written over the old one.
        let old = tmp.path().join("old.json");
        std::fs::hard_link(&file, &old).expect("link");
        let inode = std::fs::metadata(&file).expect("meta").ino();
        Settings::save_global(tmp.path(), "hideThinkingBlock", Value::Bool(true)).expect("saved");
        assert_ne!(std::fs::metadata(&file).expect("meta").ino(), inode);
        assert_eq!(
            std::fs::read_to_string(&old).expect("read"),
            r#"{"unknown":{"kept":[1,"two"]}}"#
        );
        assert_eq!(
            serde_json::from_str::<Value>(&std::fs::read_to_string(&file).expect("read"))
                .expect("json"),
            serde_json::json!({"unknown": {"kept": [1, "two"]}, "hideThinkingBlock": true})
        );
        // Nothing but the two files is left in the folder.
        let mut names: Vec<String> = std::fs::read_dir(tmp.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["old.json", "settings.json"]);

        // A settings.json that is a symlink is refused and its target kept.
        let elsewhere = tempfile::tempdir().expect("tmp");
        let target = elsewhere.path().join("target.json");
        std::fs::write(&target, "{}").expect("write");
        std::fs::remove_file(&file).expect("rm");
        std::os::unix::fs::symlink(&target, &file).expect("symlink");
        assert!(Settings::save_global(tmp.path(), "collapseChangelog", Value::Bool(true)).is_err());
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "{}");
    }
}
