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
    // A loop also dangles as far as metadata() is concerned.
    let err = ws.resolve("loop_a").unwrap_err();
    assert!(matches!(
        err.code(),
        ErrorCode::PathEscape | ErrorCode::IoError
    ));
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
