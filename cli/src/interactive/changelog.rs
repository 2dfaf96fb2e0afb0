//! pith's `CHANGELOG.md`, built into the binary: `/changelog` shows it all, and the startup of
//! a new session shows the entries newer than the version last seen, as pi does
//! (`getChangelogForDisplay`, `handleChangelogCommand`, `utils/changelog.js`). The version
//! seen is `lastChangelogVersion` in `<agent dir>/settings.json`; `collapseChangelog: true`
//! shows one line instead of the entries.

use anyhow::Result;
use serde_json::Value;

use super::app::App;
use super::markdown;
use super::screen::columns;
use super::style;

/// The changelog, as it is in the repository.
pub const CHANGELOG: &str = include_str!("../../../CHANGELOG.md");

/// pith's version, compared with the entries' headings.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `(major, minor, patch)`.
type Version = (u64, u64, u64);

/// One `## [x.y.z] …` section: its version and its text, heading included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `(major, minor, patch)`.
    pub version: (u64, u64, u64),
    /// The section, from its heading to the next one, trimmed.
    pub content: String,
}

/// The leading `major.minor.patch` of `text` (a `v` before it is allowed; what follows,
/// such as a prerelease, is ignored as pi ignores it).
fn version_of(text: &str) -> Option<(u64, u64, u64)> {
    let text = text.trim();
    let text = text.strip_prefix('v').unwrap_or(text);
    let mut parts = text.splitn(3, '.');
    let number = |s: &str| -> Option<u64> {
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    let major = parts.next().and_then(|p| p.parse().ok())?;
    let minor = parts.next().and_then(|p| p.parse().ok())?;
    let patch = parts.next().and_then(number)?;
    Some((major, minor, patch))
}

/// pi's `parseChangelog`: the sections whose `## ` heading names a version (`## [1.2.3]` or
/// `## 1.2.3`), in file order; other `## ` sections and what precedes the first are skipped.
pub fn parse(text: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut current: Option<(Version, Vec<&str>)> = None;
    for line in text.split('\n') {
        if let Some(heading) = line.strip_prefix("## ") {
            if let Some((version, lines)) = current.take() {
                entries.push(Entry {
                    version,
                    content: lines.join("\n").trim().to_owned(),
                });
            }
            let heading = heading.trim_start();
            let heading = heading.strip_prefix('[').unwrap_or(heading);
            current = version_of(heading).map(|v| (v, vec![line]));
        } else if let Some((_, lines)) = &mut current {
            lines.push(line);
        }
    }
    if let Some((version, lines)) = current {
        entries.push(Entry {
            version,
            content: lines.join("\n").trim().to_owned(),
        });
    }
    entries
}

/// pi's `getNewEntries`: the entries newer than `last`; `None` when `last` names no version.
pub fn new_entries<'a>(entries: &'a [Entry], last: &str) -> Option<Vec<&'a Entry>> {
    let last = version_of(last)?;
    Some(entries.iter().filter(|e| e.version > last).collect())
}

/// What the startup shows, given the version last seen: `(notes, whether to record this
/// version)`. No version seen yet (a fresh install) records it and shows nothing, as does one
/// that names no version; newer entries are shown, newest first.
pub fn startup_notes(last_seen: Option<&str>, text: &str) -> (Option<String>, bool) {
    let Some(last) = last_seen else {
        return (None, true);
    };
    let entries = parse(text);
    match new_entries(&entries, last) {
        None => (None, true),
        Some(new) if new.is_empty() => (None, false),
        Some(new) => {
            let notes: Vec<&str> = new.iter().map(|e| e.content.as_str()).collect();
            (Some(notes.join("\n\n")), true)
        }
    }
}

/// pi's condensed line: `Updated to v<the first version heading in notes>`.
fn condensed(notes: &str) -> String {
    let latest = parse(notes)
        .first()
        .map(|e| format!("{}.{}.{}", e.version.0, e.version.1, e.version.2))
        .unwrap_or_else(|| VERSION.to_owned());
    format!(
        "Updated to v{latest}. Use {} to view full changelog.",
        style::bold("/changelog")
    )
}

