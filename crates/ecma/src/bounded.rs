//! Refusing the patterns whose matching can take exponential time.
//!
//! regress is a backtracking engine without a step or time limit, and a
//! thread stuck in it cannot be stopped. So the shapes known to make a
//! backtracker explode are refused before anything is matched: a group
//! that repeats (`*`, `+`, `{n,}`, `{n,m}` with m > 1) and
//!
//! - holds a repetition without an upper bound, as in `(a+)+` or
//!   `(\w+\s?)*`, unless each of its rounds starts or ends with one
//!   character that none of the unbounded repetitions inside can take
//!   (`(\w+\.)+`, `(?:,\s*\w+)*`): then a text splits into rounds one way
//!   only;
//! - or has alternatives that can start with the same character, as in
//!   `(a|ab)*` or `(\w|_)+`: each character may then open a round of
//!   either;
//! - or holds a backreference.
//!
//! Whether two characters sets meet is asked of regress itself
//! (see [`CharSets`]). What this does not catch are polynomial shapes,
//! such as several unbounded repetitions of overlapping sets in a row
//! (`\s*\s*\s*x`): their cost grows with a power of the length of the text
//! each match attempt sees, which grep_files keeps to one line and
//! edit_file to a file under the size limit.

use std::collections::HashMap;

use super::shape::{Item, Quant};

/// Why a pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Explosive {
    pub why: &'static str,
}

/// Checks every repeating group of `alternatives`.
pub(crate) fn check(alternatives: &[Vec<Item>], sets: &mut CharSets) -> Result<(), Explosive> {
    for sequence in alternatives {
        for item in sequence {
            if let Item::Group {
                alternatives: inner,
                quant,
                ..
            } = item
            {
                if quant.is_some_and(Quant::repeats) {
                    check_repeated(inner, sets)?;
                }
                check(inner, sets)?;
            }
        }
    }
    Ok(())
}

fn check_repeated(alternatives: &[Vec<Item>], sets: &mut CharSets) -> Result<(), Explosive> {
    if alternatives.iter().any(|seq| holds_backref(seq)) {
        return Err(Explosive {
            why: "a repeated group holds a backreference",
        });
    }
    if alternatives.len() > 1 {
        let firsts: Vec<Option<&str>> = alternatives.iter().map(|seq| first_atom(seq)).collect();
        for (i, a) in firsts.iter().enumerate() {
            for b in &firsts[i + 1..] {
                let disjoint = match (a, b) {
                    (Some(a), Some(b)) => sets.disjoint(a, b),
                    _ => false,
                };
                if !disjoint {
                    return Err(Explosive {
                        why: "a repeated group has alternatives that can start with the same character",
                    });
                }
            }
        }
    }
    let unbounded: Vec<&Item> = alternatives
        .iter()
        .flat_map(|seq| unbounded_items(seq))
        .collect();
    if unbounded.is_empty() {
        return Ok(());
    }
    let explosive = Explosive {
        why: "a repeated group holds a repetition without an upper bound",
    };
    let [sequence] = alternatives else {
        return Err(explosive);
    };
    // Every unbounded repetition inside must be of one character.
    let mut inner_sets = Vec::new();
    for item in &unbounded {
        match item {
            Item::Atom { source, .. } => inner_sets.push(source.as_str()),
            _ => return Err(explosive),
        }
    }
    let edges = [sequence.first(), sequence.last()];
    let separated = edges.into_iter().flatten().any(|edge| match edge {
        Item::Atom {
            source,
            quant: None,
        } => inner_sets.iter().all(|inner| sets.disjoint(source, inner)),
        _ => false,
    });
    if separated { Ok(()) } else { Err(explosive) }
}

fn holds_backref(sequence: &[Item]) -> bool {
    sequence.iter().any(|item| match item {
        Item::BackRef { .. } => true,
        Item::Group { alternatives, .. } => alternatives.iter().any(|seq| holds_backref(seq)),
        _ => false,
    })
}

/// The one-character item every match of `sequence` starts with, if it
/// is plain to see.
pub(crate) fn first_atom(sequence: &[Item]) -> Option<&str> {
    for item in sequence {
        match item {
            Item::Assertion(_) => continue,
            Item::Atom { source, quant } if quant.is_none_or(|q| q.min >= 1) => {
                return Some(source);
            }
            _ => return None,
        }
    }
    None
}

