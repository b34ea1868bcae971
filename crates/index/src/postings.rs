//! The content index: ASCII-case-folded byte trigrams, each with the sorted
//! list of file ids holding it.
//!
//! A [`Segment`] keeps its trigrams as one sorted key array and all its
//! posting lists in one byte arena, each list delta-encoded as LEB128
//! varints (about 1.2 bytes a posting on source trees, against 4 for a
//! `u32` array and some 40 for a map entry). Segments hold disjoint,
//! increasing ranges of file ids, so the list of a trigram over several
//! segments is their concatenation.

use std::ops::Range;

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
    /// [`SEEN_WORDS`] words.
    seen: Vec<u64>,
    /// The folded bytes of a block of text (kept, so it is not cleared
    /// for every text).
    block: Box<[u8; FOLD_BLOCK]>,
    /// The trigrams first met in a block, before they join the text's.
    fresh: Box<[Trigram; FOLD_BLOCK]>,
}

/// Words of the trigram set: one bit for each of the 2^24 trigrams.
const SEEN_WORDS: usize = (1 << 24) / 64;

/// Bytes folded at a time before their windows are read.
const FOLD_BLOCK: usize = 4096;

impl TrigramCollector {
    pub(crate) fn new() -> Self {
        TrigramCollector {
            seen: vec![0; SEEN_WORDS],
            block: Box::new([0; FOLD_BLOCK]),
            fresh: Box::new([0; FOLD_BLOCK]),
        }
    }

    /// The distinct trigrams of `text`, sorted.
    pub(crate) fn collect(&mut self, text: &[u8]) -> Vec<Trigram> {
        let mut found = self.collect_unsorted(text);
        found.sort_unstable();
        // Kept as a loose list: without the room for every window.
        found.shrink_to_fit();
        found
    }

    /// The distinct trigrams of `text`, in the order first met.
    pub(crate) fn collect_unsorted(&mut self, text: &[u8]) -> Vec<Trigram> {
        let mut found = Vec::new();
        let n = self.collect_into(text, &mut found);
        found.truncate(n);
        found
    }

    /// Writes the distinct trigrams of `text`, in the order first met, to
    /// the front of `found` and returns how many there are. `found` only
    /// grows (what lies past the count is left over from earlier texts),
    /// so a reader that passes the same buffer for every file allocates
    /// and clears nothing per file.
    pub(crate) fn collect_into(&mut self, text: &[u8], found: &mut Vec<Trigram>) -> usize {
        let Some(windows) = text.len().checked_sub(2).filter(|&n| n > 0) else {
            return 0;
        };
        if found.len() < windows {
            found.resize(windows, 0);
        }
        // Of a known length, so indexing it by a trigram's upper bits
        // (masked) needs no bounds check.
        let seen = &mut self.seen[..SEEN_WORDS];
        let fresh = &mut *self.fresh;
        let mut len = 0;
        let mut window = (u32::from(fold(text[0])) << 8) | u32::from(fold(text[1]));
        // Folded a block at a time (a loop the compiler vectorizes), so the
        // loop over windows does not fold byte by byte.
        for part in text[2..].chunks(FOLD_BLOCK) {
            let block = &mut self.block[..part.len()];
            for (to, &from) in block.iter_mut().zip(part) {
                *to = fold(from);
            }
            // Every window is written and the count moves on only for a
            // new one: whether a trigram is new is a coin toss on source
            // text, and a branch on it was mispredicted about half the
            // time. The count stays below the block's length, so masked
            // it indexes the block's array without a bounds check (two
            // checks and a `min` a byte were a fifth of the loop).
            let mut new_here = 0usize;
            let mut step = |byte: u8| {
                window = ((window << 8) | u32::from(byte)) & 0x00FF_FFFF;
                let word = &mut seen[(window >> 6) as usize & (SEEN_WORDS - 1)];
                let bit = 1u64 << (window & 63);
                let new = usize::from(*word & bit == 0);
                *word |= bit;
                fresh[new_here & (FOLD_BLOCK - 1)] = window;
                new_here += new;
            };
            // Four windows a turn: the loop's own count and test, once a
            // byte, were as many instructions again as the masking saved.
            let mut quads = block.chunks_exact(4);
            for quad in &mut quads {
                step(quad[0]);
                step(quad[1]);
                step(quad[2]);
                step(quad[3]);
            }
            for &byte in quads.remainder() {
                step(byte);
            }
            found[len..len + new_here].copy_from_slice(&fresh[..new_here]);
            len += new_here;
        }
        for &trigram in &found[..len] {
            seen[(trigram >> 6) as usize & (SEEN_WORDS - 1)] = 0;
        }
        len
    }
}

/// The span of ids one [`Batch`] holds at most: a pair keeps its file's
/// distance from the batch's first id in 16 bits.
const BATCH_FILES: usize = 1 << 16;

/// The (trigram, file) pairs of a run of files, gathered into a segment.
///
/// Each pair is 4 bytes, put as it is added into one of 256 buckets by the
/// trigram's first byte: the trigram's other two bytes above the file's
/// place in the batch (its id less the batch's first, so a list's ids are
/// its places plus one number, not looked up). A bucket (tens of
/// kilobytes on source text) is then sorted where it lies in the
/// processor's cache, by two counting passes, and the lists are encoded
/// off it in key order. The buckets and the scratch
/// keep their room from batch to batch, so a reader allocates them once.
/// (Before, each pair was 8 bytes, held twice, and sorted by three
/// counting passes over the whole batch in main memory: the build's
/// largest cost.)
pub(crate) struct Batch {
    buckets: Vec<Vec<u32>>,
    /// The id of the batch's first file: a place is an id less this.
    base: u32,
    /// Files held.
    files: usize,
    pairs: usize,
    scratch: Vec<u32>,
}

impl Batch {
    pub(crate) fn new() -> Batch {
        Batch {
            buckets: (0..256).map(|_| Vec::new()).collect(),
            base: 0,
            files: 0,
            pairs: 0,
            scratch: Vec::new(),
        }
    }

    /// Pairs held.
    pub(crate) fn pairs(&self) -> usize {
        self.pairs
    }