impl App {
    /// pi's startup notice: for a new session (not one with messages), the changelog entries
    /// newer than `lastChangelogVersion`, between rules (one line with `collapseChangelog`);
    /// the version is then recorded so they show once.
    ///
    /// Errors: the runtime stopped answering.
    pub(super) async fn changelog_at_startup(&mut self) -> Result<()> {
        if !self.rt.context().await?.messages.is_empty() {
            return Ok(());
        }
        let cwd = self.rt.current_session().await?.cwd;
        let settings =
            pith_actors::settings::Settings::load(&self.env.agent_dir, std::path::Path::new(&cwd));
        let last = settings
            .get("lastChangelogVersion")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let (notes, record) = startup_notes(last.as_deref(), CHANGELOG);
        if record
            && let Err(e) = self
                .rt
                .set_setting("lastChangelogVersion", Value::from(VERSION))
                .await
        {
            self.warn(&e.to_string());
        }
        let Some(notes) = notes else {
            return Ok(());
        };
        let cols = columns();
        let mut lines = vec![String::new(), style::border(cols)];
        let collapsed = settings
            .get("collapseChangelog")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if collapsed {
            lines.push(condensed(&notes));
        } else {
            lines.push(style::bold(&style::accent("What's New")));
            lines.push(String::new());
            lines.extend(markdown::render(&notes, cols));
            lines.push(String::new());
        }
        lines.push(style::border(cols));
        self.screen.print_lines(&lines);
        Ok(())
    }

    /// `/changelog`: every entry, oldest first so the newest is nearest the editor (pi
    /// reverses the file's order too), rendered as Markdown between rules.
    pub(super) fn changelog(&mut self) {
        let entries = parse(CHANGELOG);
        let text = if entries.is_empty() {
            "No changelog entries found.".to_owned()
        } else {
            let all: Vec<&str> = entries.iter().rev().map(|e| e.content.as_str()).collect();
            all.join("\n\n")
        };
        let cols = columns();
        let mut lines = vec![
            String::new(),
            style::border(cols),
            style::bold(&style::accent("What's New")),
            String::new(),
        ];
        lines.extend(markdown::render(&text, cols));
        lines.extend([String::new(), style::border(cols)]);
        self.screen.print_lines(&lines);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# Changelog\n\nintro\n\n## [Unreleased]\n\n- soon\n\n## [0.10.0] - 2026-12-01\n\n- ten\n\n## 0.9.2\n\n- nine two\n\n## [0.9.1-rc.1]\n- nine one\n";

    #[test]
    fn versions_are_read_from_headings_and_compared_as_numbers() {
        let entries = parse(TEXT);
        let versions: Vec<(u64, u64, u64)> = entries.iter().map(|e| e.version).collect();
        assert_eq!(versions, [(0, 10, 0), (0, 9, 2), (0, 9, 1)]);
        assert_eq!(entries[0].content, "## [0.10.0] - 2026-12-01\n\n- ten");
        assert_eq!(entries[2].content, "## [0.9.1-rc.1]\n- nine one");
        let newer: Vec<(u64, u64, u64)> = new_entries(&entries, "v0.9.1-20261020.7")
            .expect("a version")
            .iter()
            .map(|e| e.version)
            .collect();
        assert_eq!(newer, [(0, 10, 0), (0, 9, 2)]);
        assert_eq!(new_entries(&entries, "latest"), None);
    }

    #[test]
    fn startup_shows_entries_newer_than_the_last_seen_and_records_the_version() {
        assert_eq!(startup_notes(None, TEXT), (None, true));
        assert_eq!(startup_notes(Some("junk"), TEXT), (None, true));
        assert_eq!(startup_notes(Some("0.10.0"), TEXT), (None, false));
        let (notes, record) = startup_notes(Some("0.9.2"), TEXT);
        assert_eq!(notes.as_deref(), Some("## [0.10.0] - 2026-12-01\n\n- ten"));
        assert!(record);
        assert!(condensed(&notes.unwrap_or_default()).starts_with("Updated to v0.10.0. Use "));
    }

    #[test]
    fn the_built_in_changelog_has_an_entry_for_this_version() {
        let entries = parse(CHANGELOG);
        assert_eq!(
            entries.first().map(|e| e.version),
            version_of(VERSION),
            "CHANGELOG.md's newest entry is not {VERSION}"
        );
    }
}
