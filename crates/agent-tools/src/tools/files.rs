//! The file tools, wired from `agent-tools-fs`.

use agent_tools_fs::{GlobArgs, GrepArgs, ListDirArgs, ReadFileArgs};

use crate::registry::ToolDef;

const READ_FILE: &str = "Read a text file. Prints each line as its line number, a tab, then the line \
(the number and tab are not part of the file). Paths are relative to the workspace root, or absolute inside it. \
offset is the 1-based first line (negative -N reads the last N lines); limit caps the lines (default 2000). \
When more lines remain, a note at the end gives the offset to continue from. UTF-8 and UTF-16 (with BOM) are \
decoded; binary files are refused.";

const LIST_DIR: &str = "List one directory (not recursive): one entry a line, sorted by name, directories \
ending in '/', symlinks shown as 'name -> target'. Hidden entries are included.";

const GLOB: &str = "Find files by glob pattern, most recently modified first. The pattern is matched against \
paths relative to 'path' (default: the workspace root): '*' stays within a directory, '**' crosses them, \
e.g. '**/*.rs' or 'src/**/test_*.py'. Hidden files are included; files ignored by git (and .git/) are \
skipped unless respect_gitignore is false. Prints '(no matches)' when nothing matches.";

const GREP: &str = "Search file contents with a regular expression (Rust/ripgrep syntax), recursively. \
output_mode: files_with_matches (default, one path a line), content ('path:line:text', context lines as \
'path-line-text'), or count ('path:N'). Hidden files are searched; git-ignored, binary and oversized files \
and .git/ are skipped. Results are sorted by path then line; page them with head_limit and offset \
(a footer says how to get more).";

/// `read_file`, `list_dir`, `glob`, `grep`.
pub(crate) fn read_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::typed("read_file", READ_FILE, false, |s, a: ReadFileArgs, _| {
            s.files.read_file(&a)
        }),
        ToolDef::typed("list_dir", LIST_DIR, false, |s, a: ListDirArgs, _| {
            s.files.list_dir(&a)
        }),
        ToolDef::typed("glob", GLOB, false, |s, a: GlobArgs, _| s.files.glob(&a)),
        ToolDef::typed("grep", GREP, false, |s, a: GrepArgs, _| s.files.grep(&a)),
    ]
}

/// `write_file`, `edit_file`, `multi_edit`.
pub(crate) fn write_tools() -> Vec<ToolDef> {
    Vec::new()
}
