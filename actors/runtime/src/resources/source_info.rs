//! Where a template or skill came from (pi's `SourceInfo`, as rpc `get_commands` reports it).

use std::path::{Path, PathBuf};

/// How it was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Discovered in a default directory (pi's `"auto"`).
    Auto,
    /// Named on the command line (`--skill`, `--prompt-template`; pi's `"local"`).
    Local,
}

/// Whose it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The user's (`~/.pith/agent`, `~/.agents`).
    User,
    /// The project's (`.pith/`, `.agents/` of the cwd and its ancestors).
    Project,
    /// This run only (command-line paths).
    Temporary,
}

/// pi's `sourceInfo` of a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceInfo {
    /// Found or named.
    pub source: Source,
    /// User, project or this run.
    pub scope: Scope,
    /// The directory it belongs to: the agent dir, `.pith`, an `.agents` dir, or the named
    /// directory (a named file's parent); `None` for a settings entry (pi gives those no
    /// `baseDir`).
    pub base_dir: Option<PathBuf>,
}

impl SourceInfo {
    /// Discovered under `base_dir`.
    pub(crate) fn auto(scope: Scope, base_dir: &Path) -> SourceInfo {
        SourceInfo {
            source: Source::Auto,
            scope,
            base_dir: Some(base_dir.to_path_buf()),
        }
    }

    /// Named by a settings file's `skills` or `prompts` array (pi's `resolveLocalEntries`
    /// metadata: `local`, the file's scope, no `baseDir`).
    pub(crate) fn setting(scope: Scope) -> SourceInfo {
        SourceInfo {
            source: Source::Local,
            scope,
            base_dir: None,
        }
    }

    /// Named on the command line as `path`.
    pub(crate) fn local(path: &Path) -> SourceInfo {
        let base_dir = if path.is_dir() {
            path.to_path_buf()
        } else {
            path.parent().map(Path::to_path_buf).unwrap_or_default()
        };
        SourceInfo {
            source: Source::Local,
            scope: Scope::Temporary,
            base_dir: Some(base_dir),
        }
    }

    /// pi's JSON object for the resource at `path`.
    pub fn to_json(&self, path: &Path) -> serde_json::Value {
        let mut v = serde_json::json!({
            "path": path.to_string_lossy(),
            "source": match self.source { Source::Auto => "auto", Source::Local => "local" },
            "scope": match self.scope {
                Scope::User => "user",
                Scope::Project => "project",
                Scope::Temporary => "temporary",
            },
            "origin": "top-level",
        });
        if let Some(dir) = &self.base_dir {
            v["baseDir"] = dir.to_string_lossy().into();
        }
        v
    }
}
