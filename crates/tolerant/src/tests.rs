use super::*;

fn unique(text: &str, old: &str, new: &str) -> Match {
    match locate(text, old, new, "\n") {
        Verdict::Unique(found) => found,
        other => panic!("expected one match, got {other:?}"),
    }
}

fn edited(text: &str, old: &str, new: &str) -> String {
    unique(text, old, new).apply(text)
}

#[test]
fn collapsed_whitespace_keeps_the_line_break_before_the_indentation() {
    let text = "a = 1\n    b  = 2\n";
    let found = unique(text, "    b = 2", "    b = 3");
    assert_eq!(found.lines, Lines { first: 2, last: 2 });
    assert_eq!(found.apply(text), "a = 1\n    b = 3\n");
}

#[test]
fn typographic_level_keeps_line_breaks() {
    let text = "x = 0\n    msg = \u{201C}hi\u{201D}\ny = 1\n";
    let found = unique(text, "    msg = \"hi\"", "    msg = \"bye\"");
    assert_eq!(found.lines.to_string(), "line 2");
    // new_string's quotes are written as the file writes them.
    assert_eq!(
        found.apply(text),
        "x = 0\n    msg = \u{201C}bye\u{201D}\ny = 1\n"
    );
    assert!(
        found.tolerated.iter().any(|t| t.contains("U+201C")),
        "{:?}",
        found.tolerated
    );
    assert_eq!(found.rewritten.len(), 2, "{:?}", found.rewritten);
}

/// Curly quotes in both old_string and new_string, against a file with
/// straight ones: what is written parses again.
#[test]
fn the_callers_curly_quotes_are_written_straight_where_the_file_has_straight_ones() {
    let text = "import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument(\"--dry-run\", action=\"store_true\")\n";
    let found = unique(
        text,
        "parser.add_argument(\u{201C}--dry-run\u{201D}, action=\u{201C}store_true\u{201D})",
        "parser.add_argument(\u{201C}--dry-run\u{201D}, action=\u{201C}store_true\u{201D}, help=\u{201C}show what would change\u{201D})",
    );
    assert_eq!(
        found.apply(text),
        "import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument(\"--dry-run\", action=\"store_true\", help=\"show what would change\")\n"
    );
    // The same inside a line (the span level).
    let text = "x = f(\"a\", \"b\")  # keep\n";
    let found = unique(
        text,
        "f(\u{201C}a\u{201D}, \u{201C}b\u{201D})",
        "f(\u{201C}a\u{201D})",
    );
    assert_eq!(found.apply(text), "x = f(\"a\")  # keep\n");
    assert!(!found.rewritten.is_empty());
}

/// A decomposed file stays decomposed; a line new_string keeps is the
/// file's own.
#[test]
fn new_lines_take_the_files_normalization_form() {
    let text = "# Cre\u{301}er\n\nLe cafe\u{301} est pre\u{301}t.\n";
    let found = unique(
        text,
        "# Cr\u{e9}er\n\nLe caf\u{e9} est pr\u{e9}t.",
        "# Cr\u{e9}er\n\nLe th\u{e9} est pr\u{e9}t.",
    );
    assert_eq!(
        found.apply(text),
        "# Cre\u{301}er\n\nLe the\u{301} est pre\u{301}t.\n"
    );
    assert_eq!(found.rewritten, vec![Rewritten::Form(Form::Nfd)]);
}

#[test]
fn no_edit_inside_an_identifier() {
    let text = "template_debug = False\nother = 1\n";
    assert!(matches!(
        locate(text, "  debug = False  ", "debug = True", "\n"),
        Verdict::NotFound { .. }
    ));
    let text = "x = subtotal(a)\n";
    assert!(matches!(
        locate(text, "\ntotal(a)\n", "\ntotal(b)\n", "\n"),
        Verdict::NotFound { .. }
    ));
    // On token boundaries it applies.
    let text = "let x = f(1);\n";
    assert_eq!(edited(text, "\n  f(1)\n", "\n  g(2)\n"), "let x = g(2);\n");
}

