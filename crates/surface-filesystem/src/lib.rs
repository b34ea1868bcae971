//! The `filesystem` surface: the tools an MCP filesystem server offers
//! (`read_file`, `read_multiple_files`, `write_file`, `create_directory`,
//! `list_directory`, `directory_tree`, `get_file_info`,
//! `list_allowed_directories`, `move_file`, `delete_file`, `edit_file`,
//! `edit_files`, `search_files`, `grep_files`, `glob_search`, `bash`), with
//! their parameter names, their output formats
//! and their JSON-RPC error codes (see SPEC section 10, "The filesystem
//! surface").
//!
//! Every path goes through one allowed directory's engine ([`Roots`]) exactly
//! as on the default surface: resolved and confined by name, then opened
//! beneath that directory's handle. Writes go through the engine's atomic writer,
//! moves through its no-replace rename.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod args;
mod content;
mod edit;
mod grep;
mod process;
mod roots;
mod search;
mod shell;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::args::{MoveArgs, NoArgs, PathArgs, ReadMultipleArgs, WriteArgs};
use agent_tools::{
    AllowedRoot, CallContext, CallOutcome, Cause, Config, Content, ErrorCode, Failure, Hints,
    ProtocolError, Reply, RootAccess, Stage, StartupError, Surface, ToolDef, ToolError, ToolResult,
};
use agent_tools_confine::{ConfinedPath, DirId, Workspace};
use agent_tools_fs::WriteFileArgs;
use cap_std::fs::PermissionsExt as _;
pub use process::FilesystemSession;
use roots::Need;
pub use roots::{Root, Roots};
pub use shell::{DEFAULT_TIMEOUT_SECS, KILL_GRACE, MAX_TIMEOUT_SECS, STREAM_BYTES};

/// The surface's name, as `--surface` takes it.
pub const FILESYSTEM_SURFACE: &str = "filesystem";

/// The most paths one `read_multiple_files` call takes.
pub const MAX_PATHS: usize = 50;

/// JSON-RPC code: the path lies outside the allowed directories.
pub const PATH_NOT_ALLOWED: i64 = -32001;
/// JSON-RPC code: the file or directory does not exist.
pub const NOT_FOUND: i64 = -32002;
/// JSON-RPC code: the arguments are missing, mistyped or out of range.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC code: everything else (I/O failures, refusals of the engine).
pub const INTERNAL_ERROR: i64 = -32603;

/// The filesystem surface. Failures are JSON-RPC errors with the codes
/// above; `read_multiple_files` reports a failing file inline instead.
#[derive(Debug, Clone, Copy, Default)]
pub struct FilesystemSurface;

const READ_MULTIPLE_FILES: &str = "Read several text files in one call (at most 50 paths, \
literal absolute paths, no globs). The result has one item per file, `PATH:` on the first line \
and the contents after it. A file that cannot be read is reported in its item as \
`PATH:\\n[error: ...]`; the call itself does not fail for it.";

const WRITE_FILE: &str = "Create a file, or replace an existing one completely, with `content` \
(UTF-8). Missing parent directories are created. The file is written atomically: readers see the \
old contents or the new, never a mix. Answers `Successfully wrote PATH`.";

const CREATE_DIRECTORY: &str = "Create a directory, with any missing parents (like mkdir -p). \
Succeeds when it already exists.";

const LIST_DIRECTORY: &str = "List the entries of a directory, sorted by name, one per line: \
`[DIR] name` for a directory, `[FILE] name` for anything else (a symlink is listed as itself, \
not followed).";

const GET_FILE_INFO: &str = "Metadata of a file or directory, one field per line: `type: \
file|directory`, `size: BYTES`, `modified: ISO 8601 time (UTC)`, `permissions: OCTAL`.";

const LIST_ALLOWED_DIRECTORIES: &str = "The directories this server may read and write, one per \
line: `PATH (read-write)` or `PATH (read-only)`. Every path given to another tool must lie \
inside one of them.";

