//! Runs the ECMAScript regex engine on an arbitrary pattern and text, and
//! checks what it promises: no panic; a text regress would take too long
//! on is refused rather than searched (so no input runs past libFuzzer's
//! timeout); matches on character boundaries, in order; and, where regress
//! itself is cheap to ask, the very matches and groups regress finds,
//! whichever engine answered, and the very lines for a content search.
//! Run with `cargo +nightly fuzz run ecma_budget -- -timeout=10`.
//!
//! Input: a flag byte (bit 0: case-insensitive), then the pattern and the
//! text separated by a 0xFF byte (never part of UTF-8); anything else
//! invalid becomes U+FFFD.
#![no_main]

use std::sync::atomic::AtomicBool;

use agent_tools_ecma::{EcmaBudget, EcmaMatcher, EcmaRegex, Found, Template};
use grep_matcher::Matcher;
use libfuzzer_sys::fuzz_target;

/// Below this bound regress is asked for the reference answer.
const CHEAP: f64 = 1e6;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let mut parts = rest.splitn(2, |&b| b == 0xFF);
    let (Some(pattern), Some(text)) = (parts.next(), parts.next()) else {
        return;
    };
    let pattern = String::from_utf8_lossy(pattern);
    let text = String::from_utf8_lossy(text);
    let Ok(regex) = EcmaRegex::new(&pattern, flags & 1 == 1) else {
        return;
    };
    let cancel = AtomicBool::new(false);
    let every_group = Template::parse(r"\1\2\3\4\5\6\7\8\9");
    let budget = EcmaBudget::default();
    let found: Option<Vec<Found>> = match regex.matches(&text, Some(&every_group), &budget, &cancel) {
        Ok(matches) => Some(matches.map(|found| found.unwrap()).collect()),
        Err(_) => None,
    };
    if let Some(found) = &found {
        let mut last = 0;
        for one in found {
            let range = one.range();
            assert!(range.start >= last && range.end <= text.len(), "{range:?}");
            assert!(text.is_char_boundary(range.start) && text.is_char_boundary(range.end));
            last = range.end;
        }
    }
    let cheap = regex.step_bound(&text) <= CHEAP;
    if cheap {
        let reference = regex.regress_matches(&text);
        assert_eq!(found.as_ref(), Some(&reference), "{pattern:?} on {text:?}");
    }
    // The content search: each line as regress sees it.
    let matcher = EcmaMatcher::new(regex.clone());
    let bytes = text.as_bytes();
    let mut reported = Vec::new();
    let mut at = 0;
    let mut refused = false;
    while at < bytes.len() {
        match matcher.find_at(bytes, at) {
            Ok(Some(found)) => {
                let line = bytes[..found.start()].iter().filter(|&&b| b == b'\n').count();
                reported.push(line);
                at = memchr::memchr(b'\n', &bytes[found.start()..])
                    .map_or(bytes.len(), |i| found.start() + i + 1);
            }
            Ok(None) => break,
            Err(_) => {
                refused = true;
                break;
            }
        }
    }
    if cheap && !refused {
        let mut lines: Vec<&str> = text.split('\n').collect();
        if text.ends_with('\n') || text.is_empty() {
            lines.pop();
        }
        let expected: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, line)| regex.find_from(line, 0).is_some())
            .map(|(index, _)| index)
            .collect();
        assert_eq!(reported, expected, "{pattern:?} on {text:?}");
    }
});
