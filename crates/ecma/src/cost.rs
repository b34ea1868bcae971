//! An upper bound on the work regress may do: the step budget.
//!
//! regress has no step counter, no time limit and no way to be stopped
//! from outside, so its work is bounded before it starts: from the
//! pattern's shape and the length of the text, this counts how many steps
//! its backtracking can take at most, and a text whose bound is over the
//! budget is not given to it.
//!
//! The count follows the backtracker. An item is summed up by how many
//! ways it can end (`paths`: each one runs the rest of the pattern once
//! more) and by the steps it takes itself trying them all (`steps`). A
//! sequence multiplies: the rest runs once per way the items before it
//! end. Alternatives add up. A repetition of a one-character item takes
//! as many ways as the characters it can cover (the longest line, for an
//! item that cannot take a line break; the whole text otherwise), less
//! its minimum. A repeated group takes, per round, the ways of its body:
//! rounds past the minimum take at least one character each (regress
//! stops a round that took none), so there are at most the minimum plus
//! the text's length of them. A lookaround ends one way (it does not
//! backtrack into itself once passed). A backreference compares up to the
//! whole text. Every start position of the text is tried.
//!
//! Alternatives that each start with a character none of the others can
//! start with (`(?:o|0)`, the only ones a repeated group may have) go on
//! one at most: the others fail at their first character. And one
//! refinement keeps everyday patterns (`\w+\s*=\s*\w+`) from counting
//! as cubic: a repeated character that the next character the rest must
//! take can never be (`\w+` before `\s*=`) ends one useful way: every
//! shorter take leaves one of its own characters where the rest fails at
//! once, which costs a few steps, not a rerun of the rest.

use super::bounded::{CharSets, first_atom};
use super::shape::{GroupKind, Item, Quant};

/// How long a text is, as far as the bound cares.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Extent {
    /// Characters in all (bytes do: never fewer).
    pub chars: f64,
    /// The longest run of characters without a `\n`.
    pub line: f64,
}

impl Extent {
    /// One line of `bytes` bytes (`grep_files`).
    pub fn line(bytes: usize) -> Extent {
        Extent {
            chars: bytes as f64,
            line: bytes as f64,
        }
    }

    /// A whole text (regex edits).
    pub fn text(text: &str) -> Extent {
        let longest = text.split('\n').map(str::len).max().unwrap_or(0);
        Extent {
            chars: text.len() as f64,
            line: longest as f64,
        }
    }
}

/// The pattern as the bound reads it, with the facts that need regress
/// (which sets meet) settled once at compile time.
#[derive(Debug, Clone)]
pub(crate) struct Model {
    alternatives: Vec<Vec<Node>>,
}

#[derive(Debug, Clone)]
enum Node {
    Atom {
        quant: Option<Quant>,
        /// It can take a `\n` (or its set is unknown).
        crosses_lines: bool,
        /// Repeated, and the rest of its sequence must next take a
        /// character it cannot: how many items the rest tries before
        /// failing.
        separated: Option<usize>,
    },
    Assertion,
    BackRef {
        quant: Option<Quant>,
    },
    Group {
        look: bool,
        /// Its alternatives start with characters no other can.
        exclusive: bool,
        alternatives: Vec<Vec<Node>>,
        quant: Option<Quant>,
    },
}

#[derive(Debug, Clone, Copy)]
struct Work {
    /// Ways it can end, each running the rest once.
    paths: f64,
    /// Steps it takes itself.
    steps: f64,
}

impl Model {
    /// Reads the shape; `sets` answers which one-character items meet.
    pub fn new(alternatives: &[Vec<Item>], sets: &mut CharSets) -> Model {
        Model {
            alternatives: alternatives.iter().map(|seq| nodes(seq, sets)).collect(),
        }
    }

    /// At most how many steps a search of a text of this extent takes,
    /// every start position included (saturating at infinity).
    pub fn bound(&self, extent: Extent) -> f64 {
        let per_start = alternatives(&self.alternatives, extent, false);
        (extent.chars + 1.0) * (per_start.steps + per_start.paths)
    }

    /// The longest line (in bytes) whose bound stays within `budget`.
    pub fn longest_line_within(&self, budget: f64, ceiling: usize) -> usize {
        if self.bound(Extent::line(ceiling)) <= budget {
            return ceiling;
        }
        // The bound grows with the length: halve the gap.
        let (mut low, mut high) = (0usize, ceiling);
        if self.bound(Extent::line(0)) > budget {
            return 0;
        }
        while high - low > 1 {
            let mid = low + (high - low) / 2;
            if self.bound(Extent::line(mid)) <= budget {
                low = mid;
            } else {
                high = mid;
            }
        }
        low
    }
}

