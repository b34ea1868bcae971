//! ECMAScript (JavaScript) regular expressions, on the `regress` engine:
//! what the filesystem surface's regex edits and content search speak.
//!
//! A pattern is compiled as JavaScript's `new RegExp(pattern, "m")` (plus
//! `"i"` when case-insensitive) would: `^` and `$` match at every line
//! boundary, `.` does not cross a line break, no Unicode (`u`) mode. The
//! semantics are regress's alone; regex-syntax is consulted only for a
//! prefilter that can skip text but never decides a match (see
//! [`EcmaMatcher`]).
//!
//! Bounded work. regress backtracks, has no step limit, and a thread
//! inside it cannot be stopped, so it is given only texts whose work is
//! known to be small:
//!
//! - when the Rust regex engine reads the pattern exactly as regress does
//!   (see `linear`), it searches instead, in time linear in the text;
//! - otherwise regress runs only on a text whose step bound (see `cost`)
//!   is within [`EcmaBudget::steps`]; a longer one is refused
//!   ([`EcmaStop::OverBudget`]);
//! - shapes known to take exponential time are refused at compile time
//!   (see `bounded`), patterns are at most [`MAX_PATTERN_BYTES`];
//! - a search checks its cancel flag at every line and every match, and a
//!   content search gives regress at most [`EcmaBudget::call_time`] in all.
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use agent_tools_ecma::{EcmaBudget, EcmaRegex, Template};
//!
//! let regex = EcmaRegex::new("^(.*)$", false).unwrap();
//! let template = Template::parse("\"$1\"");
//! regex.check_template(&template).unwrap();
//! let text = "one\ntwo";
//! let cancel = AtomicBool::new(false);
//! let mut found = regex
//!     .matches(text, Some(&template), &EcmaBudget::default(), &cancel)
//!     .unwrap();
//! let first = found.next().unwrap().unwrap();
//! let mut out = String::new();
//! template.expand_into(&first, text, &mut out);
//! assert_eq!(out, "\"one\"");
//! ```
//!
//! The engine alone: it reads no file. [`EcmaMatcher`] is a
//! `grep_matcher::Matcher`, so ripgrep's `grep-searcher` drives it over
//! files (the file tools do, in `agent-tools-fs`), as ripgrep drives its
//! PCRE2 matcher.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod bounded;
mod cost;
mod linear;
mod matcher;
mod shape;
mod template;

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cost::Extent;
use linear::Linear;

pub use matcher::{EcmaMatcher, LineMatcher, LinesOverBudget, SearchRun};
pub use template::Template;

/// The longest pattern accepted, in bytes.
pub const MAX_PATTERN_BYTES: usize = 16 * 1024;

/// Why a pattern or a replacement template was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EcmaError {
    /// Not a valid ECMAScript regex.
    Syntax(String),
    /// A shape whose matching can take exponential time.
    Explosive(&'static str),
    /// Longer than [`MAX_PATTERN_BYTES`].
    TooLong(usize),
    /// The template refers to a group the pattern does not have.
    MissingGroup {
        /// The reference as written (`\2`, `$2`).
        written: String,
        /// The group number.
        group: usize,
        /// How many groups the pattern has.
        groups: usize,
    },
}

impl fmt::Display for EcmaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EcmaError::Syntax(why) => write!(f, "invalid regex: {why}"),
            EcmaError::Explosive(why) => write!(
                f,
                "regex refused: {why}, a shape whose matching can take exponential time; \
                 make the repetitions unambiguous (for example `\\w+(?:\\.\\w+)*` rather \
                 than `(\\w+\\.?)+`)"
            ),
            EcmaError::TooLong(len) => write!(
                f,
                "regex refused: {len} bytes is over the {MAX_PATTERN_BYTES} byte limit"
            ),
            EcmaError::MissingGroup {
                written,
                group,
                groups,
            } => write!(
                f,
                "newText refers to capture group {group} ({written}), but the pattern has {}; \
                 add parentheses around the part to capture, use $& (or \\0) for the whole \
                 match, or $$ for a literal dollar sign",
                match groups {
                    0 => "no capture groups".to_string(),
                    1 => "only 1 capture group".to_string(),
                    n => format!("only {n} capture groups"),
                }
            ),
        }
    }
}

impl std::error::Error for EcmaError {}

/// How much work regress may be given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EcmaBudget {
    /// The most steps one text (a line searched, a file edited) may take
    /// by its bound (see the module's notes).
    pub steps: f64,
    /// The most time regress may run in all within one content search.
    pub call_time: Duration,
}

