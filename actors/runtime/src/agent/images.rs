//! Images in the messages a run sends (spec: agent-and-events.md §3): a user message's
//! images are resized or converted when the message starts, and `images.blockImages` keeps
//! every image out of the requests.

use pith_events::{AgentMessage, ContentBlock, ImageContent, UserContent, UserMessage};

/// pi's `_normalizePromptImages` / `_normalizeQueuedMessageImages`: each image of a user
/// message whose first block is text goes through `image::process` (resized unless
/// `images.autoResize` is off); an image that cannot be sent is dropped and pi's
/// `[Image omitted: …]` note takes its place; the notes are appended to the text after a
/// blank line, and the images move after the other blocks.
pub(super) async fn normalize(user: &mut UserMessage, auto_resize: bool) {
    let UserContent::Blocks(blocks) = &mut user.content else {
        return;
    };
    if !blocks.iter().any(|b| matches!(b, ContentBlock::Image(_))) {
        return;
    }
    let Some(ContentBlock::Text(first)) = blocks.first() else {
        return;
    };
    let mut first = first.clone();
    let (images, others): (Vec<ContentBlock>, Vec<ContentBlock>) = blocks
        .drain(1..)
        .partition(|b| matches!(b, ContentBlock::Image(_)));
    let images: Vec<ImageContent> = images
        .into_iter()
        .filter_map(|b| match b {
            ContentBlock::Image(i) => Some(i),
            _ => None,
        })
        .collect();
    // Decoding and re-encoding a large image is CPU work: off the async threads.
    let processed = tokio::task::spawn_blocking(move || {
        images
            .iter()
            .map(|i| pith_tools::image::process_base64(&i.data, &i.mime_type, auto_resize))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    let mut hints = Vec::new();
    let mut sent = Vec::new();
    for p in processed {
        match p {
            pith_tools::image::Processed::Ok {
                data,
                mime_type,
                hints: h,
            } => {
                sent.push(ContentBlock::Image(ImageContent { data, mime_type }));
                hints.extend(h);
            }
            pith_tools::image::Processed::Omitted(message) => hints.push(message),
        }
    }
    if !hints.is_empty() {
        first.text = format!("{}\n\n{}", first.text, hints.join("\n"));
    }
    blocks.truncate(0);
    blocks.push(ContentBlock::Text(first));
    blocks.extend(others);
    blocks.extend(sent);
}

/// pi's text for an image left out of a request by `images.blockImages`.
const BLOCKED: &str = "Image reading is disabled.";

/// pi's `convertToLlmWithBlockImages` (`core/sdk.js`): in every user message and tool result
/// each image becomes the text `Image reading is disabled.`, one text for a run of them. The
/// session file keeps the images; only requests lose them.
pub(super) fn blocked(messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
    fn replace(content: &mut Vec<ContentBlock>) {
        if !content.iter().any(|b| matches!(b, ContentBlock::Image(_))) {
            return;
        }
        let mut out: Vec<ContentBlock> = Vec::with_capacity(content.len());
        for block in content.drain(..) {
            let block = match block {
                ContentBlock::Image(_) => ContentBlock::text(BLOCKED),
                other => other,
            };
            let repeated = matches!((&block, out.last()),
                (ContentBlock::Text(t), Some(ContentBlock::Text(prev)))
                    if t.text == BLOCKED && prev.text == BLOCKED);
            if !repeated {
                out.push(block);
            }
        }
        *content = out;
    }
    messages
        .into_iter()
        .map(|mut m| {
            match &mut m {
                AgentMessage::User(u) => {
                    if let UserContent::Blocks(blocks) = &mut u.content {
                        replace(blocks);
                    }
                }
                AgentMessage::ToolResult(r) => replace(&mut r.content),
                AgentMessage::System(_)
                | AgentMessage::Assistant(_)
                | AgentMessage::BashExecution(_)
                | AgentMessage::Custom(_)
                | AgentMessage::BranchSummary(_)
                | AgentMessage::CompactionSummary(_)
                | AgentMessage::Unknown(_) => {}
            }
            m
        })
        .collect()
}
