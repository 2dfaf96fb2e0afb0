//! pi's `utils/frontmatter.js`: a markdown file may open with a `---` block of YAML.
//!
//! pi parses that block with the `yaml` package; pith reads the subset skills and prompt
//! templates use: a flat map of `key: value` lines whose values are plain, single- or
//! double-quoted scalars, `|`/`>` block scalars, or plain scalars continued on indented lines.
//! A line that is none of these is an error, as a YAML syntax error is in pi (the message is
//! pith's own, naming the line).

use std::collections::BTreeMap;

/// One frontmatter value, as far as pi's loaders look at it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string scalar.
    Str(String),
    /// `true` / `false`.
    Bool(bool),
    /// A number, null, or anything else that is not a string (pi ignores those).
    Other,
}

/// A parsed file: its frontmatter keys and the body after the block.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parsed {
    /// Top-level keys.
    pub frontmatter: BTreeMap<String, Value>,
    /// The text after the closing `---`, trimmed; the whole (newline-normalized) text when
    /// there is no frontmatter.
    pub body: String,
}

impl Parsed {
    /// The string value of `key`, if it is a string.
    pub fn string(&self, key: &str) -> Option<&str> {
        match self.frontmatter.get(key) {
            Some(Value::Str(s)) => Some(s),
            Some(Value::Bool(_) | Value::Other) | None => None,
        }
    }
}

/// A frontmatter block that is not YAML pith can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("frontmatter line {line}: {message}")]
pub struct FrontmatterError {
    /// 1-based line within the frontmatter block.
    pub line: usize,
    /// What was expected.
    pub message: String,
}

/// pi's `parseFrontmatter`: newlines normalized, a BOM dropped; a block opens with `---` at
/// the very start and ends at the next line starting with `---`.
///
/// Errors: a block that is not a flat YAML map (see the module doc).
pub fn parse(content: &str) -> Result<Parsed, FrontmatterError> {
    let content = content.strip_prefix('\u{feff}').unwrap_or(content);
    let normalized = content.replace("\r\n", "\n").replace('\r', "\n");
    if !normalized.starts_with("---") {
        return Ok(Parsed {
            frontmatter: BTreeMap::new(),
            body: normalized,
        });
    }
    let Some(end) = normalized[3..].find("\n---").map(|i| i + 3) else {
        return Ok(Parsed {
            frontmatter: BTreeMap::new(),
            body: normalized,
        });
    };
    let yaml = normalized.get(4..end).unwrap_or("");
    let body = normalized[end + 4..].trim().to_owned();
    Ok(Parsed {
        frontmatter: parse_map(yaml)?,
        body,
    })
}

/// pi's `stripFrontmatter`: the body only.
///
/// Errors: as [`parse`].
pub fn strip(content: &str) -> Result<String, FrontmatterError> {
    parse(content).map(|p| p.body)
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn parse_map(yaml: &str) -> Result<BTreeMap<String, Value>, FrontmatterError> {
    let lines: Vec<&str> = yaml.split('\n').collect();
    let mut map = BTreeMap::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed == "---" {
            i += 1;
            continue;
        }
        let line_no = i + 1;
        let error = |message: &str| FrontmatterError {
            line: line_no,
            message: message.to_owned(),
        };
        if indent_of(line) > 0 {
            return Err(error("unexpected indentation"));
        }
        let Some(colon) = find_key_colon(line) else {
            return Err(error("expected `key: value`"));
        };
        let key = unquote_key(line[..colon].trim());
        let rest = line[colon + 1..].trim();
        i += 1;
        // Continuation lines: indented (or blank) lines after the key, and a block sequence
        // (`- item` lines) at the key's own indentation.
        let start = i;
        while i < lines.len()
            && (lines[i].trim().is_empty()
                || indent_of(lines[i]) > 0
                || (rest.is_empty() && is_sequence_item(lines[i])))
        {
            i += 1;
        }
        let mut more: Vec<&str> = lines[start..i].to_vec();
        while more.last().is_some_and(|l| l.trim().is_empty()) {
            more.pop();
        }
        if map.contains_key(&key) {
            return Err(error("Map keys must be unique"));
        }
        let value = scalar(rest, &more).map_err(|m| error(&m))?;
        map.insert(key, value);
    }
    Ok(map)
}

/// The colon ending a key: the first `: ` or a line-final `:` outside quotes.
fn find_key_colon(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut quote: Option<u8> = None;
    for (i, &b) in bytes.iter().enumerate() {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if (b == b'"' || b == b'\'') && i == 0 => quote = Some(b),
            None if b == b':' && (i + 1 == bytes.len() || bytes[i + 1] == b' ') => {
                return (i > 0).then_some(i);
            }
            None => {}
        }
    }
    None
}

