//! The `edit` tool's matching and diff, ported from pi's `core/tools/edit-diff.js`: exact
//! matching with a fuzzy fallback (NFKC, trailing whitespace, smart quotes, dashes, special
//! spaces), all edits matched against the original, and pi's numbered diff.

use crate::tool::ToolError;
use pith_events::js::is_js_whitespace;
use unicode_normalization::UnicodeNormalization;

use super::line_diff::{Kind, diff_lines};

/// One replacement: `old_text` (must be unique) becomes `new_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// The text to find.
    pub old_text: String,
    /// Its replacement.
    pub new_text: String,
}

/// pi's `detectLineEnding`: `\r\n` when the first line break is one, else `\n`.
pub fn detect_line_ending(content: &str) -> &'static str {
    match (content.find("\r\n"), content.find('\n')) {
        (Some(crlf), Some(lf)) if crlf < lf => "\r\n",
        _ => "\n",
    }
}

/// pi's `normalizeToLF`: `\r\n` and lone `\r` become `\n`.
pub fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// pi's `restoreLineEndings`.
pub fn restore_line_endings(text: &str, ending: &str) -> String {
    if ending == "\r\n" {
        text.replace('\n', "\r\n")
    } else {
        text.to_owned()
    }
}

/// pi's `normalizeForFuzzyMatch`.
pub fn normalize_for_fuzzy_match(text: &str) -> String {
    let nfkc: String = text.nfkc().collect();
    let trimmed: Vec<&str> = nfkc
        .split('\n')
        .map(|l| l.trim_end_matches(is_js_whitespace))
        .collect();
    trimmed
        .join("\n")
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            c => c,
        })
        .collect()
}

/// Where `old` is in `content`: exact first, then in fuzzy-normalized space.
struct Found {
    index: usize,
    len: usize,
    fuzzy: bool,
}

fn fuzzy_find(content: &str, old: &str) -> Option<Found> {
    if let Some(index) = content.find(old) {
        return Some(Found {
            index,
            len: old.len(),
            fuzzy: false,
        });
    }
    let fuzzy_old = normalize_for_fuzzy_match(old);
    normalize_for_fuzzy_match(content)
        .find(&fuzzy_old)
        .map(|index| Found {
            index,
            len: fuzzy_old.len(),
            fuzzy: true,
        })
}

/// pi counts occurrences in fuzzy space even for exact matches (`split(…).length - 1`).
/// An old text that normalizes to nothing (only whitespace) splits the content into UTF-16
/// units, so JavaScript counts one less than there are units (-1 for empty content).
fn count_occurrences(content: &str, old: &str) -> i64 {
    let fuzzy_old = normalize_for_fuzzy_match(old);
    let fuzzy_content = normalize_for_fuzzy_match(content);
    if fuzzy_old.is_empty() {
        return fuzzy_content.encode_utf16().count() as i64 - 1;
    }
    fuzzy_content.matches(&fuzzy_old).count() as i64
}

/// pi's `applyEditsToNormalizedContent`: every edit is matched against the same (LF) content,
/// must be non-empty, found, unique and not overlap another; if any edit needs fuzzy matching
/// the whole operation runs on the fuzzy-normalized content. Returns `(base, new)`: the
/// content the edits were applied to and the result. Errors are pi's texts naming `path` as
/// the model gave it.
pub fn apply_edits(
    content: &str,
    edits: &[Edit],
    path: &str,
) -> Result<(String, String), ToolError> {
    let edits: Vec<Edit> = edits
        .iter()
        .map(|e| Edit {
            old_text: normalize_to_lf(&e.old_text),
            new_text: normalize_to_lf(&e.new_text),
        })
        .collect();
    let single = edits.len() == 1;
    for (i, e) in edits.iter().enumerate() {
        if e.old_text.is_empty() {
            return Err(ToolError::Failed(if single {
                format!("oldText must not be empty in {path}.")
            } else {
                format!("edits[{i}].oldText must not be empty in {path}.")
            }));
        }
    }
    let any_fuzzy = edits
        .iter()
        .any(|e| fuzzy_find(content, &e.old_text).is_some_and(|f| f.fuzzy));
    let base = if any_fuzzy {
        normalize_for_fuzzy_match(content)
    } else {
        content.to_owned()
    };
    let mut matched: Vec<(usize, usize, usize)> = Vec::with_capacity(edits.len());
    for (i, e) in edits.iter().enumerate() {
        let Some(found) = fuzzy_find(&base, &e.old_text) else {
            return Err(ToolError::Failed(if single {
                format!(
                    "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
                )
            } else {
                format!(
                    "Could not find edits[{i}] in {path}. The oldText must match exactly including all whitespace and newlines."
                )
            }));
        };
        let occurrences = count_occurrences(&base, &e.old_text);
        if occurrences > 1 {
            return Err(ToolError::Failed(if single {
                format!(
                    "Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
                )
            } else {
                format!(
                    "Found {occurrences} occurrences of edits[{i}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
                )
            }));
        }
        matched.push((i, found.index, found.len));
    }
    matched.sort_by_key(|m| m.1);
    for pair in matched.windows(2) {
        let (prev, cur) = (pair[0], pair[1]);
        if prev.1 + prev.2 > cur.1 {
            return Err(ToolError::Failed(format!(
                "edits[{}] and edits[{}] overlap in {path}. Merge them into one edit or target disjoint regions.",
                prev.0, cur.0
            )));
        }
    }
    let mut new = base.clone();
    for &(i, index, len) in matched.iter().rev() {
        // A fuzzy match's bounds lie in `base`, which is the fuzzy content then.
        if new.is_char_boundary(index) && new.is_char_boundary(index + len) {
            new.replace_range(index..index + len, &edits[i].new_text);
        }
    }
    if base == new {
        return Err(ToolError::Failed(if single {
            format!(
                "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
            )
        } else {
            format!("No changes made to {path}. The replacements produced identical content.")
        }));
    }
    Ok((base, new))
}

