//! `@` in the editor: a menu of the project's files, as pi's editor offers (pi lists them with
//! fd; pith walks the folder with ripgrep's `ignore` crate, so `.gitignore`d and hidden files
//! are left out the same way).

use std::path::Path;

/// At most this many paths are collected from the working folder.
const MAX_FILES: usize = 20_000;

/// At most this many matches are offered.
const MAX_MATCHES: usize = 50;

/// The `@` token the cursor is in: what follows the `@` (a token starts the text or follows
/// whitespace); `None` when the cursor is not in one.
pub fn at_token(before: &str) -> Option<&str> {
    let token = before.rsplit(char::is_whitespace).next()?;
    token.strip_prefix('@')
}

/// The files and folders under `cwd` (folders end with `/`), relative to it, in walk order:
/// ignored and hidden entries left out, at most [`MAX_FILES`].
pub fn walk(cwd: &Path) -> Vec<String> {
    ignore::WalkBuilder::new(cwd)
        .max_depth(Some(16))
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.depth() > 0)
        .filter_map(|e| {
            let rel = e.path().strip_prefix(cwd).ok()?.to_str()?.to_owned();
            let dir = e.file_type().is_some_and(|t| t.is_dir());
            Some(if dir { format!("{rel}/") } else { rel })
        })
        .take(MAX_FILES)
        .collect()
}

/// The paths of `files` that hold `query`'s characters in order (ignoring case), best
/// first: the name starting with the query, then the path containing it, then shorter paths.
pub fn matches<'a>(query: &str, files: &'a [String]) -> Vec<&'a String> {
    let q = query.to_lowercase();
    let mut found: Vec<(u8, usize, &String)> = files
        .iter()
        .filter_map(|path| {
            let lower = path.to_lowercase();
            let mut rest = lower.chars();
            if !q.chars().all(|c| rest.any(|p| p == c)) {
                return None;
            }
            let name = lower.trim_end_matches('/').rsplit('/').next().unwrap_or("");
            let rank = if name.starts_with(&q) {
                0
            } else if lower.contains(&q) {
                1
            } else {
                2
            };
            Some((rank, path.len(), path))
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .take(MAX_MATCHES)
        .map(|(_, _, p)| p)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_the_word_at_the_cursor_after_an_at() {
        assert_eq!(at_token("look at @src/ma"), Some("src/ma"));
        assert_eq!(at_token("@"), Some(""));
        assert_eq!(at_token("mail me@x"), None);
        assert_eq!(at_token("@a b"), None);
    }

    #[test]
    fn names_starting_with_the_query_come_first_then_substrings_then_scattered() {
        let files: Vec<String> = [
            "docs/readme.md",
            "src/main.rs",
            "src/",
            "Makefile",
            "tests/my_app_in.rs",
            "data.txt",
        ]
        .map(String::from)
        .to_vec();
        let got: Vec<&str> = matches("ma", &files)
            .into_iter()
            .map(String::as_str)
            .collect();
        // readme.md has an `m` but no `a` after it.
        assert_eq!(got, ["Makefile", "src/main.rs", "tests/my_app_in.rs"]);
        assert!(matches("zz", &files).is_empty());
    }

    #[test]
    fn the_walk_leaves_out_ignored_and_hidden_files() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::create_dir_all(root.join(".git")).expect("mkdir");
        std::fs::write(root.join("src/main.rs"), "").expect("write");
        std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
        std::fs::create_dir_all(root.join("target")).expect("mkdir");
        std::fs::write(root.join("target/out.bin"), "").expect("write");
        std::fs::write(root.join(".hidden"), "").expect("write");
        let mut got = walk(root);
        got.sort();
        assert_eq!(got, ["src/", "src/main.rs"]);
    }
}
