//! The file table's paths, end to end in one buffer.
//!
//! A path allocated on its own cost about twice its length at a million
//! files: a shared string's two counts (16 bytes), malloc's header (8) and
//! the rounding of its block (a 30-byte path took 64 bytes). And those
//! million small blocks, made while the build's threads were freeing far
//! more, stayed scattered through the heaps the build had used, which then
//! could not give that freed memory back: 30 to 60 MB more, varying from
//! run to run. One buffer holds the same paths in their own bytes.

/// Where one path lies in a [`PathStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PathRef {
    start: usize,
    end: usize,
}

/// Paths appended to one buffer. A path is never removed: the table
/// builds a new store from the paths it keeps when it renumbers its
/// records, which bounds what dead records leave behind.
#[derive(Debug, Default)]
pub(crate) struct PathStore {
    text: String,
}

impl PathStore {
    /// A store with room for `bytes` bytes of paths.
    pub(crate) fn with_capacity(bytes: usize) -> PathStore {
        PathStore {
            text: String::with_capacity(bytes),
        }
    }

    /// Appends `path`; returns where it lies.
    pub(crate) fn push(&mut self, path: &str) -> PathRef {
        let start = self.text.len();
        self.text.push_str(path);
        PathRef {
            start,
            end: self.text.len(),
        }
    }

    /// The path at `at` (empty for a place this store never gave out).
    pub(crate) fn get(&self, at: PathRef) -> &str {
        self.text.get(at.start..at.end).unwrap_or_default()
    }

    /// Bytes held (its capacity: pages never written are never resident,
    /// so this errs high).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.text.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_back_as_pushed() {
        let mut store = PathStore::with_capacity(4);
        let a = store.push("src/lib.rs");
        let empty = store.push("");
        let b = store.push("é/ü.txt");
        assert_eq!(store.get(a), "src/lib.rs");
        assert_eq!(store.get(empty), "");
        assert_eq!(store.get(b), "é/ü.txt");
        // End to end, nothing between.
        assert_eq!(store.text, "src/lib.rsé/ü.txt");
        let other = PathStore::default();
        assert_eq!(other.get(b), "");
    }
}
