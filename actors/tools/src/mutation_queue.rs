//! pi's `withFileMutationQueue`: writes and edits of the same file run one after another even
//! when the agent runs tool calls in parallel; different files still go in parallel.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use tokio::sync::OwnedMutexGuard;

type Locks = Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>;

static LOCKS: LazyLock<Locks> = LazyLock::new(Default::default);

/// Held while a file is being changed; dropping it lets the next change of that file run.
#[derive(Debug)]
pub struct FileLock {
    key: PathBuf,
    guard: Option<OwnedMutexGuard<()>>,
}

/// Waits for earlier changes of `path` (keyed by its real path when it exists, as pi does)
/// and returns the lock for this one.
pub async fn lock(path: &Path) -> FileLock {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mutex = {
        let mut locks = LOCKS.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(key.clone()).or_default().clone()
    };
    let guard = mutex.lock_owned().await;
    FileLock {
        key,
        guard: Some(guard),
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        drop(self.guard.take());
        let mut locks = LOCKS.lock().unwrap_or_else(|e| e.into_inner());
        // Forget the entry once nobody holds or waits for it, so the map does not grow.
        if locks
            .get(&self.key)
            .is_some_and(|m| Arc::strong_count(m) == 1)
        {
            locks.remove(&self.key);
        }
    }
}
