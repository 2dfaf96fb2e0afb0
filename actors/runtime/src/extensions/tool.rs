//! A tool an extension process declared: a [`Tool`] whose calls are `tool/call` requests to
//! the extension's actor (spec: extensions.md §1.2 "Tools"). Abort sends `cancel` and allows
//! 5 s of grace before the call ends as aborted.

use std::sync::Arc;
use std::time::Duration;

use ractor::ActorRef;
use ractor::rpc::CallResult;
use serde_json::Value;

use pith_tools::tool::{Tool, ToolContext, ToolError, ToolFuture, ToolSpec};

use crate::envelope::Envelope;
use crate::extension::{ExtensionMsg, ToolCallRequest};
use crate::trace::{ActorName, MessageIds, Trace};

/// How long an aborted call may take to end after `cancel`.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// One declared tool.
pub struct ExtensionTool {
    /// What the model is told.
    pub spec: ToolSpec,
    /// The extension's actor.
    pub actor: ActorRef<Envelope<ExtensionMsg>>,
    /// `Extension:<name>`, the sender in traces.
    pub name: ActorName,
    /// Numbers the messages.
    pub ids: MessageIds,
}

impl Tool for ExtensionTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn run(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        let actor = self.actor.clone();
        let trace = Trace::root(&self.ids, self.name.clone());
        let cancel_trace = Trace::root(&self.ids, self.name.clone());
        let tool = self.spec.name.clone();
        Box::pin(async move {
            let tool_call_id = ctx.tool_call_id.clone();
            let call = ToolCallRequest {
                tool_call_id: ctx.tool_call_id.clone(),
                name: tool,
                arguments: args,
                cwd: ctx.cwd.clone(),
                progress: ctx.progress.clone(),
            };
            let asked = actor.call(
                |reply| Envelope {
                    trace,
                    msg: ExtensionMsg::CallTool { call, reply },
                },
                None,
            );
            tokio::pin!(asked);
            let answered = tokio::select! {
                answered = &mut asked => answered,
                () = ctx.abort.cancelled() => {
                    let _ = actor.cast(Envelope {
                        trace: cancel_trace,
                        msg: ExtensionMsg::CancelTool { tool_call_id },
                    });
                    let _ = tokio::time::timeout(CANCEL_GRACE, &mut asked).await;
                    return Err(ToolError::Aborted);
                }
            };
            match answered {
                Ok(CallResult::Success(result)) => result,
                Ok(CallResult::Timeout | CallResult::SenderError) | Err(_) => Err(
                    ToolError::Failed("the extension serving this tool is gone".into()),
                ),
            }
        })
    }
}

/// Shared so the registry can hand it out.
pub fn shared(tool: ExtensionTool) -> Arc<dyn Tool> {
    Arc::new(tool)
}
