//! Applying a file block's hunks to a file's bytes.
//!
//! Lines are compared without their terminators and without one trailing
//! carriage return, so a CRLF file matches an LF patch and vice versa. The
//! search for a hunk's old lines uses a rolling hash over per-line hashes,
//! so each candidate position costs O(1) and a hunk costs O(its length +
//! the distance searched).
//!
//! The distance searched is bounded for the whole file, so a patch cannot
//! make the search quadratic (thousands of hunks each sent across the file
//! by line numbers that jump back and forth):
//!
//! - Hunks apply in file order. A hunk whose stated start lies before the
//!   end of an earlier hunk's stated range has line numbers that say
//!   nothing about its place; it is searched for forward from the end of
//!   the previous hunk, nearest first. All such searches together cover the
//!   file at most once.
//! - The other hunks search around their stated line (shifted by the
//!   previous hunk's offset). For hunks whose stated lines ascend, all those
//!   searches together cover the file a few times at most; past
//!   [`search_budget`] positions for one file, the hunk fails instead of
//!   searching on.

use crate::error::{ExpectedLines, PatchError};
use crate::model::{Hunk, LineKind};
use crate::report::HunkOffset;

pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";
pub(crate) const MOD: u64 = (1 << 61) - 1;
pub(crate) const BASE: u64 = 0x1F3D_5B79_A3C1_E5F7 % MOD;

/// The result of applying hunks to one file's content.
pub(crate) struct Applied {
    /// The new content.
    pub data: Vec<u8>,
    /// Hunks that applied away from their stated line.
    pub offsets: Vec<HunkOffset>,
    /// Number of lines in the new content (not counting a BOM).
    pub lines: usize,
    /// Codex format: the loosest match level used, when not exact.
    pub fuzz: Option<crate::report::MatchLevel>,
}

/// One line of a file: byte offsets into its body.
#[derive(Clone, Copy)]
pub(crate) struct Span {
    pub start: usize,
    /// End of the content, before the `\n` (a `\r` before it is content).
    pub content_end: usize,
    /// End including the terminator.
    pub end: usize,
}

/// The lines of `body`; a final line without terminator counts, an empty
/// remainder after the last `\n` does not.
pub(crate) fn split_lines(body: &[u8]) -> Vec<Span> {
    let mut spans = Vec::with_capacity(memchr::memchr_iter(b'\n', body).count() + 1);
    let mut start = 0;
    for i in memchr::memchr_iter(b'\n', body) {
        spans.push(Span {
            start,
            content_end: i,
            end: i + 1,
        });
        start = i + 1;
    }
    if start < body.len() {
        spans.push(Span {
            start,
            content_end: body.len(),
            end: body.len(),
        });
    }
    spans
}

/// A line without one trailing carriage return: what lines are compared by.
pub(crate) fn key(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

pub(crate) fn mulmod(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    let lo = (p as u64) & MOD;
    let hi = (p >> 61) as u64;
    let mut s = lo + hi;
    while s >= MOD {
        s -= MOD;
    }
    s
}

pub(crate) fn addmod(a: u64, b: u64) -> u64 {
    let s = a + b;
    if s >= MOD { s - MOD } else { s }
}

pub(crate) fn submod(a: u64, b: u64) -> u64 {
    if a >= b { a - b } else { a + MOD - b }
}

pub(crate) fn powmod(mut base: u64, mut exp: usize) -> u64 {
    let mut acc = 1;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = mulmod(acc, base);
        }
        base = mulmod(base, base);
        exp >>= 1;
    }
    acc
}

pub(crate) fn line_hash(line: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key(line) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h % MOD
}

pub(crate) fn strip_bom(has_bom: bool, line: &[u8]) -> &[u8] {
    if has_bom {
        line.strip_prefix(BOM).unwrap_or(line)
    } else {
        line
    }
}

/// Output buffer that keeps track of whether its last line is terminated.
pub(crate) struct Out {
    pub data: Vec<u8>,
    pub unterminated: bool,
    pub lines: usize,
}

impl Out {
    /// Appends one line (with its terminator, if any).
    pub fn line(&mut self, bytes: &[u8], term: &[u8], fix_eol: &[u8]) {
        if self.unterminated {
            self.data.extend_from_slice(fix_eol);
        }
        self.data.extend_from_slice(bytes);
        self.data.extend_from_slice(term);
        self.unterminated = term.is_empty();
        self.lines += 1;
    }

    /// Appends whole original lines.
    pub fn raw(&mut self, bytes: &[u8], count: usize, fix_eol: &[u8]) {
        if count == 0 {
            return;
        }
        if self.unterminated {
            self.data.extend_from_slice(fix_eol);
        }
        self.data.extend_from_slice(bytes);
        self.unterminated = !bytes.ends_with(b"\n");
        self.lines += count;
    }
}

