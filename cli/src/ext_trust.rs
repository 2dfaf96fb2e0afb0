//! Project trust for project-local extensions (spec: extensions.md §1.2 "Project trust"):
//! the decision is taken before anything under `.pith/` is spawned, stored in
//! `~/.pith/agent/trust.json` keyed by the project's canonical path as
//! `{decision, fingerprints}`. A fingerprint is the sha256 of a project extension's files (up
//! to 1 MiB); a changed one is asked about again in the interactive mode and skipped with a
//! warning elsewhere. `--approve`/`--no-approve` and `defaultProjectTrust: ask|always|never`
//! decide without asking; print, json and rpc never ask.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Bytes of an extension hashed at most.
const FINGERPRINT_BYTES: u64 = 1024 * 1024;

pub use crate::ext_discovery::Allowed;

/// How to decide.
pub struct Ask<'a> {
    /// `~/.pith/agent`.
    pub agent_dir: &'a Path,
    /// The project.
    pub cwd: &'a Path,
    /// `--approve` (`Some(true)`) or `--no-approve` (`Some(false)`).
    pub approve: Option<bool>,
    /// The interactive mode: a question may be asked on the terminal.
    pub interactive: bool,
}

/// One project-local item that would run.
struct Item {
    /// `extensions/<name>` or `settings.json`.
    key: String,
    path: PathBuf,
    fingerprint: String,
    /// The command line shown in the prompt.
    shown: String,
}

fn hash_into(h: &mut Sha256, path: &Path, budget: &mut u64) {
    if path.is_dir() {
        let mut children: Vec<PathBuf> = std::fs::read_dir(path)
            .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        children.sort();
        for c in children {
            if let Some(name) = c.file_name() {
                h.update(name.as_encoded_bytes());
            }
            hash_into(h, &c, budget);
        }
    } else if let Ok(Some(buf)) = pith_llm::config_file::read_limited(path, *budget) {
        // Regular files only (a FIFO never blocks); a file past the budget is hashed by size.
        *budget = budget.saturating_sub(buf.len() as u64);
        h.update(&buf);
    } else if let Ok(meta) = std::fs::symlink_metadata(path) {
        h.update(meta.len().to_le_bytes());
    }
}

/// sha256 (hex) of a file or directory, at most 1 MiB of content.
pub fn fingerprint(path: &Path) -> String {
    let mut h = Sha256::new();
    let mut budget = FINGERPRINT_BYTES;
    hash_into(&mut h, path, &mut budget);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn items(cwd: &Path) -> Vec<Item> {
    let mut out = Vec::new();
    let dir = crate::ext_discovery::project_dir(cwd);
    for spec in crate::ext_discovery::scan(&dir, pith_events::ext::Scope::Project) {
        let bare_file = spec
            .manifest
            .command
            .iter()
            .map(PathBuf::from)
            .find(|p| p.parent() == Some(spec.dir.as_path()) && spec.dir == dir);
        let path = bare_file.unwrap_or_else(|| spec.dir.clone());
        out.push(Item {
            key: format!("extensions/{}", spec.manifest.name),
            fingerprint: fingerprint(&path),
            shown: spec.manifest.command.join(" "),
            path,
        });
    }
    let settings = cwd.join(".pith").join("settings.json");
    if let Some(text) = read_config(&settings)
        && serde_json::from_str::<Value>(&text).is_ok_and(|v| v["extensions"].is_array())
    {
        out.push(Item {
            key: "settings.json".into(),
            fingerprint: fingerprint(&settings),
            shown: format!("the extensions listed in {}", settings.display()),
            path: settings,
        });
    }
    out
}

use pith_actors::trust::{default_trust, read_decisions as read_store, trust_file};

fn store(agent_dir: &Path, project: &str, trusted: bool, items: &[Item]) {
    // Startup goes on without a saved decision: it is asked again next time.
    let _ = write_decision(agent_dir, project, trusted, items);
}

/// Records `trusted` for `project` with the fingerprints of `items`, every other project's
/// decision kept; `trust.json` is replaced atomically.
///
/// Errors: the agent directory or `trust.json` cannot be written (named in the error).
fn write_decision(
    agent_dir: &Path,
    project: &str,
    trusted: bool,
    items: &[Item],
) -> anyhow::Result<()> {
    let mut all = read_store(agent_dir);
    let fingerprints: BTreeMap<&str, &str> = items
        .iter()
        .map(|i| (i.key.as_str(), i.fingerprint.as_str()))
        .collect();
    all[project] = json!({
        "decision": if trusted { "trusted" } else { "untrusted" },
        "fingerprints": fingerprints,
    });
    std::fs::create_dir_all(agent_dir)
        .map_err(|e| anyhow::anyhow!("{}: {e}", agent_dir.display()))?;
    let text = serde_json::to_string_pretty(&all)?;
    let file = trust_file(agent_dir);
    pith_store::writer::replace_file(&file, pith_store::writer::Replace::RegularOrNothing, |w| {
        w.write_all(text.as_bytes())
    })
    .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))
}

