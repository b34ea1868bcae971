//! Every text the surface answers with, in one place: Claude Code's own
//! messages where it has one (SPEC section 10, "The Claude Code surface",
//! lists their sources), the surface's own words where it has none.

use agent_tools::{ErrorCode, ToolError};

/// The field that marks an error as one of Claude Code's input checks,
/// which it shows wrapped in `<tool_use_error>`; errors without it are
/// shown bare, as Claude Code shows what its tools throw.
pub(crate) const CHECK_FIELD: &str = "tool_use_error";

/// A refusal by an input check (wrapped in `<tool_use_error>` on display).
pub(crate) fn check(code: ErrorCode, message: impl Into<String>) -> ToolError {
    ToolError::new(code, message).with_field(CHECK_FIELD, true)
}

/// A failure while the tool ran (shown bare).
pub(crate) fn thrown(code: ErrorCode, message: impl Into<String>) -> ToolError {
    ToolError::new(code, message)
}

/// Bytes as Claude Code prints sizes: `N bytes` under 1 KB, else one
/// decimal (a `.0` dropped) and KB, MB or GB.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KB", "MB", "GB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let shown = format!("{value:.1}");
    let shown = shown.strip_suffix(".0").unwrap_or(&shown);
    format!("{shown}{}", UNITS[unit])
}

// Paths.

pub(crate) fn not_absolute(param: &str, raw: &str) -> String {
    format!(
        "{param} must be an absolute path, not a relative one (got \"{raw}\"). Pass the full path, starting with /."
    )
}

pub(crate) const DENIED: &str =
    "File is in a directory that is denied by your permission settings.";

pub(crate) fn file_missing(suggestion: Option<&str>) -> String {
    match suggestion {
        Some(similar) => format!("File does not exist. Did you mean {similar}?"),
        None => "File does not exist.".to_owned(),
    }
}

// Read.

pub(crate) const EMPTY_FILE: &str =
    "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>";

pub(crate) fn shorter_than_offset(offset: u64, total: u64) -> String {
    format!(
        "<system-reminder>Warning: the file exists but is shorter than the provided offset ({offset}). The file has {total} lines.</system-reminder>"
    )
}

pub(crate) fn too_big_to_read(size: u64, max: u64) -> String {
    format!(
        "File content ({}) exceeds maximum allowed size ({}). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file.",
        format_size(size),
        format_size(max)
    )
}

pub(crate) fn more_lines(next: u64, total: u64) -> String {
    format!(
        "[The file has {total} lines; lines from {next} on are not shown. Call Read with offset={next} to continue.]"
    )
}

pub(crate) fn binary_file(extension: &str) -> String {
    if extension.is_empty() {
        "This tool cannot read binary files. The file appears to be a binary file. Please use appropriate tools for binary file analysis.".to_owned()
    } else {
        format!(
            "This tool cannot read binary files. The file appears to be a binary {extension} file. Please use appropriate tools for binary file analysis."
        )
    }
}

pub(crate) fn is_directory(raw: &str) -> String {
    format!("EISDIR: illegal operation on a directory, read '{raw}'")
}

pub(crate) fn device_file(raw: &str) -> String {
    format!("Cannot read '{raw}': this device file would block or produce infinite output.")
}

pub(crate) fn empty_image(raw: &str) -> String {
    format!("Image file is empty: {raw}")
}

pub(crate) fn image_too_large(raw: &str, size: u64, max: u64) -> String {
    format!(
        "Image file {raw} is {}, over the {} this server reads at once.",
        format_size(size),
        format_size(max)
    )
}

pub(crate) fn bad_pages(pages: &str) -> String {
    format!(
        "Invalid pages parameter: \"{pages}\". Use formats like \"1-5\", \"3\", or \"10-20\". Pages are 1-indexed."
    )
}

pub(crate) fn too_many_pages(pages: &str) -> String {
    format!(
        "Page range \"{pages}\" exceeds maximum of 20 pages per request. Please use a smaller range."
    )
}

pub(crate) fn pdf_too_long(count: usize) -> String {
    format!(
        "This PDF has {count} pages, which is too many to read at once. Use the pages parameter to read specific page ranges (e.g., pages: \"1-5\"). Maximum 20 pages per request."
    )
}

