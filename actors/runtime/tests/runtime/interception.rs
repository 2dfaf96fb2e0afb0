//! The interception events on the Rust trait (spec: extensions.md §1.2 events table):
//! `input`, `before_agent_start`, `tool_call`, `tool_result` and `agent_settled`, chained in
//! load order.

use super::support::*;
use pith_actors::extension::{
    Extension, ExtensionContext, InjectedMessage, Injection, ResultPatch, Verdict,
};
use pith_actors::system_prompt::PromptTool;
use pith_events::{ContentBlock, ExtensionEvent as E, UserContent};
use pith_tools::tool::{Tool, ToolContext, ToolFuture, ToolOutput, ToolSpec, Toolset};
use serde_json::{Value, json};

/// Echoes its `text` argument.
struct Echo;

impl Tool for Echo {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            prefers_strict_schema: false,
            name: "echo".into(),
            description: "echo".into(),
            parameters: json!({"type":"object","properties":{"text":{"type":"string"}}}),
        }
    }

    fn run(&self, args: Value, _ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            Ok(ToolOutput {
                content: vec![ContentBlock::text(format!(
                    "echo:{}",
                    args["text"].as_str().unwrap_or("")
                ))],
                details: Value::Null,
                structured_content: None,
            })
        })
    }
}

/// The first gate: blocks `rm`, rewrites `shout` to upper case, transforms `?x` prompts,
/// handles `/local`, appends to the system prompt and injects a message.
struct First;

impl Extension for First {
    fn name(&self) -> &str {
        "first"
    }

    fn subscriptions(&self) -> &[&str] {
        &[
            "input",
            "before_agent_start",
            "tool_call",
            "tool_result",
            "agent_settled",
        ]
    }

    fn on_event(&mut self, event: &E, ctx: &mut ExtensionContext) -> Verdict {
        match event {
            E::Input { text, .. } if text == "/local" => Verdict::Handled,
            E::Input { text, .. } if text.starts_with('?') => Verdict::Transform {
                text: format!("question: {}", &text[1..]),
                images: None,
            },
            E::BeforeAgentStart { .. } => Verdict::Inject(Injection {
                message: Some(InjectedMessage {
                    custom_type: "rules".into(),
                    content: UserContent::Text("be brief".into()),
                    display: false,
                    details: None,
                }),
                append_system_prompt: Some("RULES".into()),
                system_prompt: None,
            }),
            E::ToolCall { input, .. } if input["text"] == "rm" => Verdict::Block("no rm".into()),
            E::ToolCall { input, .. } if input["text"] == "shout" => {
                Verdict::ReplaceInput(json!({"text": "SHOUT"}))
            }
            E::ToolResult { content, .. } => {
                let mut content = content.clone();
                content.push(ContentBlock::text("lint: ok"));
                Verdict::PatchResult(ResultPatch {
                    content: Some(content),
                    details: Some(json!({"linted": true})),
                    is_error: None,
                })
            }
            E::AgentSettled { aborted } => {
                ctx.append_entry("settled", Some(json!({"aborted": aborted})));
                Verdict::Continue
            }
            _ => Verdict::Continue,
        }
    }
}

/// The second in load order: records what it sees after the first one's changes.
struct Second;

impl Extension for Second {
    fn name(&self) -> &str {
        "second"
    }

    fn subscriptions(&self) -> &[&str] {
        &["tool_call", "tool_result", "before_agent_start"]
    }

    fn on_event(&mut self, event: &E, ctx: &mut ExtensionContext) -> Verdict {
        match event {
            E::ToolCall { input, source, .. } => {
                ctx.append_entry("saw-call", Some(json!({"input": input, "source": source})));
                Verdict::Continue
            }
            E::ToolResult { content, .. } => {
                ctx.append_entry("saw-result", Some(json!({"blocks": content.len()})));
                Verdict::Continue
            }
            E::BeforeAgentStart { system_prompt, .. } => Verdict::Inject(Injection {
                message: None,
                append_system_prompt: None,
                system_prompt: Some(format!("{system_prompt}|second")),
            }),
            _ => Verdict::Continue,
        }
    }
}

