//! The shape of an ECMAScript pattern, read for what regress does not
//! tell: how many capture groups it has, whether its repetitions can make
//! the backtracker's work explode, and whether regex-syntax would read it
//! the same way (so literals it extracts are a sound prefilter).
//!
//! Why hand-written: regress keeps its syntax tree private, and
//! regex-syntax parses a different dialect. This is not a second parser
//! of the language: the pattern has already been accepted by regress
//! when it is read here, and only its nesting (groups, classes, escapes,
//! quantifiers, alternatives) is recovered. What a character class or an
//! escape matches is always asked of regress itself (see `sets`).

/// A quantifier: how often the item before it may repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Quant {
    pub min: u32,
    /// `None`: unbounded.
    pub max: Option<u32>,
    /// Takes as many rounds as it can first (no `?` after it).
    pub greedy: bool,
}

impl Quant {
    /// May repeat more than once.
    pub fn repeats(self) -> bool {
        self.max.is_none_or(|max| max > 1)
    }

    pub fn unbounded(self) -> bool {
        self.max.is_none()
    }
}

/// One item of a sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// Matches one character: its source text (a literal, `.`, an escape
    /// such as `\w`, or a bracket class).
    Atom {
        source: String,
        quant: Option<Quant>,
    },
    /// A group of alternatives; lookarounds included.
    Group {
        kind: GroupKind,
        alternatives: Vec<Vec<Item>>,
        quant: Option<Quant>,
    },
    /// `^`, `$`, `\b`, `\B`: matches no character.
    Assertion(Assertion),
    /// `\1` or `\k<name>`.
    BackRef { quant: Option<Quant> },
}

impl Item {
    fn quant_mut(&mut self) -> Option<&mut Option<Quant>> {
        match self {
            Item::Atom { quant, .. } | Item::Group { quant, .. } | Item::BackRef { quant } => {
                Some(quant)
            }
            Item::Assertion(_) => None,
        }
    }
}

/// What a group is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupKind {
    /// `(...)` or `(?<name>...)`: numbered in the order it opens.
    Capture,
    /// `(?:...)`.
    Plain,
    /// `(?=...)`, `(?!...)`, `(?<=...)`, `(?<!...)`: matches no character.
    Look,
    /// A modifier group or a newer construct, read only for its nesting.
    Other,
}

/// A zero-width assertion outside lookarounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Assertion {
    /// `^`: the start of the text or of a line (multiline mode).
    LineStart,
    /// `$`: the end of the text or of a line.
    LineEnd,
    /// `\b`.
    WordBoundary,
    /// `\B`.
    NotWordBoundary,
    /// A lone `\` at the end (not reachable for a pattern regress took).
    Stray,
}

/// What reading a pattern found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    /// The top-level alternatives.
    pub alternatives: Vec<Vec<Item>>,
    /// How many capture groups (numbered and named).
    pub groups: usize,
    /// Whether regex-syntax reads every construct of the pattern as
    /// regress does (in non-Unicode ECMAScript mode), as far as literals go.
    pub same_in_rust: bool,
    /// Whether every item was cut where regress cuts it. Not so for a
    /// literal `{` before a digit (a count too long to read here may be a
    /// quantifier to regress) and for `\0` before a digit (an octal
    /// escape to regress).
    pub exact: bool,
}

/// Reads `pattern` (one regress accepted).
pub(crate) fn read(pattern: &str) -> Shape {
    let chars: Vec<char> = pattern.chars().collect();
    let mut reader = Reader {
        chars: &chars,
        at: 0,
        groups: 0,
        same_in_rust: true,
        exact: true,
    };
    let alternatives = reader.alternatives();
    // A stray `)` cannot happen in a pattern regress accepted; if it did,
    // the rest is still read so the group count stays an upper bound.
    let mut alternatives = alternatives;
    while reader.at < chars.len() {
        reader.at += 1;
        reader.same_in_rust = false;
        reader.exact = false;
        alternatives.extend(reader.alternatives());
    }
    Shape {
        alternatives,
        groups: reader.groups,
        same_in_rust: reader.same_in_rust,
        exact: reader.exact,
    }
}

struct Reader<'a> {
    chars: &'a [char],
    at: usize,
    groups: usize,
    same_in_rust: bool,
    exact: bool,
}

/// Escapes that mean the same in both dialects outside a class.
const SAME_ESCAPES: &str = "dDwWsSbBnrtfv.*+?()[]{}|^$\\/-";

