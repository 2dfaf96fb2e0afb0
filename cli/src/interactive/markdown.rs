//! Replies rendered as pi renders markdown (pi-tui's `Markdown` component with pi's dark
//! theme): headings (`#` kept from level 3), emphasis, code spans, links, lists, block quotes
//! behind `│ `, rules, box-drawn tables and fenced code blocks (highlighted by syntect when
//! the fence names a language it knows).
//!
//! The transcript prints whole rows above the line editor as a reply streams, so rendering
//! works one source line at a time ([`Markdown::line`]), keeping only what spans lines: an
//! open code fence and the rows of a table, which is drawn once its last row has arrived.
//! Paragraph breaks are kept as blank rows. The text is made safe for the terminal before it
//! gets here; the only escape sequences in the output are the SGR styles added here.

use std::sync::LazyLock;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use syntect::easy::HighlightLines;
use syntect::highlighting::ThemeSet;
use syntect::parsing::SyntaxSet;
use unicode_width::UnicodeWidthChar;

use super::screen::{split_row, width, word_wrap};
use super::style;

/// SGR codes of pi's dark theme roles, as the basic colours `style` uses.
mod sgr {
    pub const HEADING: &str = "33";
    pub const CODE: &str = "35";
    pub const CODE_BLOCK: &str = "32";
    pub const MUTED: &str = "90";
    pub const LINK: &str = "34";
    pub const BULLET: &str = "35";
}

/// One run of text with the SGR codes it is shown with (`""`: plain).
#[derive(Debug, Clone, PartialEq)]
struct Span {
    text: String,
    sgr: String,
}

/// An open fenced code block, with the highlighter of its language when syntect knows it.
struct Fence {
    marker: char,
    len: usize,
    highlighter: Option<HighlightLines<'static>>,
}

impl std::fmt::Debug for Fence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fence")
            .field("marker", &self.marker)
            .field("len", &self.len)
            .field("highlighted", &self.highlighter.is_some())
            .finish()
    }
}

/// syntect's bundled grammars and themes, loaded once on first use (read-only).
static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);
static THEMES: LazyLock<ThemeSet> = LazyLock::new(ThemeSet::load_defaults);

/// A highlighter for the fence's language (`rust`, `py`, `sh`, …), or `None` when the
/// language is unknown or colours are off: then the code is shown in pi's `mdCodeBlock` green.
fn highlighter(lang: &str) -> Option<HighlightLines<'static>> {
    if lang.is_empty() || !style::enabled() {
        return None;
    }
    let syntax = SYNTAXES.find_syntax_by_token(lang)?;
    let theme = THEMES.themes.get("base16-ocean.dark")?;
    Some(HighlightLines::new(syntax, theme))
}

/// One code line in the highlighter's colours (foreground only, 24-bit where the terminal
/// takes it: [`style::truecolor`]), or `None` when it cannot be highlighted.
fn highlight(h: &mut HighlightLines<'static>, line: &str) -> Option<String> {
    highlight_in(h, line, style::truecolor())
}

fn highlight_in(h: &mut HighlightLines<'static>, line: &str, truecolor: bool) -> Option<String> {
    let with_newline = format!("{line}\n");
    let ranges = h.highlight_line(&with_newline, &SYNTAXES).ok()?;
    let mut out = String::new();
    for (style, text) in ranges {
        let text = text.trim_end_matches('\n');
        if text.is_empty() {
            continue;
        }
        let c = style.foreground;
        let fg = style::fg_rgb(c.r, c.g, c.b, truecolor);
        out.push_str(&format!("\x1b[{fg}m{text}"));
    }
    out.push_str("\x1b[0m");
    Some(out)
}

/// What a code block's rows start with (pi's `codeBlockIndent`).
const CODE_INDENT: &str = "  ";

/// The renderer's state between lines of one text block.
#[derive(Debug, Default)]
pub struct Markdown {
    fence: Option<Fence>,
    table: Vec<String>,
}

