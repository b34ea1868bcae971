//! The content index: ASCII-case-folded byte trigrams, each with the sorted
//! list of file ids holding it.
//!
//! A [`Segment`] keeps its trigrams as one sorted key array and all its
//! posting lists in one byte arena, each list delta-encoded as LEB128
//! varints (about 1.2 bytes a posting on source trees, against 4 for a
//! `u32` array and some 40 for a map entry). Segments hold disjoint,
//! increasing ranges of file ids, so the list of a trigram over several
//! segments is their concatenation.

/// A trigram key: three folded bytes in the low 24 bits.
pub(crate) type Trigram = u32;

/// The one case folding of the index: ASCII `A`-`Z` to `a`-`z`, every other
/// byte unchanged. It maps bytes to bytes, so it is defined on any content
/// (UTF-8 or not) and a substring of a file folds to a substring of the
/// folded file.
#[inline]
pub(crate) fn fold(byte: u8) -> u8 {
    byte.to_ascii_lowercase()
}

/// The key of three (already folded) bytes.
#[inline]
pub(crate) fn key(a: u8, b: u8, c: u8) -> Trigram {
    (u32::from(a) << 16) | (u32::from(b) << 8) | u32::from(c)
}

/// Collects the distinct folded trigrams of texts, reusing one 2^24-bit set
/// so each text costs one pass over its bytes.
pub(crate) struct TrigramCollector {
    seen: Vec<u64>,
}

impl TrigramCollector {
    pub(crate) fn new() -> Self {
        TrigramCollector {
            seen: vec![0; (1 << 24) / 64],
        }
    }

    /// The distinct trigrams of `text`, sorted.
    pub(crate) fn collect(&mut self, text: &[u8]) -> Vec<Trigram> {
        let mut found = Vec::new();
        if text.len() >= 3 {
            let mut window = (u32::from(fold(text[0])) << 8) | u32::from(fold(text[1]));
            for &byte in &text[2..] {
                window = ((window << 8) | u32::from(fold(byte))) & 0x00FF_FFFF;
                let (word, bit) = ((window >> 6) as usize, window & 63);
                if self.seen[word] & (1 << bit) == 0 {
                    self.seen[word] |= 1 << bit;
                    found.push(window);
                }
            }
        }
        for &trigram in &found {
            self.seen[(trigram >> 6) as usize] = 0;
        }
        found.sort_unstable();
        found
    }
}

/// An immutable run of posting lists.
#[derive(Debug, Default)]
pub(crate) struct Segment {
    keys: Vec<Trigram>,
    /// Where each key's list starts in `arena`; one more entry than `keys`.
    starts: Vec<u32>,
    /// How many ids each key's list holds.
    counts: Vec<u32>,
    arena: Vec<u8>,
}

impl Segment {
    /// Builds a segment from `(trigram << 32 | file id)` pairs (any order).
    pub(crate) fn from_pairs(mut pairs: Vec<u64>) -> Segment {
        pairs.sort_unstable();
        pairs.dedup();
        let mut segment = Segment::default();
        let mut writer = ListWriter::new();
        let mut current: Option<Trigram> = None;
        for pair in pairs {
            let trigram = (pair >> 32) as Trigram;
            let id = pair as u32;
            if current != Some(trigram) {
                if let Some(done) = current {
                    segment.finish_list(done, &mut writer);
                }
                current = Some(trigram);
            }
            writer.push(id, &mut segment.arena);
        }
        if let Some(done) = current {
            segment.finish_list(done, &mut writer);
        }
        segment.seal();
        segment
    }

    fn finish_list(&mut self, trigram: Trigram, writer: &mut ListWriter) {
        self.keys.push(trigram);
        self.starts.push(writer.start);
        self.counts.push(writer.count);
        *writer = ListWriter::at(self.arena.len());
    }

    fn seal(&mut self) {
        self.starts.push(self.arena.len() as u32);
        self.keys.shrink_to_fit();
        self.starts.shrink_to_fit();
        self.counts.shrink_to_fit();
        self.arena.shrink_to_fit();
    }

    /// How many ids the list of `trigram` holds (0 when absent).
    pub(crate) fn count(&self, trigram: Trigram) -> u32 {
        self.keys
            .binary_search(&trigram)
            .map_or(0, |at| self.counts[at])
    }

    /// Appends the ids of `trigram` to `out` (sorted, above what `out` has).
    pub(crate) fn decode_into(&self, trigram: Trigram, out: &mut Vec<u32>) {
        let Ok(at) = self.keys.binary_search(&trigram) else {
            return;
        };
        let bytes = &self.arena[self.starts[at] as usize..self.starts[at + 1] as usize];
        decode_list(bytes, out);
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.keys.capacity() * 4
            + self.starts.capacity() * 4
            + self.counts.capacity() * 4
            + self.arena.capacity()
    }

    /// How many postings the segment holds.
    pub(crate) fn postings(&self) -> u64 {
        self.counts.iter().map(|&c| u64::from(c)).sum()
    }

