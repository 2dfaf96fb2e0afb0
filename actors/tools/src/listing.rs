//! How pi 1.6.0's `grep`, `find` and `ls` end a call: the kept lines joined and cut to 50 KB
//! (no line limit: the tool's own count already capped them), then one bracketed line of
//! notices, and `details` holding only what happened (`undefined` when nothing did).

use pith_events::ContentBlock;
use pith_events::js::format_js_number;
use serde_json::{Map, Value};

use super::args::json_number;
use super::truncate::{DEFAULT_MAX_BYTES, Limits, format_size, truncate_head};
use crate::tool::ToolOutput;

/// JavaScript's `Number.MAX_SAFE_INTEGER`: the line limit pi passes to `truncateHead` for
/// these tools, which shows up in `details.truncation.maxLines`.
const MAX_SAFE_INTEGER: usize = 9_007_199_254_740_991;

/// The limit that cut the listing, when one did.
pub(crate) struct LimitNotice {
    /// The `details` key (`matchLimitReached`, `resultLimitReached`, `entryLimitReached`).
    pub key: &'static str,
    /// The effective limit (pi's `Math.max(1, Math.floor(limit ?? default))`).
    pub limit: f64,
    /// The notice text.
    pub text: String,
}

impl LimitNotice {
    /// `N <what> limit reached. Use limit=2N for more<suffix>`.
    pub fn new(key: &'static str, limit: f64, what: &str, suffix: &str) -> Self {
        Self {
            key,
            limit,
            text: format!(
                "{} {what} limit reached. Use limit={} for more{suffix}",
                format_js_number(limit),
                format_js_number(limit * 2.0)
            ),
        }
    }
}

/// The end of a listing.
pub(crate) struct Listing<'a> {
    /// The lines kept (pi stops storing a little past 50 KB, so this may hold fewer lines than
    /// `totals` counts).
    pub lines: &'a [String],
    /// `(totalLines, totalBytes)` of the whole listing when `lines` is not all of it (grep and
    /// find count lines they no longer store); `None` keeps `truncateHead`'s own counts (ls).
    pub totals: Option<(usize, usize)>,
    /// The limit that cut the listing.
    pub limit: Option<LimitNotice>,
    /// grep only: some lines were cut to 500 characters.
    pub lines_truncated: Option<String>,
}

impl Listing<'_> {
    /// pi's result: the joined lines (50 KB at most) and `[notice. notice]`, with details
    /// `{<limit key>, truncation, linesTruncated}` as far as they apply, else `null`.
    pub fn into_output(self) -> ToolOutput {
        let joined = self.lines.join("\n");
        let mut truncation = truncate_head(
            &joined,
            Limits {
                max_lines: MAX_SAFE_INTEGER,
                max_bytes: DEFAULT_MAX_BYTES,
            },
        );
        if let Some((lines, bytes)) = self.totals {
            truncation.total_lines = lines;
            truncation.total_bytes = bytes;
        }
        let mut text = truncation.content.clone();
        let mut details = Map::new();
        let mut notices = Vec::new();
        if let Some(limit) = self.limit {
            notices.push(limit.text);
            details.insert(
                limit.key.to_owned(),
                Value::Number(json_number(limit.limit)),
            );
        }
        if truncation.truncated {
            notices.push(format!("{} limit reached", format_size(DEFAULT_MAX_BYTES)));
            details.insert(
                "truncation".to_owned(),
                serde_json::to_value(&truncation).unwrap_or_default(),
            );
        }
        if let Some(notice) = self.lines_truncated {
            notices.push(notice);
            details.insert("linesTruncated".to_owned(), Value::Bool(true));
        }
        if !notices.is_empty() {
            text.push_str(&format!("\n\n[{}]", notices.join(". ")));
        }
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            details: if details.is_empty() {
                Value::Null
            } else {
                Value::Object(details)
            },
            structured_content: None,
        }
    }
}

/// A result holding only `text` and no details (`No matches found`, `(empty directory)`).
pub(crate) fn plain(text: &str) -> ToolOutput {
    ToolOutput {
        content: vec![ContentBlock::text(text)],
        details: Value::Null,
        structured_content: None,
    }
}

/// pi's bookkeeping while lines stream in: every line is counted (bytes with one newline
/// each), but lines are only stored until the stored text is past 50 KB, since
/// `truncateHead` drops the rest anyway.
#[derive(Debug, Default)]
pub(crate) struct LineStore {
    /// The stored lines.
    pub lines: Vec<String>,
    /// Bytes of all lines, each counted with a trailing newline.
    pub bytes: usize,
    /// Lines counted.
    pub count: usize,
}

impl LineStore {
    /// Counts `line` and stores it while the stored text is within the byte cap.
    pub fn push(&mut self, line: String) {
        // pi: `if (outputBytes - 1 <= DEFAULT_MAX_BYTES) push` (outputBytes counts a newline
        // after every line; the joined text has one fewer).
        let bytes = line.len() + 1;
        if self.bytes <= DEFAULT_MAX_BYTES + 1 {
            self.lines.push(line);
        }
        self.bytes += bytes;
        self.count += 1;
    }

    /// `(totalLines, totalBytes)` of everything counted.
    pub fn totals(&self) -> (usize, usize) {
        (self.count, self.bytes.saturating_sub(1))
    }
}
