//! Finding the regions of the file most like old_string, in bounded work.
//!
//! Start points come from two cheap signals: lines of old_string that occur
//! (loosely) few times in the file vote for where a copy of it would start,
//! and a per-line score of shared character trigrams, summed over windows of
//! old_string's height, ranks the rest. Only a few start points are then
//! scored for real, each grown or shrunk by some lines, so a call that a
//! formatter split over more lines (or joined onto fewer) is found whole.

use std::collections::HashMap;
use std::time::Duration;

use similar::TextDiff;

/// A region of the file and how much it resembles old_string.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Near {
    /// 0-based, inclusive.
    pub first: usize,
    pub last: usize,
    pub similarity: f32,
}

impl Near {
    pub(crate) fn overlaps(&self, first: usize, last: usize) -> bool {
        self.first <= last && first <= self.last
    }
}

/// Lines occurring more often than this in the file cast no vote.
const RARE: usize = 32;
/// Start points taken from each signal.
const STARTS: usize = 6;
/// Characters of old_string plus region above which similarity is judged
/// by words rather than characters, and words above which by lines. Myers'
/// diff costs the size times the difference, so these keep one score in
/// the tens of milliseconds at worst and the scores deterministic (the
/// timeout below is only a safety net).
const CHAR_LIMIT: usize = 4 * 1024;
const WORD_LIMIT: usize = 6 * 1024;
/// Time budget of one similarity score.
const SCORE_TIMEOUT: Duration = Duration::from_millis(500);
/// Total bytes compared by one search; past it, no more windows are scored.
const BUDGET: usize = 8 * 1024 * 1024;

/// Preference given to regions whose brackets balance like old_string's.
const BALANCE_BONUS: f32 = 0.05;

/// Bits of the trigram sieve (collisions only make a line look a bit better).
const SIEVE_BITS: usize = 1 << 20;

/// The trigrams of old_string's loose lines.
pub(crate) struct Sieve {
    bits: Vec<u64>,
}

fn trigram_slot(window: &[u8]) -> usize {
    let hash = (u32::from(window[0]) << 16) ^ (u32::from(window[1]) << 8) ^ u32::from(window[2]);
    (hash.wrapping_mul(2_654_435_761) >> 12) as usize % SIEVE_BITS
}

impl Sieve {
    pub(crate) fn new<'a>(lines: impl IntoIterator<Item = &'a str>) -> Sieve {
        let mut bits = vec![0u64; SIEVE_BITS / 64];
        for line in lines {
            for window in line.as_bytes().windows(3) {
                let slot = trigram_slot(window);
                bits[slot / 64] |= 1 << (slot % 64);
            }
        }
        Sieve { bits }
    }

    /// How many trigrams of a loose line old_string shares (with repeats).
    pub(crate) fn score(&self, loose: &str) -> u32 {
        loose
            .as_bytes()
            .windows(3)
            .filter(|w| {
                let slot = trigram_slot(w);
                self.bits[slot / 64] & (1 << (slot % 64)) != 0
            })
            .count() as u32
    }
}

/// What the search needs to know of the file and of old_string.
pub(crate) struct Inputs<'a> {
    /// Loose-line hashes of the file (0 for blank lines).
    pub hashes: &'a [u64],
    /// Trigram score of each file line.
    pub scores: &'a [u32],
    /// old_string's loose lines and their hashes.
    pub old_keys: &'a [String],
    pub old_hashes: &'a [u64],
    /// Opening minus closing brackets of each file line, and of old_string.
    pub balance: &'a [i64],
    pub old_balance: i64,
    /// The loose content of a file line.
    pub key: &'a dyn Fn(usize) -> String,
}

/// Opening minus closing brackets in a line.
pub(crate) fn balance(line: &str) -> i64 {
    line.bytes()
        .map(|b| match b {
            b'(' | b'[' | b'{' => 1,
            b')' | b']' | b'}' => -1,
            _ => 0,
        })
        .sum()
}

