//! read_file through the FileTools API: the numbered view, paging, tail reads
//! (including files over the size limit), encodings and every error code.

// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::Ws;

use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::symlink;

use agent_tools_error::{ErrorCode, ToolResult};
use agent_tools_fs::{Limits, ReadFileArgs};

fn small_files(max_file_bytes: u64) -> Limits {
    Limits {
        max_file_bytes,
        ..Limits::default()
    }
}

fn tree(files: &[(&str, &[u8])]) -> Ws {
    common::tree(files)
}

fn tree_with(limits: Limits, files: &[(&str, &[u8])]) -> Ws {
    common::tree_with(limits, files)
}

impl Ws {
    fn read(&self, path: &str) -> ToolResult<String> {
        self.tools.read_file(&ReadFileArgs::new(path))
    }

    fn read_at(&self, path: &str, offset: i64, limit: u64) -> ToolResult<String> {
        self.tools.read_file(&ReadFileArgs {
            path: path.to_string(),
            offset,
            limit,
        })
    }

    fn code(&self, path: &str, offset: i64) -> ErrorCode {
        self.read_at(path, offset, 2000).unwrap_err().code()
    }
}

/// `n` lines `line 1` .. `line n`, each ending in `\n`.
fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

/// The view read_file prints for lines `from..=to` of [`numbered`].
fn view(from: usize, to: usize) -> String {
    (from..=to).map(|i| format!("{i:>6}\tline {i}\n")).collect()
}

// ---- the view -------------------------------------------------------------

#[test]
fn numbers_are_right_aligned_in_six_columns_then_a_tab() {
    let ws = tree(&[("a.txt", b"fn main() {\n\tprintln!();\n}\n")]);
    let out = ws.read("a.txt").unwrap();
    insta::assert_snapshot!("view", out);
    assert_eq!(
        out,
        "     1\tfn main() {\n     2\t\tprintln!();\n     3\t}\n"
    );
}

#[test]
fn the_number_column_widens_past_six_digits() {
    let ws = tree(&[("big.txt", "x\n".repeat(1_000_001).as_bytes())]);
    let out = ws.read_at("big.txt", 999_999, 3).unwrap();
    assert_eq!(out, " 999999\tx\n1000000\tx\n1000001\tx\n");
}

#[test]
fn a_file_without_a_final_newline_shows_its_last_line() {
    let ws = tree(&[("a.txt", b"one\ntwo")]);
    assert_eq!(ws.read("a.txt").unwrap(), "     1\tone\n     2\ttwo\n");
}

#[test]
fn blank_lines_are_lines() {
    let ws = tree(&[("a.txt", b"\n\nx\n\n")]);
    assert_eq!(
        ws.read("a.txt").unwrap(),
        "     1\t\n     2\t\n     3\tx\n     4\t\n"
    );
}

#[test]
fn an_empty_file_says_so() {
    let ws = tree(&[
        ("empty", b""),
        ("bom8", b"\xEF\xBB\xBF"),
        ("bom16le", b"\xFF\xFE"),
        ("bom16be", b"\xFE\xFF"),
    ]);
    for name in ["empty", "bom8", "bom16le", "bom16be"] {
        assert_eq!(ws.read(name).unwrap(), "(empty file)", "{name}");
        // Any offset on an empty file is the same answer, not an error.
        assert_eq!(ws.read_at(name, -5, 10).unwrap(), "(empty file)", "{name}");
        assert_eq!(ws.read_at(name, 3, 10).unwrap(), "(empty file)", "{name}");
    }
}

#[test]
fn a_file_of_one_newline_has_one_empty_line() {
    let ws = tree(&[("nl", b"\n")]);
    assert_eq!(ws.read("nl").unwrap(), "     1\t\n");
}

#[test]
fn long_lines_are_cut_with_a_marker_counting_characters() {
    let long = "x".repeat(2500);
    let wide = "é".repeat(2003); // two bytes each: counted in characters
    let exact = "y".repeat(2000);
    let content = format!("{long}\n{wide}\n{exact}\n");
    let ws = tree(&[("long.txt", content.as_bytes())]);
    let out = ws.read("long.txt").unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(
        lines[0],
        format!(
            "     1\t{}… [line truncated: 500 more characters]",
            "x".repeat(2000)
        )
    );
    assert_eq!(
        lines[1],
        format!(
            "     2\t{}… [line truncated: 3 more characters]",
            "é".repeat(2000)
        )
    );
    assert_eq!(lines[2], format!("     3\t{exact}"));
    insta::assert_snapshot!(
        "long_line_marker",
        lines[0].replace(&"x".repeat(2000), "x{2000}")
    );
}

// ---- encodings --------------------------------------------------------------

#[test]
fn crlf_lines_are_shown_without_the_carriage_return() {
    let ws = tree(&[("dos.txt", b"one\r\ntwo\r\nthree")]);
    assert_eq!(
        ws.read("dos.txt").unwrap(),
        "     1\tone\n     2\ttwo\n     3\tthree\n"
    );
}

