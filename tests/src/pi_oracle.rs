//! The real pi 1.6.0 beside pith, for differential tests: where its install is, a scripted
//! mock model server both agents talk to (`scripts/mock-llm.py`), and the normalisation that
//! makes two runs comparable (fresh ids, clocks and scratch folders set aside).
//!
//! The install is made by `scripts/install-pi` (which `scripts/test` runs when it is missing):
//! a folder with `bin/node` (Node 22) and `bin/pi`. A missing install fails the calling test
//! with what to run; it is never a silent skip.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The pi 1.6.0 install: `$PITH_PI_ORACLE` (the folder `scripts/install-pi` filled, or for
/// convenience its `bin/pi`), else `<repo>/target/pi-oracle`. Panics with what to run when
/// neither holds `bin/node` and `bin/pi`.
pub fn install() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let from_env = std::env::var_os("PITH_PI_ORACLE").map(|v| {
        let p = PathBuf::from(v);
        // `.../bin/pi` names the install two levels up.
        if p.is_file() {
            p.parent()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
                .unwrap_or(p)
        } else {
            p
        }
    });
    for dir in [from_env, Some(repo.join("target/pi-oracle"))]
        .into_iter()
        .flatten()
    {
        if dir.join("bin/node").is_file() && dir.join("bin/pi").is_file() {
            return dir;
        }
    }
    panic!(
        "pi 1.6.0 is not installed: run scripts/install-pi (scripts/test does), or set \
         PITH_PI_ORACLE to an install (a folder with bin/node and bin/pi)"
    );
}

/// `bin/pi` of [`install`].
pub fn pi_bin() -> PathBuf {
    install().join("bin/pi")
}

/// The ripgrep and fd that pi's grep and find tools run (`scripts/install-search-tools`, which
/// `scripts/test` runs): `$PITH_SEARCH_TOOLS`, else `<repo>/target/search-tools`; a folder with
/// `bin/rg` and `bin/fd`. Panics with what to run when neither holds them.
pub fn search_tools() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let from_env = std::env::var_os("PITH_SEARCH_TOOLS").map(PathBuf::from);
    for dir in [from_env, Some(repo.join("target/search-tools"))]
        .into_iter()
        .flatten()
    {
        if dir.join("bin/rg").is_file() && dir.join("bin/fd").is_file() {
            return dir;
        }
    }
    panic!(
        "ripgrep and fd for pi's grep and find are not installed: run \
         scripts/install-search-tools (scripts/test does), or set PITH_SEARCH_TOOLS to a folder \
         with bin/rg and bin/fd"
    );
}

/// A running `scripts/mock-llm.py`: OpenAI Chat Completions and Anthropic Messages on
/// 127.0.0.1, one scripted reply per request (the script's format is in the script's
/// docstring), every request logged. Killed on drop.
pub struct MockLlm {
    child: Child,
    /// The request log, one JSON object per line (`n`, `method`, `path`, `headers`, `body`).
    pub log: PathBuf,
    /// `http://127.0.0.1:<port>/v1`, the `baseUrl` for a `models.json` provider.
    pub url: String,
}

impl MockLlm {
    /// Starts the server in `dir` with `replies` (a JSON array), files named after `name`.
    /// Panics when python3 is missing or the server does not come up within 10 s.
    pub fn start(dir: &Path, name: &str, replies: &Value) -> MockLlm {
        MockLlm::start_with(dir, name, replies, &[])
    }