/// Similarity of two texts, 0 to 1: characters in common over all, with
/// whitespace left out (so line breaks and spacing do not count).
pub(crate) fn similarity(old: &[String], file: &[String]) -> f32 {
    let squeeze = |lines: &[String]| -> String {
        lines
            .iter()
            .flat_map(|l| l.chars().filter(|c| !c.is_whitespace()))
            .collect()
    };
    let (a, b) = (squeeze(old), squeeze(file));
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let mut config = TextDiff::configure();
    config.timeout(SCORE_TIMEOUT);
    let words = |lines: &[String]| lines.iter().map(|l| l.split(' ').count()).sum::<usize>();
    if a.len() + b.len() <= CHAR_LIMIT {
        config.diff_chars(&a, &b).ratio()
    } else if words(old) + words(file) <= WORD_LIMIT {
        let (a, b) = (old.join(" "), file.join(" "));
        config.diff_words(&a, &b).ratio()
    } else {
        let (a, b) = (old.join("\n"), file.join("\n"));
        config.diff_lines(&a, &b).ratio()
    }
}

/// Similarity of two texts as written, whitespace included, 0 to 1.
pub(crate) fn raw_similarity(old: &str, file: &str) -> f32 {
    let mut config = TextDiff::configure();
    config.timeout(SCORE_TIMEOUT);
    if old.len() + file.len() <= CHAR_LIMIT {
        config.diff_chars(old, file).ratio()
    } else if old.split_whitespace().count() + file.split_whitespace().count() <= WORD_LIMIT / 2 {
        // Words and the whitespace between them are tokens alike.
        config.diff_words(old, file).ratio()
    } else {
        config.diff_lines(old, file).ratio()
    }
}

/// The regions most like old_string, best first, not overlapping one
/// another nor `exclude` (0-based inclusive lines), each at least `min`
/// similar; at most `max`.
pub(crate) fn search(
    inputs: &Inputs<'_>,
    exclude: Option<(usize, usize)>,
    min: f32,
    max: usize,
) -> Vec<Near> {
    let total = inputs.hashes.len();
    let height = inputs.old_keys.len().max(1);
    if total == 0 {
        return Vec::new();
    }
    let starts = start_points(inputs, height.min(total));
    let mut budget = BUDGET;
    let mut cache: HashMap<(usize, usize), f32> = HashMap::new();
    let mut score = |first: usize, last: usize, budget: &mut usize| -> Option<f32> {
        if let Some(&s) = cache.get(&(first, last)) {
            return Some(s);
        }
        let lines: Vec<String> = (first..=last).map(|i| (inputs.key)(i)).collect();
        let size: usize = lines.iter().map(String::len).sum::<usize>()
            + inputs.old_keys.iter().map(String::len).sum::<usize>();
        if size > *budget {
            return None;
        }
        *budget -= size;
        let s = similarity(inputs.old_keys, &lines);
        cache.insert((first, last), s);
        Some(s)
    };
    let reach = if height > 200 { 3 } else { height.clamp(6, 40) };
    let mut found: Vec<Near> = Vec::new();
    for start in starts {
        let mut best = Near {
            first: start,
            last: (start + height - 1).min(total - 1),
            similarity: 0.0,
        };
        // Extents are chosen on similarity, with a small preference for
        // regions whose brackets balance as old_string's do, so that a
        // call split over lines is taken whole rather than cut after its
        // best-matching half.
        let mut best_key = f32::MIN;
        let mut consider = |first: usize, last: usize, best: &mut Near, budget: &mut usize| {
            if let Some(s) = score(first, last, budget) {
                let balanced =
                    (first..=last).map(|i| inputs.balance[i]).sum::<i64>() == inputs.old_balance;
                let key = s + if balanced { BALANCE_BONUS } else { 0.0 };
                if key > best_key {
                    best_key = key;
                    *best = Near {
                        first,
                        last,
                        similarity: s,
                    };
                }
            }
        };
        // Slide (the start itself first, so equal neighbours stay apart),
        // then grow or shrink at the end, then at the start.
        let first_tried = (start + height - 1).min(total - 1);
        consider(start, first_tried, &mut best, &mut budget);
        for first in start.saturating_sub(2)..=(start + 2).min(total - 1) {
            consider(
                first,
                (first + height - 1).min(total - 1),
                &mut best,
                &mut budget,
            );
        }
        let first = best.first;
        let shortest = (first + height - 1).saturating_sub(3).max(first);
        for last in shortest..=(first + height - 1 + reach).min(total - 1) {
            consider(first, last, &mut best, &mut budget);
        }
        let last = best.last;
        for first in best.first.saturating_sub(reach)..=(best.first + 3).min(last) {
            consider(first, last, &mut best, &mut budget);
        }
        if best.similarity >= min {
            found.push(best);
        }
    }
    found.sort_by(|a, b| {
        b.similarity
            .total_cmp(&a.similarity)
            .then(a.first.cmp(&b.first))
            .then(a.last.cmp(&b.last))
    });
    let mut kept: Vec<Near> = Vec::new();
    for near in found {
        if exclude.is_some_and(|(f, l)| near.overlaps(f, l)) {
            continue;
        }
        if kept.iter().any(|k| k.overlaps(near.first, near.last)) {
            continue;
        }
        kept.push(near);
        if kept.len() == max {
            break;
        }
    }
    kept
}