#[test]
fn a_utf8_bom_is_not_shown() {
    let ws = tree(&[("bom.txt", b"\xEF\xBB\xBFhello\nworld\n")]);
    assert_eq!(
        ws.read("bom.txt").unwrap(),
        "     1\thello\n     2\tworld\n"
    );
}

fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
    let mut out = if big_endian {
        vec![0xFE, 0xFF]
    } else {
        vec![0xFF, 0xFE]
    };
    for unit in text.encode_utf16() {
        out.extend_from_slice(&if big_endian {
            unit.to_be_bytes()
        } else {
            unit.to_le_bytes()
        });
    }
    out
}

#[test]
fn utf16_with_a_bom_is_decoded_in_both_byte_orders() {
    let text = "héllo wörld\r\nzweite Zeile 🎉\r\n";
    let ws = tree(&[
        ("le.txt", &utf16(text, false)),
        ("be.txt", &utf16(text, true)),
    ]);
    let want = "     1\théllo wörld\n     2\tzweite Zeile 🎉\n";
    assert_eq!(ws.read("le.txt").unwrap(), want);
    assert_eq!(ws.read("be.txt").unwrap(), want);
    assert_eq!(
        ws.read_at("be.txt", -1, 10).unwrap(),
        "     2\tzweite Zeile 🎉\n"
    );
}

#[test]
fn nul_bytes_make_a_file_binary() {
    let mut late = "text line\n".repeat(100).into_bytes();
    late.extend_from_slice(b"\0\x01\x02");
    let ws = tree(&[("bin", b"\x7fELF\0\0\x01"), ("late", &late)]);
    assert_eq!(ws.code("bin", 1), ErrorCode::IsBinary);
    assert_eq!(ws.code("late", 1), ErrorCode::IsBinary);
    assert_eq!(ws.code("late", -1), ErrorCode::IsBinary);
}

#[test]
fn invalid_utf8_is_shown_with_replacement_characters() {
    let ws = tree(&[("latin1.txt", b"caf\xe9\nok\n")]);
    assert_eq!(
        ws.read("latin1.txt").unwrap(),
        "     1\tcaf\u{FFFD}\n     2\tok\n"
    );
}

// ---- paging -----------------------------------------------------------------

#[test]
fn offset_is_one_based_and_limit_bounds_the_lines() {
    let ws = tree(&[("a.txt", numbered(10).as_bytes())]);
    assert_eq!(ws.read_at("a.txt", 1, 10).unwrap(), view(1, 10));
    let out = ws.read_at("a.txt", 3, 2).unwrap();
    assert_eq!(
        out,
        format!(
            "{}\n[showing lines 3-4 of 10; call again with offset=5 to continue]\n",
            view(3, 4)
        )
    );
    insta::assert_snapshot!("continuation_hint", out);
    // The last line, exactly.
    assert_eq!(ws.read_at("a.txt", 10, 5).unwrap(), view(10, 10));
    // A window that reaches the end has no hint.
    assert_eq!(ws.read_at("a.txt", 8, 3).unwrap(), view(8, 10));
}

#[test]
fn following_the_hint_reads_the_whole_file_once() {
    let ws = tree(&[("a.txt", numbered(23).as_bytes())]);
    let mut offset = 1;
    let mut seen = String::new();
    loop {
        let out = ws.read_at("a.txt", offset, 5).unwrap();
        match out.split_once("\n[showing lines ") {
            None => {
                seen.push_str(&out);
                break;
            }
            Some((body, hint)) => {
                seen.push_str(body);
                let next = hint.split("offset=").nth(1).unwrap();
                offset = next.split(' ').next().unwrap().parse().unwrap();
            }
        }
    }
    assert_eq!(seen, view(1, 23));
}

#[test]
fn the_default_limit_is_2000_lines() {
    let ws = tree(&[("a.txt", numbered(2500).as_bytes())]);
    let out = ws.read("a.txt").unwrap();
    assert_eq!(
        out,
        format!(
            "{}\n[showing lines 1-2000 of 2500; call again with offset=2001 to continue]\n",
            view(1, 2000)
        )
    );
    let rest = ws.read_at("a.txt", 2001, 2000).unwrap();
    assert_eq!(rest, view(2001, 2500));
}

#[test]
fn negative_offset_reads_the_last_lines_with_their_real_numbers() {
    let ws = tree(&[("a.txt", numbered(10).as_bytes()), ("b.txt", b"a\nb\nc")]);
    assert_eq!(ws.read_at("a.txt", -3, 2000).unwrap(), view(8, 10));
    assert_eq!(ws.read_at("a.txt", -1, 2000).unwrap(), view(10, 10));
    // More lines than the file has: the whole file.
    assert_eq!(ws.read_at("a.txt", -50, 2000).unwrap(), view(1, 10));
    // The limit still applies, with a hint.
    assert_eq!(
        ws.read_at("a.txt", -3, 2).unwrap(),
        format!(
            "{}\n[showing lines 8-9 of 10; call again with offset=10 to continue]\n",
            view(8, 9)
        )
    );
    assert_eq!(
        ws.read_at("b.txt", -2, 2000).unwrap(),
        "     2\tb\n     3\tc\n"
    );
    // The most negative offset is just "everything".
    assert_eq!(
        ws.read_at("a.txt", i64::MIN, 1).unwrap(),
        format!(
            "{}\n[showing lines 1-1 of 10; call again with offset=2 to continue]\n",
            view(1, 1)
        )
    );
}

