//! `Write`, `Edit` and `MultiEdit`: read-before-write, the staleness check
//! and the write under the path's locks, Claude Code's matching (exact,
//! plus curly/straight quotes and CRLF files) and its messages.

use agent_tools::{CallContext, ErrorCode, ToolError, ToolResult};
use agent_tools_confine::ConfinedPath;
use agent_tools_fs::tolerant::restyle;
use agent_tools_fs::{Seen, Snapshot, closest_regions_note, splice_all};
use agent_tools_surface_default::Services;
use agent_tools_text::LineEnding;
use memchr::memmem;

use crate::args::{EditArgs, EditItem, MultiEditArgs, WriteArgs};
use crate::messages::{self, check, thrown};
use crate::read::{extension, suggestion};
use crate::session::ClaudeCodeSession;
use crate::{resolve_absolute, session_of};

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

pub(crate) fn write(
    services: &Services,
    args: WriteArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let session = session_of(call)?;
    let raw = args.file_path.as_str();
    let path = resolve_absolute(services, raw, "file_path")?;
    let content = args.content.into_bytes();
    let (existed, seen) = update(services, &path, raw, |now| match now {
        None => Ok((Some(content), false)),
        Some(now) => {
            require_fresh_read(session, &path, now)?;
            Ok((Some(content), true))
        }
    })?;
    if let Some(seen) = seen {
        session.record(path.abs(), seen);
    }
    let answer = if existed {
        messages::updated(raw)
    } else {
        messages::created(raw)
    };
    Ok(crate::diagnostics::after_write(
        services,
        path.abs(),
        answer,
        call,
    ))
}

pub(crate) fn edit(services: &Services, args: EditArgs, call: &CallContext) -> ToolResult<String> {
    let item = EditItem {
        old_string: args.old_string,
        new_string: args.new_string,
        replace_all: args.replace_all,
    };
    let replace_all = item.replace_all;
    let path = edit_file(
        services,
        &args.file_path,
        &[item],
        call,
        |index, message| {
            debug_assert_eq!(index, 0);
            message
        },
    )?;
    let answer = if replace_all {
        messages::updated_all(&args.file_path)
    } else {
        messages::updated(&args.file_path)
    };
    Ok(crate::diagnostics::after_write(
        services,
        path.abs(),
        answer,
        call,
    ))
}

pub(crate) fn multi_edit(
    services: &Services,
    args: MultiEditArgs,
    call: &CallContext,
) -> ToolResult<String> {
    if args.edits.is_empty() {
        return Err(check(
            ErrorCode::InvalidInput,
            "edits is empty; give at least one edit.",
        ));
    }
    let total = args.edits.len();
    let path = edit_file(
        services,
        &args.file_path,
        &args.edits,
        call,
        |index, message| messages::in_edit(index + 1, total, &message),
    )?;
    let answer = messages::updated_multi(&args.file_path, total);
    Ok(crate::diagnostics::after_write(
        services,
        path.abs(),
        answer,
        call,
    ))
}

/// Applies `edits` to one file, in order, all or nothing. `name` words a
/// failure of edit `index`. Returns the file edited.
fn edit_file(
    services: &Services,
    raw: &str,
    edits: &[EditItem],
    call: &CallContext,
    name: impl Fn(usize, String) -> String,
) -> ToolResult<ConfinedPath> {
    let session = session_of(call)?;
    let named = |index: usize, err: ToolError| rename(err, |message| name(index, message));
    for (index, item) in edits.iter().enumerate() {
        if item.old_string == item.new_string {
            return Err(named(
                index,
                check(ErrorCode::InvalidInput, messages::NO_CHANGES),
            ));
        }
    }
    let path = resolve_absolute(services, raw, "file_path")?;
    let creating = edits[0].old_string.is_empty();
    let notebook = extension(raw) == "ipynb";
    let ((), seen) = update(services, &path, raw, |now| {
        let Some(now) = now else {
            if !creating {
                return Err(check(
                    ErrorCode::NotFound,
                    messages::file_missing(suggestion(services, raw).as_deref()),
                ));
            }
            // A new file: no read needed; the later edits apply to it.
            let mut text = edits[0].new_string.clone();
            for (index, item) in edits.iter().enumerate().skip(1) {
                text = apply(&text, item).map_err(|err| named(index, err))?;
            }
            return Ok((Some(text.into_bytes()), ()));
        };
        let (bom, text) = match now.bytes.strip_prefix(UTF8_BOM) {
            Some(rest) => (true, rest),
            None => (false, &now.bytes[..]),
        };
        let Ok(text) = std::str::from_utf8(text) else {
            return Err(check(ErrorCode::IsBinary, messages::NOT_UTF8));
        };
        if creating && !text.trim().is_empty() {
            return Err(named(
                0,
                check(ErrorCode::InvalidInput, messages::ALREADY_EXISTS),
            ));
        }
        if notebook {
            return Err(check(ErrorCode::InvalidInput, messages::USE_NOTEBOOK_EDIT));
        }
        require_fresh_read(session, &path, now)?;
        // The first edit works on the file's text as read, later ones on
        // the result of the one before: no copy of the file is made first.
        let mut edited: Option<String> = None;
        for (index, item) in edits.iter().enumerate() {
            let current = edited.as_deref().unwrap_or(text);
            edited = Some(if item.old_string.is_empty() && current.trim().is_empty() {
                // An empty (or blank) file takes new_string whole.
                item.new_string.clone()
            } else {
                apply(current, item).map_err(|err| named(index, err))?
            });
        }
        let edited = edited.unwrap_or_else(|| text.to_owned()).into_bytes();
        let bytes = if bom {
            [UTF8_BOM, &edited].concat()
        } else {
            edited
        };
        Ok((Some(bytes), ()))
    })?;
    if let Some(seen) = seen {
        session.record(path.abs(), seen);
    }
    Ok(path)
}

