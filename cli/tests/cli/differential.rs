//! pith and the real pi 1.6.0 side by side (issue 12, "What will be checked"): each scenario
//! runs both agents with the same flags against their own copy of the same scripted mock
//! model server (`scripts/mock-llm.py`), then compares what a user and a model see — stdout,
//! exit status, the session file entry by entry, and the bodies of the model requests — after
//! [`pith_tests::pi_oracle`]'s normalisation (fresh ids, clocks, scratch folders).
//!
//! A difference pith keeps on purpose is a row of docs/divergences.md and is named where the
//! scenario sets it aside.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use pith_tests::pi_oracle::{self, MockLlm};
use serde_json::{Value, json};

/// Drives an rpc process with `script` (one command per line): each command is sent once
/// the previous one is answered, and a `prompt` once its run has settled (`agent_settled`),
/// so both agents see the same order. Then stdin is closed and the process waited for
/// (at most 30 s).
fn rpc_session(mut child: std::process::Child, script: &str) -> std::process::Output {
    use std::io::{BufRead, BufReader, Write};
    use std::time::{Duration, Instant};
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line.clone()).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let mut input = child.stdin.take().unwrap();
    let mut fork_ids: Vec<Value> = Vec::new();
    let mut settled_runs = 0usize;
    let mut runs = 0usize;
    // `{"type": "_ui_answers", "values": [...]}`: the answers, in order, to the extension
    // dialogs (`extension_ui_request` select/input/editor: the value; confirm: a boolean).
    let mut ui_answers: std::collections::VecDeque<Value> = Default::default();
    let answer_ui = |event: &Value,
                     answers: &mut std::collections::VecDeque<Value>,
                     input: &mut std::process::ChildStdin| {
        if event["type"] != "extension_ui_request" {
            return;
        }
        let key = match event["method"].as_str() {
            Some("select" | "input" | "editor") => "value",
            Some("confirm") => "confirmed",
            _ => return,
        };
        let mut reply = json!({"type": "extension_ui_response", "id": event["id"]});
        match answers.pop_front() {
            Some(v) => reply[key] = v,
            None => reply["cancelled"] = json!(true),
        }
        writeln!(input, "{reply}").unwrap();
        input.flush().unwrap();
    };
    for command in script.lines().filter(|l| !l.trim().is_empty()) {
        let mut cmd: Value = serde_json::from_str(command).unwrap();
        // `{"type": "_settle"}`: wait until every started run has settled.
        if cmd["type"] == "_settle" {
            let deadline = Instant::now() + Duration::from_secs(30);
            while settled_runs < runs {
                let line = rx
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                    .unwrap_or_else(|_| panic!("never settled; got:\n{}", seen.join("\n")));
                let event: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                answer_ui(&event, &mut ui_answers, &mut input);
                if event["type"] == "agent_settled" {
                    settled_runs += 1;
                }
                seen.push(line);
            }
            continue;
        }
        if cmd["type"] == "_ui_answers" {
            ui_answers = cmd["values"].as_array().cloned().unwrap_or_default().into();
            continue;
        }
        // `{"type": "_sleep", "ms": N}`: let the agents get as far (a request under way).
        if cmd["type"] == "_sleep" {
            std::thread::sleep(Duration::from_millis(cmd["ms"].as_u64().unwrap_or(0)));
            continue;
        }
        // `"entryId": "$fork:N"`: the N-th entry of the last get_fork_messages answer.
        if let Some(n) = cmd["entryId"]
            .as_str()
            .and_then(|v| v.strip_prefix("$fork:"))
            .and_then(|n| n.parse::<usize>().ok())
        {
            cmd["entryId"] = fork_ids[n].clone();
        }
        // `"_nowait": true` on a prompt: go on once it is answered, without waiting for its run.
        let nowait = cmd
            .as_object_mut()
            .and_then(|m| m.remove("_nowait"))
            .is_some();
        writeln!(input, "{cmd}").unwrap();
        input.flush().unwrap();
        let settles = cmd["type"] == "prompt";
        if settles {
            runs += 1;
        }
        let (mut answered, mut settled) = (false, !settles || nowait);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !(answered && settled) {
            let line = rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("no answer to {command}; got:\n{}", seen.join("\n")));
            let event: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            answer_ui(&event, &mut ui_answers, &mut input);
            if event["type"] == "response" && event["id"] == cmd["id"] {
                answered = true;
                // A prompt queued into a running run starts none of its own.
                if settles && event["data"]["disposition"] == "queued" {
                    runs -= 1;
                    settled = true;
                }
                if cmd["type"] == "get_fork_messages" {
                    fork_ids = event["data"]["messages"]
                        .as_array()
                        .map(|m| m.iter().map(|x| x["entryId"].clone()).collect())
                        .unwrap_or_default();
                }
            }
            if event["type"] == "agent_settled" {
                settled = true;
                settled_runs += 1;
            }
            seen.push(line);
        }
    }
    drop(input);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    reader.join().unwrap();
    seen.extend(rx.try_iter());
    let mut stderr = Vec::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_end(&mut stderr);
    }
    let stdout = seen.iter().map(|l| format!("{l}\n")).collect::<String>();
    std::process::Output {
        status,
        stdout: stdout.into_bytes(),
        stderr,
    }
}

/// Which agent a run is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Agent {
    Pi,
    Pith,
}

/// What one agent did in a scenario.
#[derive(Debug)]
struct Run {
    /// Per invocation: exit code, stdout as written, stderr with the scratch folder `<root>`.
    outputs: Vec<(i32, String, String)>,
    /// Every session file as written, sorted by file name.
    sessions: Vec<Vec<Value>>,
    /// The run's scratch folder, which normalisation replaces with `<root>`.
    root: PathBuf,
    /// The session files' paths (named `<session-file-i>` in outputs) and the mock server's
    /// URL (`<mock>`).
    session_paths: Vec<PathBuf>,
    mock_url: String,
    /// The agent directory's settings.json after the run (rpc setters write it).
    settings_file: String,
    /// Every request body, normalised.
    requests: Vec<Value>,
}

/// One scenario: the model's replies, the agent settings, and the invocations in order
/// (arguments after `--model mock/<model id>`, and stdin).
struct Scenario {
    replies: Value,
    settings: Value,
    invocations: Vec<(Vec<String>, String)>,
    files: Vec<(String, Vec<u8>)>,
    /// The models.json `api` of the mock provider.
    /// Whether the mock model takes images (`input: ["text", "image"]` in models.json; pi's
    /// default for a models.json model is text only).
    images: bool,
    api: &'static str,
    /// Whether the mock model can reason (`reasoning` in models.json).
    reasoning: bool,
    /// Files in the agent directory (skills, prompt templates), by relative path.
    agent_files: Vec<(String, String)>,
    /// Images that are re-encoded (resized, converted from BMP): their bytes are set aside,
    /// their type and size compared (docs/divergences.md, "re-encoded images").
    reencoded_images: bool,
    /// Invocations whose stdout, stderr and exit status differ on purpose (a row of
    /// docs/divergences.md): pith's `(exit, stderr)` is asserted instead.
    own_output: Vec<(usize, i32, &'static str)>,
    /// grep and find results of several files are compared in path order
    /// (docs/divergences.md, "Tools").
    grep_in_path_order: bool,
    /// pi gets ripgrep and fd where it keeps its own downloads (`<agent dir>/bin`).
    search_tools: bool,
    /// Extensions given with `-e`: pi's (a TypeScript file) and pith's (a PXP program).
    extensions: Vec<(PathBuf, PathBuf)>,
    /// The mock model's `compat` in models.json (none when null).
    compat: Value,
    /// The mock model's id (`mock-1`; some providers decide by it, as Google's thinking
    /// configuration does).
    model_id: &'static str,
}

impl Scenario {
    fn new(replies: Value) -> Scenario {
        Scenario {
            replies,
            settings: json!({"retry": {"baseDelayMs": 10}}),
            invocations: Vec::new(),
            files: Vec::new(),
            own_output: Vec::new(),
            grep_in_path_order: false,
            search_tools: false,
            extensions: Vec::new(),
            model_id: "mock-1",
            compat: Value::Null,
            api: "openai-completions",
            reasoning: true,
            images: false,
            reencoded_images: false,
            agent_files: Vec::new(),
        }
    }

    fn run_with(mut self, args: &[&str], stdin: &str) -> Scenario {
        self.invocations.push((
            args.iter().map(|a| (*a).to_owned()).collect(),
            stdin.to_owned(),
        ));
        self
    }

    /// The provider speaks `api` (`anthropic-messages`, …) instead of Chat Completions.
    fn api(mut self, api: &'static str) -> Scenario {
        self.api = api;
        self
    }

    /// grep and find results of several files are compared in path order: pi prints them in
    /// ripgrep's and fd's thread-dependent order, pith in path order (docs/divergences.md).
    /// A scenario keeps a `limit` cut to one file (grep) or leaves it out (find), since which
    /// files come before the cut depends on that order.
    fn grep_in_path_order(mut self) -> Scenario {
        self.grep_in_path_order = true;
        self
    }

    /// pi's grep and find run ripgrep and fd from `<agent dir>/bin`, where pi puts its own
    /// downloads (scripts/install-search-tools provides them).
    fn with_search_tools(mut self) -> Scenario {
        self.search_tools = true;
        self
    }

    /// Every invocation loads an extension (`-e PATH`): `pi_path` in pi, `pith_path` in pith.
    fn extension(mut self, pi_path: PathBuf, pith_path: PathBuf) -> Scenario {
        self.extensions.push((pi_path, pith_path));
        self
    }

    /// The mock model's `compat` in models.json.
    fn compat(mut self, compat: Value) -> Scenario {
        self.compat = compat;
        self
    }

    /// The mock model's id is `id` (its provider stays `mock`).
    fn model_id(mut self, id: &'static str) -> Scenario {
        self.model_id = id;
        self
    }

    /// The mock model cannot reason.
    fn without_reasoning(mut self) -> Scenario {
        self.reasoning = false;
        self
    }