#[test]
fn offset_zero_and_offsets_past_the_end_are_invalid() {
    let ws = tree(&[("a.txt", numbered(10).as_bytes())]);
    assert_eq!(ws.code("a.txt", 0), ErrorCode::InvalidInput);
    assert_eq!(ws.code("a.txt", 11), ErrorCode::InvalidInput);
    assert_eq!(ws.code("a.txt", i64::MAX), ErrorCode::InvalidInput);
    let err = ws.read_at("a.txt", 11, 5).unwrap_err();
    insta::assert_snapshot!("offset_past_end", err.message());
    let err = ws.read_at("a.txt", 1, 0).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput);
}

#[test]
fn the_output_budget_stops_at_a_whole_line_and_says_why() {
    let limits = Limits {
        max_output_bytes: 600,
        ..Limits::default()
    };
    let ws = tree_with(limits, &[("a.txt", numbered(100).as_bytes())]);
    let out = ws.read("a.txt").unwrap();
    assert!(out.len() <= 600, "{} bytes", out.len());
    let (body, hint) = out.split_once("\n[").unwrap();
    let shown = body.lines().count();
    assert!(shown > 10, "{shown} lines");
    assert_eq!(body, view(1, shown));
    assert_eq!(
        hint,
        format!(
            "showing lines 1-{shown} of 100 (output limit reached); call again with offset={} to continue]\n",
            shown + 1
        )
    );
    insta::assert_snapshot!("output_limit_hint", format!("[{hint}"));
    // One line is always shown, even when it alone is over the budget.
    let wide = format!("{}\nsecond\n", "w".repeat(1500));
    let ws = tree_with(limits, &[("wide.txt", wide.as_bytes())]);
    let out = ws.read("wide.txt").unwrap();
    assert!(out.starts_with("     1\twww"));
    assert!(out.ends_with(
        "\n[showing lines 1-1 of 2 (output limit reached); call again with offset=2 to continue]\n"
    ));
}

// ---- errors -----------------------------------------------------------------

#[test]
fn missing_files_and_directories_have_their_own_codes() {
    let ws = tree(&[("dir/a.txt", b"a\n")]);
    assert_eq!(ws.code("nope.txt", 1), ErrorCode::NotFound);
    assert_eq!(ws.code("dir/nope/x", 1), ErrorCode::NotFound);
    assert_eq!(ws.code("dir", 1), ErrorCode::NotAFile);
    assert_eq!(ws.code(".", 1), ErrorCode::NotAFile);
    // A file used as a directory does not exist.
    assert_ne!(ws.code("dir/a.txt/x", 1), ErrorCode::PathEscape);
}

#[test]
fn absolute_paths_inside_the_root_are_accepted() {
    let ws = tree(&[("dir/a.txt", b"a\n")]);
    let abs = ws.root.join("dir/a.txt");
    assert_eq!(ws.read(abs.to_str().unwrap()).unwrap(), "     1\ta\n");
    assert_eq!(ws.read("./dir/../dir/a.txt").unwrap(), "     1\ta\n");
}

#[test]
fn paths_leaving_the_root_are_refused() {
    let ws = tree(&[("in.txt", b"in\n")]);
    symlink(ws.outside.join("secret.txt"), ws.root.join("link_out")).unwrap();
    symlink(&ws.outside, ws.root.join("dir_out")).unwrap();
    symlink(ws.root.join("gone"), ws.root.join("dangling")).unwrap();
    symlink("../outside/secret.txt", ws.root.join("relative_out")).unwrap();
    symlink("in.txt", ws.root.join("link_in")).unwrap();
    let abs_out = ws.outside.join("secret.txt");
    for path in [
        "../outside/secret.txt",
        "a/../../outside/secret.txt",
        abs_out.to_str().unwrap(),
        "/etc/passwd",
        "link_out",
        "dir_out/secret.txt",
        "relative_out",
        "dangling",
    ] {
        assert_eq!(ws.code(path, 1), ErrorCode::PathEscape, "{path}");
    }
    // A sibling directory whose name starts like the root is outside too.
    let sibling = format!("{}_evil/x", ws.root.display());
    assert_eq!(ws.code(&sibling, 1), ErrorCode::PathEscape);
    // A symlink that stays inside is followed.
    assert_eq!(ws.read("link_in").unwrap(), "     1\tin\n");
}

// ---- size limit and tail reads ------------------------------------------------