fn nodes(sequence: &[Item], sets: &mut CharSets) -> Vec<Node> {
    sequence
        .iter()
        .enumerate()
        .map(|(index, item)| match item {
            Item::Atom { source, quant } => {
                let crosses_lines = sets.members(source).is_none_or(|m| m.contains('\n'));
                let separated = match quant {
                    Some(q) if q.repeats() => separated(source, &sequence[index + 1..], sets),
                    _ => None,
                };
                Node::Atom {
                    quant: *quant,
                    crosses_lines,
                    separated,
                }
            }
            Item::Assertion(_) => Node::Assertion,
            Item::BackRef { quant } => Node::BackRef { quant: *quant },
            Item::Group {
                kind,
                alternatives,
                quant,
            } => Node::Group {
                look: *kind == GroupKind::Look,
                exclusive: exclusive(alternatives, sets),
                alternatives: alternatives.iter().map(|seq| nodes(seq, sets)).collect(),
                quant: *quant,
            },
        })
        .collect()
}

/// Whether every character the rest of the sequence can take first is
/// outside `source`'s set, and the rest must take one: then how many
/// items it tries before failing.
fn separated(source: &str, rest: &[Item], sets: &mut CharSets) -> Option<usize> {
    for (tried, item) in rest.iter().enumerate() {
        match item {
            Item::Assertion(_) => continue,
            Item::Atom {
                source: next,
                quant,
            } => {
                if !sets.disjoint(source, next) {
                    return None;
                }
                if quant.is_none_or(|q| q.min >= 1) {
                    return Some(tried + 1);
                }
            }
            // What a group or a backreference takes first is not read.
            Item::Group { .. } | Item::BackRef { .. } => return None,
        }
    }
    // The rest can take nothing: what follows the sequence is not known.
    None
}

/// Whether there are several alternatives, each starting with one
/// character that none of the others can start with.
fn exclusive(alternatives: &[Vec<Item>], sets: &mut CharSets) -> bool {
    if alternatives.len() < 2 {
        return false;
    }
    let firsts: Option<Vec<&str>> = alternatives.iter().map(|seq| first_atom(seq)).collect();
    let Some(firsts) = firsts else {
        return false;
    };
    firsts
        .iter()
        .enumerate()
        .all(|(i, a)| firsts[i + 1..].iter().all(|b| sets.disjoint(a, b)))
}

fn alternatives(alternatives: &[Vec<Node>], extent: Extent, exclusive: bool) -> Work {
    let mut total = Work {
        paths: 0.0,
        steps: 0.0,
    };
    for sequence in alternatives {
        let work = sequence_work(sequence, extent);
        if exclusive {
            // One goes on; each other fails at its first character.
            total.paths = total.paths.max(work.paths);
            total.steps = total.steps.max(work.steps) + 2.0;
        } else {
            total.paths += work.paths;
            total.steps += work.steps + 1.0;
        }
    }
    total
}

/// A sequence: the items after each one run once per way it ends.
fn sequence_work(sequence: &[Node], extent: Extent) -> Work {
    let mut paths = 1.0;
    let mut steps = 0.0;
    // From the last item back: `steps` is what the rest costs once.
    for node in sequence.iter().rev() {
        let work = node_work(node, extent);
        steps = work.steps + work.paths * steps;
        paths *= work.paths;
    }
    Work { paths, steps }
}

fn node_work(node: &Node, extent: Extent) -> Work {
    match node {
        Node::Assertion => Work {
            paths: 1.0,
            steps: 1.0,
        },
        Node::Atom {
            quant,
            crosses_lines,
            separated,
        } => {
            let Some(quant) = quant else {
                return Work {
                    paths: 1.0,
                    steps: 1.0,
                };
            };
            let reach = if *crosses_lines {
                extent.chars
            } else {
                extent.line
            };
            let run = quant.max.map_or(reach, |max| reach.min(f64::from(max)));
            let min = f64::from(quant.min);
            if run < min {
                return Work {
                    paths: 1.0,
                    steps: run + 1.0,
                };
            }
            let ways = run - min + 1.0;
            match separated {
                // Every take but the longest fails a few steps in.
                Some(tried) => Work {
                    paths: 1.0,
                    steps: run + ways * (*tried as f64 + 2.0),
                },
                None => Work {
                    paths: ways,
                    steps: run + ways,
                },
            }
        }
        Node::BackRef { quant } => {
            let body = Work {
                paths: 1.0,
                steps: extent.chars + 1.0,
            };
            repeat(body, *quant, extent)
        }
        Node::Group {
            look,
            exclusive,
            alternatives: inner,
            quant,
        } => {
            let mut body = alternatives(inner, extent, *exclusive);
            body.steps += 2.0;
            if *look {
                // Tried in full, passed at most one way.
                body = Work {
                    paths: 1.0,
                    steps: body.steps + body.paths,
                };
            }
            repeat(body, *quant, extent)
        }
    }
}

