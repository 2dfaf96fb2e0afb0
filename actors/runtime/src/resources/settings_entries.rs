//! The `skills` and `prompts` arrays of a settings file (pi 1.6.0 `core/package-manager.js`,
//! `resolveLocalEntries` and `isEnabledByOverrides`): extra skill and prompt-template paths,
//! and patterns that switch resources off and on.
//!
//! An entry is a path (`~` is the home folder; relative paths start at the settings file's
//! base: the agent directory for the user's file, `<cwd>/.pith` for the project's) or a
//! pattern: `!glob` leaves out what matches (the file's path relative to the base, its name,
//! or its absolute path; for a `SKILL.md` also its folder's), `+path` takes an exact path
//! back in, `-path` leaves an exact path out whatever else says. Patterns apply to the
//! entries' own files and to the discovered ones of the same scope.

use std::path::{Component, Path, PathBuf};

use globset::GlobBuilder;

/// The two arrays of one settings file, as written (strings only; other values ignored).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettingsEntries {
    /// `skills`.
    pub skills: Vec<String>,
    /// `prompts`.
    pub prompts: Vec<String>,
}

impl SettingsEntries {
    /// The arrays of the settings file at `path`; empty when it is missing, unreadable or
    /// not an object (the settings loader reports those), or when a member is not an array.
    ///
    /// pi ≤ 0.x wrote `skills` as `{customDirectories: [...]}`; pi 1.6.0 migrates that to
    /// the array when it loads, so it is read the same way here.
    pub fn read(path: &Path) -> SettingsEntries {
        let text = match pith_llm::config_file::read_text_limited(
            path,
            pith_llm::config_file::CONFIG_MAX_BYTES,
        ) {
            Ok(Some(t)) => t,
            _ => return SettingsEntries::default(),
        };
        let Ok(serde_json::Value::Object(map)) = serde_json::from_str(&text) else {
            return SettingsEntries::default();
        };
        let strings = |v: Option<&serde_json::Value>| -> Vec<String> {
            v.and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let skills = match map.get("skills") {
            Some(serde_json::Value::Object(old)) => strings(old.get("customDirectories")),
            other => strings(other),
        };
        SettingsEntries {
            skills,
            prompts: strings(map.get("prompts")),
        }
    }
}

/// Which kind of resource the entries name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Skill files (`SKILL.md` folders, or `.md` files at a folder's top).
    Skills,
    /// Prompt templates: `.md` files, folders searched to any depth.
    Prompts,
}

fn is_pattern(s: &str) -> bool {
    s.starts_with(['!', '+', '-']) || s.contains(['*', '?'])
}

