//! The name index: file ids by base name and by extension, so a glob whose
//! last component has a usable literal (`**/main.rs`, `src/*.ts`,
//! `*.{rs,py}`) looks up its candidates instead of testing every path.
//!
//! Each entry is one `u64`: a 32-bit hash of the key (a base name or an
//! extension, told apart by a tag) above the file id, so a file costs 16
//! bytes whatever its name's length. A hash collision only adds candidates:
//! the glob matcher confirms every path. Entries are kept in one sorted
//! array plus an unsorted tail that new files go to; the tail is sorted
//! into the array once it holds more than an eighth of it. Entries of
//! replaced or removed files linger (the caller drops ids whose record is
//! dead) until the table is renumbered, which rebuilds the index.

use std::hash::{BuildHasher, Hash, Hasher};

/// What a key names.
#[derive(Clone, Copy)]
enum Kind {
    Name,
    Extension,
}

fn key(kind: Kind, text: &str) -> u32 {
    // A fixed seed: the same hash in every run. foldhash rather than the
    // standard SipHash, which was a noticeable part of filling a
    // million-file table (two keys a file).
    let mut hasher = foldhash::fast::FixedState::with_seed(0x6e61_6d65).build_hasher();
    (kind as u8).hash(&mut hasher);
    text.hash(&mut hasher);
    hasher.finish() as u32
}

/// The extension of a base name: what follows its last dot, if it has one.
fn extension(name: &str) -> Option<&str> {
    name.rfind('.').map(|at| &name[at + 1..])
}

/// Smallest tail sorted into the array.
const MIN_TAIL: usize = 4096;

/// File ids by base name and extension.
#[derive(Debug, Default)]
pub(crate) struct NameIndex {
    sorted: Vec<u64>,
    tail: Vec<u64>,
}

impl NameIndex {
    /// Records the file `id` with base name `name`.
    pub(crate) fn add(&mut self, id: u32, name: &str) {
        let entry = |k: u32| (u64::from(k) << 32) | u64::from(id);
        self.tail.push(entry(key(Kind::Name, name)));
        if let Some(ext) = extension(name) {
            self.tail.push(entry(key(Kind::Extension, ext)));
        }
        if self.tail.len() > MIN_TAIL.max(self.sorted.len() / 8) {
            self.compact();
        }
    }

    /// Sorts the tail into the array.
    pub(crate) fn compact(&mut self) {
        if self.tail.is_empty() {
            return;
        }
        self.sorted.append(&mut self.tail);
        // Mostly sorted already: the standard sort merges the runs.
        self.sorted.sort();
        self.sorted.shrink_to_fit();
        self.tail.shrink_to_fit();
    }

    /// Forgets everything (before the table is renumbered).
    pub(crate) fn clear(&mut self) {
        self.sorted.clear();
        self.tail.clear();
    }

    /// The ids recorded under any key of `filter`, sorted, without
    /// duplicates (ids of dead files included).
    pub(crate) fn ids(&self, filter: &NameFilter) -> Vec<u32> {
        let mut out = Vec::new();
        for &k in &filter.keys {
            let low = u64::from(k) << 32;
            let high = low | u64::from(u32::MAX);
            let from = self.sorted.partition_point(|&e| e < low);
            let to = self.sorted.partition_point(|&e| e <= high);
            out.extend(self.sorted[from..to].iter().map(|&e| e as u32));
            out.extend(
                self.tail
                    .iter()
                    .filter(|&&e| e >> 32 == u64::from(k))
                    .map(|&e| e as u32),
            );
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        (self.sorted.capacity() + self.tail.capacity()) * 8
    }
}

/// What the last component of a glob requires of a file's base name: one
/// of a few exact names or extensions. A superset of the glob's matches;
/// the glob itself confirms each candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameFilter {
    keys: Vec<u32>,
}

/// The most alternatives of a `{a,b}` group the filter takes.
const MAX_ALTERNATIVES: usize = 64;

impl NameFilter {
    /// The filter of a glob in the file tools' dialect (`*` and `?` within
    /// a component, `**` across them, `[...]` classes, `{a,b}`
    /// alternatives, `\` escapes), matched against a whole relative path.
    /// `None` when its last component has no usable literal (such as
    /// `**/*`, `src/**` or `*_test*`): the caller tests every path.
    ///
    /// ```
    /// use agent_tools_index::NameFilter;
    /// assert!(NameFilter::from_glob("**/*.rs").is_some());
    /// assert!(NameFilter::from_glob("src/main.rs").is_some());
    /// assert!(NameFilter::from_glob("**/*.{rs,py}").is_some());
    /// assert!(NameFilter::from_glob("src/**").is_none());
    /// assert!(NameFilter::from_glob("*_test*").is_none());
    /// ```
    pub fn from_glob(pattern: &str) -> Option<NameFilter> {
        // Escapes are rare in globs; leaving them to the scan keeps the
        // reading of the pattern simple.
        if pattern.contains('\\') {
            return None;
        }
        let last = last_component(pattern)?;
        if last.is_empty() || last.contains("**") {
            return None;
        }
        let mut keys = Vec::new();
        for alternative in alternatives(last)? {
            keys.push(alternative_key(&alternative)?);
        }
        keys.sort_unstable();
        keys.dedup();
        Some(NameFilter { keys })
    }
}