/// `/trust`'s saved decision for the project in `cwd`: trusted with the fingerprints of the
/// project extensions as they are now (so they run at the next start without being asked
/// about), or untrusted.
///
/// Errors: `trust.json` cannot be written.
pub fn save_decision(agent_dir: &Path, cwd: &Path, trusted: bool) -> anyhow::Result<()> {
    let project = pith_actors::trust::project_key(cwd);
    write_decision(agent_dir, &project, trusted, &items(cwd))
}

fn ask_user(project: &str, items: &[&Item]) -> bool {
    let mut err = std::io::stderr();
    let _ = writeln!(err, "The project {project} has extensions that would run:");
    for i in items {
        let _ = writeln!(err, "  {}: {}", i.key, i.shown);
    }
    let _ = write!(err, "Trust this project and run them? [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    matches!(answer.trim(), "y" | "Y" | "yes")
}

fn allowed_of(items: &[&Item]) -> Allowed {
    let mut allowed = Allowed::default();
    for i in items {
        if i.key == "settings.json" {
            allowed.settings = true;
        } else if i.path.is_dir() {
            allowed.dirs.insert(i.path.clone());
        } else {
            allowed.files.insert(i.path.clone());
        }
    }
    allowed
}

/// Decides which project-local extensions may run; nothing under `.pith/` has been spawned
/// when this returns. Warnings go to stderr and name what was skipped.
pub fn decide(ask: &Ask<'_>) -> Allowed {
    let items = items(ask.cwd);
    if items.is_empty() {
        return Allowed::default();
    }
    let project = std::fs::canonicalize(ask.cwd)
        .unwrap_or_else(|_| ask.cwd.to_owned())
        .to_string_lossy()
        .into_owned();
    let all: Vec<&Item> = items.iter().collect();
    let skip_all = |why: &str| {
        for i in &items {
            eprintln!(
                "pith: project extension {} ({}) not run: {why}",
                i.key, i.shown
            );
        }
        Allowed::default()
    };
    match ask.approve {
        Some(true) => {
            store(ask.agent_dir, &project, true, &items);
            return allowed_of(&all);
        }
        Some(false) => return skip_all("--no-approve"),
        None => {}
    }
    let stored = read_store(ask.agent_dir);
    let entry = &stored[project.as_str()];
    match entry["decision"].as_str() {
        Some("trusted") => {
            let (same, changed): (Vec<&Item>, Vec<&Item>) = items
                .iter()
                .partition(|i| entry["fingerprints"][i.key.as_str()] == i.fingerprint.as_str());
            if changed.is_empty() {
                return allowed_of(&same);
            }
            if ask.interactive {
                let yes = ask_user(&project, &changed);
                store(ask.agent_dir, &project, yes, &items);
                return if yes {
                    allowed_of(&all)
                } else {
                    Allowed::default()
                };
            }
            for i in &changed {
                eprintln!(
                    "pith: project extension {} ({}) changed since the project was trusted; not run (run pith interactively or with --approve to trust it again)",
                    i.key, i.shown
                );
            }
            allowed_of(&same)
        }
        Some(_) => skip_all("the project is not trusted"),
        None => match default_trust(ask.agent_dir).as_str() {
            "always" => {
                store(ask.agent_dir, &project, true, &items);
                allowed_of(&all)
            }
            "never" => skip_all("defaultProjectTrust is never"),
            _ if ask.interactive => {
                let yes = ask_user(&project, &all);
                store(ask.agent_dir, &project, yes, &items);
                if yes {
                    allowed_of(&all)
                } else {
                    Allowed::default()
                }
            }
            _ => skip_all("the project is not trusted (use --approve)"),
        },
    }
}

/// A configuration file as text: regular files only (a FIFO or device never blocks), at most
/// `CONFIG_MAX_BYTES`; `None` when absent or refused.
fn read_config(path: impl AsRef<Path>) -> Option<String> {
    pith_llm::config_file::read_text_limited(path.as_ref(), pith_llm::config_file::CONFIG_MAX_BYTES)
        .ok()
        .flatten()
}

/// Whether the project in `ask.cwd` is trusted for its non-executable resources (settings,
/// templates, skills, `SYSTEM.md`, MCP servers): [`pith_actors::trust::project_trusted`]. A
/// `--approve` or `--no-approve` is stored as the project's decision, so that every later
/// reader of project files (the settings of each session) follows it.
pub fn project_trusted(ask: &Ask<'_>) -> bool {
    if let Some(approve) = ask.approve
        && pith_actors::trust::stored_decision(ask.agent_dir, ask.cwd) != Some(approve)
    {
        let project = pith_actors::trust::project_key(ask.cwd);
        store(ask.agent_dir, &project, approve, &[]);
    }
    pith_actors::trust::project_trusted(ask.agent_dir, ask.cwd, ask.approve)
}
