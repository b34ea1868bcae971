//! An ECMAScript regex as a `grep_matcher::Matcher`, so ripgrep's searcher
//! can drive it, line by line.
//!
//! Every match attempt sees one line (without its `\n`): the line
//! terminator is never part of a match, which lets the searcher take its
//! fast path over whole buffers, and the text a backtracking attempt can
//! wander over stays one line long.
//!
//! Prefilter: when regex-syntax reads the pattern the way regress does
//! (see `shape`), the literals every match must start (or end) with are
//! extracted from its syntax tree, and lines holding none of them are
//! skipped without running regress. Each line that holds one is still
//! matched by regress, so the results are exactly regress's; the
//! prefilter only has to never skip a line regress would match, which
//! holds because both dialects give those literals the same meaning. Under
//! case-insensitive matching the literals must be ASCII: ECMAScript's
//! non-Unicode case folding never maps a non-ASCII character to an ASCII
//! one, so an ASCII-case-insensitive search finds every candidate.

use aho_corasick::AhoCorasick;
use grep_matcher::{LineMatchKind, LineTerminator, Match, Matcher, NoCaptures, NoError};
use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};
use regex_syntax::hir::{Capture, Class, Dot, Hir, HirKind, Repetition};

use super::EcmaRegex;

/// A compiled ECMAScript regex ready for grep-searcher.
#[derive(Debug, Clone)]
pub struct EcmaMatcher {
    regex: EcmaRegex,
    prefilter: Option<AhoCorasick>,
}

/// Literal sets larger than this make a poor prefilter.
const MAX_LITERALS: usize = 64;

impl EcmaMatcher {
    /// Wraps `regex`, with a prefilter when one is sound.
    pub fn new(regex: EcmaRegex) -> EcmaMatcher {
        let prefilter = if regex.same_in_rust() {
            prefilter_for(regex.pattern(), regex.case_insensitive())
        } else {
            None
        };
        EcmaMatcher { regex, prefilter }
    }

    /// The regex.
    pub fn regex(&self) -> &EcmaRegex {
        &self.regex
    }

    /// The workspace index's trigram query for this regex: a file whose
    /// trigrams fail it holds no line regress matches. Built only when
    /// regex-syntax reads the pattern as regress does (as for the
    /// prefilter); otherwise every file passes.
    ///
    /// Soundness, on top of the prefilter's: every non-ASCII character of
    /// the pattern, and every class with a non-ASCII member, is widened to
    /// "any character". That covers ECMAScript's case folding (under which
    /// an ASCII character only meets its ASCII case partner, which the
    /// index's ASCII folding already equates, while a non-ASCII one may
    /// meet other non-ASCII forms), classes whose non-ASCII members differ
    /// between the dialects (`\s` holds U+FEFF only in ECMAScript), and
    /// lines that are not UTF-8, which are matched as decoded with U+FFFD
    /// for their invalid bytes (ASCII bytes decode as themselves).
    /// Anchors and `\b` match no character, so the query ignores them.
    pub(crate) fn trigram_query(&self) -> agent_tools_index::Query {
        if !self.regex.same_in_rust() {
            return agent_tools_index::Query::All;
        }
        let parsed = regex_syntax::ParserBuilder::new()
            .multi_line(true)
            .build()
            .parse(self.regex.pattern());
        match parsed {
            Ok(hir) => agent_tools_index::regex_query(&ascii_only(&hir)),
            Err(_) => agent_tools_index::Query::All,
        }
    }

    /// Whether lines are skipped by literal before regress runs.
    pub fn has_prefilter(&self) -> bool {
        self.prefilter.is_some()
    }

    /// The first match in the line `haystack[start..end]` at or after
    /// byte `from`, in haystack offsets.
    fn match_in_line(
        &self,
        haystack: &[u8],
        start: usize,
        end: usize,
        from: usize,
    ) -> Option<Match> {
        let line = &haystack[start..end];
        match std::str::from_utf8(line) {
            Ok(text) => {
                let mut offset = from - start;
                while !text.is_char_boundary(offset) {
                    offset += 1;
                }
                self.regex
                    .find_from(text, offset)
                    .map(|found| Match::new(start + found.start(), start + found.end()))
            }
            // Not UTF-8: matched as decoded with replacement characters;
            // the line as a whole is reported (offsets inside it differ).
            Err(_) => {
                let text = String::from_utf8_lossy(line);
                self.regex
                    .find_from(&text, 0)
                    .map(|_| Match::new(from.max(start), end))
            }
        }
    }
}

