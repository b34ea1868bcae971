//! Saying what differs between the caller's text and the file's when the
//! difference cannot be seen: characters are named by code point.

use similar::{ChangeTag, TextDiff};
use unicode_normalization::UnicodeNormalization;

use super::normal::{invisible, typographic};

/// At most this many differences are named for one region.
const MAX_NOTES: usize = 6;

/// The name of a character that looks like another or like nothing.
pub(crate) fn char_name(ch: char) -> String {
    let name = match ch {
        '\t' => "tab",
        ' ' => "space",
        '\u{00A0}' => "no-break space",
        '\u{202F}' => "narrow no-break space",
        '\u{2007}' => "figure space",
        '\u{2002}' => "en space",
        '\u{2003}' => "em space",
        '\u{2009}' => "thin space",
        '\u{200A}' => "hair space",
        '\u{3000}' => "ideographic space",
        '\u{200B}' => "zero-width space",
        '\u{200C}' => "zero-width non-joiner",
        '\u{200D}' => "zero-width joiner",
        '\u{2060}' => "word joiner",
        '\u{FEFF}' => "byte-order mark",
        '\u{00AD}' => "soft hyphen",
        '\u{2018}' => "left single quotation mark",
        '\u{2019}' => "right single quotation mark",
        '\u{201C}' => "left double quotation mark",
        '\u{201D}' => "right double quotation mark",
        '\u{2032}' => "prime",
        '\u{2033}' => "double prime",
        '\u{2010}' => "hyphen",
        '\u{2011}' => "non-breaking hyphen",
        '\u{2012}' => "figure dash",
        '\u{2013}' => "en dash",
        '\u{2014}' => "em dash",
        '\u{2015}' => "horizontal bar",
        '\u{2212}' => "minus sign",
        '\u{2026}' => "horizontal ellipsis",
        '\'' => "straight apostrophe",
        '"' => "straight double quote",
        '-' => "hyphen-minus",
        _ => "",
    };
    let code = format!("U+{:04X}", ch as u32);
    if name.is_empty() {
        code
    } else if ch.is_ascii() {
        name.to_string()
    } else {
        format!("{code} {name}")
    }
}

/// A character worth naming when it differs: one that looks like another
/// or like nothing.
fn notable(ch: char) -> bool {
    ch == '\t'
        || (ch.is_whitespace() && ch != ' ' && ch != '\n' && ch != '\r')
        || invisible(ch)
        || typographic(ch).is_some()
}

fn code_points(text: &str) -> String {
    text.chars()
        .map(|ch| format!("U+{:04X}", ch as u32))
        .collect::<Vec<_>>()
        .join(" ")
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// Notes naming the differences between old_string's lines and a region's,
/// that a reader could not see: Unicode normalization, odd spaces and
/// invisible characters, tabs against spaces, trailing whitespace,
/// typographic quotes and dashes, a literal backslash-n, line endings.
/// Lines are referred to by their place in old_string ("its 2nd line"), so
/// that `line N` in a message always means a line of the file.
pub(crate) fn differences(old: &[&str], file: &[&str], file_crlf: usize) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    let mut push = |notes: &mut Vec<String>, note: String| {
        if notes.len() < MAX_NOTES && !notes.contains(&note) {
            notes.push(note);
        }
    };
    let old_text = old.join("\n");
    let file_text = file.join("\n");
    let literal_old = old_text.matches("\\n").count();
    let literal_file = file_text.matches("\\n").count();
    if literal_old > literal_file && file.len() > old.len() {
        push(
            &mut notes,
            "old_string has a literal backslash-n (the two characters \\ and n) where the file has a line break; write a real line break".to_string(),
        );
    }
    if file_crlf > 0 {
        push(
            &mut notes,
            format!(
                "{} of the region's lines end in CRLF where the rest of the file uses LF",
                file_crlf
            ),
        );
    }
    if old.len() != file.len() {
        push(
            &mut notes,
            format!(
                "old_string has {} line{} where the region has {}: the line breaks differ",
                old.len(),
                if old.len() == 1 { "" } else { "s" },
                file.len()
            ),
        );
        pair_notes(&old_text.replace('\n', " "), &file_text.replace('\n', " "), None, &mut notes, &mut push);
        return notes;
    }
    for (index, (o, f)) in old.iter().zip(file).enumerate() {
        if o == f {
            continue;
        }
        let which = if old.len() == 1 {
            "old_string".to_string()
        } else {
            format!("old_string's {} line", ordinal(index + 1))
        };
        pair_notes(o, f, Some(&which), &mut notes, &mut push);
    }
    notes
}

