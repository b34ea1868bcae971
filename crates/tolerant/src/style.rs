//! new_string written in the file's own conventions.
//!
//! A tolerant match may have read past typographic differences (curly
//! quotes against straight ones, one dash for another, an ellipsis against
//! three dots, a no-break space against a space) or a difference of Unicode
//! normalization. Written verbatim, new_string would then put the caller's
//! characters where the file has its own: curly quotes into Python source
//! that no longer parses, composed accents into a decomposed file. So the
//! match is read for how the file writes each such character of
//! old_string, and new_string's changed lines are written the same way.
//!
//! The rule: a character of old_string maps to the file's character when
//! every one of its occurrences in the matched text stands for that same
//! character of the file (a straight quote is taken apart by place: where
//! it opens and where it closes, since a file writing curly quotes uses
//! two; so is a hyphen-minus: inside a word, starting a line's text, or
//! apart, since a file writing dashes between words still hyphenates words
//! and bullets lists). A character written two ways by the file's matched
//! region, or written as itself somewhere in it, maps to nothing: the file
//! is mixed there and either choice could be wrong, so new_string keeps it
//! as written. Characters of new_string the match never mapped are left
//! alone, indentation and the whitespace at either end of a line too. A
//! normalization form is taken over only when the region read past a
//! difference of form and is wholly in that form itself.

use std::fmt;

use unicode_normalization::{UnicodeNormalization, is_nfc, is_nfd};

use super::explain::char_name;
use super::normal::{Loose, typographic};

/// A Unicode normalization form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Composed: an accented letter is one character where it can be.
    Nfc,
    /// Decomposed: a letter followed by its combining accents.
    Nfd,
}

impl fmt::Display for Form {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Form::Nfc => "Unicode NFC (composed accents)",
            Form::Nfd => "Unicode NFD (decomposed accents)",
        })
    }
}

/// One way new_string was changed to be written as the file writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rewritten {
    /// Occurrences of a character (or of three dots) written as the file's
    /// character.
    Characters {
        /// What new_string had.
        from: String,
        /// What was written.
        to: String,
        /// How many were written so.
        count: usize,
    },
    /// new_string's text written in the file's normalization form.
    Form(Form),
}

impl fmt::Display for Rewritten {
    /// `U+201C left double quotation mark as straight double quote (2
    /// times)`, `in Unicode NFD (decomposed accents)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rewritten::Characters { from, to, count } => {
                write!(f, "{} as {}", token_name(from), token_name(to))?;
                if *count > 1 {
                    write!(f, " ({count} times)")?;
                }
                Ok(())
            }
            Rewritten::Form(form) => write!(f, "in {form}"),
        }
    }
}

fn token_name(token: &str) -> String {
    let mut chars = token.chars();
    match (chars.next(), chars.next()) {
        (Some(ch), None) => char_name(ch),
        _ if token == "..." => "three dots".to_string(),
        _ => format!("`{token}`"),
    }
}

/// Where an ASCII stand-in stands, for the ones a file writes in more than
/// one way: a file that writes quotes curly writes an opening one and a
/// closing one differently, and a hyphen joining a word (or a list bullet)
/// stays a hyphen in a file that writes a dash between words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// A straight quote at the start of the text, or after whitespace, an
    /// opening bracket, a dash or an opening curly quote.
    Opening,
    /// A straight quote anywhere else (an apostrophe within a word
    /// included).
    Closing,
    /// A hyphen-minus between two letters.
    InWord,
    /// A hyphen-minus starting a line's text: a list bullet, an option, a
    /// minus sign.
    Leading,
    /// A hyphen-minus anywhere else.
    Apart,
}

/// Where `token` stands between `prev` and `next`, for a straight quote or
/// a hyphen-minus (other characters are written one way wherever they are).
fn place_of(token: &str, prev: Option<char>, next: Option<char>) -> Option<Place> {
    match token {
        "\"" | "'" => Some(match prev {
            None => Place::Opening,
            Some(c)
                if c.is_whitespace()
                    || matches!(
                        c,
                        '(' | '[' | '{' | '\u{2013}' | '\u{2014}' | '\u{201C}' | '\u{2018}'
                    ) =>
            {
                Place::Opening
            }
            Some(_) => Place::Closing,
        }),
        "-" => Some(match prev {
            None => Place::Leading,
            Some(p) if p.is_alphabetic() && next.is_some_and(char::is_alphabetic) => Place::InWord,
            Some(_) => Place::Apart,
        }),
        _ => None,
    }
}

