//! Finding by name and walking trees: `search_files` (a name substring),
//! `glob_search` (globs) and `directory_tree` (a JSON tree), all through the
//! engine's one walk ([`agent_tools_fs::FileTools::find`]).

use std::fmt::Write as _;

use agent_tools::{CallContext, Content, Reply, ToolError, ToolResult};
use agent_tools_fs::{FindOptions, Found, Globs, Keep};
use serde::Serialize;

use crate::args::{GlobSearchArgs, SearchArgs, TreeArgs};
use crate::roots::{Need, Roots};

pub(crate) const SEARCH_FILES: &str = "Find files and directories by name: every entry under \
`directory` (searched recursively) whose name contains `nameContains`, compared without regard \
to case. `nameContains` is a plain string, not a glob or a regex (use glob_search for globs, \
grep_files for contents). `excludeGlobs` leaves out matching entries (a pattern without `/` \
matches a name at any depth, e.g. `node_modules`; one with `/` a path relative to \
`directory`). Answers absolute paths, one a line, or `(no matches found)`.";

pub(crate) const GLOB_SEARCH: &str = "Find files (not directories) whose path relative to \
`directory` matches one of `globs`: `*` and `?` within a name, `**` across directories, \
`{a,b}` alternatives (e.g. `**/*.rs`, `src/*.{ts,tsx}`). `excludeGlobs` leaves out matches as \
in search_files. At most `max` paths (default 1000, 0 for no limit), absolute, sorted, one a \
line, or `(no matches found)`.";

pub(crate) const DIRECTORY_TREE: &str = "The tree under a directory as JSON: `{\"name\", \
\"type\": \"file\"|\"directory\", \"children\": [...]}`, children sorted by name. `depth` caps \
the levels shown: omitted for all, 0 for the directory alone, 1 for its entries, N for N levels; \
a directory below the cap has no `children` key. A tree too large for one answer is cut, with a \
note saying so.";

/// What a search costs per line besides its path: the newline, and the
/// directory the path is shown under (added by the caller).
const LINE_OVERHEAD: usize = 1;

/// Room kept in the output for the notes after the list.
const NOTE_ROOM: usize = 512;

/// The older names of `search_files`, accepted without being advertised.
pub(crate) const SEARCH_LEGACY: &[&str] = &["path", "pattern", "excludePatterns"];
/// What `search_files` advertises as required.
pub(crate) const SEARCH_REQUIRED: &[&str] = &["directory", "nameContains"];

/// The hidden argument of `directory_tree`.
pub(crate) const TREE_LEGACY: &[&str] = &["excludePatterns"];

fn has_glob_chars(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '{'])
}

/// What the keeping limits left out, said after the list.
fn cut_note(found: &Found, what: &str, advice: &str) -> String {
    let shown = found.entries.len();
    if found.matched > shown {
        format!("[{shown} of {} {what} shown; {advice}]\n", found.matched)
    } else {
        String::new()
    }
}

/// The directory searched (absolute, as shown) and its path for the engine.
fn search_base(
    roots: &Roots,
    raw: &str,
) -> ToolResult<(std::sync::Arc<crate::Root>, String, String)> {
    let (root, path) = roots.resolve(raw, Need::Read)?;
    let shown = root.shown(&path);
    let abs = path.abs().to_string_lossy().into_owned();
    Ok((root, shown, abs))
}

fn join_shown(dir: &str, rel: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{rel}")
    } else {
        format!("{dir}/{rel}")
    }
}

/// Paths one a line under `dir`, or `(no matches found)`, with the notes.
fn path_lines(dir: &str, found: &Found, cut: String) -> String {
    if found.entries.is_empty() {
        return format!("(no matches found)\n{}", found.note);
    }
    let mut out = String::new();
    for entry in &found.entries {
        let _ = writeln!(out, "{}", join_shown(dir, &entry.rel));
    }
    out.push_str(&cut);
    out.push_str(&found.note);
    out
}

pub(crate) fn search_files(
    roots: &Roots,
    args: SearchArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let directory = args.directory.or(args.path).ok_or_else(|| {
        ToolError::invalid_input("search_files: `directory` is required (the directory to search)")
    })?;
    // The newer name wins; an older `pattern` holding glob characters is a
    // glob over the path relative to the directory.
    enum Test {
        Contains(String),
        Glob(Globs),
    }
    let test = match (args.name_contains, args.pattern) {
        (Some(needle), _) => Test::Contains(needle),
        (None, Some(pattern)) if has_glob_chars(&pattern) => {
            Test::Glob(Globs::relative(std::slice::from_ref(&pattern))?)
        }
        (None, Some(pattern)) => Test::Contains(pattern),
        (None, None) => {
            return Err(ToolError::invalid_input(
                "search_files: `nameContains` is required (text the name must contain)",
            ));
        }
    };
    if matches!(&test, Test::Contains(needle) if needle.is_empty()) {
        return Err(ToolError::invalid_input(
            "search_files: `nameContains` is empty; give some text the name must contain",
        ));
    }
    let excludes = args
        .exclude_globs
        .or(args.exclude_patterns)
        .unwrap_or_default();
    let exclude = Globs::exclusions(&excludes)?;
    let (root, shown, abs) = search_base(roots, &directory)?;
    let needle = match &test {
        Test::Contains(needle) => needle.to_lowercase(),
        Test::Glob(_) => String::new(),
    };
    let options = FindOptions {
        exclude: Some(&exclude),
        directories: true,
        max_depth: None,
        keep: Keep {
            max_entries: None,
            max_bytes: roots.config().max_output_bytes().saturating_sub(NOTE_ROOM),
            bytes_per_entry: shown.len() + 1 + LINE_OVERHEAD,
        },
    };
    let found = root.services().files().find(
        &abs,
        &options,
        |rel, name, _| match &test {
            Test::Contains(_) => name.to_lowercase().contains(&needle),
            Test::Glob(globs) => globs.is_match(rel),
        },
        call.cancel.flag(),
    )?;
    let cut = cut_note(
        &found,
        "matches",
        "the rest is over the output limit: make nameContains longer or add excludeGlobs",
    );
    Ok(path_lines(&shown, &found, cut))
}

