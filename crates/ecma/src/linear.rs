//! The linear engine: the patterns the Rust regex engine matches exactly
//! as regress does, searched in time linear in the text.
//!
//! The pattern is not re-read in the Rust dialect. Its shape (see
//! `shape`) is turned into regex-syntax's tree piece by piece, and every
//! one-character item (a literal, `.`, `\d`, `\w`, `\s`, a bracket class;
//! each under case-insensitivity when asked) becomes the exact set of
//! characters regress matches with it, asked of regress itself (see
//! `CharSets`). So `\s` holds U+FEFF, `.` leaves out `\r`, U+2028 and
//! U+2029, `\d` and `\w` are ASCII, and case folding is ECMAScript's. The
//! rest is mapped as it means the same in both:
//!
//! - sequences, alternatives, plain and capture groups (numbered in the
//!   order they open), greedy and lazy quantifiers;
//! - `\b`: ASCII word boundaries in both;
//! - `^` and `$` (multiline): at the text's ends or next to `\n` or `\r`.
//!   ECMAScript also counts U+2028 and U+2029 as line ends and matches
//!   between the `\r` and `\n` of a `\r\n`; the Rust engine does neither,
//!   so such a pattern goes to it only for texts without them
//!   ([`Linear::fits`]).
//!
//! Anything else leaves the pattern to regress: lookarounds,
//! backreferences, `\B`, modifier groups, a character past U+FFFF in the
//! pattern or a `\u` surrogate escape (their pairing is regress's own), an
//! item the shape reader may have cut differently from regress, or a tree
//! the Rust engine will not build (over its size limit).
//!
//! Whether a line holds a match is then the same in both engines: which
//! strings a pattern matches does not depend on the order alternatives
//! are tried in. Where the match is, and what its groups hold, is the same
//! only under two more conditions ([`Linear::spans_alike`]): no
//! repetition past its minimum of something that can match empty
//! (ECMAScript ends such a round, the Rust engine may not) and no capture
//! group inside a repetition (ECMAScript clears a group's capture at each
//! round).

use std::ops::Range;

use regex_automata::meta::Regex;
use regex_automata::util::captures::Captures;
use regex_automata::{Input, Span};
use regex_syntax::hir::{Capture, Class, ClassUnicode, ClassUnicodeRange, Hir, Look, Repetition};

use super::bounded::CharSets;
use super::shape::{Assertion, GroupKind, Item, Quant, Shape};

/// A pattern the Rust engine matches as regress does.
#[derive(Debug, Clone)]
pub(crate) struct Linear {
    regex: Regex,
    /// It has `^` or `$`.
    line_anchors: bool,
    /// A repetition past its minimum of something that can match empty:
    /// where matches end may differ from regress.
    empty_rounds: bool,
    /// Capture groups inside a repetition: what they hold may differ.
    repeated_groups: Vec<u32>,
}

/// Why the linear engine does not answer for a text.
pub(crate) const NOT_READ_ALIKE: &str = "it has a lookaround, a backreference, `\\B` or another \
     construct the linear engine does not read as ECMAScript does";
const EMPTY_ROUNDS: &str = "it repeats something that can match empty, whose rounds ECMAScript \
     ends its own way";
const REPEATED_GROUP: &str = "newText refers to a capture group inside a repetition, which \
     ECMAScript clears at each round";
const LINE_ENDS: &str = "the text has U+2028, U+2029 or `\\r\\n` line ends, which `^` and `$` \
     meet in ECMAScript only";

impl Linear {
    /// The linear engine for `pattern`, if it reads it as regress does.
    pub fn new(pattern: &str, shape: &Shape, sets: &mut CharSets) -> Option<Linear> {
        if !shape.exact || pattern.chars().any(|c| c as u32 > 0xFFFF) || has_surrogate(pattern) {
            return None;
        }
        let mut translator = Translator {
            sets,
            groups: 0,
            repeated_depth: 0,
            line_anchors: false,
            empty_rounds: false,
            repeated_groups: Vec::new(),
        };
        let hir = translator.alternatives(&shape.alternatives)?;
        if translator.groups as usize != shape.groups {
            return None;
        }
        let regex = Regex::builder()
            .configure(Regex::config().utf8_empty(true))
            .build_from_hir(&hir)
            .ok()?;
        Some(Linear {
            regex,
            line_anchors: translator.line_anchors,
            empty_rounds: translator.empty_rounds,
            repeated_groups: translator.repeated_groups,
        })
    }

