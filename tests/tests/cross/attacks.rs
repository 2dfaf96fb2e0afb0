//! Nothing a repository or another program puts beside a session makes pith write into one of
//! the user's files (issue 13): symlinked and hard-linked lock files, hard-linked session
//! files, a session file replaced by a symlink or by another file while pith writes it, a
//! file cut short underneath the writer, two writers on a new path, and the leftovers of
//! killed writers. Every test checks that the user's file keeps its bytes and its mode.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pith_events::{AgentMessage, AssistantMessage, ContentBlock};
use pith_store::env::{SequentialIds, SteppingClock};
use pith_store::writer::{Notice, sweep_leftovers};
use pith_store::{Error, OpenMode, Session, SessionEnv};

fn env(tmp: &Path) -> SessionEnv {
    SessionEnv {
        agent_dir: tmp.join("agent"),
        clock: Arc::new(SteppingClock::new(1_764_000_000_000, 1000)),
        ids: Arc::new(SequentialIds::default()),
    }
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"s-1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;
const USER: &str = r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"q","timestamp":1}}"#;

fn assistant() -> AgentMessage {
    AgentMessage::Assistant(AssistantMessage::new(
        "faux",
        "faux",
        "faux-1",
        vec![ContentBlock::text("answer")],
        3,
    ))
}

/// A file of the user's outside any pith folder: `authorized_keys`, mode 0644.
struct Victim {
    path: PathBuf,
    bytes: &'static [u8],
}

impl Victim {
    fn new(dir: &Path) -> Victim {
        let ssh = dir.join("home/.ssh");
        fs::create_dir_all(&ssh).unwrap();
        let path = ssh.join("authorized_keys");
        let bytes: &'static [u8] = b"ssh-ed25519 AAAAC3Nza the-users-key\n";
        fs::write(&path, bytes).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        Victim { path, bytes }
    }

    fn assert_untouched(&self) {
        assert_eq!(
            fs::read(&self.path).unwrap(),
            self.bytes,
            "the user's file changed"
        );
        let meta = fs::metadata(&self.path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o644, "its mode changed");
    }
}

/// A repository with a session file `shared.jsonl` (header and one user message).
fn repo_with_session(tmp: &Path) -> PathBuf {
    let repo = tmp.join("repo");
    fs::create_dir_all(&repo).unwrap();
    let path = repo.join("shared.jsonl");
    fs::write(&path, format!("{HEADER}\n{USER}\n")).unwrap();
    path
}

#[test]
fn a_symlinked_lock_file_is_refused_and_its_target_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = Victim::new(tmp.path());
    let session = repo_with_session(tmp.path());
    let lock = session.with_file_name("shared.jsonl.lock");
    std::os::unix::fs::symlink(&victim.path, &lock).unwrap();
    let err = Session::open(&session, None, None, OpenMode::Write, &env(tmp.path())).unwrap_err();
    assert!(matches!(&err, Error::Symlink(p) if *p == lock), "{err}");
    assert!(err.to_string().contains("shared.jsonl.lock"), "{err}");
    victim.assert_untouched();
    assert!(
        fs::symlink_metadata(&lock)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link is not removed either"
    );
    // A dangling link (to a file that does not exist yet) creates nothing through it.
    let target = tmp.path().join("home/.bashrc");
    fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink(&target, &lock).unwrap();
    assert!(Session::open(&session, None, None, OpenMode::Write, &env(tmp.path())).is_err());
    assert!(!target.exists());
}

#[test]
fn a_hard_linked_lock_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = Victim::new(tmp.path());
    let session = repo_with_session(tmp.path());
    let lock = session.with_file_name("shared.jsonl.lock");
    fs::hard_link(&victim.path, &lock).unwrap();
    let err = Session::open(&session, None, None, OpenMode::Write, &env(tmp.path())).unwrap_err();
    assert!(matches!(err, Error::HardLinked { links: 2, .. }), "{err}");
    victim.assert_untouched();
}

