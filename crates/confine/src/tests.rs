use super::*;
use std::os::unix::fs::symlink;

fn setup() -> (tempfile::TempDir, Workspace) {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("ws");
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "lib").unwrap();
    std::fs::write(root.join("src/deep/x.txt"), "x").unwrap();
    std::fs::create_dir_all(base.path().join("ws_evil")).unwrap();
    std::fs::write(base.path().join("ws_evil/secret"), "secret").unwrap();
    std::fs::write(base.path().join("outside.txt"), "outside").unwrap();
    let ws = Workspace::open(&root, Confinement::Confined).unwrap();
    (base, ws)
}

fn code(ws: &Workspace, input: &str) -> ErrorCode {
    ws.resolve(input).unwrap_err().code()
}

#[test]
fn relative_and_absolute_inside_resolve_the_same() {
    let (_base, ws) = setup();
    let rel = ws.resolve("src/lib.rs").unwrap();
    let abs = ws
        .resolve(ws.root().join("src/lib.rs").to_str().unwrap())
        .unwrap();
    assert_eq!(rel, abs);
    assert_eq!(rel.display(), "src/lib.rs");
    assert_eq!(ws.resolve("./src/../src/lib.rs").unwrap(), rel);
    assert!(ws.resolve("").unwrap().is_root());
    assert!(ws.resolve(".").unwrap().is_root());
    assert_eq!(
        ws.resolve(ws.root().to_str().unwrap()).unwrap().display(),
        "."
    );
}

#[test]
fn dot_dot_leaving_the_root_escapes() {
    let (_base, ws) = setup();
    assert_eq!(code(&ws, ".."), ErrorCode::PathEscape);
    assert_eq!(code(&ws, "../outside.txt"), ErrorCode::PathEscape);
    assert_eq!(code(&ws, "src/../../outside.txt"), ErrorCode::PathEscape);
    assert_eq!(
        code(&ws, "missing/../../outside.txt"),
        ErrorCode::PathEscape
    );
    // Climbing and coming back down stays inside.
    assert_eq!(
        ws.resolve("src/deep/../../src/lib.rs").unwrap().display(),
        "src/lib.rs"
    );
}

#[test]
fn absolute_outside_and_sibling_prefix_escape() {
    let (base, ws) = setup();
    assert_eq!(code(&ws, "/etc/passwd"), ErrorCode::PathEscape);
    let evil = base.path().join("ws_evil/secret");
    assert_eq!(code(&ws, evil.to_str().unwrap()), ErrorCode::PathEscape);
}

#[test]
fn symlink_out_of_the_root_escapes_as_file_or_ancestor() {
    let (base, ws) = setup();
    symlink(base.path().join("outside.txt"), ws.root().join("link_file")).unwrap();
    symlink(base.path().join("ws_evil"), ws.root().join("link_dir")).unwrap();
    symlink("../../outside.txt", ws.root().join("src/rel_link")).unwrap();
    assert_eq!(code(&ws, "link_file"), ErrorCode::PathEscape);
    assert_eq!(code(&ws, "link_dir/secret"), ErrorCode::PathEscape);
    assert_eq!(code(&ws, "link_dir/new_file"), ErrorCode::PathEscape);
    assert_eq!(code(&ws, "src/rel_link"), ErrorCode::PathEscape);
}

#[test]
fn symlink_inside_the_root_is_followed() {
    let (_base, ws) = setup();
    symlink("src/deep", ws.root().join("shortcut")).unwrap();
    symlink(ws.root().join("src/lib.rs"), ws.root().join("abs_link")).unwrap();
    assert_eq!(
        ws.resolve("shortcut/x.txt").unwrap().display(),
        "src/deep/x.txt"
    );
    assert_eq!(ws.resolve("abs_link").unwrap().display(), "src/lib.rs");
}

#[test]
fn dangling_symlink_escapes() {
    let (_base, ws) = setup();
    symlink("nowhere", ws.root().join("dangling")).unwrap();
    let err = ws.resolve("dangling").unwrap_err();
    assert_eq!(err.code(), ErrorCode::PathEscape);
    assert!(err.message().contains("dangling"), "{}", err.message());
}

