//! pi's default system prompt (pi-coding-agent 1.6.0 `core/system-prompt.js`) and its
//! loading of context files (`AGENTS.override.md` / `AGENTS.md` / `CLAUDE.md`,
//! `core/resource-loader.js`).
//!
//! pi's prompt also has a `<docs>` section pointing the model at pi's own README, docs and
//! examples; pith has no such files to point at, so it is left out. pi's bash guideline about
//! `PI_*` environment variables is left out too (pith's bash sets none). Everything else is
//! pi's text, with "pi" as "pith".

use std::path::{Path, PathBuf};

use crate::resources::SkillReader;

mod worktree;

/// File names pi looks for in each directory, first match wins.
const CONTEXT_FILE_NAMES: [&str; 5] = [
    "AGENTS.override.md",
    "AGENTS.md",
    "AGENTS.MD",
    "CLAUDE.md",
    "CLAUDE.MD",
];

/// One loaded context file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// Where it was found (shown as the section heading).
    pub path: PathBuf,
    /// Its text (invalid UTF-8 replaced with U+FFFD, as Node reads it).
    pub content: String,
}

/// A tool as the system prompt lists it: its line under `<tools>` and its rules under
/// `<rules>` (pi 1.6.0: `toolSnippets`, `toolGuidelines`; a tool without a snippet is not
/// listed, though the model is still offered it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptTool {
    /// The name the model calls it by.
    pub name: String,
    /// One line, whitespace collapsed; `None` leaves the tool out of `<tools>`.
    pub snippet: Option<String>,
    /// Trimmed, non-empty, without repeats, in declaration order.
    pub guidelines: Vec<String>,
}

impl PromptTool {
    /// A built-in tool with pi's snippet and guidelines.
    pub fn builtin(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            snippet: pith_tools::prompt_snippet(name).map(str::to_owned),
            guidelines: pith_tools::prompt_guidelines(name)
                .iter()
                .map(|g| (*g).to_owned())
                .collect(),
        }
    }

    /// A tool declared elsewhere (an extension's `promptSnippet` and `promptGuidelines`,
    /// extensions.md §1.2 "Tools"), normalised as pi's `_normalizePromptSnippet` and
    /// `_normalizePromptGuidelines` do.
    pub fn declared(name: &str, snippet: Option<&str>, guidelines: &[String]) -> Self {
        let snippet = snippet
            .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|s| !s.is_empty());
        let mut kept: Vec<String> = Vec::new();
        for g in guidelines
            .iter()
            .map(|g| g.trim())
            .filter(|g| !g.is_empty())
        {
            if !kept.iter().any(|k| k == g) {
                kept.push(g.to_owned());
            }
        }
        Self {
            name: name.to_owned(),
            snippet,
            guidelines: kept,
        }
    }
}

/// What goes into a prompt beyond the defaults.
#[derive(Debug, Clone, Default)]
pub struct PromptOptions {
    /// Replaces pi's default text, tools and rules (pi's `SYSTEM.md` / `--system-prompt`);
    /// the other sections are still added.
    pub custom_prompt: Option<String>,
    /// Appended after the main text (pi's `APPEND_SYSTEM.md` / `--append-system-prompt`).
    pub append: Option<String>,
    /// Context files, in order (see [`load_context_files`]).
    pub context_files: Vec<ContextFile>,
    /// Skills the model may load (listed when a reader tool is active).
    pub skills: Vec<crate::resources::Skill>,
}

/// pi's `loadProjectContextFiles`: the context file of `agent_dir` first, then those of every
/// directory from the filesystem root down to `cwd` (outermost first), each path once, the
/// main checkout's left out in a nested linked git worktree that has its own. A file that
/// cannot be read is skipped with a warning, as pi does.
pub fn load_context_files(cwd: &Path, agent_dir: &Path) -> Vec<ContextFile> {
    let mut files = Vec::new();
    if let Some(global) = context_file_in(agent_dir) {
        files.push(global);
    }
    let shadowed = worktree::shadowed_context_file(cwd);
    let mut ancestors: Vec<ContextFile> = Vec::new();
    for dir in cwd.ancestors() {
        let Some(file) = context_file_in(dir) else {
            continue;
        };
        let is_shadowed = shadowed.as_ref().is_some_and(|s| {
            let real_dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
            file.path
                .file_name()
                .is_some_and(|n| real_dir.join(n) == *s)
        });
        if !is_shadowed && !files.iter().chain(&ancestors).any(|f| f.path == file.path) {
            ancestors.push(file);
        }
    }
    ancestors.reverse();
    files.extend(ancestors);
    files
}

