//! pi's prompt templates (`core/prompt-templates.js`, docs/prompt-templates.md): markdown
//! files whose name is a `/command`; `/name args` is replaced by the file's body with the
//! arguments substituted.

use std::path::{Path, PathBuf};

use super::Diagnostic;
use super::frontmatter;

/// One template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptTemplate {
    /// The file name without `.md`: `/name` invokes it.
    pub name: String,
    /// Frontmatter `description`, else the body's first non-blank line (60 characters, then
    /// `...`).
    pub description: String,
    /// Frontmatter `argument-hint`, shown in completions.
    pub argument_hint: Option<String>,
    /// The body after the frontmatter, trimmed.
    pub content: String,
    /// Where it was read.
    pub file_path: PathBuf,
    /// Where it was found (`None` for templates built by hand).
    pub source_info: Option<super::SourceInfo>,
}

/// pi's `parseCommandArgs`: whitespace separates arguments; `"` or `'` opens a quote only at
/// the start of an argument (so `don't` stays one word); inside a quote a backslash before
/// that quote character keeps it; an unclosed quote is text, and the rest is parsed again.
pub fn parse_command_args(args: &str) -> Vec<String> {
    let chars: Vec<char> = args.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    let mut has_token = false;
    let mut in_quote: Option<char> = None;
    let mut quote_start = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = in_quote {
            if c == '\\' && chars.get(i + 1) == Some(&q) {
                current.push(q);
                i += 1;
            } else if c == q {
                in_quote = None;
            } else {
                current.push(c);
            }
        } else if (c == '"' || c == '\'') && !has_token {
            in_quote = Some(c);
            quote_start = i;
            has_token = true;
        } else if is_js_space(c) {
            if has_token {
                out.push(std::mem::take(&mut current));
                has_token = false;
            }
        } else {
            current.push(c);
            has_token = true;
        }
        if in_quote.is_some() && i + 1 == chars.len() {
            // Unclosed: the quote is text; parse again after it.
            in_quote = None;
            current = chars[quote_start].to_string();
            i = quote_start;
        }
        i += 1;
    }
    if has_token {
        out.push(current);
    }
    out
}

