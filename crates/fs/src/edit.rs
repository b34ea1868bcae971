//! `edit_file` and `multi_edit`: literal search and replace in one text file,
//! written back atomically.
//!
//! The file is read, decoded as UTF-8 (a byte-order mark is kept aside and
//! written back), edited in memory, and replaced through [`crate::atomic`],
//! all under the path's write lock so two edits of one file never lose an
//! update. Matching is described in [`matching`] and [`crate::tolerant`].
//! In multi_edit, line numbers in messages are those of the file as read,
//! before the call's earlier edits moved lines.

use std::sync::PoisonError;

use agent_tools_confine::ConfinedPath;
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use agent_tools_text::{Encoding, LineBreaks, LineEnding, looks_binary};
use cap_std::fs::Metadata;

use crate::{EditFileArgs, EditSpec, FileTools, MultiEditArgs, atomic};

mod batch;
mod hint;
mod matching;

use matching::Edit;
pub use matching::splice_all;

/// A file loaded for editing.
struct Loaded {
    /// The text after the byte-order mark.
    text: String,
    /// Whether the file starts with a UTF-8 byte-order mark.
    bom: bool,
    meta: Metadata,
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

impl FileTools {
    /// Replaces `old_string` with `new_string` in one file. See the crate docs
    /// and SPEC.md for the matching rules. Returns e.g.
    /// `edited src/a.rs: 1 replacement at line 12`.
    pub fn edit_file(&self, args: &EditFileArgs) -> ToolResult<String> {
        let edit = Edit {
            old: &args.old_string,
            new: &args.new_string,
            replace_all: args.replace_all,
        };
        matching::validate(&edit)?;
        let path = self.workspace().resolve(&args.path)?;
        let lock = self.write_locks.lock_for(path.abs());
        let _held = lock.lock().unwrap_or_else(PoisonError::into_inner);
        let _file_lock = self.lock_files([&path])?;

        let loaded = self.load_for_edit(&path)?;
        let ending = ending_for(&loaded.text, [&edit]);
        let context = matching::Context {
            path: path.display(),
            ending,
            max_bytes: self.max_text_bytes(&loaded),
            origin: &matching::same_line,
        };
        let (edited, outcome) = matching::apply(&loaded.text, &edit, &context)?;
        self.store(&path, &loaded, &[edited.as_bytes()])?;
        Ok(format!("edited {path}: {}", outcome.describe()))
    }

    /// Applies several edits to one file, in order, each to the result of the
    /// one before; all of them or none. Returns one line per edit.
    pub fn multi_edit(&self, args: &MultiEditArgs) -> ToolResult<String> {
        if args.edits.is_empty() {
            return Err(ToolError::invalid_input(
                "edits is empty; give at least one {old_string, new_string} edit",
            ));
        }
        let total = args.edits.len();
        let prefix = |index: usize| format!("edit {} of {total}: ", index + 1);
        let edits: Vec<Edit<'_>> = args.edits.iter().map(edit_of).collect();
        for (index, edit) in edits.iter().enumerate() {
            matching::validate(edit).map_err(|err| err.with_prefix(prefix(index)))?;
        }
        let path = self.workspace().resolve(&args.path)?;
        let lock = self.write_locks.lock_for(path.abs());
        let _held = lock.lock().unwrap_or_else(PoisonError::into_inner);
        let _file_lock = self.lock_files([&path])?;

        let mut loaded = self.load_for_edit(&path)?;
        let ending = ending_for(&loaded.text, &edits);
        let text = std::mem::take(&mut loaded.text);
        let max_bytes = self.max_text_bytes(&loaded);
        let (edited, outcomes) = batch::apply_all(text, &edits, ending, path.display(), max_bytes)
            .map_err(|failure| failure.error.with_prefix(prefix(failure.index)))?;
        let (before_gap, after_gap) = edited.parts();
        self.store(&path, &loaded, &[before_gap, after_gap])?;

        let mut message = format!(
            "edited {path}: {total} edit{} applied",
            if total == 1 { "" } else { "s" }
        );
        for (index, outcome) in outcomes.iter().enumerate() {
            message.push('\n');
            message.push_str(&prefix(index));
            message.push_str(&outcome.describe());
        }
        Ok(message)
    }

