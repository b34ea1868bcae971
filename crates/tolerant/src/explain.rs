//! Saying what differs between the caller's text and the file's when the
//! difference cannot be seen: characters are named by code point.

use similar::{ChangeTag, TextDiff};
use unicode_normalization::UnicodeNormalization;

use super::normal::{invisible, typographic};

/// At most this many differences are named for one region.
const MAX_NOTES: usize = 6;
/// Longest pair of lines (bytes) compared character by character.
const MAX_COMPARED: usize = 4096;

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

/// `1st`, `2nd`, `3rd`, `11th`: how messages name a line of old_string.
pub fn ordinal(n: usize) -> String {
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
/// Lines are referred to by their place in old_string ("old_string's 2nd
/// line"), so that `line N` in a message always means a line of the file.
pub(crate) fn differences(old: &[&str], file: &[&str], odd_endings: usize) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    let old_text = old.join("\n");
    let file_text = file.join("\n");
    let literal_old = old_text.matches("\\n").count();
    let literal_file = file_text.matches("\\n").take(literal_old + 1).count();
    if literal_old > literal_file && file.len() > old.len() {
        notes.push(
            "old_string has a literal backslash-n (the two characters \\ and n) where the file has a line break; write a real line break".to_string(),
        );
    }
    if odd_endings > 0 {
        notes.push(format!(
            "{odd_endings} of the region's lines end with another line ending (CRLF or LF) than the rest of the file"
        ));
    }
    if old.len() != file.len() {
        notes.push(format!(
            "old_string has {} line{} where the region has {}: the line breaks differ",
            old.len(),
            if old.len() == 1 { "" } else { "s" },
            file.len()
        ));
        let mut found = Vec::new();
        if old_text.len() + file_text.len() <= MAX_COMPARED {
            pair_notes(
                &old_text.replace('\n', " "),
                &file_text.replace('\n', " "),
                false,
                &mut found,
            );
        }
        for note in found {
            if notes.len() < MAX_NOTES && !notes.contains(&note) {
                notes.push(note);
            }
        }
        return notes;
    }
    // Each kind of difference once, with the lines of old_string it is on.
    let mut grouped: Vec<(String, Vec<usize>)> = Vec::new();
    for (index, (o, f)) in old.iter().zip(file).enumerate() {
        if o == f {
            continue;
        }
        let mut found = Vec::new();
        pair_notes(o, f, true, &mut found);
        for note in found {
            match grouped.iter_mut().find(|(n, _)| *n == note) {
                Some((_, lines)) => lines.push(index + 1),
                None => grouped.push((note, vec![index + 1])),
            }
        }
    }
    for (note, lines) in grouped {
        if notes.len() == MAX_NOTES {
            break;
        }
        let place = if old.len() == 1 {
            String::new()
        } else if lines.len() == old.len() {
            " (on every line of old_string)".to_string()
        } else {
            let mut ordinals: Vec<String> = lines.iter().take(4).map(|&n| ordinal(n)).collect();
            if lines.len() > 4 {
                ordinals.push(format!("{} more", lines.len() - 4));
            }
            format!(
                " (old_string's {} line{})",
                ordinals.join(", "),
                if lines.len() == 1 { "" } else { "s" }
            )
        };
        notes.push(format!("{note}{place}"));
    }
    notes
}

/// `8 spaces`, `a tab`, `U+00A0 no-break space`: whitespace and invisible
/// characters by name, runs counted; visible text quoted.
fn shown(seg: &str) -> String {
    if seg.is_empty() {
        return "nothing".to_string();
    }
    if seg.chars().all(|c| !c.is_whitespace() && !invisible(c)) {
        return format!("`{seg}`");
    }
    let mut parts: Vec<String> = Vec::new();
    let mut chars = seg.chars().peekable();
    while let Some(c) = chars.next() {
        let mut run = 1;
        while chars.peek() == Some(&c) {
            chars.next();
            run += 1;
        }
        let name = char_name(c);
        parts.push(if run == 1 {
            format!("a {name}")
        } else {
            format!("{run} {name}s")
        });
    }
    parts.join(", ")
}

