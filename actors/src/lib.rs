//! pith's actor runtime (ractor): the `Runtime` supervisor and, per session, the
//! `SessionWriter`, `Projection`, `Agent`, `Compactor` and one actor per `Extension`.
//!
//! Nothing lives here yet: the session log it stands on (`pith-store`) comes first. The
//! runtime's guarantees will be written down in `docs/actors.md` when it lands.
