//! pi's startup listing of skills and prompt templates (`showLoadedResources`): `[Skills]`
//! and `[Prompts]` with the sorted names, then `[Skill warnings]` and `[Prompt conflicts]`
//! with each problem (collisions grouped by name: the file kept, the files skipped).

use std::path::Path;

use pith_actors::resources::{Diagnostic, DiagnosticKind, Resources};

use super::style;

/// The lines to print after the header; `show_path` shortens a path as `[Context]` does.
pub fn startup_lines(resources: &Resources, show_path: &dyn Fn(&Path) -> String) -> Vec<String> {
    let mut lines = Vec::new();
    let mut section = |name: &str, mut labels: Vec<String>| {
        if labels.is_empty() {
            return;
        }
        labels.sort_by_key(|l| l.to_lowercase());
        lines.push(String::new());
        lines.push(style::accent(&format!("[{name}]")));
        lines.push(style::dim(&format!("  {}", labels.join(", "))));
    };
    section(
        "Skills",
        resources.skills.iter().map(|s| s.name.clone()).collect(),
    );
    section(
        "Prompts",
        resources
            .templates
            .iter()
            .map(|t| format!("/{}", t.name))
            .collect(),
    );
    for (title, diagnostics) in [
        ("Skill warnings", &resources.skill_diagnostics),
        ("Prompt conflicts", &resources.template_diagnostics),
    ] {
        if !diagnostics.is_empty() {
            lines.push(String::new());
            lines.push(style::warning(&format!("[{title}]")));
            lines.extend(diagnostic_lines(diagnostics, show_path));
        }
    }
    lines
}

/// pi's `formatDiagnostics`.
fn diagnostic_lines(
    diagnostics: &[Diagnostic],
    show_path: &dyn Fn(&Path) -> String,
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for d in diagnostics {
        if let DiagnosticKind::Collision { name, .. } = &d.kind
            && !names.contains(&name.as_str())
        {
            names.push(name);
        }
    }
    for name in names {
        let mut group = diagnostics.iter().filter_map(|d| match &d.kind {
            DiagnosticKind::Collision { name: n, winner } if n == name => Some((winner, &d.path)),
            DiagnosticKind::Collision { .. } | DiagnosticKind::Warning => None,
        });
        let Some((winner, first_loser)) = group.next() else {
            continue;
        };
        lines.push(style::warning(&format!("  \"{name}\" collision:")));
        lines.push(style::dim(&format!("    ✓ {}", show_path(winner))));
        for loser in std::iter::once(first_loser).chain(group.map(|(_, l)| l)) {
            lines.push(style::dim(&format!("    ✗ {} (skipped)", show_path(loser))));
        }
    }
    for d in diagnostics {
        match &d.kind {
            DiagnosticKind::Warning => {
                lines.push(style::warning(&format!("  {}", show_path(&d.path))));
                lines.push(style::warning(&format!("    {}", d.message)));
            }
            DiagnosticKind::Collision { .. } => {}
        }
    }
    lines
}