pub(crate) fn glob_search(
    roots: &Roots,
    args: GlobSearchArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let (root, shown, abs) = search_base(roots, &args.directory)?;
    // A glob that repeats the directory is taken relative to it; any other
    // absolute glob cannot match a relative path.
    let mut globs = Vec::with_capacity(args.globs.len());
    for glob in &args.globs {
        let relative = [shown.as_str(), abs.as_str()]
            .iter()
            .find_map(|dir| glob.strip_prefix(&format!("{}/", dir.trim_end_matches('/'))))
            .unwrap_or(glob);
        if relative.starts_with('/') {
            return Err(ToolError::invalid_input(format!(
                "glob {glob:?} is absolute and not under {shown}; globs are relative to `directory`"
            )));
        }
        globs.push(relative.to_owned());
    }
    let globs = Globs::relative(&globs)?;
    let exclude = Globs::exclusions(&args.exclude_globs)?;
    let options = FindOptions {
        exclude: Some(&exclude),
        directories: false,
        max_depth: None,
        keep: Keep {
            max_entries: match args.max {
                0 => None,
                max => Some(usize::try_from(max).unwrap_or(usize::MAX)),
            },
            max_bytes: roots.config().max_output_bytes().saturating_sub(NOTE_ROOM),
            bytes_per_entry: shown.len() + 1 + LINE_OVERHEAD,
        },
    };
    let found = root.services().files().find(
        &abs,
        &options,
        |rel, _, _| globs.is_match(rel),
        call.cancel.flag(),
    )?;
    let capped = args.max != 0 && found.entries.len() as u64 == args.max;
    let advice = if capped {
        "raise max (0 for no limit) or narrow the globs"
    } else {
        "the rest is over the output limit: narrow the globs or add excludeGlobs"
    };
    let cut = cut_note(&found, "matches", advice);
    Ok(path_lines(&shown, &found, cut))
}

/// One node of the tree, serialized in this field order.
#[derive(Debug, Serialize)]
struct Node {
    name: String,
    #[serde(rename = "type")]
    kind: &'static str,
    /// Absent for a file, and for a directory below the depth cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    children: Option<Vec<Node>>,
}

impl Node {
    fn new(name: String, is_dir: bool, expanded: bool) -> Node {
        Node {
            name,
            kind: if is_dir { "directory" } else { "file" },
            children: (is_dir && expanded).then(Vec::new),
        }
    }
}

/// Places an entry at `parts` below `node`. Entries come parents first,
/// each directory's contents right after it, so the parent is the last
/// child at every level.
fn insert(node: &mut Node, parts: &[&str], is_dir: bool, expanded: bool) {
    let Some(children) = node.children.as_mut() else {
        return;
    };
    match parts {
        [] => {}
        [name] => children.push(Node::new((*name).to_owned(), is_dir, expanded)),
        [first, rest @ ..] => {
            if let Some(child) = children.last_mut().filter(|child| child.name == *first) {
                insert(child, rest, is_dir, expanded);
            }
        }
    }
}

/// What a node costs in compact JSON at most, besides its name:
/// `{"name":"","type":"directory","children":[]},`.
const NODE_JSON_BYTES: usize = 48;

pub(crate) fn directory_tree(
    roots: &Roots,
    args: TreeArgs,
    call: &CallContext,
) -> ToolResult<Reply> {
    let exclude = Globs::exclusions(&args.exclude_patterns)?;
    let (root, shown, abs) = search_base(roots, &args.path)?;
    let max_depth = args
        .depth
        .map(|depth| usize::try_from(depth).unwrap_or(usize::MAX));
    let options = FindOptions {
        exclude: Some(&exclude),
        directories: true,
        max_depth,
        keep: Keep {
            max_entries: None,
            max_bytes: roots.config().max_output_bytes().saturating_sub(NOTE_ROOM),
            bytes_per_entry: NODE_JSON_BYTES,
        },
    };
    let found = root
        .services()
        .files()
        .find(&abs, &options, |_, _, _| true, call.cancel.flag())?;
    let name = std::path::Path::new(&shown)
        .file_name()
        .map_or_else(|| shown.clone(), |name| name.to_string_lossy().into_owned());
    let mut tree = Node::new(name, true, max_depth != Some(0));
    for entry in &found.entries {
        let parts: Vec<&str> = entry.rel.split('/').collect();
        let depth = parts.len();
        let expanded = max_depth.is_none_or(|max| depth < max);
        insert(&mut tree, &parts, entry.is_dir, expanded);
    }
    let json = serde_json::to_string(&tree)
        .map_err(|err| ToolError::internal(format!("the tree cannot be written as JSON: {err}")))?;
    let mut content = vec![Content::Text(json)];
    let cut = cut_note(
        &found,
        "entries",
        "the tree is over the output limit: pass depth or excludePatterns, or ask for a deeper directory",
    );
    let notes = format!("{cut}{}", found.note);
    if !notes.is_empty() {
        content.push(Content::Text(notes));
    }
    Ok(Reply::items(content))
}