#[test]
fn files_over_the_limit_are_too_large_unless_read_from_the_end() {
    let content = numbered(100); // 692 bytes
    let ws = tree_with(
        small_files(200),
        &[("big.txt", content.as_bytes()), ("edge.txt", &[b'e'; 200])],
    );
    let err = ws.read("big.txt").unwrap_err();
    assert_eq!(err.code(), ErrorCode::TooLarge);
    insta::assert_snapshot!("too_large", err.message());
    assert_eq!(ws.code("big.txt", 50), ErrorCode::TooLarge);
    // Exactly at the limit is fine.
    assert!(ws.read("edge.txt").unwrap().starts_with("     1\teee"));

    assert_eq!(ws.read_at("big.txt", -3, 2000).unwrap(), view(98, 100));
    assert_eq!(ws.read_at("big.txt", -1, 2000).unwrap(), view(100, 100));
}

#[test]
fn tail_of_a_large_file_matches_the_tail_of_a_small_one() {
    let content = numbered(5000);
    let small = tree(&[("f", content.as_bytes())]);
    let large = tree_with(small_files(1000), &[("f", content.as_bytes())]);
    for back in [1, 2, 3, 10, 999, 1000] {
        assert_eq!(
            large.read_at("f", -back, 2000).unwrap(),
            small.read_at("f", -back, 2000).unwrap(),
            "offset -{back}"
        );
    }
    assert_eq!(large.read_at("f", -3, 2000).unwrap(), view(4998, 5000));
}

#[test]
fn tail_of_a_large_file_without_a_final_newline() {
    let mut content = numbered(1000);
    content.push_str("no newline here");
    let ws = tree_with(small_files(100), &[("f", content.as_bytes())]);
    assert_eq!(
        ws.read_at("f", -3, 2000).unwrap(),
        format!("{}  1001\tno newline here\n", view(999, 1000))
    );
    assert_eq!(
        ws.read_at("f", -1, 2000).unwrap(),
        "  1001\tno newline here\n"
    );
}

#[test]
fn tail_of_a_large_crlf_file_with_a_bom() {
    let mut content = b"\xEF\xBB\xBF".to_vec();
    for i in 1..=300 {
        content.extend_from_slice(format!("row {i}\r\n").as_bytes());
    }
    let ws = tree_with(small_files(100), &[("f", &content)]);
    assert_eq!(
        ws.read_at("f", -2, 2000).unwrap(),
        "   299\trow 299\n   300\trow 300\n"
    );
    // Asking for more than there is reaches the first line, without the BOM.
    let all = ws.read_at("f", -1000, 2).unwrap();
    assert!(
        all.starts_with("     1\trow 1\n     2\trow 2\n\n[showing lines 1-2 of 300"),
        "{all}"
    );
}

#[test]
fn tail_of_a_large_file_with_very_long_lines() {
    let mut content = numbered(20);
    for (i, ch) in ["a", "b", "c"].iter().enumerate() {
        content.push_str(&ch.repeat(5000 + i));
        content.push('\n');
    }
    let ws = tree_with(small_files(1000), &[("f", content.as_bytes())]);
    let out = ws.read_at("f", -3, 2000).unwrap();
    let want = format!(
        "    21\t{}… [line truncated: 3000 more characters]\n    22\t{}… [line truncated: 3001 more characters]\n    23\t{}… [line truncated: 3002 more characters]\n",
        "a".repeat(2000),
        "b".repeat(2000),
        "c".repeat(2000)
    );
    assert_eq!(out, want);
}

#[test]
fn tail_of_a_large_file_whose_last_line_dwarfs_the_output_budget() {
    // The last line alone is far bigger than anything the tool would gather
    // for one view; it must still start at its first character, with the
    // right count of dropped characters and the right number.
    let limits = Limits {
        max_file_bytes: 1000,
        max_output_bytes: 4096,
    };
    let mut content = numbered(7);
    content.push_str("START");
    content.push_str(&"é".repeat(300_000));
    content.push_str("END\n");
    let ws = tree_with(limits, &[("f", content.as_bytes())]);
    let out = ws.read_at("f", -1, 2000).unwrap();
    assert_eq!(
        out,
        format!(
            "     8\tSTART{}… [line truncated: 298008 more characters]\n",
            "é".repeat(1995)
        )
    );
    // Line 8 alone takes most of the budget, so after line 7 it waits for
    // the next call, which the hint names.
    let out = ws.read_at("f", -2, 2000).unwrap();
    assert_eq!(
        out,
        "     7\tline 7\n\n[showing lines 7-7 of 8 (output limit reached); call again with offset=-1 to continue]\n"
    );
}

#[test]
fn tail_of_a_large_file_respects_the_limit_and_hints_a_tail_read() {
    let content = numbered(1000);
    let ws = tree_with(small_files(100), &[("f", content.as_bytes())]);
    let out = ws.read_at("f", -5, 2).unwrap();
    assert_eq!(
        out,
        format!(
            "{}\n[showing lines 996-997 of 1000; call again with offset=-3 to continue]\n",
            view(996, 997)
        )
    );
    // Following the hint continues where the view stopped.
    assert_eq!(
        ws.read_at("f", -3, 2).unwrap().lines().next().unwrap(),
        "   998\tline 998"
    );
}

