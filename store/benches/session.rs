//! Benchmarks over the shared corpora (`node ../shared/bench/gen-corpus.mjs`), next to pi's
//! figures in `../shared/bench/README.md`.
//!
//! Corpus: `$PITH_BENCH_CORPUS`, else `target/bench-corpus` in the workspace; generate it with
//! `node ../shared/bench/gen-corpus.mjs --out target/bench-corpus --only singles,dirs1k`.
//! Benchmarks whose files are missing print a note and measure nothing.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use divan::Bencher;
use pith_events::{AgentMessage, ContentBlock, UserContent, UserMessage};
use pith_store::env::{RandomIds, SystemClock};
use pith_store::list::list_all;
use pith_store::list_index::list_all_indexed;
use pith_store::{ContextView, OpenMode, Session, SessionEnv};

fn main() {
    divan::main();
}

fn corpus() -> PathBuf {
    std::env::var_os("PITH_BENCH_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-corpus"))
}

fn single(name: &str) -> Option<PathBuf> {
    let path = corpus().join("single").join(format!("{name}.jsonl"));
    if path.is_file() {
        Some(path)
    } else {
        eprintln!(
            "skipping: {} is missing (see the header of store/benches/session.rs)",
            path.display()
        );
        None
    }
}

fn env() -> SessionEnv {
    SessionEnv {
        agent_dir: std::env::temp_dir().join("pith-bench-agent"),
        clock: Arc::new(SystemClock),
        ids: Arc::new(RandomIds),
    }
}

/// Open a file for its context alone, as `pith session context` does: every line checked,
/// only the bodies the context reads kept (pi 1.6.0, whole process: 1.39 s for s100mb; see
/// `scripts/bench-open` for the whole-process run beside pi). For s100mb the first sample
/// reads the file whole and keeps its outline (`pith_store::outline`), the others read
/// through it, as every open of the unchanged file after the first does.
#[divan::bench(args = ["s1k", "s10k", "s100mb", "s100k"], sample_count = 5, sample_size = 1)]
fn open_for_context(bencher: Bencher, name: &str) {
    let Some(path) = single(name) else { return };
    let env = env();
    bencher.bench(|| {
        let view = ContextView::open(&path, &env, |tree| Ok::<_, ()>(tree.leaf()))
            .expect("opens")
            .expect("leaf");
        let mut out = std::io::sink();
        view.context().write_json(&mut out).expect("writes");
    });
}

/// Open a file and build the context at its leaf (pi: 53 ms / 1.01 s / 3.69 s / 12.5 s).
#[divan::bench(args = ["s1k", "s10k", "s100mb", "s100k"], sample_count = 5, sample_size = 1)]
fn open_and_build_context(bencher: Bencher, name: &str) {
    let Some(path) = single(name) else { return };
    let env = env();
    bencher.bench(|| {
        let session = Session::open(&path, None, None, OpenMode::Inspect, &env).expect("opens");
        session.build_context().messages.len()
    });
}

/// Open a file to run it, as a resume does, and build the context at its leaf. A file of
/// 16 MiB and more is read through its outline (`pith_store::outline`, kept by the first
/// sample): the bodies off the path to the leaf stay in the file (pi resumes with
/// `SessionManager.open`, whose figures are `open_and_build_context`'s).
#[divan::bench(args = ["s1k", "s10k", "s100mb", "s100k"], sample_count = 5, sample_size = 1)]
fn open_to_resume(bencher: Bencher, name: &str) {
    let Some(path) = single(name) else { return };
    let env = env();
    bencher.bench(|| {
        let session = Session::open(&path, None, None, OpenMode::ReadOnly, &env).expect("opens");
        session.build_context().messages.len()
    });
}

/// Build the context at the leaf of an open session (pi: 42 ms / 435 ms / 1.88 s).
#[divan::bench(args = ["s10k", "s100mb", "s100k"], sample_count = 20)]
fn build_context_when_open(bencher: Bencher, name: &str) {
    let Some(path) = single(name) else { return };
    let session = Session::open(&path, None, None, OpenMode::Inspect, &env()).expect("opens");
    bencher.bench(|| session.build_context().messages.len());
}

/// `getTree()` of an open session (pi: 0.75 s on s100k).
#[divan::bench(args = ["s100k"], sample_count = 10)]
fn get_tree(bencher: Bencher, name: &str) {
    let Some(path) = single(name) else { return };
    let session = Session::open(&path, None, None, OpenMode::Inspect, &env()).expect("opens");
    bencher.bench(|| session.tree().get_tree().roots.len());
}

/// List every session of agent-1k (pi: 4.3 s).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn list_all_agent_1k(bencher: Bencher) {
    let root = corpus().join("agent-1k").join("sessions");
    if !root.is_dir() {
        eprintln!("skipping: {} is missing", root.display());
        return;
    }
    bencher.bench(|| list_all(&root).sessions.len());
}

/// List every session of agent-1k through a warm listing index (built by the first run).
#[divan::bench(sample_count = 10, sample_size = 1)]
fn list_all_indexed_warm_agent_1k(bencher: Bencher) {
    let root = corpus().join("agent-1k").join("sessions");
    if !root.is_dir() {
        eprintln!("skipping: {} is missing", root.display());
        return;
    }
    let agent = env().agent_dir;
    list_all_indexed(&agent, &root);
    bencher.bench(|| list_all_indexed(&agent, &root).sessions.len());
}

/// Append one user message to a persisted session (pi: 69.5 µs per entry).
#[divan::bench(sample_count = 10, sample_size = 1000)]
fn append_message(bencher: Bencher) {
    let dir = tempfile::tempdir().expect("tmp");
    let env = SessionEnv {
        agent_dir: dir.path().to_owned(),
        ..env()
    };
    let mut session = Session::create("/bench", Some(dir.path()), &env).expect("create");
    // Make the file exist so every append is a real write.
    session
        .append_message(serde_json::from_str::<AgentMessage>(ASSISTANT).expect("assistant"))
        .expect("append");
    let message = AgentMessage::User(UserMessage {
        content: UserContent::Blocks(vec![ContentBlock::text(
            "Refactor the parser and run the tests again, please.",
        )]),
        timestamp: 1_764_000_000_000,
    });
    bencher.bench_local(|| session.append_message(message.clone()).expect("append"));
}

const ASSISTANT: &str = r#"{"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"faux","provider":"faux","model":"faux-1","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1764000000000}"#;
