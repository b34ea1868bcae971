//! Drives the stdio transport's framing on arbitrary input: the splitter
//! that cuts stdin into lines of bounded size (fed in chunks of varying
//! sizes, the way reads return), and what is learnt from a line before it
//! is parsed (the JSON value count, the scan for `id` and `method` in a
//! broken line, the head a line is sorted by). None may panic; every line
//! within the limit must come out whole, a longer one as its start and
//! marked oversized, and nothing may be held past the bounds.
//! Run with `cargo +nightly fuzz run stdio_lines`.
//!
//! Input: two bytes choose the frame limit (16 bytes to 64 KiB and over,
//! so both the limit and the kept prefix are reached), four more the chunk
//! sizes; the rest is the bytes of stdin.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, input)) = data.split_first_chunk::<6>() else {
        return;
    };
    let limit = 16 + usize::from(u16::from_le_bytes([head[0], head[1]])) * 2;
    let chunks = [
        1 + usize::from(head[2]),
        1 + usize::from(head[3]) * 64,
        1 + usize::from(head[4]),
        1 + usize::from(head[5]) * 512,
    ];
    agent_tools_mcp::check_input(input, limit, &chunks);
});
