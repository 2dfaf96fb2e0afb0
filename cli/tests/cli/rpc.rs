//! `pith --mode rpc`: a client speaking pi's protocol to the binary on the offline model
//! (spec: agent-and-events.md §9).

mod client;
mod flood;
mod pi_client;

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use client::{Client, faux_model, kinds, reply, session_files, types, wait_for};

/// pi ≥ 0.99's answer to an accepted `prompt`/`steer`/`follow_up`.
fn accepted(id: Option<&str>, command: &str, disposition: &str) -> Value {
    let mut v = json!({"type": "response", "command": command, "success": true,
                       "data": {"disposition": disposition}});
    if let Some(id) = id {
        v["id"] = json!(id);
    }
    v
}

/// Prompts and returns everything up to `agent_end`, response first; the `agent_settled`
/// that follows is read too (and left out).
fn prompt(client: &mut Client, text: &str) -> Vec<Value> {
    client.send(json!({"type": "prompt", "message": text}));
    let mut seen = client.until(|v| v["type"] == "agent_settled");
    assert_eq!(seen[0], accepted(None, "prompt", "started"));
    assert_eq!(
        seen.pop().unwrap(),
        json!({"type": "agent_settled", "aborted": false})
    );
    seen
}

#[test]
fn a_prompt_is_answered_then_streams_pis_events_and_the_state_follows() {
    let mut client = Client::start(json!([reply("hi there")]), json!({}));
    client.send(json!({"id": "p1", "type": "prompt", "message": "hello"}));
    let mut seen = client.until(|v| v["type"] == "agent_settled");
    assert_eq!(seen[0], accepted(Some("p1"), "prompt", "started"));
    assert_eq!(
        seen.pop().unwrap(),
        json!({"type": "agent_settled", "aborted": false})
    );
    assert_eq!(
        types(&seen[1..]),
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_update",
            "message_update",
            "message_update",
            "message_update",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
    assert_eq!(seen.last().unwrap()["willRetry"], false);
    // pi 1.6.0's wire form: the agent loop's bare `turn_start`, `turn_end` without
    // `turnIndex`, the streaming `message_start` with `stopReason: "pending"`, and
    // delta-only `message_update`s with the usage so far (spec §8.1).
    let end = seen.last().unwrap();
    let zero = json!({
        "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    });
    let update = |event: Value| json!({"type": "message_update", "usage": zero, "assistantMessageEvent": event});
    assert_eq!(seen[2], json!({"type": "turn_start"}));
    assert_eq!(
        seen[5],
        json!({"type": "message_start", "message": {
            "role": "assistant", "content": [],
            "api": "faux", "provider": "faux", "model": "faux-1",
            "usage": zero, "stopReason": "pending",
            "timestamp": end["messages"][1]["timestamp"]
        }})
    );
    assert_eq!(
        seen[6..10],
        [
            update(json!({"type": "text_start", "contentIndex": 0})),
            update(json!({"type": "text_delta", "contentIndex": 0, "delta": "hi "})),
            update(json!({"type": "text_delta", "contentIndex": 0, "delta": "there"})),
            update(json!({"type": "text_end", "contentIndex": 0, "content": "hi there"})),
        ]
    );
    assert_eq!(
        seen[11],
        json!({"type": "turn_end", "message": end["messages"][1], "toolResults": []})
    );
    let ts = |i: usize| end["messages"][i]["timestamp"].clone();
    assert_eq!(
        end["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "hello"}], "timestamp": ts(0)},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "hi there"}],
                "api": "faux", "provider": "faux", "model": "faux-1",
                "usage": {
                    "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
                },
                "stopReason": "stop",
                "timestamp": ts(1),
                // pi ≥ 1.x's agent loop adds the requested level to every final reply.
                "thinkingLevel": "off"
            }
        ])
    );

    let files = session_files(&client.agent());
    assert_eq!(files.len(), 1);
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&files[0])
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        client.call(json!({"id": 2, "type": "get_state"})),
        json!({
            "id": 2, "type": "response", "command": "get_state", "success": true,
            "data": {
                "model": faux_model(),
                "thinkingLevel": "off",
                "isStreaming": false,
                "isCompacting": false,
                "steeringMode": "one-at-a-time",
                "followUpMode": "one-at-a-time",
                "sessionFile": files[0].to_string_lossy(),
                "sessionId": header["id"],
                "autoCompactionEnabled": true,
                "messageCount": 2,
                "pendingMessageCount": 0
            }
        })
    );
    assert_eq!(
        client.call(json!({"type": "get_messages"})),
        json!({
            "type": "response", "command": "get_messages", "success": true,
            "data": {"messages": end["messages"]}
        })
    );
    assert_eq!(
        client.call(json!({"type": "get_last_assistant_text"})),
        json!({
            "type": "response", "command": "get_last_assistant_text", "success": true,
            "data": {"text": "hi there"}
        })
    );
    assert_eq!(
        client.call(json!({"type": "get_session_stats"}))["data"],
        json!({
            "sessionFile": files[0].to_string_lossy(),
            "sessionId": header["id"],
            "userMessages": 1, "assistantMessages": 1, "toolCalls": 0, "toolResults": 0,
            "totalMessages": 2,
            "tokens": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            "cost": 0,
            // The last reply reports no usage, and nothing follows it to estimate.
            "contextUsage": {"tokens": 0, "contextWindow": 128000, "percent": 0}
        })
    );
    // stdin's end is a quit: status 0, everything on disk.
    let (status, root) = client.close();
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        kinds(&session_files(&root.path().join("agent"))[0]),
        [
            "session",
            "model_change",
            "thinking_level_change",
            "user",
            "assistant"
        ]
    );
}

