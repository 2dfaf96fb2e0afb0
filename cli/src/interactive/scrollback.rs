//! What the transcript printed above the editor, kept so that it can be laid out again: for
//! a new terminal width after a resize, and with thinking hidden (Ctrl+T) or tool output
//! expanded (Ctrl+O). pi's regular mode does the same: when the width changes (or a toggle
//! changes lines already scrolled off) it clears the screen and the scrollback and renders
//! every component again (pi-tui's `TuiMainScreen`, `fullRender(true)`).
//!
//! A piece is either rows printed as they were (a header, a command's output, the lines of a
//! reply still streaming), which the terminal wraps when they no longer fit, or a layout: a
//! function of the [`View`] that renders a whole message, tool result or history again.

use pith_events::AgentMessage;

use super::messages::message_lines;
use super::{style, tools};

/// How the transcript is shown: the width and pi's two display toggles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// The terminal's width, in columns.
    pub cols: usize,
    /// Ctrl+T: thinking blocks as pi's `Thinking...` label only.
    pub hide_thinking: bool,
    /// Ctrl+O: tool output, compaction and branch summaries in full.
    pub expanded: bool,
}

/// Renders a piece for a view: whole lines, `""` a blank one.
pub type Layout = Box<dyn Fn(&View) -> Vec<String> + Send>;

/// Where a piece came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Lines of the agent's events for the message streaming now: replaced by the message
    /// once it ends ([`Scrollback::settle`]).
    Streamed,
    /// A status line of a display toggle (Ctrl+T, Ctrl+O): the next one replaces it when
    /// nothing came between (pi's `showStatus`).
    Status,
    /// Anything else (commands, statuses, whole messages).
    Other,
}

enum Piece {
    Rows(Vec<String>),
    Layout(Layout),
}

impl Piece {
    fn render(&self, view: &View) -> Vec<String> {
        match self {
            Piece::Rows(rows) => rows.clone(),
            Piece::Layout(layout) => layout(view),
        }
    }
}

/// Whether `line` is shown after a line that was blank (`last_blank`, updated): blank lines
/// never come in pairs (pi's spacers). The one rule for printing and for laying out again.
pub fn shown_after(line: &str, last_blank: &mut bool) -> bool {
    let blank = line.is_empty();
    if blank && *last_blank {
        return false;
    }
    *last_blank = blank;
    true
}

/// The pieces' lines in order, as [`shown_after`] keeps them.
fn join(pieces: impl Iterator<Item = Vec<String>>) -> Vec<String> {
    let mut last_blank = true;
    pieces
        .flatten()
        .filter(|line| shown_after(line, &mut last_blank))
        .collect()
}

/// The transcript's pieces, oldest first, and how they are shown.
#[derive(Default)]
pub struct Scrollback {
    pieces: Vec<(Piece, Origin)>,
    /// Full-screen mode's rendering of the first pieces for one view: what a redraw does
    /// not render again.
    cache: Option<(View, Vec<Vec<String>>)>,
    /// Ctrl+T's state (see [`View::hide_thinking`]).
    pub hide_thinking: bool,
    /// Ctrl+O's state (see [`View::expanded`]).
    pub expanded: bool,
}

/// A position in the scrollback, where a streaming message's lines start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark(usize);

impl Mark {
    /// The start of the scrollback.
    pub const START: Mark = Mark(0);
}

impl Scrollback {
    /// The view for a terminal `cols` wide.
    pub fn view(&self, cols: usize) -> View {
        View {
            cols,
            hide_thinking: self.hide_thinking,
            expanded: self.expanded,
        }
    }

    /// Keeps rows printed as they are.
    pub fn rows(&mut self, rows: Vec<String>, origin: Origin) {
        if !rows.is_empty() {
            self.pieces.push((Piece::Rows(rows), origin));
        }
    }