/// Applies `hunks` (in order) to `original`.
pub(crate) fn apply_hunks(
    path: &str,
    original: &[u8],
    hunks: &[Hunk],
) -> Result<Applied, PatchError> {
    let has_bom = original.starts_with(BOM);
    let (bom, body) = original.split_at(if has_bom { BOM.len() } else { 0 });

    let spans = split_lines(body);
    let n = spans.len();
    let content = |i: usize| &body[spans[i].start..spans[i].content_end];
    let raw = |i: usize| &body[spans[i].start..spans[i].end];
    let last_unterminated = spans.last().is_some_and(|s| s.content_end == s.end);

    // prefix[i] = hash of lines[0..i], computed lazily: only a hunk that
    // is not at its expected place needs it, and then only up to where the
    // search reaches.
    let mut prefix = Vec::new();
    prefix.push(0u64);
    let ensure_prefix = |prefix: &mut Vec<u64>, upto: usize| {
        while prefix.len() <= upto {
            let i = prefix.len() - 1;
            let h = addmod(mulmod(prefix[i], BASE), line_hash(content(i)));
            prefix.push(h);
        }
    };

    let mut out = Out {
        data: Vec::with_capacity(original.len() + original.len() / 8 + 64),
        unterminated: false,
        lines: 0,
    };
    out.data.extend_from_slice(bom);
    let mut cursor = 0usize;
    let mut last_offset: isize = 0;
    let mut offsets = Vec::new();
    // The end (exclusive, 1-based) of the furthest stated old range so far.
    let mut stated_end = 0usize;
    let mut budget = search_budget(n, hunks.len());

    for (idx, hunk) in hunks.iter().enumerate() {
        let old: Vec<&[u8]> = hunk.old_lines().map(|l| strip_bom(has_bom, l)).collect();
        let k = old.len();
        let pattern = old
            .iter()
            .fold(0, |acc, l| addmod(mulmod(acc, BASE), line_hash(l)));
        let shift = powmod(BASE, k);
        let direct = |p: usize| {
            old.iter()
                .enumerate()
                .all(|(j, l)| key(content(p + j)) == key(l))
                && (!hunk.old_missing_newline || (p + k == n && last_unterminated))
        };
        let mut matches_at = |p: usize| {
            ensure_prefix(&mut prefix, p + k);
            submod(prefix[p + k], mulmod(prefix[p], shift)) == pattern && direct(p)
        };

        let expected = if k == 0 {
            hunk.old_start
        } else {
            hunk.old_start.saturating_sub(1)
        };
        let leading = hunk
            .lines
            .iter()
            .take_while(|l| l.kind == LineKind::Context)
            .count();
        let trailing = hunk
            .lines
            .iter()
            .rev()
            .take_while(|l| l.kind == LineKind::Context)
            .count();
        let has_change = leading < hunk.lines.len();
        let must_begin = has_change && leading == 0 && trailing > 0 && hunk.old_start <= 1;
        let must_end = (has_change && trailing == 0 && leading > 0) || hunk.old_missing_newline;

        let fail = |reason: String| PatchError::HunkFailed {
            path: path.to_owned(),
            hunk: idx + 1,
            header: hunk.header(),
            reason,
            expected: ExpectedLines::new(hunk.old_lines()),
        };

        if cursor + k > n {
            return Err(fail(if cursor == 0 {
                format!("the file has only {n} line(s)")
            } else {
                format!("only {} line(s) remain after the previous hunk", n - cursor)
            }));
        }
        let (lo, hi) = (cursor, n - k);
        // A hunk with context on one side only was cut off by the start or
        // end of the file: that place is tried first. Then, as for every
        // hunk, the nearest exact match around the expected line.
        let anchor = if must_begin {
            Some(0)
        } else if must_end {
            Some(hi)
        } else {
            None
        };
        // The stated range, as [first, end) in 1-based lines; an insertion
        // after line s occupies the empty range at s + 1.
        let (first, end) = if k == 0 {
            let at = hunk.old_start.saturating_add(1);
            (at, at)
        } else {
            (
                hunk.old_start,
                hunk.old_start.saturating_add(hunk.old_count),
            )
        };
        let in_order = first >= stated_end;
        stated_end = stated_end.max(end);
        let c = if in_order {
            let center = (expected as isize).saturating_add(last_offset);
            center.clamp(lo as isize, hi as isize) as usize
        } else {
            lo
        };
        let mut found = anchor
            .filter(|p| *p >= lo && direct(*p))
            .or_else(|| direct(c).then_some(c));
        let mut d = 0usize;
        let mut exhausted = false;
        while found.is_none() {
            let up = c.checked_add(d).filter(|p| *p <= hi);
            let down = c.checked_sub(d).filter(|p| *p >= lo && d > 0);
            if up.is_none() && down.is_none() {
                break;
            }
            if budget == 0 {
                exhausted = true;
                break;
            }
            budget -= 1;
            if let Some(p) = up
                && matches_at(p)
            {
                found = Some(p);
                break;
            }
            if let Some(p) = down
                && matches_at(p)
            {
                found = Some(p);
                break;
            }
            d += 1;
        }
        let Some(found) = found else {
            if exhausted {
                return Err(fail(format!(
                    "gave up searching: the line numbers of this patch's hunks are so far from where their lines are that finding them would take too long (the search around line {} stopped); correct the @@ line numbers, or split the patch",
                    c + 1
                )));
            }
            let mut reason = if cursor == 0 {
                "the expected lines were not found in the file".to_owned()
            } else {
                "the expected lines were not found after the previous hunk".to_owned()
            };
            if hunk.old_missing_newline {
                reason.push_str(" (at its end, without a final newline)");
            }
            return Err(fail(reason));
        };

        // Line terminator for inserted lines.
        let verbatim = hunk.lines.iter().any(|l| l.content.ends_with(b"\r"));
        let eol: &[u8] = if verbatim {
            b"\n"
        } else {
            let (mut crlf, mut lf) = (0usize, 0usize);
            for i in found..found + k {
                let r = raw(i);
                if r.ends_with(b"\r\n") {
                    crlf += 1;
                } else if r.ends_with(b"\n") {
                    lf += 1;
                }
            }
            let crlf_file = if crlf + lf > 0 {
                crlf > lf
            } else {
                found
                    .checked_sub(1)
                    .or((found < n).then_some(found))
                    .is_some_and(|i| raw(i).ends_with(b"\r\n"))
            };
            if crlf_file { b"\r\n" } else { b"\n" }
        };

        // Lines before the hunk, unchanged.
        if found > cursor {
            out.raw(
                &body[spans[cursor].start..spans[found - 1].end],
                found - cursor,
                eol,
            );
        }
        let mut old_i = 0;
        let mut last_term = 0;
        for line in &hunk.lines {
            match line.kind {
                LineKind::Context => {
                    let r = raw(found + old_i);
                    out.line(r, b"", eol);
                    out.unterminated = !r.ends_with(b"\n");
                    last_term = if r.ends_with(b"\r\n") {
                        2
                    } else {
                        usize::from(r.ends_with(b"\n"))
                    };
                    old_i += 1;
                }
                LineKind::Delete => old_i += 1,
                LineKind::Insert => {
                    out.line(strip_bom(has_bom, &line.content), eol, eol);
                    last_term = eol.len();
                }
            }
        }
        if hunk.new_missing_newline && !out.unterminated {
            let len = out.data.len().saturating_sub(last_term);
            out.data.truncate(len);
            out.unterminated = true;
        }

        cursor = found + k;
        let offset = found as isize - expected as isize;
        if offset != 0 {
            offsets.push(HunkOffset {
                hunk: idx + 1,
                offset,
            });
        }
        last_offset = offset;
    }

    if cursor < n {
        out.raw(&body[spans[cursor].start..], n - cursor, b"\n");
    }
    Ok(Applied {
        data: out.data,
        offsets,
        lines: out.lines,
        fuzz: None,
    })
}