/// JavaScript's `\s`.
fn is_js_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// pi's `substituteArgs`: `$1`…, `$@` and `$ARGUMENTS` (all, space-joined),
/// `${N:-default}`, `${@:-default}`, `${ARGUMENTS:-default}` (default when missing or
/// empty), `${@:N}` and `${@:N:L}` (bash-style slices, `0` counts as `1`). One pass over the
/// template: substituted values are not substituted again.
pub fn substitute_args(content: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        match placeholder(tail, args, &all) {
            Some((replacement, used)) => {
                out.push_str(&replacement);
                rest = &tail[used..];
            }
            None => {
                out.push('$');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn arg_at(args: &[String], one_based: &str) -> Option<String> {
    // Out-of-range numbers (parseInt → a huge index) are simply missing.
    let n: usize = one_based.parse().ok()?;
    args.get(n.checked_sub(1)?).cloned()
}

fn leading_digits(s: &str) -> &str {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    &s[..end]
}

/// The replacement for the placeholder at the start of `tail` (which starts with `$`) and
/// how many bytes it spans; `None` when none starts there.
fn placeholder(tail: &str, args: &[String], all: &str) -> Option<(String, usize)> {
    let body = &tail[1..];
    if let Some(inner) = body.strip_prefix('{') {
        // ${N:-default} / ${@:-default} / ${ARGUMENTS:-default}
        let target = if inner.starts_with("ARGUMENTS") {
            "ARGUMENTS"
        } else if inner.starts_with('@') {
            "@"
        } else {
            leading_digits(inner)
        };
        if !target.is_empty()
            && let Some(after) = inner[target.len()..].strip_prefix(":-")
            && let Some(close) = after.find('}')
        {
            let default = &after[..close];
            let value = if target == "@" || target == "ARGUMENTS" {
                Some(all.to_owned())
            } else {
                arg_at(args, target)
            };
            let used = 1 + 1 + target.len() + 2 + close + 1;
            return Some((
                value
                    .filter(|v| !v.is_empty())
                    .unwrap_or_else(|| default.to_owned()),
                used,
            ));
        }
        // ${@:N} / ${@:N:L}
        if let Some(after) = inner.strip_prefix("@:") {
            let start = leading_digits(after);
            if !start.is_empty() {
                let after_start = &after[start.len()..];
                let (length, after_len) = match after_start.strip_prefix(':') {
                    Some(l) if !leading_digits(l).is_empty() => {
                        let d = leading_digits(l);
                        (Some(d), &l[d.len()..])
                    }
                    _ => (None, after_start),
                };
                if after_len.starts_with('}') {
                    let used =
                        1 + 1 + 2 + start.len() + length.map(|l| l.len() + 1).unwrap_or(0) + 1;
                    let from = start
                        .parse::<usize>()
                        .unwrap_or(usize::MAX)
                        .saturating_sub(1);
                    let from = from.min(args.len());
                    let to = match length {
                        Some(l) => from
                            .saturating_add(l.parse::<usize>().unwrap_or(usize::MAX))
                            .min(args.len()),
                        None => args.len(),
                    };
                    return Some((args[from..to].join(" "), used));
                }
            }
        }
        return None;
    }
    if body.starts_with("ARGUMENTS") {
        return Some((all.to_owned(), 1 + "ARGUMENTS".len()));
    }
    if body.starts_with('@') {
        return Some((all.to_owned(), 2));
    }
    let digits = leading_digits(body);
    if !digits.is_empty() {
        return Some((arg_at(args, digits).unwrap_or_default(), 1 + digits.len()));
    }
    None
}

/// pi's `expandPromptTemplate`: `text` of the form `/name` or `/name args` whose name is a
/// template's becomes that template with the arguments substituted; anything else is
/// returned as it is.
pub fn expand(text: &str, templates: &[PromptTemplate]) -> String {
    let Some(rest) = text.strip_prefix('/') else {
        return text.to_owned();
    };
    let name_end = rest.find(is_js_space).unwrap_or(rest.len());
    let name = &rest[..name_end];
    if name.is_empty() {
        return text.to_owned();
    }
    let args = rest[name_end..].trim_start_matches(is_js_space);
    match templates.iter().find(|t| t.name == name) {
        Some(t) => substitute_args(&t.content, &parse_command_args(args)),
        None => text.to_owned(),
    }
}

/// pi's `loadTemplateFromFile`.
pub(crate) fn load_file(path: &Path, diagnostics: &mut Vec<Diagnostic>) -> Option<PromptTemplate> {
    let raw = match super::read_text(path) {
        Ok(raw) => raw,
        Err(message) => {
            diagnostics.push(Diagnostic::warning(message, path));
            return None;
        }
    };
    let parsed = match frontmatter::parse(&raw) {
        Ok(p) => p,
        Err(e) => {
            diagnostics.push(Diagnostic::warning(e.to_string(), path));
            return None;
        }
    };
    let file_name = path.file_name()?.to_string_lossy();
    let name = file_name
        .strip_suffix(".md")
        .unwrap_or(&file_name)
        .to_owned();
    let mut description = parsed.string("description").unwrap_or("").to_owned();
    if description.is_empty()
        && let Some(first) = parsed.body.split('\n').find(|l| !l.trim().is_empty())
    {
        description = truncate_utf16(first, 60);
    }
    Some(PromptTemplate {
        name,
        description,
        argument_hint: parsed
            .string("argument-hint")
            .filter(|h| !h.is_empty())
            .map(str::to_owned),
        content: parsed.body,
        file_path: path.to_path_buf(),
        source_info: None,
    })
}

/// JavaScript's `s.slice(0, n)` (UTF-16 units) plus `...` when longer.
fn truncate_utf16(s: &str, n: usize) -> String {
    let mut units = 0;
    let mut out = String::new();
    for c in s.chars() {
        units += c.len_utf16();
        if units > n {
            out.push_str("...");
            return out;
        }
        out.push(c);
    }
    out
}

/// pi's `collectAutoPromptEntries`: the `.md` files directly in `dir` (symlinks followed,
/// dot files and `node_modules` skipped, `.gitignore`/`.ignore`/`.fdignore` of `dir`
/// respected), in directory order.
pub(crate) fn collect_entries(dir: &Path) -> Vec<PathBuf> {
    let mut ignore = super::ignore_rules::IgnoreRules::new(dir);
    ignore.add_dir(dir);
    let mut out = Vec::new();
    for entry in super::read_dir_sorted(dir) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if ignore.ignores(&path, false) {
            continue;
        }
        if meta.is_file() && name.ends_with(".md") {
            out.push(path);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn args_like_pi() {
        assert_eq!(
            parse_command_args("a \"b c\" 'd e' f"),
            s(&["a", "b c", "d e", "f"])
        );
        assert_eq!(parse_command_args("don't stop"), s(&["don't", "stop"]));
        assert_eq!(parse_command_args("\"say \\\"hi\\\"\""), s(&["say \"hi\""]));
        assert_eq!(parse_command_args("\"\" x"), s(&["", "x"]));
        assert_eq!(parse_command_args("\"open a b"), s(&["\"open", "a", "b"]));
        assert_eq!(parse_command_args("  "), Vec::<String>::new());
    }

    #[test]
    fn substitutions_like_pi() {
        let a = s(&["one", "two", "three"]);
        assert_eq!(substitute_args("$1-$2-$4", &a), "one-two-");
        assert_eq!(
            substitute_args("[$@] [$ARGUMENTS]", &a),
            "[one two three] [one two three]"
        );
        assert_eq!(substitute_args("${4:-d} ${1:-d}", &a), "d one");
        assert_eq!(
            substitute_args("${@:2} ${@:1:2} ${@:0:1}", &a),
            "two three one two one"
        );
        assert_eq!(substitute_args("${@:-none}", &[]), "none");
        assert_eq!(substitute_args("$ cost $x ${y}", &a), "$ cost $x ${y}");
        // Not substituted again.
        assert_eq!(substitute_args("$1", &s(&["$2", "b"])), "$2");
    }

    #[test]
    fn expands_known_names_only() {
        let t = PromptTemplate {
            name: "review".into(),
            description: String::new(),
            argument_hint: None,
            content: "Review $1 for ${2:-bugs}".into(),
            file_path: PathBuf::from("/x/review.md"),
            source_info: None,
        };
        let ts = [t];
        assert_eq!(expand("/review a.rs", &ts), "Review a.rs for bugs");
        assert_eq!(
            expand("/review\n\"a b\" style", &ts),
            "Review a b for style"
        );
        assert_eq!(expand("/other x", &ts), "/other x");
        assert_eq!(expand("review x", &ts), "review x");
    }
}