pub(crate) fn pdf_read(raw: &str, size: u64) -> String {
    format!("PDF file read: {raw} ({})", format_size(size))
}

pub(crate) fn pdf_pages_read(count: usize, raw: &str, size: u64) -> String {
    format!(
        "PDF pages extracted: {count} page(s) from {raw} ({})",
        format_size(size)
    )
}

pub(crate) fn pdf_unreadable(raw: &str, why: &str) -> String {
    format!("{raw} could not be read as a PDF: {why}")
}

pub(crate) fn pdf_over_load_budget(raw: &str, size: u64, budget: u64) -> String {
    format!(
        "{raw} ({}) could not be read as a PDF: its compressed objects decode to more than {}, over the limit of one read.",
        format_size(size),
        format_size(budget)
    )
}

pub(crate) fn pdf_page_over_budget(budget: u64) -> String {
    format!(
        "[this page was not read: its content decodes to more than {}, over the limit for one page]",
        format_size(budget)
    )
}

pub(crate) fn pdf_call_over_budget(budget: u64) -> String {
    format!(
        "[this page was not read: the pages before it used this read's budget of {} of decoded content; read it with the pages parameter]",
        format_size(budget)
    )
}

pub(crate) fn pdf_output_cut(page: u32) -> String {
    format!(
        "\n[output cut within page {page}: the text is longer than one answer holds; read the following pages with the pages parameter]"
    )
}

pub(crate) fn pdf_page_missing(pages: &str, count: usize) -> String {
    format!("Page range \"{pages}\" is past the end of the document, which has {count} pages.")
}

pub(crate) const PDF_NO_TEXT: &str = "[this page has no text layer: it holds only images or drawings (a scan, say); its text cannot be extracted]";

pub(crate) fn notebook_too_big(raw: &str, size: u64, max: u64) -> String {
    format!(
        "Notebook content ({}) exceeds maximum allowed size ({}). Use Bash with jq to read specific portions:\n  cat \"{raw}\" | jq '.cells[:20]' # First 20 cells",
        format_size(size),
        format_size(max)
    )
}

pub(crate) fn notebook_outputs_too_large(raw: &str, index: usize) -> String {
    format!(
        "Outputs are too large to include. Use Bash with: cat {raw} | jq '.cells[{index}].outputs'"
    )
}

// Write, Edit, MultiEdit, NotebookEdit.

pub(crate) const NOT_READ: &str = "File has not been read yet. Read it first before writing to it.";

pub(crate) const MODIFIED_SINCE_READ: &str = "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it.";

pub(crate) fn created(raw: &str) -> String {
    format!("File created successfully at: {raw}")
}

pub(crate) fn updated(raw: &str) -> String {
    format!("The file {raw} has been updated successfully.")
}

pub(crate) fn updated_all(raw: &str) -> String {
    format!("The file {raw} has been updated. All occurrences were successfully replaced.")
}

pub(crate) fn updated_multi(raw: &str, count: usize) -> String {
    format!(
        "The file {raw} has been updated successfully with {count} edit{}.",
        if count == 1 { "" } else { "s" }
    )
}

pub(crate) const NO_CHANGES: &str =
    "No changes to make: old_string and new_string are exactly the same.";

pub(crate) const ALREADY_EXISTS: &str = "Cannot create new file - file already exists.";

pub(crate) const USE_NOTEBOOK_EDIT: &str =
    "File is a Jupyter Notebook. Use the NotebookEdit to edit this file.";

pub(crate) fn not_found_in_file(old: &str) -> String {
    format!("String to replace not found in file.\nString: {old}")
}

pub(crate) fn several_matches(count: usize, old: &str) -> String {
    format!(
        "Found {count} matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: {old}"
    )
}

pub(crate) fn too_large_to_edit(size: u64, max: u64) -> String {
    format!(
        "File is too large to edit ({}). Maximum editable file size is {}.",
        format_size(size),
        format_size(max)
    )
}

