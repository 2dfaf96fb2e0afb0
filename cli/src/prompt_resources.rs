//! The flags and files that shape what the model is told (pi 1.6.0 `core/resource-loader.js`,
//! docs/usage.md): `--system-prompt`, `--append-system-prompt`, `SYSTEM.md` and
//! `APPEND_SYSTEM.md`, context files (`--no-context-files`), and the prompt templates and
//! skills found for this run (`--no-skills`, `--no-prompt-templates`).
//!
//! Project-local files (`.pith/SYSTEM.md`, `.pith/APPEND_SYSTEM.md`, `.pith/prompts`,
//! `.pith/skills`, `.agents/skills`) count only when the project is trusted; the caller
//! passes that decision in.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;

use pith_actors::resources::{DiagnosticKind, ResourceOptions, Resources};
use pith_actors::runtime::SystemPromptFn;
use pith_actors::system_prompt::{self, PromptOptions, PromptTool};

/// pi's system-prompt and resource flags.
#[derive(Debug, Clone, Default, Args)]
pub struct ResourceArgs {
    /// System prompt text, or a file holding it (replaces pith's default text; SYSTEM.md
    /// otherwise).
    #[arg(long, value_name = "TEXT|FILE")]
    pub system_prompt: Option<String>,
    /// Text, or a file, appended to the system prompt (repeatable; APPEND_SYSTEM.md otherwise).
    #[arg(long, value_name = "TEXT|FILE")]
    pub append_system_prompt: Vec<String>,
    /// Do not load AGENTS.md / CLAUDE.md context files.
    #[arg(long)]
    pub no_context_files: bool,
    /// Do not load skills.
    #[arg(long)]
    pub no_skills: bool,
    /// Do not load prompt templates.
    #[arg(long)]
    pub no_prompt_templates: bool,
    /// Load a skill file or directory (repeatable; also with --no-skills).
    #[arg(long = "skill", value_name = "PATH")]
    pub skills: Vec<String>,
    /// Load a prompt template file or directory (repeatable; also with --no-prompt-templates).
    #[arg(long = "prompt-template", value_name = "PATH")]
    pub prompt_templates: Vec<String>,
}

/// pi's `resolvePath`: trimmed, `~` expanded, relative to `cwd`.
fn resolve_path(raw: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    let raw = raw.trim();
    let path = match home {
        Some(home) => pith_store::dirs::expand_tilde(raw, home),
        None => PathBuf::from(raw),
    };
    cwd.join(path)
}

/// What was found for this run.
pub struct Loaded {
    /// Templates and skills (the runtime expands prompts with them).
    pub resources: Arc<Resources>,
    /// The system prompt builder.
    pub system_prompt: SystemPromptFn,
    /// The files the system prompt's custom text and addendum came from (pi lists them first
    /// under `[Context]`).
    pub prompt_files: Vec<PathBuf>,
}

/// pi's `resolvePromptInput`: an existing file's text (BOM dropped), else the text itself.
fn resolve_input(input: &str, what: &str) -> String {
    let path = Path::new(input);
    if path.exists() {
        match pith_llm::config_file::read_text_limited(
            path,
            pith_llm::config_file::CONTEXT_MAX_BYTES,
        ) {
            Ok(Some(text)) => return text.strip_prefix('\u{feff}').unwrap_or(&text).to_owned(),
            Ok(None) => {}
            Err(e) => eprintln!("Warning: Could not read {what} file {input}: {e}"),
        }
    }
    input.to_owned()
}

/// pi's `discoverSystemPromptFile` / `discoverAppendSystemPromptFile`: the trusted project's
/// `.pith/NAME`, else the agent directory's.
fn discover(cwd: &Path, agent_dir: &Path, name: &str, trusted: bool) -> Option<PathBuf> {
    let project = cwd
        .join(pith_actors::resources::PROJECT_DIR_NAME)
        .join(name);
    if trusted && project.exists() {
        return Some(project);
    }
    let global = agent_dir.join(name);
    global.exists().then_some(global)
}

/// Loads templates, skills and the system-prompt inputs for `cwd`; prints resource
/// diagnostics to stderr as pi's non-interactive modes do (`Warning: ...`).
pub fn load(args: &ResourceArgs, cwd: &Path, agent_dir: &Path, project_trusted: bool) -> Loaded {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let resources = Resources::load(
        &ResourceOptions {
            cwd: cwd.to_path_buf(),
            agent_dir: agent_dir.to_path_buf(),
            project_trusted,
            no_skills: args.no_skills,
            no_prompt_templates: args.no_prompt_templates,
            skill_paths: args
                .skills
                .iter()
                .map(|p| resolve_path(p, cwd, home.as_deref()))
                .collect(),
            template_paths: args
                .prompt_templates
                .iter()
                .map(|p| resolve_path(p, cwd, home.as_deref()))
                .collect(),
            home,
            user_entries: Default::default(),
            project_entries: Default::default(),
        }
        .with_settings_entries(),
    );
    for d in resources
        .skill_diagnostics
        .iter()
        .chain(&resources.template_diagnostics)
    {
        match &d.kind {
            DiagnosticKind::Warning => {
                tracing::warn!("{}: {}", d.path.display(), d.message);
            }
            DiagnosticKind::Collision { winner, .. } => tracing::warn!(
                "{}: {} (kept {})",
                d.path.display(),
                d.message,
                winner.display()
            ),
        }
    }
    let custom_source = args.system_prompt.clone().or_else(|| {
        discover(cwd, agent_dir, "SYSTEM.md", project_trusted)
            .map(|p| p.to_string_lossy().into_owned())
    });
    let custom = custom_source
        .as_deref()
        .map(|s| resolve_input(s, "system prompt"));
    let append_sources: Vec<String> = if args.append_system_prompt.is_empty() {
        discover(cwd, agent_dir, "APPEND_SYSTEM.md", project_trusted)
            .map(|p| p.to_string_lossy().into_owned())
            .into_iter()
            .collect()
    } else {
        args.append_system_prompt.clone()
    };
    let prompt_files: Vec<PathBuf> = custom_source
        .iter()
        .chain(&append_sources)
        .filter(|s| !s.is_empty())
        .map(|s| cwd.join(s))
        .filter(|p| p.is_file())
        .collect();
    // pi's `resolvePromptInput` gives nothing for an empty value, and nothing is appended.
    let append: Vec<String> = append_sources
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| resolve_input(s, "append system prompt"))
        .collect();
    let resources = Arc::new(resources);
    let skills = resources.skills.clone();
    let agent_dir = agent_dir.to_path_buf();
    let no_context_files = args.no_context_files;
    let system_prompt: SystemPromptFn = Arc::new(move |cwd: &Path, tools: &[PromptTool]| {
        let options = PromptOptions {
            custom_prompt: custom.clone(),
            append: (!append.is_empty()).then(|| append.join("\n\n")),
            context_files: if no_context_files {
                Vec::new()
            } else {
                system_prompt::load_context_files(cwd, &agent_dir)
            },
            skills: skills.clone(),
        };
        system_prompt::build_with(cwd, tools, &options)
    });
    Loaded {
        resources,
        system_prompt,
        prompt_files,
    }
}
