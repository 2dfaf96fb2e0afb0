//! Files for tests: a fresh temporary directory, a write that creates the parents, and the
//! session files an agent directory holds, read as JSON lines.

use std::path::Path;

/// A new temporary directory, removed when the value is dropped.
pub fn dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
}

/// Writes `bytes` to `path`, creating missing parent directories; panics with the path.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir: {e}"));
    }
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Every session file (`*.jsonl`) under `<agent>/sessions`, sorted by path.
pub fn session_files(agent: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![agent.join("sessions")];
    while let Some(dir) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// Every line of a JSONL file, parsed; panics with the path on a line that is not JSON.
pub fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l}", path.display())))
        .collect()
}

/// Each entry of a session file after its header, as its `type`, or its role for messages.
pub fn entry_kinds(path: &Path) -> Vec<String> {
    json_lines(path)
        .iter()
        .skip(1)
        .map(|v| match v["type"].as_str() {
            Some("message") => v["message"]["role"].as_str().unwrap_or("?").to_owned(),
            Some(t) => t.to_owned(),
            None => "?".to_owned(),
        })
        .collect()
}