impl EcmaBudget {
    /// The default step budget. The bound is loose, so real work at it is
    /// far less: at the edge of it, the slowest shapes tried took regress
    /// 0.04-0.24 s (a release build, one line).
    pub const DEFAULT_STEPS: f64 = 1e8;
    /// The default time budget of one content search.
    pub const DEFAULT_CALL_TIME: Duration = Duration::from_secs(10);
}

impl Default for EcmaBudget {
    fn default() -> EcmaBudget {
        EcmaBudget {
            steps: EcmaBudget::DEFAULT_STEPS,
            call_time: EcmaBudget::DEFAULT_CALL_TIME,
        }
    }
}

/// Why matching stopped before its answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EcmaStop {
    /// The text is too long for regress under the step budget.
    #[error(
        "regex refused for {what}: this needs the backtracking engine ({why}), which could \
         take up to {bound:.1e} steps on its {bytes} bytes, over the step budget of \
         {budget:.0e}; simplify the pattern, or work on a shorter text"
    )]
    OverBudget {
        /// What was refused (`the text`, `a line`).
        what: String,
        /// Why the linear engine could not answer.
        why: &'static str,
        /// Its length in bytes.
        bytes: usize,
        /// Its step bound.
        bound: f64,
        /// The budget.
        budget: f64,
    },
    /// A content search gave regress all the time one call may have.
    #[error(
        "regex search stopped: the backtracking engine this pattern needs ran for the whole \
         {}s budget of one call; narrow the search (directory, globs) or drop the \
         lookaround or backreference",
        budget.as_secs()
    )]
    CallTime {
        /// The budget spent.
        budget: Duration,
    },
    /// The call was cancelled.
    #[error("call cancelled")]
    Cancelled,
}

/// One match: its range and its groups' (byte offsets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Group 0 is the whole match; a group that took no part is `None`.
    groups: Vec<Option<Range<usize>>>,
}

impl Found {
    /// Where the match is.
    pub fn range(&self) -> Range<usize> {
        self.groups.first().cloned().flatten().unwrap_or(0..0)
    }

    /// Where it starts.
    pub fn start(&self) -> usize {
        self.range().start
    }

    /// Where it ends.
    pub fn end(&self) -> usize {
        self.range().end
    }

    /// Where group `index` matched (0: the whole match).
    pub fn group(&self, index: usize) -> Option<Range<usize>> {
        self.groups.get(index).cloned().flatten()
    }
}

/// The matches in a text, left to right, not overlapping; each checks
/// the cancel flag first.
pub struct Matches<'a> {
    engine: Engine<'a>,
    cancel: &'a AtomicBool,
    done: bool,
}

enum Engine<'a> {
    Linear {
        linear: &'a Linear,
        text: &'a str,
        at: usize,
    },
    Regress(regress::Matches<'a, 'a>),
}

impl Iterator for Matches<'_> {
    type Item = Result<Found, EcmaStop>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.cancel.load(Ordering::Relaxed) {
            self.done = true;
            return Some(Err(EcmaStop::Cancelled));
        }
        let found = match &mut self.engine {
            Engine::Linear { linear, text, at } => {
                let groups = linear.captures_from(text, *at)?;
                let range = groups.first().cloned().flatten().unwrap_or(0..0);
                // As regress goes on: from the end, or one character
                // further after an empty match.
                *at = if range.is_empty() {
                    match text[range.end..].chars().next() {
                        Some(c) => range.end + c.len_utf8(),
                        None => {
                            self.done = true;
                            range.end
                        }
                    }
                } else {
                    range.end
                };
                Found { groups }
            }
            Engine::Regress(matches) => {
                let found = matches.next()?;
                Found {
                    groups: found.groups().collect(),
                }
            }
        };
        Some(Ok(found))
    }
}
/// A compiled ECMAScript regex with the facts its users need.
#[derive(Debug, Clone)]
pub struct EcmaRegex {
    regex: regress::Regex,
    pattern: String,
    case_insensitive: bool,
    groups: usize,
    /// Whether regex-syntax reads the pattern as regress does (for the
    /// prefilter).
    same_in_rust: bool,
    /// The Rust engine, when it matches as regress does.
    linear: Option<Linear>,
    /// The step bound of regress on it.
    cost: cost::Model,
}