/// The key an alternative of a last component requires: its name when it
/// is all literal, else the extension of its literal tail.
fn alternative_key(alternative: &str) -> Option<u32> {
    let special = |c: char| matches!(c, '*' | '?' | '[' | ']');
    if !alternative.contains(special) {
        return Some(key(Kind::Name, alternative));
    }
    // Everything after the last `*`, `?` or `]` is literal (a `[` there
    // would open an unclosed class, which the glob itself rejects).
    let tail = &alternative[alternative.rfind(['*', '?', ']'])? + 1..];
    if tail.contains('[') {
        return None;
    }
    // A name ending in `tail` has its last dot where `tail` has its last
    // dot, so its extension is what follows that dot in `tail`.
    let at = tail.rfind('.')?;
    Some(key(Kind::Extension, &tail[at + 1..]))
}

/// The text after the last `/` that lies outside any `[...]` or `{...}`;
/// `None` when a `/` lies inside one.
fn last_component(pattern: &str) -> Option<&str> {
    let (mut braces, mut bracket) = (0usize, false);
    let mut start = 0;
    for (at, c) in pattern.char_indices() {
        match c {
            '[' if !bracket => bracket = true,
            ']' if bracket => bracket = false,
            '{' if !bracket => braces += 1,
            '}' if !bracket => braces = braces.saturating_sub(1),
            '/' if bracket || braces > 0 => return None,
            '/' => start = at + 1,
            _ => {}
        }
    }
    Some(&pattern[start..])
}

/// The expansions of the one level of `{a,b}` groups a component may hold
/// (the glob dialect does not nest them); `None` past
/// [`MAX_ALTERNATIVES`] or when a group holds a class.
fn alternatives(component: &str) -> Option<Vec<String>> {
    let mut out = vec![String::new()];
    let mut rest = component;
    while let Some(open) = rest.find('{') {
        let close = open + rest[open..].find('}')?;
        let group = &rest[open + 1..close];
        if group.contains(['{', '[', ']']) {
            return None;
        }
        let prefix = &rest[..open];
        let mut next = Vec::new();
        for done in &out {
            for choice in group.split(',') {
                next.push(format!("{done}{prefix}{choice}"));
            }
        }
        if next.len() > MAX_ALTERNATIVES {
            return None;
        }
        out = next;
        rest = &rest[close + 1..];
    }
    if rest.contains('}') {
        return None;
    }
    for done in &mut out {
        done.push_str(rest);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_of(names: &[&str]) -> NameIndex {
        let mut index = NameIndex::default();
        for (id, name) in names.iter().enumerate() {
            index.add(id as u32, name);
        }
        index
    }

    fn found(index: &NameIndex, glob: &str) -> Vec<u32> {
        let filter = NameFilter::from_glob(glob).unwrap_or_else(|| panic!("{glob} has a filter"));
        index.ids(&filter)
    }

    #[test]
    fn names_and_extensions_are_looked_up() {
        let mut index = index_of(&["main.rs", "lib.rs", "a.tar.gz", "Makefile", ".rs", "x.py"]);
        assert_eq!(found(&index, "**/*.rs"), vec![0, 1, 4]);
        assert_eq!(found(&index, "src/main.rs"), vec![0]);
        assert_eq!(found(&index, "*.tar.gz"), vec![2]);
        assert_eq!(found(&index, "**/Makefile"), vec![3]);
        assert_eq!(found(&index, "**/*.{rs,py}"), vec![0, 1, 4, 5]);
        assert_eq!(found(&index, "{main,lib}.rs"), vec![0, 1]);
        assert_eq!(found(&index, "[ml]*.rs"), vec![0, 1, 4]);
        assert_eq!(found(&index, "?ain.rs"), vec![0, 1, 4]);
        index.compact();
        assert_eq!(found(&index, "**/*.rs"), vec![0, 1, 4]);
        index.add(9, "late.rs");
        assert_eq!(found(&index, "**/*.rs"), vec![0, 1, 4, 9]);
    }

    #[test]
    fn globs_without_a_usable_literal_have_no_filter() {
        for glob in [
            "**/*",
            "src/**",
            "*",
            "*_test*",
            "*.r?",
            "**",
            "a/**/",
            "*.rs\\*",
            "{a/b,c}.rs",
            "[/]x.rs",
            "{a,b",
            "x}",
            "*.{[ab],c}",
            "a**.rs",
            "*.{rs,*}",
            "m*.[rp]s",
        ] {
            assert_eq!(NameFilter::from_glob(glob), None, "{glob}");
        }
    }

    #[test]
    fn a_large_index_compacts_and_finds_every_file() {
        let names: Vec<String> = (0..20_000).map(|n| format!("f{n}.{}", n % 7)).collect();
        let mut index = NameIndex::default();
        for (id, name) in names.iter().enumerate() {
            index.add(id as u32, name);
        }
        assert!(index.tail.len() < index.sorted.len());
        let sevens: Vec<u32> = (0..20_000).filter(|n| n % 7 == 3).collect();
        assert_eq!(found(&index, "**/*.3"), sevens);
        assert_eq!(found(&index, "**/f12345.4"), vec![12_345]);
    }
}