fn unquote_key(key: &str) -> String {
    if key.len() >= 2
        && ((key.starts_with('"') && key.ends_with('"'))
            || (key.starts_with('\'') && key.ends_with('\'')))
    {
        key[1..key.len() - 1].to_owned()
    } else {
        key.to_owned()
    }
}

fn is_sequence_item(line: &str) -> bool {
    let t = line.trim_start();
    t == "-" || t.starts_with("- ")
}

fn scalar(first: &str, more: &[&str]) -> Result<Value, String> {
    if first.starts_with('|') || first.starts_with('>') {
        return Ok(Value::Str(block_scalar(first, more)));
    }
    if first.starts_with('"') || first.starts_with('\'') {
        let joined = fold_lines(first, more);
        return quoted(&joined).map(Value::Str);
    }
    if first.is_empty() || first.starts_with('#') {
        // A nested block (a map or a list) or nothing: not a string.
        return Ok(Value::Other);
    }
    if first == "-" || first.starts_with("- ") {
        return Err("Unexpected block-seq-ind on same line with key".to_owned());
    }
    if let Some(c) = first.chars().next().filter(|c| matches!(c, '@' | '`')) {
        return Err(format!(
            "Plain value cannot start with reserved character {c}"
        ));
    }
    if first.starts_with('[') || first.starts_with('{') {
        // Flow collections: not strings.
        return Ok(Value::Other);
    }
    let text = strip_comment(&fold_lines(first, more)).to_owned();
    if text.contains(": ") || text.ends_with(':') {
        return Err("Nested mappings are not allowed in compact mappings".to_owned());
    }
    Ok(match text.as_str() {
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        "" | "~" | "null" | "Null" | "NULL" => Value::Other,
        t if is_number(t) => Value::Other,
        _ => Value::Str(text),
    })
}

fn is_number(t: &str) -> bool {
    let t = t.strip_prefix(['-', '+']).unwrap_or(t);
    !t.is_empty()
        && (t.parse::<f64>().is_ok()
            && t.chars()
                .all(|c| c.is_ascii_digit() || "._eE+-".contains(c))
            || t == ".inf"
            || t == ".nan"
            || t.starts_with("0x") && t.len() > 2 && t[2..].chars().all(|c| c.is_ascii_hexdigit()))
}

/// Plain and quoted multi-line scalars fold their lines with single spaces (blank lines
/// become newlines).
fn fold_lines(first: &str, more: &[&str]) -> String {
    let mut out = first.to_owned();
    let mut pending_newlines = 0;
    for line in more {
        let t = line.trim();
        if t.is_empty() {
            pending_newlines += 1;
            continue;
        }
        if pending_newlines > 0 {
            out.push_str(&"\n".repeat(pending_newlines));
            pending_newlines = 0;
        } else if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(t);
    }
    out
}

fn strip_comment(text: &str) -> &str {
    match text.find(" #") {
        Some(i) => text[..i].trim_end(),
        None => text,
    }
}

fn quoted(text: &str) -> Result<String, String> {
    let mut chars = text.chars();
    let Some(q) = chars.next() else {
        return Err("empty value".to_owned());
    };
    let mut out = String::new();
    let mut closed_at = None;
    let rest: Vec<char> = chars.collect();
    let mut i = 0;
    while i < rest.len() {
        let c = rest[i];
        if q == '\'' {
            if c == '\'' {
                if rest.get(i + 1) == Some(&'\'') {
                    out.push('\'');
                    i += 2;
                    continue;
                }
                closed_at = Some(i);
                break;
            }
            out.push(c);
        } else if c == '\\' {
            let Some(&e) = rest.get(i + 1) else {
                return Err("unterminated escape".to_owned());
            };
            let hex_len = match e {
                'x' => 2,
                'u' => 4,
                'U' => 8,
                _ => 0,
            };
            if hex_len > 0 {
                let digits: String = rest.iter().skip(i + 2).take(hex_len).collect();
                let code = (digits.len() == hex_len)
                    .then(|| u32::from_str_radix(&digits, 16).ok())
                    .flatten()
                    .and_then(char::from_u32)
                    .ok_or_else(|| format!("Invalid escape sequence \\{e}{digits}"))?;
                out.push(code);
                i += 2 + hex_len;
                continue;
            }
            out.push(match e {
                'n' => '\n',
                't' | '\t' => '\t',
                'r' => '\r',
                '0' => '\0',
                'a' => '\u{7}',
                'b' => '\u{8}',
                'e' => '\u{1b}',
                'f' => '\u{c}',
                'v' => '\u{b}',
                'N' => '\u{85}',
                '_' => '\u{a0}',
                'L' => '\u{2028}',
                'P' => '\u{2029}',
                '"' => '"',
                '\\' => '\\',
                '/' => '/',
                ' ' => ' ',
                other => return Err(format!("Invalid escape sequence \\{other}")),
            });
            i += 2;
            continue;
        } else if c == '"' {
            closed_at = Some(i);
            break;
        } else {
            out.push(c);
        }
        i += 1;
    }
    let Some(end) = closed_at else {
        return Err("Missing closing quote".to_owned());
    };
    let after: String = rest[end + 1..].iter().collect();
    let after = after.trim();
    if !after.is_empty() && !after.starts_with('#') {
        return Err("Unexpected scalar at node end".to_owned());
    }
    Ok(out)
}