    /// Files held.
    #[cfg(test)]
    pub(crate) fn files(&self) -> usize {
        self.files
    }

    /// Whether files up to id `last` can be added: the batch is empty, or
    /// that id lies less than [`BATCH_FILES`] past its first.
    pub(crate) fn reaches(&self, last: u32) -> bool {
        self.files == 0 || (last.saturating_sub(self.base) as usize) < BATCH_FILES
    }

    /// Adds the distinct trigrams of file `id`, which must be above every
    /// id held and one the batch [`reaches`](Self::reaches).
    pub(crate) fn add(&mut self, id: u32, trigrams: &[Trigram]) {
        if self.files == 0 {
            self.base = id;
        }
        debug_assert!(self.reaches(id) && id >= self.base);
        let place = id.wrapping_sub(self.base) & 0xFFFF;
        self.files += 1;
        for &trigram in trigrams {
            self.buckets[((trigram >> 16) & 0xFF) as usize].push((trigram << 16) | place);
        }
        self.pairs += trigrams.len();
    }

    /// The segment of the pairs held; the batch is left empty.
    #[cfg(test)]
    pub(crate) fn take_segment(&mut self) -> Segment {
        self.take_segment_into(Segment::default())
    }

    /// [`take_segment`](Self::take_segment) into the room of a segment no
    /// longer needed (see [`Segment::emptied`]).
    pub(crate) fn take_segment_into(&mut self, mut segment: Segment) -> Segment {
        for (first, bucket) in self.buckets.iter_mut().enumerate() {
            if bucket.is_empty() {
                continue;
            }
            sort_bucket(bucket, &mut self.scratch);
            let base = self.base;
            let mut rest = &bucket[..];
            while let Some(&head) = rest.first() {
                let key = head >> 16;
                let run = rest
                    .iter()
                    .position(|&p| p >> 16 != key)
                    .unwrap_or(rest.len());
                let (list, after) = rest.split_at(run);
                rest = after;
                segment.push_ids(
                    ((first as u32) << 16) | key,
                    list.iter().map(|&pair| base + (pair & 0xFFFF)),
                );
            }
            bucket.clear();
        }
        self.files = 0;
        self.pairs = 0;
        segment.seal();
        segment
    }
}

/// Sorts a bucket's pairs by their upper 16 bits (the trigram's last two
/// bytes), keeping the order of pairs with the same bits: pairs are added
/// file by file, so they come out sorted by trigram, then file. Two
/// counting passes of a byte each (the counts of both taken in one read).
///
/// The first half of the pairs and the second are counted and placed side
/// by side, each with counts of its own (the second's places start after
/// the first's in every slot, so the order stays stable): a pass that
/// counts or places one pair at a time waits, whenever two pairs in a row
/// share a byte, for the count the first one wrote.
fn sort_bucket(pairs: &mut [u32], scratch: &mut Vec<u32>) {
    if pairs.len() < 64 {
        // Pairs are distinct and a file's place is in the low bits, so
        // sorting the values sorts by trigram, then file.
        pairs.sort_unstable();
        return;
    }
    let mid = pairs.len() / 2;
    let (first, second) = pairs.split_at(mid);
    // [half][byte]: the third byte of the trigram, and the second.
    let mut thirds = [[0u32; 256]; 2];
    let mut seconds = [0u32; 256];
    let mut seconds_too = [0u32; 256];
    for (&a, &b) in first.iter().zip(second) {
        thirds[0][((a >> 16) & 0xFF) as usize] += 1;
        thirds[1][((b >> 16) & 0xFF) as usize] += 1;
        seconds[(a >> 24) as usize] += 1;
        seconds_too[(b >> 24) as usize] += 1;
    }
    if let Some(&last) = second.get(first.len()) {
        thirds[1][((last >> 16) & 0xFF) as usize] += 1;
        seconds_too[(last >> 24) as usize] += 1;
    }
    for (one, other) in seconds.iter_mut().zip(&seconds_too) {
        *one += other;
    }
    scratch.clear();
    scratch.resize(pairs.len(), 0);
    // From the bucket to the scratch by the third byte of the trigram,
    // then back by the second: the bucket keeps its own room.
    let mut starts = [[0u32; 256]; 2];
    let mut total = 0u32;
    for byte in 0..256 {
        starts[0][byte] = total;
        starts[1][byte] = total + thirds[0][byte];
        total += thirds[0][byte] + thirds[1][byte];
    }
    let [mut low, mut high] = starts;
    for (&a, &b) in first.iter().zip(second) {
        let at = &mut low[((a >> 16) & 0xFF) as usize];
        scratch[*at as usize] = a;
        *at += 1;
        let at = &mut high[((b >> 16) & 0xFF) as usize];
        scratch[*at as usize] = b;
        *at += 1;
    }
    if let Some(&last) = second.get(first.len()) {
        scratch[high[((last >> 16) & 0xFF) as usize] as usize] = last;
    }
    scatter(scratch, pairs, &seconds, 24);
}

