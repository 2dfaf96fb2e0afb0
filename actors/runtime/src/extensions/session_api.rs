//! The extension → host session requests of PXP/1 (spec: extensions.md §1.2 "Extension →
//! host requests"): `session/appendEntry`, `session/sendMessage`, `session/getBranch`, and
//! the state `session_start` hands over (`leafId`, `customEntries`).

use std::collections::HashMap;

use serde_json::{Value, json};

use pith_events::{CustomMessage, UserContent};
use ractor::ActorRef;

use crate::agent::messages::AgentMsg;
use crate::envelope::Envelope;

use pith_store::{Entry, Leaf};

use crate::envelope::Origin;
use crate::writer::{Append, WriterRef};

/// The default and largest page of `session/getBranch`.
const PAGE: usize = 100;
const MAX_PAGE: usize = 1000;

/// The entries from the root to the leaf, in order.
fn branch(entries: &[Entry], leaf: &Leaf) -> Vec<Entry> {
    let Leaf::At(index) = leaf else {
        return Vec::new();
    };
    let by_id: HashMap<&str, &Entry> = entries.iter().map(|e| (e.id(), e)).collect();
    let mut path = Vec::new();
    let mut at = entries.get(*index);
    while let Some(e) = at {
        path.push(e.clone());
        at = e.parent().id().and_then(|p| by_id.get(p).copied());
        if path.len() > entries.len() {
            break;
        }
    }
    path.reverse();
    path
}

fn json_of(e: &Entry) -> Value {
    serde_json::from_str(e.raw()).unwrap_or(Value::Null)
}

/// `leafId` and the `custom` entries of `custom_types` on the current branch.
pub async fn start_state(
    writer: &WriterRef,
    from: &Origin,
    custom_types: &[String],
) -> (Option<String>, Vec<Value>) {
    let Ok(snap) = writer.snapshot(from).await else {
        return (None, Vec::new());
    };
    let path = branch(snap.entries(), &snap.leaf());
    let leaf = path.last().map(|e| e.id().to_owned());
    let custom = path
        .iter()
        .map(json_of)
        .filter(|v| {
            v["type"] == "custom"
                && v["customType"]
                    .as_str()
                    .is_some_and(|t| custom_types.iter().any(|c| c == t))
        })
        .collect();
    (leaf, custom)
}

/// Answers one session request; `Err` is the message of an invalid-params error.
pub async fn handle(
    writer: &WriterRef,
    agent: Option<&ActorRef<Envelope<AgentMsg>>>,
    from: &Origin,
    method: &str,
    params: &Value,
) -> Result<Value, String> {
    match method {
        "session/appendEntry" => {
            let custom_type = params["customType"]
                .as_str()
                .ok_or("customType must be a string")?
                .to_owned();
            let data = params.get("data").cloned();
            let id = writer
                .append(from, Append::Custom { custom_type, data })
                .await
                .map_err(|e| e.to_string())?;
            Ok(json!({ "entryId": id }))
        }
        "session/sendMessage" => {
            let custom_type = params["customType"]
                .as_str()
                .ok_or("customType must be a string")?
                .to_owned();
            let content: UserContent = serde_json::from_value(params["content"].clone())
                .map_err(|e| format!("content: {e}"))?;
            if let Some(agent) = agent {
                // pi's sendMessage: steered, queued or held by the Agent (§3.3).
                let message = CustomMessage {
                    custom_type,
                    content,
                    display: params["display"].as_bool().unwrap_or(true),
                    details: params.get("details").cloned(),
                    // The Agent stamps it with the session clock.
                    timestamp: None,
                };
                from.cast(
                    agent,
                    AgentMsg::CustomMessage {
                        message: Box::new(message),
                        deliver_as: params["deliverAs"].as_str().map(str::to_owned),
                        trigger_turn: params["triggerTurn"].as_bool().unwrap_or(false),
                    },
                );
                return Ok(json!({}));
            }
            let append = Append::CustomMessage {
                custom_type,
                content,
                display: params["display"].as_bool().unwrap_or(true),
                details: params.get("details").cloned(),
            };
            writer
                .append(from, append)
                .await
                .map_err(|e| e.to_string())?;
            Ok(json!({}))
        }
        "session/getBranch" => {
            let snap = writer.snapshot(from).await.map_err(|e| e.to_string())?;
            let types: Option<Vec<&str>> = params["types"]
                .as_array()
                .map(|t| t.iter().filter_map(Value::as_str).collect());
            let custom_type = params["customType"].as_str();
            let limit = params["limit"]
                .as_u64()
                .map_or(PAGE, |l| (l as usize).min(MAX_PAGE));
            let before = params["before"].as_str();
            let mut all: Vec<Value> = branch(snap.entries(), &snap.leaf())
                .iter()
                .map(json_of)
                .filter(|v| {
                    types
                        .as_ref()
                        .is_none_or(|t| v["type"].as_str().is_some_and(|ty| t.contains(&ty)))
                })
                .filter(|v| custom_type.is_none_or(|c| v["customType"] == c))
                .collect();
            if let Some(before) = before
                && let Some(at) = all.iter().position(|v| v["id"] == before)
            {
                all.truncate(at);
            }
            let start = all.len().saturating_sub(limit);
            let page = all.split_off(start);
            let mut result = json!({ "entries": page });
            if start > 0
                && let Some(first) = result["entries"][0]["id"].as_str()
            {
                result["next"] = json!(first);
            }
            Ok(result)
        }
        _ => Err(format!("unknown method {method}")),
    }
}
