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
fn first_atom(sequence: &[Item]) -> Option<&str> {
    for item in sequence {
        match item {
            Item::Assertion => continue,
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
            } => {
                if quant.is_some_and(Quant::unbounded) {
                    found.push(item);
                }
                for seq in alternatives {
                    found.extend(unbounded_items(seq));
                }
            }
            Item::Assertion => {}
        }
    }
    found
}

/// The highest code point sampled when comparing character sets: the
/// Basic Multilingual Plane, where the sets of real patterns differ.
const SAMPLED: u32 = 0xFFFF;

/// Which characters one-character items match, as regress says.
pub(crate) struct CharSets {
    case_insensitive: bool,
    known: HashMap<String, Option<Vec<u64>>>,
}

impl CharSets {
    pub fn new(case_insensitive: bool) -> CharSets {
        CharSets {
            case_insensitive,
            known: HashMap::new(),
        }
    }

    /// Whether no sampled character is matched by both. An item whose
    /// set cannot be sampled (or holds no sampled character) is taken to
    /// meet every other.
    pub fn disjoint(&mut self, a: &str, b: &str) -> bool {
        let (Some(a), Some(b)) = (self.members(a), self.members(b)) else {
            return false;
        };
        a.iter().zip(&b).all(|(x, y)| x & y == 0)
    }

    fn members(&mut self, source: &str) -> Option<Vec<u64>> {
        if let Some(known) = self.known.get(source) {
            return known.clone();
        }
        let members = sample(source, self.case_insensitive);
        self.known.insert(source.to_string(), members.clone());
        members
    }
}

/// The sampled members of a one-character item, as a bit set.
fn sample(source: &str, case_insensitive: bool) -> Option<Vec<u64>> {
    let flags = regress::Flags {
        icase: case_insensitive,
        ..regress::Flags::default()
    };
    let regex = regress::Regex::with_flags(&format!("^(?:{source})$"), flags).ok()?;
    let mut bits = vec![0u64; (SAMPLED as usize + 1).div_ceil(64)];
    let mut any = false;
    let mut buffer = [0u8; 4];
    for code in 0..=SAMPLED {
        let Some(c) = char::from_u32(code) else {
            continue;
        };
        if regex.find(c.encode_utf8(&mut buffer)).is_some() {
            bits[code as usize / 64] |= 1 << (code % 64);
            any = true;
        }
    }
    any.then_some(bits)
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
