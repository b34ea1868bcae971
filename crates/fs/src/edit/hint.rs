//! Helping a caller recover from `no_match`: the closest region of the file
//! and how it differs, and a warning when old_string carries `read_file`'s
//! line-number prefixes.

use std::time::Duration;

use similar::TextDiff;

use super::matching::{LineTable, OldLines, line_numbers};

/// Below this similarity a region is not worth showing.
const MIN_RATIO: f32 = 0.5;
/// How many candidate windows get a real (costlier) similarity score.
const CANDIDATES: usize = 8;
/// Cap on the diff shown, in bytes.
const MAX_DIFF_BYTES: usize = 1500;
/// Above this many bytes (old_string plus region) similarity is judged by
/// lines rather than characters.
const CHAR_DIFF_LIMIT: usize = 16 * 1024;
/// Time budget of one similarity score.
const SCORE_TIMEOUT: Duration = Duration::from_millis(50);

/// Notes appended to a `no_match` message, one per paragraph.
pub(crate) fn no_match_notes(text: &str, old: &str) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(stripped) = strip_line_numbers(old) {
        let mut note = "old_string seems to include read_file's line-number prefixes (a number and a tab at the start of each line); they are not part of the file, so pass only the text after the tab.".to_string();
        let mut found = memchr::memmem::find_iter(text.as_bytes(), stripped.as_bytes());
        if let (Some(at), None) = (found.next(), found.next()) {
            let line = line_numbers(text, [at]).first().copied().unwrap_or(1);
            note.push_str(&format!(" Without them it matches at line {line}."));
            notes.push(note);
            return notes;
        }
        notes.push(note);
    }
    if text.is_empty() {
        notes.push("The file is empty.".to_string());
        return notes;
    }
    match closest(text, old) {
        Some(close) => notes.push(close.describe(old)),
        None => notes.push(
            "No part of the file is close to it; read the file again to see its current content."
                .to_string(),
        ),
    }
    notes
}

/// old_string without `read_file` prefixes (`     12\t` or `    12→`), when
/// most of its lines, the first included, carry one.
fn strip_line_numbers(old: &str) -> Option<String> {
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

/// The region of the file most like old_string.
struct Close<'t> {
    first_line: usize,
    last_line: usize,
    ratio: f32,
    region: &'t str,
}

impl Close<'_> {
    fn describe(&self, old: &str) -> String {
        let old_body = old.strip_suffix('\n').unwrap_or(old);
        let span = if self.first_line == self.last_line {
            format!("line {}", self.first_line)
        } else {
            format!("lines {}-{}", self.first_line, self.last_line)
        };
        let how = if squeeze(old_body) == squeeze(self.region) {
            "it differs only in whitespace (tabs, spaces or line breaks)".to_string()
        } else if old_body.to_lowercase() == self.region.to_lowercase() {
            "it differs only in letter case".to_string()
        } else {
            let old_lines: Vec<&str> = old_body.split('\n').collect();
            let differing = old_lines
                .iter()
                .zip(self.region.split('\n'))
                .filter(|(o, f)| o.trim_end_matches('\r') != f.trim_end_matches('\r'))
                .count();
            match differing {
                0 => "it differs in its line breaks".to_string(),
                _ if old_lines.len() == 1 => "the line differs".to_string(),
                1 if old_lines.len() > 1 => {
                    let which = old_lines
                        .iter()
                        .zip(self.region.split('\n'))
                        .position(|(o, f)| o.trim_end_matches('\r') != f.trim_end_matches('\r'))
                        .map_or(1, |i| i + 1);
                    format!("line {which} of old_string differs")
                }
                n if n == old_lines.len() => {
                    format!("all {n} lines of old_string differ")
                }
                n if old_lines.len() > 1 => {
                    format!("{n} of the {} lines of old_string differ", old_lines.len())
                }
                _ => "the line differs".to_string(),
            }
        };
        let diff = TextDiff::from_lines(old_body, self.region);
        let mut unified = diff
            .unified_diff()
            .context_radius(2)
            .missing_newline_hint(false)
            .header("old_string", &format!("file, {span}"))
            .to_string();
        if unified.len() > MAX_DIFF_BYTES {
            let cut = agent_tools_text::truncate_utf8(&unified, MAX_DIFF_BYTES).len();
            unified.truncate(cut);
            unified.push_str("\n[diff cut]");
        }
        let unified = unified.trim_end();
        format!(
            "The closest text is at {span} ({:.0}% similar); {how}:\n{unified}",
            self.ratio * 100.0
        )
    }
}

