//! Which extension processes a session runs (spec: extensions.md §1.2 "Discovery and
//! manifest", "Project trust"): `~/.pith/agent/extensions/`, a trusted project's
//! `.pith/extensions/`, `settings.json` `extensions`, then `-e/--extension` in command-line
//! order. Nothing project-local is read into a command, let alone spawned, before the trust
//! decision (`trust.rs`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use pith_events::ext::{ExtensionSpec, Manifest, Scope};

/// The manifest file of an extension directory.
pub const MANIFEST: &str = "extension.json";

/// Reads one extension: a directory with `extension.json`, a manifest file, or a bare
/// program (an executable, or a `.py`/`.mjs`/`.js` script run by `python3`/`node`).
///
/// Errors: no such file, an unreadable or invalid manifest, an empty command.
pub fn load(path: &Path, scope: Scope) -> Result<ExtensionSpec> {
    let path = std::fs::canonicalize(path)
        .with_context(|| format!("extension {}: no such file or directory", path.display()))?;
    let (manifest_file, dir) = if path.is_dir() {
        (Some(path.join(MANIFEST)), path.clone())
    } else if path.extension().is_some_and(|e| e == "json") {
        (
            Some(path.clone()),
            path.parent().map(Path::to_owned).unwrap_or_default(),
        )
    } else {
        (None, path.parent().map(Path::to_owned).unwrap_or_default())
    };
    let manifest = match manifest_file {
        Some(file) => {
            let text = read_config(&file)
                .with_context(|| format!("extension {}: cannot read", file.display()))?;
            let mut m: Manifest = serde_json::from_str(&text)
                .with_context(|| format!("extension {}: invalid manifest", file.display()))?;
            if m.name.is_empty() {
                m.name = file_name(&dir);
            }
            m
        }
        None => bare(&path),
    };
    if manifest.command.is_empty() {
        bail!("extension {}: the command is empty", path.display());
    }
    Ok(ExtensionSpec {
        manifest,
        dir,
        scope,
    })
}

fn file_name(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "extension".into())
}

/// A bare program: name = file stem, command = the file (through its interpreter for
/// scripts that are not executable).
fn bare(file: &Path) -> Manifest {
    let f = file.to_string_lossy().into_owned();
    let command = match file.extension().and_then(|e| e.to_str()) {
        Some("py") if !is_executable(file) => vec!["python3".into(), f],
        Some("mjs" | "js" | "cjs") if !is_executable(file) => vec!["node".into(), f],
        _ => vec![f],
    };
    Manifest {
        name: file_name(file),
        version: String::new(),
        protocol: pith_events::ext::PROTOCOL_VERSION,
        command,
        env: Default::default(),
        on_failure: Default::default(),
        timeouts: Default::default(),
        overrides: false,
    }
}

fn is_executable(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(file).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// The extensions of a directory (`extensions/`), sorted by name: subdirectories with a
/// manifest, and files. Broken ones are reported on stderr and skipped.
pub fn scan(dir: &Path, scope: Scope) -> Vec<ExtensionSpec> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = read.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    paths
        .into_iter()
        .filter(|p| {
            let hidden = p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'));
            !hidden && (p.is_file() || p.join(MANIFEST).is_file())
        })
        .filter_map(|p| match load(&p, scope) {
            Ok(spec) => Some(spec),
            Err(e) => {
                eprintln!("pith: {e:#}");
                None
            }
        })
        .collect()
}

/// `settings.json` `"extensions": [paths]` of `file`, relative paths resolved against the
/// file's directory.
pub fn from_settings(file: &Path) -> Vec<ExtensionSpec> {
    let Some(text) = read_config(file) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<Value>(&text) else {
        return Vec::new();
    };
    let base = file.parent().unwrap_or(Path::new("."));
    v["extensions"]
        .as_array()
        .map(|paths| {
            paths
                .iter()
                .filter_map(Value::as_str)
                .filter_map(|p| match load(&base.join(p), Scope::Settings) {
                    Ok(spec) => Some(spec),
                    Err(e) => {
                        eprintln!("pith: {e:#}");
                        None
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What to load and from where.
pub struct Sources<'a> {
    /// `~/.pith/agent`.
    pub agent_dir: &'a Path,
    /// The session cwd.
    pub cwd: &'a Path,
    /// `-e` paths, in order.
    pub cli: &'a [PathBuf],
    /// `-ne`: no discovery (command-line extensions still load).
    pub no_discovery: bool,
    /// The project extensions the trust decision allows (file names in `.pith/extensions/`),
    /// and whether the project's `settings.json` `extensions` count.
    pub project: &'a Allowed,
}

/// Every extension to run, in load order (spec: extensions.md §1.2 "Composition and
/// ordering"). A later extension with a name already taken is skipped with a warning (names
/// key the log file and the tool source).
///
/// Errors: a `-e` path that cannot be loaded.
pub fn discover(s: &Sources<'_>) -> Result<Vec<ExtensionSpec>> {
    let mut all = Vec::new();
    if !s.no_discovery {
        all.extend(scan(&s.agent_dir.join("extensions"), Scope::User));
        all.extend(
            scan(&project_dir(s.cwd), Scope::Project)
                .into_iter()
                .filter(|spec| s.project.allows(spec)),
        );
        all.extend(from_settings(&s.agent_dir.join("settings.json")));
        if s.project.settings {
            all.extend(from_settings(&s.cwd.join(".pith").join("settings.json")));
        }
    }
    for p in s.cli {
        all.push(load(p, Scope::Cli)?);
    }
    let mut seen = std::collections::HashSet::new();
    Ok(all
        .into_iter()
        .filter(|spec| {
            let fresh = seen.insert(spec.manifest.name.clone());
            if !fresh {
                eprintln!(
                    "pith: extension {} ({}) skipped: another extension has that name",
                    spec.manifest.name,
                    spec.dir.display()
                );
            }
            fresh
        })
        .collect())
}

/// `.pith/extensions` of a project.
pub fn project_dir(cwd: &Path) -> PathBuf {
    cwd.join(".pith").join("extensions")
}

/// A configuration file as text: regular files only (a FIFO or device never blocks), at most
/// `CONFIG_MAX_BYTES`; `None` when absent or refused.
fn read_config(path: impl AsRef<Path>) -> Option<String> {
    pith_llm::config_file::read_text_limited(path.as_ref(), pith_llm::config_file::CONFIG_MAX_BYTES)
        .ok()
        .flatten()
}

/// The project extensions the trust decision ([`crate::ext_trust::decide`]) lets run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowed {
    /// Directories (canonical) of the project extensions that may run.
    pub dirs: HashSet<PathBuf>,
    /// Files (canonical) of bare project extensions that may run.
    pub files: HashSet<PathBuf>,
    /// The project's `settings.json` `extensions` count.
    pub settings: bool,
}

impl Allowed {
    /// Whether `spec` (a project extension) may run.
    pub fn allows(&self, spec: &ExtensionSpec) -> bool {
        self.dirs.contains(&spec.dir)
            || spec
                .manifest
                .command
                .iter()
                .any(|a| self.files.contains(Path::new(a)))
    }
}