/// The differences of one pair of lines (or of two joined blocks).
fn pair_notes(o: &str, f: &str, lines: bool, notes: &mut Vec<String>) {
    let mut push = |note: String| {
        if !notes.contains(&note) {
            notes.push(note);
        }
    };
    let (o_body, f_body) = (o.trim_end(), f.trim_end());
    if lines {
        let o_trail = &o[o_body.len()..];
        let f_trail = &f[f_body.len()..];
        if o_trail != f_trail {
            let describe = |trail: &str| {
                if trail.is_empty() {
                    "none".to_string()
                } else {
                    shown(trail)
                }
            };
            push(format!(
                "trailing whitespace differs: old_string has {}, the file has {}",
                describe(o_trail),
                describe(f_trail)
            ));
        }
    }
    let o_indent = super::indent::indent_of(o_body);
    let f_indent = super::indent::indent_of(f_body);
    if o_indent.contains('\t') != f_indent.contains('\t')
        && !o_indent.is_empty()
        && !f_indent.is_empty()
    {
        let kind = |s: &str| if s.contains('\t') { "tabs" } else { "spaces" };
        push(format!(
            "old_string is indented with {} where the file uses {}",
            kind(o_indent),
            kind(f_indent)
        ));
    }
    let (o_rest, f_rest) = (&o_body[o_indent.len()..], &f_body[f_indent.len()..]);
    // Character by character only for lines of a readable length: the cost
    // of the comparison grows with length times difference.
    if o_rest == f_rest || o_rest.len() + f_rest.len() > MAX_COMPARED {
        return;
    }
    let diff = TextDiff::from_chars(o_rest, f_rest);
    if o_rest.nfc().eq(f_rest.nfc()) {
        let mut old_part = String::new();
        let mut file_part = String::new();
        for change in diff.iter_all_changes() {
            match change.tag() {
                ChangeTag::Delete => old_part.push_str(change.value()),
                ChangeTag::Insert => file_part.push_str(change.value()),
                ChangeTag::Equal => {}
            }
        }
        push(format!(
            "Unicode normalization: old_string writes {} ({}) where the file has {} ({}); they look the same but are different characters",
            old_part.nfc().collect::<String>(),
            code_points(&old_part),
            file_part.nfc().collect::<String>(),
            code_points(&file_part)
        ));
        return;
    }
    for op in diff.ops() {
        let (old_range, new_range) = (op.old_range(), op.new_range());
        let old_seg: String = o_rest
            .chars()
            .skip(old_range.start)
            .take(old_range.len())
            .collect();
        let file_seg: String = f_rest
            .chars()
            .skip(new_range.start)
            .take(new_range.len())
            .collect();
        if old_seg == file_seg {
            continue;
        }
        if old_seg.nfc().eq(file_seg.nfc()) {
            push(format!(
                "Unicode normalization: old_string writes {} ({}) where the file has {} ({}); they look the same but are different characters",
                old_seg.nfc().collect::<String>(),
                code_points(&old_seg),
                file_seg.nfc().collect::<String>(),
                code_points(&file_seg)
            ));
            continue;
        }
        let plain_blank = |s: &str| s.chars().all(|c| c == ' ' || c == '\t');
        if plain_blank(&old_seg) && plain_blank(&file_seg) {
            if old_seg.contains('\t') != file_seg.contains('\t') {
                push(format!(
                    "the file has {} where old_string has {} between words",
                    shown(&file_seg),
                    shown(&old_seg)
                ));
            } else {
                push("the spaces between words differ".to_string());
            }
            continue;
        }
        let file_notable: Vec<char> = file_seg.chars().filter(|&c| notable(c)).collect();
        let old_notable: Vec<char> = old_seg.chars().filter(|&c| notable(c)).collect();
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
        if !file_notable.is_empty() {
            push(format!(
                "the file has {} where old_string has {}",
                list(&file_notable),
                shown(&old_seg)
            ));
        } else if !old_notable.is_empty() {
            push(format!(
                "old_string has {} where the file has {}",
                list(&old_notable),
                shown(&file_seg)
            ));
        }
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
        assert!(notes[0].contains("the file has 2 spaces"), "{notes:?}");
        let notes = differences(&["f(\"a\\nb\")"], &["f(\"a", "b\")"], 0);
        assert!(notes[0].contains("literal backslash-n"), "{notes:?}");
        let notes = differences(&["    a"], &["\ta"], 1);
        assert!(notes.iter().any(|n| n.contains("CRLF")), "{notes:?}");
        assert!(
            notes.iter().any(|n| n.contains("with spaces where")),
            "{notes:?}"
        );
        let notes = differences(&["  a", "  b", "c"], &["\ta", "\tb", "c"], 0);
        assert_eq!(
            notes,
            vec![
                "old_string is indented with spaces where the file uses tabs (old_string's 1st, 2nd lines)"
            ]
        );
    }
}
