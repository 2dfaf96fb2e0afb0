//! `pith -p` against a local OpenAI-compatible server, configured through `models.json`: the
//! path a user with a local model server takes, end to end (request, streaming, tools, the
//! session file). No internet: the server is a thread on 127.0.0.1.

use std::fs;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use serde_json::{Value, json};

/// A server that answers each request with the next SSE body, recording the request bodies.
pub(crate) struct Server {
    pub(crate) url: String,
    pub(crate) requests: Arc<Mutex<Vec<Value>>>,
    /// The `Authorization` header of each request.
    authorizations: Arc<Mutex<Vec<Option<String>>>>,
}

pub(crate) fn serve(bodies: Vec<String>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    let authorizations = Arc::new(Mutex::new(Vec::new()));
    let auth_seen = authorizations.clone();
    std::thread::spawn(move || {
        for body in bodies {
            let Ok((mut stream, _)) = listener.accept() else {
                return;
            };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            // Headers, then Content-Length bytes of body.
            let (head_end, length) = loop {
                let n = stream.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
                if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                    auth_seen.lock().unwrap().push(head.lines().find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("authorization")
                            .then(|| value.trim().to_owned())
                    }));
                    let head = head.to_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map(|v| v.trim().parse::<usize>().unwrap())
                        .unwrap_or(0);
                    break (end + 4, length);
                }
            };
            while buf.len() < head_end + length {
                let n = stream.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
            }
            seen.lock()
                .unwrap()
                .push(serde_json::from_slice(&buf[head_end..head_end + length]).unwrap());
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
            );
            // Small pieces, as a real server streams them.
            for piece in body.as_bytes().chunks(11) {
                let _ = stream.write_all(piece);
                let _ = stream.flush();
            }
        }
    });
    Server {
        url,
        requests,
        authorizations,
    }
}

pub(crate) fn chunk(delta: Value, finish: Option<&str>) -> String {
    format!(
        "data: {}\n\n",
        json!({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"qwen",
               "choices":[{"index":0,"delta":delta,"finish_reason":finish}]})
    )
}

pub(crate) fn usage(prompt: u64, completion: u64) -> String {
    format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"qwen",
               "choices":[],"usage":{"prompt_tokens":prompt,"completion_tokens":completion,"total_tokens":prompt+completion}})
    )
}

