//! `pith -p` with a Gemini and an OpenAI Responses model of `models.json`, end to end against
//! a local server, each turn compared with what pi 1.6.0 did for the same script
//! (`tests/pi16/<api>.json`: the server's replies, pi's requests and pi's session messages,
//! recorded with pi 1.6.0 `-p --thinking low` against the same replies). The model asks for
//! `bash`, pith runs it, sends the output back and prints the answer.
//!
//! Left out of the comparison: the system prompt and tool definitions (pith's own), the
//! session id in `prompt_cache_key`, timestamps, and the members pith's session format does
//! not have yet (`durationMs`, `rawStopReason`, `thinkingLevel`, `usage.reasoning`,
//! `cost.totalFromProvider`).

use std::fs;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use serde_json::{Value, json};

/// One request as the server saw it.
struct Seen {
    path: String,
    headers: String,
    body: Value,
}

/// Serves `replies` in order as `text/event-stream`, 7 bytes at a time; a reply that starts
/// with `HTTP/` is a whole response, written as it is.
fn serve(replies: Vec<String>) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for reply in replies {
            let Ok((mut stream, _)) = listener.accept() else {
                return;
            };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 8192];
            let (head_end, length, head) = loop {
                let n = stream.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
                if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                    let length = head
                        .to_lowercase()
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:").map(str::to_owned))
                        .map(|v| v.trim().parse::<usize>().unwrap())
                        .unwrap_or(0);
                    break (end + 4, length, head);
                }
            };
            while buf.len() < head_end + length {
                let n = stream.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
            }
            let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
            record.lock().unwrap().push(Seen {
                path,
                headers: head.to_lowercase(),
                body: serde_json::from_slice(&buf[head_end..head_end + length]).unwrap(),
            });
            if reply.starts_with("HTTP/") {
                let _ = stream.write_all(reply.as_bytes());
                continue;
            }
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
            );
            for piece in reply.as_bytes().chunks(7) {
                let _ = stream.write_all(piece);
                let _ = stream.flush();
            }
        }
    });
    (base, seen)
}

fn fixture(api: &str) -> Value {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("pi16")
        .join(format!("{api}.json"));
    serde_json::from_str(&fs::read_to_string(file).unwrap()).unwrap()
}

/// The agent directory and cwd of a run against `base`.
fn setup(root: &Path, api: &str, base: &str, model: &str) -> (PathBuf, PathBuf) {
    let (agent, cwd) = (root.join("agent"), root.join("work"));
    fs::create_dir_all(&agent).unwrap();
    fs::create_dir_all(&cwd).unwrap();
    let path = if api == "google-generative-ai" {
        "/v1beta"
    } else {
        "/v1"
    };
    fs::write(
        agent.join("models.json"),
        json!({"providers": {"mock": {"baseUrl": format!("{base}{path}"), "api": api,
            "apiKey": "mock-key",
            "models": [{"id": model, "name": "Mock", "reasoning": true, "input": ["text", "image"],
                "contextWindow": 128000, "maxTokens": 4096,
                "cost": {"input": 1, "output": 2, "cacheRead": 0.5, "cacheWrite": 0}}]}}})
        .to_string(),
    )
    .unwrap();
    (agent, cwd)
}