    /// Images are re-encoded: compare their type and size, not their bytes.
    fn reencoded_images(mut self) -> Scenario {
        self.reencoded_images = true;
        self
    }

    /// The mock model takes images.
    fn with_image_input(mut self) -> Scenario {
        self.images = true;
        self
    }

    /// A file in the work folder with these bytes (an image) before the first invocation.
    fn binary_file(mut self, name: &str, bytes: Vec<u8>) -> Scenario {
        self.files.push((name.to_owned(), bytes));
        self
    }

    /// A file in the agent directory (`skills/…`, `prompts/…`) before the first invocation.
    fn agent_file(mut self, name: &str, text: &str) -> Scenario {
        self.agent_files.push((name.to_owned(), text.to_owned()));
        self
    }

    /// The agent's settings.json.
    fn settings(mut self, settings: Value) -> Scenario {
        self.settings = settings;
        self
    }

    /// A file in the work folder before the first invocation.
    fn file(mut self, name: &str, text: &str) -> Scenario {
        self.files.push((name.to_owned(), text.as_bytes().to_vec()));
        self
    }

    /// The last invocation's output is pith's own (docs/divergences.md): pith exits `exit`
    /// with `stderr`; files and requests are still pi's.
    fn diverging_output(mut self, exit: i32, stderr: &'static str) -> Scenario {
        let last = self.invocations.len().saturating_sub(1);
        self.own_output.push((last, exit, stderr));
        self
    }

    fn run(self, args: &[&str]) -> Scenario {
        self.run_with(args, "")
    }

    fn play(&self, agent: Agent, root: &Path) -> Run {
        let (home, work, agent_dir) = (root.join("home"), root.join("work"), root.join("agent"));
        for d in [&home, &work, &agent_dir] {
            std::fs::create_dir_all(d).unwrap();
        }
        for (name, text) in &self.files {
            pith_tests::files::write(&work.join(name), text);
        }
        for (name, text) in &self.agent_files {
            pith_tests::files::write(&agent_dir.join(name), text);
        }
        if self.search_tools && matches!(agent, Agent::Pi) {
            let tools = pi_oracle::search_tools();
            std::fs::create_dir_all(agent_dir.join("bin")).unwrap();
            for tool in ["rg", "fd"] {
                std::os::unix::fs::symlink(
                    tools.join("bin").join(tool),
                    agent_dir.join("bin").join(tool),
                )
                .unwrap();
            }
        }
        let mock = MockLlm::start(root, "mock", &self.replies);
        let mut model = json!({"id": self.model_id, "name": "Mock One",
            "contextWindow": 100000, "maxTokens": 1000, "reasoning": self.reasoning,
            "input": if self.images { json!(["text", "image"]) } else { json!(["text"]) }});
        if !self.compat.is_null() {
            model["compat"] = self.compat.clone();
        }
        pith_tests::files::write(
            &agent_dir.join("models.json"),
            json!({"providers": {"mock": {"baseUrl": mock.url, "api": self.api,
                "apiKey": "none", "models": [model]}}})
            .to_string(),
        );
        pith_tests::files::write(&agent_dir.join("settings.json"), self.settings.to_string());
        let mut outputs = Vec::new();
        for (args, stdin) in &self.invocations {
            let mut cmd = match agent {
                Agent::Pi => {
                    let mut c = Command::new(pi_oracle::pi_bin());
                    c.env("PI_CODING_AGENT_DIR", &agent_dir)
                        .env("PI_OFFLINE", "1")
                        .env("PI_SKIP_VERSION_CHECK", "1");
                    c
                }
                Agent::Pith => {
                    let mut c = Command::new(env!("CARGO_BIN_EXE_pith"));
                    c.env("PITH_AGENT_DIR", &agent_dir);
                    c
                }
            };
            for var in pith_llm::auth::KEY_VARS {
                cmd.env_remove(var);
            }
            cmd.current_dir(&work)
                .env("HOME", &home)
                .env_remove("XDG_CONFIG_HOME")
                .arg("--model")
                .arg(format!("mock/{}", self.model_id));
            for (pi_path, pith_path) in &self.extensions {
                let path = match agent {
                    Agent::Pi => pi_path,
                    Agent::Pith => pith_path,
                };
                cmd.arg("-e").arg(path);
            }
            let mut child = cmd
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let out = if args.iter().any(|a| a == "rpc") {
                rpc_session(child, stdin)
            } else {
                {
                    use std::io::Write;
                    let mut input = child.stdin.take().unwrap();
                    input.write_all(stdin.as_bytes()).unwrap();
                }
                child.wait_with_output().unwrap()
            };
            // Kept beside the run for a look after a failure (PITH_DIFF_KEEP).
            std::fs::write(
                root.join(format!("stdout-{}.txt", outputs.len())),
                &out.stdout,
            )
            .unwrap();
            let root_text = root.to_string_lossy().into_owned();
            outputs.push((
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).replace(&root_text, "<root>"),
            ));
        }
        let mut files: Vec<PathBuf> = pith_tests::files::session_files(&agent_dir);
        files.sort_by_key(|p| p.file_name().map(|n| n.to_owned()));
        let sessions = files
            .iter()
            .map(|f| pith_tests::files::json_lines(f))
            .collect();
        let sessions: Vec<Vec<Value>> = sessions;
        // The Responses API's `prompt_cache_key` is the session's id, fresh in each run.
        let session_ids: Vec<Value> = sessions
            .iter()
            .map(|lines| lines.first().map(|h| h["id"].clone()).unwrap_or_default())
            .collect();
        let requests = mock
            .request_bodies()
            .into_iter()
            .map(|mut b| {
                pi_oracle::normalize_value(&mut b, root);
                if let Some(i) = b
                    .get("prompt_cache_key")
                    .and_then(|key| session_ids.iter().position(|id| id == key))
                {
                    b["prompt_cache_key"] = json!(format!("<session-{i} id>"));
                }
                b
            })
            .collect();
        Run {
            outputs,
            sessions,
            requests,
            root: root.to_path_buf(),
            session_paths: files,
            mock_url: mock.url.clone(),
            settings_file: std::fs::read_to_string(agent_dir.join("settings.json"))
                .unwrap_or_default(),
        }
    }

    /// Runs pi and pith; returns both runs.
    fn both(&self) -> (Run, Run) {
        let tmp = pith_tests::files::dir();
        // PITH_DIFF_KEEP=DIR keeps both runs' folders there, for a look after a failure.
        let base = match std::env::var_os("PITH_DIFF_KEEP") {
            Some(dir) => {
                let dir = PathBuf::from(dir);
                let _ = std::fs::remove_dir_all(&dir);
                dir
            }
            None => tmp.path().to_path_buf(),
        };
        let pi = self.play(Agent::Pi, &base.join("pi"));
        let pith = self.play(Agent::Pith, &base.join("pith"));
        (pi, pith)
    }
}

/// Every difference between pi's and pith's run, as readable lines (empty when equal).
/// An invocation's stdout made comparable: JSON lines (json mode) as events named after the
/// session file's ids, plain text with the scratch folder `<root>`.
fn normalized_stdout(run: &Run, stdout: &str) -> Value {
    let mut stdout = stdout.replace(&run.mock_url, "<mock>");
    for (i, path) in run.session_paths.iter().enumerate() {
        stdout = stdout.replace(&*path.to_string_lossy(), &format!("<session-file-{i}>"));
    }
    let events: Option<Vec<Value>> = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).ok())
        .collect();
    match events {
        Some(events) if !events.is_empty() => {
            let mut ids = std::collections::HashMap::new();
            for lines in &run.sessions {
                ids.extend(pi_oracle::id_names(lines));
            }
            let mut events: Vec<Value> = events
                .iter()
                .map(|e| pi_oracle::normalize_event(e, &ids, &run.root))
                .map(streaming_start_as_specified)
                .collect();
            in_call_order(&mut events);
            // An extension dialog's id is fresh in each run (pi: a UUID; pith: `ext-ui-N`):
            // named by order of appearance.
            for (n, e) in events
                .iter_mut()
                .filter(|e| e["type"] == "extension_ui_request")
                .enumerate()
            {
                e["id"] = json!(format!("<dialog-{n}>"));
            }
            Value::from(events)
        }
        _ => Value::from(stdout.replace(&*run.root.to_string_lossy(), "<root>")),
    }
}

/// An assistant `message_start` as agent-and-events.md §8.1 specifies it: no `responseId`,
/// no content, zero usage; a `message_update` without its usage. pi writes its lines from live objects, so when it lags behind the stream (its
/// first reply of a session, which also creates the file) an Anthropic `message_start`
/// already shows what the stream's first event said; that lag is set aside.
fn streaming_start_as_specified(mut event: Value) -> Value {
    // The same lag shows later usage in a `message_update` (§8.1): its usage is timing.
    if event["type"] == "message_update" {
        event["usage"] = json!("<usage as the line was written>");
        return event;
    }
    if event["type"] == "message_start" && event["message"]["role"] == "assistant" {
        let message = &mut event["message"];
        if let Some(m) = message.as_object_mut() {
            m.remove("responseId");
            // §8.1: before any content (pi's lag can show the first parts already).
            m.insert("content".to_owned(), json!([]));
        }
        let usage = &mut message["usage"];
        for count in ["input", "output", "cacheRead", "cacheWrite", "totalTokens"] {
            if usage.get(count).is_some() {
                usage[count] = json!(0);
            }
        }
        if let Some(u) = usage.as_object_mut() {
            u.remove("cacheWrite1h");
            if let Some(cost) = u.get_mut("cost").and_then(Value::as_object_mut) {
                cost.remove("totalFromProvider");
            }
        }
    }
    event
}