#[test]
fn a_hard_linked_session_file_is_refused_with_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let session = repo_with_session(tmp.path());
    let other = tmp.path().join("elsewhere.jsonl");
    fs::hard_link(&session, &other).unwrap();
    let before = fs::read(&session).unwrap();
    for path in [&session, &other] {
        let err = Session::open(path, None, None, OpenMode::Write, &env(tmp.path())).unwrap_err();
        assert!(matches!(err, Error::HardLinked { links: 2, .. }), "{err}");
        assert!(err.to_string().contains("hard links"), "{err}");
    }
    // Reading it is fine, and nothing was written.
    Session::open(&other, None, None, OpenMode::ReadOnly, &env(tmp.path())).unwrap();
    assert_eq!(fs::read(&session).unwrap(), before);
}

#[test]
fn a_session_replaced_by_a_symlink_is_written_beside_it() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = Victim::new(tmp.path());
    let session = repo_with_session(tmp.path());
    let env = env(tmp.path());
    let mut s = Session::open(&session, None, None, OpenMode::Write, &env).unwrap();
    s.append_message(assistant()).unwrap();
    // Mid-session, the path becomes a link to the user's file.
    fs::remove_file(&session).unwrap();
    std::os::unix::fs::symlink(&victim.path, &session).unwrap();
    s.append_message(AgentMessage::user_text("next", 5))
        .unwrap();
    victim.assert_untouched();
    assert!(
        fs::symlink_metadata(&session)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let notices = s.take_notices();
    let [Notice::MovedAside { path, what, now }] = notices.as_slice() else {
        panic!("expected one MovedAside notice, got {notices:?}");
    };
    assert_eq!((path, *what), (&session, "a symbolic link"));
    assert_eq!(now, &tmp.path().join("repo/shared.recovered.jsonl"));
    let text = notices[0].to_string();
    assert!(
        text.contains("shared.recovered.jsonl") && text.contains("symbolic link"),
        "{text}"
    );
    // The whole session is there, and the writer goes on in the new file.
    s.append_message(assistant()).unwrap();
    let back = Session::open(now, None, None, OpenMode::ReadOnly, &env).unwrap();
    assert_eq!(back.session_id(), "s-1");
    assert_eq!(back.entries().len(), 4);
    assert_eq!(
        fs::metadata(now).unwrap().permissions().mode() & 0o777,
        0o600
    );
    victim.assert_untouched();
}

#[test]
fn a_session_moved_onto_the_path_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let session = repo_with_session(tmp.path());
    let env = env(tmp.path());
    let mut s = Session::open(&session, None, None, OpenMode::Write, &env).unwrap();
    s.append_message(assistant()).unwrap();
    // Another session is `mv`'d onto the path; a first free `.recovered` name is taken, too.
    let moved = tmp.path().join("other.jsonl");
    let theirs = format!("{}\n", HEADER.replace("s-1", "theirs"));
    fs::write(&moved, &theirs).unwrap();
    fs::set_permissions(&moved, fs::Permissions::from_mode(0o644)).unwrap();
    fs::rename(&moved, &session).unwrap();
    fs::write(tmp.path().join("repo/shared.recovered.jsonl"), "taken\n").unwrap();
    s.append_message(AgentMessage::user_text("next", 5))
        .unwrap();
    assert_eq!(fs::read_to_string(&session).unwrap(), theirs);
    assert_eq!(
        fs::metadata(&session).unwrap().permissions().mode() & 0o777,
        0o644
    );
    assert_eq!(
        fs::read_to_string(tmp.path().join("repo/shared.recovered.jsonl")).unwrap(),
        "taken\n"
    );
    let now = s.session_file().unwrap().to_owned();
    assert_eq!(now, tmp.path().join("repo/shared.recovered-2.jsonl"));
    let back = Session::open(&now, None, None, OpenMode::ReadOnly, &env).unwrap();
    assert_eq!(back.entries().len(), 3);
}

#[test]
fn a_deleted_session_is_written_again_at_its_path() {
    let tmp = tempfile::tempdir().unwrap();
    let session = repo_with_session(tmp.path());
    let env = env(tmp.path());
    let mut s = Session::open(&session, None, None, OpenMode::Write, &env).unwrap();
    s.append_message(assistant()).unwrap();
    fs::remove_file(&session).unwrap();
    s.append_message(AgentMessage::user_text("next", 5))
        .unwrap();
    assert!(
        matches!(s.take_notices().as_slice(), [Notice::Recreated { path }] if *path == session)
    );
    assert_eq!(s.session_file(), Some(session.as_path()));
    let back = Session::open(&session, None, None, OpenMode::ReadOnly, &env).unwrap();
    assert_eq!(back.entries().len(), 3);
}