pub(crate) fn setup(root: &Path, url: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let (agent, cwd) = (root.join("agent"), root.join("work"));
    fs::create_dir_all(&agent).unwrap();
    fs::create_dir_all(&cwd).unwrap();
    fs::write(
        agent.join("models.json"),
        json!({"providers": {"local": {
            "baseUrl": url, "api": "openai-completions", "apiKey": "none",
            "models": [{"id": "qwen", "contextWindow": 32768, "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}}]
        }}})
        .to_string(),
    )
    .unwrap();
    (agent, cwd)
}

pub(crate) fn pith(agent: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::cargo_bin("pith").unwrap();
    for var in pith_llm::auth::KEY_VARS {
        cmd.env_remove(var);
    }
    cmd.env("PITH_AGENT_DIR", agent)
        .current_dir(cwd)
        .env("TZ", "UTC");
    cmd
}

fn session_lines(agent: &Path) -> Vec<Value> {
    let dir = agent.join("sessions");
    let project = fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
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

#[test]
fn a_local_server_runs_a_tool_and_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let tool_call = [
        chunk(json!({"role":"assistant","content":""}), None),
        chunk(
            json!({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls":[{"index":0,"function":{"arguments":"\"echo from-the-tool\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        usage(100, 20),
    ]
    .concat();
    let answer = [
        chunk(json!({"role":"assistant","content":"The tool said "}), None),
        chunk(json!({"content":"from-the-tool."}), None),
        chunk(json!({}), Some("stop")),
        usage(150, 8),
    ]
    .concat();
    let server = serve(vec![tool_call, answer]);
    let (agent, cwd) = setup(tmp.path(), &server.url);
    pith(&agent, &cwd)
        .args(["-p", "--model", "local/qwen", "run echo"])
        .assert()
        .success()
        .stdout("The tool said from-the-tool.\n");

    let requests = server.requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["model"], "qwen");
    assert_eq!(requests[0]["stream"], true);
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read", "bash", "edit", "write"]);
    // The system prompt goes first and names the working directory.
    assert_eq!(requests[0]["messages"][0]["role"], "system");
    assert!(
        requests[0]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains(&*cwd.to_string_lossy())
    );
    // The second request carries the tool's output back.
    let tool_message = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(tool_message["tool_call_id"], "call_1");
    assert!(
        tool_message["content"]
            .to_string()
            .contains("from-the-tool"),
        "{tool_message}"
    );

    let lines = session_lines(&agent);
    let messages: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "message")
        .map(|l| &l["message"])
        .collect();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    let call = messages[1];
    assert_eq!(
        (
            &call["api"],
            &call["provider"],
            &call["model"],
            &call["stopReason"]
        ),
        (
            &json!("openai-completions"),
            &json!("local"),
            &json!("qwen"),
            &json!("toolUse")
        )
    );
    assert_eq!(call["responseId"], "chatcmpl-7");
    // As pi 1.6.0 writes it: openai-completions.js builds the message through `timestamp`,
    // assigns `responseId` from the first chunk and `rawStopReason` at the finish; the event
    // stream adds `durationMs`, the agent loop `thinkingLevel`.
    assert_eq!(
        call.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "role",
            "content",
            "api",
            "provider",
            "model",
            "usage",
            "stopReason",
            "timestamp",
            "responseId",
            "rawStopReason",
            "durationMs",
            "thinkingLevel"
        ]
    );
    assert_eq!(
        (
            &call["rawStopReason"],
            &call["thinkingLevel"],
            call["durationMs"].is_u64()
        ),
        (&json!("tool_calls"), &json!("off"), true)
    );
    // pi 1.6.0's usage: `reasoning` (0: the server gave no details) after the cache counts,
    // and a cost computed from the model's prices says so.
    assert_eq!(
        call["usage"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        [
            "input",
            "output",
            "cacheRead",
            "cacheWrite",
            "reasoning",
            "totalTokens",
            "cost"
        ]
    );
    assert_eq!(call["usage"]["reasoning"], 0);
    assert_eq!(call["usage"]["cost"]["totalFromProvider"], false);
    assert_eq!(
        call["content"][0],
        json!({"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"echo from-the-tool"}})
    );
    assert_eq!(call["usage"]["input"], 100);
    assert_eq!(call["usage"]["output"], 20);
    // 1 and 2 USD per million tokens, as pi-ai computes it (node prints 0.00014).
    assert_eq!(call["usage"]["cost"]["total"], json!(0.00014));
    let result = messages[2];
    assert_eq!(result["toolName"], "bash");
    assert_eq!(result["isError"], false);
    assert_eq!(result["content"][0]["text"], "from-the-tool\n");
    // pi ≥ 1.1 times the tool's execute; the member sits before `timestamp`.
    assert!(result["durationMs"].is_u64(), "{result}");
    assert_eq!(
        result.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "role",
            "toolCallId",
            "toolName",
            "content",
            "isError",
            "durationMs",
            "timestamp"
        ]
    );
    assert_eq!(messages[3]["stopReason"], "stop");
    // The model the session was started with is recorded as pi records it.
    let change = lines.iter().find(|l| l["type"] == "model_change").unwrap();
    assert_eq!(
        (&change["provider"], &change["modelId"]),
        (&json!("local"), &json!("qwen"))
    );
}

#[test]
fn a_server_error_is_an_error_entry_and_exit_status_1() {
    let tmp = tempfile::tempdir().unwrap();
    // No server at all: the port is closed. Retries would wait seconds; switch them off.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let (agent, cwd) = setup(tmp.path(), &url);
    fs::write(
        agent.join("settings.json"),
        r#"{"retry":{"enabled":false}}"#,
    )
    .unwrap();
    let out = pith(&agent, &cwd)
        .args(["-p", "--model", "local/qwen", "hello"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = session_lines(&agent);
    let reply = &lines.last().unwrap()["message"];
    assert_eq!(reply["stopReason"], "error");
    assert_eq!(reply["provider"], "local");
    let error = reply["errorMessage"].as_str().unwrap();
    assert!(error.len() > 5, "{reply}");
    // As pi prints it: the reply's errorMessage as the last line.
    assert!(stderr.ends_with(&format!("{error}\n")), "{stderr}");
}

/// A server that answers one request with HTTP `status` and the JSON `body`.
fn refuse_once(status: u16, body: Value) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        // Read the head and the body before answering, as a real server would.
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = stream.read(&mut chunk).unwrap_or(0);
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).to_lowercase();
            let Some(end) = text.find("\r\n\r\n") else {
                if n == 0 {
                    return;
                }
                continue;
            };
            let length = text[..end]
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + length || n == 0 {
                break;
            }
        }
        let body = body.to_string();
        let _ = stream.write_all(
            format!(
                "HTTP/1.1 {status} Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
    });
    url
}

#[test]
fn an_http_error_reads_as_pi_1_6_writes_and_prints_it() {
    // Checked against pi 1.6.0 with scripts/mock-llm.py: OpenAI Chat Completions quotes the
    // body's error object after the status (pi-ai's formatProviderError), Anthropic keeps the
    // SDK's `<status> <body>`; print mode writes the errorMessage alone on stderr.
    let cases = [
        (
            "openai-completions",
            500,
            json!({"error": {"message": "boom", "type": "server_error", "code": "x1"}}),
            r#"500: {"message":"boom","type":"server_error","code":"x1"}"#,
        ),
        (
            "openai-completions",
            502,
            json!({"detail": "no error object"}),
            "502 status code (no body)",
        ),
        (
            "anthropic-messages",
            400,
            json!({"type": "error", "error": {"message": "bad thing", "type": "invalid_request_error"}}),
            r#"400 {"type":"error","error":{"message":"bad thing","type":"invalid_request_error"}}"#,
        ),
    ];
    for (api, status, body, expected) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let url = refuse_once(status, body);
        let (agent, cwd) = setup(tmp.path(), &url);
        fs::write(
            agent.join("models.json"),
            json!({"providers": {"local": {"baseUrl": url, "api": api, "apiKey": "none",
                "models": [{"id": "qwen", "contextWindow": 32768}]}}})
            .to_string(),
        )
        .unwrap();
        fs::write(
            agent.join("settings.json"),
            r#"{"retry":{"enabled":false}}"#,
        )
        .unwrap();
        pith(&agent, &cwd)
            .args(["-p", "--model", "local/qwen", "hello"])
            .assert()
            .code(1)
            .stdout("")
            .stderr(format!("{expected}\n"));
        let lines = session_lines(&agent);
        let reply = &lines.last().unwrap()["message"];
        assert_eq!(
            (&reply["stopReason"], &reply["errorMessage"]),
            (&json!("error"), &json!(expected)),
            "{api} {status}"
        );
    }
}

#[test]
fn list_models_shows_the_local_model_and_faux() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = setup(tmp.path(), "http://127.0.0.1:9/v1");
    pith(&agent, &cwd)
        .arg("--list-models")
        .assert()
        .success()
        .stdout(
            "provider  model   context  max-out  thinking  images\n\
             faux      faux-1  128K     16.4K    no        no    \n\
             local     qwen    32.8K    16.4K    no        no    \n",
        );
    pith(&agent, &cwd)
        .args(["--list-models", "qw"])
        .assert()
        .success()
        .stdout(
            "provider  model  context  max-out  thinking  images\n\
             local     qwen   32.8K    16.4K    no        no    \n",
        );
    pith(&agent, &cwd)
        .args(["-p", "--model", "anthropic/claude-sonnet-4-5", "hi"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "No API key found for anthropic: set ANTHROPIC_API_KEY, add it to",
        ));
}

#[test]
fn the_key_reaches_the_server_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = "sk-pith-test-secret-0123456789";
    let answer = [
        chunk(json!({"role":"assistant","content":"hi"}), None),
        chunk(json!({}), Some("stop")),
        usage(5, 1),
    ]
    .concat();
    let server = serve(vec![answer.clone(), answer]);
    let (agent, cwd) = setup(tmp.path(), &server.url);
    // models.json names an environment variable as `$NAME`; its value is the key (pi 1.6.0's
    // rule: a bare name would be the key itself).
    let models = fs::read_to_string(agent.join("models.json"))
        .unwrap()
        .replace("\"apiKey\":\"none\"", "\"apiKey\":\"$LOCAL_TEST_KEY\"");
    fs::write(agent.join("models.json"), models).unwrap();
    let trace = tmp.path().join("trace.json");
    let out = pith(&agent, &cwd)
        .env("LOCAL_TEST_KEY", secret)
        .args(["-p", "--model", "local/qwen", "--trace"])
        .arg(&trace)
        .arg("hello")
        .assert()
        .success()
        .get_output()
        .clone();
    // --api-key wins over models.json.
    pith(&agent, &cwd)
        .args([
            "-p",
            "-c",
            "--model",
            "local/qwen",
            "--api-key",
            "sk-from-the-flag",
            "again",
        ])
        .assert()
        .success();
    let auth = server.authorizations.lock().unwrap().clone();
    assert_eq!(
        auth,
        [
            Some(format!("Bearer {secret}")),
            Some("Bearer sk-from-the-flag".to_owned())
        ]
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains(secret));
    assert!(!fs::read_to_string(&trace).unwrap().contains(secret));
    let dir = agent.join("sessions");
    for project in fs::read_dir(dir).unwrap() {
        for file in fs::read_dir(project.unwrap().path()).unwrap() {
            let text = fs::read_to_string(file.unwrap().path()).unwrap();
            assert!(!text.contains(secret) && !text.contains("sk-from-the-flag"));
        }
    }
}