const MOVE_FILE: &str = "Move or rename a file or directory. Missing parent directories of \
`destination` are created. An existing destination is never overwritten: the call fails \
instead. Fails with -32002 when `source` does not exist. `source` and `destination` may lie in \
different allowed directories (the move is one atomic rename, so it cannot cross filesystems). \
An allowed directory, or a directory holding one, cannot be moved.";

const DELETE_FILE: &str = "Delete a file, or a directory with everything in it. A symlink is \
removed itself; what it points to is left alone. An allowed directory, or a directory holding \
one, cannot be deleted.";

/// read_process_output reads only, but its default read moves on.
const PROCESS_READ: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: false,
    open_world: false,
};

/// force_terminate ends a process; a second call changes nothing more.
const PROCESS_STOP: Hints = Hints {
    read_only: false,
    destructive: true,
    idempotent: true,
    open_world: false,
};

impl Surface for FilesystemSurface {
    type State = Roots;

    fn name(&self) -> &'static str {
        FILESYSTEM_SURFACE
    }

    fn summary(&self) -> &'static str {
        "the tools of an MCP filesystem server (read_file, read_multiple_files, write_file, \
         create_directory, list_directory, directory_tree, get_file_info, \
         list_allowed_directories, move_file, delete_file, edit_file, edit_files, search_files, \
         grep_files, glob_search, bash, and the process tools start_process, \
         read_process_output, interact_with_process, force_terminate, list_sessions) over \
         several allowed directories, absolute paths, errors as JSON-RPC error codes"
    }

    fn instructions(&self) -> &'static str {
        "Filesystem tools confined to the allowed directories (list_allowed_directories names \
         them). Paths are absolute; a relative path is taken from the first allowed directory. \
         Errors are JSON-RPC errors: -32001 path not allowed, -32002 not found, -32602 invalid \
         params, -32603 anything else."
    }

    fn open(&self, config: &Config) -> Result<Roots, StartupError> {
        // The same engine handles as the default surface, once per allowed
        // directory: a workspace, file tools and locks each.
        Roots::open(config)
    }

    fn new_session(&self) -> agent_tools::Session {
        // The connection's processes live, and die, with it.
        agent_tools::Session::new(process::FilesystemSession::default())
    }

    fn offers_structured_output(&self) -> bool {
        // The reference server's tools declare output schemas too.
        true
    }

    fn tools(&self) -> Vec<ToolDef<Roots>> {
        vec![
            // The reads of named paths below are brief (see ToolDef::brief):
            // bounded by a small size (or the answer's budget over 50
            // paths, or one directory), opened without blocking, no lock
            // waited on.
            // Answers an image, a sound or a binary file as such.
            ToolDef::typed("read_file", content::READ_FILE, false, content::read_file)
                .titled("Read file", Hints::READ)
                .answering_media()
                // A large file takes more than a few milliseconds to read
                // and decode: brief only up to a small size.
                .brief_when(content::read_is_brief),
            ToolDef::typed(
                "read_multiple_files",
                READ_MULTIPLE_FILES,
                false,
                read_multiple_files,
            )
            .titled("Read several files", Hints::READ)
            .brief(),
            ToolDef::typed("list_directory", LIST_DIRECTORY, false, list_directory)
                .titled("List directory", Hints::READ)
                .brief(),
            ToolDef::typed("get_file_info", GET_FILE_INFO, false, get_file_info)
                .titled("Get file metadata", Hints::READ)
                .brief(),
            ToolDef::typed(
                "list_allowed_directories",
                LIST_ALLOWED_DIRECTORIES,
                false,
                list_allowed_directories,
            )
            .titled("List allowed directories", Hints::READ)
            .brief(),
            // The same content written twice leaves the same file.
            ToolDef::typed("write_file", WRITE_FILE, true, write_file)
                .titled("Write file", Hints::OVERWRITE),
            // Only adds what is missing; a second call changes nothing.
            ToolDef::typed("create_directory", CREATE_DIRECTORY, true, create_directory)
                .titled("Create directory", Hints::ADD),
            // Never overwrites, but the source is gone afterwards and a
            // second call fails: not idempotent; removing the source name
            // is destructive.
            ToolDef::typed("move_file", MOVE_FILE, true, move_file)
                .titled("Move or rename", Hints::EDIT),
            // Deleting twice leaves what deleting once leaves (the second
            // call fails with not found, changing nothing).
            ToolDef::typed("delete_file", DELETE_FILE, true, delete_file)
                .titled("Delete file or directory", Hints::OVERWRITE),
            // Finding, trees, the shell and the older names (content.rs,
            // search.rs, shell.rs).
            ToolDef::typed(
                "directory_tree",
                search::DIRECTORY_TREE,
                false,
                search::directory_tree,
            )
            .titled("Directory tree", Hints::READ)
            .accepting_unadvertised(search::TREE_LEGACY, &[]),
            ToolDef::typed(
                "search_files",
                search::SEARCH_FILES,
                false,
                search::search_files,
            )
            .titled("Find by name", Hints::READ)
            .accepting_unadvertised(search::SEARCH_LEGACY, search::SEARCH_REQUIRED),
            ToolDef::typed(
                "glob_search",
                search::GLOB_SEARCH,
                false,
                search::glob_search,
            )
            .titled("Find files by glob", Hints::READ),
            // Runs anything: not read-only, so --read-only leaves it out.
            ToolDef::typed("bash", shell::BASH, true, shell::bash)
                .titled("Run shell command", Hints::RUN)
                .bounding_itself(),
            ToolDef::typed(
                "start_process",
                process::START_PROCESS,
                true,
                process::start_process,
            )
            .titled("Start process", Hints::RUN)
            .bound_to_connection(),
            ToolDef::typed(
                "read_process_output",
                process::READ_PROCESS_OUTPUT,
                false,
                process::read_process_output,
            )
            .titled("Read process output", PROCESS_READ)
            .bound_to_connection(),
            ToolDef::typed(
                "interact_with_process",
                process::INTERACT_WITH_PROCESS,
                true,
                process::interact_with_process,
            )
            .titled("Send input to process", Hints::RUN)
            .bound_to_connection(),
            ToolDef::typed(
                "force_terminate",
                process::FORCE_TERMINATE,
                true,
                process::force_terminate,
            )
            .titled("Terminate process", PROCESS_STOP)
            .bound_to_connection(),
            ToolDef::typed(
                "list_sessions",
                process::LIST_SESSIONS,
                false,
                process::list_sessions,
            )
            .titled("List processes", Hints::READ)
            .bound_to_connection(),
            ToolDef::typed(
                "read_text_file",
                content::READ_TEXT_FILE,
                false,
                content::read_text_file,
            )
            .titled("Read text file", Hints::READ)
            .unlisted(),
            ToolDef::typed(
                "read_media_file",
                content::READ_MEDIA_FILE,
                false,
                content::read_media_file,
            )
            .titled("Read media file", Hints::READ)
            .answering_media()
            .unlisted(),
            // Edits replace text in place: a second identical call finds
            // the replaced text gone (or changes it again with a regex).
            ToolDef::typed("edit_file", edit::EDIT_FILE, true, edit::edit_file)
                .titled("Edit file", Hints::EDIT),
            ToolDef::typed("edit_files", edit::EDIT_FILES, true, edit::edit_files)
                .titled("Edit many files", Hints::EDIT),
            ToolDef::typed("grep_files", grep::GREP_FILES, false, grep::grep_files)
                .titled("Search file contents", Hints::READ),
        ]
    }

    fn replace_roots(&self, roots: &Roots, given: &[PathBuf]) -> Result<(), StartupError> {
        // Announced roots carry no access: each is read-write, unless the
        // server runs --read-only (which hides every writing tool).
        let allowed: Vec<AllowedRoot> = given
            .iter()
            .map(|path| AllowedRoot {
                path: path.clone(),
                access: RootAccess::ReadWrite,
            })
            .collect();
        roots.replace(&allowed)
    }

    fn serves_several_roots(&self) -> bool {
        true
    }

    fn render_error(&self, failure: Failure<'_>) -> CallOutcome {
        let cause = failure.cause();
        let code = match failure.stage {
            // An unknown (or hidden) tool and arguments that do not fit the
            // schema are both the caller's parameters.
            Stage::Lookup | Stage::Validation => INVALID_PARAMS,
            Stage::Run => match cause {
                Cause::Cancelled => INTERNAL_ERROR,
                Cause::Error(code) => rpc_code(code),
            },
        };
        CallOutcome::Protocol(ProtocolError {
            code,
            message: failure.error.message().to_owned(),
            cause: Some(cause),
        })
    }
}

