//! `pith session search` and `pith session index`: full-text search over session texts
//! through the store's search index (`pith_store::search`), built in the background.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Map, Value};

use pith_store::list::{all_session_paths, jsonl_files};
use pith_store::search::{Coverage, Hit, SearchIndex, index_folder, parse_query};
use pith_store::{SessionEnv, dirs};

use crate::text::printable;
use crate::tui::progress::Progress;

/// Above this many stale files a search does not wait for them: it answers from what is
/// indexed and leaves the rest to a background build.
const INLINE_SYNC_FILES: usize = 64;

/// Which sessions a search or index command covers.
pub struct Scope {
    /// The folder whose sessions are searched (a project's, a `--session-dir`, or the root).
    pub folder: PathBuf,
    /// Every project under the sessions root.
    pub all: bool,
}

impl Scope {
    /// The scope of `--all` / `--session-dir DIR` / the current project.
    ///
    /// Errors: the project's session directory cannot be created.
    pub fn new(
        env: &SessionEnv,
        all: bool,
        session_dir: Option<PathBuf>,
        cwd: &str,
    ) -> Result<Scope> {
        let folder = if all {
            dirs::sessions_root(&env.agent_dir)
        } else {
            match session_dir {
                Some(d) => d,
                None => dirs::default_session_dir(&env.agent_dir, cwd)?,
            }
        };
        Ok(Scope { folder, all })
    }

    /// The session files in scope.
    pub fn files(&self) -> Vec<PathBuf> {
        if self.all {
            all_session_paths(&self.folder)
        } else {
            jsonl_files(&self.folder)
        }
    }

    /// The folders a search is limited to, inside the index that holds them (`None`: the
    /// whole index).
    pub fn dirs(&self, agent_dir: &Path) -> Option<Vec<PathBuf>> {
        if self.all || index_folder(agent_dir, &self.folder) == self.folder {
            None
        } else {
            Some(vec![self.folder.clone()])
        }
    }
}

/// `pith session index`: brings the scope's search index up to date, with a progress bar
/// on a terminal; waits for a build another process is running.
///
/// Errors: the index cannot be opened or written.
pub fn build_index(env: &SessionEnv, scope: &Scope) -> Result<()> {
    let index = SearchIndex::open(&env.agent_dir, &scope.folder)?;
    let lock = index.try_lock();
    let _lock = match lock {
        Some(l) => l,
        None => loop {
            // Another builder runs; wait for it, then finish whatever it left.
            std::thread::sleep(Duration::from_millis(200));
            if let Some(l) = index.try_lock() {
                break l;
            }
        },
    };
    let files = scope.files();
    let dirs = scope.dirs(&env.agent_dir);
    let progress = Progress::new("Indexing sessions");
    let index = index.sync(&files, dirs.as_deref(), &|d, t| progress.update(d, t))?;
    progress.finish();
    drop(index);
    Ok(())
}

/// `pith session search QUERY`: prints the matching sessions, best first, each with the
/// entry that matched and a snippet (or a JSON array of them). While the index is being
/// built the answer covers what is indexed, and stderr says how much that is.
///
/// A damaged index file (a corrupt page SQLite finds while searching) is thrown away and the
/// search answered as with no index yet: it is rebuilt, waited for with `wait`, else in the
/// background while the answer says it is partial.
///
/// Errors: the index cannot be opened; stdout fails.
pub fn search(
    env: &SessionEnv,
    scope: &Scope,
    query: &str,
    json: bool,
    wait: bool,
    limit: Option<usize>,
    out: &mut impl Write,
) -> Result<()> {
    let parsed = parse_query(query);
    if let pith_store::search::Query::Invalid(why) = &parsed {
        anyhow::bail!("invalid regex: {why}");
    }
    match search_with(env, scope, &parsed, json, wait, limit, out) {
        Err(e)
            if e.downcast_ref::<pith_store::Error>()
                .is_some_and(pith_store::Error::is_damaged_index) =>
        {
            let index = SearchIndex::open(&env.agent_dir, &scope.folder)?;
            eprintln!(
                "pith: the search index {} is damaged; it is rebuilt.",
                index.path().display()
            );
            drop(index.rebuild()?);
            search_with(env, scope, &parsed, json, wait, limit, out)
        }
        done => done,
    }
}

