//! The ignore files pi's resource discovery honours (`.gitignore`, `.ignore`, `.fdignore`),
//! each directory's rules prefixed with its path below the scan root, as pi's
//! `addIgnoreRules` does before handing them to the `ignore` package.

use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

const IGNORE_FILE_NAMES: [&str; 3] = [".gitignore", ".ignore", ".fdignore"];

/// Rules collected while walking down from `root`.
#[derive(Debug, Clone)]
pub(crate) struct IgnoreRules {
    root: PathBuf,
    lines: Vec<String>,
    matcher: Option<Gitignore>,
}

impl IgnoreRules {
    /// No rules yet, paths relative to `root`.
    pub(crate) fn new(root: &Path) -> IgnoreRules {
        IgnoreRules {
            root: root.to_path_buf(),
            lines: Vec::new(),
            matcher: None,
        }
    }

    /// Adds the rules of `dir`'s ignore files.
    pub(crate) fn add_dir(&mut self, dir: &Path) {
        let prefix = match dir.strip_prefix(&self.root) {
            Ok(rel) if !rel.as_os_str().is_empty() => {
                format!("{}/", rel.to_string_lossy().replace('\\', "/"))
            }
            _ => String::new(),
        };
        let mut added = false;
        for name in IGNORE_FILE_NAMES {
            let Ok(Some(text)) = pith_llm::config_file::read_text_limited(
                &dir.join(name),
                pith_llm::config_file::CONTEXT_MAX_BYTES,
            ) else {
                continue;
            };
            for line in text.split('\n') {
                let line = line.strip_suffix('\r').unwrap_or(line);
                if let Some(p) = prefixed(line, &prefix) {
                    self.lines.push(p);
                    added = true;
                }
            }
        }
        if added {
            let mut b = GitignoreBuilder::new(&self.root);
            for l in &self.lines {
                let _ = b.add_line(None, l);
            }
            self.matcher = b.build().ok();
        }
    }

    /// Whether `path` (under the root) is ignored.
    pub(crate) fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        match &self.matcher {
            Some(m) => m.matched_path_or_any_parents(path, is_dir).is_ignore(),
            None => false,
        }
    }
}

/// pi's `prefixIgnorePattern`.
fn prefixed(line: &str, prefix: &str) -> Option<String> {
    let trimmed = line.trim();
    if trimmed.is_empty() || (trimmed.starts_with('#') && !trimmed.starts_with("\\#")) {
        return None;
    }
    let mut pattern = line;
    let mut negated = false;
    if let Some(p) = pattern.strip_prefix('!') {
        negated = true;
        pattern = p;
    } else if pattern.starts_with("\\!") {
        pattern = &pattern[1..];
    }
    let pattern = pattern.strip_prefix('/').unwrap_or(pattern);
    let p = format!("{prefix}{pattern}");
    Some(if negated { format!("!{p}") } else { p })
}