/// Parallel tool calls report `tool_execution_update`/`_end` in completion order, which timing
/// decides; each run of such events is put in call order (stable, so one call's own events
/// keep theirs).
fn in_call_order(events: &mut [Value]) {
    let is_report = |e: &Value| {
        matches!(
            e["type"].as_str(),
            Some("tool_execution_update" | "tool_execution_end")
        )
    };
    let mut i = 0;
    while i < events.len() {
        if !is_report(&events[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < events.len() && is_report(&events[i]) {
            i += 1;
        }
        events[start..i].sort_by(|a, b| {
            a["toolCallId"]
                .as_str()
                .unwrap_or_default()
                .cmp(b["toolCallId"].as_str().unwrap_or_default())
        });
    }
}

/// `<session-file-i>` for the run's session file paths wherever a string holds one (a clone's
/// `parentSession`).
fn name_session_files(v: &mut Value, run: &Run) {
    match v {
        Value::String(text) => {
            for (i, path) in run.session_paths.iter().enumerate() {
                let path = path.to_string_lossy();
                if text.contains(&*path) {
                    *text = text.replace(&*path, &format!("<session-file-{i}>"));
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| name_session_files(x, run)),
        Value::Object(map) => map.values_mut().for_each(|x| name_session_files(x, run)),
        _ => {}
    }
}

/// A summary request with its wording set aside: compaction.md §7 gives pith its own words
/// for the summarization system prompt and instructions, and fixes the structure — the
/// conversation and previous summary in their tags or headings, and `Additional focus`.
/// A summary request is one whose only message is a user message starting with
/// `<conversation>` or `# Conversation` (Chat Completions and Anthropic `messages`, the
/// Responses API's `input`, Google's `contents`).
fn summary_wording_aside(request: &Value) -> Value {
    let mut r = request.clone();
    let list = ["messages", "input", "contents"]
        .into_iter()
        .find(|k| r.get(*k).is_some_and(Value::is_array));
    let Some(list) = list else {
        return r;
    };
    let Some(messages) = r[list].as_array_mut() else {
        return r;
    };
    let Some(user) = messages.iter().position(|m| m["role"] == "user") else {
        return r;
    };
    let text = match (&messages[user]["content"], &messages[user]["parts"]) {
        (Value::String(t), _) => t.clone(),
        (Value::Null, parts) => parts[0]["text"].as_str().unwrap_or_default().to_owned(),
        (c, _) => c[0]["text"].as_str().unwrap_or_default().to_owned(),
    };
    let cut = if text.starts_with("<conversation>") {
        ["</previous-summary>\n\n", "</conversation>\n\n"]
            .iter()
            .find_map(|tag| text.find(tag).map(|i| i + tag.len()))
    } else if text.starts_with("# Conversation") {
        text.find("# Instructions\n")
            .map(|i| i + "# Instructions\n".len())
    } else {
        None
    };
    let Some(cut) = cut else {
        return r;
    };
    let focus = text
        .find("\n\nAdditional focus: ")
        .map(|i| &text[i..])
        .unwrap_or("");
    let kept = format!("{}<instructions>{focus}", &text[..cut]);
    match list {
        "messages" => messages[user]["content"] = json!([{"type": "text", "text": kept}]),
        "contents" => messages[user]["parts"][0]["text"] = json!(kept),
        _ => messages[user]["content"][0]["text"] = json!(kept),
    }
    for m in messages.iter_mut() {
        if m["role"] == "system" || m["role"] == "developer" {
            m["content"] = json!("<summarization prompt>");
        }
    }
    for key in ["system", "systemInstruction", "instructions"] {
        if let Some(system) = r.get_mut(key) {
            *system = json!("<summarization prompt>");
        }
    }
    r
}

/// A compaction's token estimates count pi's system message (docs/divergences.md): set
/// aside wherever they appear (entries, `compaction_end`, rpc `compact` answers).
fn estimates_aside(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for key in ["tokensBefore", "estimatedTokensAfter"] {
                if map.get(key).is_some_and(Value::is_number) {
                    map.insert(key.to_owned(), json!("<estimate>"));
                }
            }
            map.values_mut().for_each(estimates_aside);
        }
        Value::Array(items) => items.iter_mut().for_each(estimates_aside),
        _ => {}
    }
}

fn differences(pi: &Run, pith: &Run) -> Vec<String> {
    let mut out = Vec::new();
    for (i, (a, b)) in pi.outputs.iter().zip(&pith.outputs).enumerate() {
        let (mut a_out, mut b_out) = (normalized_stdout(pi, &a.1), normalized_stdout(pith, &b.1));
        estimates_aside(&mut a_out);
        estimates_aside(&mut b_out);
        if a_out.is_array() && b_out.is_array() {
            for d in pith_tests::compare(&a_out, &b_out, &pith_tests::CompareOptions::default()) {
                out.push(format!("invocation {i} stdout: {d}"));
            }
        } else if a_out != b_out {
            out.push(format!(
                "invocation {i}: stdout differs\n  pi:   {a_out}\n  pith: {b_out}"
            ));
        }
        if a.0 != b.0 {
            out.push(format!(
                "invocation {i}: exit {} (pi) vs {} (pith); stderr pi: {:?} pith: {:?}",
                a.0, b.0, a.2, b.2
            ));
        }
    }
    let cmp = |what: &str, e: &Value, a: &Value, out: &mut Vec<String>| {
        for d in pith_tests::compare(e, a, &pith_tests::CompareOptions::default()) {
            out.push(format!("{what}: {d}"));
        }
    };
    if pi.settings_file != pith.settings_file {
        out.push(format!(
            "settings.json differs\n  pi:   {:?}\n  pith: {:?}",
            pi.settings_file, pith.settings_file
        ));
    }
    let normalized = |run: &Run| -> Value {
        run.sessions
            .iter()
            .map(|lines| {
                let mut lines = Value::from(lines.clone());
                name_session_files(&mut lines, run);
                let lines = lines.as_array().cloned().unwrap_or_default();
                let mut lines = Value::from(pi_oracle::normalize_session(&lines, &run.root));
                estimates_aside(&mut lines);
                lines
            })
            .collect()
    };
    cmp(
        "session files",
        &normalized(pi),
        &normalized(pith),
        &mut out,
    );
    cmp(
        "requests",
        &Value::from(
            pi.requests
                .iter()
                .map(summary_wording_aside)
                .collect::<Vec<_>>(),
        ),
        &Value::from(
            pith.requests
                .iter()
                .map(summary_wording_aside)
                .collect::<Vec<_>>(),
        ),
        &mut out,
    );
    out
}

/// pi's run with the differences docs/divergences.md agrees to set aside: pi's system-message
/// entries (pith writes none; their children hang from the entry's parent) and the system
/// prompt's `<docs>` block, its `PI_*` rule and the harness's name.
fn is_system_entry(e: &Value) -> bool {
    e["type"] == "message" && e["message"]["role"] == "system"
}

/// Removes pi's system-message entries from a list of entries; an entry that hung from one
/// hangs from its parent.
fn drop_system_entries(entries: &mut Vec<Value>) {
    let mut reparent: Vec<(Value, Value)> = Vec::new();
    entries.retain(|e| {
        let system = is_system_entry(e);
        if system {
            reparent.push((e["id"].clone(), e["parentId"].clone()));
        }
        !system
    });
    for (id, parent) in reparent {
        for e in entries.iter_mut() {
            if e["parentId"] == id {
                e["parentId"] = parent.clone();
            }
        }
    }
}

/// get_tree's nodes without pi's system-message entries: such a node's children take its
/// place, their entries hanging from its parent.
fn drop_system_nodes(nodes: &mut Vec<Value>) {
    let mut i = 0;
    while i < nodes.len() {
        if is_system_entry(&nodes[i]["entry"]) {
            let node = nodes.remove(i);
            let parent = node["entry"]["parentId"].clone();
            let children = node["children"].as_array().cloned().unwrap_or_default();
            for (k, mut child) in children.into_iter().enumerate() {
                child["entry"]["parentId"] = parent.clone();
                nodes.insert(i + k, child);
            }
            continue;
        }
        if let Some(children) = nodes[i].get_mut("children").and_then(Value::as_array_mut) {
            drop_system_nodes(children);
        }
        i += 1;
    }
}

/// pi's system prompt as pith words it (docs/divergences.md, "the system prompt"): no
/// `<docs>` block, no `PI_*` rule, the harness named pith.
fn agreed_prompt(prompt: &mut Value) {
    let Some(text) = prompt.as_str() else {
        return;
    };
    let mut text = text.replacen("running inside pi,", "running inside pith,", 1);
    if let (Some(start), Some(end)) = (text.find("<docs>\n"), text.find("</docs>\n\n")) {
        text.replace_range(start..end + "</docs>\n\n".len(), "");
    }
    text = text.replace(
        "- You can inspect PI_* environment variables for current model and session details.\n",
        "",
    );
    *prompt = Value::from(text);
}

fn without_agreed_divergences(mut pi: Run) -> Run {
    // One system message per session file, on the path of its leaf.
    let system_messages = pi
        .sessions
        .first()
        .map(|lines| lines.iter().filter(|e| is_system_entry(e)).count() as u64)
        .unwrap_or(0);
    for session in &mut pi.sessions {
        drop_system_entries(session);
        for e in session.iter_mut().filter(|e| e["type"] == "compaction") {
            if let Some(m) = e.as_object_mut() {
                m.remove("systemMessage");
            }
        }
    }
    // json mode: the system message's events, and the message in agent_end's list.
    let is_system = |m: &Value| m["role"] == "system";
    edit_events(&mut pi, |mut e| {
        if is_system(&e["message"]) {
            return None;
        }
        if let Some(list) = e.get_mut("messages").and_then(Value::as_array_mut) {
            list.retain(|m| !is_system(m));
        }
        // get_commands: pi's llama.cpp router command (pith has none).
        if e["command"] == "get_commands"
            && let Some(list) = e["data"].get_mut("commands").and_then(Value::as_array_mut)
        {
            list.retain(|c| c["name"] != "llama");
        }
        mcp_description_aside(&mut e);
        // rpc answers: get_messages' list, get_state's and get_session_stats' counts,
        // get_entries' entries and get_tree's nodes hold it too.
        if let Some(data) = e.get_mut("data") {
            if let Some(entries) = data.get_mut("entries").and_then(Value::as_array_mut) {
                drop_system_entries(entries);
            }
            if let Some(tree) = data.get_mut("tree").and_then(Value::as_array_mut) {
                drop_system_nodes(tree);
            }
            if let Some(list) = data.get_mut("messages").and_then(Value::as_array_mut) {
                list.retain(|m| !is_system(m));
            }
            for count in ["messageCount", "totalMessages"] {
                if let Some(n) = data.get(count).and_then(Value::as_u64) {
                    data[count] = Value::from(n.saturating_sub(system_messages));
                }
            }
        }
        Some(e)
    });
    for request in &mut pi.requests {
        // Chat Completions: a system or developer message; Anthropic: the `system` blocks.
        if let Some(messages) = request.get_mut("messages").and_then(Value::as_array_mut) {
            for m in messages {
                if m["role"] == "system" || m["role"] == "developer" {
                    agreed_prompt(&mut m["content"]);
                }
            }
        }
        if let Some(blocks) = request.get_mut("system").and_then(Value::as_array_mut) {
            for b in blocks {
                agreed_prompt(&mut b["text"]);
            }
        }
        // Google: `systemInstruction`'s parts; Responses: a system or developer input item.
        if let Some(parts) = request
            .get_mut("systemInstruction")
            .and_then(|s| s.get_mut("parts"))
            .and_then(Value::as_array_mut)
        {
            for p in parts {
                agreed_prompt(&mut p["text"]);
            }
        }
        if let Some(items) = request.get_mut("input").and_then(Value::as_array_mut) {
            for m in items {
                if m["role"] == "system" || m["role"] == "developer" {
                    agreed_prompt(&mut m["content"]);
                }
            }
        }
    }
    pi
}

/// pith's run with its own agreed extras set aside: the offline model in
/// `get_available_models` (docs/divergences.md, "the models a session can use") and the
/// wording of `/mcp`'s description.
fn without_pith_extras(mut pith: Run) -> Run {
    edit_events(&mut pith, |mut e| {
        if e["command"] == "get_available_models"
            && let Some(models) = e["data"].get_mut("models").and_then(Value::as_array_mut)
        {
            models.retain(|m| m["provider"] != "faux");
        }
        mcp_description_aside(&mut e);
        Some(e)
    });
    pith
}

/// Rewrites every invocation's stdout that is JSON lines (json and rpc mode) event by
/// event: `edit` returns the event to keep, or `None` to drop it. Text output is left alone.
fn edit_events(run: &mut Run, edit: impl Fn(Value) -> Option<Value>) {
    for output in &mut run.outputs {
        let Some(events) = output
            .1
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).ok())
            .collect::<Option<Vec<Value>>>()
        else {
            continue;
        };
        output.1 = events
            .into_iter()
            .filter_map(&edit)
            .map(|e| format!("{e}\n"))
            .collect();
    }
}