impl Reader<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn alternatives(&mut self) -> Vec<Vec<Item>> {
        let mut alternatives = vec![self.sequence()];
        while self.peek(0) == Some('|') {
            self.at += 1;
            alternatives.push(self.sequence());
        }
        alternatives
    }

    fn sequence(&mut self) -> Vec<Item> {
        let mut items: Vec<Item> = Vec::new();
        while let Some(c) = self.peek(0) {
            match c {
                '|' | ')' => break,
                '(' => items.push(self.group()),
                '[' => {
                    let source = self.class();
                    items.push(Item::Atom {
                        source,
                        quant: None,
                    });
                }
                '\\' => items.push(self.escape()),
                '^' | '$' => {
                    self.at += 1;
                    items.push(Item::Assertion(if c == '^' {
                        Assertion::LineStart
                    } else {
                        Assertion::LineEnd
                    }));
                }
                '*' | '+' | '?' => {
                    self.at += 1;
                    let (min, max) = match c {
                        '*' => (0, None),
                        '+' => (1, None),
                        _ => (0, Some(1)),
                    };
                    self.quantify(&mut items, min, max);
                }
                '{' => match self.braces() {
                    Some((min, max)) => self.quantify(&mut items, min, max),
                    None => {
                        // A literal `{` (Annex B); regex-syntax refuses it.
                        self.same_in_rust = false;
                        if self.peek(1).is_some_and(|d| d.is_ascii_digit()) {
                            self.exact = false;
                        }
                        self.at += 1;
                        items.push(Item::Atom {
                            source: "\\{".into(),
                            quant: None,
                        });
                    }
                },
                _ => {
                    self.at += 1;
                    if c == '}' || c == ']' {
                        // Literal in ECMAScript, an error or a class end in Rust.
                        self.same_in_rust = false;
                    }
                    let source = if c == '.' {
                        ".".to_string()
                    } else {
                        regress::escape(&c.to_string())
                    };
                    items.push(Item::Atom {
                        source,
                        quant: None,
                    });
                }
            }
        }
        items
    }

    /// Applies a quantifier (and its lazy `?`) to the last item.
    fn quantify(&mut self, items: &mut [Item], min: u32, max: Option<u32>) {
        let lazy = self.peek(0) == Some('?');
        if lazy {
            self.at += 1;
        }
        let quant = Quant {
            min,
            max,
            greedy: !lazy,
        };
        if let Some(slot) = items.last_mut().and_then(Item::quant_mut) {
            if slot.is_some() {
                // `a**` is a syntax error; only reachable if regress changes.
                self.same_in_rust = false;
            }
            *slot = Some(quant);
        }
    }

    /// `{n}`, `{n,}` or `{n,m}` at the cursor, consumed, as its bounds;
    /// `None` (nothing consumed) when the brace is a literal.
    fn braces(&mut self) -> Option<(u32, Option<u32>)> {
        let rest: String = self.chars[self.at..].iter().take(40).collect();
        let close = rest.find('}')?;
        let inner = &rest[1..close];
        let (min, max) = match inner.split_once(',') {
            None => {
                let n = parse_count(inner)?;
                (n, Some(n))
            }
            Some((low, "")) => (parse_count(low)?, None),
            Some((low, high)) => (parse_count(low)?, Some(parse_count(high)?)),
        };
        self.at += rest[..=close].chars().count();
        Some((min, max))
    }

    fn group(&mut self) -> Item {
        self.at += 1;
        let kind = if self.peek(0) == Some('?') {
            match (self.peek(1), self.peek(2)) {
                (Some(':'), _) => {
                    self.at += 2;
                    GroupKind::Plain
                }
                (Some('=' | '!'), _) => {
                    self.at += 2;
                    GroupKind::Look
                }
                (Some('<'), Some('=' | '!')) => {
                    self.at += 3;
                    GroupKind::Look
                }
                (Some('<'), _) => {
                    // A named group: `(?<name>`.
                    self.groups += 1;
                    while let Some(c) = self.peek(0) {
                        self.at += 1;
                        if c == '>' {
                            break;
                        }
                    }
                    GroupKind::Capture
                }
                _ => {
                    // A modifier group or something newer: not read alike.
                    self.same_in_rust = false;
                    self.at += 1;
                    GroupKind::Other
                }
            }
        } else {
            self.groups += 1;
            GroupKind::Capture
        };
        let alternatives = self.alternatives();
        if self.peek(0) == Some(')') {
            self.at += 1;
        }
        Item::Group {
            kind,
            alternatives,
            quant: None,
        }
    }

    /// A bracket class, returned as its source.
    fn class(&mut self) -> String {
        let start = self.at;
        self.at += 1;
        if self.peek(0) == Some('^') {
            self.at += 1;
        }
        let mut previous = '[';
        while let Some(c) = self.peek(0) {
            self.at += 1;
            match c {
                ']' => break,
                '\\' => {
                    match self.peek(0) {
                        // `\b` is a backspace here, a boundary (or an
                        // error) in Rust; `\d` and friends, hex and
                        // punctuation mean the same.
                        Some(e) if e != 'b' && SAME_ESCAPES.contains(e) => {}
                        Some('x' | 'u') => self.same_in_rust &= self.hex_escape_is_plain(),
                        _ => self.same_in_rust = false,
                    }
                    self.at += 1;
                    previous = '\\';
                    continue;
                }
                // Nested classes and set operations exist only in Rust.
                '[' => self.same_in_rust = false,
                '&' | '-' | '~' if previous == c => self.same_in_rust = false,
                _ => {}
            }
            previous = c;
        }
        self.chars[start..self.at].iter().collect()
    }

    /// After `\x` or `\u` (the cursor on the letter): whether it is the
    /// fixed-width hex form both dialects read alike.
    fn hex_escape_is_plain(&self) -> bool {
        let width = if self.peek(0) == Some('x') { 2 } else { 4 };
        (1..=width).all(|k| self.peek(k).is_some_and(|c| c.is_ascii_hexdigit()))
    }

    fn escape(&mut self) -> Item {
        let start = self.at;
        self.at += 1;
        let Some(c) = self.peek(0) else {
            return Item::Assertion(Assertion::Stray);
        };
        self.at += 1;
        match c {
            'b' => return Item::Assertion(Assertion::WordBoundary),
            'B' => return Item::Assertion(Assertion::NotWordBoundary),
            '1'..='9' => {
                while self.peek(0).is_some_and(|d| d.is_ascii_digit()) {
                    self.at += 1;
                }
                self.same_in_rust = false;
                return Item::BackRef { quant: None };
            }
            'k' if self.peek(0) == Some('<') => {
                while let Some(d) = self.peek(0) {
                    self.at += 1;
                    if d == '>' {
                        break;
                    }
                }
                self.same_in_rust = false;
                return Item::BackRef { quant: None };
            }
            'x' | 'u' => {
                self.at -= 1;
                let plain = self.hex_escape_is_plain();
                self.at += 1;
                if plain {
                    self.at += if c == 'x' { 2 } else { 4 };
                } else {
                    self.same_in_rust = false;
                }
            }
            'c' => {
                if self.peek(0).is_some_and(|l| l.is_ascii_alphabetic()) {
                    self.at += 1;
                }
                self.same_in_rust = false;
            }
            'p' | 'P' if self.peek(0) == Some('{') => {
                while let Some(d) = self.peek(0) {
                    self.at += 1;
                    if d == '}' {
                        break;
                    }
                }
                self.same_in_rust = false;
            }
            '0' => {
                self.same_in_rust = false;
                if self.peek(0).is_some_and(|d| d.is_ascii_digit()) {
                    self.exact = false;
                }
            }
            _ if SAME_ESCAPES.contains(c) => {}
            _ => self.same_in_rust = false,
        }
        Item::Atom {
            source: self.chars[start..self.at].iter().collect(),
            quant: None,
        }
    }
}