    /// Merges segments (in increasing id order) into one, keeping only the
    /// ids `keep` returns a new id for. The new ids must increase with the
    /// old ones, so every list stays sorted.
    pub(crate) fn merge(parts: &[&Segment], keep: impl Fn(u32) -> Option<u32>) -> Segment {
        let mut keys: Vec<Trigram> = parts.iter().flat_map(|s| s.keys.iter().copied()).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut merged = Segment::default();
        let mut cursors = vec![0usize; parts.len()];
        let mut ids = Vec::new();
        for trigram in keys {
            ids.clear();
            for (part, cursor) in parts.iter().zip(cursors.iter_mut()) {
                if part.keys.get(*cursor) == Some(&trigram) {
                    let bytes = &part.arena
                        [part.starts[*cursor] as usize..part.starts[*cursor + 1] as usize];
                    decode_list(bytes, &mut ids);
                    *cursor += 1;
                }
            }
            let mut writer = ListWriter::at(merged.arena.len());
            for &id in &ids {
                if let Some(new_id) = keep(id) {
                    writer.push(new_id, &mut merged.arena);
                }
            }
            if writer.count > 0 {
                merged.finish_list(trigram, &mut writer);
            }
        }
        merged.seal();
        merged
    }
}

/// Writes one delta-varint list.
struct ListWriter {
    start: u32,
    count: u32,
    last: u32,
}

impl ListWriter {
    fn new() -> Self {
        Self::at(0)
    }

    fn at(start: usize) -> Self {
        ListWriter {
            // Arenas stay far below 4 GiB: the memory budget bounds them.
            start: u32::try_from(start).unwrap_or(u32::MAX),
            count: 0,
            last: 0,
        }
    }

    fn push(&mut self, id: u32, arena: &mut Vec<u8>) {
        let mut delta = if self.count == 0 { id } else { id - self.last };
        loop {
            let low = (delta & 0x7F) as u8;
            delta >>= 7;
            if delta == 0 {
                arena.push(low);
                break;
            }
            arena.push(low | 0x80);
        }
        self.last = id;
        self.count += 1;
    }
}

fn decode_list(bytes: &[u8], out: &mut Vec<u32>) {
    let mut value = 0u32;
    let mut shift = 0;
    let mut last = 0u32;
    let mut first = true;
    for &byte in bytes {
        value |= u32::from(byte & 0x7F) << shift;
        if byte & 0x80 != 0 {
            shift += 7;
            continue;
        }
        last = if first { value } else { last + value };
        first = false;
        out.push(last);
        value = 0;
        shift = 0;
    }
}

/// The ids in both sorted lists.
pub(crate) fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut out = Vec::with_capacity(small.len());
    // Galloping keeps a tiny list against a huge one cheap.
    let mut from = 0usize;
    for &id in small {
        match large[from..].binary_search(&id) {
            Ok(at) => {
                out.push(id);
                from += at + 1;
            }
            Err(at) => from += at,
        }
        if from >= large.len() {
            break;
        }
    }
    out
}

/// The ids in either sorted list.
pub(crate) fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collector_folds_and_dedupes() {
        let mut collector = TrigramCollector::new();
        let got = collector.collect(b"AbcABC");
        let mut want = vec![
            key(b'a', b'b', b'c'),
            key(b'b', b'c', b'a'),
            key(b'c', b'a', b'b'),
        ];
        want.sort_unstable();
        assert_eq!(got, want);
        // The set is cleared between texts.
        assert_eq!(collector.collect(b"xyz"), vec![key(b'x', b'y', b'z')]);
        assert!(collector.collect(b"ab").is_empty());
    }

    #[test]
    fn segments_round_trip_and_merge() {
        let pairs: Vec<u64> = [(7u64, 1u64), (7, 300), (7, 70_000), (9, 2), (7, 1)]
            .iter()
            .map(|(t, id)| (t << 32) | id)
            .collect();
        let segment = Segment::from_pairs(pairs);
        let mut out = Vec::new();
        segment.decode_into(7, &mut out);
        assert_eq!(out, vec![1, 300, 70_000]);
        assert_eq!(segment.count(9), 1);
        assert_eq!(segment.count(8), 0);
        let later = Segment::from_pairs(vec![(7u64 << 32) | 80_000, (5u64 << 32) | 80_001]);
        let merged = Segment::merge(&[&segment, &later], |id| (id != 300).then_some(id));
        let mut out = Vec::new();
        merged.decode_into(7, &mut out);
        assert_eq!(out, vec![1, 70_000, 80_000]);
        assert_eq!(merged.count(5), 1);
        assert_eq!(merged.postings(), 5);
    }

    #[test]
    fn set_operations() {
        assert_eq!(intersect(&[1, 3, 5, 9], &[3, 4, 9, 10]), vec![3, 9]);
        assert_eq!(intersect(&[], &[1]), Vec::<u32>::new());
        assert_eq!(union(&[1, 3], &[2, 3, 4]), vec![1, 2, 3, 4]);
    }
}
