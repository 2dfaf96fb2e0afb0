//! No file of a crate depends, through `crate::` paths, on a file that depends back on it:
//! a cycle between files means two concepts that cannot be read (or moved) one without the
//! other (issue 11, "one home per concept").
//!
//! Every `crate::a::b…` path outside comments counts (in `use` lines and inline), grouped
//! imports (`crate::{a::X, b}`) included; a path names the deepest module file it reaches.
//! `super::` (a child using its parent) and `mod` declarations do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace's member crates, from the root `Cargo.toml`.
fn members(root: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("a members line in the workspace Cargo.toml");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(|m| root.join(m))
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under `src`: `lib.rs`/`main.rs` is the root, `a/mod.rs` and
/// `a.rs` are `a`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !(matches!(stem, "mod") || (parts.is_empty() && matches!(stem, "lib" | "main"))) {
        parts.push(stem.to_owned());
    }
    parts
}

/// The code of a file without comments and string literals (a `//` inside a string, or a
/// `crate::` in a doc comment, says nothing about dependencies).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'"' {
            // A raw string (r"…", r#"…"#) was started by the `r`/`#` just pushed.
            let hashes = out.chars().rev().take_while(|&c| c == '#').count();
            let raw = out[..out.len() - hashes].ends_with('r');
            out.push(' ');
            i += 1;
            while i < b.len() {
                if !raw && b[i] == b'\\' {
                    i += 2;
                    continue;
                }
                if b[i] == b'"' && b[i + 1..].iter().take(hashes).all(|&c| c == b'#') {
                    i += 1 + if raw { hashes } else { 0 };
                    break;
                }
                i += 1;
            }
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // A character literal such as '"'.
            i += 3;
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            // An escaped character literal: '\'', '\n', '\u{7f}'.
            i += 3;
            while i < b.len() && b[i] != b'\'' {
                i += 1;
            }
            i += 1;
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Every path after `crate::`, with groups expanded: `crate::{a::{B, C}, d}` gives `a::B`,
/// `a::C` and `d`.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        expand(rest, Vec::new(), &mut paths);
    }
    paths
}

fn ident_len(s: &str) -> usize {
    s.find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len())
}

/// Reads one path (or group) at the start of `s` under `prefix`.
fn expand(s: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let s = s.trim_start();
    if let Some(group) = s.strip_prefix('{') {
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    expand(&group[start..i], prefix.clone(), out);
                    return;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&group[start..i], prefix.clone(), out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        return;
    }
    let n = ident_len(s);
    if n == 0 {
        if !prefix.is_empty() {
            out.push(prefix);
        }
        return;
    }
    let mut path = prefix;
    path.push(s[..n].to_owned());
    match s[n..].strip_prefix("::") {
        Some(more) => expand(more, path, out),
        None => out.push(path),
    }
}

/// Strongly connected components with more than one file (Tarjan).
fn cycles(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        found: Vec<Vec<PathBuf>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a PathBuf) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

/// File-level dependency edges of one crate's `src`.
fn crate_edges(src: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let by_module: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|f| (module_of(src, f), f.clone()))
        .collect();
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for file in &files {
        let code = code_only(&std::fs::read_to_string(file).unwrap());
        let targets = edges.entry(file.clone()).or_default();
        for path in crate_paths(&code) {
            let target = (1..=path.len())
                .rev()
                .find_map(|n| by_module.get(&path[..n]))
                .or_else(|| by_module.get(&Vec::new()));
            if let Some(t) = target
                && t != file
            {
                targets.insert(t.clone());
            }
        }
    }
    edges
}

#[test]
fn no_file_depends_on_a_file_that_depends_back_on_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    let mut files = 0;
    for member in members(&root) {
        let src = member.join("src");
        let edges = crate_edges(&src);
        files += edges.len();
        for cycle in cycles(&edges) {
            let names: Vec<String> = cycle
                .iter()
                .map(|p| p.strip_prefix(&root).unwrap_or(p).display().to_string())
                .collect();
            found.push(names.join(" ⇄ "));
        }
    }
    assert!(files > 100, "only {files} files read");
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

#[test]
fn the_checker_sees_paths_groups_and_cycles() {
    let code = code_only(
        "use crate::a::{B, c::{D, E}};\n// crate::x::y\nlet s = \"crate::z\"; crate::m::f();",
    );
    assert_eq!(
        crate_paths(&code),
        [
            vec!["a", "B"],
            vec!["a", "c", "D"],
            vec!["a", "c", "E"],
            vec!["m", "f"]
        ]
    );
    let edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = [
        ("a.rs", vec!["b.rs"]),
        ("b.rs", vec!["c.rs"]),
        ("c.rs", vec!["a.rs"]),
        ("d.rs", vec!["a.rs"]),
    ]
    .into_iter()
    .map(|(f, to)| (f.into(), to.into_iter().map(PathBuf::from).collect()))
    .collect();
    assert_eq!(
        cycles(&edges),
        [vec![
            PathBuf::from("a.rs"),
            PathBuf::from("b.rs"),
            PathBuf::from("c.rs")
        ]]
    );
}
