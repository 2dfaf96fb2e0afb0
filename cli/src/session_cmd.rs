//! `pith session …`: read-only views of session files and directories.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Subcommand;

use pith_store::dump::{At, write_dump};
use pith_store::list::{Listing, Resolved, resolve_session_arg, session_info};
use pith_store::list_index::{list_all_indexed, list_indexed};
use pith_store::{ContextView, Leaf, OpenMode, Session, SessionEnv, dirs};

use crate::session_search::{Scope, build_index, search};
use crate::text::{first_line, printable};

/// The session subcommands.
#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Print one JSON object with the members of a conformance expected.json: header,
    /// entries, leaf, context, contexts_at, tree, info, name, labels.
    Dump {
        /// The session file, or a prefix of its id (as `--session` takes it).
        file: PathBuf,
        /// Also build the context after moving the leaf here: an entry id, `root`, or `#N`
        /// (the N-th entry, 0-based). Repeatable.
        #[arg(long = "at", value_name = "ID|root|#N")]
        at: Vec<At>,
    },
    /// List sessions: the current project's (default), a directory's, or every project's.
    List {
        /// List this directory instead of the current project's.
        #[arg(long, value_name = "DIR", conflicts_with = "all")]
        session_dir: Option<PathBuf>,
        /// List every project under the sessions root.
        #[arg(long)]
        all: bool,
        /// Print pi's SessionInfo array as JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print the session's tree: branches indented, labels shown, the active path marked.
    Tree {
        /// The session file, or a prefix of its id (as `--session` takes it).
        file: PathBuf,
    },
    /// Print the LLM context (JSON) at the leaf, or at `--leaf`.
    Context {
        /// The session file, or a prefix of its id (as `--session` takes it).
        file: PathBuf,
        /// Where to build the context: an entry id, `root`, or `#N` (the N-th entry, 0-based).
        #[arg(long, value_name = "ID|root|#N")]
        leaf: Option<At>,
    },
    /// Search the text of every session (the picker's query language: words, "a phrase",
    /// re:regex) through the search index; prints each match as ID@ENTRY (what --session
    /// takes) with a snippet.
    Search {
        /// The query; several arguments are joined by spaces.
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        /// Search this directory instead of the current project's.
        #[arg(long, value_name = "DIR", conflicts_with = "all")]
        session_dir: Option<PathBuf>,
        /// Search every project under the sessions root.
        #[arg(long)]
        all: bool,
        /// Print a JSON array of {path, id, entryId, snippet, score}.
        #[arg(long)]
        json: bool,
        /// Wait until the index covers every session (the first search otherwise answers
        /// from what is indexed while the index is built in the background).
        #[arg(long)]
        wait: bool,
        /// At most this many results.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
    /// Build or update the search index (what `search` starts in the background).
    Index {
        /// Index this directory instead of the current project's.
        #[arg(long, value_name = "DIR", conflicts_with = "all")]
        session_dir: Option<PathBuf>,
        /// Index every project under the sessions root.
        #[arg(long)]
        all: bool,
    },
    /// Print what the session picker knows about one file (pi's SessionInfo), as JSON.
    Info {
        /// The session file, or a prefix of its id (as `--session` takes it).
        file: PathBuf,
    },
}

/// Runs one session subcommand; output goes to stdout, warnings and errors to stderr.
pub fn run(cmd: SessionCommand) -> Result<()> {
    let env = SessionEnv::system();
    let mut stdout = std::io::stdout().lock();
    let cmd = match cmd {
        SessionCommand::Dump { file, at } => SessionCommand::Dump {
            file: resolve(file, &env)?,
            at,
        },
        SessionCommand::Tree { file } => SessionCommand::Tree {
            file: resolve(file, &env)?,
        },
        SessionCommand::Context { file, leaf } => SessionCommand::Context {
            file: resolve(file, &env)?,
            leaf,
        },
        SessionCommand::Info { file } => SessionCommand::Info {
            file: resolve(file, &env)?,
        },
        other => other,
    };
    match cmd {
        SessionCommand::Dump { file, at } => {
            let session = open(&file, &env)?;
            let info = session_info(&file).ok().map(|i| i.to_value());
            let mut out = std::io::BufWriter::with_capacity(1 << 16, &mut stdout);
            write_dump(&mut out, &session, &at, info)?;
            out.flush()?;
        }
        SessionCommand::List {
            session_dir,
            all,
            json,
        } => {
            // The order comes from the listing index; --json (pi's SessionInfo, with
            // allMessagesText) then reads each file again and prints it before reading the
            // next, so memory holds one session's text at a time, not every session's.
            let listing = if all {
                list_all_indexed(&env.agent_dir, &dirs::sessions_root(&env.agent_dir))
            } else {
                let dir = match session_dir {
                    Some(d) => d,
                    None => dirs::default_session_dir(&env.agent_dir, &current_dir())?,
                };
                list_indexed(&env.agent_dir, &dir)
            };
            for s in &listing.skipped {
                eprintln!("pith: skipped {}: {}", s.path.display(), s.reason);
            }
            if let Some(folder) = listing.unreadable_folders.first() {
                // An unreadable folder is not an empty one: say so and fail.
                for s in &listing.unreadable_folders[1..] {
                    eprintln!("pith: {}: {}", s.path.display(), s.reason);
                }
                bail!("{}: {}", folder.path.display(), folder.reason);
            }
            if json {
                let mut out = std::io::BufWriter::with_capacity(1 << 16, &mut stdout);
                write_json_listing(&mut out, &listing)?;
                out.flush()?;
            } else {
                // Buffered: the terminal's line buffering made a write per row, half of an
                // indexed listing of 10,000 sessions.
                let mut out = std::io::BufWriter::with_capacity(1 << 16, &mut stdout);
                write_table(&mut out, &listing, all)?;
                out.flush()?;
            }
            // The process ends here: freeing every session's strings one by one was a tenth
            // of an indexed listing of 10,000 sessions.
            std::mem::forget(listing);
        }
        SessionCommand::Tree { file } => {
            let session = open(&file, &env)?;
            let mut out = std::io::BufWriter::with_capacity(1 << 16, &mut stdout);
            crate::tree_view::write(&mut out, &session)?;
            out.flush()?;
        }
        SessionCommand::Context { file, leaf } => {
            // Opening a missing path would start a new session there; inspecting one is an error.
            std::fs::metadata(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let view = ContextView::open(&file, &env, |tree| -> Result<Leaf> {
                Ok(match leaf {
                    None => tree.leaf(),
                    Some(At::Root) => Leaf::Root,
                    Some(At::Id(id)) => Leaf::At(
                        tree.index_of(&id)
                            .with_context(|| format!("{}: Entry {id} not found", file.display()))?,
                    ),
                    Some(At::Nth(n)) => {
                        let e = tree.entries().get(n).with_context(|| {
                            format!("{}: there is no entry #{n}", file.display())
                        })?;
                        Leaf::At(tree.index_of(e.id()).unwrap_or(n))
                    }
                })
            })??;
            for w in view.warnings() {
                eprintln!("pith: {}: {w}", file.display());
            }
            let mut out = std::io::BufWriter::with_capacity(1 << 16, &mut stdout);
            view.context().write_json(&mut out)?;
            writeln!(out)?;
            out.flush()?;
            // The process ends here: freeing a 100 MiB session's entries one by one took
            // longer than printing its context.
            std::mem::forget(view);
        }
        SessionCommand::Search {
            query,
            session_dir,
            all,
            json,
            wait,
            limit,
        } => {
            let scope = Scope::new(&env, all, session_dir, &current_dir())?;
            let mut out = std::io::BufWriter::new(&mut stdout);
            search(&env, &scope, &query.join(" "), json, wait, limit, &mut out)?;
            out.flush()?;
        }
        SessionCommand::Index { session_dir, all } => {
            let scope = Scope::new(&env, all, session_dir, &current_dir())?;
            build_index(&env, &scope)?;
        }
        SessionCommand::Info { file } => {
            // As the session picker sees the file: read, never migrated or written.
            std::fs::metadata(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let info = session_info(&std::path::absolute(&file)?)?;
            writeln!(
                stdout,
                "{}",
                serde_json::to_string_pretty(&info.to_value())?
            )?;
        }
    }
    Ok(())
}

/// A FILE argument as given when it exists, else read as `--session` reads it: a prefix of a
/// session id, in this project first, then in any (what `session list` shows).
///
/// Errors: no session or several sessions match the prefix.
fn resolve(file: PathBuf, env: &SessionEnv) -> Result<PathBuf> {
    if file.exists() {
        return Ok(file);
    }
    let arg = file.to_string_lossy();
    let local = dirs::default_session_dir(&env.agent_dir, &current_dir())?;
    Ok(
        match resolve_session_arg(&arg, &local, &dirs::sessions_root(&env.agent_dir))? {
            Resolved::Path(p) | Resolved::Local(p) | Resolved::Global { path: p, .. } => p,
        },
    )
}

/// Opens a session file for inspection and reports skipped lines on stderr.
fn open(file: &Path, env: &SessionEnv) -> Result<Session> {
    // Opening a missing path would start a new session there; inspecting one is an error.
    std::fs::metadata(file).with_context(|| format!("cannot read {}", file.display()))?;
    let session = Session::open(file, None, None, OpenMode::Inspect, env)?;
    for w in session.warnings() {
        eprintln!("pith: {}: {w}", file.display());
    }
    Ok(session)
}

fn current_dir() -> String {
    std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "/".into())
}

/// pi's `SessionInfo[]` as `JSON.stringify(…, null, 2)` prints it, one session at a time:
/// the texts are read per file, in listing order, on the listing's reading threads.
fn write_json_listing(out: &mut impl Write, listing: &Listing) -> Result<()> {
    use serde::ser::{SerializeSeq, Serializer};
    let mut ser = serde_json::Serializer::pretty(&mut *out);
    let mut seq = ser.serialize_seq(None)?;
    let paths: Vec<PathBuf> = listing.sessions.iter().map(|s| s.path.clone()).collect();
    let mut failed = None;
    pith_store::list::for_each_info(&paths, &mut |i, info| {
        // A file that changed into a non-session since the listing keeps its listed fields.
        let value = match info {
            Ok(info) => info.to_value(),
            Err(_) => listing.sessions[i].to_value(),
        };
        if let Err(e) = seq.serialize_element(&value) {
            failed = Some(e);
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    });
    if let Some(e) = failed {
        return Err(e.into());
    }
    seq.end()?;
    writeln!(out)?;
    Ok(())
}

fn write_table(out: &mut impl Write, listing: &Listing, show_cwd: bool) -> Result<()> {
    if listing.sessions.is_empty() {
        writeln!(out, "No sessions.")?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<24}  {:>5}  {:<36}  {}",
        "MODIFIED",
        "MSGS",
        "ID",
        if show_cwd { "CWD / TITLE" } else { "TITLE" }
    )?;
    for s in &listing.sessions {
        let modified =
            pith_store::env::iso_from_ms(s.modified_ms as i64).unwrap_or_else(|| "?".into());
        let title = first_line(s.name.as_deref().unwrap_or(&s.first_message), 72);
        // The whole id: UUIDv7s made close together share their first characters.
        let id = printable(&s.id);
        if show_cwd {
            writeln!(
                out,
                "{modified:<24}  {:>5}  {id:<36}  {}  {title}",
                s.message_count,
                printable(&s.cwd)
            )?;
        } else {
            writeln!(
                out,
                "{modified:<24}  {:>5}  {id:<36}  {title}",
                s.message_count
            )?;
        }
    }
    Ok(())
}
