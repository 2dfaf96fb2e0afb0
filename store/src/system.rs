//! System messages (pi ≥ 0.86): the prompt and tool state a session records as `role:"system"`
//! messages, and their replay into one message, pi-ai's `getCurrentSystemMessage`
//! (spec: format.md §2.3 `compaction.systemMessage`, §3.3). The replay is the compaction
//! checkpoint and what a provider without mid-conversation system messages receives.

use indexmap::IndexMap;
use serde_json::{Map, Value};

/// `contentText(content)`: a string as is, else the `text` of the `type:"text"` blocks joined
/// with a newline (a block without text joins as `""`, as `Array.join` writes `undefined`).
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .map(|b| match b.get("text") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => pith_events::js::to_js_json(other).unwrap_or_default(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Replays the `system` messages among `messages` (JSON objects, in context order) into one:
/// the non-empty `content` texts joined by a blank line; `sections` patched in order (a `null`
/// value removes a section; a changed one keeps its place, a removed and re-added one moves
/// last, as in a JS `Map`),
/// present only when one is left; `toolsAdded` = the tools declared after every removal and
/// addition (a later declaration of a name replaces the earlier one in its place), present
/// only when one is left; `timestamp` = the first system message's. `None` when there is no
/// system message and no tool, as pi returns `undefined`.
///
/// Key order is pi-ai's: `role, content, sections?, toolsAdded?, timestamp`.
pub fn current_system_message<'a>(messages: impl IntoIterator<Item = &'a Value>) -> Option<Value> {
    let mut content: Vec<String> = Vec::new();
    let mut sections: IndexMap<String, Value> = IndexMap::new();
    let mut tools: IndexMap<String, Value> = IndexMap::new();
    let mut timestamp: Option<Value> = None;
    for m in messages {
        if m.get("role").and_then(Value::as_str) != Some("system") {
            continue;
        }
        if timestamp.is_none() {
            timestamp = m.get("timestamp").filter(|t| !t.is_null()).cloned();
        }
        let text = content_text(m.get("content"));
        if !text.is_empty() {
            content.push(text);
        }
        if let Some(Value::Object(patch)) = m.get("sections") {
            for (name, value) in patch {
                if value.is_null() {
                    sections.shift_remove(name);
                } else {
                    // `Map.set` of an existing key keeps its place.
                    sections.insert(name.clone(), value.clone());
                }
            }
        }
        // Tools are keyed by `name` (a JS Map: a tool without a name shares the `undefined` key).
        let tool_key = |t: &Value| pith_events::js::to_js_json(&t.get("name")).unwrap_or_default();
        if let Some(Value::Array(removed)) = m.get("toolsRemoved") {
            for t in removed {
                tools.shift_remove(&tool_key(t));
            }
        }
        if let Some(Value::Array(added)) = m.get("toolsAdded") {
            for t in added {
                // `Map.set` of an existing key keeps its place.
                tools.insert(tool_key(t), t.clone());
            }
        }
    }
    if timestamp.is_none() && tools.is_empty() {
        return None;
    }
    let mut out = Map::new();
    out.insert("role".into(), Value::String("system".into()));
    out.insert("content".into(), Value::String(content.join("\n\n")));
    if !sections.is_empty() {
        out.insert(
            "sections".into(),
            Value::Object(sections.into_iter().collect()),
        );
    }
    if !tools.is_empty() {
        out.insert(
            "toolsAdded".into(),
            Value::Array(tools.into_values().collect()),
        );
    }
    out.insert(
        "timestamp".into(),
        timestamp.unwrap_or_else(|| Value::from(0)),
    );
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Example G of tree-and-context.md §8: a full message, then a patch.
    #[test]
    fn patches_replay_in_order() {
        let s1 = json!({"role":"system","content":"","sections":{"preamble":"P1","tools":"T"},"timestamp":1,
            "toolsAdded":[{"name":"read"},{"name":"bash"}]});
        let user = json!({"role":"user","content":"q","timestamp":2});
        let s2 = json!({"role":"system","content":"extra","sections":{"preamble":"P2","docs":null},"timestamp":3,
            "toolsRemoved":[{"name":"bash"}]});
        let replay = current_system_message([&s1, &user, &s2]).expect("a system message");
        assert_eq!(
            pith_events::js::to_js_json(&replay).expect("json"),
            r#"{"role":"system","content":"extra","sections":{"preamble":"P2","tools":"T"},"toolsAdded":[{"name":"read"}],"timestamp":1}"#
        );
        assert_eq!(current_system_message([&user]), None);
    }

    #[test]
    fn a_section_set_again_keeps_its_place_unless_removed_first() {
        let a = json!({"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],
            "sections":{"x":"1","y":"2"},"timestamp":1});
        let b = json!({"role":"system","content":"","sections":{"x":null},"timestamp":2});
        let c = json!({"role":"system","content":"","sections":{"x":"3"},"timestamp":3});
        let replay = current_system_message([&a, &b, &c]).expect("a system message");
        assert_eq!(replay["content"], "a\nb");
        assert_eq!(
            pith_events::js::to_js_json(&replay["sections"]).expect("json"),
            r#"{"y":"2","x":"3"}"#
        );
    }
}
