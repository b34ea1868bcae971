//! From a regular expression to a trigram query, and the query's answer.
//!
//! The translation follows the analysis Russ Cox published for Google Code
//! Search: every node of the syntax tree is summarised by whether it can
//! match the empty string, the exact set of strings it matches (while that
//! set is small), otherwise the sets of possible prefixes and suffixes, and
//! a query every match must satisfy. Concatenation also looks at the
//! strings spanning the boundary between two pieces, so a required literal
//! in the middle of a pattern counts, not only its ends. The result is
//! conservative: a file whose trigrams fail the query cannot hold a match.
//!
//! Written here rather than taken from a crate: `regex-syntax`'s literal
//! extractor only yields prefixes or suffixes, and the indexing crates of
//! the ecosystem do not expose their translation as a library.
//!
//! All strings are folded with [`fold`] as soon as they leave the syntax
//! tree, so the query matches the folded index. Case-insensitive patterns
//! need nothing special: `regex-syntax` has already turned `(?i)k` into the
//! class `[Kk\u{212A}]`, whose members (the Kelvin sign's three UTF-8 bytes
//! included) become alternatives.

use std::collections::BTreeSet;

use regex_syntax::hir::{Class, Hir, HirKind};

use crate::postings::{Trigram, fold, intersect, key, union};

/// The most strings an exact set keeps before it is turned into a query
/// plus prefix and suffix sets.
const MAX_EXACT: usize = 7;
/// The most strings a prefix or suffix set keeps (room for the 8 case
/// variants of a 3-letter word, had they not been folded already).
const MAX_SET: usize = 20;
/// A character class with more members than this matches "any character"
/// as far as the index is concerned.
const MAX_CLASS: u32 = 100;
/// A query with more nodes than this is given up on (a full scan).
const MAX_QUERY_NODES: usize = 4096;
/// Once an AND has narrowed the candidates to this few files, its other
/// trigram lists are not read: skipping terms only adds candidates.
const SMALL_ENOUGH: usize = 16;

/// A boolean query over trigrams.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Query {
    /// Every file.
    All,
    /// No file.
    None,
    /// Files holding this (folded) trigram.
    Trigram(u32),
    /// Files satisfying every part.
    And(Vec<Query>),
    /// Files satisfying some part.
    Or(Vec<Query>),
}

/// The parts of two operands of one operator, an operand of the same
/// operator (`inner` gives its parts) spliced in, sorted and without
/// repeats.
fn flattened(
    operands: [Query; 2],
    inner: impl Fn(Query) -> Result<Vec<Query>, Query>,
) -> Vec<Query> {
    let mut parts = Vec::new();
    for q in operands {
        match inner(q) {
            Ok(nested) => parts.extend(nested),
            Err(q) => parts.push(q),
        }
    }
    parts.sort();
    parts.dedup();
    parts
}

impl Query {
    fn and(self, other: Query) -> Query {
        match (self, other) {
            (Query::None, _) | (_, Query::None) => Query::None,
            (Query::All, q) | (q, Query::All) => q,
            (a, b) if a == b => a,
            (a, b) => Query::And(flattened([a, b], |q| match q {
                Query::And(inner) => Ok(inner),
                q => Err(q),
            })),
        }
    }

    fn or(self, other: Query) -> Query {
        match (self, other) {
            (Query::All, _) | (_, Query::All) => Query::All,
            (Query::None, q) | (q, Query::None) => q,
            (a, b) if a == b => a,
            (a, b) => Query::Or(flattened([a, b], |q| match q {
                Query::Or(inner) => Ok(inner),
                q => Err(q),
            })),
        }
    }

    fn nodes(&self) -> usize {
        match self {
            Query::And(parts) | Query::Or(parts) => {
                1 + parts.iter().map(Query::nodes).sum::<usize>()
            }
            _ => 1,
        }
    }

    /// Whether the query reads no posting list (every file passes).
    pub fn is_all(&self) -> bool {
        matches!(self, Query::All)
    }
}

type Strings = BTreeSet<Vec<u8>>;