    /// [`MockLlm::start`] with more of the server's options (e.g.
    /// `["--chunk-delay-ms", "40", "--chunk-size", "6"]` for a reply streamed slowly).
    pub fn start_with(dir: &Path, name: &str, replies: &Value, options: &[&str]) -> MockLlm {
        let script = dir.join(format!("{name}.replies.json"));
        fs::write(&script, replies.to_string()).unwrap();
        let log = dir.join(format!("{name}.requests.jsonl"));
        let port_file = dir.join(format!("{name}.port"));
        let child = Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/mock-llm.py"))
            .args(["--idle-exit", "120", "--pause-ms", "30"])
            .args(options)
            .arg("--script")
            .arg(&script)
            .arg("--log")
            .arg(&log)
            .arg("--port-file")
            .arg(&port_file)
            .stdout(Stdio::null())
            // A client that hangs up mid-reply makes the server print a traceback; noise here.
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("python3 scripts/mock-llm.py: {e}"));
        let start = Instant::now();
        let port = loop {
            if let Ok(p) = fs::read_to_string(&port_file)
                && !p.trim().is_empty()
            {
                break p.trim().to_owned();
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "mock server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        MockLlm {
            child,
            log,
            url: format!("http://127.0.0.1:{port}/v1"),
        }
    }

    /// Every logged POST body, in order (none before the first request).
    pub fn request_bodies(&self) -> Vec<Value> {
        let Ok(text) = fs::read_to_string(&self.log) else {
            return Vec::new();
        };
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["method"] == "POST")
            .map(|r| r["body"].clone())
            .collect()
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A session file made comparable across two runs: entry ids become `e0`, `e1`, … in file
/// order (and every reference to them follows), the session id `<session>`, ISO timestamps
/// `<time>`, message clocks (`timestamp` in ms) 0, `durationMs` 0, and `root` (the scratch
/// folder of the run) `<root>` in every string.
pub fn normalize_session(lines: &[Value], root: &Path) -> Vec<Value> {
    let ids = id_names(lines);
    lines
        .iter()
        .map(|e| {
            let mut e = e.clone();
            crate::map_ids(&mut e, &ids);
            if e.get("timestamp").is_some_and(Value::is_string) {
                e["timestamp"] = Value::from("<time>");
            }
            normalize_value(&mut e, root);
            e
        })
        .collect()
}

/// The names [`normalize_session`] gives a session file's ids: `<session>` for the header's,
/// `e<i>` for the entry on line `i`.
pub fn id_names(lines: &[Value]) -> HashMap<String, String> {
    let mut ids = HashMap::new();
    for (i, e) in lines.iter().enumerate() {
        if let Some(id) = e["id"].as_str() {
            let name = if e["type"] == "session" {
                "<session>".to_owned()
            } else {
                format!("e{i}")
            };
            ids.entry(id.to_owned()).or_insert(name);
        }
    }
    ids
}

/// A json-mode or rpc event made comparable: ids named as in the session file (`ids`, from
/// [`id_names`]), ISO timestamps `<time>`, then [`normalize_value`].
pub fn normalize_event(event: &Value, ids: &HashMap<String, String>, root: &Path) -> Value {
    let mut e = event.clone();
    crate::map_ids(&mut e, ids);
    let mut stack: Vec<&mut Value> = vec![&mut e];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(obj) => {
                if obj.get("timestamp").is_some_and(Value::is_string) {
                    obj.insert("timestamp".into(), Value::from("<time>"));
                }
                stack.extend(obj.values_mut());
            }
            _ => {}
        }
    }
    normalize_value(&mut e, root);
    e
}

/// Clocks and scratch paths out of any JSON value (a request body, an event): message
/// `timestamp` numbers, `durationMs` and bash's `wall_time_seconds` become 0, `root` becomes `<root>` in every string.
pub fn normalize_value(v: &mut Value, root: &Path) {
    let root = root.to_string_lossy().into_owned();
    let mut stack: Vec<&mut Value> = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if s.contains(&root) => *s = s.replace(&root, "<root>"),
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(obj) => {
                for key in ["timestamp", "durationMs", "wall_time_seconds"] {
                    if obj.get(key).is_some_and(Value::is_number) {
                        obj.insert(key.to_owned(), Value::from(0));
                    }
                }
                stack.extend(obj.values_mut());
            }
            _ => {}
        }
    }
}