#[test]
fn symlink_loop_is_an_io_error_not_a_hang() {
    let (_base, ws) = setup();
    symlink("loop_b", ws.root().join("loop_a")).unwrap();
    symlink("loop_a", ws.root().join("loop_b")).unwrap();
    // Reported as a loop, not as a dangling symlink.
    let err = ws.resolve("loop_a").unwrap_err();
    assert_eq!(err.code(), ErrorCode::IoError, "{err}");
    assert!(err.message().contains("symlink loop"), "{err}");
    assert!(!err.message().contains("dangling"), "{err}");
    symlink("self", ws.root().join("self")).unwrap();
    let err = ws.resolve("self/x").unwrap_err();
    assert!(err.message().contains("symlink loop"), "{err}");
}

#[test]
fn a_trailing_slash_names_a_directory() {
    let (_base, ws) = setup();
    let err = ws.resolve("src/lib.rs/").unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotAFile, "{err}");
    assert!(err.message().contains("not a directory"), "{err}");
    assert_eq!(code(&ws, "src/lib.rs/."), ErrorCode::NotAFile);
    // A directory with a slash is the directory.
    let dir = ws.resolve("src/").unwrap();
    assert_eq!(dir.display(), "src");
    assert!(dir.names_directory());
    // A missing path keeps the mark so a writer can refuse to create a file.
    let new = ws.resolve("newdir/").unwrap();
    assert!(new.names_directory());
    assert!(!ws.resolve("newdir").unwrap().names_directory());
    assert!(!ws.resolve("src/lib.rs").unwrap().names_directory());
}

#[test]
fn dot_dot_after_a_file_is_not_a_directory() {
    let (_base, ws) = setup();
    let err = ws.resolve("src/lib.rs/../lib.rs").unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotAFile, "{err}");
    assert_eq!(
        code(&ws, "src/deep/x.txt/../../lib.rs"),
        ErrorCode::NotAFile
    );
    assert_eq!(code(&ws, "src/lib.rs/.."), ErrorCode::NotAFile);
    // `..` after a directory still steps back.
    assert_eq!(
        ws.resolve("src/deep/../lib.rs").unwrap().display(),
        "src/lib.rs"
    );
}

#[test]
fn a_root_given_through_a_symlink_accepts_both_spellings() {
    let (base, _ws) = setup();
    let link = base.path().join("wslink");
    symlink(base.path().join("ws"), &link).unwrap();
    let ws = Workspace::open(&link, Confinement::Confined).unwrap();
    let via_link = ws
        .resolve(link.join("src/lib.rs").to_str().unwrap())
        .unwrap();
    let via_real = ws
        .resolve(ws.root().join("src/lib.rs").to_str().unwrap())
        .unwrap();
    assert_eq!(via_link, via_real);
    assert_eq!(via_link.display(), "src/lib.rs");
    assert_eq!(ws.given_root(), Some(link.as_path()));
    // Still confined: the link's own parent is outside.
    assert_eq!(
        code(&ws, base.path().join("outside.txt").to_str().unwrap()),
        ErrorCode::PathEscape
    );
    assert_eq!(
        code(&ws, link.join("../outside.txt").to_str().unwrap()),
        ErrorCode::PathEscape
    );
}

