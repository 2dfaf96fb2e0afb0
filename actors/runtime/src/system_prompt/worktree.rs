//! pi 1.6.0's `findShadowedContextFile`: in a linked git worktree nested inside its main
//! checkout (`git worktree add wt/feature`), the worktree's own context file and the main
//! checkout's would both be loaded for one repository; the main checkout's is left out.

use std::path::{Path, PathBuf};

/// pi's `findGitPaths`: the first `.git` from `cwd` upwards — a directory (an ordinary
/// checkout) or a `gitdir:` file (a linked worktree, whose `commondir` names the shared git
/// directory). `(worktree root, common git dir)`; `None` outside a repository or when its
/// `HEAD` is missing.
fn git_paths(cwd: &Path) -> Option<(PathBuf, PathBuf)> {
    for dir in cwd.ancestors() {
        let git = dir.join(".git");
        let Ok(meta) = std::fs::metadata(&git) else {
            continue;
        };
        if meta.is_file() {
            let content = std::fs::read_to_string(&git).ok()?;
            let target = content.trim().strip_prefix("gitdir: ")?;
            let git_dir = dir.join(target.trim());
            if !git_dir.join("HEAD").exists() {
                return None;
            }
            let common = match std::fs::read_to_string(git_dir.join("commondir")) {
                Ok(c) => git_dir.join(c.trim()),
                Err(_) => git_dir,
            };
            return Some((dir.to_path_buf(), common));
        }
        if meta.is_dir() {
            return git.join("HEAD").exists().then(|| (dir.to_path_buf(), git));
        }
        return None;
    }
    None
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The main checkout's context file that the worktree's own shadows (canonical path), if
/// `cwd` is in a linked worktree nested inside its main checkout and that worktree has a
/// context file.
pub(super) fn shadowed_context_file(cwd: &Path) -> Option<PathBuf> {
    let (worktree, common) = git_paths(cwd)?;
    let common = canonical(&common);
    let worktree = canonical(&worktree);
    let main_root = common.parent()?.to_path_buf();
    if !worktree.starts_with(&main_root) || worktree == main_root {
        return None;
    }
    if canonical(&main_root.join(".git")) != common {
        return None;
    }
    let own = super::context_file_in(&worktree)?;
    Some(main_root.join(own.path.file_name()?))
}