impl Markdown {
    /// The rows one complete source line (without its newline) adds, for `cols` columns.
    /// A table row adds nothing until the table ends.
    pub fn line(&mut self, line: &str, cols: usize) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(fence) = &mut self.fence {
            if is_closing_fence(line, fence) {
                self.fence = None;
                out.push(style::with(sgr::MUTED, "```"));
            } else {
                for row in wrap_code(line, cols.saturating_sub(CODE_INDENT.len())) {
                    let shown = fence
                        .highlighter
                        .as_mut()
                        .and_then(|h| highlight(h, &row))
                        .unwrap_or_else(|| style::with(sgr::CODE_BLOCK, &row));
                    out.push(format!("{CODE_INDENT}{shown}"));
                }
            }
            return out;
        }
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if indent <= 3 && trimmed.starts_with('|') {
            self.table.push(line.to_owned());
            return out;
        }
        out.extend(self.finish_table(cols));
        if let Some((fence, lang)) = opening_fence(line) {
            self.fence = Some(fence);
            out.push(style::with(sgr::MUTED, &format!("```{lang}")));
            return out;
        }
        out.extend(block_line(line, cols));
        out
    }

    /// An unfinished line longer than `rows` rows of `cols` columns, split so that its first
    /// whole words can be rendered now: `(head, rest)`, where `rest` goes on as the same
    /// block (a paragraph keeps its indent, a list item's text its alignment, a quote its
    /// `> `). `None` when the line fits, inside a code fence or a table, for a heading, or
    /// when no cut leaves the head's inline markup (code spans, emphasis, links) closed and
    /// the rest free of a block marker.
    pub fn split_long(&self, line: &str, cols: usize, rows: usize) -> Option<(String, String)> {
        if self.fence.is_some() {
            return None;
        }
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if trimmed.starts_with('|') || heading(trimmed).is_some() || opening_fence(line).is_some() {
            return None;
        }
        // Where the block's text starts in `line`, and what its next rows start with.
        let quote = trimmed
            .strip_prefix('>')
            .filter(|_| indent <= 3)
            .map(|r| r.strip_prefix(' ').unwrap_or(r));
        let (body_at, continuation) = if let Some(text) = quote {
            (line.len() - text.len(), "> ".to_owned())
        } else if let Some((marker, text)) = list_item(trimmed) {
            let pad = 4 * (indent / 2).min(8);
            (line.len() - text.len(), " ".repeat(pad + width(&marker)))
        } else {
            (indent, " ".repeat(indent.min(16)))
        };
        let body = &line[body_at..];
        // The room `wrap_spans` gives a row after the block's prefix.
        let row = cols.saturating_sub(1 + width(&continuation)).max(10);
        // Where each row the renderer makes of the body ends (it breaks at the last space
        // that fits, as `split_row` does).
        let mut ends = Vec::new();
        let mut at = 0;
        while let Some((first, _)) = split_row(&body[at..], row) {
            at += first.len();
            at += body[at..].len() - body[at..].trim_start_matches(' ').len();
            ends.push(at);
            if ends.len() > rows {
                break;
            }
        }
        // `ends` are the breaks: one row more than breaks.
        if ends.len() < rows {
            return None;
        }
        // Keep about two rows live; cut after whole rows, where the markup is closed.
        let keep = rows.saturating_sub(2).max(1);
        let cut = ends[..keep].iter().rev().copied().find(|&at| {
            let (head, rest) = (&body[..at], body[at..].trim_start());
            markup_closed(head) && !rest.is_empty() && !starts_block(rest)
        })?;
        let rest = body[cut..].trim_start();
        Some((
            line[..body_at + cut].trim_end().to_owned(),
            format!("{continuation}{rest}"),
        ))
    }

    /// The rows still held (a table at the end of the text); the state is reset.
    pub fn finish(&mut self, cols: usize) -> Vec<String> {
        self.fence = None;
        self.finish_table(cols)
    }

    /// What a line still streaming is indented by: a code block's indent inside one.
    pub fn live_indent(&self) -> &'static str {
        if self.fence.is_some() {
            CODE_INDENT
        } else {
            ""
        }
    }

    /// The rows the table held so far shows when it ends here; the state is kept (a table
    /// still streaming is drawn live from them).
    pub fn held_rows(&self, cols: usize) -> Vec<String> {
        table_rows(&self.table, cols)
    }

    fn finish_table(&mut self, cols: usize) -> Vec<String> {
        table_rows(&std::mem::take(&mut self.table), cols)
    }
}

