//! `pith trace mermaid FILE`: a `--trace` file (Chrome trace JSON) as a Mermaid sequence
//! diagram of the messages between actors.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;
use serde_json::Value;

/// The trace subcommands.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Print a Mermaid sequence diagram of the actor messages in a `--trace` file.
    Mermaid {
        /// The trace file written by `pith --trace FILE …`.
        file: PathBuf,
    },
}

/// Runs a trace subcommand.
pub fn run(cmd: TraceCommand) -> Result<()> {
    let TraceCommand::Mermaid { file } = cmd;
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let mut out = std::io::stdout().lock();
    out.write_all(
        mermaid(&text)
            .with_context(|| format!("{}: not a pith trace", file.display()))?
            .as_bytes(),
    )?;
    Ok(())
}

/// The diagram: one arrow `from->>actor: msg` per handled message, in time order.
pub fn mermaid(trace_json: &str) -> Result<String> {
    let events = parse_events(trace_json)?;
    let mut arrows: Vec<(f64, String, String, String)> = events
        .iter()
        .filter(|e| e["name"] == "message" && matches!(e["ph"].as_str(), Some("b" | "B")))
        .filter_map(|e| {
            let args = &e["args"];
            // Fields recorded with Debug formatting arrive quoted.
            let field = |k: &str| {
                args[k]
                    .as_str()
                    .map(|s| s.trim_matches('"').to_owned())
                    .filter(|s| !s.is_empty())
            };
            let actor = field("actor")?;
            let from = field("from").unwrap_or_else(|| "Runtime".to_owned());
            let msg = field("msg").unwrap_or_else(|| "?".to_owned());
            Some((e["ts"].as_f64().unwrap_or(0.0), from, actor, msg))
        })
        .collect();
    arrows.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut participants: Vec<String> = Vec::new();
    for (_, from, to, _) in &arrows {
        for p in [from, to] {
            if !participants.contains(p) {
                participants.push(p.clone());
            }
        }
    }
    let id = |p: &str| p.replace(|c: char| !c.is_ascii_alphanumeric(), "_");
    let mut out = String::from("sequenceDiagram\n");
    for p in &participants {
        out.push_str(&format!("    participant {} as {p}\n", id(p)));
    }
    for (_, from, to, msg) in &arrows {
        out.push_str(&format!("    {}->>{}: {msg}\n", id(from), id(to)));
    }
    Ok(out)
}

/// The trace's events. A trace cut short (the process was killed) has no closing `]` and may
/// end inside an event: every complete event is used, as Perfetto does.
fn parse_events(text: &str) -> Result<Vec<Value>> {
    if let Ok(events) = serde_json::from_str::<Vec<Value>>(text) {
        return Ok(events);
    }
    let mut rest = text
        .trim_start()
        .strip_prefix('[')
        .context("not a JSON array of trace events")?;
    let mut events = Vec::new();
    loop {
        rest = rest.trim_start_matches([',', ' ', '\n', '\r', '\t']);
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match stream.next() {
            Some(Ok(event)) => {
                events.push(event);
                rest = &rest[stream.byte_offset()..];
            }
            _ => break,
        }
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_trace_still_draws() {
        let cut = r#"[{"ph":"b","name":"message","ts":1,"args":{"actor":"\"Agent\"","from":"\"Runtime\"","msg":"\"prompt\""}},
{"ph":"b","name":"message","ts":2,"args":{"actor":"\"SessionWriter\"","from":"\"Agent\"","msg":"\"append_message\""}},
{"ph":"b","name":"message","ts":3,"args":{"act"#;
        let diagram = mermaid(cut).expect("draws");
        assert!(diagram.contains("Runtime->>Agent: prompt"), "{diagram}");
        assert!(
            diagram.contains("Agent->>SessionWriter: append_message"),
            "{diagram}"
        );
    }
}