/// The JSON-RPC code of an engine error, as the seed assigns them.
pub fn rpc_code(code: ErrorCode) -> i64 {
    match code {
        ErrorCode::PathEscape => PATH_NOT_ALLOWED,
        ErrorCode::NotFound => NOT_FOUND,
        ErrorCode::InvalidInput => INVALID_PARAMS,
        ErrorCode::NotAFile
        | ErrorCode::IsBinary
        | ErrorCode::NoMatch
        | ErrorCode::AmbiguousMatch
        | ErrorCode::PatchFailed
        | ErrorCode::Timeout
        | ErrorCode::OutputLimit
        | ErrorCode::TooLarge
        | ErrorCode::IoError
        | ErrorCode::Internal => INTERNAL_ERROR,
    }
}

fn read_multiple_files(
    roots: &Roots,
    args: ReadMultipleArgs,
    _: &CallContext,
) -> ToolResult<Reply> {
    // The schema caps the count; checked again so the handler never
    // depends on validation having run.
    if args.paths.len() > MAX_PATHS {
        return Err(ToolError::invalid_input(format!(
            "paths: {} paths given; at most {MAX_PATHS} per call",
            args.paths.len()
        )));
    }
    // Reading stops where the answer's budget does: what is past it would
    // only be cut away after being read and held (50 files of the size
    // limit each). Room is kept for the note naming the files not read.
    let budget = roots
        .config()
        .max_output_bytes()
        .saturating_sub(MULTI_READ_NOTE_ROOM);
    let mut left = budget;
    let mut content = Vec::new();
    let mut unread: Vec<&str> = Vec::new();
    for raw in &args.paths {
        let heading = format!("{raw}:\n");
        if left <= heading.len() {
            unread.push(raw);
            continue;
        }
        let keep = (left - heading.len()) as u64;
        let item = match content::read_text_up_to(roots, raw, keep) {
            Ok((text, true)) => format!("{heading}{text}"),
            Ok((text, false)) => format!("{heading}{text}\n{}", multi_read_cut(budget)),
            Err(err) => format!("{heading}[error: {}]", err.message()),
        };
        left = left.saturating_sub(item.len());
        content.push(Content::Text(item));
    }
    if !unread.is_empty() {
        content.push(Content::Text(multi_read_unread(&unread, budget)));
    }
    Ok(Reply::items(content))
}