/// What the analysis knows about one node.
#[derive(Debug, Clone)]
struct Info {
    can_empty: bool,
    /// All the strings the node matches, when known and few.
    exact: Option<Strings>,
    /// Possible starts of a match (meaningful when `exact` is unknown).
    prefix: Strings,
    /// Possible ends of a match (meaningful when `exact` is unknown).
    suffix: Strings,
    /// A query any match satisfies, on top of the sets.
    matches: Query,
}

fn single(s: Vec<u8>) -> Strings {
    let mut set = Strings::new();
    set.insert(s);
    set
}

impl Info {
    fn any_char() -> Info {
        Info {
            can_empty: false,
            exact: None,
            prefix: single(Vec::new()),
            suffix: single(Vec::new()),
            matches: Query::All,
        }
    }

    fn any_match() -> Info {
        Info {
            can_empty: true,
            ..Info::any_char()
        }
    }

    fn empty_string() -> Info {
        Info {
            can_empty: true,
            exact: Some(single(Vec::new())),
            prefix: Strings::new(),
            suffix: Strings::new(),
            matches: Query::All,
        }
    }

    fn no_match() -> Info {
        Info {
            can_empty: false,
            exact: None,
            prefix: Strings::new(),
            suffix: Strings::new(),
            matches: Query::None,
        }
    }

    fn exact(strings: Strings) -> Info {
        Info {
            can_empty: strings.iter().any(Vec::is_empty),
            exact: Some(strings),
            prefix: Strings::new(),
            suffix: Strings::new(),
            matches: Query::All,
        }
    }

    fn add_exact(&mut self) {
        if let Some(exact) = &self.exact {
            let matches = std::mem::replace(&mut self.matches, Query::All);
            self.matches = and_trigrams(matches, exact);
        }
    }

    fn simplify(&mut self, force: bool) {
        if let Some(exact) = &self.exact {
            let min = min_len(exact);
            if exact.len() > MAX_EXACT || (min >= 3 && force) || min >= 4 {
                self.add_exact();
                let exact = self.exact.take().unwrap_or_default();
                for s in exact {
                    if s.len() < 3 {
                        self.prefix.insert(s.clone());
                        self.suffix.insert(s);
                    } else {
                        self.prefix.insert(s[..2].to_vec());
                        self.suffix.insert(s[s.len() - 2..].to_vec());
                    }
                }
            }
        }
        if self.exact.is_none() {
            let matches = std::mem::replace(&mut self.matches, Query::All);
            let matches = simplify_set(matches, &mut self.prefix, false);
            self.matches = simplify_set(matches, &mut self.suffix, true);
        }
    }
}

fn min_len(set: &Strings) -> usize {
    set.iter().map(Vec::len).min().unwrap_or(0)
}

/// `query` AND (some string of `set` occurs): the OR over the strings of
/// the AND of their trigrams. Nothing is learnt when a string is shorter
/// than a trigram.
fn and_trigrams(query: Query, set: &Strings) -> Query {
    if set.is_empty() || min_len(set) < 3 {
        return query;
    }
    let mut any = Query::None;
    for s in set {
        let mut all = Query::All;
        for window in s.windows(3) {
            all = all.and(Query::Trigram(key(window[0], window[1], window[2])));
        }
        any = any.or(all);
    }
    query.and(any)
}

/// Folds the set's trigrams into the query, then trims its strings to
/// their 2-byte edges (1, then 0, while more than [`MAX_SET`] remain) and
/// drops strings another one already covers ("ab" covers "abc").
fn simplify_set(query: Query, set: &mut Strings, is_suffix: bool) -> Query {
    let query = and_trigrams(query, set);
    let mut keep = 2usize;
    loop {
        let trimmed: Strings = set
            .iter()
            .map(|s| {
                if s.len() > keep {
                    if is_suffix {
                        s[s.len() - keep..].to_vec()
                    } else {
                        s[..keep].to_vec()
                    }
                } else {
                    s.clone()
                }
            })
            .collect();
        *set = trimmed;
        if set.len() <= MAX_SET || keep == 0 {
            break;
        }
        keep -= 1;
    }
    let all: Vec<Vec<u8>> = set.iter().cloned().collect();
    set.retain(|s| {
        !all.iter().any(|other| {
            other != s
                && if is_suffix {
                    s.ends_with(other)
                } else {
                    s.starts_with(other)
                }
        })
    });
    query
}

