//! Directory walks with the ignore rules of the programs pi 1.6.0 runs: ripgrep for `grep`,
//! fd for `find`. Both use the `ignore` crate, so pith builds its walkers with the same
//! settings as their command lines give (pi's flags and the programs' defaults), and walks
//! in path order: siblings sorted by name, which is the order of `rg --sort path` and of fd's
//! sorted output.
//!
//! Shared rules: hidden files are included (`--hidden`), `.git` directories too (neither
//! program skips them), symbolic links are listed but not followed, `.gitignore`,
//! `.git/info/exclude`, git's global excludes file and `.ignore` files apply, also from parent
//! directories.

use std::path::Path;

use ignore::overrides::Override;
use ignore::{Walk, WalkBuilder};

/// ripgrep's walk (`rg --no-config --hidden`, run inside `root`): `.gitignore` rules apply
/// only inside a git repository (ripgrep's default `--require-git`); `.rgignore` files apply
/// too; `overrides` are the `--glob` patterns.
pub(crate) fn ripgrep(root: &Path, overrides: Override) -> Walk {
    let mut builder = WalkBuilder::new(root);
    builder
        .follow_links(false)
        .hidden(false)
        .parents(true)
        .ignore(true)
        .git_global(true)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(true)
        .overrides(overrides)
        .current_dir(root)
        .add_custom_ignore_filename(".rgignore");
    builder.sort_by_file_name(|a, b| a.cmp(b));
    builder.build()
}

/// fd's walk (`fd --hidden [--no-require-git]`): `.gitignore` rules apply inside a git
/// repository, and outside one too when `require_git` is false (pi passes
/// `--no-require-git` when no parent of the search path holds `.git`); `.fdignore` files and
/// fd's global ignore file (`$XDG_CONFIG_HOME/fd/ignore`, else `~/.config/fd/ignore`) apply.
pub(crate) fn fd(root: &Path, require_git: bool, cwd: &Path) -> Walk {
    let mut builder = WalkBuilder::new(root);
    builder
        .follow_links(false)
        .hidden(false)
        .parents(true)
        .ignore(true)
        .git_global(true)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(require_git)
        .current_dir(cwd)
        .add_custom_ignore_filename(".fdignore");
    if let Some(global) = fd_global_ignore().filter(|p| p.is_file()) {
        // A malformed line is skipped, as fd does (it only prints a warning).
        let _ = builder.add_ignore(global);
    }
    builder.sort_by_file_name(|a, b| a.cmp(b));
    builder.build()
}

/// fd's global ignore file: `<config dir>/fd/ignore` (the `etcetera` XDG strategy fd uses).
fn fd_global_ignore() -> Option<std::path::PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::home_dir().map(|h| h.join(".config")))?;
    Some(config.join("fd").join("ignore"))
}

/// `path` relative to `root`, with `/` separators (non-UTF-8 bytes replaced, as Node decodes
/// them); `path` itself when it is not under `root`.
pub(crate) fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}
