//! Migration of v1 and v2 files to v3 (spec: format.md §5).
//!
//! Works on parsed values in file order (the header is index 0, as in pi's array); non-object
//! values are carried along untouched but keep their index, because v1 compactions point at
//! their kept boundary by index into exactly that array.

use serde_json::{Map, Value};

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

/// Migrates `records` in place and returns which records changed (same indices).
///
/// `new_id` supplies v1 entry ids; pi draws them at random with no collision check during
/// this step (spec: format.md §4.1), and so may the caller.
pub fn migrate(
    records: &mut [Value],
    steps: Migration,
    new_id: &mut dyn FnMut() -> String,
) -> Vec<bool> {
    let mut changed = vec![false; records.len()];
    if steps.v1_to_v2 {
        let mut prev: Option<String> = None;
        for i in 0..records.len() {
            let Value::Object(obj) = &mut records[i] else {
                continue;
            };
            changed[i] = true;
            if obj.get("type").and_then(Value::as_str) == Some("session") {
                obj.insert("version".into(), Value::from(2));
                continue;
            }
            let id = new_id();
            obj.insert("id".into(), Value::String(id.clone()));
            obj.insert("parentId".into(), prev.map_or(Value::Null, Value::String));
            prev = Some(id);
            let is_compaction = obj.get("type").and_then(Value::as_str) == Some("compaction");
            let index = obj.get("firstKeptEntryIndex").and_then(Value::as_f64);
            if let (true, Some(index)) = (is_compaction, index) {
                let target_id = first_kept_target(records, i, index);
                let Value::Object(obj) = &mut records[i] else {
                    continue;
                };
                if let Some(target_id) = target_id {
                    obj.insert("firstKeptEntryId".into(), target_id);
                }
                obj.shift_remove("firstKeptEntryIndex");
            }
        }
    }
    if steps.v2_to_v3 {
        for (i, record) in records.iter_mut().enumerate() {
            let Value::Object(obj) = record else { continue };
            match obj.get("type").and_then(Value::as_str) {
                Some("session") => {
                    obj.insert("version".into(), Value::from(CURRENT_SESSION_VERSION));
                    changed[i] = true;
                }
                Some("message") => {
                    if let Some(Value::Object(msg)) = obj.get_mut("message")
                        && msg.get("role").and_then(Value::as_str) == Some("hookMessage")
                    {
                        msg.insert("role".into(), Value::String("custom".into()));
                        changed[i] = true;
                    }
                }
                _ => {}
            }
        }
    }
    changed
}

/// `entries[firstKeptEntryIndex].id` as pi reads it mid-migration: the id the target holds at
/// that moment (so a forward target has none), never the header's.
fn first_kept_target(records: &[Value], _current: usize, index: f64) -> Option<Value> {
    if index < 0.0 || index.fract() != 0.0 {
        return None;
    }
    let target: &Map<String, Value> = records.get(index as usize)?.as_object()?;
    if target.get("type").and_then(Value::as_str) == Some("session") {
        return None;
    }
    target.get("id").cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_events::js::to_js_json;

    fn parse(lines: &[&str]) -> Vec<Value> {
        lines
            .iter()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect()
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
        let out: Vec<String> = records
            .iter()
            .map(|r| to_js_json(r).expect("json"))
            .collect();
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
        assert_eq!(records[0]["version"], 3);
        assert_eq!(records[2]["message"]["role"], "custom");
        assert!(!steps_for(3.0).ran());
    }
}