/// The items with an unbounded quantifier, at any depth (a group's own
/// quantifier included).
fn unbounded_items(sequence: &[Item]) -> Vec<&Item> {
    let mut found = Vec::new();
    for item in sequence {
        match item {
            Item::Atom { quant, .. } | Item::BackRef { quant } => {
                if quant.is_some_and(Quant::unbounded) {
                    found.push(item);
                }
            }
            Item::Group {
                alternatives,
                quant,
                ..
            } => {
                if quant.is_some_and(Quant::unbounded) {
                    found.push(item);
                }
                for seq in alternatives {
                    found.extend(unbounded_items(seq));
                }
            }
            Item::Assertion(_) => {}
        }
    }
    found
}

/// The highest code point sampled one by one: the Basic Multilingual
/// Plane, where the sets of real patterns differ.
const SAMPLED: u32 = 0xFFFF;

/// Characters past the Basic Multilingual Plane asked about: a
/// one-character item of a pattern without such characters in it holds
/// either all of them (`.`, `[^a]`, `\S`) or none, so a few stand for the
/// rest, and a disagreement among them means the item is not understood.
const ASTRAL_PROBES: [char; 3] = ['\u{10000}', '\u{1F600}', '\u{10FFFF}'];

/// The characters a one-character item matches, as regress says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Members {
    /// One bit per code point up to [`SAMPLED`].
    bmp: Vec<u64>,
    /// Whether it matches every character past the Basic Multilingual Plane
    /// (else none of them).
    astral: bool,
}

impl Members {
    fn one(c: char) -> Members {
        let mut bmp = vec![0u64; (SAMPLED as usize + 1).div_ceil(64)];
        let code = c as u32;
        bmp[code as usize / 64] |= 1 << (code % 64);
        Members { bmp, astral: false }
    }

    /// Whether no character is in both.
    fn disjoint(&self, other: &Members) -> bool {
        !(self.astral && other.astral) && self.bmp.iter().zip(&other.bmp).all(|(x, y)| x & y == 0)
    }

    /// Whether `c` is a member.
    pub fn contains(&self, c: char) -> bool {
        let code = c as u32;
        if code > SAMPLED {
            return self.astral;
        }
        self.bmp[code as usize / 64] & (1 << (code % 64)) != 0
    }

    /// The members as ranges of code points, in order.
    pub fn ranges(&self) -> Vec<(char, char)> {
        let mut ranges: Vec<(char, char)> = Vec::new();
        for code in 0..=SAMPLED {
            let Some(c) = char::from_u32(code) else {
                continue;
            };
            if !self.contains(c) {
                continue;
            }
            match ranges.last_mut() {
                Some((_, end)) if (*end as u32) + 1 == code => *end = c,
                _ => ranges.push((c, c)),
            }
        }
        if self.astral {
            ranges.push(('\u{10000}', char::MAX));
        }
        ranges
    }
}

/// Which characters one-character items match, as regress says, cached
/// by their source.
pub(crate) struct CharSets {
    case_insensitive: bool,
    known: HashMap<String, Option<Members>>,
    /// How many items were run through regress.
    sampled: usize,
}

/// At most this many items of one pattern are run through regress (each
/// costs a pass over 64 K characters); past it an item's set is unknown,
/// which every user takes the cautious way.
const MAX_SAMPLED: usize = 256;

impl CharSets {
    pub fn new(case_insensitive: bool) -> CharSets {
        CharSets {
            case_insensitive,
            known: HashMap::new(),
            sampled: 0,
        }
    }

    /// Whether no character is matched by both. An item whose set cannot
    /// be told (or is empty) is taken to meet every other.
    pub fn disjoint(&mut self, a: &str, b: &str) -> bool {
        let (Some(a), Some(b)) = (self.members(a), self.members(b)) else {
            return false;
        };
        a.disjoint(&b)
    }

    /// The members of the one-character item written `source`; `None`
    /// when regress refuses it alone, it matches no character, or it
    /// matches something other than one character.
    pub fn members(&mut self, source: &str) -> Option<Members> {
        if let Some(known) = self.known.get(source) {
            return known.clone();
        }
        let members = match literal(source) {
            // A literal without case folding is itself alone.
            Some(c) if !self.case_insensitive => Some(Members::one(c)),
            _ if self.sampled >= MAX_SAMPLED => return None,
            _ => {
                self.sampled += 1;
                sample(source, self.case_insensitive)
            }
        };
        self.known.insert(source.to_string(), members.clone());
        members
    }
}