/// Room the answer of `read_multiple_files` keeps for its notes.
const MULTI_READ_NOTE_ROOM: usize = 2048;

/// The note after a file cut where the answer's budget ran out.
fn multi_read_cut(budget: usize) -> String {
    format!(
        "[cut: the answer's budget of {budget} bytes is spent; read this file alone to see the rest]"
    )
}

/// The note naming the files not read because the answer's budget was
/// spent before them; a long list is cut, with how many it leaves out.
fn multi_read_unread(unread: &[&str], budget: usize) -> String {
    let mut note = format!(
        "[not read: the answer's budget of {budget} bytes was spent before {} more file(s); \
         read them in another call:",
        unread.len()
    );
    let room = MULTI_READ_NOTE_ROOM - 256;
    for (shown, raw) in unread.iter().enumerate() {
        if note.len() + raw.len() + 2 > room {
            let _ = write!(note, " and {} more", unread.len() - shown);
            break;
        }
        let _ = write!(note, " {raw}");
    }
    note.push(']');
    note
}

/// mkdir -p of `path`, beneath the root's directory handle; each directory
/// is made in one opened (and checked against the read-only directories
/// nested in the root) just before. Answers the directories made.
fn create_dirs(workspace: &Workspace, path: &ConfinedPath) -> ToolResult<Vec<ConfinedPath>> {
    agent_tools_fs::make_dirs(workspace, path)
}

