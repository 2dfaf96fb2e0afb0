//! Migration of v1 and v2 files to v3 (spec: format.md §5).
//!
//! Works on parsed values in file order (the header is index 0, as in pi's array); non-object
//! values are carried along untouched but keep their index, because v1 compactions point at
//! their kept boundary by index into exactly that array.

use pith_events::CURRENT_SESSION_VERSION;

/// Which steps ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Migration {
    /// v1 → v2: ids and parent links assigned, `firstKeptEntryIndex` resolved.
    pub v1_to_v2: bool,
    /// v2 → v3: `hookMessage` roles renamed to `custom`.
    pub v2_to_v3: bool,
}

impl Migration {
    /// Whether the file needs rewriting.
    pub fn ran(&self) -> bool {
        self.v1_to_v2 || self.v2_to_v3
    }
}

/// Which steps a header `version` asks for: pi compares `version ?? 1` with `< 2` and `< 3`.
pub fn steps_for(version: f64) -> Migration {
    Migration {
        v1_to_v2: version < 2.0,
        v2_to_v3: version < f64::from(CURRENT_SESSION_VERSION),
    }
}

/// Migrates `records` (the JSON texts of every parsed value, in file order) in place and
/// returns which changed. Edits are made on the text: the members pi sets or deletes are
/// spliced in or out and every other byte stays as it was (unknown members, number spelling,
/// escapes such as lone surrogates), so migrating never re-encodes what it does not change.
///
/// `new_id` supplies v1 entry ids; pi draws them at random with no collision check during
/// this step (spec: format.md §4.1), and so may the caller.
pub fn migrate(
    records: &mut [String],
    steps: Migration,
    new_id: &mut dyn FnMut() -> String,
) -> Vec<bool> {
    let mut changed = vec![false; records.len()];
    if steps.v1_to_v2 {
        let mut prev: Option<String> = None;
        for i in 0..records.len() {
            let Some(kind) = type_of(&records[i]) else {
                continue;
            };
            changed[i] = true;
            if kind.as_deref() == Some("session") {
                set(&mut records[i], "version", "2");
                continue;
            }
            let id = new_id();
            set(&mut records[i], "id", &json(&id));
            set(
                &mut records[i],
                "parentId",
                &prev.as_deref().map_or_else(|| "null".to_owned(), json),
            );
            prev = Some(id);
            if kind.as_deref() == Some("compaction") {
                let index = member(&records[i], "firstKeptEntryIndex")
                    .and_then(|raw| raw.parse::<f64>().ok());
                if let Some(index) = index {
                    match first_kept_target(records, index) {
                        Some(target_id) => set(&mut records[i], "firstKeptEntryId", &target_id),
                        // `comp.firstKeptEntryId = undefined` drops the member when written.
                        None => remove(&mut records[i], "firstKeptEntryId"),
                    }
                    remove(&mut records[i], "firstKeptEntryIndex");
                }
            }
        }
    }
    if steps.v2_to_v3 {
        for (i, record) in records.iter_mut().enumerate() {
            match type_of(record).flatten().as_deref() {
                Some("session") => {
                    set(record, "version", &CURRENT_SESSION_VERSION.to_string());
                    changed[i] = true;
                }
                Some("message") => {
                    let Some(message) = member(record, "message").map(str::to_owned) else {
                        continue;
                    };
                    let role = member(&message, "role").and_then(crate::scan::string_value);
                    if role.as_deref() == Some("hookMessage")
                        && let Some(renamed) =
                            crate::scan::set_member(&message, "role", "\"custom\"")
                    {
                        set(record, "message", &renamed);
                        changed[i] = true;
                    }
                }
                _ => {}
            }
        }
    }
    changed
}

fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "null".to_owned())
}

/// `Some(type)` for an object (`Some(None)` when it has no string `type`), `None` otherwise.
fn type_of(raw: &str) -> Option<Option<String>> {
    let members = crate::scan::object_members(raw)?;
    let kind = members.iter().rev().find(|m| m.key == "type");
    Some(
        kind.and_then(|m| crate::scan::string_value(m.value.of(raw)))
            .map(|c| c.into_owned()),
    )
}

/// The raw value of the member `key` (the last occurrence, as `JSON.parse` keeps it).
fn member<'a>(raw: &'a str, key: &str) -> Option<&'a str> {
    let members = crate::scan::object_members(raw)?;
    members
        .iter()
        .rev()
        .find(|m| m.key == key)
        .map(|m| m.value.of(raw))
}

