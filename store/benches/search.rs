//! Session search and listing at scale, over the shared corpora (`agent-10k`, and
//! `agent-100k` or a 30k-session set where generated): the issue-17 figures.
//!
//! Corpus: `$PITH_BENCH_CORPUS` (as in `session.rs`), holding `agent-10k/sessions` (and
//! `agent-30k/sessions`, `agent-100k/sessions` when present; a 30k set can be three
//! hard-linked copies of agent-10k under other project names). Indexes go to
//! `$PITH_BENCH_AGENT` (default: a folder in the system temp dir), kept between runs so the
//! "warm" figures are warm. Missing corpora print a note and measure nothing.
//!
//! Targets (issue 17): search ≤ 50 ms warm over agent-10k, ≤ 0.5 s over agent-100k; building
//! the agent-10k index ≤ 60 s; `list --all` ≤ 2 s without an index, ≤ 0.05 s with one.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use divan::Bencher;
use pith_store::list::{all_session_files, list_all};
use pith_store::list_index::list_all_indexed;
use pith_store::search::{SearchIndex, parse_query};

fn main() {
    divan::main();
}

fn corpus() -> PathBuf {
    std::env::var_os("PITH_BENCH_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-corpus"))
}

fn agent() -> PathBuf {
    std::env::var_os("PITH_BENCH_AGENT")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("pith-bench-search-agent"))
}

fn root(set: &str) -> Option<PathBuf> {
    let root = corpus().join(set).join("sessions");
    if root.is_dir() {
        Some(root)
    } else {
        eprintln!("skipping: {} is missing", root.display());
        None
    }
}

/// A built, current index of `set` (built on first use: minutes for agent-10k).
fn ready(set: &str) -> Option<(SearchIndex, PathBuf)> {
    let root = root(set)?;
    let index = SearchIndex::open(&agent(), &root).expect("opens");
    let index = index
        .sync(&all_session_files(&root), None, &|_, _| {})
        .expect("builds");
    Some((index, root))
}

/// Queries of the kinds people type: a rare identifier, a common word, a phrase, a regex.
const QUERIES: &[&str] = &[
    "buildIndex",
    "buffer",
    "\"check buffer type\"",
    "\"uffer ty\"",
    "re:build(Index|Tree)",
];

/// One warm search over agent-10k (target ≤ 50 ms).
#[divan::bench(args = QUERIES, sample_count = 10, sample_size = 1)]
fn search_agent_10k(bencher: Bencher, query: &str) {
    let Some((index, _)) = ready("agent-10k") else {
        return;
    };
    let q = parse_query(query);
    bencher.bench_local(|| index.search(&q, None, Some(50)).expect("searches").len());
}

/// One warm search over agent-10k returning every session that matches (no limit, as
/// `pith session search` prints by default): thousands of hits, each with its snippet read
/// from its file.
#[divan::bench(args = ["buffer", "\"check buffer type\""], sample_count = 5, sample_size = 1)]
fn search_agent_10k_every_hit(bencher: Bencher, query: &str) {
    let Some((index, _)) = ready("agent-10k") else {
        return;
    };
    let q = parse_query(query);
    bencher.bench_local(|| index.search(&q, None, None).expect("searches").len());
}

/// One warm search over the 30k set (scale toward agent-100k: target ≤ 0.5 s there).
#[divan::bench(args = QUERIES, sample_count = 5, sample_size = 1)]
fn search_agent_30k(bencher: Bencher, query: &str) {
    let Some((index, _)) = ready("agent-30k") else {
        return;
    };
    let q = parse_query(query);
    bencher.bench_local(|| index.search(&q, None, Some(50)).expect("searches").len());
}

/// Checking a warm index against the files (what every search does first): stats only.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn plan_warm_agent_10k(bencher: Bencher) {
    let Some((index, root)) = ready("agent-10k") else {
        return;
    };
    bencher.bench_local(|| {
        index
            .plan(&all_session_files(&root), None)
            .expect("plans")
            .stale()
    });
}

/// Building the agent-10k index from nothing (target ≤ 60 s). One sample: minutes.
#[divan::bench(sample_count = 1, sample_size = 1)]
fn build_agent_10k(bencher: Bencher) {
    let Some(root) = root("agent-10k") else {
        return;
    };
    let files = all_session_files(&root);
    bencher.bench(|| {
        let dir = tempfile::tempdir().expect("tmp");
        let index = SearchIndex::open(dir.path(), &root).expect("opens");
        index.sync(&files, None, &|_, _| {}).expect("builds");
    });
}

/// `list --all` over agent-10k without any index (target ≤ 2 s).
#[divan::bench(sample_count = 3, sample_size = 1)]
fn list_all_agent_10k(bencher: Bencher) {
    let Some(root) = root("agent-10k") else {
        return;
    };
    bencher.bench(|| list_all(&root).sessions.len());
}

/// `list --all` over agent-10k through a warm listing index (target ≤ 0.05 s).
#[divan::bench(sample_count = 10, sample_size = 1)]
fn list_all_indexed_warm_agent_10k(bencher: Bencher) {
    let Some(root) = root("agent-10k") else {
        return;
    };
    list_all_indexed(&agent(), &root);
    bencher.bench(|| list_all_indexed(&agent(), &root).sessions.len());
}

/// One warm search over agent-100k (target ≤ 0.5 s). `scripts/gen-agent-100k` makes the set
/// from agent-10k with hard links; the first run builds its index (minutes).
#[divan::bench(args = QUERIES, sample_count = 5, sample_size = 1)]
fn search_agent_100k(bencher: Bencher, query: &str) {
    let Some((index, _)) = ready("agent-100k") else {
        return;
    };
    let q = parse_query(query);
    bencher.bench_local(|| index.search(&q, None, Some(50)).expect("searches").len());
}

/// `list --all` over agent-100k without any index (pi 1.6.0 cannot finish: it holds every
/// text).
#[divan::bench(sample_count = 1, sample_size = 1)]
fn list_all_agent_100k(bencher: Bencher) {
    let Some(root) = root("agent-100k") else {
        return;
    };
    bencher.bench(|| list_all(&root).sessions.len());
}

/// `list --all` over agent-100k through a warm listing index.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn list_all_indexed_warm_agent_100k(bencher: Bencher) {
    let Some(root) = root("agent-100k") else {
        return;
    };
    list_all_indexed(&agent(), &root);
    bencher.bench(|| list_all_indexed(&agent(), &root).sessions.len());
}
