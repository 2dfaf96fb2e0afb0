//! The listing index: a rebuildable cache of each session file's listing fields, keyed by
//! (path, size, mtime), so listing thousands of sessions reads only the files that changed.
//!
//! The JSONL files stay the truth. The index is a bincode file under pith's agent directory,
//! keyed by the listed folder ([`crate::dirs::index_dir`]), never inside the folder: pith may
//! not own it. A missing, unreadable or corrupt index is rebuilt without a word, and one that
//! cannot be written is simply not kept.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::list::{
    Listing, SessionInfo, Skipped, Stamp, all_session_files_stamped, read_all_with, stamp,
    stamped_files,
};

/// File name of the listing index inside the folder's [`crate::dirs::index_dir`].
pub const INDEX_FILE: &str = "list.bin";

/// Where the listing index of `folder` lives.
pub fn index_path(agent_dir: &Path, folder: &Path) -> PathBuf {
    crate::dirs::index_dir(agent_dir, folder).join(INDEX_FILE)
}

/// Bumped whenever the cached fields change meaning; an index of another format is rebuilt.
const FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct IndexFile {
    format: u32,
    files: Vec<Cached>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Cached {
    path: String,
    size: u64,
    mtime_ns: u128,
    outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Outcome {
    Session(CachedInfo),
    Skipped(String),
}

/// The listing fields without `allMessagesText` (which the table never shows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct CachedInfo {
    id: String,
    cwd: String,
    name: Option<String>,
    parent_session_path: Option<String>,
    created_ms: f64,
    modified_ms: f64,
    message_count: u64,
    first_message: String,
}

impl CachedInfo {
    fn from_info(info: &SessionInfo) -> CachedInfo {
        CachedInfo {
            id: info.id.clone(),
            cwd: info.cwd.clone(),
            name: info.name.clone(),
            parent_session_path: info.parent_session_path.as_ref().map(|v| v.to_string()),
            created_ms: info.created_ms,
            modified_ms: info.modified_ms,
            message_count: info.message_count as u64,
            first_message: info.first_message.clone(),
        }
    }

    fn into_info(self, path: PathBuf) -> SessionInfo {
        SessionInfo {
            path,
            id: self.id,
            cwd: self.cwd,
            name: self.name,
            parent_session_path: self
                .parent_session_path
                .as_deref()
                .and_then(|s| serde_json::from_str(s).ok()),
            created_ms: self.created_ms,
            modified_ms: self.modified_ms,
            message_count: self.message_count as usize,
            first_message: self.first_message,
            all_messages_text: String::new(),
        }
    }
}

fn load(index: &Path) -> Vec<Cached> {
    let Ok(bytes) = std::fs::read(index) else {
        return Vec::new();
    };
    match bincode::serde::decode_from_slice::<IndexFile, _>(&bytes, bincode::config::standard()) {
        Ok((file, _)) if file.format == FORMAT => file.files,
        _ => Vec::new(),
    }
}

fn save(index: &Path, files: Vec<Cached>) {
    let Ok(bytes) = bincode::serde::encode_to_vec(
        IndexFile {
            format: FORMAT,
            files,
        },
        bincode::config::standard(),
    ) else {
        return;
    };
    crate::dirs::keep_cache(index, &bytes);
}

/// Lists `stamped` (files with their [`Stamp`]) through the index at `index`: cached entries
/// whose size and mtime still match are reused, the rest are read (in parallel, bounded) and
/// the index is updated.
/// The result equals the uncached listing except that `allMessagesText` is empty.
fn list_files(
    stamped: impl FnOnce() -> Vec<(PathBuf, Option<Stamp>)>,
    index: &Path,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Listing {
    // The index is read while the folders are: each was a fifth of an indexed listing.
    let (cached, stamped) = std::thread::scope(|scope| {
        let loading = scope.spawn(|| load(index));
        let stamped = stamped();
        // Decoding cannot panic; if it did, the index is rebuilt as if it were missing.
        (loading.join().unwrap_or_default(), stamped)
    });
    let cached_count = cached.len();
    let (files, stamps): (Vec<PathBuf>, Vec<Option<Stamp>>) = stamped.into_iter().unzip();
    // Index hits are moved out of the loaded index, not copied: at 100,000 sessions two
    // copies of every first message were most of the memory.
    let mut fresh: Vec<Option<Cached>> = {
        let by_path: std::collections::HashMap<&str, usize> = cached
            .iter()
            .enumerate()
            .map(|(i, c)| (c.path.as_str(), i))
            .collect();
        let mut taken: Vec<Option<Cached>> = Vec::with_capacity(cached.len());
        let found: Vec<Option<usize>> = files
            .iter()
            .map(|file| by_path.get(file.to_string_lossy().as_ref()).copied())
            .collect();
        drop(by_path);
        taken.extend(cached.into_iter().map(Some));
        found
            .into_iter()
            .zip(&stamps)
            .map(|(i, stamp)| {
                let (size, mtime_ns) = (*stamp)?;
                taken
                    .get_mut(i?)?
                    .take()
                    .filter(|c| c.size == size && c.mtime_ns == mtime_ns)
            })
            .collect()
    };
    let to_read: Vec<usize> = (0..files.len()).filter(|&i| fresh[i].is_none()).collect();
    let changed = !to_read.is_empty() || fresh.len() != cached_count;
    let paths: Vec<PathBuf> = to_read.iter().map(|&i| files[i].clone()).collect();
    let total = files.len();
    let done = std::sync::atomic::AtomicUsize::new(total - to_read.len());
    progress(done.load(std::sync::atomic::Ordering::Relaxed), total);
    let read_one = |_: &Path| {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        progress(n, total);
    };
    let results = read_all_with(paths, crate::list::session_info_without_texts, &read_one);
    for (&i, result) in to_read.iter().zip(results) {
        // Stamp before reading would race a writer; stamp after, and a file that changes in
        // between is simply read again next time.
        let Some((size, mtime_ns)) = stamp(&files[i]) else {
            continue;
        };
        let outcome = match result {
            Ok(info) => Outcome::Session(CachedInfo::from_info(&info)),
            Err(e) => Outcome::Skipped(e.to_string()),
        };
        fresh[i] = Some(Cached {
            path: files[i].to_string_lossy().into_owned(),
            size,
            mtime_ns,
            outcome,
        });
    }
    if changed {
        save(index, fresh.iter().flatten().cloned().collect());
    }
    let mut listing = Listing::default();
    listing.sessions.reserve(files.len());
    for (file, entry) in files.into_iter().zip(fresh) {
        match entry.map(|c| c.outcome) {
            Some(Outcome::Session(info)) => listing.sessions.push(info.into_info(file)),
            Some(Outcome::Skipped(reason)) => listing.skipped.push(Skipped { path: file, reason }),
            None => listing.skipped.push(Skipped {
                path: file,
                reason: "vanished while listing".into(),
            }),
        }
    }
    crate::list::sort_newest_first(&mut listing.sessions);
    listing
}

/// [`crate::list::list`] through the index of `dir` (kept under `agent_dir`), without
/// `allMessagesText`.
pub fn list_indexed(agent_dir: &Path, dir: &Path) -> Listing {
    list_indexed_with_progress(agent_dir, dir, &|_, _| {})
}

/// [`list_indexed`] calling `progress(loaded, total)` (files) once with the index hits
/// counted and then after each file read, from the reading threads (pi's `onProgress`).
pub fn list_indexed_with_progress(
    agent_dir: &Path,
    dir: &Path,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Listing {
    let mut listing = list_files(|| stamped_files(dir), &index_path(agent_dir, dir), progress);
    listing
        .unreadable_folders
        .extend(crate::list::folder_problem(dir));
    listing
}

/// [`crate::list::list_all`] through the index of `sessions_root` (kept under `agent_dir`),
/// without `allMessagesText`.
pub fn list_all_indexed(agent_dir: &Path, sessions_root: &Path) -> Listing {
    list_all_indexed_with_progress(agent_dir, sessions_root, &|_, _| {})
}

/// [`list_all_indexed`] with progress as [`list_indexed_with_progress`] reports it.
pub fn list_all_indexed_with_progress(
    agent_dir: &Path,
    sessions_root: &Path,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Listing {
    let mut listing = list_files(
        || all_session_files_stamped(sessions_root),
        &index_path(agent_dir, sessions_root),
        progress,
    );
    listing.unreadable_folders = crate::list::folder_problems_all(sessions_root);
    listing
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_session(dir: &Path, name: &str, id: &str, text: &str) -> PathBuf {
        std::fs::create_dir_all(dir).expect("mkdir");
        let path = dir.join(name);
        std::fs::write(&path, format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}}\n{{\"type\":\"message\",\"id\":\"u\",\"parentId\":null,\"timestamp\":\"2025-01-02T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\",\"timestamp\":5}}}}\n"
        )).expect("write");
        path
    }

    #[test]
    fn the_index_is_used_refreshed_and_rebuilt() {
        let tmp = tempfile::tempdir().expect("tmp");
        let agent = tempfile::tempdir().expect("agent");
        let agent = agent.path();
        let root = tmp.path();
        let index = index_path(agent, root);
        let a = write_session(&root.join("--p--"), "a.jsonl", "A", "first");
        write_session(&root.join("--q--"), "b.jsonl", "B", "second");
        std::fs::write(root.join("--q--").join("bad.jsonl"), "not json\n").expect("write");
        let plain = crate::list::list_all(root);
        let indexed = list_all_indexed(agent, root);
        let strip = |l: &Listing| -> Vec<SessionInfo> {
            l.sessions
                .iter()
                .map(|s| SessionInfo {
                    all_messages_text: String::new(),
                    ..s.clone()
                })
                .collect()
        };
        assert_eq!(strip(&indexed), strip(&plain));
        assert_eq!(indexed.skipped.len(), 1);
        assert!(index.is_file());
        let mut inside: Vec<_> = std::fs::read_dir(root)
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        inside.sort();
        assert_eq!(
            inside,
            ["--p--", "--q--"],
            "nothing is written into the folder"
        );
        // Served from the index: a cached entry wins while size and mtime match...
        let cached = load(&index);
        assert_eq!(cached.len(), 3);
        // ...and a changed file is read again.
        write_session(
            &root.join("--p--"),
            "a.jsonl",
            "A",
            "first, edited and longer",
        );
        let again = list_all_indexed(agent, root);
        let first: Vec<&str> = again
            .sessions
            .iter()
            .map(|s| s.first_message.as_str())
            .collect();
        assert!(first.contains(&"first, edited and longer"), "{first:?}");
        // A deleted file leaves the index; a corrupt index is rebuilt silently.
        std::fs::remove_file(&a).expect("rm");
        std::fs::write(&index, b"garbage").expect("write");
        let after = list_all_indexed(agent, root);
        assert_eq!(after.sessions.len(), 1);
        assert_eq!(load(&index).len(), 2);
    }

    #[test]
    fn progress_counts_index_hits_then_each_file_read() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path();
        let agent = tempfile::tempdir().expect("agent");
        let agent = agent.path();
        write_session(dir, "a.jsonl", "A", "one");
        write_session(dir, "b.jsonl", "B", "two");
        let seen = std::sync::Mutex::new(Vec::new());
        let record = |d, t| seen.lock().expect("lock").push((d, t));
        list_indexed_with_progress(agent, dir, &record);
        let mut first = std::mem::take(&mut *seen.lock().expect("lock"));
        first.sort();
        assert_eq!(first, [(0, 2), (1, 2), (2, 2)]);
        // a and b come from the index (one report), then c is read.
        write_session(dir, "c.jsonl", "C", "three");
        list_indexed_with_progress(agent, dir, &record);
        assert_eq!(*seen.lock().expect("lock"), [(2, 3), (3, 3)]);
    }
}