#[test]
fn names_bash_and_compaction() {
    let settings = json!({"compaction": {"keepRecentTokens": 4}});
    let script = json!([
        reply("first reply"),
        reply("second reply"),
        reply("the summary")
    ]);
    let mut client = Client::start(script, settings);
    assert_eq!(
        client.call(json!({"id": "n", "type": "set_session_name", "name": "  "})),
        json!({
            "id": "n", "type": "response", "command": "set_session_name", "success": false,
            "error": "Session name cannot be empty"
        })
    );
    let (events, response) =
        client.call_with_events(json!({"type": "set_session_name", "name": " named "}));
    assert_eq!(
        events,
        [json!({"type": "session_info_changed", "name": "named"})]
    );
    assert_eq!(
        response,
        json!({"type": "response", "command": "set_session_name", "success": true})
    );
    assert_eq!(
        client.call(json!({"type": "get_state"}))["data"]["sessionName"],
        "named"
    );
    // pi ≥ 0.82 streams the output as `bash_execution_update` with the request's id first.
    let (updates, response) =
        client.call_with_events(json!({"id": "b", "type": "bash", "command": "echo hi; exit 3"}));
    assert_eq!(
        updates,
        [json!({"type": "bash_execution_update", "id": "b", "delta": "hi\n"})]
    );
    assert_eq!(
        response,
        json!({
            "id": "b", "type": "response", "command": "bash", "success": true,
            "data": {"output": "hi\n", "exitCode": 3, "cancelled": false, "truncated": false}
        })
    );
    prompt(&mut client, "one");
    prompt(&mut client, "two");
    let forks = client.call(json!({"type": "get_fork_messages"}));
    let second = forks["data"]["messages"][1]["entryId"].clone();
    assert_eq!(
        forks["data"]["messages"],
        json!([
            {"entryId": forks["data"]["messages"][0]["entryId"], "text": "one"},
            {"entryId": second, "text": "two"}
        ])
    );
    let result = json!({
        "summary": "the summary",
        "firstKeptEntryId": second,
        "tokensBefore": 0,
        // The summary, the kept prompt and reply: pi's estimateMessagesTokens.
        "estimatedTokensAfter": 7,
        // The offline model reports no tokens.
        "usage": {
            "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
        },
        "details": {"readFiles": [], "modifiedFiles": []}
    });
    let (events, response) = client
        .call_with_events(json!({"id": "c", "type": "compact", "customInstructions": "focus"}));
    assert_eq!(
        events,
        [
            json!({"type": "compaction_start", "reason": "manual"}),
            json!({
                "type": "compaction_end", "reason": "manual", "result": result,
                "aborted": false, "willRetry": false
            })
        ]
    );
    assert_eq!(
        response,
        json!({"id": "c", "type": "response", "command": "compact", "success": true, "data": result})
    );
    let messages = client.call(json!({"type": "get_messages"}))["data"]["messages"].clone();
    let roles: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["compactionSummary", "user", "assistant"]);
    let (status, root) = client.close();
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        kinds(&session_files(&root.path().join("agent"))[0]),
        [
            "session",
            "model_change",
            "thinking_level_change",
            "session_info",
            "bashExecution",
            "user",
            "assistant",
            "user",
            "assistant",
            "compaction"
        ]
    );
}

