//! Completion: the `/command` menu (shown while a command name is typed at the start of
//! the editor, with descriptions, as pi's slash-command autocomplete; Up/Down select,
//! Tab or Enter accept) and Tab on a path.

use std::path::{Path, PathBuf};

use super::super::{screen, style};

/// At most this many menu rows (pi's `autocompleteMaxVisible`).
const VISIBLE: usize = 5;

/// The commands whose name starts with what is typed after `/`, when the whole text is a
/// command name being typed (`/mo`, not `/model x` or a second line).
pub fn slash_matches<'a>(
    text: &str,
    commands: &'a [(String, String)],
) -> Vec<&'a (String, String)> {
    let Some(prefix) = text.strip_prefix('/') else {
        return Vec::new();
    };
    if prefix.contains(char::is_whitespace) {
        return Vec::new();
    }
    commands
        .iter()
        .filter(|(name, _)| name.starts_with(prefix))
        .collect()
}

/// The arguments of `command` (e.g. `model` → model ids) that fit what follows `/command `
/// in `text`: those starting with it (or whose part after the last `/` does) first, then
/// those containing it (ignoring case);
/// empty when `text` is not `/command ` and one unfinished word.
pub fn argument_matches<'a>(text: &str, arguments: &'a [(String, Vec<String>)]) -> Vec<&'a String> {
    let Some((command, partial)) = text.strip_prefix('/').and_then(|t| t.split_once(' ')) else {
        return Vec::new();
    };
    if partial.contains(char::is_whitespace) {
        return Vec::new();
    }
    let Some((_, values)) = arguments.iter().find(|(c, _)| c == command) else {
        return Vec::new();
    };
    let p = partial.to_lowercase();
    let mut found: Vec<(bool, &String)> = values
        .iter()
        .filter_map(|v| {
            let lower = v.to_lowercase();
            // A model id counts as a start too (`/model gpt` → `openai/gpt-5`).
            let id = lower.rsplit('/').next().unwrap_or(&lower);
            let starts = lower.starts_with(&p) || id.starts_with(&p);
            lower.contains(&p).then_some((!starts, v))
        })
        .collect();
    found.sort_by_key(|(later, _)| *later);
    found.into_iter().map(|(_, v)| v).collect()
}

/// The menu's rows for `matches` (name, description) with `selected` marked, `width` columns
/// wide; each name is shown after `sigil` (`/` for commands, `@` for files).
pub fn menu_rows(
    matches: &[&(String, String)],
    selected: usize,
    width: usize,
    sigil: &str,
) -> Vec<String> {
    if matches.is_empty() {
        return Vec::new();
    }
    let first = selected
        .saturating_sub(VISIBLE / 2)
        .min(matches.len().saturating_sub(VISIBLE));
    let name_width = matches
        .iter()
        .map(|(n, _)| screen::width(n) + 1)
        .max()
        .unwrap_or(0)
        .clamp(12, 32);
    let mut rows: Vec<String> = matches
        .iter()
        .enumerate()
        .skip(first)
        .take(VISIBLE)
        .map(|(i, (name, description))| {
            let name = format!("{sigil}{name}");
            let text = screen::truncate(
                &format!(
                    "{name:<name_width$}  {}",
                    crate::text::one_line(&pith_tools::sanitize::for_terminal(description))
                ),
                width.saturating_sub(2),
            );
            if i == selected {
                format!("{}{}", style::accent("→ "), style::accent(&text))
            } else {
                format!("  {}", style::muted(&text))
            }
        })
        .collect();
    if matches.len() > VISIBLE {
        rows.push(style::muted(&format!(
            "  ({}/{})",
            selected + 1,
            matches.len()
        )));
    }
    rows
}