#[test]
fn tools_flags_choose_what_the_model_is_offered() {
    let tmp = tempfile::tempdir().unwrap();
    let answer = [
        chunk(json!({"role":"assistant","content":"ok"}), None),
        chunk(json!({}), Some("stop")),
        usage(5, 1),
    ]
    .concat();
    let server = serve(vec![answer.clone(), answer.clone(), answer]);
    let (agent, cwd) = setup(tmp.path(), &server.url);
    pith(&agent, &cwd)
        .args(["-p", "--model", "local/qwen", "--tools", "read,bash", "one"])
        .assert()
        .success();
    pith(&agent, &cwd)
        .args(["-p", "--model", "local/qwen", "--no-tools", "two"])
        .assert()
        .success();
    pith(&agent, &cwd)
        .args([
            "-p",
            "--model",
            "local/qwen",
            "--tools",
            "grep,find,ls",
            "three",
        ])
        .assert()
        .success();
    pith(&agent, &cwd)
        .args(["-p", "--model", "local/qwen", "--tools", "read,rg", "four"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "unknown tool rg: pith has read, bash, edit, write, grep, find, ls",
        ));
    let requests = server.requests.lock().unwrap();
    let names = |r: &Value| -> Vec<String> {
        r["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(names(&requests[0]), ["read", "bash"]);
    assert_eq!(names(&requests[1]), Vec::<String>::new());
    assert_eq!(names(&requests[2]), ["grep", "find", "ls"]);
    let system = requests[2]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("- grep: Search file contents for patterns (respects .gitignore)")
            && system.contains("- find: Find files by glob pattern (respects .gitignore)")
            && system.contains("- ls: List directory contents"),
        "{system}"
    );
    // The system prompt lists only the tools offered.
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("- read:") && system.contains("- bash:"),
        "{system}"
    );
    assert!(!system.contains("- edit:"), "{system}");
}