/// One stable counting pass: `from` into `to` by the byte at `shift`.
fn scatter(from: &[u32], to: &mut [u32], count: &[u32; 256], shift: u32) {
    let mut starts = [0u32; 256];
    let mut total = 0;
    for (start, &c) in starts.iter_mut().zip(count) {
        *start = total;
        total += c;
    }
    for &pair in from {
        let at = &mut starts[((pair >> shift) & 0xFF) as usize];
        to[*at as usize] = pair;
        *at += 1;
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
    /// What every id read from the lists is moved up by (see
    /// [`shift`](Self::shift)); 0 for a segment as it was encoded.
    offset: u32,
}

/// A list stored as delta-encoded LEB128 varints.
const AS_VARINTS: u8 = 0;
/// A list stored as a bitmap: the first id (4 bytes, little-endian), then
/// one bit per id from it on. Chosen when smaller, which is the case for
/// trigrams found in more than about one file in eight.
const AS_BITMAP: u8 = 1;

impl Segment {
    /// Builds a segment from `(trigram << 32 | file id)` pairs (any order).
    pub(crate) fn from_pairs(mut pairs: Vec<u64>) -> Segment {
        pairs.sort_unstable();
        pairs.dedup();
        Segment::from_sorted_pairs(&pairs)
    }

    /// Builds a segment from distinct pairs sorted by trigram, then id.
    pub(crate) fn from_sorted_pairs(pairs: &[u64]) -> Segment {
        let mut segment = Segment::default();
        let mut ids = Vec::new();
        let mut current: Option<Trigram> = None;
        for &pair in pairs {
            let trigram = (pair >> 32) as Trigram;
            if current != Some(trigram) {
                if let Some(done) = current {
                    segment.push_list(done, &ids);
                    ids.clear();
                }
                current = Some(trigram);
            }
            ids.push(pair as u32);
        }
        if let Some(done) = current {
            segment.push_list(done, &ids);
        }
        segment.seal();
        segment
    }

    /// Appends the list of `trigram` (sorted ids), in whichever of the two
    /// encodings is smaller.
    fn push_list(&mut self, trigram: Trigram, ids: &[u32]) {
        self.push_ids(trigram, ids.iter().copied());
    }

    /// [`push_list`](Self::push_list) of ids read off an iterator (a
    /// batch maps its pairs to ids as they are encoded).
    #[inline]
    fn push_ids<I>(&mut self, trigram: Trigram, ids: I)
    where
        I: ExactSizeIterator<Item = u32> + DoubleEndedIterator + Clone,
    {
        let (Some(first), Some(last)) = (ids.clone().next(), ids.clone().next_back()) else {
            return;
        };
        let len = ids.len();
        self.begin_list(trigram, u32::try_from(len).unwrap_or(u32::MAX));
        let bitmap_bytes = bitmap_bytes(first, last);
        let tag = self.arena.len();
        // Every varint takes a byte at least: a list with more ids than the
        // bitmap has bytes is a bitmap without encoding it first.
        if len <= bitmap_bytes {
            self.arena.push(AS_VARINTS);
            let mut previous = 0;
            for (n, id) in ids.clone().enumerate() {
                let delta = if n == 0 { id } else { id - previous };
                push_varint(delta, &mut self.arena);
                previous = id;
            }
            if self.arena.len() - tag - 1 <= bitmap_bytes {
                return;
            }
            self.arena.truncate(tag);
        }
        self.arena.push(AS_BITMAP);
        self.arena.extend_from_slice(&first.to_le_bytes());
        let at = self.arena.len();
        self.arena.resize(at + bitmap_bytes - 4, 0);
        // The bits of 64 ids at a time are gathered in a word and written
        // once: setting each id's bit in the arena made every id wait for
        // the write of the one before, to the same byte.
        let bits = &mut self.arena[at..];
        let mut word = 0usize;
        let mut gathered = 0u64;
        for id in ids {
            let bit = (id - first) as usize;
            if bit / 64 != word {
                lay_word(bits, word, gathered);
                word = bit / 64;
                gathered = 0;
            }
            gathered |= 1 << (bit % 64);
        }
        lay_word(bits, word, gathered);
    }

    /// This segment with its lists taken out and its room kept: a build
    /// reader packs each batch into the room of a segment its tiers have
    /// merged, rather than into fresh memory (a block that large is mapped
    /// anew and each of its pages faulted in, for every batch).
    pub(crate) fn emptied(mut self) -> Segment {
        self.keys.clear();
        self.starts.clear();
        self.counts.clear();
        self.arena.clear();
        self.offset = 0;
        self
    }

    /// Enters the key, start and count of a list whose bytes (its tag
    /// first) are appended next.
    fn begin_list(&mut self, trigram: Trigram, count: u32) {
        self.keys.push(trigram);
        // Arenas stay far below 4 GiB: the memory budget bounds them.
        self.starts
            .push(u32::try_from(self.arena.len()).unwrap_or(u32::MAX));
        self.counts.push(count);
    }

    fn seal(&mut self) {
        self.starts
            .push(u32::try_from(self.arena.len()).unwrap_or(u32::MAX));
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
        if let Ok(at) = self.keys.binary_search(&trigram) {
            self.decode_at(at, out);
        }
    }

    fn decode_at(&self, at: usize, out: &mut Vec<u32>) {
        match self.list_at(at).split_first() {
            Some((&AS_BITMAP, rest)) if rest.len() >= 4 => {
                let first = bitmap_first(rest).wrapping_add(self.offset);
                for (index, &byte) in rest[4..].iter().enumerate() {
                    let mut bits = byte;
                    while bits != 0 {
                        let bit = bits.trailing_zeros();
                        out.push(first + (index as u32) * 8 + bit);
                        bits &= bits - 1;
                    }
                }
            }
            Some((_, rest)) => decode_varints(rest, self.offset, out),
            None => {}
        }
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.keys.capacity() * 4
            + self.starts.capacity() * 4
            + self.counts.capacity() * 4
            + self.arena.capacity()
    }

    /// Bytes of the lists themselves (the heap bytes less the key tables,
    /// which shrink as segments merge and keys are shared): about what
    /// these postings take once merged into a large segment.
    pub(crate) fn list_bytes(&self) -> usize {
        self.arena.len()
    }

    /// How many postings the segment holds.
    pub(crate) fn postings(&self) -> u64 {
        self.counts.iter().map(|&c| u64::from(c)).sum()
    }

    /// Merges segments into one, keeping only the ids `keep` returns a new
    /// id for. The new ids must increase with the old ones, so every list
    /// stays sorted. Segments holding increasing ranges of ids (given in
    /// that order) are concatenated list by list; lists that interleave
    /// (segments built by different readers) are united.
    pub(crate) fn merge(parts: &[&Segment], keep: impl Fn(u32) -> Option<u32>) -> Segment {
        let mut keys: Vec<Trigram> = parts.iter().flat_map(|s| s.keys.iter().copied()).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut merged = Segment::default();
        let mut cursors = vec![0usize; parts.len()];
        let mut ids = Vec::new();
        let mut kept = Vec::new();
        for trigram in keys {
            ids.clear();
            for (part, cursor) in parts.iter().zip(cursors.iter_mut()) {
                if part.keys.get(*cursor) == Some(&trigram) {
                    let from = ids.len();
                    part.decode_at(*cursor, &mut ids);
                    *cursor += 1;
                    if from > 0 && ids.len() > from && ids[from] <= ids[from - 1] {
                        let later = ids.split_off(from);
                        ids = union(&ids, &later);
                    }
                }
            }
            kept.clear();
            kept.extend(ids.iter().filter_map(|&id| keep(id)));
            merged.push_list(trigram, &kept);
        }
        merged.seal();
        merged
    }

    /// Merges the lists of the keys in `keys` of groups of segments into
    /// one segment. The segments of a group hold increasing ranges of ids,
    /// in that order (one build reader's), so their lists concatenate;
    /// groups interleave (readers took chunks in turn), so theirs are
    /// united. The build runs it on each half of the key space at once.
    pub(crate) fn merge_groups(groups: &[Vec<&Segment>], keys: Range<Trigram>) -> Segment {
        let spans: Vec<Vec<(usize, usize)>> = groups
            .iter()
            .map(|group| {
                group
                    .iter()
                    .map(|s| {
                        let from = s.keys.partition_point(|&k| k < keys.start);
                        let to = s.keys.partition_point(|&k| k < keys.end);
                        (from, to)
                    })
                    .collect()
            })
            .collect();
        let mut all: Vec<Trigram> = groups
            .iter()
            .zip(&spans)
            .flat_map(|(group, spans)| {
                group
                    .iter()
                    .zip(spans)
                    .flat_map(|(s, &(from, to))| s.keys[from..to].iter().copied())
            })
            .collect();
        all.sort_unstable();
        all.dedup();
        let mut cursors: Vec<Vec<usize>> = spans
            .iter()
            .map(|spans| spans.iter().map(|&(from, _)| from).collect())
            .collect();
        // Sized once: the keys exactly, the lists at most what the parts'
        // take (pages of it never written are never touched, and the
        // room left is given back when sealed), so they do not grow by
        // copies that leave freed blocks behind.
        let list_bytes: usize = groups
            .iter()
            .zip(&spans)
            .flat_map(|(group, spans)| {
                group
                    .iter()
                    .zip(spans)
                    .map(|(s, &(from, to))| (s.starts[to] - s.starts[from]) as usize)
            })
            .sum();
        let mut merged = Segment {
            keys: Vec::with_capacity(all.len()),
            starts: Vec::with_capacity(all.len() + 1),
            counts: Vec::with_capacity(all.len()),
            arena: Vec::with_capacity(list_bytes),
            offset: 0,
        };
        let mut ids = Vec::new();
        let mut group_ids = Vec::new();
        let mut spans = Vec::new();
        // The lists of the trigram, by group, each a segment and the place
        // of its list there.
        let mut hits: Vec<(usize, &Segment, usize)> = Vec::new();
        for trigram in all {
            hits.clear();
            for (n, (group, cursors)) in groups.iter().zip(cursors.iter_mut()).enumerate() {
                for (part, cursor) in group.iter().zip(cursors.iter_mut()) {
                    if part.keys.get(*cursor) == Some(&trigram) {
                        hits.push((n, part, *cursor));
                        *cursor += 1;
                    }
                }
            }
            // One group's lists follow one another: when all are varint
            // lists that stay one, their bytes are copied, not decoded.
            if groups.len() == 1 && merged.push_concatenated(trigram, &hits, &mut spans) {
                continue;
            }
            if merged.push_as_bitmap(trigram, &hits, &mut ids) {
                continue;
            }
            ids.clear();
            for group in 0..groups.len() {
                group_ids.clear();
                for &(_, part, at) in hits.iter().filter(|(n, _, _)| *n == group) {
                    part.decode_at(at, &mut group_ids);
                }
                if ids.is_empty() {
                    std::mem::swap(&mut ids, &mut group_ids);
                } else if !group_ids.is_empty() {
                    ids = union(&ids, &group_ids);
                }
            }
            merged.push_list(trigram, &ids);
        }
        merged.seal();
        merged
    }

    /// Appends the list of `trigram` that unites the lists `hits` (which
    /// hold disjoint ids: different files) when [`push_list`] would store
    /// it as a bitmap, and says whether it did. Bitmaps are laid into it
    /// byte by byte, shifted to its first id, rather than decoded id by id
    /// and encoded again (dense lists hold most postings, and merging them
    /// was most of the build's merging); varint lists are decoded into
    /// `scratch` and their bits set. The result is what [`push_list`]
    /// makes of the united ids.
    ///
    /// [`push_list`]: Self::push_list
    fn push_as_bitmap(
        &mut self,
        trigram: Trigram,
        hits: &[(usize, &Segment, usize)],
        scratch: &mut Vec<u32>,
    ) -> bool {
        let mut count = 0u64;
        let mut first = u32::MAX;
        // The largest id known without decoding a varint list (a varint
        // list's first id is a bound below its last).
        let mut last_known = 0u32;
        let mut varints = false;
        for &(_, part, at) in hits {
            count += u64::from(part.counts[at]);
            let Some((head, last)) = part.bounds_at(at) else {
                return false;
            };
            first = first.min(head);
            match last {
                Some(last) => last_known = last_known.max(last),
                None => {
                    varints = true;
                    last_known = last_known.max(head);
                }
            }
        }
        let bitmap_bytes = |last: u32| bitmap_bytes(first, last);
        // `push_list` writes a bitmap when there are more ids than its
        // bytes: with the last id only bounded below, the bitmap can only
        // be larger, so the list may not be one.
        if first > last_known || count <= bitmap_bytes(last_known) as u64 {
            return false;
        }
        let mut last = last_known;
        scratch.clear();
        if varints {
            for &(_, part, at) in hits {
                if part.arena[part.starts[at] as usize] != AS_BITMAP {
                    part.decode_at(at, scratch);
                }
            }
            last = scratch.iter().copied().fold(last, u32::max);
            if count <= bitmap_bytes(last) as u64 {
                return false;
            }
        }
        let Ok(count) = u32::try_from(count) else {
            return false;
        };
        self.begin_list(trigram, count);
        self.arena.push(AS_BITMAP);
        self.arena.extend_from_slice(&first.to_le_bytes());
        let at = self.arena.len();
        self.arena.resize(at + bitmap_bytes(last) - 4, 0);
        let bits = &mut self.arena[at..];
        for &(_, part, list) in hits {
            // Each bitmap's bytes are more than 4 (`bounds_at` said so).
            let Some((&AS_BITMAP, rest)) = part.list_at(list).split_first() else {
                continue;
            };
            let head = bitmap_first(rest).wrapping_add(part.offset);
            let offset = (head - first) as usize;
            let (skip, shift) = (offset / 8, offset % 8);
            for (n, &byte) in rest[4..].iter().enumerate() {
                if let Some(into) = bits.get_mut(skip + n) {
                    *into |= byte << shift;
                }
                if shift > 0 {
                    // Bits past the list's last id are zero, so a byte
                    // past the end receives nothing.
                    if let Some(next) = bits.get_mut(skip + n + 1) {
                        *next |= byte >> (8 - shift);
                    }
                }
            }
        }
        for &id in scratch.iter() {
            let bit = (id - first) as usize;
            bits[bit / 8] |= 1 << (bit % 8);
        }
        // Lists that shared an id (not what callers pass) would set fewer
        // bits than their counts: then the ids are united the slow way.
        let set: u32 = bits.iter().map(|b| b.count_ones()).sum();
        if set != count {
            self.arena.truncate(at - 5);
            self.keys.pop();
            self.starts.pop();
            self.counts.pop();
            return false;
        }
        true
    }

    /// Appends the list of `trigram` that concatenates the lists `hits`
    /// (each holding ids above those of the one before) when all are
    /// varint lists and [`push_list`] would keep their concatenation one,
    /// and says whether it did. Deltas within a list stay as they are, so
    /// each list's bytes are copied after the first, whose first id is
    /// written again as its distance from the last id before: the bytes
    /// are those `push_list` makes of the ids, without decoding them into
    /// ids and encoding them again (what merging varint lists cost).
    ///
    /// [`push_list`]: Self::push_list
    /// `spans` is scratch: each list's first id, the bytes it takes, and
    /// its last id, found once.
    fn push_concatenated(
        &mut self,
        trigram: Trigram,
        hits: &[(usize, &Segment, usize)],
        spans: &mut Vec<(u32, usize, u32)>,
    ) -> bool {
        let mut count = 0u64;
        let mut bytes = 0usize;
        let mut bounds: Option<(u32, u32)> = None;
        spans.clear();
        for &(_, part, at) in hits {
            let Some((&AS_VARINTS, rest)) = part.list_at(at).split_first() else {
                return false;
            };
            let Some(((head, head_len), tail)) = varint_span(rest) else {
                return false;
            };
            let (head, tail) = (
                head.wrapping_add(part.offset),
                tail.wrapping_add(part.offset),
            );
            bytes += match bounds {
                None => rest.len() - head_len + varint_len(head),
                Some((_, last)) if head > last => rest.len() - head_len + varint_len(head - last),
                // Not above the list before: not a concatenation.
                Some(_) => return false,
            };
            bounds = Some((bounds.map_or(head, |(first, _)| first), tail));
            spans.push((head, head_len, tail));
            count += u64::from(part.counts[at]);
        }
        let Some((first, last)) = bounds else {
            return false;
        };
        let bitmap_bytes = bitmap_bytes(first, last);
        let Ok(count) = u32::try_from(count) else {
            return false;
        };
        if count as usize > bitmap_bytes || bytes > bitmap_bytes {
            return false;
        }
        self.begin_list(trigram, count);
        self.arena.push(AS_VARINTS);
        let mut before = 0;
        for (&(_, part, at), &(head, head_len, tail)) in hits.iter().zip(spans.iter()) {
            // The first list's first id is written whole (moved by its
            // offset), each later one's as its distance from the last id
            // before it.
            push_varint(head - before, &mut self.arena);
            self.arena
                .extend_from_slice(&part.list_at(at)[1 + head_len..]);
            before = tail;
        }
        true
    }

    /// The bytes of the list at `at`, its tag first.
    fn list_at(&self, at: usize) -> &[u8] {
        &self.arena[self.starts[at] as usize..self.starts[at + 1] as usize]
    }

    /// The first id of the list at `at` and, for a bitmap, its last (a
    /// varint list's last needs decoding); `None` for an empty or
    /// malformed list.
    fn bounds_at(&self, at: usize) -> Option<(u32, Option<u32>)> {
        match self.list_at(at).split_first()? {
            (&AS_BITMAP, rest) if rest.len() > 4 => {
                let first = bitmap_first(rest).wrapping_add(self.offset);
                let (index, &byte) = rest[4..].iter().enumerate().rev().find(|(_, b)| **b != 0)?;
                let last = first + (index as u32) * 8 + (7 - byte.leading_zeros());
                Some((first, Some(last)))
            }
            (&AS_VARINTS, rest) => {
                first_varint(rest).map(|(head, _)| (head.wrapping_add(self.offset), None))
            }
            _ => None,
        }
    }

    /// Appends the lists of a segment whose keys all lie above this one's.
    /// Both must be as merges make them, without an offset.
    pub(crate) fn append(&mut self, mut other: Segment) {
        if other.starts.is_empty() {
            return;
        }
        debug_assert!(self.offset == 0 && other.offset == 0);
        debug_assert!(
            self.keys
                .last()
                .zip(other.keys.first())
                .is_none_or(|(a, b)| a < b)
        );
        let base = u32::try_from(self.arena.len()).unwrap_or(u32::MAX);
        self.starts.pop();
        self.keys.append(&mut other.keys);
        self.counts.append(&mut other.counts);
        self.starts
            .extend(other.starts.iter().map(|&start| start + base));
        self.arena.append(&mut other.arena);
        self.keys.shrink_to_fit();
        self.starts.shrink_to_fit();
        self.counts.shrink_to_fit();
        self.arena.shrink_to_fit();
    }

    /// Adds `offset` to every id. A build reader numbers its files from 0;
    /// the table numbers them after the files of the readers before it.
    /// The lists are left as they are and the offset is added as they are
    /// read (copying them with each first id rewritten was a tenth of a
    /// second of the build's last step at a million files). A merge
    /// encodes its lists anew, with the offset in the ids.
    pub(crate) fn shift(&mut self, offset: u32) {
        self.offset = self.offset.saturating_add(offset);
    }

    /// A key near the middle of the segment's postings, to split the work
    /// of a merge in two.
    pub(crate) fn middle_key(&self) -> Option<Trigram> {
        let half = *self.starts.last()? / 2;
        let at = self.starts.partition_point(|&start| start < half);
        self.keys
            .get(at.min(self.keys.len().saturating_sub(1)))
            .copied()
    }
}

/// Writes the 64 bits of word `word` of a bitmap (as little-endian bytes,
/// those past its end left out).
fn lay_word(bits: &mut [u8], word: usize, value: u64) {
    let from = (word * 8).min(bits.len());
    let to = (from + 8).min(bits.len());
    bits[from..to].copy_from_slice(&value.to_le_bytes()[..to - from]);
}

fn push_varint(mut value: u32, arena: &mut Vec<u8>) {
    loop {
        let low = (value & 0x7F) as u8;
        value >>= 7;
        if value == 0 {
            arena.push(low);
            return;
        }
        arena.push(low | 0x80);
    }
}

/// The bytes a list of ids from `first` to `last` takes as a bitmap: the
/// first id, then a bit for each id up to the last.
fn bitmap_bytes(first: u32, last: u32) -> usize {
    4 + (last - first) as usize / 8 + 1
}

/// A bitmap list's first id, from its bytes after the tag (at least 4).
fn bitmap_first(rest: &[u8]) -> u32 {
    u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]])
}