/// Creates the missing parents of `path` (confined like every path);
/// answers the directories made.
fn create_parents(workspace: &Workspace, path: &ConfinedPath) -> ToolResult<Vec<ConfinedPath>> {
    match path.rel().parent() {
        Some(parent) if !parent.as_os_str().is_empty() => {
            let parent = workspace.resolve(&parent.to_string_lossy())?;
            create_dirs(workspace, &parent)
        }
        _ => Ok(Vec::new()),
    }
}

fn write_file(roots: &Roots, args: WriteArgs, call: &CallContext) -> ToolResult<String> {
    // Resolved first, so a path outside the roots creates no directory.
    let (root, path) = roots.resolve(&args.path, Need::Write)?;
    let ws = root.workspace();
    let made = create_parents(ws, &path)?;
    // The engine's writer resolves the path again, beneath this root.
    let abs = path.abs().to_string_lossy().into_owned();
    if let Err(err) = root
        .services()
        .files()
        .write_file(&WriteFileArgs::new(abs, args.content))
    {
        // A failed write leaves the tree as it was.
        ws.remove_made_dirs(&made);
        return Err(err);
    }
    let answer = format!("Successfully wrote {}", root.shown(&path));
    Ok(with_diagnostics(&root, &path, answer, call))
}

/// `answer` with the diagnostics of `path` just written appended after a
/// blank line, in the default surface's form (`diagnostics (server, 0.3
/// s):` and `path:line:col: error: message [code]` lines), the path shown
/// as this surface shows it. Unchanged without `--lsp` or when no server
/// handles the file.
pub(crate) fn with_diagnostics(
    root: &Root,
    path: &ConfinedPath,
    answer: String,
    call: &CallContext,
) -> String {
    let reports = root
        .services()
        .diagnostics_after_write(&[path.display()], call.cancel.flag());
    let mut out = answer;
    for report in reports {
        out.push_str("\n\n");
        out.push_str(&report.render_plain(&root.shown(path)));
    }
    out
}

/// The diagnostics blocks of several files just written (each given by
/// its index in the answer and its path as the model named it), in the
/// form of [`with_diagnostics`]: per allowed directory, its files checked
/// at once, so the call waits one deadline however many files it wrote.
/// A file no server handles (or one that no longer resolves) gets none.
pub(crate) fn diagnostics_of_many(
    roots: &Roots,
    written: &[(usize, &str)],
    call: &CallContext,
) -> Vec<(usize, String)> {
    /// An allowed directory and the files written beneath it, each with
    /// its index in the answer.
    type Group = (Arc<Root>, Vec<(usize, ConfinedPath)>);
    // Grouped by the directory that holds them: each has its own servers.
    let mut groups: Vec<Group> = Vec::new();
    for &(at, raw) in written {
        let Ok((root, path)) = roots.resolve(raw, Need::Read) else {
            continue;
        };
        if root.services().lsp().is_none() {
            continue;
        }
        match groups.iter_mut().find(|(r, _)| Arc::ptr_eq(r, &root)) {
            Some((_, files)) => files.push((at, path)),
            None => groups.push((root, vec![(at, path)])),
        }
    }
    let mut blocks = Vec::new();
    for (root, files) in groups {
        let names: Vec<&str> = files.iter().map(|(_, path)| path.display()).collect();
        let reports = root
            .services()
            .diagnostics_after_write(&names, call.cancel.flag());
        for report in reports {
            if let Some((at, path)) = files.iter().find(|(_, path)| path.abs() == report.path) {
                blocks.push((*at, report.render_plain(&root.shown(path))));
            }
        }
    }
    blocks
}

