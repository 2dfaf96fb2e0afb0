//! Message entries (user, assistant with its thinking and tool calls, tool results, shell
//! commands, custom messages, summaries) as HTML, and their sidebar texts.

use std::io::{self, Write};
use std::sync::LazyLock;

use pith_events::{
    AgentMessage, AssistantMessage, BashExecutionMessage, ContentBlock, StopReason, UserContent,
};
use regex::Regex;

use super::{ROW_CHARS, Renderer, RowText};
use crate::export::html::{Esc, escaped};
use crate::export::markdown::write_markdown;
use crate::export::stats::format_tokens;
use crate::export::tools::{
    describe_call, describe_result, joined_text, pretty, write_call, write_images, write_result,
    write_text_block,
};
use crate::text::normalized_prefix;

impl Renderer<'_> {
    pub(super) fn write_message(
        &mut self,
        out: &mut dyn Write,
        m: &AgentMessage,
    ) -> io::Result<RowText> {
        Ok(match m {
            AgentMessage::System(sys) => {
                let value = serde_json::to_value(sys).unwrap_or_default();
                write!(out, r#"<pre class="args">{}</pre>"#, Esc(&pretty(&value)))?;
                RowText {
                    html: r#"<span class="r-muted">[system prompt and tools]</span>"#.into(),
                    kinds: "k-set",
                }
            }
            AgentMessage::User(u) => {
                let text = match &u.content {
                    UserContent::Text(s) => s.clone(),
                    UserContent::Blocks(b) => joined_text(b, "\n"),
                };
                if let UserContent::Blocks(b) = &u.content {
                    write_images(out, b)?;
                }
                let row_text = match parse_skill(&text) {
                    Some(skill) => {
                        write!(
                            out,
                            r#"<details class="skill"><summary>[skill] {}</summary><div class="md">"#,
                            Esc(skill.name)
                        )?;
                        write_markdown(out, skill.content)?;
                        out.write_all(b"</div></details>")?;
                        if let Some(msg) = skill.user_message {
                            out.write_all(br#"<div class="md">"#)?;
                            write_markdown(out, msg)?;
                            out.write_all(b"</div>")?;
                        }
                        let mut html = format!(
                            r#"<span class="r-skill">skill:</span> {}"#,
                            escaped(skill.name)
                        );
                        if let Some(msg) = skill.user_message {
                            html.push_str(&format!(
                                r#" · <span class="r-user">user:</span> {}"#,
                                escaped(&normalized_prefix(msg, ROW_CHARS))
                            ));
                        }
                        html
                    }
                    None => {
                        if !text.trim().is_empty() {
                            out.write_all(br#"<div class="md">"#)?;
                            write_markdown(out, &text)?;
                            out.write_all(b"</div>")?;
                        }
                        format!(
                            r#"<span class="r-user">user:</span> {}"#,
                            escaped(&normalized_prefix(&text, ROW_CHARS))
                        )
                    }
                };
                RowText {
                    html: row_text,
                    kinds: "k-user",
                }
            }
            AgentMessage::Assistant(a) => self.write_assistant(out, a)?,
            AgentMessage::ToolResult(r) => {
                let call = self.calls.get(&r.tool_call_id).map(String::as_str);
                let what = describe_result(r, call);
                write!(out, r#"<div class="result-of">{}"#, Esc(&what))?;
                if r.is_error {
                    out.write_all(br#" <span class="badge err">error</span>"#)?;
                }
                out.write_all(b"</div>")?;
                write_result(out, r)?;
                RowText {
                    html: format!(r#"<span class="r-tool">{}</span>"#, escaped(&what)),
                    kinds: "k-tool",
                }
            }
            AgentMessage::BashExecution(b) => {
                write_bash(out, b)?;
                RowText {
                    html: format!(
                        r#"<span class="r-tool">[bash]:</span> {}"#,
                        escaped(&normalized_prefix(&b.command, ROW_CHARS))
                    ),
                    kinds: "",
                }
            }
            AgentMessage::Custom(c) => {
                write_custom_content(out, &c.content, c.display)?;
                custom_row(&c.custom_type, &c.content)
            }
            AgentMessage::BranchSummary(b) => {
                out.write_all(br#"<div class="md">"#)?;
                write_markdown(out, &b.summary)?;
                out.write_all(b"</div>")?;
                RowText {
                    html: format!(
                        r#"<span class="r-summary">[branch summary]:</span> {}"#,
                        escaped(&normalized_prefix(&b.summary, ROW_CHARS))
                    ),
                    kinds: "",
                }
            }
            AgentMessage::CompactionSummary(c) => {
                out.write_all(br#"<div class="md">"#)?;
                write_markdown(out, &c.summary)?;
                out.write_all(b"</div>")?;
                RowText {
                    html: r#"<span class="r-compaction">[compaction summary]</span>"#.into(),
                    kinds: "",
                }
            }
            AgentMessage::Unknown(v) => {
                write!(out, r#"<pre class="args">{}</pre>"#, Esc(&pretty(v)))?;
                RowText {
                    html: format!(r#"<span class="r-muted">[{}]</span>"#, escaped(m.role())),
                    kinds: "",
                }
            }
        })
    }

    fn write_assistant(
        &mut self,
        out: &mut dyn Write,
        a: &AssistantMessage,
    ) -> io::Result<RowText> {
        for block in &a.content {
            match block {
                ContentBlock::Text(t) => {
                    if !t.text.trim().is_empty() {
                        out.write_all(br#"<div class="md">"#)?;
                        write_markdown(out, &t.text)?;
                        out.write_all(b"</div>")?;
                    }
                }
                ContentBlock::Thinking(t) => {
                    if t.redacted == Some(true) && t.thinking.trim().is_empty() {
                        out.write_all(br#"<details class="thinking" open><summary>Thinking</summary><div class="think-text">(redacted by the provider)</div></details>"#)?;
                    } else if !t.thinking.trim().is_empty() {
                        write!(
                            out,
                            r#"<details class="thinking" open><summary>Thinking</summary><div class="think-text">{}</div></details>"#,
                            Esc(&t.thinking)
                        )?;
                    }
                }
                ContentBlock::ToolCall(call) => {
                    self.calls
                        .insert(call.id.clone(), describe_call(&call.name, &call.arguments));
                    write_call(out, call)?;
                }
                ContentBlock::Image(_) => {
                    write_images(out, std::slice::from_ref(block))?;
                }
                ContentBlock::Unknown(v) => {
                    write!(out, r#"<pre class="args">{}</pre>"#, Esc(&pretty(v)))?;
                }
            }
        }
        match a.stop_reason {
            StopReason::Aborted => out.write_all(br#"<div class="error-text">Aborted</div>"#)?,
            StopReason::Error => write!(
                out,
                r#"<div class="error-text">Error: {}</div>"#,
                Esc(a.error_message.as_deref().unwrap_or("Unknown error"))
            )?,
            StopReason::Stop | StopReason::Length | StopReason::ToolUse | StopReason::Pending => {}
        }
        let u = &a.usage;
        write!(
            out,
            r#"<div class="foot">{}/{} · {} · ↑{} ↓{}"#,
            Esc(&a.provider),
            Esc(&a.model),
            stop_reason(a.stop_reason),
            format_tokens(u.input),
            format_tokens(u.output)
        )?;
        if u.cache_read > 0 || u.cache_write > 0 {
            write!(
                out,
                " R{} W{}",
                format_tokens(u.cache_read),
                format_tokens(u.cache_write)
            )?;
        }
        if u.cost.total > 0.0 {
            write!(out, " · ${:.4}", u.cost.total)?;
        }
        out.write_all(b"</div>")?;

        let text = joined_text(&a.content, "");
        let has_text = !text.trim().is_empty();
        let role = r#"<span class="r-assistant">assistant:</span> "#;
        let html = if has_text {
            format!("{role}{}", escaped(&normalized_prefix(&text, ROW_CHARS)))
        } else if a.stop_reason == StopReason::Aborted {
            format!(r#"{role}<span class="r-muted">(aborted)</span>"#)
        } else if let Some(e) = &a.error_message {
            format!(
                r#"{role}<span class="r-error">{}</span>"#,
                escaped(&normalized_prefix(e, ROW_CHARS))
            )
        } else {
            format!(r#"{role}<span class="r-muted">(no text)</span>"#)
        };
        // pi's tree hides replies that only call tools, unless they failed or were cut.
        let quiet = !has_text && matches!(a.stop_reason, StopReason::Stop | StopReason::ToolUse);
        Ok(RowText {
            html,
            kinds: if quiet { "k-quiet" } else { "" },
        })
    }
}

fn stop_reason(r: StopReason) -> &'static str {
    match r {
        StopReason::Stop => "stop",
        StopReason::Length => "length",
        StopReason::ToolUse => "toolUse",
        StopReason::Error => "error",
        StopReason::Aborted => "aborted",
        StopReason::Pending => "pending",
    }
}

fn write_bash(out: &mut dyn Write, b: &BashExecutionMessage) -> io::Result<()> {
    write!(out, r#"<pre class="cmd">$ {}</pre>"#, Esc(&b.command))?;
    if !b.output.is_empty() {
        write_text_block(out, "out", &b.output)?;
    }
    if b.cancelled {
        out.write_all(br#"<div class="warn-text">(cancelled)</div>"#)?;
    } else if let Some(code) = b.exit_code.filter(|c| *c != 0) {
        write!(out, r#"<div class="error-text">(exit {code})</div>"#)?;
    }
    if b.truncated {
        out.write_all(br#"<div class="note">Output truncated"#)?;
        if let Some(p) = &b.full_output_path {
            write!(out, "; full output in {}", Esc(p))?;
        }
        out.write_all(b"</div>")?;
    }
    if b.exclude_from_context == Some(true) {
        out.write_all(br#"<div class="note">Not sent to the model (<code>!!</code>)</div>"#)?;
    }
    Ok(())
}

pub(super) fn write_custom_content(
    out: &mut dyn Write,
    content: &UserContent,
    display: bool,
) -> io::Result<()> {
    if !display {
        out.write_all(br#"<div class="note">Not displayed in pi's conversation view; sent to the model.</div>"#)?;
    }
    match content {
        UserContent::Text(s) => {
            out.write_all(br#"<div class="md">"#)?;
            write_markdown(out, s)?;
            out.write_all(b"</div>")
        }
        UserContent::Blocks(blocks) => {
            write_images(out, blocks)?;
            let text = joined_text(blocks, "\n");
            if !text.trim().is_empty() {
                out.write_all(br#"<div class="md">"#)?;
                write_markdown(out, &text)?;
                out.write_all(b"</div>")?;
            }
            Ok(())
        }
    }
}

pub(super) fn custom_row(custom_type: &str, content: &UserContent) -> RowText {
    RowText {
        html: format!(
            r#"<span class="r-custom">[{}]:</span> {}"#,
            escaped(custom_type),
            escaped(&normalized_prefix(&content.joined_text(""), ROW_CHARS))
        ),
        kinds: "",
    }
}

/// A `/skill` invocation as pi writes it into the user message.
struct Skill<'t> {
    name: &'t str,
    content: &'t str,
    user_message: Option<&'t str>,
}

/// pi's `parseSkillBlock`.
fn parse_skill(text: &str) -> Option<Skill<'_>> {
    static SKILL: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(
            r#"^<skill name="([^"]+)" location="([^"]+)">\n((?s).*?)\n</skill>(?:\n\n((?s).+))?$"#,
        )
        .ok()
    });
    let caps = SKILL.as_ref()?.captures(text)?;
    Some(Skill {
        name: caps.get(1)?.as_str(),
        content: caps.get(3)?.as_str(),
        user_message: caps
            .get(4)
            .map(|m| m.as_str().trim())
            .filter(|m| !m.is_empty()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_blocks_are_recognised() {
        let s = parse_skill("<skill name=\"fmt\" location=\"/s\">\nbody\nmore\n</skill>\n\nplease")
            .expect("a skill");
        assert_eq!(
            (s.name, s.content, s.user_message),
            ("fmt", "body\nmore", Some("please"))
        );
        assert!(parse_skill("hello").is_none());
    }
}