/// `get_commands`' `/mcp` entry with its description set aside: pith words it its own way
/// (docs/divergences.md, "rpc `get_commands`").
fn mcp_description_aside(e: &mut Value) {
    if e["command"] == "get_commands"
        && let Some(list) = e["data"].get_mut("commands").and_then(Value::as_array_mut)
    {
        for c in list.iter_mut().filter(|c| c["name"] == "mcp") {
            c["description"] = json!("<mcp>");
        }
    }
}

/// An image's bytes as `<MIME WIDTHxHEIGHT>`: pi re-encodes with Photon, pith with the `image`
/// crate, so a resized or converted image has other bytes (and a BMP's PNG another colour
/// type) at the same type and size (docs/divergences.md, "re-encoded images"). Applies to
/// image blocks (`{"type":"image","data",…}`) and Chat Completions' `data:` URLs.
fn image_bytes_aside(v: &mut Value) {
    fn shape(base64: &str) -> String {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(base64)
            .unwrap_or_default();
        let reader = image::ImageReader::new(std::io::Cursor::new(bytes))
            .with_guessed_format()
            .unwrap();
        let format = reader.format().map(|f| f.to_mime_type().to_owned());
        let (w, h) = reader.into_dimensions().unwrap_or((0, 0));
        format!("<{} {w}x{h}>", format.unwrap_or_default())
    }
    match v {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("image")
                && let Some(Value::String(data)) = map.get_mut("data")
            {
                *data = shape(data);
            }
            if let Some(Value::String(url)) = map.get_mut("url")
                && let Some((_, data)) = url
                    .strip_prefix("data:")
                    .and_then(|u| u.split_once(";base64,"))
            {
                *url = shape(data);
            }
            map.values_mut().for_each(image_bytes_aside);
        }
        Value::Array(items) => items.iter_mut().for_each(image_bytes_aside),
        _ => {}
    }
}

fn without_image_bytes(mut run: Run) -> Run {
    run.sessions
        .iter_mut()
        .flatten()
        .for_each(image_bytes_aside);
    run.requests.iter_mut().for_each(image_bytes_aside);
    edit_events(&mut run, |mut e| {
        image_bytes_aside(&mut e);
        Some(e)
    });
    run
}

fn assert_same(scenario: Scenario) {
    let (pi, pith) = scenario.both();
    let mut pith = without_pith_extras(pith);
    let mut pi = without_agreed_divergences(pi);
    if scenario.reencoded_images {
        pi = without_image_bytes(pi);
        pith = without_image_bytes(pith);
    }
    for &(i, exit, stderr) in &scenario.own_output {
        assert_eq!(
            (pith.outputs[i].0, pith.outputs[i].2.as_str()),
            (exit, stderr),
            "pith's own output of invocation {i}"
        );
        pi.outputs[i] = (0, String::new(), String::new());
        pith.outputs[i] = (0, String::new(), String::new());
    }
    if scenario.grep_in_path_order {
        for run in [&mut pi, &mut pith] {
            grep_results_in_path_order(run);
        }
    }
    let diffs = differences(&pi, &pith);
    assert!(
        diffs.is_empty(),
        "pith differs from pi 1.6.0:\n{}",
        diffs.join("\n")
    );
}