#[test]
fn names_that_could_be_misread_are_quoted_as_json_strings() {
    assert_eq!(quote_text("src/main.rs"), "src/main.rs");
    assert_eq!(quote_text(r"a\nb"), r"a\nb"); // a backslash alone is harmless
    assert_eq!(quote_text("fake.txt\nx -> .."), r#""fake.txt\nx -> ..""#);
    assert_eq!(quote_text("x:1:injected"), r#""x:1:injected""#);
    assert_eq!(quote_text("a -> b"), r#""a -> b""#);
    assert_eq!(
        quote_text("[showing 1..2 of 9]"),
        r#""[showing 1..2 of 9]""#
    );
    assert_eq!(quote_text("evil\u{202E}txt.exe"), r#""evil\u202etxt.exe""#);
    assert_eq!(quote_text("say \"hi\": \\"), r#""say \"hi\": \\""#);
    // The quoted form is a JSON string naming the same file.
    for name in ["fake.txt\nx -> ..", "x:1:y", "\u{202E}\t\u{7f}\u{85}"] {
        let quoted = quote_text(name);
        let back: String = serde_json_like_unquote(&quoted);
        assert_eq!(back, name);
    }
    let bad = std::ffi::OsStr::from_encoded_bytes_unchecked_safe(b"caf\xe9.txt");
    assert_eq!(quote_os(&bad), r#""caf\xe9.txt""#);
    assert_eq!(slash_path(Path::new("a\nb/c")), r#""a\nb/c""#);
}

/// Decodes the JSON string escapes [`quote_text`] writes.
fn serde_json_like_unquote(quoted: &str) -> String {
    let inner = &quoted[1..quoted.len() - 1];
    let mut units: Vec<u16> = Vec::new();
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(ch) = chars.next() {
        if ch != '\\' {
            out.push_str(&String::from_utf16(&units).unwrap());
            units.clear();
            out.push(ch);
            continue;
        }
        let escaped = chars.next().unwrap();
        if escaped != 'u' {
            out.push_str(&String::from_utf16(&units).unwrap());
            units.clear();
        }
        match escaped {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            '"' => out.push('"'),
            '\\' => out.push('\\'),
            'u' => {
                let hex: String = chars.by_ref().take(4).collect();
                units.push(u16::from_str_radix(&hex, 16).unwrap());
            }
            other => panic!("unexpected escape {other}"),
        }
    }
    out.push_str(&String::from_utf16(&units).unwrap());
    out
}

trait FromBytes {
    fn from_encoded_bytes_unchecked_safe(bytes: &[u8]) -> std::ffi::OsString;
}

impl FromBytes for std::ffi::OsStr {
    fn from_encoded_bytes_unchecked_safe(bytes: &[u8]) -> std::ffi::OsString {
        use std::os::unix::ffi::OsStrExt;
        std::ffi::OsStr::from_bytes(bytes).to_os_string()
    }
}

#[test]
fn open_regular_refuses_fifos_sockets_and_directories_without_blocking() {
    let (_base, ws) = setup();
    nix::unistd::mkfifo(&ws.root().join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(ws.root().join("sock")).unwrap();
    let ws = std::sync::Arc::new(ws);
    let worker = {
        let ws = ws.clone();
        std::thread::spawn(move || {
            ["fifo", "sock", "src"].map(|name| {
                let path = ws.resolve(name).unwrap();
                let err = ws.open_regular(&path, "list it").unwrap_err();
                (err.code(), err.message().to_string())
            })
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !worker.is_finished() {
        assert!(std::time::Instant::now() < deadline, "open_regular blocked");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let [fifo, sock, dir] = worker.join().unwrap();
    assert_eq!(fifo.0, ErrorCode::NotAFile);
    assert!(fifo.1.contains("FIFO"), "{}", fifo.1);
    assert_eq!(sock.0, ErrorCode::NotAFile);
    assert!(sock.1.contains("socket"), "{}", sock.1);
    assert_eq!(dir.0, ErrorCode::NotAFile);
    assert!(dir.1.ends_with("; list it"), "{}", dir.1);
    // The path appears once in the message.
    assert_eq!(fifo.1.matches("fifo").count(), 1, "{}", fifo.1);
    let (_, meta) = ws
        .open_regular(&ws.resolve("src/lib.rs").unwrap(), "")
        .unwrap();
    assert_eq!(meta.len(), 3);
}

#[test]
fn open_regular_at_reports_a_final_symlink_instead_of_following_it() {
    let (_base, ws) = setup();
    symlink("src/lib.rs", ws.root().join("link")).unwrap();
    let err = open_regular_at(ws.base_dir(), Path::new("link")).unwrap_err();
    assert!(
        matches!(err, OpenRegularError::NotRegular(FileKind::Symlink)),
        "{err:?}"
    );
}

#[test]
fn missing_paths_resolve_through_their_deepest_existing_ancestor() {
    let (_base, ws) = setup();
    let path = ws.resolve("src/new/dir/file.rs").unwrap();
    assert_eq!(path.display(), "src/new/dir/file.rs");
    assert_eq!(ws.open_file(&path).unwrap_err().code(), ErrorCode::NotFound);
}

#[test]
fn open_errors_map_to_codes() {
    let (_base, ws) = setup();
    let dir = ws.resolve("src").unwrap();
    assert!(ws.metadata(&dir).unwrap().is_dir());
    let file = ws.resolve("src/lib.rs/inner").unwrap();
    assert_eq!(ws.open_file(&file).unwrap_err().code(), ErrorCode::NotAFile);
}

#[test]
fn a_symlink_swapped_in_after_resolution_cannot_escape_on_open() {
    let (base, ws) = setup();
    let path = ws.resolve("src/deep/x.txt").unwrap();
    // Swap the ancestor for a symlink to the outside after the check.
    std::fs::remove_dir_all(ws.root().join("src/deep")).unwrap();
    std::fs::create_dir_all(base.path().join("evil_deep")).unwrap();
    std::fs::write(base.path().join("evil_deep/x.txt"), "stolen").unwrap();
    symlink(base.path().join("evil_deep"), ws.root().join("src/deep")).unwrap();
    let err = ws.open_file(&path).unwrap_err();
    assert_eq!(err.code(), ErrorCode::PathEscape, "{err}");
}

#[test]
fn open_parent_gives_the_directory_and_name() {
    let (_base, ws) = setup();
    let path = ws.resolve("src/new.rs").unwrap();
    let (dir, name) = ws.open_parent(&path).unwrap();
    assert_eq!(name, "new.rs");
    assert!(dir.metadata("lib.rs").unwrap().is_file());
    let orphan = ws.resolve("nope/new.rs").unwrap();
    assert_eq!(
        ws.open_parent(&orphan).unwrap_err().code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        ws.open_parent(&ws.root_path()).unwrap_err().code(),
        ErrorCode::NotAFile
    );
}

#[test]
fn bad_roots_fail_at_open() {
    let base = tempfile::tempdir().unwrap();
    assert!(matches!(
        Workspace::open(base.path().join("missing"), Confinement::Confined),
        Err(WorkspaceError::Missing { .. })
    ));
    std::fs::write(base.path().join("file"), "").unwrap();
    assert!(matches!(
        Workspace::open(base.path().join("file"), Confinement::Confined),
        Err(WorkspaceError::NotADirectory { .. })
    ));
}

#[test]
fn unconfined_allows_outside_paths_explicitly() {
    let (base, ws) = setup();
    let ws = Workspace::open(ws.root(), Confinement::Unconfined).unwrap();
    let outside = base.path().join("outside.txt");
    let path = ws.resolve(outside.to_str().unwrap()).unwrap();
    assert_eq!(
        std::io::read_to_string(ws.open_file(&path).unwrap()).unwrap(),
        "outside"
    );
    assert_eq!(ws.resolve("src/lib.rs").unwrap().display(), "src/lib.rs");
    assert!(ws.resolve("../outside.txt").is_ok());
}

#[test]
fn nul_in_path_is_invalid_input() {
    let (_base, ws) = setup();
    assert_eq!(code(&ws, "a\0b"), ErrorCode::InvalidInput);
}

/// A writable workspace `ws` with a directory `ro` in it fenced off, and a
/// file in `ro`.
fn fenced() -> (tempfile::TempDir, Workspace, PathBuf) {
    let (base, ws) = setup();
    let ro = ws.root().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::write(ro.join("keep.txt"), "kept").unwrap();
    let ro_id = DirId::of_std(&std::fs::metadata(&ro).unwrap());
    ws.fence_off(vec![Fence::new(ro_id, "the ro directory")])
        .unwrap();
    (base, ws, ro)
}

#[test]
fn a_fenced_directory_is_refused_when_a_write_opens_it() {
    let (_base, ws, ro) = fenced();
    // Resolved while `d` was missing, then `d` becomes a link into the
    // fenced directory: the name check saw nothing, the open does.
    let path = ws.resolve("d/new.txt").unwrap();
    symlink("ro", ws.root().join("d")).unwrap();
    let err = ws.open_parent(&path).unwrap_err();
    assert_eq!(err.code(), ErrorCode::PathEscape, "{}", err.message());
    assert!(
        err.message().contains("the ro directory"),
        "{}",
        err.message()
    );
    let err = ws
        .open_dir_to_write(&ws.resolve("ro").unwrap())
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::PathEscape);
    // Deeper down, and through `..`, the same.
    std::fs::create_dir(ro.join("sub")).unwrap();
    assert_eq!(
        ws.open_parent(&ws.resolve("ro/sub/x").unwrap())
            .unwrap_err()
            .code(),
        ErrorCode::PathEscape
    );
    // The rest of the root opens as before.
    let (_, name) = ws.open_parent(&ws.resolve("src/new.rs").unwrap()).unwrap();
    assert_eq!(name, "new.rs");
    assert!(ws.open_dir_to_write(&ws.root_path()).is_ok());
    // Reads are not fenced.
    assert!(ws.open_file(&ws.resolve("ro/keep.txt").unwrap()).is_ok());
}

#[test]
fn without_fences_the_same_swap_opens() {
    let (_base, ws) = setup();
    std::fs::create_dir(ws.root().join("ro")).unwrap();
    let path = ws.resolve("d/new.txt").unwrap();
    symlink("ro", ws.root().join("d")).unwrap();
    assert!(ws.open_parent(&path).is_ok());
    assert!(ws.fences().is_empty());
    // Fences are set once.
    let fence = Fence::new(ws.root_id(), "x");
    assert!(ws.fence_off(vec![fence.clone()]).is_ok());
    assert_eq!(ws.fence_off(vec![]), Err(vec![]));
    assert_eq!(ws.fences(), [fence]);
}

#[test]
fn create_dir_all_makes_nothing_in_a_fenced_directory() {
    let (_base, ws, ro) = fenced();
    let path = ws.resolve("d/e/f").unwrap();
    symlink("ro", ws.root().join("d")).unwrap();
    let err = ws.create_dir_all(&path).unwrap_err();
    assert_eq!(err.code(), ErrorCode::PathEscape, "{}", err.message());
    assert!(!ro.join("e").exists());
    // Elsewhere it is mkdir -p, answering what it made, outermost first.
    let made = ws.create_dir_all(&ws.resolve("a/b/c").unwrap()).unwrap();
    let made: Vec<&str> = made.iter().map(ConfinedPath::display).collect();
    assert_eq!(made, ["a", "a/b", "a/b/c"]);
    assert!(
        ws.create_dir_all(&ws.resolve("a/b").unwrap())
            .unwrap()
            .is_empty()
    );
    // Under a file: not_a_file.
    let err = ws
        .create_dir_all(&ws.resolve("src/lib.rs/x").unwrap())
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotAFile, "{}", err.message());
    // Made directories can be taken back.
    let made = ws.create_dir_all(&ws.resolve("t/u").unwrap()).unwrap();
    ws.remove_made_dirs(&made);
    assert!(!ws.root().join("t").exists());
}

#[test]
fn first_met_walks_up_to_the_nearest_mark() {
    let (_base, ws) = setup();
    let deep = ws.open_dir(&ws.resolve("src/deep").unwrap()).unwrap();
    let src = DirId::of_std(&std::fs::metadata(ws.root().join("src")).unwrap());
    assert_eq!(first_met(&deep, &[ws.root_id(), src]).unwrap(), Some(1));
    assert_eq!(first_met(&deep, &[ws.root_id()]).unwrap(), Some(0));
    let unrelated = DirId::of_std(&std::fs::metadata(ws.root().join("src/lib.rs")).unwrap());
    assert_eq!(first_met(&deep, &[unrelated]).unwrap(), None);
}

#[test]
fn a_missing_name_undone_by_dot_dot_leaves_the_rest_checked() {
    let (base, ws) = setup();
    symlink(base.path().join("ws_evil"), ws.root().join("out")).unwrap();
    symlink("src", ws.root().join("in")).unwrap();
    // `missing/..` climbs back, so `out` is a symlink like any other.
    assert_eq!(code(&ws, "missing/../out/secret"), ErrorCode::PathEscape);
    assert_eq!(
        ws.resolve("missing/../in/lib.rs").unwrap().display(),
        "src/lib.rs"
    );
    // Still by name below a missing one.
    assert_eq!(
        ws.resolve("missing/deeper/../x").unwrap().display(),
        "missing/x"
    );
}

#[test]
fn an_entry_is_its_own_name_and_adopt_rebases_a_location() {
    let (_base, ws) = setup();
    symlink("src", ws.root().join("link")).unwrap();
    let parent = ws.root_path();
    let entry = ws.entry(&parent, std::ffi::OsStr::new("link")).unwrap();
    assert_eq!(entry.display(), "link");
    assert!(
        ws.symlink_metadata(&entry)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    for bad in ["..", ".", "a/b", ""] {
        assert_eq!(
            ws.entry(&parent, std::ffi::OsStr::new(bad))
                .unwrap_err()
                .code(),
            ErrorCode::InvalidInput,
            "{bad:?}"
        );
    }
    let inner = Workspace::open(ws.root().join("src"), Confinement::Confined).unwrap();
    let path = ws.resolve("link/deep/x.txt").unwrap();
    let adopted = inner.adopt(&path).unwrap();
    assert_eq!(adopted.display(), "deep/x.txt");
    assert!(inner.adopt(&ws.resolve("other.txt").unwrap()).is_none());
}