/// Case-sensitive text without any whitespace.
fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Bits of a 2^20-bit set of character trigrams (a cheap sieve; collisions
/// only make a window look a little better than it is).
const SIEVE_BITS: usize = 1 << 20;

fn trigram_slot(window: &[u8]) -> usize {
    let hash = (u32::from(window[0]) << 16) ^ (u32::from(window[1]) << 8) ^ u32::from(window[2]);
    (hash.wrapping_mul(2_654_435_761) >> 12) as usize % SIEVE_BITS
}

fn closest<'t>(text: &'t str, old: &str) -> Option<Close<'t>> {
    let table = LineTable::new(text);
    let total = table.len();
    if total == 0 {
        return None;
    }
    let wanted = OldLines::new(old).lines.len().clamp(1, total);

    // Sieve: trigrams of old_string's trimmed lines.
    let mut sieve = vec![0u64; SIEVE_BITS / 64];
    for line in old.split('\n') {
        for window in line.trim().as_bytes().windows(3) {
            let slot = trigram_slot(window);
            sieve[slot / 64] |= 1 << (slot % 64);
        }
    }
    let line_score = |index: usize| -> u64 {
        table
            .line(text, index)
            .trim()
            .as_bytes()
            .windows(3)
            .filter(|w| {
                let slot = trigram_slot(w);
                sieve[slot / 64] & (1 << (slot % 64)) != 0
            })
            .count() as u64
    };
    let mut prefix = Vec::with_capacity(total + 1);
    prefix.push(0u64);
    for index in 0..total {
        let last = prefix.last().copied().unwrap_or(0);
        prefix.push(last + line_score(index));
    }
    let mut windows: Vec<(u64, usize)> = (0..=total - wanted)
        .map(|first| (prefix[first + wanted] - prefix[first], first))
        .collect();
    if windows.len() > CANDIDATES {
        windows.select_nth_unstable_by(CANDIDATES, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        windows.truncate(CANDIDATES);
    }
    // Without any trigram in common, only tiny texts are still worth a look.
    if old.trim().len() >= 3 {
        windows.retain(|w| w.0 > 0);
    }

    let old_body = old.strip_suffix('\n').unwrap_or(old);
    let mut best: Option<Close<'t>> = None;
    for (_, first) in windows {
        let (start, end) = table.range(first, wanted, false);
        let region = &text[start..end];
        let ratio = similarity(old_body, region);
        let better = best
            .as_ref()
            .is_none_or(|b| ratio > b.ratio || (ratio == b.ratio && first + 1 < b.first_line));
        if ratio >= MIN_RATIO && better {
            best = Some(Close {
                first_line: first + 1,
                last_line: first + wanted,
                ratio,
                region,
            });
        }
    }
    best
}

fn similarity(old: &str, region: &str) -> f32 {
    let mut config = TextDiff::configure();
    config.timeout(SCORE_TIMEOUT);
    if old.len() + region.len() <= CHAR_DIFF_LIMIT {
        config.diff_chars(old, region).ratio()
    } else {
        config.diff_lines(old, region).ratio()
    }
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

    #[test]
    fn closest_region_is_found_and_described() {
        let text = "fn one() {}\nfn two() {\n    let x = 1;\n    call(x);\n}\nfn three() {}\n";
        let close = closest(text, "fn two() {\n    let x = 2;\n    call(x);\n}").unwrap();
        assert_eq!((close.first_line, close.last_line), (2, 5));
        let described = close.describe("fn two() {\n    let x = 2;\n    call(x);\n}");
        assert!(
            described.contains("line 2 of old_string differs"),
            "{described}"
        );
        assert!(described.contains("-    let x = 2;"), "{described}");
        assert!(described.contains("+    let x = 1;"), "{described}");
    }

    #[test]
    fn nothing_close_means_no_region() {
        assert!(closest("alpha\nbeta\n", "zzzzzzzzqqqq").is_none());
    }
}