/// Table source lines as shown: a box-drawn table, or the lines as text when they are no
/// table (see [`table`]).
fn table_rows(rows: &[String], cols: usize) -> Vec<String> {
    if rows.is_empty() {
        return Vec::new();
    }
    table(rows, cols).unwrap_or_else(|| {
        rows.iter()
            .flat_map(|r| wrap_spans(&inline(r, ""), cols, "", ""))
            .collect()
    })
}

/// Renders a whole text (a reply shown at once, or the history on `/resume`).
pub fn render(text: &str, cols: usize) -> Vec<String> {
    let mut md = Markdown::default();
    let mut out: Vec<String> = text.split('\n').flat_map(|l| md.line(l, cols)).collect();
    out.extend(md.finish(cols));
    out
}

/// A line outside code blocks and tables.
fn block_line(line: &str, cols: usize) -> Vec<String> {
    let trimmed = line.trim_start();
    let indent = line.len() - trimmed.len();
    if trimmed.is_empty() {
        return vec![String::new()];
    }
    if indent <= 3 {
        if let Some((level, text)) = heading(trimmed) {
            let sgr = match level {
                1 => format!("{};1;4", sgr::HEADING),
                _ => format!("{};1", sgr::HEADING),
            };
            let prefix = if level >= 3 {
                style::with(&sgr, &format!("{} ", "#".repeat(level)))
            } else {
                String::new()
            };
            let spans = inline(text, &sgr);
            return wrap_spans(&spans, cols, &prefix, "");
        }
        if is_rule(trimmed) {
            return vec![style::with(sgr::MUTED, &"─".repeat(cols.clamp(1, 80)))];
        }
        if let Some(rest) = trimmed.strip_prefix('>') {
            let rest = rest.strip_prefix(' ').unwrap_or(rest);
            let border = style::with(sgr::MUTED, "│ ");
            let spans = inline(rest, &format!("{};3", sgr::MUTED));
            return wrap_spans(&spans, cols, &border, &border);
        }
    }
    if let Some((marker, text)) = list_item(trimmed) {
        let pad = "    ".repeat((indent / 2).min(8));
        let first = format!("{pad}{}", style::with(sgr::BULLET, &marker));
        let rest = format!("{pad}{}", " ".repeat(width(&marker)));
        return wrap_spans(&inline(text, ""), cols, &first, &rest);
    }
    let pad = " ".repeat(indent.min(16));
    wrap_spans(&inline(trimmed, ""), cols, &pad, &pad)
}

/// Whether `text` leaves no code span, emphasis, strikethrough or link open (so that it can
/// be rendered apart from what follows it).
fn markup_closed(text: &str) -> bool {
    let even = |n: usize| n.is_multiple_of(2);
    even(text.matches('`').count())
        && even(text.matches('*').count())
        && even(text.matches("~~").count())
        && text.matches('[').count() == text.matches(']').count()
        && text.matches('(').count() == text.matches(')').count()
}

/// Whether a line starting with `text` would open another block (a list item, a quote, a
/// heading, a table row, a fence).
fn starts_block(text: &str) -> bool {
    list_item(text).is_some()
        || heading(text).is_some()
        || text.starts_with(['>', '|'])
        || text.starts_with("```")
        || text.starts_with("~~~")
}

/// `# text` → (1, "text"); a closing run of `#` is dropped.
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let text = rest.trim();
    let text = text.trim_end_matches('#');
    Some((level, text.trim_end()))
}

/// `---`, `***`, `___` (three or more, spaces allowed).
fn is_rule(line: &str) -> bool {
    let Some(first) = line.chars().find(|c| !c.is_whitespace()) else {
        return false;
    };
    matches!(first, '-' | '*' | '_')
        && line.chars().filter(|c| *c == first).count() >= 3
        && line.chars().all(|c| c == first || c.is_whitespace())
}