fn create_directory(roots: &Roots, args: PathArgs, _: &CallContext) -> ToolResult<String> {
    let (root, path) = roots.resolve(&args.path, Need::Write)?;
    create_dirs(root.workspace(), &path)?;
    Ok(format!(
        "Successfully created directory {}",
        root.shown(&path)
    ))
}

fn list_directory(roots: &Roots, args: PathArgs, _: &CallContext) -> ToolResult<String> {
    let (root, path) = roots.resolve(&args.path, Need::Read)?;
    let ws = root.workspace();
    let path = ws.resolve_dir(
        Some(&path.abs().to_string_lossy()),
        "use get_file_info or read_file on a file",
    )?;
    let dir = ws.open_dir(&path)?;
    let io = |err: std::io::Error| ws.io_error(&err, &path);
    let mut entries = Vec::new();
    for entry in dir.entries().map_err(io)? {
        let entry = entry.map_err(io)?;
        let is_dir = entry.file_type().map_err(io)?.is_dir();
        entries.push((entry.file_name().to_string_lossy().into_owned(), is_dir));
    }
    entries.sort_unstable();
    let mut out = String::new();
    for (name, is_dir) in entries {
        let tag = if is_dir { "[DIR]" } else { "[FILE]" };
        let _ = writeln!(out, "{tag} {name}");
    }
    Ok(out)
}

fn get_file_info(roots: &Roots, args: PathArgs, _: &CallContext) -> ToolResult<String> {
    let (root, path) = roots.resolve(&args.path, Need::Read)?;
    let ws = root.workspace();
    let meta = ws.metadata(&path)?;
    let kind = if meta.is_dir() {
        "directory"
    } else if meta.is_file() {
        "file"
    } else {
        "other"
    };
    let modified = meta
        .modified()
        .map(|time| {
            chrono::DateTime::<chrono::Utc>::from(time.into_std())
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        })
        .map_err(|err| ws.io_error(&err, &path))?;
    Ok(format!(
        "type: {kind}\nsize: {}\nmodified: {modified}\npermissions: {:o}\n",
        meta.len(),
        meta.permissions().mode() & 0o7777
    ))
}

fn list_allowed_directories(roots: &Roots, _: NoArgs, _: &CallContext) -> ToolResult<String> {
    let mut out = String::new();
    for root in roots.list().iter() {
        let access = if root.writable() && !roots.config().read_only() {
            "read-write"
        } else {
            "read-only"
        };
        let _ = writeln!(out, "{} ({access})", root.shown_root());
    }
    if out.is_empty() {
        out.push_str("(no allowed directories yet)\n");
    }
    Ok(out)
}

