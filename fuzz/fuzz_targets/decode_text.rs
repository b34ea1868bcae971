//! Decodes arbitrary bytes the way the file tools do and checks what the
//! decoder promises: no panic, a strict decode that round-trips to the same
//! bytes, a lossy decode that agrees with it, and truncation that stays on a
//! character boundary. Run with `cargo +nightly fuzz run decode_text`.
#![no_main]

use agent_tools_text::{LineEnding, TextFile, decode, decode_lossy, truncate_utf8, utf8_boundary};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let strict = decode(data);
    let lossy = decode_lossy(data);
    if let Ok((text, encoding)) = &strict {
        let (lossy_text, lossy_encoding, replaced) =
            lossy.clone().expect("a strict decode implies a lossy one");
        assert_eq!(&lossy_text, text);
        assert_eq!(lossy_encoding, *encoding);
        assert!(!replaced, "nothing is replaced in valid text");
    }
    if let Ok(file) = TextFile::decode(data) {
        // Valid text written back in its own encoding is the same bytes.
        if let Ok(bytes) = file.encode() {
            assert_eq!(bytes, data, "decode then encode must round-trip");
        }
        let ending = file.line_ending();
        let _ = LineEnding::detect(&file.text).apply(&file.text);
        let _ = ending.as_str();
    }
    if let Ok((text, _, _)) = lossy {
        let cut = (data.len() / 2).min(text.len());
        let kept = truncate_utf8(&text, cut);
        assert!(kept.len() <= cut);
        assert!(text.starts_with(kept));
    }
    let boundary = utf8_boundary(data, data.len() / 3);
    assert!(boundary <= data.len() / 3);
});