#[test]
fn new_session_fork_and_switch_back() {
    let script = json!([reply("a1"), reply("a2")]);
    let mut client = Client::start(script, json!({}));
    prompt(&mut client, "first question");
    prompt(&mut client, "second question");
    let state = client.call(json!({"type": "get_state"}))["data"].clone();
    let (first_id, first_file) = (state["sessionId"].clone(), state["sessionFile"].clone());

    assert_eq!(
        client.call(json!({"id": 1, "type": "new_session"})),
        json!({
            "id": 1, "type": "response", "command": "new_session", "success": true,
            "data": {"cancelled": false}
        })
    );
    let state = client.call(json!({"type": "get_state"}))["data"].clone();
    assert_ne!(state["sessionId"], first_id);
    assert_ne!(state["sessionFile"], first_file);
    assert_eq!(state["messageCount"], 0);

    assert_eq!(
        client.call(json!({"type": "switch_session", "sessionPath": first_file})),
        json!({
            "type": "response", "command": "switch_session", "success": true,
            "data": {"cancelled": false}
        })
    );
    let state = client.call(json!({"type": "get_state"}))["data"].clone();
    assert_eq!(state["sessionId"], first_id);
    assert_eq!(state["messageCount"], 4);

    let forks = client.call(json!({"type": "get_fork_messages"}))["data"]["messages"].clone();
    assert_eq!(forks[1]["text"], "second question");
    assert_eq!(
        client.call(json!({"type": "fork", "entryId": forks[1]["entryId"]})),
        json!({
            "type": "response", "command": "fork", "success": true,
            "data": {"text": "second question", "cancelled": false}
        })
    );
    let state = client.call(json!({"type": "get_state"}))["data"].clone();
    assert_ne!(state["sessionId"], first_id);
    // The fork holds what came before the forked message.
    assert_eq!(state["messageCount"], 2);
    assert_eq!(
        client.call(json!({"type": "fork", "entryId": "nope"})),
        json!({
            "type": "response", "command": "fork", "success": false,
            "error": "Invalid entry ID for forking"
        })
    );
    assert_eq!(
        client.call(json!({"type": "clone"})),
        json!({"type": "response", "command": "clone", "success": true, "data": {"cancelled": false}})
    );
    assert_eq!(
        client.call(json!({"type": "get_state"}))["data"]["messageCount"],
        2
    );
    let (status, _root) = client.close();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn protocol_errors_ids_and_framing() {
    let mut client = Client::start(json!([]), json!({}));
    client.send_raw("{not json\n");
    let parse = client.next();
    assert_eq!(parse["command"], "parse");
    assert_eq!(parse["success"], false);
    assert!(
        parse["error"]
            .as_str()
            .unwrap()
            .starts_with("Failed to parse command: "),
        "{parse}"
    );
    // pi ≥ 0.79.7 repeats the id, also here.
    assert_eq!(
        client.call(json!({"id": "u", "type": "teleport"})),
        json!({"id": "u", "type": "response", "command": "teleport", "success": false, "error": "Unknown command: teleport"})
    );
    assert_eq!(
        client.call(json!({"id": "u"})),
        json!({"id": "u", "type": "response", "success": false, "error": "Unknown command: undefined"})
    );
    assert_eq!(
        client.call(json!({"id": {"n": [1]}, "type": "get_commands"})),
        json!({
            "id": {"n": [1]}, "type": "response", "command": "get_commands", "success": true,
            "data": {"commands": [{"name": "mcp",
                "description": "Show MCP servers and their tools (/mcp reconnect|enable|disable <server>)",
                "source": "extension", "sourceInfo": {"path": "builtin:mcp", "source": "builtin",
                "scope": "temporary", "origin": "top-level"}}]}
        })
    );
    assert_eq!(
        client.call(json!({"id": 9, "type": "bash"})),
        json!({
            "id": 9, "type": "response", "command": "bash", "success": false,
            "error": "missing field `command`"
        })
    );
    assert_eq!(
        client.call(json!({"id": 10, "type": "set_model", "provider": "nowhere", "modelId": "x"})),
        json!({
            "id": 10, "type": "response", "command": "set_model", "success": false,
            "error": "Model not found: nowhere/x"
        })
    );
    assert_eq!(
        client.call(json!({"type": "cycle_model"})),
        json!({"type": "response", "command": "cycle_model", "success": true, "data": null})
    );
    assert_eq!(
        client.call(json!({"type": "cycle_thinking_level"})),
        json!({"type": "response", "command": "cycle_thinking_level", "success": true, "data": null})
    );
    // Clamped: the offline model does not think.
    assert_eq!(
        client.call(json!({"type": "set_thinking_level", "level": "high"})),
        json!({"type": "response", "command": "set_thinking_level", "success": true})
    );
    assert_eq!(
        client.call(json!({"type": "get_state"}))["data"]["thinkingLevel"],
        "off"
    );
    assert_eq!(
        client.call(json!({"type": "get_available_models"}))["data"],
        json!({"models": [faux_model()]})
    );
    assert_eq!(
        client.call(json!({"type": "set_steering_mode", "mode": "one-at-a-time"})),
        json!({"type": "response", "command": "set_steering_mode", "success": true})
    );
    // Saved in settings.json as pi saves it, and in effect at once.
    assert_eq!(
        client.call(json!({"type": "set_follow_up_mode", "mode": "all"}))["success"],
        true
    );
    assert_eq!(
        client.call(json!({"type": "get_state"}))["data"]["followUpMode"],
        "all"
    );
    assert_eq!(
        client.call(json!({"type": "get_last_assistant_text"})),
        json!({"type": "response", "command": "get_last_assistant_text", "success": true, "data": {}})
    );
    // CRLF is one line; U+2028 and U+2029 inside a string are not line ends.
    client.send_raw("{\"type\":\"get_commands\",\"id\":\"crlf\"}\r\n");
    assert_eq!(client.next()["id"], "crlf");
    client.send_raw("{\"type\":\"set_session_name\",\"name\":\"a\u{2028}b\u{2029}c\"}\n");
    assert_eq!(
        client.next(),
        json!({"type": "session_info_changed", "name": "a\u{2028}b\u{2029}c"})
    );
    assert_eq!(client.next()["success"], true);
    client.assert_quiet(Duration::from_millis(200));
    let (status, _root) = client.close();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_prompt_while_streaming_needs_a_streaming_behavior() {
    let slow = json!({"content": [{"type": "text", "text": "slow"}], "delayMs": 2000});
    let script = json!([slow, reply("after steer"), reply("after follow-up")]);
    let mut client = Client::start(script, json!({}));
    assert_eq!(
        client.call(json!({"type": "prompt", "message": "first"})),
        accepted(None, "prompt", "started")
    );
    client.until(|v| v["type"] == "message_end");
    let (_, refused) =
        client.call_with_events(json!({"id": "x", "type": "prompt", "message": "again"}));
    assert_eq!(
        refused,
        json!({
            "id": "x", "type": "response", "command": "prompt", "success": false,
            "error": "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
        })
    );
    let (events, response) = client.call_with_events(
        json!({"id": "s", "type": "prompt", "message": "steered", "streamingBehavior": "steer"}),
    );
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "queue_update", "steering": ["steered"], "followUp": []})
    );
    assert_eq!(response, accepted(Some("s"), "prompt", "queued"));
    let (events, response) =
        client.call_with_events(json!({"type": "follow_up", "message": "later"}));
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "queue_update", "steering": ["steered"], "followUp": ["later"]})
    );
    assert_eq!(response, accepted(None, "follow_up", "queued"));
    // The reply still streams: its events may come before the response.
    let (_, state) = client.call_with_events(json!({"type": "get_state"}));
    let state = state["data"].clone();
    assert_eq!(
        (&state["isStreaming"], &state["pendingMessageCount"]),
        (&json!(true), &json!(2))
    );
    let rest = client.until(|v| v["type"] == "agent_end");
    let end = rest.last().unwrap();
    let texts: Vec<Value> = end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["text"].clone())
        .collect();
    assert_eq!(
        texts,
        [
            "first",
            "slow",
            "steered",
            "after steer",
            "later",
            "after follow-up"
        ]
    );
    assert!(rest.contains(&json!({"type": "queue_update", "steering": [], "followUp": []})));
    let (status, _root) = client.close();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn abort_waits_for_the_run_to_end() {
    let slow = json!({"content": [{"type": "text", "text": "never"}], "delayMs": 5000});
    let mut client = Client::start(json!([slow]), json!({}));
    prompt_started(&mut client);
    client.send(json!({"id": "a", "type": "abort"}));
    let seen = client.until(|v| v["type"] == "response");
    assert_eq!(
        seen.last().unwrap(),
        &json!({"id": "a", "type": "response", "command": "abort", "success": true})
    );
    let end = seen
        .iter()
        .find(|v| v["type"] == "agent_end")
        .expect("agent_end before the response");
    assert_eq!(end["messages"][1]["stopReason"], "aborted");
    // Events after agent_end may come before the response.
    let (_, state) = client.call_with_events(json!({"type": "get_state"}));
    assert_eq!(state["data"]["isStreaming"], false);
}