#[test]
fn tail_of_a_large_file_stops_at_the_output_budget() {
    let limits = Limits {
        max_file_bytes: 100,
        max_output_bytes: 600,
    };
    let content = numbered(5000);
    let ws = tree_with(limits, &[("f", content.as_bytes())]);
    let out = ws.read_at("f", -1000, 2000).unwrap();
    let (body, hint) = out.split_once("\n[").unwrap();
    let shown = body.lines().count();
    assert!(shown > 10, "{shown}");
    // It starts where asked, at line 4001, not somewhere later.
    assert_eq!(body, view(4001, 4000 + shown));
    assert_eq!(
        hint,
        format!(
            "showing lines 4001-{} of 5000 (output limit reached); call again with offset=-{} to continue]\n",
            4000 + shown,
            1000 - shown
        )
    );
}

#[test]
fn binary_and_utf16_large_files_are_refused_even_from_the_end() {
    let mut bin = b"\0\0\0".to_vec();
    bin.extend_from_slice(numbered(100).as_bytes());
    let mut tail_bin = numbered(100).into_bytes();
    tail_bin.extend_from_slice(b"x\0y\n");
    let ws = tree_with(
        small_files(100),
        &[
            ("bin", &bin),
            ("tail_bin", &tail_bin),
            ("u16", &utf16(&numbered(100), false)),
        ],
    );
    assert_eq!(ws.code("bin", -3), ErrorCode::IsBinary);
    assert_eq!(ws.code("tail_bin", -1), ErrorCode::IsBinary);
    assert_eq!(ws.code("u16", -3), ErrorCode::TooLarge);
}

/// The process's peak resident set size, in bytes.
fn peak_rss() -> u64 {
    use agent_tools_test_support::measure::{Process, status_bytes};
    status_bytes(Process::This, "VmHWM").unwrap()
}

#[test]
fn a_tail_read_never_loads_the_whole_file() {
    // The peak is the process's, so other tests must not share it.
    if !common::in_own_process("read_file::a_tail_read_never_loads_the_whole_file") {
        return;
    }
    // A 512 MiB sparse file: text, a hole, then a few text lines at the end.
    // Reading it whole would need all of that; the tail read needs a block.
    const SIZE: u64 = 1 << 29;
    let ws = tree_with(small_files(1 << 20), &[]);
    let path = ws.root.join("huge.log");
    let mut file = fs::File::create(&path).unwrap();
    file.write_all(numbered(2000).as_bytes()).unwrap();
    let tail = b"\nalpha\nbeta\ngamma";
    file.set_len(SIZE - tail.len() as u64).unwrap();
    file.seek(SeekFrom::End(0)).unwrap();
    file.write_all(tail).unwrap();
    drop(file);

    let out = ws.read_at("huge.log", -3, 2000).unwrap();
    // 2000 numbered lines, then the hole as line 2001, then the tail.
    assert_eq!(out, "  2002\talpha\n  2003\tbeta\n  2004\tgamma\n");
    let peak = peak_rss();
    assert!(peak < SIZE / 4, "peak RSS {peak} bytes");
    assert_eq!(ws.code("huge.log", 1), ErrorCode::TooLarge);
}

// ---- hostile files --------------------------------------------------------------

use crate::bounded;

use std::sync::Arc;

