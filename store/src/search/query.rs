//! The session picker's query language (pi's `parseSearchQuery` in
//! `session-selector-search.js`, spec: lifecycle.md §8 "Session picker").
//!
//! A query is either `re:<pattern>` (a case-insensitive regex) or whitespace-separated tokens
//! where `"a quoted phrase"` must appear as is (case and runs of whitespace ignored) and every
//! other token is a bare word. Regexes are JavaScript's as far as Rust's engines go (see
//! [`SearchRegex`]); a pattern neither takes is [`Query::Invalid`], pi's "invalid regex"
//! state.

use regex::{Regex, RegexBuilder};

use pith_events::js::{is_js_whitespace, js_trim};

/// One token of a token query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A word matched loosely: in pi's in-memory matcher its characters in order anywhere
    /// (pi-tui `fuzzyMatch`); in the search index a word that starts with it.
    Fuzzy(String),
    /// A quoted phrase: a substring after lower-casing and collapsing whitespace.
    Phrase(String),
}

/// A parsed query (pi's `parseSearchQuery`).
#[derive(Debug, Clone)]
pub enum Query {
    /// Tokens that must all match; none ⇒ everything matches.
    Tokens(Vec<Token>),
    /// `re:<pattern>`, compiled case-insensitively.
    Regex(SearchRegex),
    /// `re:` with an empty or invalid pattern: nothing matches. Holds the reason.
    Invalid(String),
}

/// Parses `query` (pi's `parseSearchQuery`): `re:` prefix ⇒ regex; otherwise tokens, where a
/// quote starts and ends a phrase; unbalanced quotes ⇒ plain whitespace tokens (quotes kept).
pub fn parse_query(query: &str) -> Query {
    // JavaScript's whitespace throughout (`trim()`, `/\s/`), not Rust's: U+0085 is not
    // one, U+FEFF is.
    let trimmed = js_trim(query);
    if trimmed.is_empty() {
        return Query::Tokens(Vec::new());
    }
    if let Some(pattern) = trimmed.strip_prefix("re:") {
        let pattern = js_trim(pattern);
        if pattern.is_empty() {
            return Query::Invalid("Empty regex".into());
        }
        return match SearchRegex::new(pattern) {
            Ok(re) => Query::Regex(re),
            Err(e) => Query::Invalid(e),
        };
    }
    let mut tokens = Vec::new();
    let mut buf = String::new();
    let mut in_quote = false;
    let flush = |buf: &mut String, tokens: &mut Vec<Token>, phrase: bool| {
        let v = js_trim(buf).to_owned();
        buf.clear();
        if !v.is_empty() {
            tokens.push(if phrase {
                Token::Phrase(v)
            } else {
                Token::Fuzzy(v)
            });
        }
    };
    for ch in trimmed.chars() {
        if ch == '"' {
            flush(&mut buf, &mut tokens, in_quote);
            in_quote = !in_quote;
            continue;
        }
        if !in_quote && is_js_whitespace(ch) {
            flush(&mut buf, &mut tokens, false);
            continue;
        }
        buf.push(ch);
    }
    if in_quote {
        return Query::Tokens(
            trimmed
                .split(is_js_whitespace)
                .filter(|t| !t.is_empty())
                .map(|t| Token::Fuzzy(t.to_owned()))
                .collect(),
        );
    }
    flush(&mut buf, &mut tokens, false);
    Query::Tokens(tokens)
}

/// A `re:` query's regex, matching as pi's JavaScript `new RegExp(pattern, "i")` does:
/// Rust's `regex` where it can hold the pattern, else `fancy-regex` for look-around and
/// back-references (which JavaScript has); `\w`, `\d` and `\b` are ASCII as without the
/// `u` flag.
#[derive(Debug, Clone)]
pub struct SearchRegex {
    pattern: String,
    engine: Engine,
}

#[derive(Debug, Clone)]
enum Engine {
    Plain(Regex),
    Fancy(fancy_regex::Regex),
}

/// JavaScript's ASCII `\b` and `\B` for `fancy-regex`, which cannot turn Unicode off.
const FANCY_BOUNDARY: &str =
    "(?:(?<=[0-9A-Za-z_])(?![0-9A-Za-z_])|(?<![0-9A-Za-z_])(?=[0-9A-Za-z_]))";
const FANCY_NOT_BOUNDARY: &str =
    "(?:(?<=[0-9A-Za-z_])(?=[0-9A-Za-z_])|(?<![0-9A-Za-z_])(?![0-9A-Za-z_]))";

impl SearchRegex {
    /// Compiles `pattern` case-insensitively. Errors: why no engine takes it.
    pub fn new(pattern: &str) -> Result<SearchRegex, String> {
        let plain = RegexBuilder::new(&js_classes(pattern, "(?-u:\\b)", "(?-u:\\B)"))
            .case_insensitive(true)
            .build();
        let engine = match plain {
            Ok(re) => Engine::Plain(re),
            Err(plain_error) => {
                let fancy = js_classes(pattern, FANCY_BOUNDARY, FANCY_NOT_BOUNDARY);
                match fancy_regex::RegexBuilder::new(&fancy)
                    .case_insensitive(true)
                    .build()
                {
                    Ok(re) => Engine::Fancy(re),
                    Err(_) => return Err(plain_error.to_string()),
                }
            }
        };
        Ok(SearchRegex {
            pattern: pattern.to_owned(),
            engine,
        })
    }

    /// A regex of Rust's `regex` as it is (a snippet's mark).
    pub fn plain(re: Regex) -> SearchRegex {
        SearchRegex {
            pattern: re.as_str().to_owned(),
            engine: Engine::Plain(re),
        }
    }