fn cross(xs: &Strings, ys: &Strings) -> Strings {
    let mut out = Strings::new();
    for x in xs {
        for y in ys {
            let mut s = x.clone();
            s.extend_from_slice(y);
            out.insert(s);
        }
    }
    out
}

fn concat(x: Info, y: Info) -> Info {
    let mut matches = x.matches.clone().and(y.matches.clone());
    let mut xy = Info {
        can_empty: x.can_empty && y.can_empty,
        exact: None,
        prefix: Strings::new(),
        suffix: Strings::new(),
        matches: Query::All,
    };
    match (&x.exact, &y.exact) {
        (Some(ex), Some(ey)) => xy.exact = Some(cross(ex, ey)),
        _ => {
            xy.prefix = match &x.exact {
                Some(ex) => cross(ex, &y.prefix),
                None if x.can_empty => x.prefix.union(&y.prefix).cloned().collect(),
                None => x.prefix.clone(),
            };
            xy.suffix = match &y.exact {
                Some(ey) => cross(&x.suffix, ey),
                None if y.can_empty => y.suffix.union(&x.suffix).cloned().collect(),
                None => y.suffix.clone(),
            };
            // An empty-matching exact side can leave its neighbour's edge
            // as the edge of the whole: adding it keeps the sets sound.
            if let (Some(ex), true) = (&x.exact, y.can_empty) {
                xy.suffix.extend(ex.iter().cloned());
            }
            if let (Some(ey), true) = (&y.exact, x.can_empty) {
                xy.prefix.extend(ey.iter().cloned());
            }
        }
    }
    if x.exact.is_none()
        && y.exact.is_none()
        && x.suffix.len() <= MAX_SET
        && y.prefix.len() <= MAX_SET
        && min_len(&x.suffix) + min_len(&y.prefix) >= 3
    {
        matches = and_trigrams(matches, &cross(&x.suffix, &y.prefix));
    }
    xy.matches = matches;
    xy.simplify(false);
    xy
}

fn alternate(mut x: Info, mut y: Info) -> Info {
    let mut xy = Info {
        can_empty: x.can_empty || y.can_empty,
        exact: None,
        prefix: Strings::new(),
        suffix: Strings::new(),
        matches: Query::All,
    };
    match (x.exact.take(), y.exact.take()) {
        (Some(ex), Some(ey)) => xy.exact = Some(ex.union(&ey).cloned().collect()),
        (Some(ex), None) => {
            xy.prefix = ex.union(&y.prefix).cloned().collect();
            xy.suffix = ex.union(&y.suffix).cloned().collect();
            x.exact = Some(ex);
            x.add_exact();
        }
        (None, Some(ey)) => {
            xy.prefix = x.prefix.union(&ey).cloned().collect();
            xy.suffix = x.suffix.union(&ey).cloned().collect();
            y.exact = Some(ey);
            y.add_exact();
        }
        (None, None) => {
            xy.prefix = x.prefix.union(&y.prefix).cloned().collect();
            xy.suffix = x.suffix.union(&y.suffix).cloned().collect();
        }
    }
    xy.matches = x.matches.or(y.matches);
    xy.simplify(false);
    xy
}

/// What a class matches, from its ranges (inclusive bounds): nothing when
/// empty, any character when it has more than [`MAX_CLASS`] members, else
/// exactly its members, folded (listed by `members` only then).
fn class_info(ranges: impl Iterator<Item = (u32, u32)>, members: impl FnOnce() -> Strings) -> Info {
    let size: u32 = ranges.map(|(start, end)| end - start + 1).sum();
    if size == 0 {
        Info::no_match()
    } else if size > MAX_CLASS {
        Info::any_char()
    } else {
        Info::exact(members())
    }
}

