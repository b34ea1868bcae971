//! An ECMAScript regex as a `grep_matcher::Matcher`, so ripgrep's searcher
//! can drive it, line by line.
//!
//! Every match attempt sees one line (without its `\n`): the line
//! terminator is never part of a match, which lets the searcher take its
//! fast path over whole buffers, and the text a backtracking attempt can
//! wander over stays one line long.
//!
//! Each line is matched by the linear engine when it reads the pattern as
//! regress does (see `linear`), else by regress within the step budget
//! (see `cost`): a longer line is skipped and counted, never handed to
//! regress. The cancel flag is read before every line.
//!
//! Prefilter: when regex-syntax reads the pattern the way regress does
//! (see `shape`), the literals every match must start (or end) with are
//! extracted from its syntax tree, and lines holding none of them are
//! skipped without running either engine. Each line that holds one is
//! still matched, so the results are exactly regress's; the prefilter only
//! has to never skip a line regress would match, which holds because both
//! dialects give those literals the same meaning. The literals are ASCII
//! (non-ASCII characters widened to any character, see `ascii_only`):
//! under case-insensitive matching because ECMAScript's non-Unicode case
//! folding never maps a non-ASCII character to an ASCII one, so an
//! ASCII-case-insensitive search finds every candidate; and always because
//! a line that is not UTF-8 is matched as decoded, its invalid bytes as
//! U+FFFD, which its raw bytes do not spell.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aho_corasick::AhoCorasick;
use grep_matcher::{LineMatchKind, LineTerminator, Match, Matcher, NoCaptures};
use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};
use regex_syntax::hir::{Capture, Class, Dot, Hir, HirKind, Repetition};

use super::{EcmaBudget, EcmaRegex, EcmaStop};

/// A compiled ECMAScript regex ready for grep-searcher.
#[derive(Debug, Clone)]
pub struct EcmaMatcher {
    regex: EcmaRegex,
    prefilter: Option<AhoCorasick>,
    /// The longest line regress may search under the default budget.
    default_longest_line: usize,
}

/// Literal sets larger than this make a poor prefilter.
const MAX_LITERALS: usize = 64;

/// The longest line the step budget is worked out for: past the largest
/// file searched, even decoded with replacement characters.
const LONGEST_LINE: usize = 1 << 32;

impl EcmaMatcher {
    /// Wraps `regex`, with a prefilter when one is sound.
    pub fn new(regex: EcmaRegex) -> EcmaMatcher {
        let prefilter = if regex.same_in_rust() {
            prefilter_for(regex.pattern(), regex.case_insensitive())
        } else {
            None
        };
        let default_longest_line = longest_line(&regex, EcmaBudget::DEFAULT_STEPS);
        EcmaMatcher {
            regex,
            prefilter,
            default_longest_line,
        }
    }

    /// The regex.
    pub fn regex(&self) -> &EcmaRegex {
        &self.regex
    }

    /// The pattern as a regex-syntax expression fit for a trigram index's
    /// query: a file whose trigrams fail the query built from it holds no
    /// line regress matches. `None` when regex-syntax does not read the
    /// pattern as regress does (as for the prefilter): then nothing may be
    /// narrowed and every file passes.
    ///
    /// Soundness, on top of the prefilter's: every non-ASCII character of
    /// the pattern, and every class with a non-ASCII member, is widened to
    /// "any character". That covers ECMAScript's case folding (under which
    /// an ASCII character only meets its ASCII case partner, which an
    /// index's ASCII folding already equates, while a non-ASCII one may
    /// meet other non-ASCII forms), classes whose non-ASCII members differ
    /// between the dialects (`\s` holds U+FEFF only in ECMAScript), and
    /// lines that are not UTF-8, which are matched as decoded with U+FFFD
    /// for their invalid bytes (ASCII bytes decode as themselves).
    /// Anchors and `\b` match no character, so a query may ignore them.
    ///
    /// The expression rather than the query itself, so that this engine
    /// and the workspace index need not know each other: regex-syntax's
    /// `Hir` is the language both already speak.
    pub fn trigram_hir(&self) -> Option<Hir> {
        if !self.regex.same_in_rust() {
            return None;
        }
        let parsed = regex_syntax::ParserBuilder::new()
            .multi_line(true)
            .build()
            .parse(self.regex.pattern());
        parsed.ok().map(|hir| ascii_only(&hir))
    }

    /// Whether lines are skipped by literal before the regex runs.
    pub fn has_prefilter(&self) -> bool {
        self.prefilter.is_some()
    }

