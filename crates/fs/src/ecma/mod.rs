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
//! Bounded work: regress backtracks and has no step limit, so a pattern of
//! a shape known to take exponential time is refused at compile time (see
//! `bounded`), patterns are at most [`MAX_PATTERN_BYTES`], and the callers
//! bound the text one match attempt sees (a line for search, a file under
//! the size limit for edits).
//!
//! ```
//! use agent_tools_fs::ecma::{EcmaRegex, Template};
//!
//! let regex = EcmaRegex::new("^(.*)$", false).unwrap();
//! let template = Template::parse("\"$1\"");
//! regex.check_template(&template).unwrap();
//! let text = "one\ntwo";
//! let found = regex.find_iter(text).next().unwrap();
//! let mut out = String::new();
//! template.expand_into(&found, text, &mut out);
//! assert_eq!(out, "\"one\"");
//! ```

mod bounded;
mod matcher;
mod search;
mod shape;
mod template;

use std::fmt;

pub use matcher::EcmaMatcher;
pub use search::{BINARY_PROBE_BYTES, EcmaSearch, FileLines, FoundLine, SearchFound};
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
        bounded::check(
            &shape.alternatives,
            &mut bounded::CharSets::new(case_insensitive),
        )
        .map_err(|explosive| EcmaError::Explosive(explosive.why))?;
        Ok(EcmaRegex {
            regex,
            pattern: pattern.to_string(),
            case_insensitive,
            groups: shape.groups,
            same_in_rust: shape.same_in_rust,
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

    /// The matches in `text`, left to right, not overlapping.
    pub fn find_iter<'r, 't>(&'r self, text: &'t str) -> regress::Matches<'r, 't> {
        self.regex.find_iter(text)
    }

    /// The first match in `text` at or after byte `start` (a character
    /// boundary).
    pub fn find_from(&self, text: &str, start: usize) -> Option<regress::Match> {
        self.regex.find_from(text, start).next()
    }

    fn same_in_rust(&self) -> bool {
        self.same_in_rust
    }
}

#[cfg(test)]
mod tests;