fn line_start(haystack: &[u8], at: usize) -> usize {
    memchr::memrchr(b'\n', &haystack[..at]).map_or(0, |i| i + 1)
}

fn line_end(haystack: &[u8], at: usize) -> usize {
    memchr::memchr(b'\n', &haystack[at..]).map_or(haystack.len(), |i| at + i)
}

impl Matcher for EcmaMatcher {
    type Captures = NoCaptures;
    type Error = NoError;

    fn find_at(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, NoError> {
        let mut pos = at;
        while pos < haystack.len() {
            let from = match &self.prefilter {
                Some(prefilter) => match prefilter.find(&haystack[pos..]) {
                    Some(hit) => line_start(haystack, pos + hit.start()).max(pos),
                    None => return Ok(None),
                },
                None => pos,
            };
            let start = line_start(haystack, from);
            let end = line_end(haystack, from);
            if let Some(found) = self.match_in_line(haystack, start, end, from) {
                return Ok(Some(found));
            }
            pos = end + 1;
        }
        Ok(None)
    }

    fn new_captures(&self) -> Result<NoCaptures, NoError> {
        Ok(NoCaptures::new())
    }

    fn line_terminator(&self) -> Option<LineTerminator> {
        Some(LineTerminator::byte(b'\n'))
    }

    fn find_candidate_line(&self, haystack: &[u8]) -> Result<Option<LineMatchKind>, NoError> {
        Ok(match &self.prefilter {
            Some(prefilter) => prefilter
                .find(haystack)
                .map(|hit| LineMatchKind::Candidate(hit.start())),
            None => self
                .find_at(haystack, 0)?
                .map(|found| LineMatchKind::Confirmed(found.start())),
        })
    }
}

/// `hir` with every non-ASCII character and every class holding one
/// turned into "any character" (see [`EcmaMatcher::trigram_query`]).
fn ascii_only(hir: &Hir) -> Hir {
    let any = || Hir::dot(Dot::AnyChar);
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => hir.clone(),
        HirKind::Literal(literal) => match std::str::from_utf8(&literal.0) {
            Ok(text) => Hir::concat(
                text.chars()
                    .map(|c| {
                        if c.is_ascii() {
                            Hir::literal(c.to_string().into_bytes())
                        } else {
                            any()
                        }
                    })
                    .collect(),
            ),
            Err(_) => any(),
        },
        HirKind::Class(Class::Unicode(class)) => {
            if class.ranges().iter().any(|range| !range.end().is_ascii()) {
                any()
            } else {
                hir.clone()
            }
        }
        HirKind::Class(Class::Bytes(class)) => {
            if class.ranges().iter().any(|range| !range.end().is_ascii()) {
                any()
            } else {
                hir.clone()
            }
        }
        HirKind::Repetition(repetition) => Hir::repetition(Repetition {
            sub: Box::new(ascii_only(&repetition.sub)),
            ..repetition.clone()
        }),
        HirKind::Capture(capture) => Hir::capture(Capture {
            sub: Box::new(ascii_only(&capture.sub)),
            ..capture.clone()
        }),
        HirKind::Concat(parts) => Hir::concat(parts.iter().map(ascii_only).collect()),
        HirKind::Alternation(parts) => Hir::alternation(parts.iter().map(ascii_only).collect()),
    }
}

/// The literal search every match must pass, if the pattern has one.
fn prefilter_for(pattern: &str, case_insensitive: bool) -> Option<AhoCorasick> {
    let hir = regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .build()
        .parse(pattern)
        .ok()?;
    let usable = |seq: &Seq| -> Option<Vec<Vec<u8>>> {
        let literals = seq.literals()?;
        let bytes: Vec<Vec<u8>> = literals.iter().map(|l| l.as_bytes().to_vec()).collect();
        let fits = !bytes.is_empty()
            && bytes.len() <= MAX_LITERALS
            && bytes.iter().all(|b| !b.is_empty() && !b.contains(&b'\n'))
            && (!case_insensitive || bytes.iter().all(|b| b.is_ascii()));
        fits.then_some(bytes)
    };
    let best = [ExtractKind::Prefix, ExtractKind::Suffix]
        .into_iter()
        .filter_map(|kind| usable(&Extractor::new().kind(kind).extract(&hir)))
        .max_by_key(|literals| literals.iter().map(Vec::len).min().unwrap_or(0))?;
    AhoCorasick::builder()
        .ascii_case_insensitive(case_insensitive)
        .build(&best)
        .ok()
}