#[test]
fn abort_bash_cancels_the_running_command() {
    let mut client = Client::start(json!([]), json!({}));
    client.send(json!({"id": "b", "type": "bash", "command": "echo started; sleep 20"}));
    assert_eq!(
        client.next(),
        json!({"type": "bash_execution_update", "id": "b", "delta": "started\n"})
    );
    assert_eq!(
        client.call(json!({"type": "abort_bash"})),
        json!({"type": "response", "command": "abort_bash", "success": true})
    );
    let bash = client.next();
    assert_eq!(
        bash,
        json!({
            "id": "b", "type": "response", "command": "bash", "success": true,
            "data": {"output": bash["data"]["output"], "cancelled": true, "truncated": false}
        })
    );
}

fn prompt_started(client: &mut Client) {
    assert_eq!(
        client.call(json!({"type": "prompt", "message": "go"})),
        accepted(None, "prompt", "started")
    );
    client.until(|v| v["type"] == "message_end");
    // The reply streams: its events may come before the response.
    let (_, state) = client.call_with_events(json!({"type": "get_state"}));
    assert_eq!(state["data"]["isStreaming"], true);
}

#[test]
fn sigterm_and_sighup_end_with_pis_statuses() {
    for (signal, code) in [("-TERM", 143), ("-HUP", 129)] {
        let mut client = Client::start(json!([]), json!({}));
        client.call(json!({"type": "get_state"}));
        let pid = client.child.id().to_string();
        let killed = Command::new("kill").args([signal, &pid]).status().unwrap();
        assert!(killed.success());
        assert_eq!(wait_for(&mut client.child).code(), Some(code), "{signal}");
    }
}