/// `- x`, `* x`, `+ x`, `1. x`, `1) x`, with a task box: (the marker as pi shows it, the text).
fn list_item(line: &str) -> Option<(String, &str)> {
    let (marker, rest) = if let Some(rest) = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .or_else(|| line.strip_prefix("+ "))
    {
        ("- ".to_owned(), rest)
    } else {
        let digits = line.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        let after = &line[digits..];
        let rest = after
            .strip_prefix(". ")
            .or_else(|| after.strip_prefix(") "))?;
        (format!("{}. ", &line[..digits]), rest)
    };
    for (box_text, shown) in [("[ ] ", "[ ] "), ("[x] ", "[x] "), ("[X] ", "[x] ")] {
        if let Some(text) = rest.strip_prefix(box_text) {
            return Some((format!("{marker}{shown}"), text));
        }
    }
    Some((marker, rest))
}

fn opening_fence(line: &str) -> Option<(Fence, &str)> {
    let trimmed = line.trim_start();
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = trimmed.chars().take_while(|c| *c == marker).count();
    if len < 3 {
        return None;
    }
    let info = trimmed[len..].trim();
    if marker == '`' && info.contains('`') {
        return None;
    }
    let lang = info.split_whitespace().next().unwrap_or("");
    Some((
        Fence {
            marker,
            len,
            highlighter: highlighter(lang),
        },
        lang,
    ))
}

fn is_closing_fence(line: &str, fence: &Fence) -> bool {
    let trimmed = line.trim();
    let len = trimmed.chars().take_while(|c| *c == fence.marker).count();
    len >= fence.len && trimmed.chars().all(|c| c == fence.marker)
}

/// The inline markdown of one line as spans, on top of `base` (the block's own style).
fn inline(text: &str, base: &str) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    let mut stack: Vec<String> = Vec::new();
    let mut links: Vec<String> = Vec::new();
    let current = |stack: &[String]| -> String {
        std::iter::once(base)
            .chain(stack.iter().map(String::as_str))
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(";")
    };
    let push = |spans: &mut Vec<Span>, text: &str, sgr: String| {
        if text.is_empty() {
            return;
        }
        match spans.last_mut() {
            Some(last) if last.sgr == sgr => last.text.push_str(text),
            _ => spans.push(Span {
                text: text.to_owned(),
                sgr,
            }),
        }
    };
    // Block starts (headings, quotes, list markers, tables, rules) were taken off by the
    // caller, so the rest parses as one paragraph.
    let source = text;
    let options = Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(source, options) {
        match event {
            Event::Start(Tag::Strong) => stack.push("1".into()),
            Event::Start(Tag::Emphasis) => stack.push("3".into()),
            Event::Start(Tag::Strikethrough) => stack.push("9".into()),
            Event::Start(Tag::Link { dest_url, .. }) => {
                stack.push(format!("{};4", sgr::LINK));
                links.push(dest_url.into_string());
            }
            Event::End(TagEnd::Strong | TagEnd::Emphasis | TagEnd::Strikethrough) => {
                stack.pop();
            }
            Event::End(TagEnd::Link) => {
                stack.pop();
                if let Some(url) = links.pop() {
                    let shown = spans.last().map(|s| s.text.clone()).unwrap_or_default();
                    if !url.is_empty() && !shown.ends_with(&url) {
                        let url_sgr = [base, sgr::MUTED]
                            .iter()
                            .filter(|s| !s.is_empty())
                            .copied()
                            .collect::<Vec<_>>()
                            .join(";");
                        push(&mut spans, &format!(" ({url})"), url_sgr);
                    }
                }
            }
            Event::Code(code) => {
                let sgr = [current(&stack).as_str(), sgr::CODE]
                    .iter()
                    .filter(|s| !s.is_empty())
                    .copied()
                    .collect::<Vec<_>>()
                    .join(";");
                push(&mut spans, &code, sgr);
            }
            Event::Text(t)
            | Event::Html(t)
            | Event::InlineHtml(t)
            | Event::InlineMath(t)
            | Event::DisplayMath(t) => {
                push(&mut spans, &t, current(&stack));
            }
            Event::SoftBreak | Event::HardBreak => push(&mut spans, " ", current(&stack)),
            Event::FootnoteReference(t) => push(&mut spans, &format!("[^{t}]"), current(&stack)),
            Event::TaskListMarker(done) => push(
                &mut spans,
                if done { "[x] " } else { "[ ] " },
                current(&stack),
            ),
            Event::Rule => push(&mut spans, "───", current(&stack)),
            Event::Start(_) | Event::End(_) => {}
        }
    }
    spans
}