    /// Keeps a toggle's status rows, in place of the last piece when that was one too.
    pub fn status(&mut self, rows: Vec<String>) {
        if self
            .pieces
            .last()
            .is_some_and(|(_, o)| *o == Origin::Status)
        {
            self.pieces.pop();
            self.changed_from(self.pieces.len());
        }
        self.pieces.push((Piece::Rows(rows), Origin::Status));
    }

    /// Keeps a piece that is rendered again by `layout`.
    pub fn layout(&mut self, layout: Layout) {
        self.pieces.push((Piece::Layout(layout), Origin::Other));
    }

    /// Where the next piece goes.
    pub fn mark(&self) -> Mark {
        Mark(self.pieces.len())
    }

    /// The message streamed since `mark` has ended: its streamed rows give way to `layout`
    /// (pieces of other origin printed meanwhile stay, after it).
    pub fn settle(&mut self, mark: Mark, layout: Layout) {
        let at = mark.0.min(self.pieces.len());
        self.changed_from(at);
        let tail = self.pieces.split_off(at);
        self.pieces.push((Piece::Layout(layout), Origin::Other));
        self.pieces
            .extend(tail.into_iter().filter(|(_, o)| *o != Origin::Streamed));
    }

    /// Every line for `view`, blank lines never in pairs (pi's spacers), as the transcript
    /// printed them.
    pub fn render(&self, view: &View) -> Vec<String> {
        join(self.pieces.iter().map(|(piece, _)| piece.render(view)))
    }

    /// [`Scrollback::render`] for full-screen mode, where every redraw needs the lines:
    /// pieces already rendered for `view` are not rendered again.
    pub fn render_cached(&mut self, view: &View) -> Vec<String> {
        let mut cached = match self.cache.take() {
            Some((v, cached)) if v == *view => cached,
            _ => Vec::new(),
        };
        cached.truncate(self.pieces.len());
        for (piece, _) in &self.pieces[cached.len()..] {
            cached.push(piece.render(view));
        }
        let out = join(cached.iter().cloned());
        self.cache = Some((*view, cached));
        out
    }

    /// Forgets the cached rendering from piece `at` on (it changed).
    fn changed_from(&mut self, at: usize) {
        if let Some((_, cached)) = &mut self.cache {
            cached.truncate(at);
        }
    }
}

/// `line` (SGR styles only) cut into rows of at most `cols` columns, for full-screen mode,
/// which must know where each row lands. Styles stay where they are: the terminal carries
/// them from one row to the next.
pub fn rows_of(line: &str, cols: usize) -> Vec<String> {
    use unicode_width::UnicodeWidthChar;
    let cols = cols.max(1);
    let mut rows = Vec::new();
    let mut row = String::new();
    let mut used = 0;
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if c == '\u{1b}' {
            // `ESC [ … m`: no width.
            let end = rest.find('m').map_or(rest.len(), |e| e + 1);
            row.push_str(&rest[..end]);
            rest = &rest[end..];
            continue;
        }
        let w = c.width().unwrap_or(0);
        if used + w > cols && used > 0 {
            rows.push(std::mem::take(&mut row));
            used = 0;
        }
        row.push(c);
        used += w;
        rest = &rest[c.len_utf8()..];
    }
    rows.push(row);
    rows
}

/// The layout of a whole message (pi's message components).
pub fn message(message: AgentMessage) -> Layout {
    Box::new(move |v: &View| message_lines(&message, v.cols, v.expanded, v.hide_thinking))
}

/// The layout of several messages (a session's history).
pub fn messages(messages: Vec<AgentMessage>) -> Layout {
    Box::new(move |v: &View| {
        messages
            .iter()
            .flat_map(|m| message_lines(m, v.cols, v.expanded, v.hide_thinking))
            .collect()
    })
}

/// The dim rule above a session's history (pi's `DynamicBorder` there).
pub fn rule() -> Layout {
    Box::new(|v: &View| vec![String::new(), style::border(v.cols)])
}

