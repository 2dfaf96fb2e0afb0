//! How a tool's `path` argument becomes a file, ported from pi's `core/tools/path-utils.js`.

use std::path::{Component, Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

/// pi's `expandPath`: drops one leading `@` (models copy pi's `@file` mentions), turns the
/// unusual Unicode spaces (NBSP, U+2000–U+200A, U+202F, U+205F, U+3000) into plain spaces and
/// expands `~` / `~/…` to the home directory.
pub fn expand_path(path: &str) -> String {
    let path = path.strip_prefix('@').unwrap_or(path);
    let normalized: String = path
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    let Some(home) = std::env::home_dir().map(|h| h.to_string_lossy().into_owned()) else {
        return normalized;
    };
    if normalized == "~" {
        home
    } else if let Some(rest) = normalized.strip_prefix("~/") {
        format!("{home}/{rest}")
    } else {
        normalized
    }
}

fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// pi's `resolveToCwd`: an absolute path (after [`expand_path`]) is used as it is; a relative
/// one is joined to `cwd` and normalized like Node's `path.resolve` (`.`/`..` folded, no
/// trailing slash), since the result shows up in pi's error texts.
pub fn resolve_to_cwd(path: &str, cwd: &Path) -> PathBuf {
    let expanded = PathBuf::from(expand_path(path));
    if expanded.is_absolute() {
        return expanded;
    }
    let base = if cwd.is_absolute() {
        cwd.to_path_buf()
    } else {
        // Node resolves against the process cwd when the given one is relative.
        std::env::current_dir().unwrap_or_default().join(cwd)
    };
    normalize(&base.join(expanded))
}

/// pi's `resolveReadPath`: [`resolve_to_cwd`], then, when that file does not exist, the
/// spellings macOS uses in screenshot names (narrow no-break space before AM/PM, NFD, a curly
/// apostrophe, NFD with a curly apostrophe); the first that exists wins, else the plain path.
pub fn resolve_read_path(path: &str, cwd: &Path) -> PathBuf {
    let resolved = resolve_to_cwd(path, cwd);
    if resolved.exists() {
        return resolved;
    }
    let Some(plain) = resolved.to_str() else {
        return resolved;
    };
    let am_pm = am_pm_variant(plain);
    let nfd: String = plain.nfd().collect();
    let curly = plain.replace('\'', "\u{2019}");
    let nfd_curly = nfd.replace('\'', "\u{2019}");
    [am_pm, nfd, curly, nfd_curly]
        .into_iter()
        .find(|v| v != plain && Path::new(v).exists())
        .map_or(resolved, PathBuf::from)
}

/// `" AM."` / `" pm."` (any case) with a narrow no-break space instead of the space.
fn am_pm_variant(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(pos) = rest.find(' ') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let marker = after.get(..3).filter(|m| {
            let b = m.as_bytes();
            matches!(b[0], b'a' | b'A' | b'p' | b'P') && matches!(b[1], b'm' | b'M') && b[2] == b'.'
        });
        match marker {
            Some(m) => {
                out.push('\u{202F}');
                out.push_str(m);
                rest = &after[3..];
            }
            None => {
                out.push(' ');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Lexical normalization as Node's `path.resolve` does it (no symlinks are followed).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_prefix_and_dots() {
        let p = resolve_to_cwd("@a/./b/../c.txt", Path::new("/w/x"));
        assert_eq!(p, PathBuf::from("/w/x/a/c.txt"));
        assert_eq!(
            resolve_to_cwd("../../..", Path::new("/w")),
            PathBuf::from("/")
        );
        assert_eq!(
            resolve_to_cwd("/abs/./y", Path::new("/w")),
            PathBuf::from("/abs/./y")
        );
    }

    #[test]
    fn unicode_spaces_and_am_pm() {
        assert_eq!(expand_path("a\u{00A0}b\u{3000}c"), "a b c");
        assert_eq!(am_pm_variant("/s 1.2 PM.png"), "/s 1.2\u{202F}PM.png");
        assert_eq!(am_pm_variant("/a map."), "/a map.");
    }
}
