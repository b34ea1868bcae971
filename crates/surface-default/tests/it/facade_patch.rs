//! End-to-end: apply_patch through `AgentTools::call`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use crate::facade;
use agent_tools_test_support::tree;

use facade::{Sandbox, fail, fail_with, ok};
use serde_json::json;

/// A workspace with a few files to patch.
fn project() -> Sandbox {
    let sb = Sandbox::new();
    sb.write(
        "src/lib.rs",
        "pub mod a;\npub mod b;\n\npub fn version() -> u32 {\n    1\n}\n",
    );
    sb.write("src/a.rs", "pub fn a() -> u32 {\n    1\n}\n");
    sb.write("src/b.rs", "pub fn b() -> u32 {\n    2\n}\n");
    sb.write("old_name.txt", "keep these bytes\n");
    sb.write("docs/obsolete.md", "# obsolete\n\ngone soon\n");
    sb.write("README.md", "# project\n\nline 3\nline 4\nline 5\n");
    sb
}

const FOUR_WAY: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -3,4 +3,4 @@ pub mod b;
 
 pub fn version() -> u32 {
-    1
+    2
 }
diff --git a/src/c.rs b/src/c.rs
new file mode 100644
--- /dev/null
+++ b/src/c.rs
@@ -0,0 +1,3 @@
+pub fn c() -> u32 {
+    3
+}
diff --git a/docs/obsolete.md b/docs/obsolete.md
deleted file mode 100644
--- a/docs/obsolete.md
+++ /dev/null
@@ -1,3 +0,0 @@
-# obsolete
-
-gone soon
diff --git a/old_name.txt b/new/place.txt
similarity index 100%
rename from old_name.txt
rename to new/place.txt
";

