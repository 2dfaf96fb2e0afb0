//! Where session files live (spec: format.md §1).

use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Environment variable that overrides pith's agent directory.
pub const AGENT_DIR_ENV: &str = "PITH_AGENT_DIR";

/// pith's agent directory: `$PITH_AGENT_DIR` when set and non-empty (`~` and `~/…` expanded),
/// else `~/.pith/agent`. pi's is `~/.pi/agent` (format.md §1.1); pith keeps its own so the
/// two never write into each other's directories unasked.
pub fn agent_dir() -> PathBuf {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    match std::env::var(AGENT_DIR_ENV) {
        Ok(dir) if !dir.is_empty() => expand_tilde(&dir, &home),
        _ => home.join(".pith").join("agent"),
    }
}

/// `~` → home and `~/x` → home/x; anything else as given.
pub fn expand_tilde(path: &str, home: &Path) -> PathBuf {
    if path == "~" {
        home.to_owned()
    } else if let Some(rest) = path.strip_prefix("~/") {
        home.join(rest)
    } else {
        PathBuf::from(path)
    }
}

/// The sessions root under an agent directory: `<agent_dir>/sessions`.
pub fn sessions_root(agent_dir: &Path) -> PathBuf {
    agent_dir.join("sessions")
}

/// pi's directory name for a cwd (spec: format.md §1.2): one leading `/` or `\` removed, then
/// every `/`, `\` and `:` replaced by `-`, wrapped in `--…--`. Lossy: `/a-b` and `/a/b` collide.
pub fn encode_cwd(cwd: &str) -> String {
    let rest = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    let body: String = rest
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{body}--")
}

/// `<agent_dir>/sessions/<encoded cwd>`, created (mode 0700) if missing, as pi creates it
/// whenever it computes it.
///
/// Errors: [`Error::Io`] when the directory cannot be created.
pub fn default_session_dir(agent_dir: &Path, cwd: &str) -> Result<PathBuf> {
    let dir = sessions_root(agent_dir).join(encode_cwd(cwd));
    ensure_dir(&dir)?;
    Ok(dir)
}

/// Creates `dir` and its missing parents with mode 0700 (spec: divergences.md "Writing").
///
/// Errors: [`Error::Io`].
pub fn ensure_dir(dir: &Path) -> Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::io(dir, e))
}

/// Where pith keeps its rebuildable indexes of the sessions in `folder` (the listing index,
/// the search index): `<agent_dir>/index/<encoded folder>-<hash>`, never inside `folder`
/// itself, which pith may not own (`--session-dir` can name pi's own directory). `folder` is
/// made absolute and canonical when it exists, so one folder has one index however it is
/// named; the hash (FNV-1a of the full path) keeps folders whose encodings collide apart.
pub fn index_dir(agent_dir: &Path, folder: &Path) -> PathBuf {
    let folder = std::fs::canonicalize(folder)
        .or_else(|_| std::path::absolute(folder))
        .unwrap_or_else(|_| folder.to_owned());
    let text = folder.to_string_lossy();
    let hash = path_hash(&text);
    let name: String = encode_cwd(&text).chars().take(96).collect();
    agent_dir.join("index").join(format!("{name}-{hash:016x}"))
}

/// FNV-1a of a path's text: what names pith's caches of a folder or file apart.
pub(crate) fn path_hash(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// Prefix of the temporary files [`keep_cache`] writes before renaming them into place.
pub(crate) const CACHE_TEMP_PREFIX: &str = ".pith-cache";

/// Writes one of pith's rebuildable caches (an index, an outline) at `path` atomically, so a
/// concurrent reader sees the old file or the new one, never half of one; not fsynced, since
/// a cache lost in a crash is rebuilt. Returns whether it was written: a cache that cannot be
/// written is simply not kept.
pub(crate) fn keep_cache(path: &Path, bytes: &[u8]) -> bool {
    let Some(dir) = path.parent() else {
        return false;
    };
    if ensure_dir(dir).is_err() {
        return false;
    }
    let Ok(mut tmp) = tempfile::Builder::new()
        .prefix(CACHE_TEMP_PREFIX)
        .tempfile_in(dir)
    else {
        return false;
    };
    std::io::Write::write_all(&mut tmp, bytes).is_ok() && tmp.persist(path).is_ok()
}

/// `<timestamp with : and . replaced by ->_<session id>.jsonl` (spec: format.md §1.4).
pub fn session_file_name(timestamp: &str, session_id: &str) -> String {
    format!("{}_{session_id}.jsonl", timestamp.replace([':', '.'], "-"))
}

/// Whether `id` may name a session (`^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$`, pi ≥ 0.76,
/// spec: format.md §4.2): letters and digits at both ends, `.`, `_`, `-` between.
pub fn valid_session_id(id: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    let (Some(first), Some(last)) = (id.chars().next(), id.chars().last()) else {
        return false;
    };
    alnum(first) && alnum(last) && id.chars().all(|c| alnum(c) || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_encoding_table_from_the_spec() {
        for (cwd, want) in [
            ("/home/me/proj", "--home-me-proj--"),
            ("/", "----"),
            ("/home/u/x/", "--home-u-x---"),
            ("C:\\Users\\me\\proj", "--C--Users-me-proj--"),
            ("\\\\server\\share", "---server-share--"),
            ("/a:b/c d/e.f", "--a-b-c d-e.f--"),
            ("relative/dir", "--relative-dir--"),
        ] {
            assert_eq!(encode_cwd(cwd), want, "{cwd}");
        }
    }

    #[test]
    fn file_names_and_tilde() {
        assert_eq!(
            session_file_name("2026-11-30T09:32:43.732Z", "01a2"),
            "2026-11-30T09-32-43-732Z_01a2.jsonl"
        );
        let home = Path::new("/h");
        assert_eq!(expand_tilde("~", home), PathBuf::from("/h"));
        assert_eq!(expand_tilde("~/x", home), PathBuf::from("/h/x"));
        assert_eq!(expand_tilde("~x", home), PathBuf::from("~x"));
    }

    #[test]
    fn index_dirs_live_under_the_agent_dir_one_per_folder() {
        let agent = Path::new("/a/agent");
        let one = index_dir(agent, Path::new("/no/such/x-y"));
        let two = index_dir(agent, Path::new("/no/such/x/y"));
        assert!(one.starts_with("/a/agent/index"), "{one:?}");
        assert_ne!(one, two, "colliding encodings stay apart");
        assert_eq!(one, index_dir(agent, Path::new("/no/such/x-y")));
    }

    #[test]
    fn session_ids_follow_pis_pattern() {
        for ok in [
            "my-fixed-id.v1",
            "ci-run-42",
            "Release_2026.01",
            "a",
            "01a22bcc-ad53-72bd-bcad-bf348b6ab101",
        ] {
            assert!(super::valid_session_id(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", ".a", "a b", "a/b", "é"] {
            assert!(!super::valid_session_id(bad), "{bad}");
        }
    }
}