fn lines(snap: &pith_actors::writer::Snapshot) -> Vec<Value> {
    snap.entries()
        .iter()
        .map(|e| serde_json::from_str::<Value>(e.raw()).unwrap())
        .filter(|v| {
            !matches!(
                v["type"].as_str(),
                Some("model_change" | "thinking_level_change")
            )
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn gates_rewrites_patches_and_prompt_changes_chain_in_load_order() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let provider = Arc::new(Recording {
        inner: Faux::new(
            script(
                r#"[{"content":[{"type":"toolCall","id":"c1","name":"echo","arguments":{"text":"rm"}},
                              {"type":"toolCall","id":"c2","name":"echo","arguments":{"text":"shout"}}]},
                   {"content":[{"type":"text","text":"done"}]}]"#,
            ),
            env.clock.clone(),
        ),
        requests: Default::default(),
    });
    let mut config = project_config(
        &env,
        provider.clone(),
        vec![Arc::new(|| Box::new(First)), Arc::new(|| Box::new(Second))],
    );
    config.tools = ToolChoice::Fixed(Toolset::new(vec![Arc::new(Echo)]));
    config.system_prompt = Some(Arc::new(|_: &Path, _: &[PromptTool]| "BASE".to_owned()));
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    let mut events = rt.subscribe().await.unwrap();

    rt.prompt("?why").await.unwrap();
    run_names(&mut events).await;
    rt.wait_idle().await.unwrap();
    // Handled: no run, nothing recorded.
    rt.prompt("/local").await.unwrap();
    rt.wait_idle().await.unwrap();

    let requests = provider.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "the handled prompt asked no model");
    assert_eq!(
        requests[0].system_prompt.as_deref(),
        Some("BASE\n\nRULES|second"),
        "append, then the second extension's replacement of what it saw"
    );
    let snap = rt.snapshot().await.unwrap();
    let kinds: Vec<String> = lines(&snap)
        .iter()
        .map(|v| match v["type"].as_str().unwrap() {
            "message" => v["message"]["role"].as_str().unwrap().to_owned(),
            "custom" => format!("custom:{}", v["customType"].as_str().unwrap()),
            "custom_message" => format!("custom_message:{}", v["customType"].as_str().unwrap()),
            t => t.to_owned(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "user",
            "custom_message:rules",
            "assistant",
            "custom:saw-call",
            "custom:saw-result",
            "toolResult",
            "toolResult",
            "assistant",
            "custom:settled",
        ]
    );
    let all = lines(&snap);
    assert_eq!(all[0]["message"]["content"][0]["text"], "question: why");
    // The blocked call is pi's error result; the rewritten one ran with the new input.
    let results: Vec<&Value> = all
        .iter()
        .filter(|v| v["message"]["role"] == "toolResult")
        .collect();
    assert_eq!(
        results[0]["message"],
        json!({"role":"toolResult","toolCallId":"c1","toolName":"echo",
               "content":[{"type":"text","text":"no rm"}],"details":{},"isError":true,
               "timestamp": results[0]["message"]["timestamp"]})
    );
    assert_eq!(
        results[1]["message"]["content"],
        json!([{"type":"text","text":"echo:SHOUT"},{"type":"text","text":"lint: ok"}])
    );
    assert_eq!(results[1]["message"]["details"], json!({"linted": true}));
    // The second extension saw the replaced input and the patched result.
    assert_eq!(
        all[3]["data"],
        json!({"input":{"text":"SHOUT"},"source":"builtin"})
    );
    assert_eq!(all[4]["data"], json!({"blocks": 2}));
    assert_eq!(all[8]["data"], json!({"aborted": false}));
}

/// Keeps the first image of a `crop` prompt (an `input` transform that changes the images).
struct Cropper;

impl Extension for Cropper {
    fn name(&self) -> &str {
        "cropper"
    }

    fn subscriptions(&self) -> &[&str] {
        &["input"]
    }

    fn on_event(&mut self, event: &E, _ctx: &mut ExtensionContext) -> Verdict {
        match event {
            E::Input { text, images, .. } if text == "crop" => Verdict::Transform {
                text: format!("cropped {} to 1", images.len()),
                images: Some(images[..1].to_vec()),
            },
            _ => Verdict::Continue,
        }
    }
}

/// A 1×1 24-bit BMP, base64: providers take no BMP, so the run converts it to PNG.
fn bmp_base64() -> String {
    use base64::Engine;
    let mut bmp = b"BM".to_vec();
    bmp.extend_from_slice(&58u32.to_le_bytes());
    bmp.extend_from_slice(&[0; 4]);
    bmp.extend_from_slice(&54u32.to_le_bytes());
    bmp.extend_from_slice(&40u32.to_le_bytes());
    bmp.extend_from_slice(&1i32.to_le_bytes());
    bmp.extend_from_slice(&1i32.to_le_bytes());
    bmp.extend_from_slice(&1u16.to_le_bytes());
    bmp.extend_from_slice(&24u16.to_le_bytes());
    bmp.extend_from_slice(&[0; 24]);
    bmp.extend_from_slice(&[0, 0, 255, 0]);
    base64::engine::general_purpose::STANDARD.encode(bmp)
}

#[tokio::test]
async fn an_input_extension_sees_and_replaces_a_prompt_s_images_before_they_are_converted() {
    use pith_events::ImageContent;
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let provider = Arc::new(Recording {
        inner: Faux::new(
            script(r#"[{"content":[{"type":"text","text":"seen"}]}]"#),
            env.clock.clone(),
        ),
        requests: Default::default(),
    });
    let config = project_config(&env, provider.clone(), vec![Arc::new(|| Box::new(Cropper))]);
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    let bmp = ImageContent {
        data: bmp_base64(),
        mime_type: "image/bmp".into(),
    };
    let broken = ImageContent {
        data: "bm90IGFuIGltYWdl".into(),
        mime_type: "image/png".into(),
    };
    rt.prompt_with_images("crop", vec![bmp, broken.clone()])
        .await
        .unwrap();
    rt.wait_idle().await.unwrap();
    // Then one that cannot be decoded: left out, pi's note in its place.
    rt.prompt_with_images("this one", vec![broken])
        .await
        .unwrap_or_default();
    rt.wait_idle().await.unwrap();

    let snap = rt.snapshot().await.unwrap();
    let users: Vec<Value> = lines(&snap)
        .into_iter()
        .filter(|v| v["message"]["role"] == "user")
        .map(|v| v["message"]["content"].clone())
        .collect();
    assert_eq!(users.len(), 2);
    assert_eq!(
        users[0][0],
        json!({"type": "text",
            "text": "cropped 2 to 1\n\n[Image converted from image/bmp to image/png.]"})
    );
    assert_eq!(users[0][1]["mimeType"], "image/png");
    assert_eq!(users[0].as_array().unwrap().len(), 2);
    assert_eq!(
        users[1],
        json!([{"type": "text",
            "text": "this one\n\n[Image omitted: could not be resized below the inline image size limit.]"}])
    );
    // The request carries what the file holds.
    let requests = provider.requests.lock().unwrap().clone();
    let sent = serde_json::to_value(&requests[0].messages).unwrap();
    assert_eq!(sent[0]["content"], users[0]);
}