fn analyze(hir: &Hir) -> Info {
    let mut info = match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Info::empty_string(),
        HirKind::Literal(literal) => {
            Info::exact(single(literal.0.iter().copied().map(fold).collect()))
        }
        HirKind::Class(Class::Unicode(class)) => class_info(
            class
                .ranges()
                .iter()
                .map(|r| (u32::from(r.start()), u32::from(r.end()))),
            || {
                let chars = class.ranges().iter().flat_map(|r| r.start()..=r.end());
                chars
                    .map(|c| c.encode_utf8(&mut [0u8; 4]).bytes().map(fold).collect())
                    .collect()
            },
        ),
        HirKind::Class(Class::Bytes(class)) => class_info(
            class
                .ranges()
                .iter()
                .map(|r| (u32::from(r.start()), u32::from(r.end()))),
            || {
                let bytes = class.ranges().iter().flat_map(|r| r.start()..=r.end());
                bytes.map(|b| vec![fold(b)]).collect()
            },
        ),
        HirKind::Repetition(rep) => {
            if rep.min == 0 && rep.max == Some(1) {
                alternate(analyze(&rep.sub), Info::empty_string())
            } else if rep.min == 0 {
                Info::any_match()
            } else {
                // At least one copy occurs: what the sub-pattern requires
                // holds, and its exact strings are the edges of the match.
                let mut sub = analyze(&rep.sub);
                if let Some(exact) = sub.exact.take() {
                    sub.prefix = exact.clone();
                    sub.suffix = exact;
                }
                sub
            }
        }
        HirKind::Capture(capture) => analyze(&capture.sub),
        HirKind::Concat(parts) => {
            let mut info = Info::empty_string();
            for part in parts {
                info = concat(info, analyze(part));
            }
            info
        }
        HirKind::Alternation(branches) => {
            let mut branches = branches.iter();
            let mut info = branches.next().map_or_else(Info::no_match, analyze);
            for branch in branches {
                info = alternate(info, analyze(branch));
            }
            info
        }
    };
    info.simplify(false);
    info
}

/// The trigram query every match of `hir` satisfies.
pub fn regex_query(hir: &Hir) -> Query {
    let mut info = analyze(hir);
    info.simplify(true);
    info.add_exact();
    if info.matches.nodes() > MAX_QUERY_NODES {
        return Query::All;
    }
    info.matches
}

/// Where a query's posting lists come from.
pub(crate) trait Postings {
    /// How many files hold the trigram (an estimate is fine: it orders work).
    fn count(&self, trigram: Trigram) -> u64;
    /// The sorted ids of files holding the trigram.
    fn ids(&self, trigram: Trigram) -> Vec<u32>;
}

/// A query's answer: every indexed file, or these ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    All,
    Ids(Vec<u32>),
}

impl Answer {
    /// Whether the file with this id may hold a match.
    pub(crate) fn allows(&self, id: usize) -> bool {
        match self {
            Answer::All => true,
            Answer::Ids(ids) => u32::try_from(id).is_ok_and(|id| ids.binary_search(&id).is_ok()),
        }
    }
}