    /// Whether the matches in `text`, and the groups `reads` asks for,
    /// agree with regress's; if not, why.
    pub fn spans_alike(&self, text: &str, reads: impl Fn(u32) -> bool) -> Result<(), &'static str> {
        if self.empty_rounds {
            return Err(EMPTY_ROUNDS);
        }
        if self.repeated_groups.iter().any(|&group| reads(group)) {
            return Err(REPEATED_GROUP);
        }
        if !self.fits(text) {
            return Err(LINE_ENDS);
        }
        Ok(())
    }

    /// Whether `text` is one this engine reads as regress does: without
    /// `^`/`$`, any; with them, one with no U+2028, U+2029 or `\r\n`.
    pub fn fits(&self, text: &str) -> bool {
        !self.line_anchors
            || !(text.contains("\r\n") || text.contains('\u{2028}') || text.contains('\u{2029}'))
    }

    /// The first match at or after byte `from` (a character boundary),
    /// the text before it seen by `^`, `$` and `\b`.
    pub fn find_from(&self, text: &str, from: usize) -> Option<Range<usize>> {
        self.regex
            .search(&Input::new(text).range(from..))
            .map(|found| found.range())
    }

    /// Like [`Linear::find_from`], with the groups (group 0 the match).
    pub fn captures_from(&self, text: &str, from: usize) -> Option<Vec<Option<Range<usize>>>> {
        let mut captures: Captures = self.regex.create_captures();
        self.regex
            .search_captures(&Input::new(text).range(from..), &mut captures);
        if !captures.is_match() {
            return None;
        }
        Some(
            (0..captures.group_len())
                .map(|index| captures.get_group(index).map(|span: Span| span.range()))
                .collect(),
        )
    }
}

/// A `\u` escape of a UTF-16 surrogate, which regress may pair up.
fn has_surrogate(pattern: &str) -> bool {
    let bytes = pattern.as_bytes();
    // An escaped backslash before one makes it literal text; counted all
    // the same, which only sends the pattern to regress.
    bytes.windows(4).any(|window| {
        window[0] == b'\\'
            && window[1] == b'u'
            && matches!(window[2], b'd' | b'D')
            && matches!(window[3], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
    })
}

struct Translator<'s> {
    sets: &'s mut CharSets,
    /// Capture groups opened so far.
    groups: u32,
    /// How many repetitions (past one round) enclose the current item.
    repeated_depth: usize,
    line_anchors: bool,
    empty_rounds: bool,
    repeated_groups: Vec<u32>,
}