/// pi 1.6.0's `details.patch` of an edit: jsdiff 8's `structuredPatch` then `formatPatch`
/// with file headers only — `--- path`, `+++ path`, then `@@ -a,b +c,d @@` hunks with
/// `context` unchanged lines around each change (runs of up to twice that join two changes
/// into one hunk), `\ No newline at end of file` after a last line without one. The text
/// ends with a newline.
pub fn unified_patch(path: &str, old: &str, new: &str, context: usize) -> String {
    let mut parts: Vec<(Kind, Vec<&str>)> = diff_lines(old, new)
        .into_iter()
        .map(|p| (p.kind, p.lines))
        .collect();
    // jsdiff appends an empty part "to make cleanup easier".
    parts.push((Kind::Equal, Vec::new()));
    struct Hunk {
        old_start: usize,
        old_lines: usize,
        new_start: usize,
        new_lines: usize,
        lines: Vec<String>,
    }
    let mut hunks: Vec<Hunk> = Vec::new();
    let (mut old_range_start, mut new_range_start) = (0usize, 0usize);
    let mut range: Vec<String> = Vec::new();
    let (mut old_line, mut new_line) = (1usize, 1usize);
    for i in 0..parts.len() {
        let (kind, lines) = (&parts[i].0, &parts[i].1);
        if *kind != Kind::Equal {
            if old_range_start == 0 {
                old_range_start = old_line;
                new_range_start = new_line;
                if i > 0 {
                    let prev = &parts[i - 1].1;
                    range = prev[prev.len().saturating_sub(context)..]
                        .iter()
                        .map(|l| format!(" {l}"))
                        .collect();
                    old_range_start -= range.len();
                    new_range_start -= range.len();
                }
            }
            let sign = if *kind == Kind::Added { '+' } else { '-' };
            range.extend(lines.iter().map(|l| format!("{sign}{l}")));
            if *kind == Kind::Added {
                new_line += lines.len();
            } else {
                old_line += lines.len();
            }
        } else {
            if old_range_start != 0 {
                if lines.len() <= context * 2 && i + 2 < parts.len() {
                    range.extend(lines.iter().map(|l| format!(" {l}")));
                } else {
                    let size = lines.len().min(context);
                    range.extend(lines[..size].iter().map(|l| format!(" {l}")));
                    hunks.push(Hunk {
                        old_start: old_range_start,
                        old_lines: old_line - old_range_start + size,
                        new_start: new_range_start,
                        new_lines: new_line - new_range_start + size,
                        lines: std::mem::take(&mut range),
                    });
                    old_range_start = 0;
                    new_range_start = 0;
                }
            }
            old_line += lines.len();
            new_line += lines.len();
        }
    }
    let mut out = format!("--- {path}\n+++ {path}");
    for hunk in hunks {
        // formatPatch: an empty side starts at the line before.
        let old_start = hunk.old_start - usize::from(hunk.old_lines == 0);
        let new_start = hunk.new_start - usize::from(hunk.new_lines == 0);
        out.push_str(&format!(
            "\n@@ -{old_start},{} +{new_start},{} @@",
            hunk.old_lines, hunk.new_lines
        ));
        for line in hunk.lines {
            match line.strip_suffix('\n') {
                Some(l) => {
                    out.push('\n');
                    out.push_str(l);
                }
                None => {
                    out.push('\n');
                    out.push_str(&line);
                    out.push_str("\n\\ No newline at end of file");
                }
            }
        }
    }
    out.push('\n');
    out
}