#[test]
fn modify_create_delete_and_rename_in_one_patch() {
    let sb = project();
    let tools = sb.tools();
    let text = ok(&tools, "apply_patch", json!({"patch": FOUR_WAY}));
    insta::assert_snapshot!(text, @r"
    applied patch to 4 files:
    M src/lib.rs (1 hunk)
    A src/c.rs (1 hunk)
    D docs/obsolete.md (1 hunk)
    R old_name.txt -> new/place.txt
    ");
    assert_eq!(
        sb.read_string("src/lib.rs"),
        "pub mod a;\npub mod b;\n\npub fn version() -> u32 {\n    2\n}\n"
    );
    assert_eq!(
        sb.read_string("src/c.rs"),
        "pub fn c() -> u32 {\n    3\n}\n"
    );
    assert!(!sb.exists("docs/obsolete.md"));
    // The emptied directory goes too, as git does.
    assert!(!sb.exists("docs"));
    assert!(!sb.exists("old_name.txt"));
    assert_eq!(sb.read("new/place.txt"), b"keep these bytes\n");
}

#[test]
fn a_moved_hunk_applies_at_an_offset_and_says_so() {
    let sb = project();
    // Two lines were added at the top since the diff was made.
    sb.write(
        "README.md",
        "<!-- badge -->\n<!-- badge -->\n# project\n\nline 3\nline 4\nline 5\n",
    );
    let tools = sb.tools();
    let patch = "\
--- a/README.md
+++ b/README.md
@@ -3,3 +3,3 @@
 line 3
-line 4
+LINE FOUR
 line 5
";
    let text = ok(&tools, "apply_patch", json!({"patch": patch}));
    insta::assert_snapshot!(text, @r"
    applied patch to 1 file:
    M README.md (1 hunk, hunk 1 applied at offset +2)
    ");
    assert_eq!(
        sb.read_string("README.md"),
        "<!-- badge -->\n<!-- badge -->\n# project\n\nline 3\nLINE FOUR\nline 5\n"
    );
}

#[test]
fn a_failing_late_hunk_changes_nothing_at_all() {
    let sb = project();
    let before = tree::snapshot(&sb.root);
    let before_outside = tree::snapshot(&sb.outside());
    let tools = sb.tools();
    // Files 1-3 would apply; the second hunk of file 4 does not.
    let patch = "\
--- a/src/a.rs
+++ b/src/a.rs
@@ -1,3 +1,3 @@
 pub fn a() -> u32 {
-    1
+    10
 }
--- /dev/null
+++ b/src/new_module/d.rs
@@ -0,0 +1 @@
+pub fn d() {}
--- a/docs/obsolete.md
+++ /dev/null
@@ -1,3 +0,0 @@
-# obsolete
-
-gone soon
--- a/README.md
+++ b/README.md
@@ -1,2 +1,2 @@
-# project
+# Project
 
@@ -4,2 +4,2 @@
-line four, which is not there
+line 4!
 line 5
";
    let (code, message, _) = fail(&tools, "apply_patch", json!({"patch": patch}));
    assert_eq!(code, "patch_failed", "{message}");
    assert!(message.contains("README.md"), "names the file: {message}");
    assert!(message.contains("hunk #2"), "names the hunk: {message}");
    assert!(
        message.contains("line four, which is not there"),
        "shows the expected lines: {message}"
    );
    tree::assert_same_tree(&before, &tree::snapshot(&sb.root), "workspace");
    tree::assert_same_tree(
        &before_outside,
        &tree::snapshot(&sb.outside()),
        "around the workspace",
    );
}

#[test]
fn creating_an_existing_path_is_refused() {
    let sb = project();
    let before = tree::snapshot(&sb.root);
    let tools = sb.tools();
    let patch = "\
--- /dev/null
+++ b/src/a.rs
@@ -0,0 +1 @@
+pub fn clobbered() {}
";
    let message = fail_with(
        &tools,
        "apply_patch",
        json!({"patch": patch}),
        "patch_failed",
    );
    assert!(message.contains("src/a.rs"), "{message}");
    assert!(message.contains("exists"), "{message}");
    tree::assert_same_tree(&before, &tree::snapshot(&sb.root), "workspace");

    // Renaming onto an existing file: the same.
    let patch = "\
diff --git a/src/a.rs b/src/b.rs
similarity index 100%
rename from src/a.rs
rename to src/b.rs
";
    let (code, message, _) = fail(&tools, "apply_patch", json!({"patch": patch}));
    assert!(
        code == "patch_failed" || code == "invalid_input",
        "{code}: {message}"
    );
    tree::assert_same_tree(&before, &tree::snapshot(&sb.root), "workspace");
}

#[test]
fn a_patch_path_escaping_the_root_touches_nothing() {
    let sb = project();
    let outside = sb.outside();
    std::fs::create_dir(outside.join("elsewhere")).unwrap();
    std::fs::write(outside.join("elsewhere/target.txt"), "outside\n").unwrap();
    std::os::unix::fs::symlink(outside.join("elsewhere"), sb.path("linked")).unwrap();
    let before = tree::snapshot(&sb.root);
    let before_outside = tree::snapshot(&outside);
    let tools = sb.tools();

    let abs_new = outside.join("abs-evil.txt");
    let abs_existing = outside.join("elsewhere/target.txt");
    let modify_then = |path: &str| {
        // A legitimate change first, so an escape late in the patch must
        // still stop everything.
        format!(
            "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +1,3 @@\n pub fn a() -> u32 {{\n-    1\n+    7\n }}\n{path}"
        )
    };
    let patches = [
        modify_then("--- /dev/null\n+++ b/../evil\n@@ -0,0 +1 @@\n+evil\n"),
        modify_then(&format!(
            "--- /dev/null\n+++ {}\n@@ -0,0 +1 @@\n+evil\n",
            abs_new.display()
        )),
        modify_then(&format!(
            "--- {0}\n+++ {0}\n@@ -1 +1 @@\n-outside\n+evil\n",
            abs_existing.display()
        )),
        modify_then("--- /dev/null\n+++ b/linked/evil.txt\n@@ -0,0 +1 @@\n+evil\n"),
        modify_then(
            "--- a/linked/target.txt\n+++ b/linked/target.txt\n@@ -1 +1 @@\n-outside\n+evil\n",
        ),
        modify_then("--- a/linked/target.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-outside\n"),
        modify_then(
            "diff --git a/src/b.rs b/../stolen.rs\nsimilarity index 100%\nrename from src/b.rs\nrename to ../stolen.rs\n",
        ),
        modify_then(
            "diff --git a/../elsewhere/target.txt b/src/target.txt\nsimilarity index 100%\nrename from ../elsewhere/target.txt\nrename to src/target.txt\n",
        ),
    ];
    for patch in patches {
        let (code, message, _) = fail(&tools, "apply_patch", json!({"patch": patch}));
        assert_eq!(code, "path_escape", "{message}\nfor patch:\n{patch}");
        tree::assert_same_tree(&before, &tree::snapshot(&sb.root), "workspace");
        tree::assert_same_tree(&before_outside, &tree::snapshot(&outside), "outside");
    }
}

#[test]
fn garbage_and_binary_patches_are_refused() {
    let sb = project();
    let before = tree::snapshot(&sb.root);
    let tools = sb.tools();
    for garbage in [
        "",
        "this is not a patch at all\n",
        "--- a/src/a.rs\n+++ b/src/a.rs\n@@ nonsense @@\n",
        "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +1,3 @@\n pub fn a() -> u32 {\n",
    ] {
        fail_with(
            &tools,
            "apply_patch",
            json!({"patch": garbage}),
            "invalid_input",
        );
    }
    let binary = "\
diff --git a/logo.png b/logo.png
new file mode 100644
index 0000000..1111111
GIT binary patch
literal 5
McmZQzU|?ci00ip*0RR91
literal 0
HcmV?d00001
";
    fail_with(&tools, "apply_patch", json!({"patch": binary}), "is_binary");
    let binary_short = "\
diff --git a/logo.png b/logo.png
index 1111111..2222222 100644
Binary files a/logo.png and b/logo.png differ
";
    fail_with(
        &tools,
        "apply_patch",
        json!({"patch": binary_short}),
        "is_binary",
    );
    tree::assert_same_tree(&before, &tree::snapshot(&sb.root), "workspace");
}

#[test]
fn patching_a_binary_file_a_missing_file_or_a_large_file_fails_cleanly() {
    let sb = project();
    sb.write("data.bin", b"line\0one\nline two\n");
    sb.write("big.txt", "y\n".repeat(100));
    std::fs::create_dir(sb.path("adir")).unwrap();
    let before = tree::snapshot(&sb.root);
    let tools = sb.tools_with(|b| b.max_file_bytes(150));
    fail_with(
        &tools,
        "apply_patch",
        json!({"patch": "--- a/data.bin\n+++ b/data.bin\n@@ -2 +2 @@\n-line two\n+line 2\n"}),
        "is_binary",
    );
    fail_with(
        &tools,
        "apply_patch",
        json!({"patch": "--- a/missing.txt\n+++ b/missing.txt\n@@ -1 +1 @@\n-a\n+b\n"}),
        "not_found",
    );
    fail_with(
        &tools,
        "apply_patch",
        json!({"patch": "--- a/big.txt\n+++ b/big.txt\n@@ -1 +1 @@\n-y\n+z\n"}),
        "too_large",
    );
    fail_with(
        &tools,
        "apply_patch",
        json!({"patch": "--- a/adir\n+++ b/adir\n@@ -1 +1 @@\n-y\n+z\n"}),
        "not_a_file",
    );
    tree::assert_same_tree(&before, &tree::snapshot(&sb.root), "workspace");
}

#[test]
fn crlf_and_bom_survive_a_patch_and_created_files_use_lf() {
    let sb = Sandbox::new();
    sb.write("win.txt", "\u{feff}one\r\ntwo\r\nthree\r\n");
    let tools = sb.tools();
    let patch = "\
--- a/win.txt
+++ b/win.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
--- /dev/null
+++ b/fresh.txt
@@ -0,0 +1,2 @@
+a
+b
";
    ok(&tools, "apply_patch", json!({"patch": patch}));
    assert_eq!(
        sb.read("win.txt"),
        "\u{feff}one\r\nTWO\r\nthree\r\n".as_bytes()
    );
    assert_eq!(sb.read("fresh.txt"), b"a\nb\n");
}

#[test]
fn a_patch_with_no_newline_markers_round_trips() {
    let sb = Sandbox::new();
    sb.write("n.txt", "a\nb");
    let tools = sb.tools();
    let patch = "\
--- a/n.txt
+++ b/n.txt
@@ -1,2 +1,2 @@
 a
-b
\\ No newline at end of file
+c
";
    ok(&tools, "apply_patch", json!({"patch": patch}));
    assert_eq!(sb.read("n.txt"), b"a\nc\n");
}

#[test]
fn patches_in_parallel_on_disjoint_files_all_apply() {
    let sb = Sandbox::new();
    for i in 0..8 {
        sb.write(&format!("p{i}.txt"), "start\n");
    }
    let tools = std::sync::Arc::new(sb.tools());
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let tools = tools.clone();
            std::thread::spawn(move || {
                let patch = format!(
                    "--- a/p{i}.txt\n+++ b/p{i}.txt\n@@ -1 +1,2 @@\n start\n+by {i}\n--- /dev/null\n+++ b/made/{i}.txt\n@@ -0,0 +1 @@\n+{i}\n"
                );
                let result = tools.call("apply_patch", json!({"patch": patch}));
                assert!(!result.is_error, "{}", result.text);
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    for i in 0..8 {
        assert_eq!(
            sb.read_string(&format!("p{i}.txt")),
            format!("start\nby {i}\n")
        );
        assert_eq!(sb.read_string(&format!("made/{i}.txt")), format!("{i}\n"));
    }
}

#[test]
fn one_file_named_twice_under_different_spellings_is_refused() {
    let sb = Sandbox::new();
    sb.write("a.txt", "one\ntwo\nthree\n");
    std::fs::create_dir(sb.path("sub")).unwrap();
    std::os::unix::fs::symlink("a.txt", sb.path("alias.txt")).unwrap();
    let before = tree::snapshot(&sb.root);
    let tools = sb.tools();
    for other in ["./a.txt", "sub/../a.txt", "alias.txt"] {
        let patch = format!(
            "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n--- a/{other}\n+++ b/{other}\n@@ -3 +3 @@\n-three\n+THREE\n"
        );
        let result = tools.call("apply_patch", json!({"patch": patch}));
        // Either both changes land, or the patch is refused; never one
        // change silently overwriting the other.
        if result.is_error {
            let (code, message, _) = facade::envelope("apply_patch", &json!({}), &result);
            assert_eq!(code, "invalid_input", "{other}: {message}");
            tree::assert_same_tree(&before, &tree::snapshot(&sb.root), other);
        } else {
            assert_eq!(
                sb.read_string("a.txt"),
                "ONE\ntwo\nTHREE\n",
                "{other}: {}",
                result.text
            );
            sb.write("a.txt", "one\ntwo\nthree\n");
        }
    }
}

#[test]
fn concurrent_patches_and_edits_of_one_file_lose_no_update() {
    let sb = Sandbox::new();
    let lines: Vec<String> = (0..16).map(|i| format!("m{i:02}")).collect();
    sb.write("shared.txt", lines.join("\n") + "\n");
    let tools = std::sync::Arc::new(sb.tools());
    let threads: Vec<_> = (0..16)
        .map(|i| {
            let tools = tools.clone();
            std::thread::spawn(move || {
                let result = if i % 2 == 0 {
                    let line = i + 1;
                    let patch = format!(
                        "--- a/shared.txt\n+++ b/shared.txt\n@@ -{line} +{line} @@\n-m{i:02}\n+patched {i:02}\n"
                    );
                    tools.call("apply_patch", json!({"patch": patch}))
                } else {
                    tools.call(
                        "edit_file",
                        json!({"path": "shared.txt", "old_string": format!("m{i:02}"), "new_string": format!("edited {i:02}")}),
                    )
                };
                assert!(!result.is_error, "{i}: {}", result.text);
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let expected: Vec<String> = (0..16)
        .map(|i| {
            if i % 2 == 0 {
                format!("patched {i:02}")
            } else {
                format!("edited {i:02}")
            }
        })
        .collect();
    assert_eq!(sb.read_string("shared.txt"), expected.join("\n") + "\n");
}

#[test]
fn a_rename_header_naming_one_file_twice_is_an_edit_in_place() {
    let sb = Sandbox::new();
    sb.write("a.txt", "one\ntwo\n");
    let tools = sb.tools();
    let patch = "--- a/a.txt\n+++ b/./a.txt\n@@ -1,2 +1,2 @@\n-one\n+ONE\n two\n";
    let text = ok(&tools, "apply_patch", json!({"patch": patch}));
    assert_eq!(text, "applied patch to 1 file:\nM a.txt (1 hunk)\n");
    assert_eq!(sb.read_string("a.txt"), "ONE\ntwo\n");
    assert_eq!(tree::snapshot(&sb.root).len(), 1);
}

#[test]
fn deleting_or_moving_a_symlink_is_refused_and_its_target_kept() {
    let sb = Sandbox::new();
    sb.write("target.txt", "x\n");
    std::os::unix::fs::symlink("target.txt", sb.path("link.txt")).unwrap();
    let before = tree::snapshot(&sb.root);
    let tools = sb.tools();
    for patch in [
        "--- a/link.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
        "diff --git a/link.txt b/moved.txt\nsimilarity index 100%\nrename from link.txt\nrename to moved.txt\n",
    ] {
        let message = fail_with(&tools, "apply_patch", json!({"patch": patch}), "not_a_file");
        assert!(message.contains("symbolic link"), "{message}");
        tree::assert_same_tree(&before, &tree::snapshot(&sb.root), patch);
    }
    // Modifying through the link edits the file it points to, like edit_file.
    ok(
        &tools,
        "apply_patch",
        json!({"patch": "--- a/link.txt\n+++ b/link.txt\n@@ -1 +1 @@\n-x\n+y\n"}),
    );
    assert_eq!(sb.read_string("target.txt"), "y\n");
    assert!(
        sb.path("link.txt")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn read_only_files_are_refused_like_the_other_writers_do() {
    use std::os::unix::fs::PermissionsExt;
    let sb = project();
    sb.write("locked.txt", "x\n");
    std::fs::set_permissions(
        sb.path("locked.txt"),
        std::fs::Permissions::from_mode(0o444),
    )
    .unwrap();
    let before = tree::snapshot(&sb.root);
    let tools = sb.tools();
    for patch in [
        "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# project\n+# p\n--- a/locked.txt\n+++ b/locked.txt\n@@ -1 +1 @@\n-x\n+y\n",
        "--- a/locked.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
    ] {
        let message = fail_with(&tools, "apply_patch", json!({"patch": patch}), "io_error");
        assert!(
            message.contains("locked.txt: the file is read-only"),
            "{message}"
        );
    }
    tree::assert_same_tree(&before, &tree::snapshot(&sb.root), "workspace");
}

#[test]
fn modes_are_set_as_the_patch_names_them_and_set_id_bits_refused() {
    use std::os::unix::fs::PermissionsExt;
    let sb = project();
    std::fs::set_permissions(sb.path("src/a.rs"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let tools = sb.tools();
    let text = ok(
        &tools,
        "apply_patch",
        json!({"patch": "diff --git a/src/a.rs b/src/a.rs\nold mode 100644\nnew mode 100600\n"}),
    );
    assert!(
        text.contains("M src/a.rs (mode 100644 -> 100600)"),
        "{text}"
    );
    let mode = std::fs::metadata(sb.path("src/a.rs"))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o600);

    let message = fail_with(
        &tools,
        "apply_patch",
        json!({"patch": "diff --git a/src/a.rs b/src/a.rs\nold mode 100600\nnew mode 104755\n"}),
        "invalid_input",
    );
    assert!(message.contains("104755"), "{message}");
    let mode = std::fs::metadata(sb.path("src/a.rs"))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_fifo_or_a_path_ending_in_a_slash_is_not_a_file_and_nothing_hangs() {
    let sb = project();
    // Snapshots read every file, so they are taken without the FIFO.
    let before = tree::snapshot(&sb.root);
    nix::unistd::mkfifo(
        &sb.path("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let root = sb.root.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let tools =
            agent_tools_surface_default::open(agent_tools::Config::builder(&root).build().unwrap())
                .unwrap();
        let mut codes = Vec::new();
        for patch in [
            "--- a/pipe\n+++ b/pipe\n@@ -1 +1 @@\n-a\n+b\n",
            "--- a/README.md/\n+++ b/README.md/\n@@ -1 +1 @@\n-# project\n+# p\n",
            "--- /dev/null\n+++ b/newdir/\n@@ -0,0 +1 @@\n+x\n",
        ] {
            let result = tools.call("apply_patch", json!({"patch": patch}));
            let value: serde_json::Value = serde_json::from_str(&result.text).unwrap();
            codes.push(value["error"].as_str().unwrap_or("ok").to_string());
        }
        let _ = tx.send(codes);
    });
    let codes = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("apply_patch hung on a FIFO");
    assert_eq!(codes, ["not_a_file", "not_a_file", "not_a_file"]);
    let pipe = std::fs::symlink_metadata(sb.path("pipe")).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&pipe.file_type()));
    std::fs::remove_file(sb.path("pipe")).unwrap();
    tree::assert_same_tree(&before, &tree::snapshot(&sb.root), "workspace");
}
