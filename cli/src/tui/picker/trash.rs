//! Deleting a session from the picker: pith moves the file into `<agent_dir>/trash/<project
//! dir name>/` instead of pi's `trash` CLI or `unlink` (which loses the file when `trash` is
//! not installed). Nothing is ever overwritten: a name already in the trash gets `.1`, `.2`, …
//! before `.jsonl`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The trash folder of an agent directory.
pub fn trash_dir(agent_dir: &Path) -> PathBuf {
    agent_dir.join("trash")
}

/// Moves `session` into the trash of `agent_dir` and returns where it went.
///
/// Errors: the trash folder cannot be created, or the file cannot be moved (a copy across
/// file systems is synced before the original is removed; on failure the original stays).
pub fn move_to_trash(session: &Path, agent_dir: &Path) -> Result<PathBuf> {
    let project = session
        .parent()
        .and_then(Path::file_name)
        .map_or_else(|| "sessions".into(), |n| n.to_owned());
    let dir = trash_dir(agent_dir).join(project);
    pith_store::dirs::ensure_dir(&dir)?;
    let name = session
        .file_name()
        .with_context(|| format!("{} is not a file path", session.display()))?;
    let dest = free_name(&dir, &name.to_string_lossy());
    // NOREPLACE: whatever appeared at `dest` since `free_name` looked is never replaced.
    let renamed = rustix::fs::renameat_with(
        rustix::fs::CWD,
        session,
        rustix::fs::CWD,
        &dest,
        rustix::fs::RenameFlags::NOREPLACE,
    )
    .map_err(io::Error::from);
    match renamed {
        Ok(()) => Ok(dest),
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
            copy_then_remove(session, &dest)?;
            Ok(dest)
        }
        Err(e) => Err(e)
            .with_context(|| format!("cannot move {} to {}", session.display(), dest.display())),
    }
}

fn copy_then_remove(from: &Path, to: &Path) -> Result<()> {
    let mut src =
        fs::File::open(from).with_context(|| format!("cannot read {}", from.display()))?;
    let mut dst = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .with_context(|| format!("cannot create {}", to.display()))?;
    io::copy(&mut src, &mut dst).with_context(|| format!("cannot copy to {}", to.display()))?;
    dst.sync_all()
        .with_context(|| format!("cannot sync {}", to.display()))?;
    fs::remove_file(from).with_context(|| format!("cannot remove {}", from.display()))
}

/// `dir/name`, or `dir/<stem>.<n>.jsonl` for the first `n` not taken.
fn free_name(dir: &Path, name: &str) -> PathBuf {
    let first = dir.join(name);
    if fs::symlink_metadata(&first).is_err() {
        return first;
    }
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) => (s, format!(".{e}")),
        None => (name, String::new()),
    };
    (1..)
        .map(|n| dir.join(format!("{stem}.{n}{ext}")))
        .find(|p| fs::symlink_metadata(p).is_err())
        .unwrap_or(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deleted_sessions_land_in_the_trash_without_overwriting() -> Result<()> {
        let tmp = tempfile::tempdir()?;
        let agent = tmp.path().join("agent");
        let project = agent.join("sessions").join("--w--");
        fs::create_dir_all(&project)?;
        let file = project.join("a.jsonl");
        fs::write(&file, "one\n")?;
        let first = move_to_trash(&file, &agent)?;
        assert_eq!(first, agent.join("trash").join("--w--").join("a.jsonl"));
        assert!(!file.exists());
        fs::write(&file, "two\n")?;
        let second = move_to_trash(&file, &agent)?;
        assert_eq!(second, agent.join("trash").join("--w--").join("a.1.jsonl"));
        assert_eq!(fs::read_to_string(first)?, "one\n");
        assert_eq!(fs::read_to_string(second)?, "two\n");
        // A file that is gone is an error, not a silent success.
        assert!(move_to_trash(&file, &agent).is_err());
        Ok(())
    }
}