fn move_file(roots: &Roots, args: MoveArgs, call: &CallContext) -> ToolResult<String> {
    // Both ends are entries: the directory holding each decides where it
    // lies (and whether it may be written), the last name is not followed
    // (a symlink is moved itself, as rename(2) moves it).
    let (from_root, source) = roots.resolve_entry(&args.source, Need::Write)?;
    let (to_root, destination) = roots.resolve_entry(&args.destination, Need::Write)?;
    let from_ws = from_root.workspace();
    let to_ws = to_root.workspace();
    // Absent source: not found, before any directory is created.
    let meta = from_ws.symlink_metadata(&source)?;
    if meta.is_dir() {
        roots.refuse_roots(&args.source, DirId::of_meta(&meta))?;
    }
    if let Ok(meta) = to_ws.symlink_metadata(&destination) {
        if meta.is_dir() {
            roots.refuse_roots(&args.destination, DirId::of_meta(&meta))?;
        }
        // Said plainly here; the rename below refuses it too (no replace),
        // should it appear meanwhile.
        return Err(ToolError::new(
            ErrorCode::IoError,
            format!(
                "{}: already exists; move_file never replaces it (delete it first, or choose \
                 another destination)",
                to_root.shown(&destination)
            ),
        ));
    }
    // A rename cannot cross filesystems: refused before any parent of the
    // destination is made, so nothing changes.
    let from_dev = from_ws.open_parent(&source)?.0.dir_metadata();
    let to_dev = existing_ancestor_dev(to_ws, &destination);
    if let (Ok(from_meta), Some(to_dev)) = (from_dev, to_dev)
        && DirId::of_meta(&from_meta).dev() != to_dev
    {
        return Err(agent_tools_fs::cross_device(
            from_root.shown(&source),
            to_root.shown(&destination),
        ));
    }
    let made = create_parents(to_ws, &destination)?;
    // One renameat2 between the two directory handles (the same one
    // within a directory): the move is one atomic step, and it never
    // replaces what is at the destination.
    if let Err(err) =
        agent_tools_fs::rename_new_between(from_ws, &source, to_ws, &destination, None)
    {
        to_ws.remove_made_dirs(&made);
        return Err(err);
    }
    let answer = format!(
        "Successfully moved {} to {}",
        from_root.shown(&source),
        to_root.shown(&destination)
    );
    // The server forgets the old name; a moved file is checked under its
    // new one (a directory moved is not walked).
    if let Some(lsp) = from_root.services().lsp() {
        lsp.closed(source.abs());
    }
    Ok(if meta.is_file() {
        with_diagnostics(&to_root, &destination, answer, call)
    } else {
        answer
    })
}

/// The device of the deepest directory above `path` that exists (where a
/// move to `path` would land once its parents are made).
fn existing_ancestor_dev(workspace: &Workspace, path: &ConfinedPath) -> Option<u64> {
    path.rel()
        .ancestors()
        .skip(1)
        .find_map(|ancestor| {
            let ancestor = if ancestor.as_os_str().is_empty() {
                Path::new(".")
            } else {
                ancestor
            };
            workspace.base_dir().metadata(ancestor).ok()
        })
        .map(|meta| DirId::of_meta(&meta).dev())
}

fn delete_file(roots: &Roots, args: PathArgs, _: &CallContext) -> ToolResult<String> {
    // The directory holding the entry decides where it lies and whether it
    // may be written; the entry's own name is looked at, never followed,
    // and removed by name from that directory, opened beneath the root's
    // handle (a directory in a read-only one is refused as it opens).
    let (root, path) = roots.resolve_entry(&args.path, Need::Write)?;
    let ws = root.workspace();
    let raw = Path::new(&args.path);
    let (dir, name) = ws.open_parent(&path)?;
    let io = |err: std::io::Error| ToolError::from_io(&err, raw);
    let meta = dir.symlink_metadata(&name).map_err(io)?;
    if meta.is_dir() {
        roots.refuse_roots(&args.path, DirId::of_meta(&meta))?;
        agent_tools_fs::remove_tree(&dir, &name, path.abs()).map_err(io)?;
    } else {
        // Through the write path, so the undo journal sees it.
        agent_tools_fs::remove_seen(ws, &path, None)?;
        // Its server forgets it (a directory removed is not walked).
        if let Some(lsp) = root.services().lsp() {
            lsp.closed(path.abs());
        }
    }
    Ok(format!("Successfully deleted {}", args.path))
}

#[cfg(test)]
mod read_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_code_has_its_seed_code() {
        assert_eq!(rpc_code(ErrorCode::PathEscape), -32001);
        assert_eq!(rpc_code(ErrorCode::NotFound), -32002);
        assert_eq!(rpc_code(ErrorCode::InvalidInput), -32602);
        assert_eq!(rpc_code(ErrorCode::IoError), -32603);
        assert_eq!(rpc_code(ErrorCode::IsBinary), -32603);
    }
}