/// pi's `resolvePath(input, base, {homeDir, trim})`: trimmed, `~` expanded, joined to `base`
/// when relative, `.` and `..` resolved without touching the disk.
pub(super) fn resolve(input: &str, base: &Path, home: Option<&Path>) -> PathBuf {
    let input = input.trim();
    let joined = match (input, home) {
        ("~", Some(h)) => h.to_path_buf(),
        (i, Some(h)) if i.starts_with("~/") => h.join(&i[2..]),
        (i, _) => base.join(i),
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// pi's `resolveLocalEntries`: the files the plain entries name (a file as it is, a folder
/// searched as `kind` says; missing paths skipped), each with whether the entries' patterns
/// leave it on, in entry order.
pub(super) fn local_files(
    entries: &[String],
    base: &Path,
    home: Option<&Path>,
    kind: Kind,
) -> Vec<(PathBuf, bool)> {
    let patterns: Vec<&str> = entries
        .iter()
        .map(String::as_str)
        .filter(|e| is_pattern(e))
        .collect();
    let mut files = Vec::new();
    for entry in entries.iter().filter(|e| !is_pattern(e)) {
        let path = resolve(entry, base, home);
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_file() {
            files.push(path);
        } else if meta.is_dir() {
            files.extend(match kind {
                Kind::Skills => super::skills::collect_entries(&path, super::skills::Mode::Pith),
                Kind::Prompts => markdown_files(&path),
            });
        }
    }
    let on = apply_patterns(&files, &patterns, base);
    files
        .into_iter()
        .map(|f| {
            let enabled = on.contains(&f);
            (f, enabled)
        })
        .collect()
}

/// pi's `applyPatterns`: plain globs keep what matches (all when there are none), `!glob`
/// leaves out, `+path` takes back, `-path` leaves out last.
fn apply_patterns(files: &[PathBuf], patterns: &[&str], base: &Path) -> Vec<PathBuf> {
    let (mut includes, mut excludes, mut force_in, mut force_out) =
        (vec![], vec![], vec![], vec![]);
    for p in patterns {
        if let Some(rest) = p.strip_prefix('+') {
            force_in.push(rest);
        } else if let Some(rest) = p.strip_prefix('-') {
            force_out.push(rest);
        } else if let Some(rest) = p.strip_prefix('!') {
            excludes.push(rest);
        } else {
            includes.push(*p);
        }
    }
    let mut result: Vec<PathBuf> = files
        .iter()
        .filter(|f| includes.is_empty() || matches_any(f, &includes, base))
        .filter(|f| !matches_any(f, &excludes, base))
        .cloned()
        .collect();
    for f in files {
        if !result.contains(f) && matches_exact(f, &force_in, base) {
            result.push(f.clone());
        }
    }
    result.retain(|f| !matches_exact(f, &force_out, base));
    result
}

/// pi's `isEnabledByOverrides` for a discovered file: only the `!`, `+` and `-` entries
/// count.
pub(super) fn enabled_by_overrides(file: &Path, entries: &[String], base: &Path) -> bool {
    let with = |prefix: char| -> Vec<&str> {
        entries
            .iter()
            .filter_map(|e| e.strip_prefix(prefix))
            .collect()
    };
    let mut enabled = !matches_any(file, &with('!'), base);
    if matches_exact(file, &with('+'), base) {
        enabled = true;
    }
    if matches_exact(file, &with('-'), base) {
        enabled = false;
    }
    enabled
}

/// The names a pattern is tried against: the path relative to `base`, the file name, the
/// absolute path; for a `SKILL.md` also its folder's relative path, name and absolute path.
fn candidates(file: &Path, base: &Path, exact: bool) -> Vec<String> {
    let rel = |p: &Path| relative(base, p);
    let mut out = vec![rel(file)];
    if !exact {
        out.push(file_name(file));
    }
    out.push(file.to_string_lossy().into_owned());
    if file.file_name().is_some_and(|n| n == "SKILL.md")
        && let Some(dir) = file.parent()
    {
        out.push(rel(dir));
        if !exact {
            out.push(file_name(dir));
        }
        out.push(dir.to_string_lossy().into_owned());
    }
    out
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Node's `path.relative(from, to)` for absolute paths.
fn relative(from: &Path, to: &Path) -> String {
    let (a, b): (Vec<_>, Vec<_>) = (from.components().collect(), to.components().collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); a.len() - common];
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// minimatch-like: `*` and `?` stay within a path segment, `**` crosses them.
fn matches_any(file: &Path, patterns: &[&str], base: &Path) -> bool {
    if patterns.is_empty() {
        return false;
    }
    let names = candidates(file, base, false);
    patterns.iter().any(|p| {
        let p = normalize(p);
        match GlobBuilder::new(&p).literal_separator(true).build() {
            Ok(glob) => {
                let m = glob.compile_matcher();
                names.iter().any(|n| m.is_match(n))
            }
            Err(_) => names.contains(&p),
        }
    })
}

fn matches_exact(file: &Path, patterns: &[&str], base: &Path) -> bool {
    if patterns.is_empty() {
        return false;
    }
    let names = candidates(file, base, true);
    patterns.iter().any(|p| {
        let p = normalize(p.strip_prefix("./").unwrap_or(p));
        names.contains(&p)
    })
}

/// Node's `path.normalize` for a pattern: `.` segments and doubled slashes gone, `..` folded.
fn normalize(p: &str) -> String {
    let absolute = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." if parts.last().is_some_and(|l| *l != "..") => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_owned()
    } else {
        joined
    }
}

/// pi's `collectFiles(dir, /\.md$/)`: `.md` files at any depth (dot names and
/// `node_modules` skipped, symlinks followed, `.gitignore`/`.ignore`/`.fdignore` respected).
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    // Depth-first in directory order, as pi's recursion.
    fn walk(
        dir: &Path,
        ignore: &mut super::ignore_rules::IgnoreRules,
        out: &mut Vec<PathBuf>,
        depth: usize,
    ) {
        if depth > 64 {
            return;
        }
        ignore.add_dir(dir);
        for entry in super::read_dir_sorted(dir) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "node_modules" {
                continue;
            }
            let path = entry.path();
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if ignore.ignores(&path, meta.is_dir()) {
                continue;
            }
            if meta.is_dir() {
                walk(&path, ignore, out, depth + 1);
            } else if meta.is_file() && name.ends_with(".md") {
                out.push(path);
            }
        }
    }
    let mut ignore = super::ignore_rules::IgnoreRules::new(root);
    let mut out = Vec::new();
    walk(root, &mut ignore, &mut out, 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_switch_files_off_and_back_on() {
        let base = Path::new("/a/.pith");
        let files = vec![
            PathBuf::from("/a/.pith/x/one.md"),
            PathBuf::from("/a/.pith/x/two.md"),
            PathBuf::from("/a/s/pdf/SKILL.md"),
        ];
        assert_eq!(
            apply_patterns(&files, &["!*.md", "+x/two.md"], base),
            [PathBuf::from("/a/.pith/x/two.md")]
        );
        assert_eq!(
            apply_patterns(&files, &["!pdf", "-x/one.md"], base),
            [PathBuf::from("/a/.pith/x/two.md")]
        );
        assert!(!enabled_by_overrides(
            Path::new("/a/s/pdf/SKILL.md"),
            &["!pdf".into()],
            base
        ));
        assert!(enabled_by_overrides(
            Path::new("/a/s/pdf/SKILL.md"),
            &["some/path".into()],
            base
        ));
        assert_eq!(
            resolve(" ~/k/../skills ", base, Some(Path::new("/home/u"))),
            PathBuf::from("/home/u/skills")
        );
        assert_eq!(resolve("../p", base, None), PathBuf::from("/a/p"));
    }
}
