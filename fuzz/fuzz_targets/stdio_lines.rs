//! Sends arbitrary input through what the stdio transport does with a line
//! before any server is involved: the JSON value count, the scan for `id`
//! and `method` in a broken line, the read that sorts a line into a lane,
//! and the fast lane's reading of a plain `tools/call`. None may panic,
//! and the fast lane must take only lines that rmcp's types take too, read
//! the same way (id, tool name, arguments, no metadata): the answer is then
//! the same whichever path a line takes.
//! Run with `cargo +nightly fuzz run stdio_lines`.
//!
//! Input: the bytes of stdin; each line is checked on its own.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for line in data.split(|&b| b == b'\n') {
        agent_tools_mcp::check_line(line);
    }
});