/// Word-wraps `spans` to `cols` columns: the first row after `first`, the others after
/// `rest` (both already styled); each row closes its styles.
fn wrap_spans(spans: &[Span], cols: usize, first: &str, rest: &str) -> Vec<String> {
    // One column spare: a row exactly as wide as the terminal wraps early in some.
    let avail = |prefix: &str| cols.saturating_sub(1 + visible_width(prefix)).max(10);
    wrap_spans_within(spans, &avail, first, rest)
}

/// [`wrap_spans`] with each row's room (prefix excluded) given by `avail(prefix)`.
fn wrap_spans_within(
    spans: &[Span],
    avail: &dyn Fn(&str) -> usize,
    first: &str,
    rest: &str,
) -> Vec<String> {
    let chars: Vec<(char, usize)> = spans
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.text.chars().map(move |c| (c, i)))
        .collect();
    let mut rows = Vec::new();
    let mut start = 0;
    while start < chars.len() || rows.is_empty() {
        let prefix = if rows.is_empty() { first } else { rest };
        let limit = avail(prefix);
        let (mut used, mut end, mut last_space) = (0, start, None);
        while end < chars.len() {
            let w = chars[end].0.width().unwrap_or(0);
            if used + w > limit {
                break;
            }
            if chars[end].0 == ' ' {
                last_space = Some(end);
            }
            used += w;
            end += 1;
        }
        let (row_end, next) = if end >= chars.len() {
            (end, end)
        } else if chars[end].0 == ' ' {
            (end, end + 1)
        } else {
            match last_space {
                Some(s) if s > start => (s, s + 1),
                _ => (end.max(start + 1), end.max(start + 1)),
            }
        };
        let mut row = prefix.to_owned();
        let mut i = start;
        while i < row_end {
            let span = chars[i].1;
            let mut text = String::new();
            while i < row_end && chars[i].1 == span {
                text.push(chars[i].0);
                i += 1;
            }
            row.push_str(&style::with(&spans[span].sgr, &text));
        }
        rows.push(row.trim_end().to_owned());
        start = next;
    }
    rows
}

/// Columns of `text` on screen, its SGR sequences not counted.
fn visible_width(text: &str) -> usize {
    let mut w = 0;
    let mut in_sgr = false;
    for c in text.chars() {
        match (in_sgr, c) {
            (false, '\x1b') => in_sgr = true,
            (true, 'm') => in_sgr = false,
            (true, _) => {}
            (false, c) => w += c.width().unwrap_or(0),
        }
    }
    w
}

/// Cuts `text` into rows of at most `cols` columns (at least 10) between words where it can
/// ([`word_wrap`], as pi wraps a code block's lines); code keeps its spaces.
fn wrap_code(text: &str, cols: usize) -> Vec<String> {
    word_wrap(text, cols.max(10))
        .into_iter()
        .map(|(start, end)| text[start..end].to_owned())
        .collect()
}

