//! What a process host's child and timers send the host actor, apart from the host so that
//! the actor's message enum can carry it without depending on the host.

/// What a process host's child and timers report.
#[derive(Debug)]
pub enum ProcessInput {
    /// A line from stdout.
    Line {
        /// The incarnation that wrote it.
        generation: u64,
        /// The line, without its newline.
        line: String,
    },
    /// The process exited or broke the framing.
    Closed {
        /// The incarnation.
        generation: u64,
        /// What happened (`exited (status 1)`, `wrote a line over 16 MiB`).
        why: String,
    },
    /// A request's deadline passed.
    Deadline {
        /// The incarnation the request went to.
        generation: u64,
        /// The request's JSON-RPC id.
        id: u64,
    },
    /// Time to start the process again after a crash.
    Respawn {
        /// The incarnation that crashed.
        generation: u64,
    },
    /// A frontend answered (or the dialog timed out): the response line to send.
    DialogAnswered {
        /// The incarnation that asked.
        generation: u64,
        /// The line.
        line: String,
    },
}

impl ProcessInput {
    /// Its name in traces.
    pub fn kind(&self) -> &'static str {
        match self {
            ProcessInput::Line { .. } => "from_child",
            ProcessInput::Closed { .. } => "child_closed",
            ProcessInput::Deadline { .. } => "deadline",
            ProcessInput::Respawn { .. } => "respawn",
            ProcessInput::DialogAnswered { .. } => "dialog_answered",
        }
    }
}