pub(crate) fn in_edit(index: usize, total: usize, message: &str) -> String {
    format!("Edit {index} of {total} failed, so no edit was applied: {message}")
}

pub(crate) const NOT_UTF8: &str = "This tool edits UTF-8 text files only; the file is not valid UTF-8 (or is UTF-16). Replace it whole with Write instead.";

pub(crate) const NOT_A_NOTEBOOK: &str = "File must be a Jupyter notebook (.ipynb file). For editing other file types, use the FileEdit tool.";
pub(crate) const CELL_TYPE_REQUIRED: &str = "Cell type is required when using edit_mode=insert.";
pub(crate) const NOTEBOOK_MISSING: &str = "Notebook file does not exist.";
pub(crate) const NOTEBOOK_NOT_JSON: &str = "Notebook is not valid JSON.";
pub(crate) const CELL_ID_REQUIRED: &str =
    "Cell ID must be specified when not inserting a new cell.";

pub(crate) fn cell_index_missing(index: usize) -> String {
    format!("Cell with index {index} does not exist in notebook.")
}

pub(crate) fn cell_id_missing(id: &str) -> String {
    format!("Cell with ID \"{id}\" not found in notebook.")
}

pub(crate) fn cell_updated(id: &str, source: &str) -> String {
    format!("Updated cell {id} with {source}")
}

pub(crate) fn cell_inserted(id: &str, source: &str) -> String {
    format!("Inserted cell {id} with {source}")
}

pub(crate) fn cell_deleted(id: &str) -> String {
    format!("Deleted cell {id}")
}

// Glob and Grep.

pub(crate) const NO_FILES: &str = "No files found";
pub(crate) const NO_MATCHES: &str = "No matches found";
pub(crate) const GLOB_TRUNCATED: &str =
    "(Results are truncated. Consider using a more specific path or pattern.)";

pub(crate) fn directory_missing(raw: &str) -> String {
    format!("Directory does not exist: {raw}")
}

pub(crate) fn not_a_directory(raw: &str) -> String {
    format!("Path is not a directory: {raw}")
}

pub(crate) fn path_missing(raw: &str) -> String {
    format!("Path does not exist: {raw}")
}

pub(crate) fn plural(count: u64, one: &'static str, many: &'static str) -> &'static str {
    if count == 1 { one } else { many }
}

// Bash and KillShell.

pub(crate) fn exit_code(code: i32, output: &str) -> String {
    format!("Exit code {code}\n{output}")
}

pub(crate) const ABORTED: &str = "<error>Command was aborted before completion</error>";

pub(crate) fn timed_out(ms: u128) -> String {
    format!("<error>Command timed out after {ms} ms and was stopped</error>")
}

pub(crate) fn persisted_output(size: u64, path: &str, preview: &str) -> String {
    format!(
        "<persisted-output>\nOutput too large ({}). Full output saved to: {path}\n\nPreview (first 2KB):\n{preview}\n...\n</persisted-output>",
        format_size(size)
    )
}

pub(crate) fn background_started(id: &str, path: &str) -> String {
    format!("Command running in background with ID: {id}. Output is being written to: {path}")
}

pub(crate) fn too_many_background(max: usize) -> String {
    format!(
        "{max} background commands are already running in this session; stop one with KillShell first."
    )
}

pub(crate) fn shell_killed(id: &str, command: &str) -> String {
    format!("Successfully killed shell: {id} ({command})")
}

pub(crate) fn shell_already_done(id: &str, status: &str) -> String {
    format!("Shell {id} had already finished ({status}); whatever it left running was stopped.")
}

pub(crate) fn no_shell(id: &str) -> String {
    format!("No shell found with ID: {id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_printed_as_claude_code_prints_them() {
        assert_eq!(format_size(0), "0 bytes");
        assert_eq!(format_size(1023), "1023 bytes");
        assert_eq!(format_size(1024), "1KB");
        assert_eq!(format_size(256 * 1024), "256KB");
        assert_eq!(format_size(312_627), "305.3KB");
        assert_eq!(format_size(10 * 1024 * 1024), "10MB");
        assert_eq!(format_size(3 * 1024 * 1024 * 1024 / 2), "1.5GB");
    }
}