fn search_with(
    env: &SessionEnv,
    scope: &Scope,
    parsed: &pith_store::search::Query,
    json: bool,
    wait: bool,
    limit: Option<usize>,
    out: &mut impl Write,
) -> Result<()> {
    let dirs = scope.dirs(&env.agent_dir);
    let index = SearchIndex::open(&env.agent_dir, &scope.folder)?;
    if wait {
        build_index(env, scope)?;
        let hits = index.search(parsed, dirs.as_deref(), limit)?;
        return write_answer(out, &hits, json);
    }
    // The freshness check (a readdir and a stat of every session file) and the search run
    // side by side: most of the time nothing changed and the search's answer stands; when
    // the check brought files up to date, the search runs again.
    let db = index.path().to_owned();
    let (fresh, early) = std::thread::scope(|threads| {
        let fresh = threads.spawn(|| freshen(index, scope, dirs.as_deref()));
        let early = SearchIndex::open_at(&db)
            .and_then(|early| early.search(parsed, dirs.as_deref(), limit));
        (fresh.join(), early)
    });
    let fresh = fresh.map_err(|_| anyhow::anyhow!("the search index check failed"))?;
    let (index, coverage, changed) = fresh?;
    let hits = match early {
        Ok(hits) if !changed => hits,
        _ => index.search(parsed, dirs.as_deref(), limit)?,
    };
    if !coverage.complete() {
        eprintln!(
            "pith: the search index holds {} of {} sessions so far ({}%); results are partial. \
             It is being built in the background (`pith session search --wait` waits for it).",
            coverage.indexed,
            coverage.total,
            coverage.indexed * 100 / coverage.total.max(1)
        );
    }
    write_answer(out, &hits, json)
}

fn write_answer(out: &mut impl Write, hits: &[Hit], json: bool) -> Result<()> {
    if json {
        write_json(out, hits)
    } else {
        write_hits(out, hits)
    }
}

/// Brings the index up to date when few files changed, else starts a background build;
/// returns the index, how much of the scope it covers, and whether it changed.
///
/// Errors: the index cannot be read or written.
fn freshen(
    mut index: SearchIndex,
    scope: &Scope,
    dirs: Option<&[PathBuf]>,
) -> Result<(SearchIndex, Coverage, bool)> {
    let Some(lock) = index.try_lock() else {
        // Another process builds it: answer from what it has so far.
        let files = scope.files();
        let coverage = index.coverage(&files, dirs)?;
        return Ok((index, coverage, false));
    };
    let (files, plan) = index.plan_listed(|| scope.files(), dirs)?;
    let full = Coverage {
        indexed: files.len(),
        total: files.len(),
    };
    if plan.is_current() {
        return Ok((index, full, false));
    }
    if plan.stale() <= INLINE_SYNC_FILES {
        if index.apply(plan, &|_, _| {}).is_err() {
            // A damaged index: sync rebuilds it.
            index = index.sync(&files, dirs, &|_, _| {})?;
        }
        return Ok((index, full, true));
    }
    let coverage = Coverage {
        indexed: plan.total - plan.stale(),
        total: plan.total,
    };
    drop(lock);
    start_background_build(scope)?;
    Ok((index, coverage, false))
}

/// Starts `pith session index` for the scope as a detached process: the search returns at
/// once, the build goes on after it.
fn start_background_build(scope: &Scope) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().context("cannot find the pith executable")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["session", "index"]);
    if scope.all {
        cmd.arg("--all");
    } else {
        cmd.arg("--session-dir").arg(&scope.folder);
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        // Its own process group: Ctrl+C in the shell does not stop the build.
        .process_group(0);
    cmd.spawn()
        .context("cannot start the background index build")?;
    Ok(())
}

/// One hit as JSON: `path`, `id`, `entryId` (null for the header), `snippet`, `score`.
pub fn hit_value(hit: &Hit) -> Value {
    let mut m = Map::new();
    m.insert(
        "path".into(),
        Value::String(hit.path.to_string_lossy().into_owned()),
    );
    m.insert(
        "id".into(),
        hit.session_id.clone().map_or(Value::Null, Value::String),
    );
    m.insert(
        "entryId".into(),
        hit.entry_id.clone().map_or(Value::Null, Value::String),
    );
    m.insert("snippet".into(), Value::String(hit.snippet.clone()));
    m.insert(
        "score".into(),
        serde_json::Number::from_f64(hit.score).map_or(Value::Null, Value::Number),
    );
    Value::Object(m)
}

fn write_json(out: &mut impl Write, hits: &[Hit]) -> Result<()> {
    use serde::ser::{SerializeSeq, Serializer};
    let mut ser = serde_json::Serializer::pretty(&mut *out);
    let mut seq = ser.serialize_seq(None)?;
    for hit in hits {
        seq.serialize_element(&hit_value(hit))?;
    }
    seq.end()?;
    writeln!(out)?;
    Ok(())
}

fn write_hits(out: &mut impl Write, hits: &[Hit]) -> Result<()> {
    if hits.is_empty() {
        writeln!(out, "No matches.")?;
        return Ok(());
    }
    for hit in hits {
        // `ID@ENTRY` is what `pith --session` takes to open the session at that entry.
        let id = hit.session_id.as_deref().unwrap_or("?");
        let target = match &hit.entry_id {
            Some(e) => format!("{}@{}", printable(id), printable(e)),
            None => printable(id).into_owned(),
        };
        writeln!(out, "{target}  {}", hit.path.display())?;
        writeln!(out, "    {}", printable(&hit.snippet))?;
    }
    Ok(())
}