#[test]
fn compact_with_nothing_to_summarize_fails_as_pi_1_6_does() {
    // One short turn fits the default 20,000 kept tokens: pi 1.6.0 asks no model for a summary
    // and answers with its error (compaction.md §4 step 7), as checked against pi 1.6.0 over rpc.
    let mut client = Client::start(json!([reply("a1"), reply("never asked")]), json!({}));
    prompt(&mut client, "hi");
    let (seen, response) = client.call_with_events(json!({"id": "c", "type": "compact"}));
    assert_eq!(
        seen,
        [
            json!({"type": "compaction_start", "reason": "manual"}),
            json!({"type": "compaction_end", "reason": "manual", "aborted": false, "willRetry": false,
                "errorMessage": "Compaction failed: Nothing to compact (session too small)"}),
        ]
    );
    assert_eq!(
        response,
        json!({"id": "c", "type": "response", "command": "compact", "success": false,
            "error": "Nothing to compact (session too small)"})
    );
    let (_, root) = client.close();
    let file = session_files(&root.path().join("agent")).pop().unwrap();
    assert_eq!(
        kinds(&file),
        [
            "session",
            "model_change",
            "thinking_level_change",
            "user",
            "assistant"
        ]
    );
}

#[test]
fn a_failed_summary_request_is_retried_and_announced_as_pi_1_6_does() {
    // The same script, settings and commands as a run of pi 1.6.0 over rpc against
    // scripts/mock-llm.py (a 500, then the summary): pi's events, in pi's order.
    let boom = r#"500: {"message":"boom","type":"server_error"}"#;
    let mut client = Client::start(
        json!([reply("a1"), reply("a2"), {"content": [], "errorMessage": boom}, reply("the summary")]),
        json!({"retry": {"baseDelayMs": 10}, "compaction": {"keepRecentTokens": 2}}),
    );
    prompt(&mut client, "hi");
    prompt(&mut client, "again");
    let (seen, response) = client.call_with_events(json!({"id": "c", "type": "compact"}));
    assert_eq!(
        seen[..4],
        [
            json!({"type": "compaction_start", "reason": "manual"}),
            json!({"type": "summarization_retry_scheduled", "attempt": 1, "maxAttempts": 3,
                "delayMs": 10, "errorMessage": boom}),
            json!({"type": "summarization_retry_attempt_start", "source": "compaction",
                "reason": "manual"}),
            json!({"type": "summarization_retry_finished"}),
        ]
    );
    assert_eq!(seen[4]["type"], "compaction_end");
    assert_eq!(seen[4]["result"]["summary"], "the summary");
    // pi 1.6.0's result members, in its order; the usage is the summary request's (the faux
    // model reports none), recorded on the entry too.
    assert_eq!(
        seen[4]["result"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        [
            "summary",
            "firstKeptEntryId",
            "tokensBefore",
            "estimatedTokensAfter",
            "usage",
            "details"
        ]
    );
    assert_eq!(
        (&response["success"], &response["data"]["summary"]),
        (&json!(true), &json!("the summary"))
    );
    let (_, root) = client.close();
    let file = session_files(&root.path().join("agent")).pop().unwrap();
    let compaction: Value = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["type"] == "compaction")
        .unwrap();
    assert_eq!(compaction["usage"], seen[4]["result"]["usage"]);
    assert_eq!(
        compaction.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "type",
            "id",
            "parentId",
            "timestamp",
            "summary",
            "firstKeptEntryId",
            "tokensBefore",
            "details",
            "usage",
            "fromHook"
        ]
    );
}