/// Every grep result in `run` (a string of `path:N: text` and `path-N- text` lines, then
/// notices after a blank line) with its files' blocks in path order, and every find result
/// (a path a line) sorted.
fn grep_results_in_path_order(run: &mut Run) {
    fn visit(v: &mut Value, line: &regex::Regex) {
        match v {
            Value::String(s) => {
                if let Some(sorted) = in_path_order(s, line) {
                    *s = sorted;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| visit(i, line)),
            Value::Object(map) => map.values_mut().for_each(|i| visit(i, line)),
            _ => {}
        }
    }
    let line = regex::Regex::new(r"^(.+?)[:-]\d+[:-] ").unwrap();
    for v in run
        .requests
        .iter_mut()
        .chain(run.sessions.iter_mut().flatten())
    {
        visit(v, &line);
    }
    edit_events(run, |mut e| {
        visit(&mut e, &line);
        Some(e)
    });
}

/// `text`'s file blocks (grep) or paths (find) sorted by path, or `None` when it is not a
/// result of two files or more.
fn in_path_order(text: &str, line: &regex::Regex) -> Option<String> {
    let (body, notices) = match text.split_once("\n\n") {
        Some((b, n)) => (b, Some(n)),
        None => (text, None),
    };
    // find: one path a line.
    if body.lines().count() > 1 && body.lines().all(|l| !l.contains([' ', ':'])) {
        let mut paths: Vec<&str> = body.lines().collect();
        paths.sort_unstable();
        let mut out = paths.join("\n");
        if let Some(n) = notices {
            out.push_str("\n\n");
            out.push_str(n);
        }
        return Some(out);
    }
    let mut blocks: Vec<(String, Vec<&str>)> = Vec::new();
    for l in body.lines() {
        let path = line.captures(l)?.get(1)?.as_str().to_owned();
        match blocks.last_mut() {
            Some((p, lines)) if *p == path => lines.push(l),
            _ => blocks.push((path, vec![l])),
        }
    }
    if blocks.len() < 2 {
        return None;
    }
    blocks.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = blocks
        .iter()
        .flat_map(|(_, lines)| lines.iter().copied())
        .collect::<Vec<_>>()
        .join("\n");
    if let Some(n) = notices {
        out.push_str("\n\n");
        out.push_str(n);
    }
    Some(out)
}

fn text(t: &str) -> Value {
    json!({"text": t})
}

#[test]
fn a_plain_print_run() {
    assert_same(Scenario::new(json!([text("Hello there.")])).run(&["-p", "hi"]));
}

#[test]
fn a_tool_call_and_its_result() {
    assert_same(
        Scenario::new(json!([
            {"text": "Let me look.", "tool_calls": [{"id": "call_1", "name": "bash",
                "arguments": {"command": "echo hi"}}]},
            text("It printed hi.")
        ]))
        .run(&["-p", "run echo"]),
    );
}

#[test]
fn a_retried_server_error() {
    assert_same(
        Scenario::new(json!([
            {"status": 500, "error": {"message": "boom", "type": "server_error"}},
            text("After the retry.")
        ]))
        .run(&["-p", "hi"]),
    );
}

#[test]
fn two_prompts_then_continue() {
    assert_same(
        Scenario::new(json!([text("one"), text("two"), text("three")]))
            .run(&["-p", "first", "second"])
            .run(&["-c", "-p", "third"]),
    );
}

#[test]
fn a_named_session_with_a_thinking_level() {
    assert_same(Scenario::new(json!([text("named")])).run(&[
        "-n",
        "my work",
        "--thinking",
        "high",
        "-p",
        "hi",
    ]));
}

#[test]
fn a_reply_cut_at_the_output_limit() {
    assert_same(
        Scenario::new(json!([{"text": "partial", "finish_reason": "length"}]))
            .run(&["-p", "hi"])
            .diverging_output(
                1,
                "Response was truncated: the model reached its output token limit.\n",
            ),
    );
}

#[test]
fn a_client_error_is_not_retried() {
    assert_same(
        Scenario::new(json!([
            {"status": 400, "error": {"message": "bad request", "type": "invalid_request_error"}}
        ]))
        .run(&["-p", "hi"]),
    );
}

#[test]
fn json_mode_events() {
    assert_same(
        Scenario::new(json!([
            {"text": "Checking.", "tool_calls": [{"id": "call_1", "name": "bash",
                "arguments": {"command": "echo hi"}}]},
            text("Done.")
        ]))
        .run(&["--mode", "json", "-p", "go"]),
    );
}

#[test]
fn a_failing_command_and_a_file_read() {
    assert_same(
        Scenario::new(json!([
            {"text": "", "tool_calls": [
                {"id": "call_1", "name": "bash", "arguments": {"command": "echo oops; exit 3"}},
                {"id": "call_2", "name": "read", "arguments": {"path": "notes.txt"}},
                {"id": "call_3", "name": "read", "arguments": {"path": "missing.txt"}}
            ]},
            text("Seen.")
        ]))
        .file("notes.txt", "line one\nline two\n")
        .run(&["--mode", "json", "-p", "go"]),
    );
}

#[test]
fn an_rpc_session_with_queries() {
    let script = [
        json!({"id": "1", "type": "prompt", "message": "hello"}),
        json!({"id": "2", "type": "get_state"}),
        json!({"id": "3", "type": "get_messages"}),
        json!({"id": "4", "type": "set_thinking_level", "level": "high"}),
        json!({"id": "5", "type": "prompt", "message": "again"}),
        json!({"id": "6", "type": "get_session_stats"}),
        json!({"id": "7", "type": "no_such_command"}),
    ]
    .iter()
    .map(|c| format!("{c}\n"))
    .collect::<String>();
    assert_same(
        Scenario::new(json!([text("Hi."), text("Again.")])).run_with(&["--mode", "rpc"], &script),
    );
}

#[test]
fn tool_flags_narrow_what_the_model_is_offered() {
    assert_same(
        Scenario::new(json!([text("a"), text("b"), text("c")]))
            .run(&["--tools", "read,ls", "-p", "one"])
            .run(&["-xt", "bash,edit", "-p", "two"])
            .run(&["--no-tools", "-p", "three"]),
    );
}

#[test]
fn context_files_and_appended_prompts_reach_the_system_prompt() {
    assert_same(
        Scenario::new(json!([text("ok")]))
            .file("AGENTS.md", "Always answer in French.\n")
            .run(&["--append-system-prompt", "Be brief.", "-p", "hi"]),
    );
}

#[test]
fn a_session_id_then_a_named_resume() {
    assert_same(
        Scenario::new(json!([text("first"), text("second")]))
            .run(&[
                "--session-id",
                "01a233d7-0000-7000-8000-000000000001",
                "-p",
                "one",
            ])
            .run(&[
                "--session",
                "01a233d7-0000-7000-8000-000000000001",
                "-n",
                "resumed",
                "-p",
                "two",
            ]),
    );
}

#[test]
fn an_rpc_session_that_names_starts_over_and_compacts() {
    let script = [
        json!({"id": "1", "type": "prompt", "message": "first question"}),
        json!({"id": "2", "type": "set_session_name", "name": "work"}),
        json!({"id": "3", "type": "get_available_thinking_levels"}),
        json!({"id": "4", "type": "new_session"}),
        json!({"id": "5", "type": "prompt", "message": "in the new session"}),
        json!({"id": "6", "type": "get_state"}),
    ]
    .iter()
    .map(|c| format!("{c}\n"))
    .collect::<String>();
    assert_same(
        Scenario::new(json!([text("One."), text("Two.")])).run_with(&["--mode", "rpc"], &script),
    );
}

#[test]
fn anthropic_messages_with_thinking_and_a_tool_call() {
    assert_same(
        Scenario::new(json!([
            {"thinking": "Let me check.", "text": "Looking.", "tool_calls": [
                {"id": "toolu_1", "name": "bash", "arguments": {"command": "echo hi"}}]},
            {"thinking": "Done.", "text": "It said hi."}
        ]))
        .api("anthropic-messages")
        .run(&["--mode", "json", "-p", "run it"])
        .run(&["-c", "-p", "and now?"]),
    );
}

#[test]
fn reasoning_content_from_an_openai_compatible_server() {
    assert_same(
        Scenario::new(json!([
            {"thinking": "Thinking hard.", "text": "Answer."},
            text("Second.")
        ]))
        .run(&["--thinking", "high", "-p", "one", "two"]),
    );
}

#[test]
fn an_rpc_session_that_compacts_forks_and_clones() {
    let script = [
        json!({"id": "1", "type": "prompt", "message": "first question with some words in it"}),
        json!({"id": "2", "type": "prompt", "message": "second question with more words"}),
        json!({"id": "3", "type": "compact"}),
        json!({"id": "4", "type": "get_entries"}),
        json!({"id": "5", "type": "get_tree"}),
        json!({"id": "6", "type": "get_fork_messages"}),
        json!({"id": "7", "type": "clone"}),
        json!({"id": "8", "type": "get_state"}),
        json!({"id": "9", "type": "bash", "command": "echo from the user"}),
        json!({"id": "10", "type": "get_messages"}),
    ]
    .iter()
    .map(|c| format!("{c}\n"))
    .collect::<String>();
    let mut settings = json!({"retry": {"baseDelayMs": 10}, "compaction": {"keepRecentTokens": 4}});
    settings["compaction"]["reserveTokens"] = json!(1000);
    assert_same(
        Scenario::new(json!([
            text("The first answer, with words."),
            text("The second answer, with words."),
            text("## Goal\nA summary.")
        ]))
        .settings(settings)
        .run_with(&["--mode", "rpc"], &script),
    );
}

fn rpc_script(commands: &[Value]) -> String {
    commands.iter().map(|c| format!("{c}\n")).collect()
}

#[test]
fn an_rpc_fork_before_an_earlier_prompt() {
    let script = rpc_script(&[
        json!({"id": "1", "type": "prompt", "message": "first"}),
        json!({"id": "2", "type": "prompt", "message": "second"}),
        json!({"id": "3", "type": "get_fork_messages"}),
        json!({"id": "4", "type": "fork", "entryId": "$fork:1"}),
        json!({"id": "5", "type": "get_state"}),
        json!({"id": "6", "type": "prompt", "message": "second, again"}),
        json!({"id": "7", "type": "get_messages"}),
        json!({"id": "8", "type": "fork", "entryId": "no-such-entry"}),
    ]);
    assert_same(
        Scenario::new(json!([text("One."), text("Two."), text("Two, again.")]))
            .run_with(&["--mode", "rpc"], &script),
    );
}

#[test]
fn an_rpc_steer_and_follow_up_during_a_slow_reply() {
    let script = rpc_script(&[
        json!({"id": "1", "type": "prompt", "message": "start", "_nowait": true}),
        // Both agents are then waiting for the slow reply's headers (with room for a slow
        // machine between the prompt's answer and the request).
        json!({"type": "_sleep", "ms": 1200}),
        json!({"id": "2", "type": "steer", "message": "also this"}),
        json!({"id": "3", "type": "follow_up", "message": "and then that"}),
        json!({"type": "_settle"}),
        json!({"id": "4", "type": "get_messages"}),
    ]);
    let mut slow = text("Working on it.");
    slow["delay_ms"] = json!(3500);
    assert_same(
        Scenario::new(json!([slow, text("Steered."), text("Followed up.")]))
            .run_with(&["--mode", "rpc"], &script),
    );
}

#[test]
fn an_rpc_abort_of_a_slow_reply() {
    let script = rpc_script(&[
        json!({"id": "1", "type": "prompt", "message": "start", "_nowait": true}),
        json!({"type": "_sleep", "ms": 1200}),
        json!({"id": "2", "type": "abort"}),
        json!({"type": "_settle"}),
        json!({"id": "3", "type": "get_messages"}),
        json!({"id": "4", "type": "set_model", "provider": "mock", "modelId": "nope"}),
        json!({"id": "5", "type": "cycle_model"}),
    ]);
    let mut slow = text("Too late.");
    slow["delay_ms"] = json!(4000);
    assert_same(Scenario::new(json!([slow])).run_with(&["--mode", "rpc"], &script));
}

#[test]
fn an_rpc_session_with_settings_and_queries() {
    let script = rpc_script(&[
        json!({"id": "1", "type": "get_available_models"}),
        json!({"id": "2", "type": "get_available_thinking_levels"}),
        json!({"id": "3", "type": "cycle_thinking_level"}),
        json!({"id": "4", "type": "set_thinking_level", "level": "max"}),
        json!({"id": "5", "type": "set_steering_mode", "mode": "one-at-a-time"}),
        json!({"id": "6", "type": "set_follow_up_mode", "mode": "all"}),
        json!({"id": "7", "type": "set_auto_compaction", "enabled": false}),
        json!({"id": "8", "type": "set_auto_retry", "enabled": false}),
        json!({"id": "9", "type": "abort_retry"}),
        json!({"id": "10", "type": "get_state"}),
        json!({"id": "11", "type": "steer", "message": "while idle"}),
        json!({"id": "12", "type": "follow_up", "message": "also while idle"}),
        json!({"id": "13", "type": "clear_queue"}),
        json!({"id": "14", "type": "prompt", "message": "hello there"}),
        json!({"id": "15", "type": "get_last_assistant_text"}),
        json!({"id": "16", "type": "bash", "command": "echo hidden", "excludeFromContext": true}),
        json!({"id": "17", "type": "bash", "command": "echo shown; exit 2"}),
        json!({"id": "18", "type": "abort_bash"}),
        json!({"id": "19", "type": "set_session_name", "name": "Tree\nand labels  "}),
        json!({"id": "20", "type": "set_session_name", "name": "   "}),
        json!({"id": "21", "type": "get_commands"}),
        json!({"id": "22", "type": "get_session_stats"}),
        json!({"id": "23", "type": "prompt", "message": "and again"}),
        json!({"id": "24", "type": "get_messages"}),
    ]);
    assert_same(
        Scenario::new(json!([text("Hello yourself."), text("Again.")]))
            .run_with(&["--mode", "rpc"], &script),
    );
}

#[test]
fn the_file_tools_write_edit_and_read() {
    let call =
        |id: &str, name: &str, args: Value| json!({"id": id, "name": name, "arguments": args});
    assert_same(
        Scenario::new(json!([
            {"text": "", "tool_calls": [call("c1", "write", json!({"path": "src/lib.txt", "content": "alpha\nbeta\ngamma\n"}))]},
            {"text": "", "tool_calls": [call("c2", "edit", json!({"path": "src/lib.txt", "edits": [{"oldText": "beta", "newText": "BETA"}]}))]},
            {"text": "", "tool_calls": [call("c3", "edit", json!({"path": "src/lib.txt", "edits": [{"oldText": "nothere", "newText": "x"}]}))]},
            {"text": "", "tool_calls": [
                call("c4", "read", json!({"path": "src/lib.txt", "offset": 2, "limit": 1})),
                call("c5", "ls", json!({"path": "."}))
            ]},
            text("All done.")
        ]))
        .file("notes.md", "# Notes\nbeta here too\n")
        .run(&["--tools", "read,write,edit,ls", "--mode", "json", "-p", "work on the files"]),
    );
}

#[test]
fn a_context_overflow_is_compacted_and_retried() {
    let mut settings = json!({"retry": {"baseDelayMs": 10}, "compaction": {"keepRecentTokens": 4}});
    settings["compaction"]["reserveTokens"] = json!(1000);
    assert_same(
        Scenario::new(json!([
            text("First answer with a few words."),
            text("Second answer with a few words."),
            {"status": 400, "error": {"message": "prompt is too long: 200000 tokens > 100000 maximum", "type": "invalid_request_error"}},
            text("## Goal\nSummary of the earlier work."),
            text("Third answer after compaction.")
        ]))
        .settings(settings)
        .run(&["--mode", "json", "-p", "first question", "second question", "third question"]),
    );
}

#[test]
fn fork_no_session_and_file_arguments() {
    assert_same(
        Scenario::new(json!([
            text("one"),
            text("two"),
            text("three"),
            text("four")
        ]))
        .file("spec.md", "# Spec\nThe widget must be blue.\n")
        .run(&[
            "--session-id",
            "01a233d7-0000-7000-8000-0000000000aa",
            "-p",
            "first",
        ])
        .run(&[
            "--fork",
            "01a233d7-0000-7000-8000-0000000000aa",
            "-p",
            "forked",
        ])
        .run(&["--no-session", "-p", "ephemeral"])
        .run(&["-p", "@spec.md", "what colour?"]),
    );
}

#[test]
fn thinking_levels_at_the_edges() {
    assert_same(
        Scenario::new(json!([text("a"), text("b")]))
            .run(&["--thinking", "max", "-p", "hard one"])
            .run(&["--thinking", "off", "-c", "-p", "easy one"]),
    );
}

#[test]
fn anthropic_thinking_budgets_and_a_compaction() {
    let script = rpc_script(&[
        json!({"id": "1", "type": "set_thinking_level", "level": "high"}),
        json!({"id": "2", "type": "prompt", "message": "first question with some words in it"}),
        json!({"id": "3", "type": "set_thinking_level", "level": "minimal"}),
        json!({"id": "4", "type": "prompt", "message": "second question with more words"}),
        json!({"id": "5", "type": "compact", "customInstructions": "focus on the words"}),
        json!({"id": "6", "type": "get_messages"}),
    ]);
    let mut settings = json!({"retry": {"baseDelayMs": 10}, "compaction": {"keepRecentTokens": 4}});
    settings["compaction"]["reserveTokens"] = json!(1000);
    assert_same(
        Scenario::new(json!([
            {"thinking": "Hmm.", "text": "The first answer, with words."},
            {"text": "The second answer, with words."},
            text("## Goal\nA summary."),
            text("## Original Request\nThe prefix.")
        ]))
        .api("anthropic-messages")
        .settings(settings)
        .run_with(&["--mode", "rpc"], &script),
    );
}

#[test]
fn a_model_without_reasoning() {
    assert_same(
        Scenario::new(json!([text("plain"), text("still plain")]))
            .without_reasoning()
            .run(&["--thinking", "high", "-p", "think hard"])
            .run(&["-c", "--mode", "json", "-p", "again"]),
    );
}

#[test]
fn skills_and_prompt_templates_from_the_agent_directory() {
    assert_same(
        Scenario::new(json!([text("reviewed"), text("skilled")]))
            .agent_file(
                "prompts/review.md",
                "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 carefully, then say $ARGUMENTS.\n",
            )
            .agent_file(
                "skills/haiku/SKILL.md",
                "---\nname: haiku\ndescription: Answers in haiku form.\n---\nWrite three lines: 5, 7, 5 syllables.\n",
            )
            .run(&["-p", "/review main.rs twice"])
            .run(&["-c", "-p", "/skill:haiku about rust"]),
    );
}

#[test]
fn retries_that_run_out_in_json_mode() {
    let boom = json!({"status": 503, "error": {"message": "overloaded", "type": "server_error"}});
    let mut settings = json!({"retry": {"baseDelayMs": 10, "maxRetries": 2}});
    settings["retry"]["enabled"] = json!(true);
    assert_same(
        Scenario::new(json!([boom, boom, boom, text("after")]))
            .settings(settings)
            .run(&["--mode", "json", "-p", "try"])
            .run(&["-c", "--mode", "json", "-p", "again"]),
    );
}

#[test]
fn piped_standard_input_in_print_mode() {
    assert_same(
        Scenario::new(json!([text("from a pipe"), text("with an argument")]))
            .run_with(&["-p"], "piped question\n")
            .run_with(&["-p", "and this"], "piped context\n"),
    );
}

/// pi runs grep and find through ripgrep and fd (which it downloads into `<agent dir>/bin`;
/// scripts/install-search-tools provides them here); pith searches in-process with ripgrep's crates. The results must be the
/// same on one tree: ignore files, hidden files, globs, context lines, limits, cut lines.
#[test]
fn grep_find_and_ls_on_a_real_tree() {
    let call =
        |id: &str, name: &str, args: Value| json!({"id": id, "name": name, "arguments": args});
    let long_line = format!("needle {}\n", "x".repeat(700));
    let many: String = (0..130).map(|i| format!("pin {i}\n")).collect();
    assert_same(
        Scenario::new(json!([
            {"text": "", "tool_calls": [
                call("g1", "grep", json!({"pattern": "needle"})),
                call("g2", "grep", json!({"pattern": "NEEDLE", "ignoreCase": true, "glob": "*.rs"})),
                call("g3", "grep", json!({"pattern": "a.b", "literal": true, "context": 1})),
                call("g4", "grep", json!({"pattern": "pin", "path": "many.txt", "limit": 5})),
                call("g5", "grep", json!({"pattern": "needle", "path": "long.txt"})),
                call("g6", "grep", json!({"pattern": "nomatch-anywhere"})),
                call("g7", "grep", json!({"pattern": "("})),
                call("g8", "grep", json!({"pattern": "needle", "path": "missing-dir"}))
            ]},
            {"text": "", "tool_calls": [
                call("f1", "find", json!({"pattern": "*.rs"})),
                call("f2", "find", json!({"pattern": "**/*.md", "path": "src"})),
                call("f3", "find", json!({"pattern": "*.txt"})),
                call("f4", "find", json!({"pattern": "*.nothing"})),
                call("f5", "find", json!({"pattern": "*", "path": "missing-dir"}))
            ]},
            {"text": "", "tool_calls": [
                call("l1", "ls", json!({})),
                call("l2", "ls", json!({"path": "src", "limit": 2})),
                call("l3", "ls", json!({"path": "notes.md"})),
                call("l4", "ls", json!({"path": "missing-dir"}))
            ]},
            text("Searched.")
        ]))
        .file(".gitignore", "ignored/\n*.log\n")
        .file("ignored/skip.rs", "needle in an ignored folder\n")
        .file("debug.log", "needle in a log\n")
        .file(".hidden/secret.rs", "fn needle() {}\n")
        .file("src/main.rs", "fn main() {\n    let NEEDLE = 1;\n    a.b();\n    axb();\n}\n")
        .file("src/lib/util.rs", "// needle\npub fn util() {}\n")
        .file("src/docs/guide.md", "# Guide\nneedle here\n")
        .file("src/README.md", "read me\n")
        .file("notes.md", "a.b and needle\n")
        .file("many.txt", &many)
        .file("long.txt", &long_line)
        .file("b.txt", "b\n")
        .file("a.txt", "a\n")
        .grep_in_path_order()
        .with_search_tools()
        .run(&["--tools", "grep,find,ls", "--mode", "json", "-p", "search the tree"]),
    );
}

/// The same tools inside a git repository, where ripgrep obeys `.gitignore` too: nested
/// ignore files, `.ignore`, negated globs, a path given as a file, and `find` on a path glob.
#[test]
fn grep_and_find_inside_a_git_repository() {
    let call =
        |id: &str, name: &str, args: Value| json!({"id": id, "name": name, "arguments": args});
    assert_same(
        Scenario::new(json!([
            {"text": "", "tool_calls": [
                call("g1", "grep", json!({"pattern": "token"})),
                call("g2", "grep", json!({"pattern": "token", "glob": "!*.md"})),
                call("g3", "grep", json!({"pattern": "token", "path": "app/keep.log"})),
                call("g4", "grep", json!({"pattern": "tok(en", "literal": true}))
            ]},
            {"text": "", "tool_calls": [
                call("f1", "find", json!({"pattern": "*"})),
                call("f2", "find", json!({"pattern": "app/**/*.py"})),
                call("f3", "find", json!({"pattern": "*.LOG"}))
            ]},
            text("Done.")
        ]))
        .file(".git/HEAD", "ref: refs/heads/main\n")
        .file(".gitignore", "*.log\n!keep.log\nbuild/\n")
        .file("app/.gitignore", "generated.py\n")
        .file("app/generated.py", "token = 'generated'\n")
        .file("app/main.py", "token = 1\n")
        .file("app/deep/mod.py", "# token tok(en\n")
        .file("app/keep.log", "token kept\n")
        .file("app/drop.log", "token dropped\n")
        .file(".ignore", "private/\n")
        .file("private/key.txt", "token secret\n")
        .file("build/out.txt", "token built\n")
        .file("README.md", "token in docs\n")
        .grep_in_path_order()
        .with_search_tools()
        .run(&[
            "--tools",
            "grep,find",
            "--mode",
            "json",
            "-p",
            "search the repository",
        ]),
    );
}

/// A `width`×`height` picture (a colour gradient) in `format`, as a screenshot tool or a
/// camera would write it.
fn picture(width: u32, height: u32, format: image::ImageFormat) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x * 255 / width) as u8, (y * 255 / height) as u8, 128])
    });
    let mut bytes = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut std::io::Cursor::new(&mut bytes), format)
        .unwrap();
    bytes
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn images_given_as_file_arguments() {
    assert_same(
        Scenario::new(json!([
            text("A gradient."),
            text("A photo."),
            text("Both.")
        ]))
        .with_image_input()
        .binary_file("shot.png", picture(64, 48, image::ImageFormat::Png))
        .binary_file("photo.jpg", picture(40, 30, image::ImageFormat::Jpeg))
        .file("notes.md", "Compare the two.\n")
        .run(&["-p", "@shot.png", "what is this"])
        .run(&["-c", "--mode", "json", "-p", "@photo.jpg", "and this?"])
        .run(&[
            "-c",
            "-p",
            "@notes.md",
            "@shot.png",
            "@photo.jpg",
            "now both",
        ])
        // One argument: the whole of it is the file's name, as in pi.
        .run(&["-p", "@shot.png what is this"]),
    );
}