/// The English curly quote for a straight one at `place`.
fn english_curly(token: &str, place: Place) -> Option<&'static str> {
    Some(match (token, place) {
        ("\"", Place::Opening) => "\u{201C}",
        ("\"", Place::Closing) => "\u{201D}",
        ("'", Place::Opening) => "\u{2018}",
        ("'", Place::Closing) => "\u{2019}",
        _ => return None,
    })
}

/// A character that may be written another way by the file: a quote, a
/// dash, three dots or an ellipsis (everything the loose reading folds),
/// or a space other than a tab or a line break.
fn is_mark(token: &str) -> bool {
    if token == "..." {
        return true;
    }
    let mut chars = token.chars();
    match (chars.next(), chars.next()) {
        (Some(ch), None) => {
            typographic(ch).is_some()
                || matches!(ch, '\'' | '"' | '-')
                || (ch.is_whitespace() && !matches!(ch, '\t' | '\n' | '\r' | '\x0B' | '\x0C'))
        }
        _ => false,
    }
}

/// The tokens of `text` with the place of each straight quote and
/// hyphen-minus: three dots are one token, every other character one.
fn tokens(text: &str) -> impl Iterator<Item = (&str, Option<Place>)> {
    let mut at = 0;
    let mut prev: Option<char> = None;
    std::iter::from_fn(move || {
        let rest = &text[at..];
        let ch = rest.chars().next()?;
        let len = if rest.starts_with("...") {
            3
        } else {
            ch.len_utf8()
        };
        let token = &rest[..len];
        let place = place_of(token, prev, rest[len..].chars().next());
        at += len;
        prev = token.chars().next_back();
        Some((token, place))
    })
}

/// How the file writes one character of old_string.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    from: String,
    place: Option<Place>,
    to: String,
}

/// How a matched region of the file writes what old_string wrote
/// otherwise, for writing new_string the file's way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Style {
    rules: Vec<Rule>,
    form: Option<Form>,
}

/// A character of old_string (at a place) seen standing for others of the
/// file: how many times, and for which one (`None` once it stood for two
/// different ones).
struct Seen {
    from: String,
    place: Option<Place>,
    to: Option<String>,
    times: usize,
}

fn record(seen: &mut Vec<Seen>, from: &str, place: Option<Place>, to: &str) {
    match seen.iter_mut().find(|s| s.from == from && s.place == place) {
        Some(s) => {
            s.times += 1;
            if s.to.as_deref() != Some(to) {
                s.to = None;
            }
        }
        None => seen.push(Seen {
            from: from.to_string(),
            place,
            to: Some(to.to_string()),
            times: 1,
        }),
    }
}

impl Style {
    /// Reads pairs of (old_string's text, the file's text it matched) for
    /// how the file writes old_string's characters. Only pairs whose loose
    /// readings are equal are read (they align character by character).
    pub(crate) fn observe<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Style {
        let mut seen: Vec<Seen> = Vec::new();
        let (mut to_nfc, mut to_nfd) = (false, false);
        let mut olds: Vec<&str> = Vec::new();
        let mut files: Vec<&str> = Vec::new();
        let (mut o, mut f) = (Loose::default(), Loose::default());
        for (old, file) in pairs {
            if old == file {
                olds.push(old);
                files.push(file);
                continue;
            }
            o.read(old, true);
            f.read(file, true);
            if o.text != f.text {
                continue;
            }
            olds.push(old);
            files.push(file);
            let n = o.text.len();
            let mut start = 0;
            while start < n {
                // A unit ends where both sides start a new source character.
                let mut end = start + 1;
                while end < n
                    && (o.spans[end] == o.spans[end - 1] || f.spans[end] == f.spans[end - 1])
                {
                    end += 1;
                }
                let source = |reading: &Loose, text: &'a str| {
                    let from = reading.spans[start] as usize;
                    let to = reading.ends[start..end].iter().copied().max().unwrap_or(0) as usize;
                    &text[from..to.max(from)]
                };
                let (os, fs) = (source(&o, old), source(&f, file));
                if os != fs {
                    if os.nfc().eq(fs.nfc()) {
                        if is_nfd(fs) && !is_nfd(os) {
                            to_nfd = true;
                        } else if is_nfc(fs) && !is_nfc(os) {
                            to_nfc = true;
                        }
                    } else if is_mark(os) && is_mark(fs) {
                        // Two different single spaces: one is an odd one.
                        // Runs of plain spaces, and tabs, are alignment,
                        // not a convention: never marks.
                        let at = o.spans[start] as usize;
                        // Places are read in the line's text, without its
                        // indentation (as new_string's are).
                        let before = &old[..at];
                        let prev = if before.trim().is_empty() {
                            None
                        } else {
                            before.chars().next_back()
                        };
                        let next = old[at + os.len()..].chars().next();
                        record(&mut seen, os, place_of(os, prev, next), fs);
                    }
                }
                start = end;
            }
        }

