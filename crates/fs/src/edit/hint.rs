//! Helping a caller recover from `no_match`: the regions of the file close
//! to old_string and how they differ, and a warning when old_string carries
//! `read_file`'s line-number prefixes.

use similar::TextDiff;

use super::matching::{Context, name_lines};
use crate::tolerant::{Candidate, Lines, line_numbers, ordinal};

/// Cap on the diff shown, in bytes.
const MAX_DIFF_BYTES: usize = 1500;

/// Notes appended to a `no_match` message, one per paragraph: line-number
/// prefixes in old_string, then every region close to it (best first) with
/// what differs, and a diff against the closest.
pub(crate) fn no_match_notes(
    text: &str,
    old: &str,
    close: &[Candidate],
    context: &Context<'_>,
) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(stripped) = strip_line_numbers(old) {
        let mut note = "old_string seems to include read_file's line-number prefixes (a number and a tab at the start of each line); they are not part of the file, so pass only the text after the tab.".to_string();
        let mut found = memchr::memmem::find_iter(text.as_bytes(), stripped.as_bytes());
        if let (Some(at), None) = (found.next(), found.next()) {
            let first = line_numbers(text, [at]).first().copied().unwrap_or(1);
            let height =
                agent_tools_text::count_newlines(stripped.trim_end_matches('\n').as_bytes());
            let lines = Lines {
                first,
                last: first + height,
            };
            note.push_str(&format!(
                " Without them it matches {}.",
                name_lines(lines, context.origin)
            ));
            notes.push(note);
            return notes;
        }
        notes.push(note);
    }
    if text.is_empty() {
        notes.push("The file is empty.".to_string());
        return notes;
    }
    let Some(best) = close.first() else {
        notes.push(
            "No part of the file is close to it; read the file again to see its current content."
                .to_string(),
        );
        return notes;
    };
    let old_body = old.strip_suffix('\n').unwrap_or(old);
    let old_body = old_body.strip_suffix('\r').unwrap_or(old_body);
    let mut list = if close.len() == 1 {
        "The closest region of the file:".to_string()
    } else {
        format!(
            "The {} closest regions of the file, best first:",
            close.len()
        )
    };
    for candidate in close {
        let region = &text[candidate.range.clone()];
        list.push_str(&format!(
            "\n- {}, {:.0}% similar: {}",
            name_lines(candidate.lines, context.origin),
            candidate.similarity * 100.0,
            how_it_differs(old_body, region, candidate)
        ));
    }
    notes.push(list);
    let region = &text[best.range.clone()];
    let diff = TextDiff::from_lines(old_body, region);
    let mut unified = diff
        .unified_diff()
        .context_radius(2)
        .missing_newline_hint(false)
        .header(
            "old_string",
            &format!("the file, {}", name_lines(best.lines, context.origin)),
        )
        .to_string();
    if unified.len() > MAX_DIFF_BYTES {
        let cut = agent_tools_text::truncate_utf8(&unified, MAX_DIFF_BYTES).len();
        unified.truncate(cut);
        unified.push_str("\n[diff cut]");
    }
    notes.push(unified.trim_end().to_string());
    notes
}

/// What differs, in words: the invisible differences the matcher named, or
/// else which of old_string's lines differ.
pub(crate) fn how_it_differs(old: &str, region: &str, candidate: &Candidate) -> String {
    let old = old.strip_suffix('\n').unwrap_or(old);
    let old = old.strip_suffix('\r').unwrap_or(old);
    let old_height = old.split('\n').count();
    let mut parts: Vec<String> = Vec::new();
    let differing = &candidate.differing_lines;
    if candidate.matched {
        // Nothing visible differs.
    } else if old.len() == region.len() && old.to_lowercase() == region.to_lowercase() {
        parts.push("it differs only in letter case".to_string());
    } else if !differing.is_empty() {
        parts.push(match differing.as_slice() {
            _ if old_height == 1 => "the line differs".to_string(),
            [one] => format!("old_string's {} line differs", ordinal(*one)),
            all if all.len() == old_height => {
                format!("all {} of old_string's lines differ", all.len())
            }
            some => format!(
                "{} of old_string's {} lines differ (its {})",
                some.len(),
                old_height,
                some.iter()
                    .map(|&n| ordinal(n))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    parts.extend(candidate.differences.iter().cloned());
    if parts.is_empty() {
        let region_height = region.split('\n').count();
        parts.push(if region_height == old_height {
            "it differs in whitespace only".to_string()
        } else {
            format!("old_string has {old_height} lines where the region has {region_height}")
        });
    }
    parts.join("; ")
}

/// old_string without `read_file` prefixes (`     12\t` or `    12→`), when
/// most of its lines, the first included, carry one.
pub(crate) fn strip_line_numbers(old: &str) -> Option<String> {
    fn prefix_len(line: &str) -> Option<usize> {
        let body = line.trim_start_matches(' ');
        let digits = body.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let rest = &body[digits..];
        let sep = if rest.starts_with('\t') {
            1
        } else if rest.starts_with('\u{2192}') {
            '\u{2192}'.len_utf8()
        } else {
            return None;
        };
        Some(line.len() - rest.len() + sep)
    }
    let lines: Vec<&str> = old.split('\n').collect();
    let non_empty: Vec<&&str> = lines.iter().filter(|l| !l.trim().is_empty()).collect();
    let first = non_empty.first()?;
    prefix_len(first)?;
    let numbered = non_empty.iter().filter(|l| prefix_len(l).is_some()).count();
    if numbered * 2 < non_empty.len() {
        return None;
    }
    let stripped: Vec<&str> = lines
        .iter()
        .map(|line| prefix_len(line).map_or(*line, |n| &line[n..]))
        .collect();
    Some(stripped.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_number_prefixes_are_recognised() {
        assert_eq!(
            strip_line_numbers("     3\tfn a() {\n     4\t    b();\n").as_deref(),
            Some("fn a() {\n    b();\n")
        );
        assert_eq!(strip_line_numbers("    12\u{2192}x").as_deref(), Some("x"));
        assert_eq!(strip_line_numbers("fn a() {\n 4\tb"), None);
        assert_eq!(strip_line_numbers("2024\tdata"), Some("data".into()));
        assert_eq!(strip_line_numbers("x\t1"), None);
    }
}