impl Translator<'_> {
    fn alternatives(&mut self, alternatives: &[Vec<Item>]) -> Option<Hir> {
        let sequences = alternatives
            .iter()
            .map(|sequence| self.sequence(sequence))
            .collect::<Option<Vec<Hir>>>()?;
        Some(Hir::alternation(sequences))
    }

    fn sequence(&mut self, sequence: &[Item]) -> Option<Hir> {
        let items = sequence
            .iter()
            .map(|item| self.item(item))
            .collect::<Option<Vec<Hir>>>()?;
        Some(Hir::concat(items))
    }

    fn item(&mut self, item: &Item) -> Option<Hir> {
        match item {
            Item::Atom { source, quant } => {
                // Unknown (past the sampling cap, or not one character):
                // left to regress.
                let members = self.sets.members(source)?;
                let ranges = members
                    .ranges()
                    .into_iter()
                    .map(|(start, end)| ClassUnicodeRange::new(start, end));
                let class = Hir::class(Class::Unicode(ClassUnicode::new(ranges)));
                Some(self.quantified(class, *quant))
            }
            Item::Assertion(assertion) => {
                let look = match assertion {
                    Assertion::LineStart => Look::StartCRLF,
                    Assertion::LineEnd => Look::EndCRLF,
                    Assertion::WordBoundary => Look::WordAscii,
                    Assertion::NotWordBoundary | Assertion::Stray => return None,
                };
                if matches!(assertion, Assertion::LineStart | Assertion::LineEnd) {
                    self.line_anchors = true;
                }
                Some(Hir::look(look))
            }
            Item::BackRef { .. } => None,
            Item::Group {
                kind,
                alternatives,
                quant,
            } => {
                let repeated = quant.is_some_and(Quant::repeats);
                self.repeated_depth += usize::from(repeated);
                let sub = match kind {
                    GroupKind::Capture => {
                        self.groups += 1;
                        let index = self.groups;
                        if self.repeated_depth > 0 {
                            self.repeated_groups.push(index);
                        }
                        let inner = self.alternatives(alternatives)?;
                        Hir::capture(Capture {
                            index,
                            name: None,
                            sub: Box::new(inner),
                        })
                    }
                    GroupKind::Plain => self.alternatives(alternatives)?,
                    GroupKind::Look | GroupKind::Other => return None,
                };
                self.repeated_depth -= usize::from(repeated);
                Some(self.quantified(sub, *quant))
            }
        }
    }

    fn quantified(&mut self, sub: Hir, quant: Option<Quant>) -> Hir {
        let Some(quant) = quant else {
            return sub;
        };
        let past_minimum = quant.max.is_none_or(|max| max > quant.min);
        if past_minimum && sub.properties().minimum_len() == Some(0) {
            self.empty_rounds = true;
        }
        Hir::repetition(Repetition {
            min: quant.min,
            max: quant.max,
            greedy: quant.greedy,
            sub: Box::new(sub),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::shape;
    use super::*;

    fn linear(pattern: &str, case_insensitive: bool) -> Option<Linear> {
        Linear::new(
            pattern,
            &shape::read(pattern),
            &mut CharSets::new(case_insensitive),
        )
    }

    #[test]
    fn reads_everyday_patterns_and_leaves_the_rest_to_regress() {
        for pattern in [
            "if.*return.*TODO",
            "(a?){40}a{40}",
            r"fn\s+(\w+)\s*\(",
            "^foo$",
            r"\bword\b",
            "[^]x",
            r"\x41\u00e9",
        ] {
            assert!(linear(pattern, false).is_some(), "{pattern}");
        }
        for pattern in [
            "(?=a*)a*a*a*b",
            r"(?<=\$)\d+",
            r"(a)\1",
            r"\Bx",
            r"\01",
            "a{99999999999999999999999999999999999999999}",
            r"\uD83D\uDE00",
            "😀",
        ] {
            assert!(linear(pattern, false).is_none(), "{pattern}");
        }
    }

    #[test]
    fn classes_are_ecmascripts() {
        let find = |pattern: &str, ci: bool, text: &str| {
            linear(pattern, ci)
                .unwrap()
                .find_from(text, 0)
                .map(|r| text[r].to_string())
        };
        // `\s` holds U+FEFF; `\d` and `\w` are ASCII; `.` stops at `\r`.
        assert_eq!(
            find(r"a\sb", false, "a\u{FEFF}b").as_deref(),
            Some("a\u{FEFF}b")
        );
        assert_eq!(find(r"\d+", false, "٣7").as_deref(), Some("7"));
        assert_eq!(find(r"\w+", false, "éab").as_deref(), Some("ab"));
        assert_eq!(find("a.b", false, "a\rb"), None);
        // Case folding is regress's, whatever it makes of the odd cases.
        for (pattern, text) in [("s", "ſ"), ("k", "\u{212A}"), ("É", "é"), ("ß", "SS")] {
            let regress = regress::Regex::with_flags(pattern, "i").unwrap();
            let expected = regress.find(text).map(|m| text[m.range()].to_string());
            assert_eq!(find(pattern, true, text), expected, "{pattern} {text}");
        }
        assert_eq!(find("É", true, "é").as_deref(), Some("é"));
    }

    #[test]
    fn line_anchors_fit_only_texts_without_other_line_ends() {
        let anchored = linear("^b$", false).unwrap();
        assert!(anchored.fits("a\nb\rc"));
        assert!(!anchored.fits("a\r\nb"));
        assert!(!anchored.fits("a\u{2028}b"));
        assert_eq!(anchored.find_from("a\rb\rc", 0), Some(2..3));
        assert!(linear("b", false).unwrap().fits("a\u{2028}b"));
    }

    #[test]
    fn spans_alike_only_without_empty_rounds_or_repeated_captures_read() {
        let alike = |pattern: &str, group: u32| {
            linear(pattern, false)
                .unwrap()
                .spans_alike("text", |read| read == group)
                .is_ok()
        };
        assert!(alike("(a+)b", 1));
        assert!(alike("(?:a?){3}", 0));
        assert!(!alike("(?:a|)*", 0));
        assert!(!alike("(?:(a)|b)+", 1));
        assert!(alike("(?:(a)|b)+", 0));
    }
}