#[test]
fn images_sent_to_a_model_without_image_input() {
    assert_same(
        Scenario::new(json!([text("I cannot see it."), text("Still text only.")]))
            .binary_file("shot.png", picture(64, 48, image::ImageFormat::Png))
            .run(&["-p", "@shot.png", "what is this"])
            .run(&["-c", "-p", "and now?"]),
    );
}

#[test]
fn images_in_rpc_prompts_steering_and_follow_ups() {
    let image = |format| {
        json!({"type": "image", "mimeType": if format == image::ImageFormat::Png { "image/png" } else { "image/jpeg" },
            "data": base64_of(&picture(32, 24, format))})
    };
    let png = image(image::ImageFormat::Png);
    let jpeg = image(image::ImageFormat::Jpeg);
    let script = rpc_script(&[
        json!({"id": "1", "type": "prompt", "message": "look", "images": [png]}),
        json!({"id": "2", "type": "prompt", "message": "start", "images": [jpeg, png], "_nowait": true}),
        json!({"type": "_sleep", "ms": 1200}),
        json!({"id": "3", "type": "steer", "message": "also this", "images": [jpeg]}),
        json!({"id": "4", "type": "follow_up", "message": "and then that", "images": [png]}),
        json!({"id": "5", "type": "prompt", "message": "last", "images": [jpeg],
            "streamingBehavior": "followUp", "_nowait": true}),
        json!({"type": "_settle"}),
        json!({"id": "6", "type": "get_messages"}),
    ]);
    let mut slow = text("Working on it.");
    slow["delay_ms"] = json!(3500);
    assert_same(
        Scenario::new(json!([
            text("Seen."),
            slow,
            text("Steered."),
            text("Followed up."),
            text("Last.")
        ]))
        .with_image_input()
        .run_with(&["--mode", "rpc"], &script),
    );
}