#[test]
fn fifos_and_sockets_are_not_files_and_never_block() {
    let ws = tree(&[]);
    nix::unistd::mkfifo(&ws.root.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(ws.root.join("sock")).unwrap();
    let ws = Arc::new(ws);
    for (path, offset, kind) in [
        ("fifo", 1, "FIFO"),
        ("fifo", -5, "FIFO"),
        ("sock", 1, "socket"),
    ] {
        let reader = Arc::clone(&ws);
        let err = bounded::within_deadline("read_file on a special file", move || {
            reader.read_at(path, offset, 10).unwrap_err()
        });
        assert_eq!(err.code(), ErrorCode::NotAFile, "{err}");
        assert!(err.message().contains(kind), "{err}");
        // The path is named once, not twice.
        assert!(err.message().starts_with(&format!("{path}: is ")), "{err}");
    }
}

#[test]
fn a_trailing_slash_or_dot_dot_after_a_file_is_not_a_directory() {
    let ws = tree(&[("a.txt", b"a\n"), ("sub/b.txt", b"b\n")]);
    assert_eq!(ws.code("a.txt/", 1), ErrorCode::NotAFile);
    assert_eq!(ws.code("sub/b.txt/../../a.txt", 1), ErrorCode::NotAFile);
    assert_eq!(ws.code("a.txt/..", 1), ErrorCode::NotAFile);
    assert_eq!(ws.read("sub/../a.txt").unwrap(), "     1\ta\n");
}

#[test]
fn a_bom_in_front_of_binary_data_is_still_binary() {
    let mut bytes = vec![0xFF, 0xFE];
    bytes.extend((0..200_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    let ws = tree(&[("blob.bin", &bytes)]);
    assert_eq!(ws.code("blob.bin", 1), ErrorCode::IsBinary);
    // UTF-32 LE starts with FF FE 00 00: NUL code units.
    let ws = tree(&[("wide32.txt", b"\xFF\xFE\x00\x00a\x00\x00\x00")]);
    assert_eq!(ws.code("wide32.txt", 1), ErrorCode::IsBinary);
}

#[test]
fn a_cancelled_tail_scan_stops_with_an_error() {
    let ws = tree_with(small_files(10), &[("big.txt", &b"line\n".repeat(100))]);
    let cancel = std::sync::atomic::AtomicBool::new(true);
    let args = ReadFileArgs {
        offset: -3,
        ..ReadFileArgs::new("big.txt")
    };
    let err = ws.tools.read_file_with(&args, &cancel).unwrap_err();
    assert!(err.is_cancelled(), "{err:?}");
    let go = std::sync::atomic::AtomicBool::new(false);
    assert!(ws.tools.read_file_with(&args, &go).is_ok());
}

// ---- large files read in blocks, and the newline cache -------------------------

/// What read_file shows for `limit` lines from `offset` of `content`, worked
/// out from the whole text: what a read in blocks must print. `backward`
/// when the file is over the limit, so the hint names a negative offset.
fn full_scan(content: &[u8], offset: i64, limit: usize, backward: bool) -> String {
    let text = String::from_utf8_lossy(content);
    scan_lines(&split_text(&text), offset, limit, backward)
}

/// The lines of a text, as read_file splits them.
fn split_text(text: &str) -> Vec<&str> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    if body.is_empty() {
        Vec::new()
    } else {
        body.strip_suffix('\n')
            .unwrap_or(body)
            .split('\n')
            .collect()
    }
}

/// [`full_scan`] of a text already split.
fn scan_lines(lines: &[&str], offset: i64, limit: usize, backward: bool) -> String {
    let total = lines.len();
    let first = if offset > 0 {
        offset as usize
    } else {
        total.saturating_sub(offset.unsigned_abs() as usize) + 1
    };
    let last = (first + limit - 1).min(total);
    let width = last.to_string().len().max(6);
    let mut out = String::new();
    for (number, line) in (first..=last).zip(&lines[first - 1..last]) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let chars = line.chars().count();
        let shown = if chars > agent_tools_text::MAX_LINE_CHARS {
            let kept: String = line
                .chars()
                .take(agent_tools_text::MAX_LINE_CHARS)
                .collect();
            format!(
                "{kept}{} {} more characters]",
                agent_tools_text::LINE_TRUNCATED_MARKER,
                chars - agent_tools_text::MAX_LINE_CHARS
            )
        } else {
            line.to_string()
        };
        out.push_str(&format!("{number:>width$}\t{shown}\n"));
    }
    if last < total {
        let next = if backward {
            format!("-{}", total - last)
        } else {
            format!("{}", last + 1)
        };
        out.push_str(&format!(
            "\n[showing lines {first}-{last} of {total}; call again with offset={next} to continue]\n"
        ));
    }
    out
}

/// Lines of `width` bytes (newline included) so that 1 MiB holds a whole
/// number of them, ending with `ending`.
fn fixed_lines(count: usize, width: usize, ending: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(count * width);
    for i in 0..count {
        let mut line = format!("{i:0>w$}", w = width - ending.len());
        line.truncate(width - ending.len());
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(ending.as_bytes());
    }
    out
}

/// Files of 1 MiB and more (read in blocks even for a positive offset), with
/// lines meeting the 64 KiB, 256 KiB and 1 MiB block and checkpoint edges.
fn large_shapes() -> Vec<(&'static str, Vec<u8>)> {
    const MIB: usize = 1 << 20;
    let lf = fixed_lines(MIB / 64 * 3, 64, "\n");
    let mut shifted = b"x".to_vec();
    shifted.extend_from_slice(&lf);
    let mut short_by_one = lf[1..].to_vec();
    short_by_one.extend_from_slice(b"end");
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(&fixed_lines(MIB / 32 + 5, 32, "\n"));
    let mut one_huge_line = "é".repeat(MIB).into_bytes();
    one_huge_line.push(b'\n');
    let mut huge_then_short = vec![b'y'; MIB + 17];
    huge_then_short.extend_from_slice(b"\nshort\nlast");
    let mut varied = Vec::new();
    for i in 0..60_000usize {
        varied.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, i % 97));
        varied.extend_from_slice(if i % 3 == 0 { b"\r\n" } else { b"\n" });
    }
    vec![
        ("lf", lf.clone()),
        ("lf_no_final_newline", lf[..lf.len() - 1].to_vec()),
        ("shifted", shifted),
        ("short_by_one", short_by_one),
        ("crlf", fixed_lines(MIB / 64 * 2 + 3, 64, "\r\n")),
        ("bom", bom),
        ("one_huge_line", one_huge_line),
        ("huge_then_short", huge_then_short),
        ("varied", varied),
        ("blank_lines", vec![b'\n'; MIB + 1]),
    ]
}