#[test]
fn an_extensions_append_entry_is_announced_where_pi_1_6_announces_it() {
    // pi 1.6.0, with a TypeScript extension appending on the prompt's message_end, emits
    // message_start, entry_appended {entry}, message_end; the Python prompt counter (a
    // process extension) does the same in pith.
    let counter = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("examples/extensions/python/prompt_counter.py");
    let mut client = Client::start(json!([reply("a1")]), json!({"extensions": [counter]}));
    let seen = prompt(&mut client, "hi");
    let names: Vec<&str> = types(&seen)
        .into_iter()
        .filter(|t| *t != "message_update")
        .collect();
    assert_eq!(
        names[..6],
        [
            "response",
            "agent_start",
            "turn_start",
            "message_start",
            "entry_appended",
            "message_end"
        ]
    );
    let appended = seen.iter().find(|e| e["type"] == "entry_appended").unwrap();
    assert_eq!(
        (
            &appended["entry"]["type"],
            &appended["entry"]["customType"],
            &appended["entry"]["data"]
        ),
        (
            &json!("custom"),
            &json!("prompt-counter"),
            &json!({"count": 1})
        )
    );
    let (_, root) = client.close();
    let file = session_files(&root.path().join("agent")).pop().unwrap();
    let ids: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "custom")
        .map(|l| l["id"].clone())
        .collect();
    assert_eq!(ids, [appended["entry"]["id"].clone()]);
}

