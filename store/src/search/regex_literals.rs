//! What every match of a `re:` pattern holds, as texts to look its rows up by: the index
//! reads the rows holding them and checks only those against the regex.

use super::query::normalize;
use super::run::runs;

/// Texts of which every match of a regex holds at least one ([`normalize`]d).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Clause {
    texts: Vec<String>,
    /// The shortest run of a text worth looking up. A literal the pattern names is looked up
    /// from three characters; the start or end of a match that `regex_syntax` puts together
    /// from four: a shorter one (`buf+er\b` starts with `buf`) is in so many rows that
    /// reading them all costs more than checking rows newest first (agent-10k, `--limit
    /// 20`: 176 ms instead of 85).
    min_run: usize,
}

/// What every match of `pattern` (matched case-insensitively) holds: the literals the pattern
/// as written is a concatenation of (each a clause of its own), and the strings every match
/// starts with and those it ends with (`regex_syntax`'s prefix and suffix literals, when
/// there are finitely many: `build(Index|Tree)` starts with `buildindex` or `buildtree`).
/// None when the pattern does not parse as `regex_syntax` reads it.
pub(super) fn required_literals(pattern: &str) -> Vec<Clause> {
    use regex_syntax::hir::literal::{ExtractKind, Extractor};
    use regex_syntax::hir::{Hir, HirKind};
    let Ok(hir) = regex_syntax::Parser::new().parse(pattern) else {
        return Vec::new();
    };
    let text = |bytes: &[u8]| {
        std::str::from_utf8(bytes)
            .ok()
            .map(normalize)
            .filter(|t| !t.is_empty())
    };
    let lit = |h: &Hir| match h.kind() {
        HirKind::Literal(l) => text(&l.0),
        _ => None,
    };
    let mut clauses: Vec<Clause> = match hir.kind() {
        HirKind::Literal(_) => lit(&hir).into_iter().collect(),
        HirKind::Concat(parts) => parts.iter().filter_map(lit).collect(),
        HirKind::Capture(c) => lit(&c.sub).into_iter().collect(),
        _ => Vec::new(),
    }
    .into_iter()
    .map(|t| Clause {
        texts: vec![t],
        min_run: 3,
    })
    .collect();
    for kind in [ExtractKind::Prefix, ExtractKind::Suffix] {
        let seq = Extractor::new().kind(kind).extract(&hir);
        // An empty text (a match may start anywhere) or one cut inside a character says
        // nothing.
        let texts: Option<Vec<String>> = seq
            .literals()
            .filter(|l| !l.is_empty())
            .and_then(|l| l.iter().map(|l| text(l.as_bytes())).collect());
        clauses.extend(texts.map(|texts| Clause { texts, min_run: 4 }));
    }
    clauses
}

/// The pieces to look the `clauses` of [`required_literals`] up by: each text's longest clean
/// run of at least the clause's `min_run` characters (a text without one could be anywhere,
/// and so its clause says nothing). A clause is left out when another implies it (each piece
/// of the other holds one of its pieces, so the rows of the other are among its rows): it
/// would only cost.
pub(super) fn required_pieces(clauses: Vec<Clause>) -> Vec<Vec<String>> {
    let mut pieces: Vec<Vec<String>> = clauses
        .iter()
        .filter_map(|clause| {
            clause
                .texts
                .iter()
                .map(|text| {
                    runs(text)
                        .into_iter()
                        .filter(|r| r.clean && r.text.len() >= clause.min_run)
                        .max_by_key(|r| r.text.len())
                        .map(|r| r.text.to_owned())
                })
                .collect::<Option<Vec<String>>>()
        })
        .map(|mut p| {
            p.sort();
            p.dedup();
            p
        })
        .collect();
    pieces.sort();
    pieces.dedup();
    let implies =
        |by: &[String], c: &[String]| by.iter().all(|b| c.iter().any(|t| b.contains(t.as_str())));
    (0..pieces.len())
        .filter(|&i| {
            // Of two clauses implying each other (not equal: deduplicated), the first is kept.
            !(0..pieces.len()).any(|j| {
                j != i
                    && implies(&pieces[j], &pieces[i])
                    && (!implies(&pieces[i], &pieces[j]) || j < i)
            })
        })
        .map(|i| pieces[i].clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces `pattern` is looked up by, as text: one clause per line, its pieces
    /// joined by `|`.
    fn pieces(pattern: &str) -> Vec<String> {
        required_pieces(required_literals(pattern))
            .into_iter()
            .map(|c| c.join("|"))
            .collect()
    }

    #[test]
    fn a_regex_is_looked_up_by_what_every_match_holds() {
        // Alternatives every match starts with; `build` alone is implied by them.
        assert_eq!(pieces("build(Index|Tree)"), ["buildindex|buildtree"]);
        assert_eq!(pieces("TODO|FIXME"), ["fixme|todo"]);
        // `lock` is in every match: the alternatives' pieces (`check`, `lock`) add nothing.
        assert_eq!(pieces("(check|fix) the lock"), ["lock"]);
        assert_eq!(pieces(r"fn\s+main"), ["main"]);
        // Too short to narrow, or nothing every match holds.
        assert!(pieces(r"buf+er\b").is_empty());
        assert!(pieces("a+b?c*").is_empty());
        assert!(pieces("(").is_empty());
    }
}