/// The first varint of `bytes` and the bytes it takes; `None` when none
/// ends within the 5 bytes a `u32` takes.
fn first_varint(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value = 0u32;
    for (n, &byte) in bytes.iter().enumerate().take(5) {
        value |= u32::from(byte & 0x7F) << (7 * n);
        if byte & 0x80 == 0 {
            return Some((value, n + 1));
        }
    }
    None
}

/// How many bytes [`push_varint`] writes for `value`.
fn varint_len(value: u32) -> usize {
    (32 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// Of a varint list's bytes (without its tag): its first id and the
/// bytes that id takes, and its last id; `None` when the bytes end
/// within a varint or hold none.
fn varint_span(bytes: &[u8]) -> Option<((u32, usize), u32)> {
    let (head, head_len) = first_varint(bytes)?;
    // The sum of the deltas that follow, a varint at a time.
    let mut last = head;
    let mut value = 0u32;
    let mut shift = 0u32;
    for &byte in &bytes[head_len..] {
        value |= u32::from(byte & 0x7F).wrapping_shl(shift);
        if byte & 0x80 != 0 {
            shift += 7;
            continue;
        }
        last = last.wrapping_add(value);
        value = 0;
        shift = 0;
    }
    (shift == 0).then_some(((head, head_len), last))
}

/// Appends the ids of a varint list (without its tag), each moved up by
/// `offset`.
fn decode_varints(bytes: &[u8], offset: u32, out: &mut Vec<u32>) {
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
        last = if first {
            value.wrapping_add(offset)
        } else {
            last + value
        };
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
    if large.len() < small.len().saturating_mul(16) {
        // Lists of like sizes: one linear pass.
        let (mut i, mut j) = (0, 0);
        while i < small.len() && j < large.len() {
            match small[i].cmp(&large[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    out.push(small[i]);
                    i += 1;
                    j += 1;
                }
            }
        }
        return out;
    }
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
    fn dense_lists_become_bitmaps_and_read_back_the_same() {
        // Every third id from 1000: far denser than one in eight.
        let ids: Vec<u32> = (0..3000).map(|n| 1000 + n * 3).collect();
        let sparse: Vec<u32> = (0..50).map(|n| n * 5000).collect();
        let mut pairs: Vec<u64> = ids.iter().map(|&id| (1u64 << 32) | u64::from(id)).collect();
        pairs.extend(sparse.iter().map(|&id| (2u64 << 32) | u64::from(id)));
        let segment = Segment::from_pairs(pairs);
        // The bitmap takes about 9000 / 8 bytes; varints would take 3000.
        assert!(segment.arena.len() < 1300 + 200, "{}", segment.arena.len());
        let mut out = Vec::new();
        segment.decode_into(1, &mut out);
        assert_eq!(out, ids);
        out.clear();
        segment.decode_into(2, &mut out);
        assert_eq!(out, sparse);
        let merged = Segment::merge(&[&segment], |id| (id % 2 == 0).then_some(id));
        out.clear();
        merged.decode_into(1, &mut out);
        let even: Vec<u32> = ids.iter().copied().filter(|id| id % 2 == 0).collect();
        assert_eq!(out, even);
    }

    #[test]
    fn dense_lists_are_laid_bit_by_byte_into_the_bitmap_of_their_union() {
        // Three disjoint lists of one trigram: two bitmaps starting at ids
        // that are not a multiple of eight apart, and a short varint list.
        let evens: Vec<u32> = (0..400).map(|n| 1003 + n * 2).collect();
        let odds: Vec<u32> = (0..300).map(|n| 1110 + n * 2).collect();
        let few: Vec<u32> = vec![990, 1850, 1900];
        let parts: Vec<Segment> = [&evens, &odds, &few]
            .iter()
            .map(|ids| {
                Segment::from_pairs(ids.iter().map(|&id| (3u64 << 32) | u64::from(id)).collect())
            })
            .collect();
        assert_eq!(parts[0].arena[0], AS_BITMAP);
        assert_eq!(parts[2].arena[0], AS_VARINTS);
        let mut all: Vec<u32> = evens.iter().chain(&odds).chain(&few).copied().collect();
        all.sort_unstable();
        let mut want = Segment::default();
        want.push_list(3, &all);
        let hits: Vec<(usize, &Segment, usize)> =
            parts.iter().enumerate().map(|(n, s)| (n, s, 0)).collect();
        let mut got = Segment::default();
        assert!(got.push_as_bitmap(3, &hits, &mut Vec::new()));
        assert_eq!(got.arena, want.arena);
        assert_eq!(got.counts, want.counts);
        // Lists sharing ids are left to the slow way, with nothing written.
        let shared = [(0, &parts[0], 0), (1, &parts[0], 0)];
        let mut left = Segment::default();
        assert!(!left.push_as_bitmap(3, &shared, &mut Vec::new()));
        assert!(left.arena.is_empty() && left.keys.is_empty() && left.counts.is_empty());
        // A sparse union is not a bitmap.
        let sparse = [(0, &parts[2], 0)];
        assert!(!left.push_as_bitmap(3, &sparse, &mut Vec::new()));
    }

    #[test]
    fn set_operations() {
        assert_eq!(intersect(&[1, 3, 5, 9], &[3, 4, 9, 10]), vec![3, 9]);
        assert_eq!(intersect(&[], &[1]), Vec::<u32>::new());
        let large: Vec<u32> = (0..1000).collect();
        assert_eq!(intersect(&[5, 999, 2000], &large), vec![5, 999]);
        let evens: Vec<u32> = (0..1000).map(|n| n * 2).collect();
        let threes: Vec<u32> = (0..700).map(|n| n * 3).collect();
        let both: Vec<u32> = (0..334).map(|n| n * 6).collect();
        assert_eq!(intersect(&evens, &threes), both);
        assert_eq!(union(&[1, 3], &[2, 3, 4]), vec![1, 2, 3, 4]);
    }

    mod compressed {
        use super::super::*;
        use proptest::prelude::*;

        /// Sorted, distinct ids: runs of dense and sparse stretches, so
        /// both encodings (and the choice between them) are exercised.
        fn ids() -> impl Strategy<Value = Vec<u32>> {
            prop::collection::vec((1u32..2000, 1u32..4), 0..300).prop_map(|steps| {
                let mut at = 0u32;
                let mut out = Vec::new();
                for (gap, dense) in steps {
                    at += if dense == 1 { gap * 97 } else { gap % 3 + 1 };
                    out.push(at);
                }
                out
            })
        }

        fn pairs_of(lists: &[(u32, Vec<u32>)]) -> Vec<u64> {
            lists
                .iter()
                .flat_map(|(t, ids)| {
                    ids.iter()
                        .map(move |&id| (u64::from(*t) << 32) | u64::from(id))
                })
                .collect()
        }

        fn read(segment: &Segment, trigram: Trigram) -> Vec<u32> {
            let mut out = Vec::new();
            segment.decode_into(trigram, &mut out);
            out
        }

        proptest! {
            #[test]
            fn lists_read_back_exactly(lists in prop::collection::vec((0u32..64, ids()), 1..8)) {
                let segment = Segment::from_pairs(pairs_of(&lists));
                for trigram in 0..64 {
                    let mut want: Vec<u32> = lists
                        .iter()
                        .filter(|(t, _)| *t == trigram)
                        .flat_map(|(_, ids)| ids.iter().copied())
                        .collect();
                    want.sort_unstable();
                    want.dedup();
                    prop_assert_eq!(segment.count(trigram) as usize, want.len());
                    prop_assert_eq!(read(&segment, trigram), want);
                }
            }

            #[test]
            fn a_batch_makes_the_segment_of_its_pairs(
                files in prop::collection::vec(
                    (1u32..1500, prop::collection::vec(0u32..0x100_0000, 0..300)),
                    0..40,
                ),
                narrow in any::<bool>(),
            ) {
                // Files added in increasing id order, as a reader does;
                // trigrams spread over all three bytes of the key (or
                // crowded into one bucket, so its counting passes run).
                let mut batch = Batch::new();
                let mut collector = TrigramCollector::new();
                let mut found = Vec::new();
                let mut pairs: Vec<u64> = Vec::new();
                let mut id = 0u32;
                for (gap, trigrams) in &files {
                    id += gap;
                    let text: Vec<u8> = trigrams
                        .iter()
                        .flat_map(|&t| {
                            let t = if narrow { 0x41_0000 | (t & 0x3F3F) } else { t };
                            [(t >> 16) as u8, (t >> 8) as u8, t as u8]
                        })
                        .collect();
                    let n = collector.collect_into(&text, &mut found);
                    let unsorted = collector.collect_unsorted(&text);
                    prop_assert_eq!(&found[..n], unsorted.as_slice());
                    batch.add(id, &found[..n]);
                    pairs.extend(found[..n].iter().map(|&t| (u64::from(t) << 32) | u64::from(id)));
                }
                prop_assert_eq!(batch.pairs(), pairs.len());
                prop_assert_eq!(batch.files(), files.len());
                let want = Segment::from_pairs(pairs.clone());
                let got = batch.take_segment();
                prop_assert_eq!(&got.keys, &want.keys);
                prop_assert_eq!(&got.counts, &want.counts);
                prop_assert_eq!(&got.arena, &want.arena);
                // Emptied, it makes the next batch's segment alone.
                prop_assert_eq!(batch.pairs(), 0);
                batch.add(1, &[7]);
                prop_assert_eq!(batch.take_segment().postings(), 1);
            }

            #[test]
            fn groups_merged_in_halves_read_as_their_union(
                a in ids(),
                b in ids(),
                split in 1usize..4,
                middle in 0u32..70,
            ) {
                // Two readers: each one's ids cut into increasing segments.
                let lists = |ids: &[u32], n: usize| -> Vec<Segment> {
                    let per = ids.len() / n + 1;
                    ids.chunks(per)
                        .map(|part| {
                            Segment::from_pairs(pairs_of(&[
                                (5, part.to_vec()),
                                (60, part.iter().copied().filter(|id| id % 3 == 0).collect()),
                            ]))
                        })
                        .collect()
                };
                let (first, second) = (lists(&a, split), lists(&b, split + 1));
                let groups = vec![first.iter().collect::<Vec<_>>(), second.iter().collect()];
                let mut merged = Segment::merge_groups(&groups, 0..middle);
                merged.append(Segment::merge_groups(&groups, middle..Trigram::MAX));
                prop_assert_eq!(read(&merged, 5), union(&a, &b));
                let threes = |ids: &[u32]| ids.iter().copied().filter(|id| id % 3 == 0).collect::<Vec<_>>();
                prop_assert_eq!(read(&merged, 60), union(&threes(&a), &threes(&b)));
                prop_assert_eq!(merged.count(7), 0);
                let whole = Segment::merge_groups(&groups, 0..Trigram::MAX);
                prop_assert_eq!(merged.postings(), whole.postings());
                prop_assert_eq!(merged.heap_bytes(), whole.heap_bytes());
                // Bitmaps laid into bitmaps give the bytes that encoding
                // the united ids gives (ids may be shared here, which the
                // build never does: those are united the slow way).
                let united = union(&a, &b);
                let canonical = Segment::from_pairs(pairs_of(&[
                    (5, united.clone()),
                    (60, threes(&united)),
                ]));
                prop_assert_eq!(&whole.keys, &canonical.keys);
                prop_assert_eq!(&whole.counts, &canonical.counts);
                prop_assert_eq!(&whole.arena, &canonical.arena);
            }

            #[test]
            fn disjoint_lists_merge_to_the_encoding_of_their_union(
                lists in prop::collection::vec((ids(), 1usize..5), 1..4),
            ) {
                // As the build has them: reader r holds ids congruent to r
                // modulo the number of readers (distinct files), cut into
                // segments of increasing ranges, whose lists are bitmaps
                // or varints by density.
                let readers = lists.len() as u32;
                let mut nines: Vec<u32> = Vec::new();
                let groups: Vec<Vec<Segment>> = lists
                    .iter()
                    .enumerate()
                    .map(|(r, (ids, split))| {
                        let mine: Vec<u32> = ids.iter().map(|id| id * readers + r as u32).collect();
                        nines.extend(&mine);
                        let per = mine.len() / split + 1;
                        mine.chunks(per)
                            .map(|part| {
                                let odd: Vec<u32> =
                                    part.iter().copied().filter(|id| id % 2 == 1).collect();
                                Segment::from_pairs(pairs_of(&[(9, part.to_vec()), (10, odd)]))
                            })
                            .collect()
                    })
                    .collect();
                nines.sort_unstable();
                let odd: Vec<u32> = nines.iter().copied().filter(|id| id % 2 == 1).collect();
                let canonical = Segment::from_pairs(pairs_of(&[(9, nines.clone()), (10, odd)]));
                let refs: Vec<Vec<&Segment>> = groups.iter().map(|g| g.iter().collect()).collect();
                let whole = Segment::merge_groups(&refs, 0..Trigram::MAX);
                prop_assert_eq!(&whole.keys, &canonical.keys);
                prop_assert_eq!(&whole.counts, &canonical.counts);
                prop_assert_eq!(&whole.arena, &canonical.arena);
                prop_assert_eq!(read(&whole, 9), nines);
            }

            #[test]
            fn shifted_segments_read_back_their_ids_past_the_offset(
                a in ids(),
                b in ids(),
                offset in prop::sample::select(vec![0u32, 1, 127, 128, 300, 70_000, 1 << 21]),
            ) {
                // A second reader's segment, numbered from 0, shifted past
                // the first's files, then the two laid end to end: the
                // lists of encoding all the ids at once.
                let first_count = a.last().map_or(0, |&last| last + 1);
                let first = Segment::from_pairs(pairs_of(&[(5, a.clone()), (8, a.clone())]));
                let mut second = Segment::from_pairs(pairs_of(&[(5, b.clone()), (6, b.clone())]));
                second.shift(first_count + offset);
                let moved: Vec<u32> = b.iter().map(|&id| id + first_count + offset).collect();
                prop_assert_eq!(read(&second, 5), moved.clone());
                prop_assert_eq!(second.count(6) as usize, b.len());
                let mut all = a.clone();
                all.extend(&moved);
                let canonical = Segment::from_pairs(pairs_of(&[
                    (5, all.clone()),
                    (6, moved.clone()),
                    (8, a.clone()),
                ]));
                let whole = Segment::merge_groups(&[vec![&first, &second]], 0..Trigram::MAX);
                prop_assert_eq!(&whole.keys, &canonical.keys);
                prop_assert_eq!(&whole.counts, &canonical.counts);
                prop_assert_eq!(&whole.arena, &canonical.arena);
                // A shifted segment merged alone, and first: its first ids
                // are encoded with the offset in them.
                let alone = Segment::merge_groups(&[vec![&second]], 0..Trigram::MAX);
                let moved_alone = Segment::from_pairs(pairs_of(&[(5, moved.clone()), (6, moved)]));
                prop_assert_eq!(&alone.arena, &moved_alone.arena);
                prop_assert_eq!(&alone.counts, &moved_alone.counts);
            }

            #[test]
            fn folded_blocks_find_the_trigrams_of_the_text(
                text in prop::collection::vec(prop::sample::select(b"aAbBcC xyz\n".to_vec()), 0..10_000),
            ) {
                // Texts longer than a folding block: windows across the
                // blocks' edges are found too.
                let mut want: Vec<Trigram> = text
                    .windows(3)
                    .map(|w| key(fold(w[0]), fold(w[1]), fold(w[2])))
                    .collect();
                want.sort_unstable();
                want.dedup();
                let mut collector = TrigramCollector::new();
                prop_assert_eq!(collector.collect(&text), want);
            }

            #[test]
            fn unsorted_collection_finds_the_same_trigrams(text in prop::collection::vec(any::<u8>(), 0..200)) {
                let mut collector = TrigramCollector::new();
                let mut unsorted = collector.collect_unsorted(&text);
                unsorted.sort_unstable();
                prop_assert_eq!(unsorted, collector.collect(&text));
            }

            #[test]
            fn interleaved_segments_merge_to_their_union(
                a in ids(),
                b in ids(),
                drop_every in 2u32..7,
            ) {
                // Two readers' segments: ids interleave.
                let first = Segment::from_pairs(pairs_of(&[(5, a.clone())]));
                let second = Segment::from_pairs(pairs_of(&[(5, b.clone()), (6, b.clone())]));
                let merged = Segment::merge(&[&first, &second], |id| (id % drop_every != 0).then_some(id));
                let mut want = union(&a, &b);
                want.retain(|id| id % drop_every != 0);
                prop_assert_eq!(read(&merged, 5), want);
                let mut only_b = b.clone();
                only_b.retain(|id| id % drop_every != 0);
                prop_assert_eq!(read(&merged, 6), only_b);
            }
        }
    }
}