fn offsets_of(content: &[u8]) -> Vec<i64> {
    let total =
        content.split(|&b| b == b'\n').count() as i64 - i64::from(content.last() == Some(&b'\n'));
    let mut offsets = vec![1, 2, -1, -2, -total, -total - 5, total, total - 1];
    for edge in [1i64 << 14, 1 << 15, 1 << 16, 3 << 14, 1 << 18] {
        offsets.extend([edge - 1, edge, edge + 1, edge + 2, -edge, -edge - 1]);
    }
    offsets.retain(|&offset| offset != 0 && offset <= total);
    offsets
}

#[test]
fn reads_in_blocks_match_a_full_scan_at_block_edges() {
    let shapes = large_shapes();
    let ws = tree(&[]);
    let small = tree_with(small_files(1 << 19), &[]);
    for (name, content) in &shapes {
        ws.put(name, content);
        small.put(name, content);
        let text = String::from_utf8_lossy(content);
        let lines = split_text(&text);
        for offset in offsets_of(content) {
            let limit = if offset.abs() == 1 { 1 } else { 3 };
            // Freshly written files are counted on every read (see the cache
            // test below for reads served from it).
            let out = ws.read_at(name, offset, limit as u64).unwrap();
            let expected = scan_lines(&lines, offset, limit, false);
            assert_eq!(out, expected, "{name} offset {offset} limit {limit}");
            if offset < 0 {
                let out = small.read_at(name, offset, limit as u64).unwrap();
                assert_eq!(
                    out,
                    scan_lines(&lines, offset, limit, true),
                    "{name} over the limit, offset {offset} limit {limit}"
                );
            }
        }
    }
}

#[test]
fn an_offset_past_the_end_of_a_large_file_names_its_line_count() {
    let content = fixed_lines((1 << 20) / 64 + 1, 64, "\n");
    let ws = tree(&[("big.log", &content)]);
    let err = ws.read_at("big.log", 16_386, 5).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput);
    assert!(err.message().contains("16385 lines"), "{err}");
}

#[test]
fn a_nul_in_the_lines_shown_is_binary_however_the_file_is_read() {
    let mut content = numbered(3000).into_bytes();
    content.extend_from_slice(b"nul \0 here\n");
    let mut large = fixed_lines((1 << 20) / 64, 64, "\n");
    large.extend_from_slice(b"nul \0 here\n");
    let ws = tree(&[("small", &content), ("large", &large)]);
    assert_eq!(ws.code("small", 3001), ErrorCode::IsBinary);
    assert_eq!(ws.code("small", -1), ErrorCode::IsBinary);
    assert_eq!(ws.code("large", 16_385), ErrorCode::IsBinary);
    assert_eq!(ws.code("large", -1), ErrorCode::IsBinary);
    // Lines without it still read.
    assert!(
        ws.read_at("small", 1, 1)
            .unwrap()
            .starts_with("     1\tline 1\n\n[showing lines 1-1 of 3001;")
    );
    assert!(ws.read_at("large", 16_384, 1).is_ok());
}

#[test]
fn a_small_utf16_file_is_still_read_from_the_end() {
    let ws = tree(&[("u16", &utf16(&numbered(10), false))]);
    assert_eq!(ws.read_at("u16", -2, 10).unwrap(), view(9, 10));
}

/// Every read of `name` the cache could serve wrongly: the tail, from the
/// middle, from the start, under both limits.
fn assert_reads_match(ws: &Ws, small: &agent_tools_fs::FileTools, name: &str, when: &str) {
    let content = fs::read(ws.root.join(name)).unwrap();
    let total =
        content.split(|&b| b == b'\n').count() as i64 - i64::from(content.last() == Some(&b'\n'));
    for offset in [-3, -1, 1, total / 2, total] {
        assert_eq!(
            ws.read_at(name, offset, 3).unwrap(),
            full_scan(&content, offset, 3, false),
            "{name} {when}, offset {offset}"
        );
    }
    let args = ReadFileArgs {
        path: name.to_string(),
        offset: -3,
        limit: 3,
    };
    assert_eq!(
        small.read_file(&args).unwrap(),
        full_scan(&content, -3, 3, true),
        "{name} {when}, over the limit"
    );
}