        if seen.is_empty() && !to_nfc && !to_nfd {
            return Style::default();
        }
        // How often old_string has each character that may be written
        // another way (a handful of kinds), in one pass.
        let mut counts: Vec<(&str, Option<Place>, usize)> = Vec::new();
        for (token, place) in olds.iter().flat_map(|old| tokens(old.trim())) {
            if !is_mark(token) {
                continue;
            }
            match counts
                .iter_mut()
                .find(|(t, p, _)| *t == token && *p == place)
            {
                Some((_, _, n)) => *n += 1,
                None => counts.push((token, place, 1)),
            }
        }
        let count = |from: &str, place: Option<Place>| {
            counts
                .iter()
                .find(|(t, p, _)| *t == from && *p == place)
                .map_or(0, |(_, _, n)| *n)
        };
        // One way of writing it, and every occurrence written so.
        let mut rules: Vec<Rule> = seen
            .iter()
            .filter(|s| s.times == count(&s.from, s.place))
            .filter_map(|s| {
                Some(Rule {
                    from: s.from.clone(),
                    place: s.place,
                    to: s.to.clone()?,
                })
            })
            .collect();
        // A straight quote seen only opening (or only closing), written
        // with the English curly quote there, closes (or opens) with its
        // partner; another pair (German low quotes) is not guessed.
        for rule in rules.clone() {
            let other = match rule.place {
                Some(Place::Opening) => Place::Closing,
                Some(Place::Closing) => Place::Opening,
                _ => continue,
            };
            let place = rule.place.unwrap_or(other);
            if let (Some(observed), Some(partner)) = (
                english_curly(&rule.from, place),
                english_curly(&rule.from, other),
            ) && rule.to == observed
                && count(&rule.from, Some(other)) == 0
            {
                rules.push(Rule {
                    from: rule.from.clone(),
                    place: Some(other),
                    to: partner.to_string(),
                });
            }
        }

        let form = match (to_nfc, to_nfd) {
            (false, true) if files.iter().all(|t| is_nfd(t)) => Some(Form::Nfd),
            (true, false) if files.iter().all(|t| is_nfc(t)) => Some(Form::Nfc),
            _ => None,
        };
        Style { rules, form }
    }

    /// Whether writing changes nothing.
    pub(crate) fn is_plain(&self) -> bool {
        self.rules.is_empty() && self.form.is_none()
    }

    /// `text` (one line or several) written the file's way; what changed is
    /// added to `notes`.
    pub(crate) fn write(&self, text: &str, notes: &mut Vec<Rewritten>) -> String {
        if self.is_plain() {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len() + text.len() / 8);
        for (index, line) in text.split('\n').enumerate() {
            if index > 0 {
                out.push('\n');
            }
            self.write_line(line, &mut out, notes);
        }
        out
    }

    fn write_line(&self, line: &str, out: &mut String, notes: &mut Vec<Rewritten>) {
        let middle = line.trim();
        let lead = line.len() - line.trim_start().len();
        out.push_str(&line[..lead]);
        let mut written = String::with_capacity(middle.len());
        for (token, place) in tokens(middle) {
            match self
                .rules
                .iter()
                .find(|rule| rule.from == token && rule.place == place)
            {
                Some(rule) => {
                    written.push_str(&rule.to);
                    note(notes, &rule.from, &rule.to);
                }
                None => written.push_str(token),
            }
        }
        let formed: String = match self.form {
            Some(Form::Nfd) => written.nfd().collect(),
            Some(Form::Nfc) => written.nfc().collect(),
            None => written.clone(),
        };
        if let Some(form) = self.form
            && formed != written
            && !notes.contains(&Rewritten::Form(form))
        {
            notes.push(Rewritten::Form(form));
        }
        out.push_str(&formed);
        out.push_str(&line[lead + middle.len()..]);
    }
}