    /// The matcher of one file within `run`.
    pub fn in_run<'a>(&'a self, run: &'a SearchRun<'a>) -> LineMatcher<'a> {
        LineMatcher {
            matcher: self,
            run,
            over: Cell::new(None),
        }
    }
}

/// The longest line regress may search for `regex` within `steps`.
fn longest_line(regex: &EcmaRegex, steps: f64) -> usize {
    regex.cost.longest_line_within(steps, LONGEST_LINE)
}

/// One content search's budget, shared by the threads searching for it.
#[derive(Debug)]
pub struct SearchRun<'a> {
    budget: EcmaBudget,
    cancel: &'a AtomicBool,
    /// The longest line regress may be given.
    longest_line: usize,
    /// Nanoseconds regress has run for this search.
    spent: AtomicU64,
    /// Why the search stopped, once it has.
    stop: OnceLock<EcmaStop>,
}

impl<'a> SearchRun<'a> {
    /// A search with `matcher` within `budget`, stopped by `cancel`.
    pub fn new(matcher: &EcmaMatcher, budget: EcmaBudget, cancel: &'a AtomicBool) -> SearchRun<'a> {
        let longest_line = if budget.steps == EcmaBudget::DEFAULT_STEPS {
            matcher.default_longest_line
        } else {
            longest_line(&matcher.regex, budget.steps)
        };
        SearchRun {
            budget,
            cancel,
            longest_line,
            spent: AtomicU64::new(0),
            stop: OnceLock::new(),
        }
    }

    /// Why the search stopped early (cancelled, or out of time), if it did.
    pub fn stopped(&self) -> Option<&EcmaStop> {
        self.stop.get()
    }

    fn halt(&self, why: EcmaStop) -> EcmaStop {
        self.stop.get_or_init(|| why).clone()
    }

    /// Charges `took` of regress time; past the budget, the search stops.
    fn charge(&self, took: Duration) -> Result<(), EcmaStop> {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let spent = self
            .spent
            .fetch_add(nanos, Ordering::Relaxed)
            .saturating_add(nanos);
        if u128::from(spent) > self.budget.call_time.as_nanos() {
            return Err(self.halt(EcmaStop::CallTime {
                budget: self.budget.call_time,
            }));
        }
        Ok(())
    }
}

/// Lines of one file that were not searched: over the step budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinesOverBudget {
    /// How many.
    pub count: usize,
    /// The longest, in bytes.
    pub longest: usize,
    /// The longest line the budget allows, in bytes.
    pub allowed: usize,
    /// The step budget.
    pub budget: f64,
}

impl fmt::Display for LinesOverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} line(s) not searched: this pattern needs the backtracking engine ({}), whose \
             step budget of {:.0e} covers lines of up to {} bytes, and the longest is {} bytes",
            self.count,
            super::linear::NOT_READ_ALIKE,
            self.budget,
            self.allowed,
            self.longest
        )
    }
}

/// An [`EcmaMatcher`] searching one file within a [`SearchRun`]: the
/// cancel flag is checked at each line, a line too long for regress's
/// step budget is skipped and counted (see [`LineMatcher::over_budget`]),
/// and regress's time is charged to the run.
#[derive(Debug)]
pub struct LineMatcher<'a> {
    matcher: &'a EcmaMatcher,
    run: &'a SearchRun<'a>,
    over: Cell<Option<LinesOverBudget>>,
}

impl LineMatcher<'_> {
    /// The lines skipped for the step budget, if any.
    pub fn over_budget(&self) -> Option<LinesOverBudget> {
        self.over.get()
    }

    /// The first match in the line `haystack[start..end]` at or after
    /// byte `from`, in haystack offsets.
    fn match_in_line(
        &self,
        haystack: &[u8],
        start: usize,
        end: usize,
        from: usize,
    ) -> Result<Option<Match>, EcmaStop> {
        if self.run.cancel.load(Ordering::Relaxed) {
            return Err(self.run.halt(EcmaStop::Cancelled));
        }
        let line = &haystack[start..end];
        // Not UTF-8: matched as decoded with replacement characters; the
        // line as a whole is reported (offsets inside it differ).
        let text = String::from_utf8_lossy(line);
        let exact = matches!(text, Cow::Borrowed(_));
        let mut offset = if exact { from - start } else { 0 };
        while !text.is_char_boundary(offset) {
            offset += 1;
        }
        let regex = &self.matcher.regex;
        let found = match &regex.linear {
            Some(linear) if linear.fits(&text) => linear.find_from(&text, offset),
            _ => {
                if text.len() > self.run.longest_line {
                    let mut over = self.over.get().unwrap_or(LinesOverBudget {
                        count: 0,
                        longest: 0,
                        allowed: self.run.longest_line,
                        budget: self.run.budget.steps,
                    });
                    over.count += 1;
                    over.longest = over.longest.max(text.len());
                    self.over.set(Some(over));
                    return Ok(None);
                }
                let began = Instant::now();
                let found = regex.find_from(&text, offset);
                self.run.charge(began.elapsed())?;
                found
            }
        };
        Ok(found.map(|range| {
            if exact {
                Match::new(start + range.start, start + range.end)
            } else {
                Match::new(from.max(start), end)
            }
        }))
    }

    fn find_from(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, EcmaStop> {
        let mut pos = at;
        while pos < haystack.len() {
            let from = match &self.matcher.prefilter {
                Some(prefilter) => match prefilter.find(&haystack[pos..]) {
                    Some(hit) => line_start(haystack, pos + hit.start()).max(pos),
                    None => return Ok(None),
                },
                None => pos,
            };
            let start = line_start(haystack, from);
            let end = line_end(haystack, from);
            if let Some(found) = self.match_in_line(haystack, start, end, from)? {
                return Ok(Some(found));
            }
            pos = end + 1;
        }
        Ok(None)
    }
}