#[test]
fn reindents_two_spaces_onto_four() {
    let text = "def f():\n    if a:\n        b()\n    return 1\n";
    let out = edited(text, "if a:\n  b()", "if a:\n  b()\n  if c:\n    d()");
    assert_eq!(
        out,
        "def f():\n    if a:\n        b()\n        if c:\n            d()\n    return 1\n"
    );
}

#[test]
fn spaces_onto_tabs() {
    let text = "func f() {\n\tif ok {\n\t\trun()\n\t}\n}\n";
    let out = edited(
        text,
        "    if ok {\n        run()\n    }",
        "    if ok {\n        run()\n        log()\n    }",
    );
    assert_eq!(out, "func f() {\n\tif ok {\n\t\trun()\n\t\tlog()\n\t}\n}\n");
}

#[test]
fn two_tolerant_regions_are_ambiguous() {
    // One differs by a trailing space, the other by its depth.
    let text = "a:\n  x: 1 \n  y: 2\nb:\n    x: 1\n    y: 2\n";
    match locate(text, "  x: 1\n  y: 2", "  x: 3\n  y: 2", "\n") {
        Verdict::Ambiguous { matches, total, .. } => {
            assert_eq!(total, 2);
            let lines: Vec<String> = matches.iter().map(|m| m.lines.to_string()).collect();
            assert_eq!(lines, vec!["lines 2-3", "lines 5-6"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_near_miss_elsewhere_refuses() {
    // The caller's block changed since it was read (lines 2-4); an identical
    // block at another depth must not be edited instead.
    let text = "\
def a():
    x = compute(1)
    y = x + 2
    return y
class B:
    def b(self):
        x = compute(1)
        y = x + 1
        return y
";
    let old = "    x = compute(1)\n    y = x + 1\n    return y";
    match locate(
        text,
        old,
        "    x = compute(1)\n    y = x + 5\n    return y",
        "\n",
    ) {
        Verdict::Ambiguous { matches, near, .. } => {
            assert_eq!(matches[0].lines.to_string(), "lines 7-9");
            assert_eq!(near[0].lines.to_string(), "lines 2-4");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn close_regions_of_another_height_are_found_whole() {
    let text = "fn main() {\n    let v = call(\n        alpha,\n        beta,\n        gamma,\n    );\n}\n";
    match locate(text, "    let v = call(alpha, beta, delta);", "x", "\n") {
        Verdict::NotFound { close } => {
            assert_eq!(close[0].lines.to_string(), "lines 2-6", "{close:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn equally_close_regions_are_all_named() {
    let text = "one\nfn a() { go(1); }\ntwo\nfn a() { go(1); }\nthree\n";
    match locate(text, "fn a() { go(2); }", "x", "\n") {
        Verdict::NotFound { close } => {
            let lines: Vec<String> = close.iter().map(|c| c.lines.to_string()).collect();
            assert_eq!(lines, vec!["line 2", "line 4"]);
            assert!((close[0].similarity - close[1].similarity).abs() < f32::EPSILON);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn old_string_with_a_line_break_removes_it() {
    let text = "a\n  b \nc\n";
    assert_eq!(edited(text, "b\n", ""), "a\nc\n");
    assert_eq!(edited(text, "b\n", "B\n"), "a\n  B\nc\n");
}

#[test]
fn crlf_regions_keep_crlf() {
    let text = "a\r\n  b  c\r\n  d\r\n";
    let found = match locate(text, "b c\nd", "x\ny\nz", "\r\n") {
        Verdict::Unique(found) => found,
        other => panic!("{other:?}"),
    };
    assert_eq!(found.apply(text), "a\r\n  x\r\n  y\r\n  z\r\n");
}

#[test]
fn many_equal_lines_finish_quickly() {
    // Quadratic work here would take minutes; the bound catches a hang.
    let handle = std::thread::spawn(|| {
        let text = "a\n".repeat(200_000);
        let mut old = "a\n".repeat(5_000);
        old.push('b');
        let verdict = locate(&text, &old, "c", "\n");
        assert!(matches!(verdict, Verdict::NotFound { .. }));
        let old = " a\n".repeat(5_000);
        let verdict = locate(&text, &old, "c", "\n");
        assert!(matches!(verdict, Verdict::Ambiguous { .. }));
        let line = "a ".repeat(1 << 20);
        let verdict = locate(&line, "a  a", "b", "\n");
        assert!(matches!(verdict, Verdict::Ambiguous { .. }));
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !handle.is_finished() {
        assert!(
            std::time::Instant::now() < deadline,
            "tolerant matching took over 20 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(handle.join().is_ok());
}

#[test]
fn first_and_last_lines_may_match_within_a_line() {
    let text = "func a() {\n\tw.Write(x)\n}\n\nfunc (s *S) Serve(ctx context.Context) error {\n";
    let out = edited(
        text,
        "    w.Write(x)\n}\n\nfunc (s *S) Serve",
        "    w.Write(y)\n}\n\nfunc (s *S) Serve",
    );
    assert_eq!(
        out,
        "func a() {\n\tw.Write(y)\n}\n\nfunc (s *S) Serve(ctx context.Context) error {\n"
    );
    // A first line copied from the middle of a line.
    let text = "x := compute(a,\n\t\tb)\n";
    let out = edited(text, "compute(a,\n        b)", "compute(a,\n        c)");
    assert_eq!(out, "x := compute(a,\n\t\tc)\n");
    // Never inside a name.
    let text = "x := recompute(a,\n\t\tb)\n";
    assert!(matches!(
        locate(text, "compute(a,\n        b)", "y", "\n"),
        Verdict::NotFound { .. }
    ));
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever the input, no panic; a unique match changes only the
        /// bytes of its lines and keeps every line break outside them.
        #[test]
        fn a_match_keeps_everything_outside_its_lines(
            lines in prop::collection::vec("[ab \t'\u{2019}\u{a0}e\u{301}\u{e9}(){}_]{0,12}", 1..8),
            from in any::<prop::sample::Index>(),
            count in 1usize..4,
            mutation in 0u8..4,
            new in "[ab \t\n'\u{2019}\u{a0}e\u{301}\u{e9}(){}_]{0,40}",
        ) {
            let text = lines.join("\n") + "\n";
            let first = from.index(lines.len());
            let picked = &lines[first..(first + count).min(lines.len())];
            // old_string: some of the file's lines, disturbed as models do.
            let old: Vec<String> = picked
                .iter()
                .map(|line| match mutation {
                    0 => line.trim_start().to_string(),
                    1 => format!("  {line}"),
                    2 => line.replace(' ', "  ").replace('\u{2019}', "'"),
                    _ => format!("{line} "),
                })
                .collect();
            let old = old.join("\n");
            if let Verdict::Unique(found) = locate(&text, &old, &new, "\n") {
                prop_assert!(text.is_char_boundary(found.range.start));
                prop_assert!(text.is_char_boundary(found.range.end));
                let out = found.apply(&text);
                let first_line_start = text[..found.range.start].rfind('\n').map_or(0, |at| at + 1);
                prop_assert!(out.starts_with(&text[..first_line_start]));
                let line_end = text[found.range.end..]
                    .find('\n')
                    .map_or(text.len(), |at| found.range.end + at);
                prop_assert!(out.ends_with(&text[line_end..]));
            }
            // The other way round too (new_string is arbitrary text).
            let _ = locate(&text, &new, &old, "\n");
        }
    }
}

/// Found by fuzzing: in a file that mixes line endings, lines new_string
/// keeps unchanged were joined with the region's ending instead of the
/// break the file has between them.
#[test]
fn unchanged_lines_keep_their_own_line_breaks_in_a_mixed_file() {
    let text = "a  = 1\r\nb = 2\nc = 3\r\n";
    let found = unique(text, "a = 1\nb = 2\nc = 3\n", "a = 1\nb = 2\nc = 4\n");
    assert_eq!(found.apply(text), "a  = 1\r\nb = 2\nc = 4\r\n");
    let same = unique(text, "a = 1\nb = 2\nc = 3\n", "a = 1\nb = 2\nc = 3\n");
    assert_eq!(same.apply(text), text);
}