/// Tab on a path: what to insert after the cursor so the path that `before` ends with
/// (after its last space; `~/` is the home folder, `@` is dropped) becomes the one entry
/// that matches (a folder gets `/`, a file a space), or the matches' common prefix;
/// `None` when nothing matches or nothing would be added.
pub fn path_completion(before: &str, cwd: &Path, home: Option<&Path>) -> Option<String> {
    let token = before
        .rsplit(char::is_whitespace)
        .next()
        .unwrap_or("")
        .trim_start_matches('@');
    let (dir_part, prefix) = match token.rfind('/') {
        Some(i) => (&token[..=i], &token[i + 1..]),
        None => ("", token),
    };
    let dir: PathBuf = if let Some(rest) = dir_part.strip_prefix("~/") {
        home?.join(rest)
    } else if dir_part.starts_with('/') {
        PathBuf::from(dir_part)
    } else {
        cwd.join(dir_part)
    };
    let mut names: Vec<(String, bool)> = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let hidden_ok = prefix.starts_with('.') || !name.starts_with('.');
            (name.starts_with(prefix) && hidden_ok)
                .then(|| (name, e.file_type().is_ok_and(|t| t.is_dir())))
        })
        .collect();
    names.sort();
    let insert = match names.as_slice() {
        [] => return None,
        [(name, dir)] => format!("{}{}", &name[prefix.len()..], if *dir { "/" } else { " " }),
        [(first, _), rest @ ..] => {
            let mut common = first.as_str();
            for (name, _) in rest {
                let same = common
                    .char_indices()
                    .zip(name.chars())
                    .take_while(|((_, a), b)| a == b)
                    .last()
                    .map_or(0, |((i, a), _)| i + a.len_utf8());
                common = &common[..same];
            }
            common.get(prefix.len()..).unwrap_or("").to_owned()
        }
    };
    (!insert.is_empty()).then_some(insert)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands() -> Vec<(String, String)> {
        [
            ("new", "Start a new session"),
            ("name", "Set session display name"),
            ("tree", "Navigate session tree"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
    }

    #[test]
    fn slash_commands_match_by_prefix() {
        let c = commands();
        let names = |t: &str| -> Vec<String> {
            slash_matches(t, &c)
                .iter()
                .map(|(n, _)| n.clone())
                .collect()
        };
        assert_eq!(names("/n"), ["new", "name"]);
        assert_eq!(names("/t"), ["tree"]);
        assert!(names("/name x").is_empty());
        assert!(names("hello").is_empty());
        let rows = menu_rows(&slash_matches("/n", &c), 1, 60, "/");
        let sgr = regex::Regex::new("\x1b\\[[0-9;]*m").unwrap_or_else(|e| panic!("{e}"));
        let plain: Vec<String> = rows
            .iter()
            .map(|r| sgr.replace_all(r, "").into_owned())
            .collect();
        assert_eq!(
            plain,
            [
                "  /new          Start a new session",
                "→ /name         Set session display name"
            ]
        );
    }

    #[test]
    fn arguments_complete_after_their_command() {
        let args = vec![(
            "model".to_owned(),
            vec![
                "anthropic/claude".to_owned(),
                "mock/mock-two".to_owned(),
                "mock/other".to_owned(),
            ],
        )];
        let got =
            |t: &str| -> Vec<String> { argument_matches(t, &args).into_iter().cloned().collect() };
        assert_eq!(got("/model mock/mock-t"), ["mock/mock-two"]);
        assert_eq!(got("/model MOCK"), ["mock/mock-two", "mock/other"]);
        assert_eq!(
            got("/model o"),
            ["mock/other", "anthropic/claude", "mock/mock-two"]
        );
        assert!(got("/model a b").is_empty());
        assert!(got("/thinking h").is_empty());
        assert!(got("/model").is_empty());
    }

    #[test]
    fn paths_complete_to_the_one_match_or_the_common_prefix() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        std::fs::create_dir(root.join("src")).unwrap_or_default();
        std::fs::write(root.join("main.rs"), "").unwrap_or_default();
        std::fs::write(root.join("mod_a.rs"), "").unwrap_or_default();
        std::fs::write(root.join("mod_b.rs"), "").unwrap_or_default();
        assert_eq!(
            path_completion("look at sr", root, None).as_deref(),
            Some("c/")
        );
        assert_eq!(
            path_completion("@ma", root, None).as_deref(),
            Some("in.rs ")
        );
        assert_eq!(path_completion("mo", root, None).as_deref(), Some("d_"));
        assert_eq!(path_completion("mod_", root, None), None);
        assert_eq!(path_completion("zz", root, None), None);
    }
}
