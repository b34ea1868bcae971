//! Runs the tolerant edit matcher on arbitrary file text, old_string and
//! new_string, and checks what it promises: no panic, regions on character
//! boundaries inside the text, and a unique match of whole lines given
//! back byte for byte when new_string repeats old_string. Run with `cargo +nightly fuzz run edit_match`.
//!
//! Input: the three strings separated by 0xFF bytes (never part of UTF-8);
//! anything else invalid becomes U+FFFD.
#![no_main]

use agent_tools_tolerant::{Candidate, Verdict, locate};
use libfuzzer_sys::fuzz_target;

fn check_region(text: &str, candidate: &Candidate) {
    let range = &candidate.range;
    assert!(
        range.start <= range.end && range.end <= text.len(),
        "{range:?}"
    );
    assert!(text.is_char_boundary(range.start) && text.is_char_boundary(range.end));
    assert!(candidate.lines.first <= candidate.lines.last);
    assert!((0.0..=1.0).contains(&candidate.similarity));
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&b| b == 0xFF);
    let (Some(text), Some(old), Some(new)) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    let text = String::from_utf8_lossy(text);
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    let ending = if text.contains("\r\n") { "\r\n" } else { "\n" };
    match locate(&text, &old, &new, ending) {
        Verdict::Unique(found) => {
            let range = found.range.clone();
            assert!(range.start <= range.end && range.end <= text.len());
            assert!(text.is_char_boundary(range.start) && text.is_char_boundary(range.end));
            // Lines of new_string the caller left as in old_string are
            // written as the file has them: an edit of whole lines that
            // changes nothing gives back the region's own bytes. (A span
            // inside a line is replaced by new_string as written.)
            let whole_lines = (range.start == 0 || text[..range.start].ends_with('\n'))
                && (range.end == text.len()
                    || text[..range.end].ends_with('\n')
                    || text[range.end..].starts_with('\n')
                    || text[range.end..].starts_with("\r\n"));
            if let (true, Verdict::Unique(same)) = (whole_lines, locate(&text, &old, &old, ending))
            {
                assert_eq!(
                    same.replacement,
                    &text[same.range.clone()],
                    "an unchanged new_string rewrote the region"
                );
            }
        }
        Verdict::Ambiguous {
            matches,
            near,
            total,
        } => {
            assert!(total >= matches.len());
            assert!(total + near.len() >= 2, "ambiguity needs two regions");
            for candidate in matches.iter().chain(&near) {
                check_region(&text, candidate);
            }
        }
        Verdict::NotFound { close } => {
            for candidate in &close {
                check_region(&text, candidate);
            }
        }
    }
});
