//! Project trust (pi 1.6.0's `resolveProjectTrusted`): whether a project's own files under
//! `.pith/` (settings, MCP servers, extensions, skills, prompt templates, system-prompt files)
//! are used. One home for the rule: the settings loader, the resource loader, the MCP hub and
//! the extension host all ask here. Decisions live in `<agent dir>/trust.json`, keyed by the
//! project's canonical path: `{"<path>": {"decision": "trusted"|"untrusted", ...}}` (the
//! extension host adds fingerprints of the extensions it was asked about).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// `<agent dir>/trust.json`.
pub fn trust_file(agent_dir: &Path) -> PathBuf {
    agent_dir.join("trust.json")
}

/// The stored decisions (an empty object when there are none or the file is unreadable).
pub fn read_decisions(agent_dir: &Path) -> Value {
    read_config(&trust_file(agent_dir))
        .and_then(|t| serde_json::from_str(&t).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}))
}

/// The key of `cwd` in `trust.json`: its canonical path.
pub fn project_key(cwd: &Path) -> String {
    std::fs::canonicalize(cwd)
        .unwrap_or_else(|_| cwd.to_owned())
        .to_string_lossy()
        .into_owned()
}

/// The stored decision for the project in `cwd`: `Some(true)` trusted, `Some(false)` not,
/// `None` never decided.
pub fn stored_decision(agent_dir: &Path, cwd: &Path) -> Option<bool> {
    read_decisions(agent_dir)[project_key(cwd).as_str()]["decision"]
        .as_str()
        .map(|d| d == "trusted")
}

/// The user's `defaultProjectTrust` setting (`always`, `never`, or `""`).
pub fn default_trust(agent_dir: &Path) -> String {
    read_config(&agent_dir.join("settings.json"))
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v["defaultProjectTrust"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Whether the project in `cwd` is trusted: `approve` (`--approve` / `--no-approve`) first,
/// then the stored decision, then a project with nothing that needs trust is trusted, then
/// `defaultProjectTrust: "always"`; else not. Asks nothing.
pub fn project_trusted(agent_dir: &Path, cwd: &Path, approve: Option<bool>) -> bool {
    if let Some(approve) = approve {
        return approve;
    }
    if let Some(decision) = stored_decision(agent_dir, cwd) {
        return decision;
    }
    if !needs_trust(cwd) {
        return true;
    }
    default_trust(agent_dir) == "always"
}

/// pi's `hasTrustRequiringProjectResources`: `.pith/` holds settings, MCP servers,
/// extensions, skills, prompts, themes or system-prompt files, or `.agents/skills` exists in
/// the cwd or an ancestor (the home folder's own `~/.agents/skills` aside).
pub fn needs_trust(cwd: &Path) -> bool {
    let pith = cwd.join(".pith");
    let in_pith = [
        "settings.json",
        "mcp.json",
        "extensions",
        "skills",
        "prompts",
        "themes",
        "SYSTEM.md",
        "APPEND_SYSTEM.md",
    ];
    if in_pith.iter().any(|n| pith.join(n).exists()) {
        return true;
    }
    let home_skills = std::env::var_os("HOME").map(|h| Path::new(&h).join(".agents/skills"));
    cwd.ancestors().any(|dir| {
        let skills = dir.join(".agents/skills");
        skills.is_dir() && home_skills.as_deref() != Some(skills.as_path())
    })
}

fn read_config(path: &Path) -> Option<String> {
    pith_llm::config_file::read_text_limited(path, pith_llm::config_file::CONFIG_MAX_BYTES)
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_trust_follows_pis_order() {
        let tmp = tempfile::tempdir().unwrap();
        let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("proj"));
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        // Nothing that needs trust: trusted.
        assert!(project_trusted(&agent, &cwd, None));
        // Project prompts need it: not trusted without a decision, a flag or the setting.
        std::fs::create_dir_all(cwd.join(".pith/prompts")).unwrap();
        assert!(!project_trusted(&agent, &cwd, None));
        assert!(project_trusted(&agent, &cwd, Some(true)));
        std::fs::write(
            agent.join("settings.json"),
            r#"{"defaultProjectTrust": "always"}"#,
        )
        .unwrap();
        assert!(project_trusted(&agent, &cwd, None));
        assert!(!project_trusted(&agent, &cwd, Some(false)));
        // A stored decision wins over the setting.
        let key = project_key(&cwd);
        std::fs::write(
            trust_file(&agent),
            json!({ key: {"decision": "untrusted"} }).to_string(),
        )
        .unwrap();
        assert!(!project_trusted(&agent, &cwd, None));
    }
}