#[test]
fn a_file_cut_mid_line_gets_the_next_entry_on_a_line_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let session = repo_with_session(tmp.path());
    let env = env(tmp.path());
    let mut s = Session::open(&session, None, None, OpenMode::Write, &env).unwrap();
    s.append_message(assistant()).unwrap();
    // Another program cuts the file in the middle of the assistant line.
    let len = fs::metadata(&session).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&session)
        .unwrap()
        .set_len(len - 20)
        .unwrap();
    s.append_message(AgentMessage::user_text("after the cut", 5))
        .unwrap();
    assert!(
        s.take_notices()
            .iter()
            .any(|n| matches!(n, Notice::ChangedUnderneath { .. })),
        "the user is told"
    );
    let text = fs::read_to_string(&session).unwrap();
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with(r#"{"type":"message""#) && last.contains("after the cut"),
        "{last}"
    );
    let back = Session::open(&session, None, None, OpenMode::ReadOnly, &env).unwrap();
    assert!(
        back.entries()
            .iter()
            .any(|e| e.raw().contains("after the cut"))
    );
}

#[test]
fn two_writers_on_a_new_path_are_refused_before_either_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let path = tmp.path().join("new.jsonl");
    let _first = Session::open(&path, None, None, OpenMode::Write, &env).unwrap();
    let err = Session::open(&path, None, None, OpenMode::Write, &env).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    // Also through another spelling of the same path.
    let other = tmp.path().join(".").join("new.jsonl");
    assert!(matches!(
        Session::open(&other, None, None, OpenMode::Write, &env),
        Err(Error::Locked { .. })
    ));
}

#[test]
fn a_session_path_that_is_a_symlink_to_a_session_is_written_at_its_target() {
    // `--session link.jsonl` pointing at a session is the user's own choice: writes go to
    // the target, and the link stays a link.
    let tmp = tempfile::tempdir().unwrap();
    let session = repo_with_session(tmp.path());
    let link = tmp.path().join("link.jsonl");
    std::os::unix::fs::symlink(&session, &link).unwrap();
    let mut s = Session::open(&link, None, None, OpenMode::Write, &env(tmp.path())).unwrap();
    s.append_message(assistant()).unwrap();
    assert!(s.take_notices().is_empty());
    assert_eq!(fs::read_to_string(&session).unwrap().lines().count(), 3);
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn leftovers_of_killed_writers_are_swept_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = Victim::new(tmp.path());
    let dir = tmp.path().join("sessions");
    fs::create_dir_all(&dir).unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let stale_tmp = dir.join(".pith-abc123.tmp");
    fs::write(&stale_tmp, "half a session").unwrap();
    fs::File::options()
        .write(true)
        .open(&stale_tmp)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let young_tmp = dir.join(".pith-young1.tmp");
    fs::write(&young_tmp, "being written").unwrap();
    let stale_lock = dir.join("a.jsonl.lock");
    fs::write(&stale_lock, "999999").unwrap();
    let linked_lock = dir.join("b.jsonl.lock");
    std::os::unix::fs::symlink(&victim.path, &linked_lock).unwrap();
    let hard_lock = dir.join("c.jsonl.lock");
    fs::hard_link(&victim.path, &hard_lock).unwrap();
    let mine = dir.join("mine.txt");
    fs::write(&mine, "not pith's").unwrap();
    // A lock held by a live writer stays.
    let held = dir.join("held.jsonl");
    let _writer = Session::open(&held, None, None, OpenMode::Write, &env(tmp.path())).unwrap();
    assert_eq!(sweep_leftovers(&dir), 2);
    assert!(!stale_tmp.exists() && !stale_lock.exists());
    for kept in [&young_tmp, &mine, &dir.join("held.jsonl.lock")] {
        assert!(kept.exists(), "{}", kept.display());
    }
    assert!(fs::symlink_metadata(&linked_lock).is_ok() && hard_lock.exists());
    victim.assert_untouched();
}

#[test]
fn a_fifo_at_the_session_path_is_refused_without_blocking() {
    // A FIFO where the session should be is refused without blocking.
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo.jsonl");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let err = Session::open(&fifo, None, None, OpenMode::Write, &env(tmp.path())).unwrap_err();
    assert!(matches!(err, Error::NotAFile(_)), "{err}");
}