#[test]
fn the_newline_cache_follows_rewrites_truncations_renames_and_appends() {
    // Two workspaces over the same folder: within the limit, and over it.
    let ws = tree(&[]);
    let workspace =
        agent_tools_confine::Workspace::open(&ws.root, agent_tools_confine::Confinement::Confined)
            .unwrap();
    let small = agent_tools_fs::FileTools::new(workspace, small_files(1 << 19));
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let set_mtime = |name: &str, when: std::time::SystemTime| {
        fs::File::options()
            .write(true)
            .open(ws.root.join(name))
            .unwrap()
            .set_modified(when)
            .unwrap();
    };
    let names = [
        "rewritten",
        "rewritten_same_time",
        "truncated",
        "renamed",
        "appended",
    ];
    for name in names {
        ws.put(name, fixed_lines(40_000, 32, "\n"));
        set_mtime(name, old);
    }
    ws.put("replacement", fixed_lines(80_000, 16, "\n"));
    set_mtime("replacement", old);
    // Timestamps come from a coarse clock, so the cache reuses an index as
    // it is only when the file had not changed for a few seconds before it
    // was counted: wait that long, so the reads below are served from it.
    std::thread::sleep(std::time::Duration::from_millis(3100));
    for name in names {
        assert_reads_match(&ws, &small, name, "at first");
        assert_reads_match(&ws, &small, name, "cached");
    }

    // Equal size, other lines, a new modification time.
    ws.put("rewritten", fixed_lines(80_000, 16, "\n"));
    set_mtime("rewritten", old + std::time::Duration::from_secs(1));
    assert_reads_match(&ws, &small, "rewritten", "after a rewrite of equal size");
    // Equal size, other lines, the same modification time.
    ws.put("rewritten_same_time", fixed_lines(80_000, 16, "\n"));
    set_mtime("rewritten_same_time", old);
    assert_reads_match(
        &ws,
        &small,
        "rewritten_same_time",
        "after a rewrite at the same time",
    );
    // Truncated in place (the same inode), still over 1 MiB.
    let file = fs::File::options()
        .write(true)
        .open(ws.root.join("truncated"))
        .unwrap();
    file.set_len(1_100_011).unwrap();
    drop(file);
    assert_reads_match(&ws, &small, "truncated", "after a truncation");
    // Replaced by rename with a file of equal size and time.
    fs::rename(ws.root.join("replacement"), ws.root.join("renamed")).unwrap();
    assert_reads_match(&ws, &small, "renamed", "after a rename over it");
    // Appended to, over and over, across checkpoints, ending mid-line.
    let mut log = fs::OpenOptions::new()
        .append(true)
        .open(ws.root.join("appended"))
        .unwrap();
    for (round, chunk) in [
        b"one more\n".to_vec(),
        fixed_lines(70_000, 20, "\n"),
        b"half a line".to_vec(),
        b" and its end\n\n\n".to_vec(),
        fixed_lines(33_000, 64, "\r\n"),
    ]
    .iter()
    .enumerate()
    {
        log.write_all(chunk).unwrap();
        assert_reads_match(&ws, &small, "appended", &format!("after append {round}"));
    }
}

#[test]
fn read_lines_gives_heads_and_tails_as_they_are() {
    use agent_tools_fs::LineSpan;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("crlf.txt"), "\u{feff}one\r\ntwo\r\nthree").unwrap();
    let big: String = (1..=200_000).map(|n| format!("line {n}\n")).collect();
    std::fs::write(dir.path().join("big.txt"), &big).unwrap();
    std::fs::write(dir.path().join("bin"), b"\0\x01\x02").unwrap();
    let ws = agent_tools_confine::Workspace::open(
        dir.path(),
        agent_tools_confine::Confinement::Confined,
    )
    .unwrap();
    // A small byte limit: a tail of a larger file is still read from its end.
    let limits = agent_tools_fs::Limits {
        max_file_bytes: 64 * 1024,
        ..agent_tools_fs::Limits::default()
    };
    let tools = agent_tools_fs::FileTools::new(ws, limits);
    assert_eq!(
        tools.read_lines("crlf.txt", LineSpan::Head(2)).unwrap(),
        "one\r\ntwo\r\n"
    );
    assert_eq!(
        tools.read_lines("crlf.txt", LineSpan::Tail(1)).unwrap(),
        "three"
    );
    assert_eq!(
        tools.read_lines("crlf.txt", LineSpan::Tail(5)).unwrap(),
        "one\r\ntwo\r\nthree"
    );
    assert_eq!(
        tools.read_lines("big.txt", LineSpan::Tail(2)).unwrap(),
        "line 199999\nline 200000\n"
    );
    assert_eq!(
        tools.read_lines("big.txt", LineSpan::Head(1)).unwrap(),
        "line 1\n"
    );
    let err = tools
        .read_lines("big.txt", LineSpan::Tail(100_000))
        .unwrap_err();
    assert_eq!(err.code(), agent_tools_error::ErrorCode::TooLarge);
    let err = tools
        .read_lines("big.txt", LineSpan::Head(100_000))
        .unwrap_err();
    assert_eq!(err.code(), agent_tools_error::ErrorCode::TooLarge);
    let err = tools.read_lines("bin", LineSpan::Head(1)).unwrap_err();
    assert_eq!(err.code(), agent_tools_error::ErrorCode::IsBinary);
    let err = tools.read_lines("nope", LineSpan::Tail(1)).unwrap_err();
    assert_eq!(err.code(), agent_tools_error::ErrorCode::NotFound);
}
