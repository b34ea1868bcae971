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

/// Paths listed together, end to end in one string: a directory's files
/// as the build's walk hands them to its readers. Listing a million files
/// as a string each made a million small blocks on the walk's thread, kept
/// until the build ended among the blocks the walk keeps (its directories'
/// records and watches), so the memory they had taken could not be given
/// back; a list per directory makes a few thousand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PathList {
    text: String,
    /// Where each path ends in `text`.
    ends: Vec<usize>,
}

impl PathList {
    /// Appends `path`.
    pub(crate) fn push(&mut self, path: &str) {
        self.text.push_str(path);
        self.ends.push(self.text.len());
    }

    /// How many paths it holds.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether it holds none.
    pub(crate) fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Its paths, in the order pushed.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| self.text.get(start..end).unwrap_or_default())
    }

    /// Splits the list in two at the `at`-th path: this keeps those before
    /// it, the list returned holds the rest.
    pub(crate) fn split_off(&mut self, at: usize) -> PathList {
        if at >= self.ends.len() {
            return PathList::default();
        }
        let Some(&start) = at.checked_sub(1).and_then(|last| self.ends.get(last)) else {
            return std::mem::take(self);
        };
        let text = self.text.split_off(start);
        let ends = self
            .ends
            .split_off(at)
            .into_iter()
            .map(|end| end - start)
            .collect();
        PathList { text, ends }
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

    #[test]
    fn lists_read_back_and_split_where_asked() {
        let names = ["a", "", "dir/é.rs", "b/c", "last"];
        let mut list = PathList::default();
        assert!(list.is_empty());
        for name in names {
            list.push(name);
        }
        assert_eq!(list.len(), 5);
        assert_eq!(list.iter().collect::<Vec<_>>(), names);
        for at in 0..=6 {
            let mut front = list.clone();
            let back = front.split_off(at);
            let cut = at.min(names.len());
            assert_eq!(front.iter().collect::<Vec<_>>(), names[..cut], "at {at}");
            assert_eq!(back.iter().collect::<Vec<_>>(), names[cut..], "at {at}");
            assert_eq!(front.len() + back.len(), names.len());
        }
    }
}