fn line_start(haystack: &[u8], at: usize) -> usize {
    memchr::memrchr(b'\n', &haystack[..at]).map_or(0, |i| i + 1)
}

fn line_end(haystack: &[u8], at: usize) -> usize {
    memchr::memchr(b'\n', &haystack[at..]).map_or(haystack.len(), |i| at + i)
}

impl Matcher for LineMatcher<'_> {
    type Captures = NoCaptures;
    type Error = EcmaStop;

    fn find_at(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, EcmaStop> {
        self.find_from(haystack, at)
    }

    fn new_captures(&self) -> Result<NoCaptures, EcmaStop> {
        Ok(NoCaptures::new())
    }

    fn line_terminator(&self) -> Option<LineTerminator> {
        Some(LineTerminator::byte(b'\n'))
    }

    fn find_candidate_line(&self, haystack: &[u8]) -> Result<Option<LineMatchKind>, EcmaStop> {
        Ok(match &self.matcher.prefilter {
            Some(prefilter) => prefilter
                .find(haystack)
                .map(|hit| LineMatchKind::Candidate(hit.start())),
            None => self
                .find_from(haystack, 0)?
                .map(|found| LineMatchKind::Confirmed(found.start())),
        })
    }
}

/// Never set: the cancel flag of searches made without a run.
static NEVER_CANCELLED: AtomicBool = AtomicBool::new(false);

/// On its own (outside a [`SearchRun`]): the default budget, never
/// cancelled, and a line over the step budget is an error rather than
/// skipped.
impl Matcher for EcmaMatcher {
    type Captures = NoCaptures;
    type Error = EcmaStop;

    fn find_at(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, EcmaStop> {
        let run = SearchRun::new(self, EcmaBudget::default(), &NEVER_CANCELLED);
        let matcher = self.in_run(&run);
        let found = matcher.find_from(haystack, at)?;
        match matcher.over_budget() {
            Some(over) => Err(EcmaStop::OverBudget {
                what: "a line".into(),
                why: super::linear::NOT_READ_ALIKE,
                bytes: over.longest,
                bound: self
                    .regex
                    .cost
                    .bound(super::cost::Extent::line(over.longest)),
                budget: over.budget,
            }),
            None => Ok(found),
        }
    }

    fn new_captures(&self) -> Result<NoCaptures, EcmaStop> {
        Ok(NoCaptures::new())
    }

    fn line_terminator(&self) -> Option<LineTerminator> {
        Some(LineTerminator::byte(b'\n'))
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
///
/// Its literals are ASCII: non-ASCII characters are widened first, as for
/// the trigram query, because a line that is not UTF-8 is matched as
/// decoded, where an invalid byte stands for U+FFFD: the raw line never
/// holds the UTF-8 of a U+FFFD the pattern asks for.
fn prefilter_for(pattern: &str, case_insensitive: bool) -> Option<AhoCorasick> {
    let hir = regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .build()
        .parse(pattern)
        .ok()?;
    let hir = ascii_only(&hir);
    let usable = |seq: &Seq| -> Option<Vec<Vec<u8>>> {
        let literals = seq.literals()?;
        let bytes: Vec<Vec<u8>> = literals.iter().map(|l| l.as_bytes().to_vec()).collect();
        let fits = !bytes.is_empty()
            && bytes.len() <= MAX_LITERALS
            && bytes
                .iter()
                .all(|b| !b.is_empty() && !b.contains(&b'\n') && b.is_ascii());
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
