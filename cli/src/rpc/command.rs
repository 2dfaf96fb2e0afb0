//! The commands a client sends, decoded from one input line (spec: agent-and-events.md §9).

use serde::Deserialize;
use serde_json::Value;

/// One rpc command: `type` picks the variant, the other members are its fields (pi's names).
/// Members a command does not use, `id` included, are ignored.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// Start a run, or queue `message` while one streams (`streamingBehavior`).
    #[serde(rename_all = "camelCase")]
    Prompt {
        /// The prompt text.
        message: String,
        /// pi's image blocks; pith takes none yet.
        #[serde(default)]
        images: Option<Vec<Value>>,
        /// `"steer"` or `"followUp"`: what to do with the prompt while a run streams.
        #[serde(default)]
        streaming_behavior: Option<String>,
    },
    /// Queue a steering message.
    Steer {
        /// The text.
        message: String,
        /// Image blocks (refused).
        #[serde(default)]
        images: Option<Vec<Value>>,
    },
    /// Queue a follow-up.
    FollowUp {
        /// The text.
        message: String,
        /// Image blocks (refused).
        #[serde(default)]
        images: Option<Vec<Value>>,
    },
    /// Abort the run and wait until the agent is idle.
    Abort,
    /// A new session (`/new`).
    #[serde(rename_all = "camelCase")]
    NewSession {
        /// The new header's `parentSession` (pith cannot set it yet).
        #[serde(default)]
        parent_session: Option<String>,
    },
    /// The session's state.
    GetState,
    /// Use `provider/modelId` from the next request on.
    #[serde(rename_all = "camelCase")]
    SetModel {
        /// Provider name.
        provider: String,
        /// Model id.
        model_id: String,
    },
    /// The next available model.
    CycleModel,
    /// Every model with a key.
    GetAvailableModels,
    /// A thinking level, clamped to the model.
    SetThinkingLevel {
        /// `off` … `xhigh`.
        level: String,
    },
    /// The next thinking level the model supports.
    CycleThinkingLevel,
    /// `all` or `one-at-a-time` for steering.
    SetSteeringMode {
        /// The mode.
        mode: String,
    },
    /// `all` or `one-at-a-time` for follow-ups.
    SetFollowUpMode {
        /// The mode.
        mode: String,
    },
    /// Compact now.
    #[serde(rename_all = "camelCase")]
    Compact {
        /// The focus of the summary.
        #[serde(default)]
        custom_instructions: Option<String>,
    },
    /// Turn automatic compaction on or off.
    SetAutoCompaction {
        /// On or off.
        enabled: bool,
    },
    /// Turn automatic retries on or off.
    SetAutoRetry {
        /// On or off.
        enabled: bool,
    },
    /// Cancel the wait before a retry.
    AbortRetry,
    /// Run a shell command as the user's `!command` (`!!command` with `excludeFromContext`,
    /// pi ≥ 0.76).
    Bash {
        /// The command line.
        command: String,
        /// Recorded but kept out of the model's context.
        #[serde(rename = "excludeFromContext", default)]
        exclude_from_context: bool,
    },
    /// Cancel the running shell command.
    AbortBash,
    /// Message, token and cost counts of the context.
    GetSessionStats,
    /// Write the session as HTML.
    #[serde(rename_all = "camelCase")]
    ExportHtml {
        /// Where; pi's default name when absent.
        #[serde(default)]
        output_path: Option<String>,
    },
    /// Open another session file.
    #[serde(rename_all = "camelCase")]
    SwitchSession {
        /// Its path.
        session_path: String,
    },
    /// A new session holding the path before a user message.
    #[serde(rename_all = "camelCase")]
    Fork {
        /// The user message's entry id.
        entry_id: String,
    },
    /// A new session holding the path through the leaf.
    Clone,
    /// Every user message of the session, for `fork`.
    GetForkMessages,
    /// The text of the last assistant reply.
    GetLastAssistantText,
    /// Name the session.
    SetSessionName {
        /// The name (trimmed; empty is refused).
        name: String,
    },
    /// The context's messages.
    GetMessages,
    /// The slash commands a prompt may start with.
    GetCommands,
    /// Every entry of the session, or those after `since` in file order (pi ≥ 0.80.3).
    GetEntries {
        /// An entry id: only the entries after it.
        #[serde(default)]
        since: Option<String>,
    },
    /// The session's tree of entries (pi ≥ 0.80.3).
    GetTree,
    /// Empty both queues and answer what was in them (pi ≥ 0.84.4).
    ClearQueue,
    /// The thinking levels the model offers (pi ≥ 0.81).
    GetAvailableThinkingLevels,
    /// pith's `reload {name?}`: the extensions (or the one named) start again (spec:
    /// extensions.md §1.2 "Hot reload"); answered with `{reloaded: [names]}`.
    Reload {
        /// One extension; all when absent.
        #[serde(default)]
        name: Option<String>,
    },
    /// pith's `mcp {action?, server?}`: the MCP servers' states (no `action`), or
    /// `reconnect`/`enable`/`disable` of `server` first (pi's `/mcp`; docs/rpc.md).
    Mcp {
        /// `reconnect`, `enable` or `disable`; none: the states only.
        #[serde(default)]
        action: Option<String>,
        /// The server the action is for.
        #[serde(default)]
        server: Option<String>,
    },
    /// A `type` pith does not know (answered `Unknown command: <type>`).
    #[serde(other)]
    Unknown,
}