impl EcmaRegex {
    /// Compiles `pattern` with multiline anchors, `.` not crossing line
    /// breaks, and case-insensitive matching when asked.
    pub fn new(pattern: &str, case_insensitive: bool) -> Result<EcmaRegex, EcmaError> {
        if pattern.len() > MAX_PATTERN_BYTES {
            return Err(EcmaError::TooLong(pattern.len()));
        }
        let flags = regress::Flags {
            icase: case_insensitive,
            multiline: true,
            ..regress::Flags::default()
        };
        let regex = regress::Regex::with_flags(pattern, flags)
            .map_err(|err| EcmaError::Syntax(err.to_string()))?;
        let shape = shape::read(pattern);
        let mut sets = bounded::CharSets::new(case_insensitive);
        let linear = Linear::new(pattern, &shape, &mut sets);
        // A pattern the linear engine takes never reaches regress in a
        // search, but edits may still need regress for its spans.
        bounded::check(&shape.alternatives, &mut sets)
            .map_err(|explosive| EcmaError::Explosive(explosive.why))?;
        let cost = cost::Model::new(&shape.alternatives, &mut sets);
        Ok(EcmaRegex {
            regex,
            pattern: pattern.to_string(),
            case_insensitive,
            groups: shape.groups,
            same_in_rust: shape.same_in_rust,
            linear,
            cost,
        })
    }

    /// A literal text to find, as a regex (case-insensitive when asked).
    pub fn literal(text: &str, case_insensitive: bool) -> Result<EcmaRegex, EcmaError> {
        EcmaRegex::new(&regress::escape(text), case_insensitive)
    }

    /// The pattern as given.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether it matches case-insensitively.
    pub fn case_insensitive(&self) -> bool {
        self.case_insensitive
    }

    /// How many capture groups the pattern has.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// Refuses a template that refers to a group the pattern lacks.
    pub fn check_template(&self, template: &Template) -> Result<(), EcmaError> {
        match template.highest_group() {
            Some((group, written)) if group > self.groups => Err(EcmaError::MissingGroup {
                written: written.to_string(),
                group,
                groups: self.groups,
            }),
            _ => Ok(()),
        }
    }

    /// Whether the linear engine serves this pattern: searches (which
    /// lines match) always, and edits too when it places matches and
    /// groups as regress does.
    pub fn is_linear(&self) -> bool {
        self.linear.is_some()
    }

    /// The matches in `text`, left to right, not overlapping: from the
    /// linear engine when it places them, and the groups `template`
    /// inserts, as regress does; else from regress when the text's step
    /// bound is within `budget.steps`.
    pub fn matches<'a>(
        &'a self,
        text: &'a str,
        template: Option<&Template>,
        budget: &EcmaBudget,
        cancel: &'a AtomicBool,
    ) -> Result<Matches<'a>, EcmaStop> {
        let reads = |group: u32| template.is_some_and(|t| t.reads(group as usize));
        let alike = match &self.linear {
            Some(linear) => linear.spans_alike(text, reads).map(|()| linear),
            None => Err(linear::NOT_READ_ALIKE),
        };
        let engine = match alike {
            Ok(linear) => Engine::Linear {
                linear,
                text,
                at: 0,
            },
            Err(why) => {
                let bound = self.cost.bound(Extent::text(text));
                if bound > budget.steps {
                    return Err(EcmaStop::OverBudget {
                        what: "the text".into(),
                        why,
                        bytes: text.len(),
                        bound,
                        budget: budget.steps,
                    });
                }
                Engine::Regress(self.regex.find_iter(text))
            }
        };
        Ok(Matches {
            engine,
            cancel,
            done: false,
        })
    }

    /// At most how many steps regress could take searching all of `text`
    /// (see the module's notes); infinite when past counting.
    pub fn step_bound(&self, text: &str) -> f64 {
        self.cost.bound(Extent::text(text))
    }

    /// The first match of regress itself in `text` at or after byte
    /// `start` (a character boundary), without any budget: a reference
    /// answer for tests on short texts, never for user input.
    pub fn find_from(&self, text: &str, start: usize) -> Option<Range<usize>> {
        self.regex
            .find_from(text, start)
            .next()
            .map(|found| found.range())
    }

    /// Every match of regress itself, unbudgeted (see
    /// [`EcmaRegex::find_from`]).
    pub fn regress_matches(&self, text: &str) -> Vec<Found> {
        self.regex
            .find_iter(text)
            .map(|found| Found {
                groups: found.groups().collect(),
            })
            .collect()
    }

    fn same_in_rust(&self) -> bool {
        self.same_in_rust
    }
}

#[cfg(test)]
mod tests;