#[test]
fn abort_cancels_a_compaction_summary_and_writes_nothing() {
    // The summary's reply would take ten minutes.
    let late = json!({"content": [{"type": "text", "text": "LATE"}], "delayMs": 600000});
    // Keeping 1 token keeps the reply: the prompt is to be summarized.
    let mut client = Client::start(
        json!([reply("r1"), late]),
        json!({"compaction": {"keepRecentTokens": 1}}),
    );
    prompt(&mut client, "one");
    client.send(json!({"id": "c", "type": "compact"}));
    client.until(|v| v["type"] == "compaction_start");
    let asked = std::time::Instant::now();
    client.send(json!({"id": "a", "type": "abort"}));
    let seen = client.until(|v| v["id"] == "c");
    // Seconds, not the ten minutes of the summary (the 100 ms bound is the runtime's test).
    assert!(asked.elapsed().as_secs() < 10);
    assert!(seen.contains(&json!({
        "type": "compaction_end", "reason": "manual", "aborted": true, "willRetry": false
    })));
    let compacted = seen.last().unwrap();
    assert_eq!(
        (
            &compacted["success"],
            &compacted["command"],
            &compacted["error"]
        ),
        (
            &json!(false),
            &json!("compact"),
            &json!("Compaction cancelled")
        )
    );
    let (_, root) = client.close();
    let file = session_files(&root.path().join("agent")).pop().unwrap();
    assert!(!kinds(&file).contains(&"compaction".to_owned()));
}

#[test]
fn an_extension_dialog_goes_out_as_pis_extension_ui_request_and_its_answer_decides_the_gate() {
    let gate = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("examples/extensions/python/permission_gate.py");
    let call = |id: &str, cmd: &str| json!({"content":[{"type":"toolCall","id":id,"name":"bash","arguments":{"command":cmd}}]});
    let script = json!([
        call("c1", "rm -rf build"),
        call("c2", "rm -rf dist"),
        reply("done")
    ]);
    // settings.json `extensions` loads it.
    let mut client = Client::start(script, json!({"extensions": [gate]}));
    client.send(json!({"type": "prompt", "message": "clean up"}));
    let seen = client.until(|v| v["type"] == "extension_ui_request");
    let ask = seen.last().unwrap().clone();
    assert_eq!(
        ask,
        json!({"type":"extension_ui_request","id":ask["id"],"method":"select",
               "title":"Dangerous command:\n  rm -rf build\nAllow?","options":["Yes","No"]})
    );
    client.send(json!({"type":"extension_ui_response","id":ask["id"],"value":"No"}));
    let seen = client.until(|v| v["type"] == "extension_ui_request");
    let ask = seen.last().unwrap().clone();
    assert_eq!(ask["title"], "Dangerous command:\n  rm -rf dist\nAllow?");
    client.send(json!({"type":"extension_ui_response","id":ask["id"],"value":"Yes"}));
    client.until(|v| v["type"] == "agent_end");
    let agent = client.agent();
    let (status, _dir) = client.close();
    assert!(status.success());
    let file = &session_files(&agent)[0];
    let results: Vec<Value> = std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["message"]["role"] == "toolResult")
        .map(|e| {
            json!([
                e["message"]["toolCallId"],
                e["message"]["content"][0]["text"],
                e["message"]["isError"]
            ])
        })
        .collect();
    assert_eq!(
        results,
        [
            json!(["c1", "Blocked by user", true]),
            json!(["c2", "(no output)", false])
        ]
    );
}

#[test]
fn reload_starts_the_extensions_again() {
    let gate = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("examples/extensions/python/permission_gate.py");
    let mut client = Client::start(json!([]), json!({"extensions": [gate]}));
    let answer = client.call(json!({"id": "r1", "type": "reload"}));
    assert_eq!(
        answer,
        json!({"id":"r1","type":"response","command":"reload","success":true,
               "data":{"reloaded":["permission_gate"]}})
    );
    let answer = client.call(json!({"id": "r2", "type": "reload", "name": "other"}));
    assert_eq!(answer["data"], json!({"reloaded": []}));
    let (status, _dir) = client.close();
    assert!(status.success());
}

/// extensions.md §1.2 "Hot reload": a reload discovers again, so an extension put into the
/// agent directory while the session runs starts, its tools usable at once, and one removed
/// stops.
#[test]
fn reload_finds_an_extension_added_while_the_session_runs_and_drops_a_removed_one() {
    let call = json!({"content":[{"type":"toolCall","id":"q1","name":"quick","arguments":{}}]});
    let mut client = Client::start(
        json!([call, {"content":[{"type":"text","text":"done"}]}]),
        json!({}),
    );
    let answer = client.call(json!({"id": "r1", "type": "reload"}));
    assert_eq!(answer["data"], json!({"reloaded": []}));
    let ext = client.agent().join("extensions/timed");
    std::fs::create_dir_all(&ext).unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cli/extensions/timed_tools.py");
    std::fs::write(
        ext.join("extension.json"),
        json!({"name": "timed", "version": "0", "protocol": 1, "command": ["python3", script]})
            .to_string(),
    )
    .unwrap();
    let answer = client.call(json!({"id": "r2", "type": "reload"}));
    assert_eq!(answer["data"], json!({"reloaded": ["timed"]}));
    let events = prompt(&mut client, "go");
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 1, "{events:?}");
    assert_eq!(ends[0]["result"]["content"][0]["text"], "quick done");
    assert_eq!(ends[0]["isError"], false);
    std::fs::remove_dir_all(&ext).unwrap();
    let answer = client.call(json!({"id": "r3", "type": "reload"}));
    assert_eq!(answer["data"], json!({"reloaded": []}));
    let (status, _dir) = client.close();
    assert!(status.success());
}