/// A command's full output goes to pith's own folder in $TMPDIR while pith runs (the model
/// may read it), and the folder is gone once pith has exited. The folder appears when pith's
/// reader has taken in enough output to spill it, which may be a moment after `seq` ends:
/// the command waits for it (up to 5 s) before listing it.
#[test]
fn full_outputs_live_in_a_private_folder_removed_at_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let tool_call = [
        chunk(json!({"role":"assistant","content":""}), None),
        chunk(
            json!({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"seq 1 30000; for i in $(seq 100); do ls -d $TMPDIR/pith-* >/dev/null 2>&1 && break; sleep 0.05; done; ls -ld $TMPDIR/pith-* | cut -c1-10\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        usage(100, 20),
    ]
    .concat();
    let answer = [
        chunk(json!({"role":"assistant","content":"done"}), None),
        chunk(json!({}), Some("stop")),
        usage(150, 8),
    ]
    .concat();
    let server = serve(vec![tool_call, answer]);
    let (agent, cwd) = setup(tmp.path(), &server.url);
    let temp = tmp.path().join("tmp");
    fs::create_dir_all(&temp).unwrap();
    pith(&agent, &cwd)
        .env("TMPDIR", &temp)
        .args(["-p", "--model", "local/qwen", "count"])
        .assert()
        .success()
        .stdout("done\n");
    let lines = session_lines(&agent);
    let result = lines
        .iter()
        .find(|l| l["message"]["role"] == "toolResult")
        .unwrap();
    let path = result["message"]["details"]["fullOutputPath"]
        .as_str()
        .unwrap();
    let folder = Path::new(path).parent().unwrap();
    assert_eq!(folder.parent(), Some(temp.as_path()));
    assert!(
        folder
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("pith-"),
        "{path}"
    );
    // While pith ran, the folder existed and was private (the command listed it).
    let text = result["message"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("drwx------"), "{text}");
    // Now it is gone, and nothing else was left in $TMPDIR.
    assert!(!folder.exists());
    assert_eq!(fs::read_dir(&temp).unwrap().count(), 0);
}

/// A reply of `text` from the local server.
fn text_reply(text: &str) -> String {
    [
        chunk(json!({"role":"assistant","content":text}), None),
        chunk(json!({}), Some("stop")),
        usage(10, 2),
    ]
    .concat()
}

/// pi 1.6.0 restores a resumed session's model and thinking level (spec: lifecycle.md §6):
/// `-c` and `--session` really send the next request to the model the session last used,
/// at its level, whatever the settings' default is, and write no `model_change` for it.
#[test]
fn continue_and_session_restore_the_sessions_model_and_level() {
    let tmp = tempfile::tempdir().unwrap();
    let server = serve(vec![
        text_reply("one"),
        text_reply("two"),
        text_reply("three"),
        text_reply("four"),
    ]);
    let (agent, cwd) = setup(tmp.path(), &server.url);
    fs::write(
        agent.join("models.json"),
        json!({"providers": {"local": {
            "baseUrl": server.url, "api": "openai-completions", "apiKey": "none",
            "models": [
                {"id": "small", "contextWindow": 32768},
                {"id": "big", "reasoning": true, "contextWindow": 32768}
            ]
        }}})
        .to_string(),
    )
    .unwrap();
    fs::write(
        agent.join("settings.json"),
        r#"{"defaultProvider":"local","defaultModel":"small","defaultThinkingLevel":"low"}"#,
    )
    .unwrap();
    // The session is made with the big model at high, as `/model` and `/thinking` would.
    pith(&agent, &cwd)
        .args(["-p", "--model", "local/big", "--thinking", "high", "first"])
        .assert()
        .success()
        .stdout("one\n");
    let before = session_lines(&agent);
    pith(&agent, &cwd)
        .args(["-p", "-c", "second"])
        .assert()
        .success()
        .stdout("two\n");
    let file = {
        let project = fs::read_dir(agent.join("sessions"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        fs::read_dir(project)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
    };
    pith(&agent, &cwd)
        .args(["-p", "--session"])
        .arg(&file)
        .arg("third")
        .assert()
        .success()
        .stdout("three\n");
    // A new session takes the settings' default.
    pith(&agent, &cwd)
        .args(["-p", "fresh"])
        .assert()
        .success()
        .stdout("four\n");
    let requests = server.requests.lock().unwrap();
    let models: Vec<&str> = requests
        .iter()
        .map(|r| r["model"].as_str().unwrap())
        .collect();
    assert_eq!(models, ["big", "big", "big", "small"]);
    let efforts: Vec<&Value> = requests.iter().map(|r| &r["reasoning_effort"]).collect();
    assert_eq!(
        efforts[..3],
        [&json!("high"), &json!("high"), &json!("high")]
    );
    // Resuming wrote no model_change and no thinking_level_change: only the conversation.
    let after: Vec<Value> = fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let added: Vec<&str> = after[before.len()..]
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(added, ["message"; 4]);
}