pub(crate) fn evaluate(query: &Query, source: &impl Postings) -> Answer {
    match query {
        Query::All => Answer::All,
        Query::None => Answer::Ids(Vec::new()),
        Query::Trigram(t) => Answer::Ids(source.ids(*t)),
        Query::Or(parts) => {
            let mut acc: Vec<u32> = Vec::new();
            for part in parts {
                match evaluate(part, source) {
                    Answer::All => return Answer::All,
                    Answer::Ids(ids) => acc = union(&acc, &ids),
                }
            }
            Answer::Ids(acc)
        }
        Query::And(parts) => {
            // Plain trigrams first, rarest first; stop early once the
            // candidates are few or none.
            let mut trigrams: Vec<(u64, Trigram)> = parts
                .iter()
                .filter_map(|p| match p {
                    Query::Trigram(t) => Some((source.count(*t), *t)),
                    _ => None,
                })
                .collect();
            trigrams.sort_unstable();
            let mut acc: Option<Vec<u32>> = None;
            for (count, trigram) in trigrams {
                if count == 0 {
                    return Answer::Ids(Vec::new());
                }
                if acc.as_ref().is_some_and(|ids| ids.len() <= SMALL_ENOUGH) {
                    break;
                }
                let ids = source.ids(trigram);
                acc = Some(match acc {
                    None => ids,
                    Some(prev) => intersect(&prev, &ids),
                });
                if acc.as_ref().is_some_and(Vec::is_empty) {
                    return Answer::Ids(Vec::new());
                }
            }
            for part in parts {
                if matches!(part, Query::Trigram(_)) {
                    continue;
                }
                if acc.as_ref().is_some_and(|ids| ids.len() <= SMALL_ENOUGH) {
                    break;
                }
                match evaluate(part, source) {
                    Answer::All => {}
                    Answer::Ids(ids) => {
                        acc = Some(match acc {
                            None => ids,
                            Some(prev) => intersect(&prev, &ids),
                        });
                    }
                }
                if acc.as_ref().is_some_and(Vec::is_empty) {
                    return Answer::Ids(Vec::new());
                }
            }
            acc.map_or(Answer::All, Answer::Ids)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tri(s: &str) -> Query {
        let b = s.as_bytes();
        Query::Trigram(key(fold(b[0]), fold(b[1]), fold(b[2])))
    }

    fn and(parts: Vec<Query>) -> Query {
        parts.into_iter().fold(Query::All, Query::and)
    }

    fn or(parts: Vec<Query>) -> Query {
        parts.into_iter().fold(Query::None, Query::or)
    }

    fn query_of(pattern: &str) -> Query {
        let hir = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(pattern)
            .unwrap_or_else(|err| panic!("{pattern}: {err}"));
        regex_query(&hir)
    }

    #[test]
    fn literals_become_ands_of_trigrams() {
        assert_eq!(
            query_of("Abcdef"),
            and(vec![tri("abc"), tri("bcd"), tri("cde"), tri("def")])
        );
        assert_eq!(
            query_of("a+hello"),
            and(vec![tri("ahe"), tri("ell"), tri("hel"), tri("llo")])
        );
    }

    #[test]
    fn alternations_and_gaps() {
        assert_eq!(
            query_of("abc.*(def|ghi)"),
            and(vec![tri("abc"), or(vec![tri("def"), tri("ghi")])])
        );
        assert_eq!(
            query_of("ab[cde]f"),
            or(vec![
                and(vec![tri("abc"), tri("bcf")]),
                and(vec![tri("abd"), tri("bdf")]),
                and(vec![tri("abe"), tri("bef")]),
            ])
        );
        // Each spelling brings its own trigrams, and both need "cde".
        assert_eq!(
            query_of("(abc|bac)de"),
            or(vec![
                and(vec![tri("abc"), tri("bcd"), tri("cde")]),
                and(vec![tri("acd"), tri("bac"), tri("cde")]),
            ])
        );
    }

    #[test]
    fn patterns_without_literals_scan_and_empty_classes_match_nothing() {
        assert_eq!(query_of("ab[^cde]f"), Query::All);
        assert_eq!(query_of("ab.f"), Query::All);
        assert_eq!(query_of("."), Query::All);
        assert_eq!(query_of(r"\w+"), Query::All);
        assert_eq!(query_of(r"[^\s\S]"), Query::None);
    }

    #[test]
    fn word_boundaries_are_empty() {
        assert_eq!(query_of(r"\babc"), tri("abc"));
        assert_eq!(query_of(r"abc\b"), tri("abc"));
    }

    #[test]
    fn inner_literals_count() {
        let q = query_of(r"\w+foo_bar\w+");
        for t in ["foo", "oo_", "o_b", "_ba", "bar"] {
            match &q {
                Query::And(parts) => assert!(parts.contains(&tri(t)), "{t} in {q:?}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn case_insensitive_keeps_the_kelvin_sign_and_long_s() {
        // (?i)k is [Kk\u{212A}]: the query must let a file with only the
        // Kelvin sign through.
        let q = query_of("(?i)kit");
        let kelvin = "\u{212A}it".as_bytes();
        let k_tail = Query::Trigram(key(kelvin[2], b'i', b't'));
        match &q {
            Query::Or(parts) => {
                assert!(parts.contains(&tri("kit")), "{q:?}");
                assert!(
                    parts.iter().any(|p| p == &k_tail
                        || matches!(p, Query::And(inner) if inner.contains(&k_tail))),
                    "{q:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_ne!(query_of("(?i)mask"), Query::All);
    }
}