/// pi's `generateDiffString`: changed lines as `+N text` / `-N text` (numbers right-aligned
/// to the widest line number), up to `context` unchanged lines around each change as
/// ` N text`, and ` … ...` where unchanged lines are skipped. Returns the diff and the first
/// changed line number in the new text.
/// Lines are aligned by jsdiff's `diffLines`, as pi does ([`super::line_diff`]).
pub fn diff_string(old: &str, new: &str, context: usize) -> (String, Option<usize>) {
    let parts: Vec<(Kind, Vec<&str>)> = diff_lines(old, new)
        .into_iter()
        .map(|p| {
            (
                p.kind,
                p.lines
                    .iter()
                    .map(|l| l.strip_suffix('\n').unwrap_or(l))
                    .collect(),
            )
        })
        .collect();
    let width = old
        .split('\n')
        .count()
        .max(new.split('\n').count())
        .to_string()
        .len();
    let num = |n: usize| format!("{n:>width$}");
    let gap = format!(" {} ...", " ".repeat(width));
    let mut out: Vec<String> = Vec::new();
    let (mut old_n, mut new_n) = (1usize, 1usize);
    let mut last_was_change = false;
    let mut first_changed = None;
    for (i, (tag, lines)) in parts.iter().enumerate() {
        match tag {
            Kind::Added | Kind::Removed => {
                first_changed.get_or_insert(new_n);
                for line in lines {
                    if *tag == Kind::Added {
                        out.push(format!("+{} {line}", num(new_n)));
                        new_n += 1;
                    } else {
                        out.push(format!("-{} {line}", num(old_n)));
                        old_n += 1;
                    }
                }
                last_was_change = true;
            }
            Kind::Equal => {
                let next_is_change = parts.get(i + 1).is_some_and(|(t, _)| *t != Kind::Equal);
                let show =
                    |line: &str, out: &mut Vec<String>, old_n: &mut usize, new_n: &mut usize| {
                        out.push(format!(" {} {line}", num(*old_n)));
                        *old_n += 1;
                        *new_n += 1;
                    };
                let n = lines.len();
                if last_was_change && next_is_change {
                    if n <= context * 2 {
                        for line in lines {
                            show(line, &mut out, &mut old_n, &mut new_n);
                        }
                    } else {
                        for line in &lines[..context] {
                            show(line, &mut out, &mut old_n, &mut new_n);
                        }
                        out.push(gap.clone());
                        let skipped = n - 2 * context;
                        old_n += skipped;
                        new_n += skipped;
                        for line in &lines[n - context..] {
                            show(line, &mut out, &mut old_n, &mut new_n);
                        }
                    }
                } else if last_was_change {
                    let shown = n.min(context);
                    for line in &lines[..shown] {
                        show(line, &mut out, &mut old_n, &mut new_n);
                    }
                    if n > shown {
                        out.push(gap.clone());
                        old_n += n - shown;
                        new_n += n - shown;
                    }
                } else if next_is_change {
                    let skipped = n.saturating_sub(context);
                    if skipped > 0 {
                        out.push(gap.clone());
                        old_n += skipped;
                        new_n += skipped;
                    }
                    for line in &lines[skipped..] {
                        show(line, &mut out, &mut old_n, &mut new_n);
                    }
                } else {
                    old_n += n;
                    new_n += n;
                }
                last_was_change = false;
            }
        }
    }
    (out.join("\n"), first_changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzy_normalization() {
        assert_eq!(
            normalize_for_fuzzy_match("a \u{201C}b\u{201D}\u{2014}c\t\nd"),
            "a \"b\"-c\nd"
        );
    }

    #[test]
    fn patches_are_jsdiffs() {
        // Outputs of jsdiff 8.0.4's createTwoFilesPatch(p, p, a, b, undefined, undefined,
        // {context: 4, headerOptions: FILE_HEADERS_ONLY}), as pi 1.6.0 writes details.patch.
        assert_eq!(
            unified_patch(
                "src/lib.txt",
                "alpha\nbeta\ngamma\n",
                "alpha\nBETA\ngamma\n",
                4
            ),
            "--- src/lib.txt\n+++ src/lib.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n"
        );
        assert_eq!(
            unified_patch("f", "a\nb", "a\nc", 4),
            "--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
        assert_eq!(
            unified_patch("f", "", "x\n", 4),
            "--- f\n+++ f\n@@ -0,0 +1,1 @@\n+x\n"
        );
        let lines: Vec<String> = (1..=20).map(|i| format!("{i}\n")).collect();
        let with = |changes: &[(usize, &str)]| {
            let mut l = lines.clone();
            for (i, text) in changes {
                l[*i] = format!("{text}\n");
            }
            l.concat()
        };
        let old = lines.concat();
        // Changes 17 lines apart: two hunks; 7 apart: one.
        assert_eq!(
            unified_patch("f", &old, &with(&[(1, "two"), (18, "nineteen")]), 4),
            "--- f\n+++ f\n@@ -1,6 +1,6 @@\n 1\n-2\n+two\n 3\n 4\n 5\n 6\n@@ -15,6 +15,6 @@\n 15\n 16\n 17\n 18\n-19\n+nineteen\n 20\n"
        );
        assert_eq!(
            unified_patch("f", &old, &with(&[(1, "two"), (8, "nine")]), 4),
            "--- f\n+++ f\n@@ -1,13 +1,13 @@\n 1\n-2\n+two\n 3\n 4\n 5\n 6\n 7\n 8\n-9\n+nine\n 10\n 11\n 12\n 13\n"
        );
    }

    #[test]
    fn line_endings() {
        assert_eq!(detect_line_ending("a\r\nb\n"), "\r\n");
        assert_eq!(detect_line_ending("a\nb\r\n"), "\n");
        assert_eq!(normalize_to_lf("a\r\nb\rc"), "a\nb\nc");
    }
}
