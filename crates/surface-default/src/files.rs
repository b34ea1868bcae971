//! The file tools, wired from `agent-tools-fs`.

use crate::args::{
    EditFileArgs, GlobArgs, GrepArgs, ListDirArgs, MultiEditArgs, ReadFileArgs, WriteFileArgs,
};

use crate::services::Services;
use agent_tools::ToolDef;

const READ_FILE: &str = "Read a text file. Prints each line as its line number, a tab, then the line \
(the number and tab are not part of the file). Paths are relative to the workspace root, or absolute inside it. \
offset is the 1-based first line (negative -N reads the last N lines); limit caps the lines (default 2000). \
When more lines remain, a note at the end gives the offset to continue from. UTF-8 and UTF-16 (with BOM) are \
decoded; binary files are refused.";

const LIST_DIR: &str = "List one directory (not recursive): one entry a line, sorted by name, directories \
ending in '/', symlinks shown as 'name -> target'. Hidden entries are included. Names that could be misread \
(control characters, ':', ' -> ', ...) are shown as JSON strings, usable as-is as a path. Page long listings \
with offset and limit (a footer says how to get more).";

const GLOB: &str = "Find files by glob pattern, most recently modified first. The pattern is matched against \
paths relative to 'path' (default: the workspace root): '*' stays within a directory, '**' crosses them, \
e.g. '**/*.rs' or 'src/**/test_*.py'. Hidden files are included; files ignored by git (and .git/) are \
skipped unless respect_gitignore is false. Prints '(no matches)' when nothing matches. Page long results \
with offset and limit (a footer says how to get more).";

const GREP: &str = "Search file contents with a regular expression (Rust/ripgrep syntax), recursively. \
output_mode: files_with_matches (default, one path a line), content ('path:line:text', context lines as \
'path-line-text'), or count ('path:N'). Hidden files are searched, large files too; git-ignored and binary \
files and .git/ are skipped, and a note names files that could not be searched. Results are sorted by path then line; page them with head_limit and offset \
(a footer says how to get more).";

const WRITE_FILE: &str = "Create or overwrite a file with exactly the given content (no newline added, \
no line-ending change). The write is atomic: readers see the old file or the new one, never a mix. The \
parent directory must already exist. Prefer edit_file or multi_edit to change part of an existing file.";

const EDIT_FILE: &str = "Replace text in a file. old_string is matched literally (not a regex, and without \
the line-number prefix read_file shows) and must occur exactly once, unless replace_all is true. If it is \
not found exactly, tolerant matching is tried line by line (indentation depth and unit, trailing and inner \
whitespace, typographic quotes and dashes, Unicode normalization); it applies only when exactly one place \
matches and no other comes close, re-indents new_string to the file's indentation, and the result shows \
the lines before and after. new_string is literal. The file keeps its line endings (CRLF stays CRLF) and \
BOM. When nothing matches, the error names every close region (as 'lines N-M') and what differs.";

const MULTI_EDIT: &str = "Apply several edits to one file in one atomic step. Each edit \
{old_string, new_string, replace_all?} works like edit_file and sees the result of the edits before it. \
If any edit fails, nothing is written and the error names the edit ('edit 2 of 3: ...'). Line numbers \
in its messages are those of the file as you read it.";

/// `read_file`, `list_dir`, `glob`, `grep`.
pub(crate) fn read_tools() -> Vec<ToolDef<Services>> {
    vec![
        // One named file, opened without blocking, bounded by
        // max_file_bytes: brief.
        ToolDef::typed(
            "read_file",
            READ_FILE,
            false,
            |s: &Services, a: ReadFileArgs, call| s.files.read_file_with(&a, call.cancel.flag()),
        )
        .brief(),
        ToolDef::typed("list_dir", LIST_DIR, false, |s, a: ListDirArgs, call| {
            s.files.list_dir_with(&a, call.cancel.flag())
        }),
        ToolDef::typed("glob", GLOB, false, |s, a: GlobArgs, call| {
            s.files.glob_with(&a, call.cancel.flag())
        }),
        ToolDef::typed("grep", GREP, false, |s, a: GrepArgs, call| {
            s.files.grep_with(&a, call.cancel.flag())
        }),
    ]
}

/// `write_file`, `edit_file`, `multi_edit`.
pub(crate) fn write_tools() -> Vec<ToolDef<Services>> {
    vec![
        ToolDef::typed(
            "write_file",
            WRITE_FILE,
            true,
            |s, a: WriteFileArgs, call| {
                let answer = s.files.write_file(&a)?;
                Ok(s.with_diagnostics(answer, &[&a.path], call.cancel.flag()))
            },
        ),
        ToolDef::typed("edit_file", EDIT_FILE, true, |s, a: EditFileArgs, call| {
            let answer = s.files.edit_file(&a)?;
            Ok(s.with_diagnostics(answer, &[&a.path], call.cancel.flag()))
        }),
        ToolDef::typed(
            "multi_edit",
            MULTI_EDIT,
            true,
            |s, a: MultiEditArgs, call| {
                let answer = s.files.multi_edit(&a)?;
                Ok(s.with_diagnostics(answer, &[&a.path], call.cancel.flag()))
            },
        ),
    ]
}