/// What one input line is.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A command; `id` is echoed in its response as given (any JSON value).
    Command {
        /// The client's `id`, if any.
        id: Option<Value>,
        /// The `type`, as the response's `command`.
        name: String,
        /// The decoded command.
        command: Command,
    },
    /// A known `type` whose fields do not fit: answered as that command's error.
    Invalid {
        /// The client's `id`, if any.
        id: Option<Value>,
        /// The `type`.
        name: String,
        /// What does not fit.
        error: String,
    },
    /// A `type` pith does not know, or none: `Unknown command: <type>`, with the id as
    /// every response (pi ≥ 0.79.7).
    Unknown {
        /// The client's `id`, if any.
        id: Option<Value>,
        /// The `type` as sent; `None` when absent (pi then writes `undefined` in the text
        /// and leaves `command` out).
        name: Option<Value>,
    },
    /// Not JSON: `Failed to parse command: …`.
    NotJson(String),
    /// An `extension_ui_response {id, value | confirmed | cancelled}`: the answer to an
    /// extension's dialog.
    UiResponse(Value),
}

/// Decodes one line (without its LF).
pub fn parse(line: &str) -> Line {
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Line::NotJson(e.to_string()),
    };
    let (id, kind) = match &value {
        Value::Object(o) => (o.get("id").cloned(), o.get("type").cloned()),
        _ => (None, None),
    };
    let name = match kind {
        Some(Value::String(s)) if s == "extension_ui_response" => return Line::UiResponse(value),
        Some(Value::String(s)) => s,
        other => return Line::Unknown { id, name: other },
    };
    match serde_json::from_value::<Command>(value) {
        Ok(Command::Unknown) => Line::Unknown {
            id,
            name: Some(Value::String(name)),
        },
        Ok(command) => Line::Command { id, name, command },
        Err(e) => Line::Invalid {
            id,
            name,
            error: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_command_keeps_its_id_and_type() {
        assert_eq!(
            parse(r#"{"id":7,"type":"prompt","message":"hi","streamingBehavior":"steer"}"#),
            Line::Command {
                id: Some(json!(7)),
                name: "prompt".into(),
                command: Command::Prompt {
                    message: "hi".into(),
                    images: None,
                    streaming_behavior: Some("steer".into()),
                },
            }
        );
        assert_eq!(
            parse(r#"{"type":"fork","entryId":"ab12"}"#),
            Line::Command {
                id: None,
                name: "fork".into(),
                command: Command::Fork {
                    entry_id: "ab12".into()
                },
            }
        );
    }

    #[test]
    fn unknown_types_and_bad_fields_are_told_apart() {
        assert_eq!(
            parse(r#"{"id":"x","type":"fly"}"#),
            Line::Unknown {
                id: Some(json!("x")),
                name: Some(json!("fly"))
            }
        );
        assert_eq!(
            parse("[1]"),
            Line::Unknown {
                id: None,
                name: None
            }
        );
        assert_eq!(
            parse(r#"{"type":5}"#),
            Line::Unknown {
                id: None,
                name: Some(json!(5))
            }
        );
        assert_eq!(
            parse(r#"{"id":"a","type":"bash"}"#),
            Line::Invalid {
                id: Some(json!("a")),
                name: "bash".into(),
                error: "missing field `command`".into(),
            }
        );
        assert!(matches!(parse("{nope"), Line::NotJson(_)));
        assert_eq!(
            parse(r#"{"type":"extension_ui_response","id":"u"}"#),
            Line::UiResponse(json!({"type":"extension_ui_response","id":"u"}))
        );
    }
}
