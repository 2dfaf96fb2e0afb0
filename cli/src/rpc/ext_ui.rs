//! Extension notices as pi's rpc lines (spec: extensions.md §1.2 "Dialogs", pi's
//! `rpc-types.d.ts`): `extension_error {extensionPath, event, error}` and
//! `extension_ui_request {id, method, …}` with pi's field names (`notifyType`, `statusKey`,
//! `statusText`, `timeout`), so pi's own rpc dialog clients work against pith.

use serde_json::{Map, Value, json};

use pith_actors::event::ExtensionNotice;

/// The line for one notice.
pub fn notice_json(notice: &ExtensionNotice) -> Value {
    match notice {
        ExtensionNotice::Error {
            extension,
            event,
            error,
        } => {
            json!({"type":"extension_error","extensionPath":extension,"event":event,"error":error})
        }
        ExtensionNotice::UiRequest { id, method, params } => {
            let mut out = Map::new();
            out.insert("type".into(), json!("extension_ui_request"));
            out.insert("id".into(), json!(id));
            out.insert("method".into(), json!(method));
            if let Some(p) = params.as_object() {
                for (k, v) in p {
                    let key = match (method.as_str(), k.as_str()) {
                        (_, "timeoutMs") => "timeout",
                        ("notify", "level") => "notifyType",
                        ("setStatus", "key") => "statusKey",
                        ("setStatus", "text") => "statusText",
                        (_, other) => other,
                    };
                    out.insert(key.to_owned(), v.clone());
                }
            }
            Value::Object(out)
        }
    }
}