fn set(record: &mut String, key: &str, value: &str) {
    if let Some(new) = crate::scan::set_member(record, key, value) {
        *record = new;
    }
}

fn remove(record: &mut String, key: &str) {
    if let Some(new) = crate::scan::remove_member(record, key) {
        *record = new;
    }
}

/// `entries[firstKeptEntryIndex].id` as pi reads it mid-migration: the id the target holds at
/// that moment (so a forward target has none unless it had one), never the header's.
fn first_kept_target(records: &[String], index: f64) -> Option<String> {
    if index < 0.0 || index.fract() != 0.0 {
        return None;
    }
    let target = records.get(index as usize)?;
    if type_of(target)?.as_deref() == Some("session") {
        return None;
    }
    member(target, "id").map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| (*l).to_owned()).collect()
    }

    // The worked example of format.md §5.3.
    #[test]
    fn v1_example_from_the_spec() {
        let mut records = parse(&[
            r#"{"type":"session","id":"legacy-1","timestamp":"2024-06-01T10:00:00.000Z","cwd":"/srv/app"}"#,
            r#"{"type":"message","timestamp":"2024-06-01T10:00:01.000Z","message":{"role":"user","content":"list files","timestamp":1717236001000}}"#,
            r#"{"type":"message","timestamp":"2024-06-01T10:00:02.000Z","message":{"role":"assistant","content":[]}}"#,
            r#"{"type":"message","timestamp":"2024-06-01T10:00:03.000Z","message":{"role":"hookMessage","customType":"note","content":"hi","display":true,"timestamp":1717236003000}}"#,
            r#"{"type":"compaction","timestamp":"2024-06-01T10:00:04.000Z","summary":"S","firstKeptEntryIndex":2,"tokensBefore":900}"#,
            r#"{"type":"compaction","timestamp":"2024-06-01T10:00:05.000Z","summary":"S2","firstKeptEntryIndex":6,"tokensBefore":1}"#,
            r#"{"type":"message","timestamp":"2024-06-01T10:00:06.000Z","message":{"role":"user","content":"x","timestamp":1}}"#,
        ]);
        let mut n = 0;
        let changed = migrate(&mut records, steps_for(1.0), &mut || {
            n += 1;
            ["A", "B", "C", "D", "E", "F"][n - 1].to_owned()
        });
        assert!(changed.iter().all(|c| *c));
        let out = records.clone();
        assert_eq!(
            out[0],
            r#"{"type":"session","id":"legacy-1","timestamp":"2024-06-01T10:00:00.000Z","cwd":"/srv/app","version":3}"#
        );
        assert_eq!(
            out[1],
            r#"{"type":"message","timestamp":"2024-06-01T10:00:01.000Z","message":{"role":"user","content":"list files","timestamp":1717236001000},"id":"A","parentId":null}"#
        );
        assert_eq!(
            out[3],
            r#"{"type":"message","timestamp":"2024-06-01T10:00:03.000Z","message":{"role":"custom","customType":"note","content":"hi","display":true,"timestamp":1717236003000},"id":"C","parentId":"B"}"#
        );
        assert_eq!(
            out[4],
            r#"{"type":"compaction","timestamp":"2024-06-01T10:00:04.000Z","summary":"S","tokensBefore":900,"id":"D","parentId":"C","firstKeptEntryId":"B"}"#
        );
        // A forward index points at an entry that has no id yet: the key is dropped.
        assert_eq!(
            out[5],
            r#"{"type":"compaction","timestamp":"2024-06-01T10:00:05.000Z","summary":"S2","tokensBefore":1,"id":"E","parentId":"D"}"#
        );
    }

    #[test]
    fn v2_only_renames_hook_messages_and_bumps_the_header() {
        let mut records = parse(&[
            r#"{"type":"session","version":2,"id":"s"}"#,
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x"}}"#,
            r#"{"type":"message","id":"b","parentId":"a","message":{"role":"hookMessage","content":"x"}}"#,
        ]);
        let changed = migrate(&mut records, steps_for(2.0), &mut || unreachable!());
        assert_eq!(changed, vec![true, false, true]);
        assert_eq!(records[0], r#"{"type":"session","version":3,"id":"s"}"#);
        assert_eq!(
            records[2],
            r#"{"type":"message","id":"b","parentId":"a","message":{"role":"custom","content":"x"}}"#
        );
        assert!(!steps_for(3.0).ran());
    }
}
