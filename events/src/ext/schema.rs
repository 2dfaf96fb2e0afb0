//! JSON Schemas of what an extension writes or is sent in PXP/1, generated from the types
//! pith itself reads them with (spec: extensions.md §4 step 3). The committed copies under
//! `docs/extension-protocol/schema/` are for authors and their editors; a test fails when
//! they drift from the types (`PITH_UPDATE_SCHEMAS=1` rewrites them).

use serde_json::Value;

use super::{CommandDecl, Decision, InitializeResult, Manifest, ToolDecl};

/// Each schema with the file name it is committed under: the manifest (`extension.json`),
/// the `initialize` answer, a declared tool and command, and an `intercept` decision.
pub fn all() -> Vec<(&'static str, Value)> {
    fn of<T: schemars::JsonSchema>() -> Value {
        schemars::schema_for!(T).to_value()
    }
    vec![
        ("manifest.schema.json", of::<Manifest>()),
        ("initialize-result.schema.json", of::<InitializeResult>()),
        ("tool.schema.json", of::<ToolDecl>()),
        ("command.schema.json", of::<CommandDecl>()),
        ("intercept-decision.schema.json", of::<Decision>()),
    ]
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    fn dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/extension-protocol/schema")
    }

    /// The committed schemas are the ones the types give.
    #[test]
    fn committed_schemas_match_the_types() {
        let update = std::env::var_os("PITH_UPDATE_SCHEMAS").is_some();
        for (name, schema) in super::all() {
            let text = serde_json::to_string_pretty(&schema).expect("a schema is JSON") + "\n";
            let path = dir().join(name);
            if update {
                std::fs::write(&path, &text).expect("schema written");
                continue;
            }
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                committed == text,
                "{} differs from the types in pith_events::ext; run \
                 PITH_UPDATE_SCHEMAS=1 cargo test -p pith-events schemas to update it",
                path.display()
            );
        }
    }

    /// A manifest as the spec's example writes it validates its main fields' types.
    #[test]
    fn the_manifest_schema_names_pis_fields() {
        let all = super::all();
        let manifest = &all[0].1;
        let props = manifest["properties"].as_object().expect("properties");
        for field in [
            "name", "version", "protocol", "command", "env", "timeouts", "override",
        ] {
            assert!(props.contains_key(field), "{field} missing: {manifest}");
        }
        let decision = &all[4].1["properties"];
        for field in [
            "block",
            "reason",
            "input",
            "content",
            "appendSystemPrompt",
            "cancel",
        ] {
            assert!(decision.get(field).is_some(), "{field} missing: {decision}");
        }
    }
}