/// A GFM table drawn with box characters as pi draws it; `None` when the rows are no table
/// (no delimiter row) or it does not fit in `cols`, then the rows are shown as text.
fn table(rows: &[String], cols: usize) -> Option<Vec<String>> {
    let cells: Vec<Vec<String>> = rows.iter().map(|r| split_cells(r)).collect();
    let delimiter = cells.get(1)?;
    if !delimiter.iter().all(|c| is_delimiter_cell(c)) {
        return None;
    }
    let n = cells[0].len();
    let body: Vec<&Vec<String>> = std::iter::once(&cells[0]).chain(&cells[2..]).collect();
    let rendered: Vec<Vec<Vec<Span>>> = body
        .iter()
        .enumerate()
        .map(|(r, row)| {
            (0..n)
                .map(|c| {
                    let text = row.get(c).map_or("", String::as_str);
                    inline(text, if r == 0 { "1" } else { "" })
                })
                .collect()
        })
        .collect();
    let plain = |spans: &[Span]| spans.iter().map(|s| s.text.as_str()).collect::<String>();
    let natural: Vec<usize> = (0..n)
        .map(|c| {
            rendered
                .iter()
                .map(|row| width(&plain(&row[c])))
                .max()
                .unwrap_or(0)
                .max(1)
        })
        .collect();
    let longest_word: Vec<usize> = (0..n)
        .map(|c| {
            rendered
                .iter()
                .flat_map(|row| {
                    plain(&row[c])
                        .split(' ')
                        .map(|w| width(w).min(30))
                        .collect::<Vec<_>>()
                })
                .max()
                .unwrap_or(1)
                .max(1)
        })
        .collect();
    // One column spare, as for every row; pi falls back to the text when even one column a
    // cell does not fit.
    let room = cols.saturating_sub(1 + 3 * n + 1);
    if room < n {
        return None;
    }
    let widths = column_widths(&natural, &longest_word, room);
    let border = |l: &str, m: &str, r: &str| {
        let inner: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
        format!("{l}─{}─{r}", inner.join(&format!("─{m}─")))
    };
    // A row's cells wrapped to their columns: as many lines as its tallest cell.
    let lines = |row: &[Vec<Span>]| {
        let cells: Vec<Vec<String>> = row
            .iter()
            .zip(&widths)
            .map(|(spans, &w)| wrap_spans_within(spans, &|_| w, "", ""))
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        (0..height)
            .map(|i| {
                let parts: Vec<String> = cells
                    .iter()
                    .zip(&widths)
                    .map(|(cell, &w)| {
                        let text = cell.get(i).map_or("", String::as_str);
                        format!(
                            "{text}{}",
                            " ".repeat(w.saturating_sub(visible_width(text)))
                        )
                    })
                    .collect();
                format!("│ {} │", parts.join(" │ "))
            })
            .collect::<Vec<_>>()
    };
    let mut out = vec![border("┌", "┬", "┐")];
    out.extend(lines(&rendered[0]));
    out.push(border("├", "┼", "┤"));
    for (i, row) in rendered[1..].iter().enumerate() {
        if i > 0 {
            // pi rules off every body row.
            out.push(border("├", "┼", "┤"));
        }
        out.extend(lines(row));
    }
    out.push(border("└", "┴", "┘"));
    Some(out)
}

/// pi's table column widths: the natural ones when they fit in `room` columns, else each
/// column shrunk toward its longest word (at most 30) in proportion to what it would lose,
/// and below that, when even the words do not fit, toward one column each.
fn column_widths(natural: &[usize], longest_word: &[usize], room: usize) -> Vec<usize> {
    let n = natural.len();
    let mut min = longest_word.to_vec();
    if min.iter().sum::<usize>() > room {
        let spare = room.saturating_sub(n);
        let weight: usize = longest_word.iter().map(|w| w - 1).sum();
        min = longest_word
            .iter()
            .map(|w| 1 + ((w - 1) * spare).checked_div(weight).unwrap_or(0))
            .collect();
        let mut left = room.saturating_sub(min.iter().sum());
        for m in min.iter_mut() {
            if left == 0 {
                break;
            }
            *m += 1;
            left -= 1;
        }
    }
    if natural.iter().sum::<usize>() <= room {
        return natural.iter().zip(&min).map(|(a, b)| *a.max(b)).collect();
    }
    let potential: usize = natural
        .iter()
        .zip(&min)
        .map(|(a, b)| a.saturating_sub(*b))
        .sum();
    let extra = room.saturating_sub(min.iter().sum());
    let mut widths: Vec<usize> = natural
        .iter()
        .zip(&min)
        .map(|(a, b)| {
            let grow = (a.saturating_sub(*b) * extra)
                .checked_div(potential)
                .unwrap_or(0);
            b + grow
        })
        .collect();
    let mut left = room.saturating_sub(widths.iter().sum());
    while left > 0 {
        let mut grew = false;
        for (w, a) in widths.iter_mut().zip(natural) {
            if left > 0 && *w < *a {
                *w += 1;
                left -= 1;
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    widths
}

/// The cells of `| a | b |` (an escaped `\|` stays in its cell).
fn split_cells(row: &str) -> Vec<String> {
    let row = row.trim();
    let row = row.strip_prefix('|').unwrap_or(row);
    let row = if row.ends_with('|') && !row.ends_with("\\|") {
        &row[..row.len() - 1]
    } else {
        row
    };
    let mut cells = vec![String::new()];
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                if let Some(cell) = cells.last_mut() {
                    cell.push('|');
                }
            }
            '|' => cells.push(String::new()),
            _ => {
                if let Some(cell) = cells.last_mut() {
                    cell.push(c);
                }
            }
        }
    }
    cells.into_iter().map(|c| c.trim().to_owned()).collect()
}