    /// Reads and decodes a file for editing, refusing what cannot be edited.
    fn load_for_edit(&self, path: &ConfinedPath) -> ToolResult<Loaded> {
        let max = self.limits().max_file_bytes;
        let meta = match self.workspace().metadata(path) {
            Ok(meta) => meta,
            Err(err) if err.code() == ErrorCode::NotFound => {
                return Err(ToolError::new(
                    ErrorCode::NotFound,
                    format!("{path}: no such file; to create a file use write_file"),
                ));
            }
            Err(err) => return Err(err),
        };
        if meta.is_dir() || path.is_root() {
            return Err(ToolError::new(
                ErrorCode::NotAFile,
                format!("{path}: is a directory; the editing tools change files"),
            ));
        }
        if !meta.is_file() {
            return Err(ToolError::new(
                ErrorCode::NotAFile,
                format!("{path}: is not a regular file"),
            ));
        }
        atomic::refuse_read_only(path, &meta)?;
        let too_large = |size: u64| {
            ToolError::new(
                ErrorCode::TooLarge,
                format!(
                    "{path}: {size} bytes is over the {max} byte limit for editing; replace it whole with write_file, or edit it with bash"
                ),
            )
        };
        if meta.len() > max {
            return Err(too_large(meta.len()));
        }
        let file = self.workspace().open_file(path)?;
        // Room for the gap multi_edit works in, so it never has to move
        // the text to grow the buffer.
        let size = usize::try_from(meta.len()).unwrap_or(0);
        let mut bytes = Vec::with_capacity(size + size / 64 + 4096 + 1);
        let whole = crate::read_bounded_into(file, max, &mut bytes)
            .map_err(|err| self.workspace().io_error(&err, path))?;
        if !whole {
            return Err(too_large(max.saturating_add(1)));
        }

        let encoding = Encoding::sniff(&bytes);
        if encoding.is_utf16() {
            return Err(ToolError::new(
                ErrorCode::IsBinary,
                format!(
                    "{path}: is {encoding} text; the editing tools do not rewrite UTF-16 files. Convert it to UTF-8 first, or replace it whole with write_file (which writes UTF-8)"
                ),
            ));
        }
        if looks_binary(&bytes) {
            return Err(ToolError::new(
                ErrorCode::IsBinary,
                format!(
                    "{path}: appears to be a binary file; the editing tools change text files only"
                ),
            ));
        }
        let bom = encoding == Encoding::Utf8Bom;
        if bom {
            bytes.drain(..UTF8_BOM.len());
        }
        let text = String::from_utf8(bytes).map_err(|err| {
            ToolError::new(
                ErrorCode::IsBinary,
                format!(
                    "{path}: is not valid UTF-8 (first bad byte at offset {}); the editing tools change UTF-8 text only",
                    err.utf8_error().valid_up_to() + if bom { UTF8_BOM.len() } else { 0 }
                ),
            )
        })?;
        Ok(Loaded { text, bom, meta })
    }

    /// The largest edited text that fits the file limit with its
    /// byte-order mark.
    fn max_text_bytes(&self, loaded: &Loaded) -> u64 {
        let bom = if loaded.bom { UTF8_BOM.len() as u64 } else { 0 };
        self.limits().max_file_bytes.saturating_sub(bom)
    }

    /// Writes the edited text (in parts) back with the file's byte-order mark.
    fn store(&self, path: &ConfinedPath, loaded: &Loaded, text: &[&[u8]]) -> ToolResult<()> {
        let mut parts: Vec<&[u8]> = Vec::with_capacity(text.len() + 1);
        if loaded.bom {
            parts.push(UTF8_BOM);
        }
        parts.extend_from_slice(text);
        atomic::replace(self.workspace(), path, &parts, Some(&loaded.meta))
    }
}

/// What the engine tells a caller whose `old` was not found in `text`
/// (exactly): the regions of the file closest to it, their lines and
/// similarity and what differs, and a short diff against the closest one,
/// so the caller can fix `old` in one step. One paragraph per note, without
/// a headline; surfaces put their own first.
pub fn closest_regions_note(text: &str, old: &str) -> String {
    let context = matching::Context {
        path: "",
        ending: LineEnding::Lf,
        max_bytes: u64::MAX,
        origin: &matching::same_line,
    };
    let close = matching::closest(text, old);
    hint::no_match_notes(text, old, &close, &context).join("\n")
}

fn edit_of(spec: &EditSpec) -> Edit<'_> {
    Edit {
        old: &spec.old_string,
        new: &spec.new_string,
        replace_all: spec.replace_all,
    }
}

/// The file's line ending, worked out only when an edit has a line break to
/// convert, by the one rule ([`LineBreaks::dominant`]).
fn ending_for<'e, 'a: 'e>(text: &str, edits: impl IntoIterator<Item = &'e Edit<'a>>) -> LineEnding {
    let needs = edits
        .into_iter()
        .any(|edit| edit.old.contains('\n') || edit.new.contains('\n'));
    if !needs {
        return LineEnding::Lf;
    }
    LineBreaks::count(text.as_bytes()).dominant()
}

#[cfg(test)]
mod tests {
    use super::closest_regions_note;

    #[test]
    fn the_closest_region_is_named_with_a_diff() {
        let text = "fn main() {\n    let total = 1;\n    println!(\"{total}\");\n}\n";
        let note = closest_regions_note(text, "    let totl = 1;\n    println!(\"{total}\");");
        assert!(
            note.starts_with("The closest region of the file:\n- lines 2-3, "),
            "{note}"
        );
        assert!(note.contains("@@"), "{note}");
        assert!(note.contains("+    let total = 1;"), "{note}");
        assert_eq!(closest_regions_note("", "x"), "The file is empty.");
        assert_eq!(
            closest_regions_note("alpha\nbeta\n", "zzzzzz qqqq"),
            "No part of the file is close to it; read the file again to see its current content."
        );
    }
}