fn session(agent: &Path) -> Vec<Value> {
    let project = fs::read_dir(agent.join("sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let file = fs::read_dir(project)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A session message without what differs by nature or is not in pith's format yet.
fn comparable(message: &Value) -> Value {
    let mut m = message.clone();
    let o = m.as_object_mut().unwrap();
    for key in ["timestamp", "durationMs", "rawStopReason", "thinkingLevel"] {
        o.shift_remove(key);
    }
    if let Some(u) = o.get_mut("usage").and_then(Value::as_object_mut) {
        u.shift_remove("reasoning");
        if let Some(c) = u.get_mut("cost").and_then(Value::as_object_mut) {
            c.shift_remove("totalFromProvider");
        }
    }
    m
}

/// A request body with pith's own system prompt, tool definitions and session id masked as
/// in the fixture.
fn comparable_request(body: &Value, session_id: &str) -> Value {
    let mut b = body.clone();
    if b.get("systemInstruction").is_some() {
        b["systemInstruction"] = json!("<system prompt>");
    }
    if let Some(tools) = b.get("tools").and_then(Value::as_array).cloned() {
        b["tools"] = if tools[0].get("functionDeclarations").is_some() {
            json!(
                tools
                    .iter()
                    .map(|t| t["functionDeclarations"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|d| d["name"].clone())
                        .collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            )
        } else {
            json!(tools.iter().map(|t| t["name"].clone()).collect::<Vec<_>>())
        };
    }
    if let Some(input) = b.get_mut("input").and_then(Value::as_array_mut) {
        for item in input {
            if matches!(item["role"].as_str(), Some("developer" | "system")) {
                *item = json!("<system prompt>");
            }
        }
    }
    if b.get("prompt_cache_key").is_some() {
        assert_eq!(b["prompt_cache_key"], json!(session_id));
        b["prompt_cache_key"] = json!("<session id>");
    }
    b
}

fn run_like_pi(api: &str, model: &str) {
    let expected = fixture(api);
    let replies: Vec<String> = expected["replies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect();
    let (base, seen) = serve(replies);
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = setup(tmp.path(), api, &base, model);
    let mut cmd = Command::cargo_bin("pith").unwrap();
    for var in pith_llm::auth::KEY_VARS {
        cmd.env_remove(var);
    }
    cmd.env("PITH_AGENT_DIR", &agent)
        .current_dir(&cwd)
        .args([
            "-p",
            "--provider",
            "mock",
            "--model",
            model,
            "--thinking",
            "low",
        ])
        .arg("Run echo hi from bash")
        .assert()
        .success()
        .stdout("The command printed: hi from bash\n");

    let lines = session(&agent);
    let session_id = lines[0]["id"].as_str().unwrap().to_owned();
    let messages: Vec<Value> = lines
        .iter()
        .filter(|l| {
            l["type"] == "message"
                && matches!(
                    l["message"]["role"].as_str(),
                    Some("assistant" | "toolResult")
                )
        })
        .map(|l| comparable(&l["message"]))
        .collect();
    let pi: Vec<Value> = expected["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(comparable)
        .collect();
    assert_eq!(messages, pi);
    // The same members in the same order, as the lines pi writes.
    for (ours, theirs) in messages.iter().zip(&pi) {
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(ours), keys(theirs));
    }

    let seen = seen.lock().unwrap();
    let pi_requests = expected["requests"].as_array().unwrap();
    assert_eq!(seen.len(), pi_requests.len());
    for (ours, theirs) in seen.iter().zip(pi_requests) {
        assert_eq!(json!(ours.path), theirs["path"]);
        assert_eq!(comparable_request(&ours.body, &session_id), theirs["body"]);
        let key = if api == "google-generative-ai" {
            "x-goog-api-key: mock-key"
        } else {
            "authorization: bearer mock-key"
        };
        assert!(ours.headers.contains(key), "{}", ours.headers);
    }
}

#[test]
fn a_gemini_model_runs_a_tool_and_answers_as_in_pi() {
    run_like_pi("google-generative-ai", "gemini-2.5-flash");
}

#[test]
fn a_responses_model_runs_a_tool_and_answers_as_in_pi() {
    run_like_pi("openai-responses", "gpt-5");
}

#[test]
fn provider_retries_follow_the_settings() {
    let overloaded = r#"{"error":{"code":503,"message":"busy","status":"UNAVAILABLE"}}"#;
    let failure = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{overloaded}",
        overloaded.len()
    );
    let answer = fixture("google-generative-ai")["replies"][1]
        .as_str()
        .unwrap()
        .to_owned();
    for (settings, requests, stdout) in [
        // pi's default: no provider retry; the agent's own retry (off here) would come next.
        (json!({"retry": {"enabled": false}}), 1, ""),
        (
            json!({"retry": {"enabled": false, "provider": {"maxRetries": 1}}}),
            2,
            "The command printed: hi from bash\n",
        ),
    ] {
        let (base, seen) = serve(vec![failure.clone(), answer.clone()]);
        let tmp = tempfile::tempdir().unwrap();
        let (agent, cwd) = setup(
            tmp.path(),
            "google-generative-ai",
            &base,
            "gemini-2.5-flash",
        );
        fs::write(agent.join("settings.json"), settings.to_string()).unwrap();
        let mut cmd = Command::cargo_bin("pith").unwrap();
        for var in pith_llm::auth::KEY_VARS {
            cmd.env_remove(var);
        }
        let out = cmd
            .env("PITH_AGENT_DIR", &agent)
            .current_dir(&cwd)
            .args([
                "-p",
                "--provider",
                "mock",
                "--model",
                "gemini-2.5-flash",
                "hi",
            ])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), stdout, "{settings}");
        assert_eq!(seen.lock().unwrap().len(), requests, "{settings}");
        if requests == 1 {
            assert!(String::from_utf8_lossy(&out.stderr).contains(overloaded));
        }
    }
}