#[test]
fn a_large_image_is_resized_and_a_bmp_converted() {
    assert_same(
        Scenario::new(json!([text("Wide."), text("Bitmap.")]))
            .with_image_input()
            .reencoded_images()
            .binary_file("wide.png", picture(2400, 300, image::ImageFormat::Png))
            .binary_file("old.bmp", picture(20, 10, image::ImageFormat::Bmp))
            .run(&["-p", "@wide.png", "what is this"])
            .run(&["-c", "-p", "@old.bmp", "and this?"]),
    );
}

#[test]
fn images_kept_at_their_size_when_auto_resize_is_off() {
    let mut settings = json!({"retry": {"baseDelayMs": 10}});
    settings["images"] = json!({"autoResize": false});
    assert_same(
        Scenario::new(json!([text("Wide and whole.")]))
            .with_image_input()
            .settings(settings)
            .binary_file("wide.png", picture(2400, 300, image::ImageFormat::Png))
            .run(&["--mode", "json", "-p", "@wide.png", "what is this"]),
    );
}

#[test]
fn skills_and_prompt_templates_named_in_settings() {
    let mut settings = json!({"retry": {"baseDelayMs": 10}});
    settings["skills"] = json!(["../extra/skills", "!old-skill"]);
    settings["prompts"] = json!(["~/more-prompts", "../single.md", "-prompts/hidden.md"]);
    let skill = |name: &str| {
        format!("---\nname: {name}\ndescription: The {name} skill.\n---\nDo {name} things.\n")
    };
    let template = |what: &str| format!("---\ndescription: {what}\n---\n{what}: $ARGUMENTS\n");
    let script = rpc_script(&[
        json!({"id": "1", "type": "get_commands"}),
        json!({"id": "2", "type": "prompt", "message": "/nested the code"}),
        json!({"id": "3", "type": "prompt", "message": "/skill:pdf read it"}),
    ]);
    assert_same(
        Scenario::new(json!([text("nested"), text("pdf")]))
            .settings(settings)
            .agent_file("skills/kept/SKILL.md", &skill("kept"))
            .agent_file("skills/old-skill/SKILL.md", &skill("old-skill"))
            .agent_file("prompts/review.md", &template("Review"))
            .agent_file("prompts/hidden.md", &template("Hidden"))
            .agent_file("../extra/skills/pdf/SKILL.md", &skill("pdf"))
            .agent_file("../home/more-prompts/deep/nested.md", &template("Nested"))
            .agent_file("../home/more-prompts/top.md", &template("Top"))
            .agent_file("../single.md", &template("Single"))
            .run_with(&["--mode", "rpc"], &script),
    );
}

#[test]
fn images_blocked_by_the_settings() {
    let mut settings = json!({"retry": {"baseDelayMs": 10}});
    settings["images"] = json!({"blockImages": true});
    assert_same(
        Scenario::new(json!([text("Blocked."), text("Still blocked.")]))
            .with_image_input()
            .settings(settings)
            .binary_file("shot.png", picture(64, 48, image::ImageFormat::Png))
            .binary_file("photo.jpg", picture(40, 30, image::ImageFormat::Jpeg))
            .run(&["-p", "@shot.png", "@photo.jpg", "what are these"])
            .run(&["-c", "-p", "and now?"]),
    );
}

#[test]
fn the_read_tool_resizes_and_converts_images_as_prompts_do() {
    assert_same(
        Scenario::new(json!([
            {"text": "Reading.", "tool_calls": [
                {"id": "call_1", "name": "read", "arguments": {"path": "wide.png"}},
                {"id": "call_2", "name": "read", "arguments": {"path": "old.bmp"}}]},
            text("Two pictures.")
        ]))
        .with_image_input()
        .reencoded_images()
        .binary_file("wide.png", picture(2400, 300, image::ImageFormat::Png))
        .binary_file("old.bmp", picture(20, 10, image::ImageFormat::Bmp))
        .run(&["--mode", "json", "-p", "read both"]),
    );
}

#[test]
fn file_argument_images_through_the_anthropic_api() {
    assert_same(
        Scenario::new(json!([text("A gradient."), text("Text only.")]))
            .api("anthropic-messages")
            .with_image_input()
            .binary_file("shot.png", picture(64, 48, image::ImageFormat::Png))
            .run(&["-p", "@shot.png", "what is this"])
            .run(&["-c", "-p", "and the colours?"]),
    );
}

/// A conversation through `api` with reasoning, a tool call and a follow-up prompt (issue 18).
fn reasoning_and_a_tool_call_through(api: &'static str) -> Scenario {
    Scenario::new(json!([
        {"thinking": "Let me read the notes.", "text": "Reading.", "tool_calls": [
            {"id": "call_1", "name": "read", "arguments": {"path": "notes.md"}}]},
        {"thinking": "They say hello.", "text": "The notes say hello."},
        {"thinking": "Again.", "text": "Still hello."}
    ]))
    .api(api)
    .file("notes.md", "hello\n")
    .run(&["--mode", "json", "-p", "what do the notes say?"])
    .run(&["-c", "--mode", "json", "-p", "and now?"])
}

#[test]
fn reasoning_and_a_tool_call_through_the_google_api() {
    assert_same(reasoning_and_a_tool_call_through("google-generative-ai"));
}

#[test]
fn reasoning_and_a_tool_call_through_the_responses_api() {
    assert_same(reasoning_and_a_tool_call_through("openai-responses"));
}

/// extensions.md §4 step 4: the same permission gate as a TypeScript extension in pi and as
/// the Python PXP gate in pith; with no UI (json mode) both block `rm -rf` with the same
/// reason, so the blocked call is the same error tool result, and let `ls` run.
#[test]
fn a_permission_gate_blocks_the_same_call_in_pi_and_pith() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let call = |id: &str, command: &str| json!({"id": id, "name": "bash", "arguments": {"command": command}});
    assert_same(
        Scenario::new(json!([
            {"text": "Cleaning up.", "tool_calls": [call("call_1", "rm -rf build")]},
            {"text": "Listing instead.", "tool_calls": [call("call_2", "ls")]},
            {"text": "", "tool_calls": [{"id": "call_3", "name": "write",
                "arguments": {"path": ".env", "content": "SECRET=1\n"}}]},
            text("Done."),
            text("Still here.")
        ]))
        .extension(
            manifest.join("tests/cli/extensions/gate.ts"),
            manifest.join("../examples/extensions/python/permission_gate.py"),
        )
        .file("build/out.txt", "built\n")
        .run(&["--mode", "json", "-p", "clean the build folder"])
        .run(&["-c", "-p", "is it still there?"]),
    );
}