/// How many candidate positions the hunks of one file may try in all: a
/// few passes over the file (hunks in file order need at most about four:
/// each search reaches at most as far as the stated lines or the found
/// places moved since the previous hunk, both ways) plus a little per hunk.
pub(crate) fn search_budget(lines: usize, hunks: usize) -> usize {
    lines
        .saturating_add(1)
        .saturating_mul(8)
        .saturating_add(hunks.saturating_mul(4))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(lines: &[&[u8]]) -> u64 {
        lines
            .iter()
            .fold(0, |acc, l| addmod(mulmod(acc, BASE), line_hash(l)))
    }

    #[test]
    fn window_hash_matches_direct_hash() {
        let lines: Vec<&[u8]> = vec![b"a", b"b\r", b"", b"c", b"a", b"b"];
        let mut prefix = vec![0u64];
        for l in &lines {
            let h = addmod(mulmod(*prefix.last().unwrap(), BASE), line_hash(l));
            prefix.push(h);
        }
        for k in 0..=lines.len() {
            let shift = powmod(BASE, k);
            for p in 0..=lines.len() - k {
                let window = submod(prefix[p + k], mulmod(prefix[p], shift));
                assert_eq!(window, naive(&lines[p..p + k]), "p={p} k={k}");
            }
        }
        // A trailing CR does not change a line's hash.
        assert_eq!(line_hash(b"b\r"), line_hash(b"b"));
    }

    #[test]
    fn modular_arithmetic_stays_reduced() {
        let big = MOD - 1;
        assert_eq!(mulmod(big, big), 1);
        assert_eq!(addmod(big, 1), 0);
        assert_eq!(submod(0, 1), big);
        assert_eq!(powmod(2, 61), 1);
    }
}