/// The character a literal item stands for: one plain character, or a
/// syntax character escaped (what `regress::escape` writes).
fn literal(source: &str) -> Option<char> {
    let mut chars = source.chars();
    let c = match (chars.next()?, chars.next(), chars.next()) {
        ('\\', Some(c), None) if "^$\\.*+?()[]{}|/-".contains(c) => c,
        (c, None, None) if c != '.' && c != '\\' => c,
        _ => return None,
    };
    (c as u32 <= SAMPLED).then_some(c)
}

/// Every sampled character in order, once: what an item is run over.
fn sample_text() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        (0..=SAMPLED)
            .filter_map(char::from_u32)
            .chain(ASTRAL_PROBES)
            .collect()
    })
}

/// The members of a one-character item: one pass of regress over every
/// sampled character, each match of which must be one character.
fn sample(source: &str, case_insensitive: bool) -> Option<Members> {
    // A character past the plane in the item itself could make it hold
    // some astral characters and not others.
    if source.chars().any(|c| c as u32 > SAMPLED) {
        return None;
    }
    let flags = regress::Flags {
        icase: case_insensitive,
        ..regress::Flags::default()
    };
    let regex = regress::Regex::with_flags(&format!("(?:{source})"), flags).ok()?;
    let text = sample_text();
    let mut members = Members {
        bmp: vec![0u64; (SAMPLED as usize + 1).div_ceil(64)],
        astral: false,
    };
    let mut any = false;
    let mut astral = 0;
    for found in regex.find_iter(text) {
        let mut chars = text[found.range()].chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            return None;
        };
        let code = c as u32;
        if code > SAMPLED {
            astral += 1;
        } else {
            members.bmp[code as usize / 64] |= 1 << (code % 64);
        }
        any = true;
    }
    match astral {
        0 => {}
        n if n == ASTRAL_PROBES.len() => members.astral = true,
        _ => return None,
    }
    any.then_some(members)
}

#[cfg(test)]
mod tests {
    use super::super::shape;
    use super::*;

    fn verdict(pattern: &str) -> Result<(), Explosive> {
        check(
            &shape::read(pattern).alternatives,
            &mut CharSets::new(false),
        )
    }

    #[test]
    fn refuses_the_exploding_shapes() {
        for pattern in [
            "(a+)+b",
            "(a*)*b",
            r"(\w+\s?)*$",
            "(a|a)*b",
            "(a|ab)+c",
            r"(\w|_)+!",
            r"(x\w+y)+z",
            r"((ab)*c)*d",
            r"(.*,)*x",
            r"(a\1)*",
            r"(?:\d+|[a-z]+)*!",
        ] {
            assert!(verdict(pattern).is_err(), "{pattern}");
        }
    }

    #[test]
    fn literals_are_themselves_and_agree_with_regress() {
        let mut plain = CharSets::new(false);
        for source in ["a", "é", r"\.", r"\$", "-", "{"] {
            let shortcut = plain.members(source);
            assert_eq!(shortcut, sample(source, false), "{source}");
        }
        assert_eq!(literal("\u{1F600}"), None);
        assert_eq!(literal("."), None);
        assert_eq!(literal(r"\d"), None);
    }

    #[test]
    fn astral_characters_are_told_apart() {
        let mut sets = CharSets::new(false);
        // Both hold every character past U+FFFF, though not one in common
        // below it.
        assert!(!sets.disjoint(r"[^\0-\u7FFF]", r"[^\u8000-\uFFFF]"));
        assert!(sets.disjoint("a", "b"));
    }

    #[test]
    fn accepts_everyday_shapes() {
        for pattern in [
            r"^(.*)$",
            r"(\w+\.)+com",
            r"\w+(?:\.\w+)*",
            r"(?:,\s*\w+)*",
            r#""(?:\\.|[^"\\])*""#,
            r"(\d{1,3}\.){3}\d{1,3}",
            "(foo|bar)+",
            r"fn\s+(\w+)\s*\(",
            "(a+)b",
            "(ab)*",
        ] {
            assert_eq!(verdict(pattern), Ok(()), "{pattern}");
        }
    }
}