fn context_file_in(dir: &Path) -> Option<ContextFile> {
    for name in CONTEXT_FILE_NAMES {
        let path = dir.join(name);
        // Size- and type-limited: a context file can come with a cloned repository.
        match pith_llm::config_file::read_text_limited(
            &path,
            pith_llm::config_file::CONTEXT_MAX_BYTES,
        ) {
            Ok(Some(content)) => {
                let content = content
                    .strip_prefix('\u{feff}')
                    .map(str::to_owned)
                    .unwrap_or(content);
                return Some(ContextFile { content, path });
            }
            Ok(None) => {}
            Err(e) => tracing::warn!("context file not used: {e}"),
        }
    }
    None
}

/// pi's default system prompt for a session in `cwd` with `tools` active, with the context
/// files of `agent_dir` (pith's is `~/.pith/agent`) and of `cwd` and its ancestors.
pub fn build(cwd: &Path, agent_dir: &Path, tools: &[PromptTool]) -> String {
    let options = PromptOptions {
        context_files: load_context_files(cwd, agent_dir),
        ..PromptOptions::default()
    };
    build_with(cwd, tools, &options)
}

/// pi 1.6.0's `buildSystemPrompt`: the preamble (the custom prompt, or pi's text followed by
/// `<tools>` and `<rules>`), then `<addendum>` (the appended text), `<project_context>` (the
/// context files), `<skills>` (when `read` or `bash` is active) and `<cwd>` (backslashes
/// turned into slashes), each section tagged and separated by a blank line.
pub fn build_with(cwd: &Path, tools: &[PromptTool], options: &PromptOptions) -> String {
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let mut sections: Vec<(&str, String)> = Vec::new();
    let preamble = match options.custom_prompt.as_deref().filter(|c| !c.is_empty()) {
        Some(custom) => custom.to_owned(),
        None => {
            sections.push(("tools", tools_section(tools)));
            sections.push(("rules", rules_section(tools)));
            "You are a coding assistant running inside pith, a coding agent harness. Help users inspect files, run commands, and modify code.".to_owned()
        }
    };
    if let Some(append) = options.append.as_deref().filter(|a| !a.is_empty()) {
        sections.push(("addendum", append.to_owned()));
    }
    if !options.context_files.is_empty() {
        let mut parts = vec!["Project-specific instructions and guidelines:".to_owned()];
        for f in &options.context_files {
            parts.push(format!(
                "<project_instructions path=\"{}\">\n{}\n</project_instructions>",
                f.path.display(),
                f.content
            ));
        }
        sections.push(("project_context", parts.join("\n\n")));
    }
    let reader = if names.contains(&"read") {
        Some(SkillReader::Read)
    } else if names.contains(&"bash") {
        Some(SkillReader::Bash)
    } else {
        None
    };
    if let Some(reader) = reader {
        let skills = crate::resources::skills::format_for_prompt(&options.skills, reader);
        let skills = skills.trim();
        if !skills.is_empty() {
            sections.push(("skills", skills.to_owned()));
        }
    }
    sections.push(("cwd", cwd.display().to_string().replace('\\', "/")));
    let mut parts = vec![preamble];
    for (name, content) in sections {
        parts.push(format!("<{name}>\n{content}\n</{name}>"));
    }
    parts.retain(|p| !p.is_empty());
    parts.join("\n\n")
}

/// The tools with a prompt snippet, in the given order, else `(none)`.
fn tools_section(tools: &[PromptTool]) -> String {
    let listed: Vec<String> = tools
        .iter()
        .filter_map(|t| t.snippet.as_ref().map(|s| format!("- {}: {s}", t.name)))
        .collect();
    let tools = if listed.is_empty() {
        "(none)".to_owned()
    } else {
        listed.join("\n")
    };
    format!("{tools}\n\nAdditional tools may be available.")
}

/// pi's `buildRules`: the bash advice when no explorer tool is active, each tool's
/// guidelines, then pi's two fixed ones, trimmed and without repeats.
fn rules_section(tools: &[PromptTool]) -> String {
    let mut rules: Vec<String> = Vec::new();
    let mut add = |g: &str| {
        let g = g.trim();
        if !g.is_empty() && !rules.iter().any(|r| r == g) {
            rules.push(g.to_owned());
        }
    };
    let has = |n: &str| tools.iter().any(|t| t.name == n);
    if has("bash") && !has("grep") && !has("find") && !has("ls") {
        add("Use bash for file operations like ls, rg, find");
    }
    for g in tools.iter().flat_map(|t| &t.guidelines) {
        add(g);
    }
    add("Be concise in your responses");
    add("Show file paths clearly when working with files");
    rules
        .iter()
        .map(|g| format!("- {g}"))
        .collect::<Vec<_>>()
        .join("\n")
}