/// The same error with its message reworded.
fn rename(err: ToolError, reword: impl FnOnce(String) -> String) -> ToolError {
    err.reworded(|message| reword(message.to_owned()))
}

/// The engine's locked update, with its refusals in Claude Code's words.
fn update<R>(
    services: &Services,
    path: &ConfinedPath,
    raw: &str,
    decide: impl FnOnce(Option<&Snapshot>) -> ToolResult<(Option<Vec<u8>>, R)>,
) -> ToolResult<(R, Option<Seen>)> {
    let files = services.files();
    let max = files.limits().max_file_bytes;
    // Claude Code's size check comes first, worded with the size seen.
    if let Ok(meta) = files.workspace().metadata(path)
        && meta.is_file()
        && meta.len() > max
    {
        return Err(check(
            ErrorCode::TooLarge,
            messages::too_large_to_edit(meta.len(), max),
        ));
    }
    files
        .update_locked(path, decide)
        .map_err(|err| match err.code() {
            ErrorCode::NotAFile => thrown(ErrorCode::NotAFile, messages::is_directory(raw)),
            _ => err,
        })
}

/// The session must have read the file, and the file must still be what
/// it saw (the same modification time, or else the same bytes).
fn require_fresh_read(
    session: &ClaudeCodeSession,
    path: &ConfinedPath,
    now: &Snapshot,
) -> ToolResult<()> {
    let Some(seen) = session.seen(path.abs()) else {
        return Err(check(ErrorCode::InvalidInput, messages::NOT_READ));
    };
    if !seen.still_current(now) {
        return Err(check(
            ErrorCode::InvalidInput,
            messages::MODIFIED_SINCE_READ,
        ));
    }
    Ok(())
}

/// One edit of `text`, Claude Code's way.
fn apply(text: &str, item: &EditItem) -> ToolResult<String> {
    let old = item.old_string.as_str();
    if old.is_empty() {
        // Only the first edit of a new (or blank) file may have an empty
        // old_string.
        return Err(check(ErrorCode::InvalidInput, messages::ALREADY_EXISTS));
    }
    let Some(found) = find_actual(text, old, &item.new_string) else {
        let mut message = messages::not_found_in_file(old);
        let note = closest_regions_note(text, old);
        if !note.is_empty() {
            message.push_str("\n\n");
            message.push_str(&note);
        }
        return Err(check(ErrorCode::NoMatch, message));
    };
    let mut actual = found.old;
    let mut first = found.at;
    let new = found.new;
    // Deleting a whole line takes its line break along.
    if new.is_empty() && !actual.ends_with('\n') {
        let with_break = format!("{actual}\n");
        if let Some(at) = memmem::find(text.as_bytes(), with_break.as_bytes()) {
            actual = with_break;
            first = at;
        }
    }
    // The search goes on from the first occurrence (the text before it was
    // searched already); the splice then copies the file once (`str::replace`
    // would search it all again, several times slower).
    let rest = first + actual.len();
    let starts: Vec<usize> = std::iter::once(first)
        .chain(memmem::find_iter(&text.as_bytes()[rest..], actual.as_bytes()).map(|at| at + rest))
        .collect();
    if starts.len() > 1 && !item.replace_all {
        return Err(check(
            ErrorCode::AmbiguousMatch,
            messages::several_matches(starts.len(), old),
        ));
    }
    let regions = starts.iter().map(|&start| (start, start + actual.len()));
    Ok(splice_all(text, regions, &new))
}

/// What old_string is in the file, and what new_string becomes there.
#[derive(Debug, PartialEq, Eq)]
struct Found {
    old: String,
    new: String,
    /// Where `old` first occurs.
    at: usize,
}

/// old_string as it occurs in `text`: exactly; else with the file's CRLF
/// line breaks; else with curly quotes read as straight ones (new_string
/// then takes the file's quote style, curly or straight, as the engine's
/// tolerant edits do). Nothing looser.
fn find_actual(text: &str, old: &str, new: &str) -> Option<Found> {
    let position = |needle: &str| memmem::find(text.as_bytes(), needle.as_bytes());
    let mut tries = vec![(old.to_owned(), new.to_owned())];
    if old.contains('\n') && LineEnding::detect(text) == LineEnding::CrLf {
        let crlf = LineEnding::CrLf;
        tries.push((crlf.apply(old).into_owned(), crlf.apply(new).into_owned()));
    }
    for (old, new) in &tries {
        if let Some(at) = position(old) {
            return Some(Found {
                old: old.clone(),
                new: new.clone(),
                at,
            });
        }
    }
    for (old, new) in &tries {
        if let Some(actual) = find_with_straight_quotes(text, old) {
            let (new, _) = restyle(old, &actual, new);
            let at = position(&actual)?;
            return Some(Found {
                old: actual,
                new,
                at,
            });
        }
    }
    None
}