/// Where copies of old_string would most likely start.
fn start_points(inputs: &Inputs<'_>, height: usize) -> Vec<usize> {
    let total = inputs.hashes.len();
    // Votes of rare lines.
    let mut wanted: HashMap<u64, Vec<usize>> = HashMap::new();
    for (index, &hash) in inputs.old_hashes.iter().enumerate() {
        if hash != 0 {
            let list = wanted.entry(hash).or_default();
            if list.len() < RARE {
                list.push(index);
            }
        }
    }
    let mut seen: HashMap<u64, Vec<usize>> = HashMap::new();
    for (line, hash) in inputs.hashes.iter().enumerate() {
        if wanted.contains_key(hash) {
            let list = seen.entry(*hash).or_default();
            if list.len() <= RARE {
                list.push(line);
            }
        }
    }
    let mut votes: HashMap<usize, u32> = HashMap::new();
    for (hash, lines) in &seen {
        if lines.len() > RARE {
            continue;
        }
        for &index in &wanted[hash] {
            for &line in lines {
                *votes.entry(line.saturating_sub(index)).or_default() += 1;
            }
        }
    }
    let mut by_votes: Vec<(u32, usize)> = votes.into_iter().map(|(s, v)| (v, s)).collect();
    by_votes.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut starts: Vec<usize> = by_votes.iter().take(STARTS).map(|&(_, s)| s).collect();

    // Windows sharing the most trigrams.
    let mut prefix = Vec::with_capacity(total + 1);
    prefix.push(0u64);
    for &score in inputs.scores {
        let last = prefix.last().copied().unwrap_or(0);
        prefix.push(last + u64::from(score));
    }
    let mut windows: Vec<(u64, usize)> = (0..=total - height)
        .map(|first| (prefix[first + height] - prefix[first], first))
        .filter(|&(score, _)| score > 0)
        .collect();
    let order = |a: &(u64, usize), b: &(u64, usize)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
    if windows.len() > STARTS * 8 {
        windows.select_nth_unstable_by(STARTS * 8, order);
        windows.truncate(STARTS * 8);
    }
    windows.sort_by(order);
    // Keep the best windows that are not next to one already kept.
    let mut taken = 0;
    for (_, first) in windows {
        if taken == STARTS {
            break;
        }
        if starts.iter().any(|&s| s.abs_diff(first) < height.max(2)) {
            continue;
        }
        starts.push(first);
        taken += 1;
    }
    starts.retain(|&s| s < total);
    starts.sort_unstable();
    starts.dedup();
    starts
}