fn note(notes: &mut Vec<Rewritten>, from: &str, to: &str) {
    for existing in notes.iter_mut() {
        if let Rewritten::Characters {
            from: f,
            to: t,
            count,
        } = existing
            && f == from
            && t == to
        {
            *count += 1;
            return;
        }
    }
    notes.push(Rewritten::Characters {
        from: from.to_string(),
        to: to.to_string(),
        count: 1,
    });
}

/// `new` written as the file writes it, where `old` matched the file's
/// text `matched` once typographic characters or the Unicode form were
/// read loosely; with what was changed. Texts of as many lines are read
/// line by line, others whole.
pub fn restyle(old: &str, matched: &str, new: &str) -> (String, Vec<Rewritten>) {
    let old_lines: Vec<&str> = old.split('\n').collect();
    let matched_lines: Vec<&str> = matched.split('\n').collect();
    let style = if old_lines.len() == matched_lines.len() {
        Style::observe(old_lines.into_iter().zip(matched_lines))
    } else {
        Style::observe([(old, matched)])
    };
    let mut notes = Vec::new();
    let out = style.write(new, &mut notes);
    (out, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(old: &str, file: &str, new: &str) -> String {
        restyle(old, file, new).0
    }

    #[test]
    fn curly_quotes_of_the_caller_become_the_files_straight_ones() {
        let old =
            "parser.add_argument(\u{201C}--dry-run\u{201D}, action=\u{201C}store_true\u{201D})";
        let file = "parser.add_argument(\"--dry-run\", action=\"store_true\")";
        let new = "parser.add_argument(\u{201C}--dry-run\u{201D}, action=\u{201C}store_true\u{201D}, help=\u{201C}print only\u{201D})";
        let (out, notes) = restyle(old, file, new);
        assert_eq!(
            out,
            "parser.add_argument(\"--dry-run\", action=\"store_true\", help=\"print only\")"
        );
        assert_eq!(
            notes.iter().map(ToString::to_string).collect::<Vec<_>>(),
            vec![
                "U+201C left double quotation mark as straight double quote (3 times)",
                "U+201D right double quotation mark as straight double quote (3 times)",
            ]
        );
    }

    #[test]
    fn straight_quotes_become_curly_by_place() {
        assert_eq!(
            written(
                "said \"hello\"",
                "said \u{201C}hello\u{201D}",
                "said \"bye\" (\"now\")"
            ),
            "said \u{201C}bye\u{201D} (\u{201C}now\u{201D})"
        );
        // Only the closing apostrophe was seen: its English partner opens.
        assert_eq!(
            written("it's fine", "it\u{2019}s fine", "it's 'really' fine"),
            "it\u{2019}s \u{2018}really\u{2019} fine"
        );
    }

    #[test]
    fn a_character_the_file_writes_two_ways_is_left_as_written() {
        // The caller's straight quotes stand for straight and curly ones.
        let old = "a = \"x\" + \"y\"";
        let file = "a = \"x\" + \u{201C}y\u{201D}";
        assert_eq!(written(old, file, "a = \"z\""), "a = \"z\"");
        // A curly quote the match never mapped stays.
        let old = "f(\u{201C}x\u{201D})";
        let file = "f(\"x\")";
        assert_eq!(
            written(old, file, "f(\u{201C}x\u{201D}, \u{2018}y\u{2019})"),
            "f(\"x\", \u{2018}y\u{2019})"
        );
    }

    #[test]
    fn dashes_and_ellipses() {
        assert_eq!(
            written(
                "MIT \u{2013} see",
                "MIT \u{2014} see",
                "MIT \u{2013} or Apache \u{2013} see"
            ),
            "MIT \u{2014} or Apache \u{2014} see"
        );
        // A spaced hyphen stood for an em dash; a hyphen within a word stays.
        assert_eq!(
            written("fast - safe", "fast \u{2014} safe", "fast - non-blocking"),
            "fast \u{2014} non-blocking"
        );
        // A list bullet is a hyphen of its own.
        assert_eq!(
            written(
                "- fast - safe",
                "- fast \u{2014} safe",
                "- fast - non-blocking"
            ),
            "- fast \u{2014} non-blocking"
        );
        assert_eq!(
            written("wait...", "wait\u{2026}", "wait... and see..."),
            "wait\u{2026} and see\u{2026}"
        );
        assert_eq!(
            written("wait\u{2026}", "wait...", "hold on\u{2026}"),
            "hold on..."
        );
    }

    #[test]
    fn odd_spaces_only_when_every_space_was_one() {
        assert_eq!(written("10 km", "10\u{a0}km", "20 km"), "20\u{a0}km");
        assert_eq!(written("a\u{a0}b", "a b", "c\u{a0}d"), "c d");
        // Other spaces of old_string are plain in the file too: mixed.
        assert_eq!(
            written("run 10 km", "run 10\u{a0}km", "run 20 km"),
            "run 20 km"
        );
        // Indentation and the ends of lines are never touched.
        assert_eq!(
            written("10 km", "10\u{a0}km", "    20 km \n  x y"),
            "    20\u{a0}km \n  x\u{a0}y"
        );
    }

    #[test]
    fn normalization_form_of_the_file() {
        let nfc = "caf\u{e9} cr\u{e8}me";
        let nfd = "cafe\u{301} cre\u{300}me";
        let (out, notes) = restyle(nfc, nfd, "th\u{e9} cr\u{e8}me");
        assert_eq!(out, "the\u{301} cre\u{300}me");
        assert_eq!(notes, vec![Rewritten::Form(Form::Nfd)]);
        assert_eq!(notes[0].to_string(), "in Unicode NFD (decomposed accents)");
        assert_eq!(written(nfd, nfc, "the\u{301}"), "th\u{e9}");
        // A file region in both forms: nothing taken over.
        let mixed = "cafe\u{301} cr\u{e8}me";
        assert_eq!(written(nfc, mixed, "th\u{e9}"), "th\u{e9}");
    }

    #[test]
    fn nothing_read_past_changes_nothing() {
        let (out, notes) = restyle("a \"b\"", "a  \"b\"", "\u{201C}c\u{201D}");
        assert_eq!(out, "\u{201C}c\u{201D}");
        assert!(notes.is_empty());
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        /// A character of old_string as the file may write it.
        fn file_form(ch: char, pick: u8) -> String {
            let options: &[&str] = match ch {
                '"' => &["\"", "\u{201C}", "\u{201D}"],
                '\'' => &["'", "\u{2018}", "\u{2019}"],
                '\u{201C}' | '\u{201D}' => &["\"", "\u{201C}", "\u{201D}"],
                '-' => &["-", "\u{2013}", "\u{2014}"],
                '\u{2013}' => &["-", "\u{2013}", "\u{2014}"],
                ' ' => &[" ", "\u{a0}"],
                '\u{a0}' => &[" ", "\u{a0}"],
                '\u{2026}' => &["...", "\u{2026}"],
                _ => &[],
            };
            if options.is_empty() {
                ch.to_string()
            } else {
                options[usize::from(pick) % options.len()].to_string()
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            /// Writing new_string the file's way changes only characters
            /// some observed mapping maps: every other character of
            /// new_string is written as given, in order.
            #[test]
            fn only_mapped_characters_change(
                old in "[ab(\"' \u{201C}\u{201D}\u{2013}\u{a0}\u{2026}-]{1,16}",
                picks in prop::collection::vec(any::<u8>(), 16),
                new in "[ab(\"' \u{201C}\u{201D}\u{2018}\u{2014}\u{2013}\u{a0}\u{2026}.\n-]{0,24}",
            ) {
                let file: String = old
                    .chars()
                    .enumerate()
                    .map(|(i, ch)| file_form(ch, picks[i % picks.len()]))
                    .collect();
                let style = Style::observe([(old.as_str(), file.as_str())]);
                let mut notes = Vec::new();
                let out = style.write(&new, &mut notes);
                prop_assert!(style.form.is_none());
                let touched: Vec<char> = style
                    .rules
                    .iter()
                    .flat_map(|rule| rule.from.chars().chain(rule.to.chars()))
                    .collect();
                let kept = |text: &str| -> String {
                    text.chars().filter(|c| !touched.contains(c)).collect()
                };
                prop_assert_eq!(kept(&out), kept(&new));
                // Without a mapping nothing changes at all.
                if style.rules.is_empty() {
                    prop_assert_eq!(&out, &new);
                    prop_assert!(notes.is_empty());
                }
            }
        }
    }
}