fn straight(ch: char) -> char {
    match ch {
        '\u{2018}' | '\u{2019}' => '\'',
        '\u{201C}' | '\u{201D}' => '"',
        other => other,
    }
}

/// The part of `text` that reads as `old` once curly quotes on both sides
/// are read as straight ones.
fn find_with_straight_quotes(text: &str, old: &str) -> Option<String> {
    let norm_old: String = old.chars().map(straight).collect();
    if !text.contains(['\u{2018}', '\u{2019}', '\u{201C}', '\u{201D}']) && norm_old == old {
        return None;
    }
    // Straight quotes are one byte and curly ones three, so byte offsets
    // differ: compare character by character.
    let old_chars: Vec<char> = norm_old.chars().collect();
    let first = *old_chars.first()?;
    let indices: Vec<(usize, char)> = text.char_indices().collect();
    'start: for start in 0..indices.len() {
        if straight(indices[start].1) != first || start + old_chars.len() > indices.len() {
            continue;
        }
        for (offset, want) in old_chars.iter().enumerate() {
            if straight(indices[start + offset].1) != *want {
                continue 'start;
            }
        }
        let from = indices[start].0;
        let to = indices
            .get(start + old_chars.len())
            .map_or(text.len(), |(at, _)| *at);
        return Some(text[from..to].to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(old: &str, new: &str, all: bool) -> EditItem {
        EditItem {
            old_string: old.into(),
            new_string: new.into(),
            replace_all: all,
        }
    }

    #[test]
    fn exact_matches_replace_once_or_all() {
        assert_eq!(apply("a b a", &item("b", "c", false)).unwrap(), "a c a");
        assert_eq!(apply("a b a", &item("a", "x", true)).unwrap(), "x b x");
        let err = apply("a b a", &item("a", "x", false)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::AmbiguousMatch);
        assert_eq!(
            err.message(),
            "Found 2 matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: a"
        );
        // `$` has no special meaning in the replacement.
        assert_eq!(apply("x", &item("x", "$&$1", false)).unwrap(), "$&$1");
    }

    #[test]
    fn not_found_says_so_then_points_to_the_closest_region() {
        let text = "fn main() {\n    let total = 1;\n}\n";
        let err = apply(text, &item("    let totl = 1;", "x", false)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::NoMatch);
        let message = err.message();
        assert!(
            message.starts_with("String to replace not found in file.\nString:     let totl = 1;\n\nThe closest region of the file:\n- line 2, "),
            "{message}"
        );
    }

    #[test]
    fn curly_quotes_match_straight_ones_and_new_text_takes_the_curly_style() {
        let text = "She said \u{201C}hello\u{201D} and it\u{2019}s fine.\n";
        let out = apply(text, &item("said \"hello\"", "said \"goodbye\"", false)).unwrap();
        assert_eq!(
            out,
            "She said \u{201C}goodbye\u{201D} and it\u{2019}s fine.\n"
        );
        let out = apply(text, &item("it's fine", "it's 'really' fine", false)).unwrap();
        assert_eq!(
            out,
            "She said \u{201C}hello\u{201D} and it\u{2019}s \u{2018}really\u{2019} fine.\n"
        );
        // Curly quotes of the caller where the file has straight ones are
        // written straight: the file's style, not the caller's.
        let code = "parser.add_argument(\"--dry-run\", action=\"store_true\")\n";
        let out = apply(
            code,
            &item(
                "add_argument(\u{201C}--dry-run\u{201D}, action=\u{201C}store_true\u{201D})",
                "add_argument(\u{201C}--dry-run\u{201D}, action=\u{201C}store_false\u{201D})",
                false,
            ),
        )
        .unwrap();
        assert_eq!(
            out,
            "parser.add_argument(\"--dry-run\", action=\"store_false\")\n"
        );
        // Nothing looser: other characters must be exact.
        assert!(apply(text, &item("said \"Hello\"", "x", false)).is_err());
    }

    #[test]
    fn a_crlf_file_matches_lf_old_string_and_stays_crlf() {
        let text = "one\r\ntwo\r\nthree\r\n";
        let out = apply(text, &item("one\ntwo\n", "1\n2\n", false)).unwrap();
        assert_eq!(out, "1\r\n2\r\nthree\r\n");
    }

    #[test]
    fn deleting_a_line_takes_its_break() {
        assert_eq!(apply("a\nb\nc\n", &item("b", "", false)).unwrap(), "a\nc\n");
        assert_eq!(apply("a b", &item("b", "", false)).unwrap(), "a ");
    }
}