/// The layout of a tool's result as the transcript shows it when the tool ends: `call`
/// (name and arguments) is repeated first when the result does not follow its own call.
pub fn tool_result(
    call: Option<(String, serde_json::Value)>,
    name: String,
    result: serde_json::Value,
    is_error: bool,
    duration_ms: Option<u64>,
) -> Layout {
    Box::new(move |v: &View| {
        let lines = tools::result_view(&name, &result, is_error, v.expanded, v.cols, duration_ms);
        let mut out = Vec::new();
        if let Some((call_name, args)) = &call
            && !lines.is_empty()
        {
            out.push(String::new());
            out.extend(
                tools::call_lines(call_name, args, v.cols)
                    .into_iter()
                    .take(1),
            );
        }
        out.extend(lines);
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(cols: usize) -> View {
        View {
            cols,
            hide_thinking: false,
            expanded: false,
        }
    }

    #[test]
    fn a_settled_message_replaces_its_streamed_rows_and_keeps_other_output() {
        let mut s = Scrollback::default();
        s.rows(vec!["header".into()], Origin::Other);
        let mark = s.mark();
        s.rows(vec![String::new(), "streamed row".into()], Origin::Streamed);
        s.rows(vec![String::new(), "a notice".into()], Origin::Other);
        s.rows(vec!["more streamed".into()], Origin::Streamed);
        s.settle(
            mark,
            Box::new(|v: &View| vec![String::new(), format!("reply at {}", v.cols)]),
        );
        assert_eq!(
            s.render(&view(50)),
            ["header", "", "reply at 50", "", "a notice"]
        );
        assert_eq!(s.render(&view(90))[2], "reply at 90");
    }

    #[test]
    fn long_lines_are_cut_into_rows_with_their_styles() {
        assert_eq!(rows_of("", 10), [""]);
        assert_eq!(
            rows_of("\x1b[1mabcdef\x1b[0mgh", 3),
            ["\x1b[1mabc", "def\x1b[0m", "gh"]
        );
        // A wide character never straddles two rows.
        assert_eq!(rows_of("ab日本", 3), ["ab", "日", "本"]);
    }

    #[test]
    fn the_cache_renders_only_new_and_settled_pieces_again() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = |text: &'static str| -> Layout {
            let calls = calls.clone();
            Box::new(move |_| {
                calls.fetch_add(1, Ordering::Relaxed);
                vec![text.to_owned()]
            })
        };
        let mut s = Scrollback::default();
        s.layout(counted("one"));
        let mark = s.mark();
        s.rows(vec!["streamed".into()], Origin::Streamed);
        assert_eq!(s.render_cached(&view(40)), ["one", "streamed"]);
        assert_eq!(s.render_cached(&view(40)), ["one", "streamed"]);
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        s.settle(mark, counted("two"));
        assert_eq!(s.render_cached(&view(40)), ["one", "two"]);
        assert_eq!(calls.load(Ordering::Relaxed), 2);
        // Another width renders everything again.
        assert_eq!(s.render_cached(&view(50)), ["one", "two"]);
        assert_eq!(calls.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn a_toggle_status_replaces_the_one_just_before_it() {
        let mut s = Scrollback::default();
        s.rows(vec!["reply".into()], Origin::Other);
        s.status(vec![String::new(), "Thinking blocks: hidden".into()]);
        s.status(vec![String::new(), "Thinking blocks: visible".into()]);
        assert_eq!(
            s.render(&view(40)),
            ["reply", "", "Thinking blocks: visible"]
        );
        s.rows(vec!["more".into()], Origin::Other);
        s.status(vec![String::new(), "Tool output: expanded".into()]);
        assert_eq!(s.render(&view(40)).len(), 6);
    }

    #[test]
    fn a_message_is_laid_out_for_the_width_it_is_rendered_at() {
        let mut s = Scrollback::default();
        let words = "word ".repeat(30);
        s.layout(message(AgentMessage::user_text(words.trim(), 0)));
        let narrow = s.render(&view(40));
        let wide = s.render(&view(200));
        assert!(narrow.len() > 3, "{narrow:?}");
        assert_eq!(wide.len(), 1, "{wide:?}");
    }
}