/// `body` repeated by `quant`: round k runs once per way the k-1 rounds
/// before it ended.
fn repeat(body: Work, quant: Option<Quant>, extent: Extent) -> Work {
    let Some(quant) = quant else {
        return body;
    };
    let min = f64::from(quant.min);
    let rounds = match quant.max {
        Some(max) => min + (f64::from(max) - min).min(extent.chars),
        None => min + extent.chars,
    };
    // Ways to have done 0..rounds rounds: 1 + p + p^2 + ... + p^rounds.
    let sum_to = |k: f64| {
        if body.paths <= 1.0 {
            k + 1.0
        } else {
            (body.paths.powf(k + 1.0) - 1.0) / (body.paths - 1.0)
        }
    };
    let paths = sum_to(rounds);
    let entered = sum_to(rounds - 1.0);
    Work {
        paths,
        steps: entered * body.steps + paths,
    }
}

#[cfg(test)]
mod tests {
    use super::super::shape;
    use super::*;

    fn bound(pattern: &str, line: usize) -> f64 {
        let mut sets = CharSets::new(false);
        Model::new(&shape::read(pattern).alternatives, &mut sets).bound(Extent::line(line))
    }

    #[test]
    fn the_review_shapes_are_counted_as_the_explosions_they_are() {
        // 2^40 ways through forty optional a's.
        assert!(bound("(a?){40}a{40}", 40) > 1e12);
        // Three overlapping stars over 3,000 characters, from each start.
        assert!(bound("(?=a*)a*a*a*b", 3000) > 1e13);
        assert!(bound("if.*return.*TODO", 240_000) > 1e15);
    }

    #[test]
    fn everyday_shapes_stay_small_on_everyday_lines() {
        assert!(
            bound(r"\w+\s*=\s*\w+", 200) < 1e6,
            "{}",
            bound(r"\w+\s*=\s*\w+", 200)
        );
        assert!(bound(r"(?<=\$)\d+", 200) < 1e6);
        assert!(bound("foo", 1_000_000) < 1e7);
        // Alternatives that cannot both start at one place count as one.
        assert!(
            bound("(?:o|0)+(?=a)", 100) < 1e6,
            "{}",
            bound("(?:o|0)+(?=a)", 100)
        );
    }

    #[test]
    fn the_bound_grows_with_the_line() {
        let mut sets = CharSets::new(false);
        let model = Model::new(&shape::read("a.*b.*c").alternatives, &mut sets);
        let longest = model.longest_line_within(1e8, 1 << 24);
        assert!(model.bound(Extent::line(longest)) <= 1e8);
        assert!(model.bound(Extent::line(longest + 1)) > 1e8);
    }
}

#[cfg(test)]
mod allowance {
    use super::super::shape;
    use super::*;

    /// Prints how long a line regress may take for a few patterns, and how
    /// long regress takes on the worst text of that length (run by hand).
    #[test]
    #[ignore]
    fn print_allowances() {
        for (pattern, fill) in [
            ("(?=a*)a*a*a*b", 'a'),
            (r"(?<=\$)\d+", '1'),
            (r"(?<=function )\w+\s*\(.*\)", 'a'),
            (r"(\w)\1", 'a'),
            ("(?<=a).*.*b", 'a'),
            (r"(?=x)\w+\s*=\s*\w+;", 'x'),
        ] {
            let mut sets = CharSets::new(false);
            let model = Model::new(&shape::read(pattern).alternatives, &mut sets);
            let line = model.longest_line_within(1e8, 1 << 32);
            let text: String = std::iter::repeat_n(fill, line).collect();
            let regex = regress::Regex::new(pattern).unwrap();
            let began = std::time::Instant::now();
            let _ = regex.find_iter(&text).count();
            println!("{pattern}: {line} bytes, {:?}", began.elapsed());
        }
    }
}