fn parse_count(digits: &str) -> Option<u32> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // A count too large for u32 is still a quantifier; treat it as huge.
    Some(digits.parse().unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_numbered_and_named_groups_but_not_others() {
        assert_eq!(read("(a)(?:b)(?<n>c)(?=d)(?<=e)(?!f)(?<!g)").groups, 2);
        assert_eq!(read(r"\(a\)[(]").groups, 0);
        assert_eq!(read("((a)|(b))").groups, 3);
    }

    #[test]
    fn reads_quantifiers_and_literal_braces() {
        let shape = read("a{2,}b{3}c{1,4}?d{");
        let quants: Vec<Option<(u32, Option<u32>, bool)>> = shape.alternatives[0]
            .iter()
            .map(|item| match item {
                Item::Atom { quant, .. } => quant.map(|q| (q.min, q.max, q.greedy)),
                _ => None,
            })
            .collect();
        assert_eq!(
            quants,
            [
                Some((2, None, true)),
                Some((3, Some(3), true)),
                Some((1, Some(4), false)),
                None,
                None,
            ]
        );
        assert!(!shape.same_in_rust);
    }

    #[test]
    fn tells_which_patterns_rust_reads_alike() {
        for same in [
            "foo",
            r"fn \w+\(",
            "[a-z]+_[0-9]",
            r"\x41\u0042",
            r"a\.b",
            "(?:x|y)z",
        ] {
            assert!(read(same).same_in_rust, "{same}");
        }
        for differs in [
            r"\z", r"\A", r"\p{L}", r"\u{41}", r"(a)\1", "[a&&b]", "[[a]]", "a{,2}", r"\cJ",
            r"[\b]", "(?i:a)", r"\<",
        ] {
            assert!(!read(differs).same_in_rust, "{differs}");
        }
    }
}