fn pair_notes(
    o: &str,
    f: &str,
    which: Option<&str>,
    notes: &mut Vec<String>,
    push: &mut impl FnMut(&mut Vec<String>, String),
) {
    let which = which.unwrap_or("old_string");
    let (o_body, f_body) = (o.trim_end(), f.trim_end());
    if o_body.len() != o.len() || f_body.len() != f.len() {
        let o_trail = &o[o_body.len()..];
        let f_trail = &f[f_body.len()..];
        if o_trail != f_trail {
            let describe = |trail: &str| {
                if trail.is_empty() {
                    "no trailing whitespace".to_string()
                } else {
                    format!(
                        "trailing {}",
                        trail.chars().map(char_name).collect::<Vec<_>>().join(", ")
                    )
                }
            };
            push(
                notes,
                format!(
                    "{which} has {} where the file's line has {}",
                    describe(o_trail),
                    describe(f_trail)
                ),
            );
        }
    }
    let o_indent = super::indent::indent_of(o_body);
    let f_indent = super::indent::indent_of(f_body);
    if o_indent.contains('\t') != f_indent.contains('\t') && !o_indent.is_empty() && !f_indent.is_empty() {
        let kind = |s: &str| if s.contains('\t') { "tabs" } else { "spaces" };
        push(
            notes,
            format!(
                "{which} is indented with {} where the file's line uses {}",
                kind(o_indent),
                kind(f_indent)
            ),
        );
    }
    let (o_rest, f_rest) = (&o_body[o_indent.len()..], &f_body[f_indent.len()..]);
    if o_rest == f_rest {
        return;
    }
    if o_rest.nfc().eq(f_rest.nfc()) {
        // Find the differing characters to show their code points.
        let diff = TextDiff::from_chars(o_rest, f_rest);
        let mut old_part = String::new();
        let mut file_part = String::new();
        for change in diff.iter_all_changes() {
            match change.tag() {
                ChangeTag::Delete => old_part.push_str(change.value()),
                ChangeTag::Insert => file_part.push_str(change.value()),
                ChangeTag::Equal => {}
            }
        }
        push(
            notes,
            format!(
                "Unicode normalization: {which} writes {} ({}) where the file has {} ({}); they look the same but are different characters",
                old_part.nfc().collect::<String>(),
                code_points(&old_part),
                file_part.nfc().collect::<String>(),
                code_points(&file_part)
            ),
        );
        return;
    }
    let diff = TextDiff::from_chars(o_rest, f_rest);
    for op in diff.ops() {
        let (old_range, new_range) = (op.old_range(), op.new_range());
        let old_seg: String = o_rest.chars().skip(old_range.start).take(old_range.len()).collect();
        let file_seg: String = f_rest.chars().skip(new_range.start).take(new_range.len()).collect();
        if old_seg == file_seg {
            continue;
        }
        let file_notable: Vec<char> = file_seg.chars().filter(|&c| notable(c)).collect();
        let old_notable: Vec<char> = old_seg.chars().filter(|&c| notable(c)).collect();
        if file_notable.is_empty() && old_notable.is_empty() {
            if old_seg.trim().is_empty() && file_seg.trim().is_empty() {
                push(notes, format!("{which} differs from the file's line in the spaces between words"));
            }
            continue;
        }
        let list = |chars: &[char]| {
            let mut names: Vec<String> = Vec::new();
            for &c in chars {
                let name = char_name(c);
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            names.join(", ")
        };
        let shown = |seg: &str| {
            if seg.is_empty() {
                "nothing".to_string()
            } else if seg.chars().all(|c| !c.is_whitespace() && !invisible(c)) {
                format!("`{seg}`")
            } else {
                seg.chars().map(char_name).collect::<Vec<_>>().join(", ")
            }
        };
        let note = match (file_notable.is_empty(), old_notable.is_empty()) {
            (false, _) => format!(
                "the file has {} where {which} has {}",
                list(&file_notable),
                shown(&old_seg)
            ),
            (true, false) => format!(
                "{which} has {} where the file has {}",
                list(&old_notable),
                shown(&file_seg)
            ),
            (true, true) => continue,
        };
        push(notes, note);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_differences_are_named() {
        let notes = differences(&["caf\u{e9} = 1"], &["cafe\u{301} = 1"], 0);
        assert!(notes[0].contains("U+0065 U+0301"), "{notes:?}");
        let notes = differences(&["a b"], &["a\u{a0}b"], 0);
        assert!(notes[0].contains("U+00A0 no-break space"), "{notes:?}");
        let notes = differences(&["x", "say('hi')"], &["x", "say(\u{2018}hi\u{2019})"], 0);
        assert!(notes[0].starts_with("the file has U+2018"), "{notes:?}");
        assert!(notes[0].contains("old_string's 2nd line"), "{notes:?}");
        let notes = differences(&["a = 1"], &["a = 1  "], 0);
        assert!(notes[0].contains("trailing space, space"), "{notes:?}");
        let notes = differences(&["f(\"a\\nb\")"], &["f(\"a", "b\")"], 0);
        assert!(notes[0].contains("literal backslash-n"), "{notes:?}");
        let notes = differences(&["    a"], &["\ta"], 1);
        assert!(notes.iter().any(|n| n.contains("CRLF")), "{notes:?}");
        assert!(notes.iter().any(|n| n.contains("with spaces where")), "{notes:?}");
    }
}
