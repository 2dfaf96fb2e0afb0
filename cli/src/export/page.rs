//! The whole document: head, messages, session header, sidebar tree, data and script.
//!
//! Written in one pass over the entries, straight into the output: the messages come first in
//! the source because the header's totals are only known after them (CSS puts the header on
//! top), and the sidebar comes last because its rows are in tree order, not file order.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};

use pith_store::Session;
use serde_json::Value;

use super::entries::{Renderer, RowText};
use super::html::Esc;
use super::stats::Stats;
use super::tree::Layout;

const STYLE: &str = include_str!("style.css");

/// Messages and tree rows are grouped this many to an element that the browser skips while
/// off screen: with the entries as direct children of one container, every layout pass while
/// the page loads walks all of them, and a 100 000-entry page takes minutes instead of seconds.
const CHUNK: usize = 256;
const SCRIPT: &str = include_str!("script.js");

/// Writes the HTML page of `session`; `file_name` is shown in the header, `progress` is called
/// with the number of entries written so far.
///
/// Errors: those of `out`.
pub fn write_page(
    out: &mut dyn Write,
    session: &Session,
    file_name: &str,
    progress: &mut dyn FnMut(usize),
) -> io::Result<()> {
    let tree = session.tree();
    let layout = Layout::new(tree);
    let name = session.session_name();
    let title = name
        .clone()
        .unwrap_or_else(|| format!("Session {}", session.session_id()));
    let nonce = nonce();
    write!(
        out,
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; base-uri 'none'; form-action 'none'">
<meta name="generator" content="pith {version}">
<title>{title} · pith session export</title>
<style>
{STYLE}</style>
</head>
<body>
<div id="app">
<main id="content">
<div id="messages">
"#,
        version = env!("CARGO_PKG_VERSION"),
        title = Esc(&title),
    )?;

    let mut renderer = Renderer::new(tree, &layout);
    let n = tree.entries().len();
    for i in 0..n {
        if i % CHUNK == 0 {
            // A group with nothing of the shown branch takes no room (the script keeps this
            // up to date when the branch changes).
            let end = (i + CHUNK).min(n);
            let empty = !layout.on_path[i..end].contains(&true);
            out.write_all(if empty {
                b"<div class=\"chunk empty\">\n"
            } else {
                b"<div class=\"chunk\">\n"
            })?;
        }
        renderer.write_entry(out, i)?;
        if i % CHUNK == CHUNK - 1 || i + 1 == n {
            out.write_all(b"</div>\n")?;
            progress(i + 1);
        }
    }
    if n == 0 {
        out.write_all(br#"<p class="empty">This session has no entries yet.</p>"#)?;
    }
    out.write_all(b"</div>\n")?;
    write_header(
        out,
        session,
        file_name,
        name.as_deref(),
        &layout,
        &renderer.stats,
    )?;
    out.write_all(b"</main>\n")?;
    write_sidebar(out, session, &layout, &renderer.rows)?;
    out.write_all(b"</div>\n")?;
    write_data(out, &layout)?;
    write!(
        out,
        "<script nonce=\"{nonce}\">\n{SCRIPT}</script>\n</body>\n</html>\n"
    )
}

/// Session facts and totals.
fn write_header(
    out: &mut dyn Write,
    session: &Session,
    file_name: &str,
    name: Option<&str>,
    layout: &Layout,
    stats: &Stats,
) -> io::Result<()> {
    let header = session.header();
    let entries = session.entries();
    write!(
        out,
        r#"<header id="session-header">
<h1>Session: {}</h1>
<div class="help"><span>Click an entry in the tree, or a branch button, to show its branch. T toggles thinking, O tool output.</span>
<span class="actions"><button type="button" data-action="thinking">Toggle thinking</button> <button type="button" data-action="tools">Toggle tool output</button></span></div>
<dl class="info">
<dt>Session</dt><dd class="sid">{}</dd>
"#,
        Esc(name.unwrap_or(header.id())),
        Esc(header.id())
    )?;
    if let Some(name) = name {
        writeln!(out, "<dt>Name</dt><dd class=\"sname\">{}</dd>", Esc(name))?;
    }
    let created = match header.timestamp() {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "unknown".into(),
    };
    write!(
        out,
        "<dt>Created</dt><dd>{}</dd>\n<dt>Directory</dt><dd class=\"cwd\">{}</dd>\n",
        Esc(&created),
        Esc(header.cwd().unwrap_or("unknown"))
    )?;
    if let Some(parent) = header.parent_session() {
        writeln!(out, "<dt>Forked from</dt><dd>{}</dd>", Esc(parent))?;
    }
    let leaves = layout.leaves().count();
    write!(
        out,
        "<dt>File</dt><dd>{}</dd>\n<dt>Entries</dt><dd>{} in {} branch{}</dd>\n",
        Esc(file_name),
        entries.len(),
        leaves,
        if leaves == 1 { "" } else { "es" }
    )?;
    let leaf_text = match layout.leaf {
        Some(l) => format!(
            "ends at entry {} (the session's leaf), {} entries",
            entries[l].id(),
            layout.active_path.len()
        ),
        None => "none".into(),
    };
    writeln!(
        out,
        "<dt>Shown branch</dt><dd id=\"shown-branch\">{}</dd>",
        Esc(&leaf_text)
    )?;
    let models = if stats.models.is_empty() {
        "unknown".to_owned()
    } else {
        stats.models.join(", ")
    };
    write!(
        out,
        "<dt>Models</dt><dd>{}</dd>\n<dt>Messages</dt><dd>{}</dd>\n<dt>Tool calls</dt><dd>{}</dd>\n<dt>Tokens</dt><dd>{}</dd>\n<dt>Cost</dt><dd>${:.3}</dd>\n</dl>\n</header>\n",
        Esc(&models),
        Esc(&stats.messages_line()),
        stats.tool_calls,
        Esc(&stats.tokens_line()),
        stats.total_cost()
    )
}

/// The tree of every entry, the branch picker and the filters.
fn write_sidebar(
    out: &mut dyn Write,
    session: &Session,
    layout: &Layout,
    rows: &[RowText],
) -> io::Result<()> {
    let tree = session.tree();
    let entries = tree.entries();
    out.write_all(
        br#"<aside id="sidebar">
<div class="side-controls">
<label class="branch-pick">Branch <select id="branch">"#,
    )?;
    for leaf in layout.leaves() {
        let selected = if Some(leaf) == layout.leaf {
            " selected"
        } else {
            ""
        };
        let depth = layout.depth[leaf];
        let mark = if Some(leaf) == layout.leaf {
            " (session leaf)"
        } else {
            ""
        };
        write!(
            out,
            r#"<option value="{leaf}"{selected}>{}{mark}, {depth} entries</option>"#,
            Esc(entries[leaf].id())
        )?;
    }
    out.write_all(
        br#"</select></label>
<input type="search" id="tree-search" placeholder="Search the tree">
<div class="filters">
<button type="button" class="filter active" data-filter="default" title="Hide settings entries and replies that only call tools">Default</button>
<button type="button" class="filter" data-filter="no-tools" title="Default minus tool results">No tools</button>
<button type="button" class="filter" data-filter="user" title="Only user messages">User</button>
<button type="button" class="filter" data-filter="labeled" title="Only labelled entries">Labeled</button>
<button type="button" class="filter" data-filter="all" title="Every entry">All</button>
</div>
</div>
<div id="tree">
"#,
    )?;
    for (k, row) in layout.rows().into_iter().enumerate() {
        if k % CHUNK == 0 {
            if k > 0 {
                out.write_all(b"</div>\n")?;
            }
            out.write_all(b"<div class=\"chunk\">\n")?;
        }
        let i = row.entry;
        let entry = &entries[i];
        let text = rows.get(i).cloned().unwrap_or_default();
        let on = if layout.on_path[i] { " on" } else { "" };
        let leaf = if Some(i) == layout.leaf { " leaf" } else { "" };
        let label = tree.label(entry.id());
        let labeled = if label.is_some() { " k-lab" } else { "" };
        write!(
            out,
            r#"<div class="tn {}{labeled}{on}{leaf}" id="t{i}" data-i="{i}" data-id="{}"><span class="tp">{}</span><span class="tm"></span><span class="tc">"#,
            text.kinds,
            Esc(entry.id()),
            row.prefix
        )?;
        if let Some(label) = label {
            write!(
                out,
                r#"<span class="r-label">[{}]</span> "#,
                Esc(&label.text())
            )?;
        }
        out.write_all(text.html.as_bytes())?;
        out.write_all(b"</span></div>\n")?;
    }
    if !entries.is_empty() {
        out.write_all(b"</div>\n")?;
    }
    write!(
        out,
        "</div>\n<div id=\"tree-status\">{} entries</div>\n</aside>\n",
        entries.len()
    )
}

/// What the script needs: parents, newest leaves and the session leaf, as entry indices.
/// Only numbers, so nothing in it can close the `<script>` element.
fn write_data(out: &mut dyn Write, layout: &Layout) -> io::Result<()> {
    out.write_all(br#"<script id="pith-data" type="application/json">{"parent":["#)?;
    for (k, p) in layout.parent.iter().enumerate() {
        let sep = if k == 0 { "" } else { "," };
        match p {
            Some(p) => write!(out, "{sep}{p}")?,
            None => write!(out, "{sep}-1")?,
        }
    }
    out.write_all(br#"],"newest":["#)?;
    for (k, l) in layout.newest_leaf.iter().enumerate() {
        let sep = if k == 0 { "" } else { "," };
        write!(out, "{sep}{l}")?;
    }
    let leaf = layout.leaf.map_or(-1, |l| l as i64);
    writeln!(out, "],\"leaf\":{leaf}}}</script>")
}

/// A value the page's own script carries and an injected one could not guess, so the
/// Content-Security-Policy runs only that script.
fn nonce() -> String {
    let a = RandomState::new().build_hasher().finish();
    let mut h = RandomState::new().build_hasher();
    h.write_u64(a);
    format!("{a:016x}{:016x}", h.finish())
}
