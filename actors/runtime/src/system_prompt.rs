//! pi's default system prompt (pi-coding-agent 0.73.1 `core/system-prompt.js`) and its
//! loading of context files (`AGENTS.md` / `CLAUDE.md`, `core/resource-loader.js`).
//!
//! pi's prompt also points the model at pi's own README, docs and examples; pith has no such
//! files to point at, so those lines are left out. Everything else is pi's text.

use std::path::{Path, PathBuf};

use pith_tools;
use pith_tools::tool::ToolSpec;

/// File names pi looks for in each directory, first match wins.
const CONTEXT_FILE_NAMES: [&str; 4] = ["AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"];

/// One loaded context file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// Where it was found (shown as the section heading).
    pub path: PathBuf,
    /// Its text (invalid UTF-8 replaced with U+FFFD, as Node reads it).
    pub content: String,
}

/// What goes into a prompt beyond the defaults.
#[derive(Debug, Clone, Default)]
pub struct PromptOptions {
    /// Replaces pi's default text (pi's `SYSTEM.md` / `--system-prompt`); context files, date
    /// and cwd are still appended.
    pub custom_prompt: Option<String>,
    /// Appended after the main text (pi's `APPEND_SYSTEM.md` / `--append-system-prompt`).
    pub append: Option<String>,
    /// Context files, in order (see [`load_context_files`]).
    pub context_files: Vec<ContextFile>,
}

/// pi's `loadProjectContextFiles`: the context file of `agent_dir` first, then those of every
/// directory from the filesystem root down to `cwd` (outermost first), each path once. A
/// file that cannot be read is skipped with a warning, as pi does.
pub fn load_context_files(cwd: &Path, agent_dir: &Path) -> Vec<ContextFile> {
    let mut files = Vec::new();
    if let Some(global) = context_file_in(agent_dir) {
        files.push(global);
    }
    let mut ancestors: Vec<ContextFile> = Vec::new();
    for dir in cwd.ancestors() {
        if let Some(file) = context_file_in(dir)
            && !files.iter().chain(&ancestors).any(|f| f.path == file.path)
        {
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
            Ok(Some(content)) => return Some(ContextFile { content, path }),
            Ok(None) => {}
            Err(e) => tracing::warn!("context file not used: {e}"),
        }
    }
    None
}

/// pi's default system prompt for a session in `cwd` with `tools` active, with the context
/// files of `agent_dir` (pith's is `~/.pith/agent`) and of `cwd` and its ancestors. `today` is
/// the local date as pi prints it, `YYYY-MM-DD`.
pub fn build(cwd: &Path, agent_dir: &Path, tools: &[ToolSpec], today: &str) -> String {
    let options = PromptOptions {
        context_files: load_context_files(cwd, agent_dir),
        ..PromptOptions::default()
    };
    build_with(cwd, tools, today, &options)
}

/// pi's `buildSystemPrompt` with explicit options: the tool list (tools with a prompt
/// snippet, in the given order, else `(none)`), guidelines (bash advice, each tool's
/// guidelines, then pi's two fixed ones, without repeats), the appended text, a
/// `# Project Context` section with each context file, and finally the date and the cwd
/// (backslashes turned into slashes).
pub fn build_with(cwd: &Path, tools: &[ToolSpec], today: &str, options: &PromptOptions) -> String {
    let prompt_cwd = cwd.display().to_string().replace('\\', "/");
    let mut prompt = match &options.custom_prompt {
        Some(custom) if !custom.is_empty() => custom.clone(),
        _ => default_text(tools),
    };
    if let Some(append) = options.append.as_deref().filter(|a| !a.is_empty()) {
        prompt.push_str("\n\n");
        prompt.push_str(append);
    }
    if !options.context_files.is_empty() {
        prompt.push_str("\n\n# Project Context\n\n");
        prompt.push_str("Project-specific instructions and guidelines:\n\n");
        for file in &options.context_files {
            prompt.push_str(&format!(
                "## {}\n\n{}\n\n",
                file.path.display(),
                file.content
            ));
        }
    }
    prompt.push_str(&format!("\nCurrent date: {today}"));
    prompt.push_str(&format!("\nCurrent working directory: {prompt_cwd}"));
    prompt
}

fn default_text(tools: &[ToolSpec]) -> String {
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let listed: Vec<String> = names
        .iter()
        .filter_map(|name| pith_tools::prompt_snippet(name).map(|s| format!("- {name}: {s}")))
        .collect();
    let tools_list = if listed.is_empty() {
        "(none)".to_owned()
    } else {
        listed.join("\n")
    };

    let mut guidelines: Vec<&str> = Vec::new();
    let mut add = |g: &'static str| {
        if !guidelines.contains(&g) {
            guidelines.push(g);
        }
    };
    let has = |n: &str| names.contains(&n);
    let explorers = has("grep") || has("find") || has("ls");
    if has("bash") && !explorers {
        add("Use bash for file operations like ls, rg, find");
    } else if has("bash") && explorers {
        add(
            "Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)",
        );
    }
    for name in &names {
        for g in pith_tools::prompt_guidelines(name) {
            add(g);
        }
    }
    add("Be concise in your responses");
    add("Show file paths clearly when working with files");
    let guidelines: Vec<String> = guidelines.iter().map(|g| format!("- {g}")).collect();

    format!(
        "You are an expert coding assistant operating inside pith, a coding agent harness. You help users by reading files, executing commands, editing code, and writing new files.

Available tools:
{tools_list}

In addition to the tools above, you may have access to other custom tools depending on the project.

Guidelines:
{}",
        guidelines.join("\n")
    )
}