    /// The pattern as typed.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether `text` holds a match (a pattern that backtracks past `fancy-regex`'s limit
    /// matches nothing).
    pub fn is_match(&self, text: &str) -> bool {
        self.find_start(text).is_some()
    }

    /// The byte offset of the first match in `text`.
    pub fn find_start(&self, text: &str) -> Option<usize> {
        match &self.engine {
            Engine::Plain(re) => re.find(text).map(|m| m.start()),
            Engine::Fancy(re) => re.find(text).ok().flatten().map(|m| m.start()),
        }
    }
}

/// `pattern` with JavaScript's meaning of `\w`, `\W`, `\d`, `\D`, and `\b`, `\B` written
/// as `boundary` and `not_boundary`: pi builds its regexes without the `u` flag, where these
/// are ASCII-only, while they are Unicode-aware in Rust's engines. (Inside a character class
/// `\W` and `\D` stay Unicode-aware.)
fn js_classes(pattern: &str, boundary: &str, not_boundary: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push(c);
                    break;
                };
                let ascii = match (n, in_class) {
                    ('w', false) => Some("[0-9A-Za-z_]"),
                    ('W', false) => Some("[^0-9A-Za-z_]"),
                    ('d', false) => Some("[0-9]"),
                    ('D', false) => Some("[^0-9]"),
                    ('w', true) => Some("0-9A-Za-z_"),
                    ('d', true) => Some("0-9"),
                    ('b', false) => Some(boundary),
                    ('B', false) => Some(not_boundary),
                    _ => None,
                };
                match ascii {
                    Some(a) => out.push_str(a),
                    None => {
                        out.push(c);
                        out.push(n);
                    }
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// pi's phrase normalisation: `toLowerCase()`, then every run of JavaScript whitespace (`\s+`)
/// becomes one space and the ends are trimmed. Phrases match when the normalised phrase is a
/// substring of the normalised text.
pub fn normalize(text: &str) -> String {
    let lower = text.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    for word in lower.split(is_js_whitespace).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Whether `text` contains the phrase `phrase` as pi's picker compares them (both
/// [`normalize`]d). An empty phrase is contained everywhere.
pub fn contains_phrase(text: &str, phrase: &str) -> bool {
    normalize(text).contains(&normalize(phrase))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_fuzzy_words_and_regexes() {
        let Query::Tokens(t) = parse_query(r#"foo "Bar  baz" qux"#) else {
            panic!("tokens")
        };
        assert_eq!(
            t,
            [
                Token::Fuzzy("foo".into()),
                Token::Phrase("Bar  baz".into()),
                Token::Fuzzy("qux".into())
            ]
        );
        let Query::Tokens(t) = parse_query(r#"a "b c"#) else {
            panic!("tokens")
        };
        assert_eq!(
            t,
            [
                Token::Fuzzy("a".into()),
                Token::Fuzzy("\"b".into()),
                Token::Fuzzy("c".into())
            ]
        );
        assert!(matches!(parse_query("re:a+b"), Query::Regex(_)));
        assert!(matches!(parse_query("re:("), Query::Invalid(_)));
        assert!(matches!(parse_query("re:  "), Query::Invalid(_)));
        // JavaScript's ASCII `\w`, `\d` and `\b` (pi's regexes have no `u` flag).
        let Query::Regex(re) = parse_query(r"re:lock\s+\w+") else {
            panic!("regex")
        };
        assert!(re.is_match("LOCK  it") && !re.is_match("lock 日本"));
        let Query::Regex(re) = parse_query(r"re:\bcafé\b|[\d]x\D") else {
            panic!("regex")
        };
        // As node says: `é` is no word character there, so no boundary follows it.
        assert!(!re.is_match("a café.") && re.is_match("1xy") && !re.is_match("١xy"));
        assert_eq!(
            js_classes(r"a\\w[\w\]]\.\b", "B", "N"),
            r"a\\w[0-9A-Za-z_\]]\.B"
        );
        // Look-around and back-references, as JavaScript has them.
        let Query::Regex(re) = parse_query(r"re:buffer(?!ing)\b") else {
            panic!("regex")
        };
        // `日` is no word character in JavaScript, so a boundary follows `buffer` there.
        assert!(re.is_match("a BUFFER.") && !re.is_match("buffering") && re.is_match("buffer日"));
        assert_eq!(re.find_start("buffering, buffer"), Some(11));
        let Query::Regex(re) = parse_query(r"re:(ab)\1") else {
            panic!("regex")
        };
        assert!(re.is_match("xABab") && !re.is_match("abba"));
        assert!(matches!(parse_query("re:(?<=a"), Query::Invalid(_)));
    }

    #[test]
    fn normalisation_is_pis() {
        assert_eq!(normalize("  Hello\u{a0}\n\tWORLD  x "), "hello world x");
        assert!(contains_phrase("say HELLO\n   world!", "hello world"));
        assert!(!contains_phrase("hello-world", "hello world"));
    }

    #[test]
    fn whitespace_is_javascript_s() {
        // U+0085 is no JavaScript whitespace: it stays in the phrase; U+FEFF is one.
        let Query::Tokens(t) = parse_query("\"\u{85}lexer\"") else {
            panic!("tokens")
        };
        assert_eq!(t, [Token::Phrase("\u{85}lexer".into())]);
        let Query::Tokens(t) = parse_query("\u{feff}lexer\u{feff}parser") else {
            panic!("tokens")
        };
        assert_eq!(
            t,
            [Token::Fuzzy("lexer".into()), Token::Fuzzy("parser".into())]
        );
    }
}