fn is_delimiter_cell(cell: &str) -> bool {
    let inner = cell.trim_start_matches(':').trim_end_matches(':');
    !inner.is_empty() && inner.chars().all(|c| c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_unfinished_line_splits_after_whole_rows_and_goes_on_as_the_same_block() {
        let md = Markdown::default();
        let words = |n: usize| {
            (0..n)
                .map(|i| format!("w{i:02}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        // Fits: nothing to split.
        assert_eq!(md.split_long(&words(10), 40, 8), None);
        let (head, rest) = md.split_long(&words(90), 40, 8).unwrap_or_default();
        // Ten words a row; six rows go, the rest stays live.
        assert_eq!(head.split(' ').count(), 6 * 10, "{head}");
        assert!(rest.starts_with("w60 "), "{rest}");
        // A list item's text goes on under it; a quote stays a quote.
        let (head, rest) = md
            .split_long(&format!("- {}", words(90)), 40, 8)
            .unwrap_or_default();
        assert!(head.starts_with("- w00"), "{head}");
        assert!(rest.starts_with("  w"), "{rest}");
        // Rendered under the item's text, two columns in (after "- ").
        assert!(
            plain(block_line(&rest, 40))
                .iter()
                .all(|r| r.starts_with("  w"))
        );
        let (_, rest) = md
            .split_long(&format!("> {}", words(90)), 40, 8)
            .unwrap_or_default();
        assert!(rest.starts_with("> w"), "{rest}");
        // Never inside a code span: the cut moves back to where the span is closed.
        let line = format!("{} `{}` {}", words(30), words(40), words(30));
        if let Some((head, _)) = md.split_long(&line, 40, 8) {
            assert_eq!(head.matches('`').count() % 2, 0, "{head}");
        }
        // Nor in a heading, a table row or a code fence.
        assert_eq!(md.split_long(&format!("# {}", words(90)), 40, 8), None);
        assert_eq!(md.split_long(&format!("| {}", words(90)), 40, 8), None);
    }

    fn plain(rows: Vec<String>) -> Vec<String> {
        let re = regex::Regex::new(r"\x1b\[[0-9;]*m").unwrap();
        rows.iter()
            .map(|r| re.replace_all(r, "").into_owned())
            .collect()
    }

    #[test]
    fn headings_lists_quotes_and_rules_read_as_pi_shows_them() {
        let text = "# Title\n\nSome **bold** and *it* with `code`.\n\n### Third\n- one\n  - nested\n1. first\n- [x] done\n> quoted *text*\n\n---";
        assert_eq!(
            plain(render(text, 40)),
            [
                "Title",
                "",
                "Some bold and it with code.",
                "",
                "### Third",
                "- one",
                "    - nested",
                "1. first",
                "- [x] done",
                "│ quoted text",
                "",
                &"─".repeat(40),
            ]
        );
    }

    #[test]
    fn styles_are_the_theme_roles_and_close_on_every_row() {
        let rows = render("**b** `c` [pi](https://x.dev)", 80);
        assert_eq!(
            rows,
            ["\x1b[1mb\x1b[0m \x1b[35mc\x1b[0m \x1b[34;4mpi\x1b[0m\x1b[90m (https://x.dev)\x1b[0m"]
        );
    }

    #[test]
    fn code_blocks_keep_their_text_and_markup_inside_is_not_rendered() {
        let rows = plain(render(
            "```rust\nlet x = **y**;\n# not a heading\n```\nafter",
            40,
        ));
        assert_eq!(
            rows,
            [
                "```rust",
                "  let x = **y**;",
                "  # not a heading",
                "```",
                "after"
            ]
        );
    }

    #[test]
    fn a_long_code_line_wraps_between_words_and_keeps_its_spaces() {
        let rows = plain(render(
            "```\nlet total = compute(alpha, beta);\nx = averyveryverylongidentifier\n```",
            24,
        ));
        assert_eq!(
            rows,
            [
                "```",
                "  let total = ",
                "  compute(alpha, beta);",
                "  x = ",
                "  averyveryverylongident",
                "  ifier",
                "```"
            ]
        );
    }

    #[test]
    fn highlight_colours_are_24_bit_only_where_the_terminal_takes_them() {
        let mut h = highlighter("rust").unwrap_or_else(|| panic!("rust is known"));
        let deep = highlight_in(&mut h, "let x = 1;", true).unwrap_or_default();
        assert!(deep.starts_with("\x1b[38;2;"), "{deep:?}");
        let mut h = highlighter("rust").unwrap_or_else(|| panic!("rust is known"));
        let shallow = highlight_in(&mut h, "let x = 1;", false).unwrap_or_default();
        assert!(shallow.starts_with("\x1b[38;5;"), "{shallow:?}");
        assert!(!shallow.contains("38;2;"), "{shallow:?}");
        // chalk's ansi256: the colour cube, and the grey ramp for greys.
        assert_eq!(style::fg_rgb(255, 0, 0, false), "38;5;196");
        assert_eq!(style::fg_rgb(192, 197, 206, false), "38;5;188");
        assert_eq!(style::fg_rgb(128, 128, 128, false), "38;5;244");
        assert_eq!(style::fg_rgb(0, 0, 0, false), "38;5;16");
    }

    #[test]
    fn known_languages_are_highlighted_and_unknown_ones_are_green() {
        let rows = render("```rust\nfn main() {}\n```\n```nosuchlang\nx\n```", 40);
        let depth = if style::truecolor() { "38;2;" } else { "38;5;" };
        assert!(
            rows[1].starts_with(&format!("  \x1b[{depth}")),
            "{:?}",
            rows[1]
        );
        assert!(rows[1].ends_with("\x1b[0m"), "{:?}", rows[1]);
        assert_eq!(plain(vec![rows[1].clone()]), ["  fn main() {}"]);
        assert_eq!(rows[4], "  \x1b[32mx\x1b[0m");
    }

    #[test]
    fn tables_are_drawn_with_box_characters_once_complete() {
        let mut md = Markdown::default();
        assert!(md.line("| Name | Size |", 80).is_empty());
        assert!(md.line("|------|-----:|", 80).is_empty());
        assert!(md.line("| a | `10` |", 80).is_empty());
        let rows = plain(md.line("", 80));
        assert_eq!(
            rows,
            [
                "┌──────┬──────┐",
                "│ Name │ Size │",
                "├──────┼──────┤",
                "│ a    │ 10   │",
                "└──────┴──────┘",
                "",
            ]
        );
    }

    #[test]
    fn body_rows_are_ruled_off_and_a_narrow_table_wraps_its_cells_as_pi_does() {
        let table = "| Column A | Column B |\n|---|---|\n| one two three | x |\n| four | y |";
        assert_eq!(
            plain(render(table, 80)),
            [
                "┌───────────────┬──────────┐",
                "│ Column A      │ Column B │",
                "├───────────────┼──────────┤",
                "│ one two three │ x        │",
                "├───────────────┼──────────┤",
                "│ four          │ y        │",
                "└───────────────┴──────────┘",
            ]
        );
        // 20 columns: 12 for the cells after the borders and the spare one; the columns
        // shrink to their longest words and the cells wrap at words.
        assert_eq!(
            plain(render(table, 20)),
            [
                "┌────────┬────────┐",
                "│ Column │ Column │",
                "│ A      │ B      │",
                "├────────┼────────┤",
                "│ one    │ x      │",
                "│ two    │        │",
                "│ three  │        │",
                "├────────┼────────┤",
                "│ four   │ y      │",
                "└────────┴────────┘",
            ]
        );
        // Too narrow for one column a cell: the text, wrapped.
        assert!(plain(render(table, 6)).iter().all(|r| !r.contains('│')));
    }

    #[test]
    fn long_lines_wrap_at_words_with_the_list_indent() {
        let rows = plain(render("- alpha beta gamma delta epsilon", 20));
        assert_eq!(rows, ["- alpha beta gamma", "  delta epsilon"]);
    }

    #[test]
    fn a_line_that_only_looks_like_a_block_stays_text() {
        assert_eq!(plain(render("2024 was long", 40)), ["2024 was long"]);
        assert_eq!(plain(render("-5 degrees", 40)), ["-5 degrees"]);
    }
}