/// Through `api`: thinking off, two tool calls in one reply with cache reads in its usage, a
/// reply cut at the token limit, then thinking high in a follow-up (issue 18).
fn parallel_calls_and_a_cut_reply_through(api: &'static str) -> Scenario {
    let read =
        |id: &str, path: &str| json!({"id": id, "name": "read", "arguments": {"path": path}});
    Scenario::new(json!([
        {"text": "", "tool_calls": [read("call_a", "a.txt"), read("call_b", "b.txt")],
            "usage": {"input": 20, "output": 7, "cacheRead": 12}},
        {"text": "The first says a and the sec", "finish_reason": "length"},
        {"thinking": "Finish the sentence.", "text": "The second says b."}
    ]))
    .api(api)
    .file("a.txt", "a\n")
    .file("b.txt", "b\n")
    .run(&["--thinking", "off", "--mode", "json", "-p", "read both"])
    .run(&["-c", "--thinking", "high", "--mode", "json", "-p", "go on"])
}

#[test]
fn parallel_calls_and_a_cut_reply_through_the_google_api() {
    assert_same(parallel_calls_and_a_cut_reply_through(
        "google-generative-ai",
    ));
}

#[test]
fn parallel_calls_and_a_cut_reply_through_the_responses_api() {
    assert_same(parallel_calls_and_a_cut_reply_through("openai-responses"));
}

/// The same gates in rpc mode, where both have a UI: the dangerous command is put to the
/// client as an `extension_ui_request` select; "No" blocks it (`Blocked by user`), "Yes"
/// lets it run; an edit of a protected file is blocked with a `notify` to the client.
#[test]
fn a_permission_gate_asks_the_rpc_client_in_pi_and_pith() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let call = |id: &str, command: &str| json!({"id": id, "name": "bash", "arguments": {"command": command}});
    let script = rpc_script(&[
        json!({"type": "_ui_answers", "values": ["No", "Yes"]}),
        json!({"id": "1", "type": "prompt", "message": "clean the build folder"}),
        json!({"id": "2", "type": "prompt", "message": "really clean it"}),
        json!({"id": "3", "type": "get_messages"}),
    ]);
    assert_same(
        Scenario::new(json!([
            {"text": "Cleaning up.", "tool_calls": [call("call_1", "rm -rf build")]},
            text("Blocked, then."),
            {"text": "Again.", "tool_calls": [call("call_2", "rm -rf build"),
                {"id": "call_3", "name": "edit", "arguments": {"path": "app/.env",
                    "edits": [{"oldText": "A=1", "newText": "A=2"}]}}]},
            text("Cleaned.")
        ]))
        .extension(
            manifest.join("tests/cli/extensions/gate.ts"),
            manifest.join("../examples/extensions/python/permission_gate.py"),
        )
        .file("build/out.txt", "built\n")
        .file("app/.env", "A=1\n")
        .run_with(&["--mode", "rpc"], &script),
    );
}

/// Through `api`: an overloaded server retried once, a request refused (400) and a stream
/// that stops before its end (issue 18): the error messages in the session as pi words them.
fn errors_through(api: &'static str) -> Scenario {
    let status = |code: u16, message: &str, kind: &str| json!({"status": code, "error": {"message": message, "type": kind, "code": code}});
    let mut cut = text("Half an ans");
    cut["cut"] = json!(true);
    let mut settings = json!({"retry": {"baseDelayMs": 10, "maxRetries": 1}});
    settings["retry"]["enabled"] = json!(true);
    Scenario::new(json!([
        status(503, "overloaded", "server_error"),
        text("After a retry."),
        status(
            400,
            "bad request: the prompt is too long",
            "invalid_request_error"
        ),
        cut,
        cut
    ]))
    .api(api)
    .settings(settings)
    .run(&["--mode", "json", "-p", "first"])
    .run(&["-c", "--mode", "json", "-p", "second"])
    .run(&["-c", "--mode", "json", "-p", "third"])
}

#[test]
fn errors_through_the_google_api() {
    assert_same(errors_through("google-generative-ai"));
}

#[test]
fn errors_through_the_responses_api() {
    assert_same(errors_through("openai-responses"));
}

/// Through `api`: a reasoning turn with a tool call, a compaction with its summary request,
/// then a prompt on the compacted context (issue 18).
fn a_compaction_through(api: &'static str) -> Scenario {
    let script = rpc_script(&[
        json!({"id": "1", "type": "prompt", "message": "first question with some words in it"}),
        json!({"id": "2", "type": "prompt", "message": "second question with more words"}),
        json!({"id": "3", "type": "compact", "customInstructions": "focus on the words"}),
        json!({"id": "4", "type": "prompt", "message": "third question"}),
        json!({"id": "5", "type": "get_messages"}),
    ]);
    let mut settings = json!({"retry": {"baseDelayMs": 10}, "compaction": {"keepRecentTokens": 4}});
    settings["compaction"]["reserveTokens"] = json!(1000);
    Scenario::new(json!([
        {"thinking": "Look first.", "text": "Reading.", "tool_calls": [
            {"id": "call_1", "name": "read", "arguments": {"path": "notes.md"}}]},
        {"thinking": "Done.", "text": "The first answer, with words."},
        text("The second answer, with words."),
        text("## Goal\nA summary."),
        text("## Original Request\nThe prefix."),
        {"thinking": "After the summary.", "text": "The third answer."}
    ]))
    .api(api)
    .settings(settings)
    .file("notes.md", "some words\n")
    .run_with(&["--mode", "rpc"], &script)
}

#[test]
fn a_compaction_through_the_google_api() {
    assert_same(a_compaction_through("google-generative-ai"));
}

#[test]
fn a_compaction_through_the_responses_api() {
    assert_same(a_compaction_through("openai-responses"));
}

/// Through `api`: an image in the prompt and one the read tool returns (issue 18).
fn images_through(api: &'static str) -> Scenario {
    Scenario::new(json!([
        {"text": "Reading the other.", "tool_calls": [
            {"id": "call_1", "name": "read", "arguments": {"path": "photo.jpg"}}]},
        text("Two pictures."),
        text("Text only now.")
    ]))
    .api(api)
    .with_image_input()
    .binary_file("shot.png", picture(64, 48, image::ImageFormat::Png))
    .binary_file("photo.jpg", picture(40, 30, image::ImageFormat::Jpeg))
    .run(&[
        "--mode",
        "json",
        "-p",
        "@shot.png",
        "compare with photo.jpg",
    ])
    .run(&["-c", "-p", "and the colours?"])
}

#[test]
fn images_through_the_google_api() {
    assert_same(images_through("google-generative-ai"));
}

#[test]
fn images_through_the_responses_api() {
    assert_same(images_through("openai-responses"));
}

/// Google's thinking configuration at each level, for a Gemini 2.5 model (a token budget)
/// and a Gemini 3 model (a thinking level), as pi decides it by the model's id (issue 18).
fn thinking_levels_through_google(model: &'static str) -> Scenario {
    Scenario::new(json!([
        text("off"),
        text("minimal"),
        text("low"),
        text("high")
    ]))
    .api("google-generative-ai")
    .model_id(model)
    .run(&["--thinking", "off", "-p", "one"])
    .run(&["-c", "--thinking", "minimal", "-p", "two"])
    .run(&["-c", "--thinking", "low", "-p", "three"])
    .run(&["-c", "--thinking", "high", "-p", "four"])
}

#[test]
fn thinking_levels_of_a_gemini_2_5_model() {
    assert_same(thinking_levels_through_google("gemini-2.5-flash"));
}

#[test]
fn thinking_levels_of_a_gemini_3_model() {
    assert_same(thinking_levels_through_google("gemini-3-pro-preview"));
}

/// Servers that know strict mode (`compat.supportsStrictMode`): read, bash, edit and write
/// go out with their strict schemas and `strict: true`, the other tools with `strict: false`
/// (issue 18).
fn strict_tools_through(api: &'static str) -> Scenario {
    Scenario::new(json!([
        {"text": "", "tool_calls": [{"id": "call_1", "name": "read",
            "arguments": {"path": "notes.md", "limit": null}}]},
        text("Read.")
    ]))
    .api(api)
    .compat(json!({"supportsStrictMode": true}))
    .file("notes.md", "hello\n")
    .run(&[
        "--tools",
        "read,bash,edit,write,grep,ls",
        "--mode",
        "json",
        "-p",
        "read it",
    ])
}

#[test]
fn strict_tools_through_chat_completions() {
    assert_same(strict_tools_through("openai-completions"));
}

#[test]
fn strict_tools_through_the_responses_api() {
    assert_same(strict_tools_through("openai-responses"));
}

/// Gemini before 3 takes no images in a function response: the read tool's image follows as
/// a user message of its own (pi's `supportsMultimodalFunctionResponse`).
#[test]
fn images_through_the_google_api_to_gemini_2_5() {
    assert_same(images_through("google-generative-ai").model_id("gemini-2.5-flash"));
}

/// A model that cannot reason, asked to think hard, through Google and the Responses API.
#[test]
fn a_model_without_reasoning_through_google_and_responses() {
    for api in ["google-generative-ai", "openai-responses"] {
        assert_same(
            Scenario::new(json!([text("plain"), text("still plain")]))
                .api(api)
                .without_reasoning()
                .run(&["--thinking", "high", "-p", "think hard"])
                .run(&["-c", "--mode", "json", "-p", "again"]),
        );
    }
}

/// Anthropic with `compat.supportsStrictTools`: read, bash, edit and write go out with
/// `strict: true` and their strict input schemas (issue 18).
#[test]
fn strict_tools_through_the_anthropic_api() {
    assert_same(
        strict_tools_through("anthropic-messages").compat(json!({"supportsStrictTools": true})),
    );
}
