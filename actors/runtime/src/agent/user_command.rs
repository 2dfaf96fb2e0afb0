//! The user's shell commands (`!cmd`, `!!cmd`; spec: agent-and-events.md §5): they run beside
//! the agent, and one that finishes while a run streams is recorded before the next prompt,
//! never in the middle of the run's chain of entries.

use ractor::{ActorRef, RpcReplyPort};
use tokio_util::sync::CancellationToken;

use pith_events::{AgentEvent, AgentMessage, BashExecutionMessage};

use super::{Agent, AgentMsg, AgentState, UserCommand};
use crate::RuntimeError;
use crate::envelope::{Envelope, Origin};
use crate::writer::Append;

impl Agent {
    /// Starts `command` in the session cwd with the settings' `shellCommandPrefix`; the
    /// answer comes with [`AgentMsg::BashDone`]. Only one runs at a time.
    pub(super) fn start_user_command(
        me: &ActorRef<Envelope<AgentMsg>>,
        state: &mut AgentState,
        from: &Origin,
        UserCommand {
            command,
            exclude_from_context,
        }: UserCommand,
        reply: RpcReplyPort<Result<BashExecutionMessage, RuntimeError>>,
    ) {
        if state.bash_abort.is_some() {
            let _ = reply.send(Err(RuntimeError::CommandRunning));
            return;
        }
        let abort = CancellationToken::new();
        state.bash_abort = Some(abort.clone());
        let args = state.args.clone();
        let (me, from) = (me.clone(), from.clone());
        tokio::spawn(async move {
            let shell = pith_tools::shell::ShellConfig {
                shell_path: None,
                command_prefix: args.settings.shell_command_prefix(),
            };
            // Every cleaned chunk as it comes: `bash_execution_update` (pi ≥ 0.82, §5); the
            // rpc frontend adds the request's id. All of them precede the answer.
            let (chunks, mut chunk_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
            let events = args.events.clone();
            let forward = tokio::spawn(async move {
                while let Some(delta) = chunk_rx.recv().await {
                    events.emit(AgentEvent::BashExecutionUpdate { id: None, delta });
                }
            });
            let result = pith_tools::bash::execute_bash_with(
                &command,
                &args.cwd,
                &shell,
                args.tools.output_dir(),
                abort,
                Some(chunks),
            )
            .await
            // pi throws when the command cannot run at all; the answer then carries its text.
            .unwrap_or_else(|e| pith_tools::BashResult {
                output: e.to_string(),
                exit_code: None,
                cancelled: false,
                truncated: false,
                full_output_path: None,
            });
            let _ = forward.await;
            let message = BashExecutionMessage {
                command,
                output: result.output,
                exit_code: result.exit_code,
                cancelled: result.cancelled,
                truncated: result.truncated,
                full_output_path: result.full_output_path,
                timestamp: args.clock.now_ms(),
                exclude_from_context: exclude_from_context.then_some(true),
            };
            from.cast(
                &me,
                AgentMsg::BashDone {
                    message: Box::new(message),
                    reply,
                },
            );
        });
    }

    /// Records a finished command: now when the agent is idle, else before the next prompt.
    pub(super) async fn user_command_done(
        state: &mut AgentState,
        from: &Origin,
        message: BashExecutionMessage,
        reply: RpcReplyPort<Result<BashExecutionMessage, RuntimeError>>,
    ) {
        state.bash_abort = None;
        let recorded = AgentMessage::BashExecution(message.clone());
        if state.abort.is_none() && !state.deferring {
            let append = Append::Message(Box::new(recorded));
            if let Err(e) = state.args.writer.append(from, append).await {
                tracing::error!("could not record a user command: {e}");
            }
        } else {
            // Appended now it would split the run's chain of entries.
            state.pending_bash.push(recorded);
        }
        let _ = reply.send(Ok(message));
    }
}
