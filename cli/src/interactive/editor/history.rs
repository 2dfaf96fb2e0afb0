//! The prompt history in `<agent dir>/history`, in the file format pith's earlier editor
//! (rustyline) wrote, so the history carries over: a `#V2` first line, then one entry per
//! line with `\` written `\\` and a line break written `\n`. New entries are appended, so
//! lines other pith windows added meanwhile are kept.

use std::io::Write;
use std::path::PathBuf;

/// At most this many entries are kept in memory (rustyline's limit was the same).
const MAX_ENTRIES: usize = 1000;
const HEADER: &str = "#V2";

/// The history and where Up/Down are in it.
#[derive(Debug, Default)]
pub struct History {
    path: Option<PathBuf>,
    /// Oldest first.
    entries: Vec<String>,
    /// The entry shown, while browsing.
    at: Option<usize>,
    /// What was typed before browsing began, given back past the newest entry.
    draft: String,
}

impl History {
    /// Loads `path` (a missing or unreadable file is an empty history).
    pub fn load(path: PathBuf) -> History {
        let entries = std::fs::read_to_string(&path)
            .map(|text| parse(&text))
            .unwrap_or_default();
        History {
            path: Some(path),
            entries,
            ..History::default()
        }
    }

    /// Adds `text` (not when blank or the same as the newest entry) and appends it to the
    /// file, creating the file (with its header) and its folder when needed.
    pub fn add(&mut self, text: &str) {
        self.reset();
        if text.trim().is_empty() || self.entries.last().is_some_and(|l| l == text) {
            return;
        }
        self.entries.push(text.to_owned());
        if self.entries.len() > MAX_ENTRIES {
            self.entries.remove(0);
        }
        let Some(path) = &self.path else { return };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let fresh = std::fs::metadata(path).map_or(true, |m| m.len() == 0);
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let mut line = String::new();
            if fresh {
                line.push_str(HEADER);
                line.push('\n');
            }
            line.push_str(&escape(text));
            line.push('\n');
            let _ = file.write_all(line.as_bytes());
        }
    }

    /// Up: the next older entry (`current` is kept as the draft when browsing begins);
    /// `None` at the oldest.
    pub fn older(&mut self, current: &str) -> Option<String> {
        let next = match self.at {
            None if self.entries.is_empty() => return None,
            None => {
                self.draft = current.to_owned();
                self.entries.len() - 1
            }
            Some(0) => return None,
            Some(i) => i - 1,
        };
        self.at = Some(next);
        Some(self.entries[next].clone())
    }

    /// Down: the next newer entry, then the draft; `None` when not browsing.
    pub fn newer(&mut self) -> Option<String> {
        let i = self.at?;
        if i + 1 < self.entries.len() {
            self.at = Some(i + 1);
            return Some(self.entries[i + 1].clone());
        }
        self.at = None;
        Some(std::mem::take(&mut self.draft))
    }

    /// Stops browsing (the text was edited or sent).
    pub fn reset(&mut self) {
        self.at = None;
    }
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

fn parse(text: &str) -> Vec<String> {
    let mut lines = text.lines();
    let v2 = text.starts_with(HEADER);
    if v2 {
        lines.next();
    }
    let mut entries: Vec<String> = lines
        .filter(|l| !l.is_empty())
        .map(|l| if v2 { unescape(l) } else { l.to_owned() })
        .collect();
    if entries.len() > MAX_ENTRIES {
        entries.drain(..entries.len() - MAX_ENTRIES);
    }
    entries
}

fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (c, chars.clone().next()) {
            ('\\', Some('n')) => {
                out.push('\n');
                chars.next();
            }
            ('\\', Some('\\')) => {
                out.push('\\');
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_through_rustylines_format() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("sub/history");
        let mut h = History::load(path.clone());
        h.add("first");
        h.add("two\nlines \\ slash");
        h.add("two\nlines \\ slash");
        h.add("  ");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(text, "#V2\nfirst\ntwo\\nlines \\\\ slash\n");
        let mut h = History::load(path);
        assert_eq!(h.older("draft").as_deref(), Some("two\nlines \\ slash"));
        assert_eq!(h.older("x").as_deref(), Some("first"));
        assert_eq!(h.older("x"), None);
        assert_eq!(h.newer().as_deref(), Some("two\nlines \\ slash"));
        assert_eq!(h.newer().as_deref(), Some("draft"));
        assert_eq!(h.newer(), None);
    }
}