#[test]
fn an_extension_command_can_ask_a_dialog_while_the_rpc_loop_reads_the_answer() {
    let picker =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/extensions/picker.py");
    let mut client = Client::start(json!([]), json!({"extensions": [picker]}));
    client.send(json!({"id": "p1", "type": "prompt", "message": "/pick"}));
    let seen = client.until(|v| v["type"] == "extension_ui_request");
    let ask = seen.last().unwrap().clone();
    assert_eq!(ask["title"], "Pick");
    client.send(json!({"type":"extension_ui_response","id":ask["id"],"value":"B"}));
    let seen = client.until(|v| v["type"] == "response");
    assert_eq!(
        seen.last().unwrap(),
        &json!({"id":"p1","type":"response","command":"prompt","success":true,
                "data":{"disposition":"handled"}})
    );
    // pi writes the file with the first reply.
    prompt(&mut client, "hello");
    let agent = client.agent();
    let (status, _dir) = client.close();
    assert!(status.success());
    let file = &session_files(&agent)[0];
    let text = std::fs::read_to_string(file).unwrap();
    assert!(
        text.contains(r#""customType":"picked","data":{"value":"B"}"#),
        "{text}"
    );
}

#[test]
fn a_switch_guard_asks_a_dialog_and_its_answer_cancels_the_new_session() {
    let guard =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/extensions/guard.py");
    let mut client = Client::start(json!([]), json!({"extensions": [guard]}));
    client.send(json!({"id": "n1", "type": "new_session"}));
    let seen = client.until(|v| v["type"] == "extension_ui_request");
    let ask = seen.last().unwrap().clone();
    assert_eq!(
        ask,
        json!({"type":"extension_ui_request","id":ask["id"],"method":"confirm",
               "title":"Start a new session?","message":"sure?"})
    );
    client.send(json!({"type":"extension_ui_response","id":ask["id"],"confirmed":false}));
    let seen = client.until(|v| v["type"] == "response");
    assert_eq!(
        seen.last().unwrap(),
        &json!({"id":"n1","type":"response","command":"new_session","success":true,
                "data":{"cancelled":true}})
    );
    let (status, _dir) = client.close();
    assert!(status.success());
}

/// `get_entries` and `get_tree` name the session's leaf (pi's `getLeafId()`), not its last
/// entry: a session opened at an earlier entry (`--session ID@ENTRY`) says that entry.
#[test]
fn entries_and_tree_name_the_leaf_not_the_last_entry() {
    let mut client = Client::start(json!([reply("one"), reply("two")]), json!({}));
    prompt(&mut client, "first");
    prompt(&mut client, "second");
    let entries = client.call(json!({"type": "get_entries"}));
    let all = entries["data"]["entries"].as_array().unwrap().clone();
    let last = all.last().unwrap()["id"].clone();
    assert_eq!(entries["data"]["leafId"], last);
    let session_id = client.call(json!({"type": "get_state"}))["data"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    // The first reply: an earlier entry than the last.
    let earlier = all
        .iter()
        .find(|e| e["message"]["role"] == "assistant")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(json!(earlier), last);
    let (_, root) = client.close();
    let at = format!("{session_id}@{earlier}");
    let mut client = Client::start_in(root, json!([]), json!({}), &["--session", &at]);
    for command in ["get_entries", "get_tree"] {
        let answer = client.call(json!({"type": command}));
        assert_eq!(
            answer["data"]["leafId"],
            json!(earlier),
            "{command}: {answer}"
        );
    }
}
