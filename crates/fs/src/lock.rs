//! Per-path write locks, so two edits of one file in this process never
//! interleave their read-modify-write and lose an update.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// A map from path to a lock that lives as long as someone holds it; entries
/// whose lock is gone are swept as the map grows.
#[derive(Debug, Default)]
pub(crate) struct PathLocks {
    locks: Mutex<HashMap<PathBuf, Weak<Mutex<()>>>>,
}

impl PathLocks {
    /// The lock for `path`, shared with every other caller holding it now.
    pub(crate) fn lock_for(&self, path: &Path) -> Arc<Mutex<()>> {
        let mut map = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(existing) = map.get(path).and_then(Weak::upgrade) {
            return existing;
        }
        if map.len() >= 1024 {
            map.retain(|_, weak| weak.strong_count() > 0);
        }
        let lock = Arc::new(Mutex::new(()));
        map.insert(path.to_path_buf(), Arc::downgrade(&lock));
        lock
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_path_shares_a_lock_and_dead_entries_are_swept() {
        let locks = PathLocks::default();
        let a = locks.lock_for(Path::new("a"));
        let b = locks.lock_for(Path::new("a"));
        assert!(Arc::ptr_eq(&a, &b));
        let c = locks.lock_for(Path::new("c"));
        assert!(!Arc::ptr_eq(&a, &c));
        drop((a, b, c));
        for i in 0..2000 {
            let _held = locks.lock_for(Path::new(&format!("f{i}")));
        }
        assert!(locks.locks.lock().unwrap().len() <= 1025);
    }
}