/// `|` keeps newlines, `>` folds them; `-` strips the final newline, `+` keeps all.
fn block_scalar(header: &str, more: &[&str]) -> String {
    let literal = header.starts_with('|');
    let chomp = if header.contains('-') {
        '-'
    } else if header.contains('+') {
        '+'
    } else {
        ' '
    };
    let indent = more
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| indent_of(l))
        .min()
        .unwrap_or(0);
    let lines: Vec<&str> = more
        .iter()
        .map(|l| if l.len() >= indent { &l[indent..] } else { "" })
        .collect();
    let mut out = String::new();
    if literal {
        out = lines.join("\n");
    } else {
        let mut prev_blank = true;
        for line in &lines {
            if line.is_empty() {
                out.push('\n');
                prev_blank = true;
            } else {
                if !prev_blank {
                    out.push(' ');
                }
                out.push_str(line);
                prev_blank = false;
            }
        }
    }
    match chomp {
        '-' => out,
        _ if out.is_empty() => out,
        _ => out + "\n",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_keys_and_body() {
        let p = parse("---\nname: my-skill\ndescription: \"Does \\\"x\\\"\"\ndisable-model-invocation: true\n---\n\n# Body\n").unwrap();
        assert_eq!(p.string("name"), Some("my-skill"));
        assert_eq!(p.string("description"), Some("Does \"x\""));
        assert_eq!(
            p.frontmatter.get("disable-model-invocation"),
            Some(&Value::Bool(true))
        );
        assert_eq!(p.body, "# Body");
    }

    #[test]
    fn no_block_keeps_the_text() {
        let p = parse("hello\r\nworld\n").unwrap();
        assert!(p.frontmatter.is_empty());
        assert_eq!(p.body, "hello\nworld\n");
    }

    #[test]
    fn multi_line_values() {
        let p = parse(
            "---\ndescription: >\n  one\n  two\nother: plain\n  continued\nq: 'it''s'\n---\nb",
        )
        .unwrap();
        assert_eq!(p.string("description"), Some("one two\n"));
        assert_eq!(p.string("other"), Some("plain continued"));
        assert_eq!(p.string("q"), Some("it's"));
        assert_eq!(p.body, "b");
    }

    /// What pi's `yaml` package (2.x, in pi 1.6.0) makes of each, checked with it.
    #[test]
    fn accepts_and_refuses_what_pi_s_yaml_does() {
        let desc = |y: &str| {
            parse(&format!("---\n{y}\n---\nb")).map(|p| p.string("description").map(str::to_owned))
        };
        let err = |y: &str| desc(y).unwrap_err().message;
        assert_eq!(
            err("description: Use this when: the user asks"),
            "Nested mappings are not allowed in compact mappings"
        );
        assert_eq!(
            desc("tags:\n- a\n- b\ndescription: x"),
            Ok(Some("x".into()))
        );
        assert_eq!(desc("description: a # c"), Ok(Some("a".into())));
        assert_eq!(err("description: 'x' y"), "Unexpected scalar at node end");
        assert_eq!(
            err("name: x\n  bad: 1"),
            "Nested mappings are not allowed in compact mappings"
        );
        assert_eq!(
            desc("description: >-\n  one\n  two\n"),
            Ok(Some("one two".into()))
        );
        assert_eq!(err("d: \"a\\qb\""), "Invalid escape sequence \\q");
        assert_eq!(desc("description: it's fine"), Ok(Some("it's fine".into())));
        assert_eq!(
            err("description: ok\ndescription: dup"),
            "Map keys must be unique"
        );
        assert_eq!(
            err("description: - x"),
            "Unexpected block-seq-ind on same line with key"
        );
        assert_eq!(
            err("description: @x"),
            "Plain value cannot start with reserved character @"
        );
        assert_eq!(desc("description: 'a\n  b'"), Ok(Some("a b".into())));
        assert_eq!(desc("description: #x"), Ok(None));
        assert_eq!(
            desc("description: \"caf\\u00e9 \\x41\""),
            Ok(Some("café A".into()))
        );
        assert_eq!(
            desc("metadata:\n  author: me\ndescription: y"),
            Ok(Some("y".into()))
        );
    }

    #[test]
    fn numbers_are_not_strings_and_bad_lines_fail() {
        let p = parse("---\ndescription: 42\n---\n").unwrap();
        assert_eq!(p.string("description"), None);
        assert!(parse("---\njust text\n---\n").is_err());
        assert!(parse("---\nd: \"open\n---\n").is_err());
    }
}
