//! The ignore rules, one set for the file tools' walk with ignore files
//! respected and for the paths the workspace index holds. Hidden files are kept; `.ignore`, `.gitignore`,
//! `.git/info/exclude` and the user's global excludes are honoured with
//! git's precedence (even outside a repository); a directory named `.git`
//! is never entered; symlinks are never followed; only directories and
//! regular files with UTF-8 names count. Matching is the `ignore` crate's
//! gitignore matcher, fed with the bytes of ignore files read here.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use agent_tools_confine::{FileKind, OpenRegularError, open_regular_at};

use cap_std::fs::Dir;

use ignore::Match;

use crate::beneath;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// An ignore file larger than this is not read: real ones are a few
/// kilobytes, and reading one is done before any file of its directory is
/// visited. The walk skips such a file with a note, which the index cannot
/// repeat, so the index serves a tree that has one by scanning.
pub const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// The names in a directory that change how its subtree is ignored.
pub const RULE_FILES: [&str; 2] = [".ignore", ".gitignore"];

/// The ignore rules of one directory, linked to those of its parents. The
/// file tools' walk and the index both decide with these, so the two agree
/// by construction.
#[derive(Debug)]
pub struct RuleLevel {
    parent: Option<Arc<RuleLevel>>,
    /// Length of this directory's root-relative path plus its `/` (0 for
    /// the root): where the paths its rules see begin.
    prefix_len: usize,
    ignore: Option<Gitignore>,
    gitignore: Option<Gitignore>,
    exclude: Option<Gitignore>,
    /// The directory holds `.git` (file or directory): a repository's top,
    /// above which `.gitignore` and the exclude file stop applying.
    has_git: bool,
}

/// What reading a directory's rules ran into that the walk reports as a
/// note (an ignore file that is not a regular file, or too large, or
/// unreadable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleTrouble {
    /// The ignore file's path relative to where matching is anchored.
    pub path: String,
}

/// Reads the rules of the directory open as `dir` (root-relative
/// `dir_rel`) and links them over `parent`. Returns `parent` when it adds
/// nothing. Every rule file is opened beneath the directory's descriptor.
pub fn level_for(
    dir: &Dir,
    dir_rel: &str,
    parent: Option<Arc<RuleLevel>>,
    troubles: &mut Vec<RuleTrouble>,
) -> Option<Arc<RuleLevel>> {
    read_level(dir, dir_rel, parent, None, &mut |name, _why| {
        troubles.push(RuleTrouble {
            path: join(dir_rel, name),
        });
    })
}

/// Which of the names that matter for ignoring a directory its listing
/// holds, when the caller has listed it already (so absent files are not
/// looked for).
#[derive(Debug, Clone, Copy, Default)]
pub struct RuleNames {
    /// `.ignore` is there.
    pub ignore: bool,
    /// `.gitignore` is there.
    pub gitignore: bool,
    /// What `.git` is, when it is there.
    pub git: Option<FileKind>,
}

impl RuleNames {
    /// Whether any of them is there.
    pub fn any(&self) -> bool {
        self.ignore || self.gitignore || self.git.is_some()
    }
}

/// The one reading of a directory's rules, for the walk and the index:
/// its `.ignore`, `.gitignore` and (when `.git` and `.git/info` are real
/// directories) `.git/info/exclude`, each opened beneath `dir` without
/// following a symlink, linked over `parent` at `anchor_rel` (the
/// directory's path relative to where matching is anchored). `names`, when
/// given, says which of them the directory's listing holds; otherwise they
/// are looked for. A rule file that is there but is not read (not a
/// regular file, too large, unreadable) is skipped and told to `trouble`
/// with its name below `dir` and why. Returns `parent` when the directory
/// adds nothing.
pub fn read_level(
    dir: &Dir,
    anchor_rel: &str,
    parent: Option<Arc<RuleLevel>>,
    names: Option<RuleNames>,
    trouble: &mut dyn FnMut(&str, String),
) -> Option<Arc<RuleLevel>> {
    let names = names.unwrap_or_else(|| RuleNames {
        ignore: true,
        gitignore: true,
        git: beneath::metadata(dir, ".git")
            .ok()
            .map(|meta| FileKind::of(meta.file_type())),
    });
    let mut load = |dir: &Dir, name: &str, shown: &str| match read_rules(dir, name) {
        Ok(rules) => rules,
        Err(why) => {
            trouble(shown, why);
            None
        }
    };
    let ignore = if names.ignore {
        load(dir, ".ignore", ".ignore")
    } else {
        None
    };
    let gitignore = if names.gitignore {
        load(dir, ".gitignore", ".gitignore")
    } else {
        None
    };
    let exclude = if names.git == Some(FileKind::Directory) {
        let info = beneath::open_subdir(dir, OsStr::new(".git"))
            .and_then(|git| beneath::open_subdir(&git, OsStr::new("info")));
        match info {
            Ok(info) => load(&info, "exclude", ".git/info/exclude"),
            Err(_) => None,
        }
    } else {
        None
    };
    RuleLevel::link(
        parent,
        anchor_rel,
        [ignore, gitignore, exclude],
        names.git.is_some(),
    )
}

impl RuleLevel {
    /// The rules of the directory at `dir_rel` (relative to where matching
    /// is anchored; empty for the anchor itself): its `.ignore`,
    /// `.gitignore` and `.git/info/exclude` rules, in that order, and
    /// whether it holds `.git`, linked over `parent`. Returns `parent` when
    /// the directory adds nothing.
    pub fn link(
        parent: Option<Arc<RuleLevel>>,
        dir_rel: &str,
        [ignore, gitignore, exclude]: [Option<Gitignore>; 3],
        has_git: bool,
    ) -> Option<Arc<RuleLevel>> {
        if ignore.is_none() && gitignore.is_none() && exclude.is_none() && !has_git {
            return parent;
        }
        Some(Arc::new(RuleLevel {
            parent,
            prefix_len: if dir_rel.is_empty() {
                0
            } else {
                dir_rel.len() + 1
            },
            ignore,
            gitignore,
            exclude,
            has_git,
        }))
    }
}

/// Whether the root-relative `rel` is ignored under `level` (the rules of
/// its parent directory) and the global excludes. For each of `.ignore`,
/// `.gitignore` and the exclude file the deepest matching rule decides;
/// `.ignore` outranks `.gitignore`, which outranks the exclude file, which
/// outranks the global excludes.
pub fn is_ignored(
    level: Option<&RuleLevel>,
    global: Option<&Gitignore>,
    rel: &str,
    is_dir: bool,
) -> bool {
    let mut by_ignore = Match::None;
    let mut by_gitignore = Match::None;
    let mut by_exclude = Match::None;
    let mut above_repository = false;
    let mut here = level;
    while let Some(rules) = here {
        let sub = rel.get(rules.prefix_len..).unwrap_or(rel);
        if by_ignore.is_none()
            && let Some(set) = &rules.ignore
        {
            by_ignore = set.matched(sub, is_dir).map(|_| ());
        }
        if !above_repository {
            if by_gitignore.is_none()
                && let Some(set) = &rules.gitignore
            {
                by_gitignore = set.matched(sub, is_dir).map(|_| ());
            }
            if by_exclude.is_none()
                && let Some(set) = &rules.exclude
            {
                by_exclude = set.matched(sub, is_dir).map(|_| ());
            }
        }
        above_repository |= rules.has_git;
        here = rules.parent.as_deref();
    }
    let decided = by_ignore.or(by_gitignore).or(by_exclude);
    let decided = match (&decided, global) {
        (Match::None, Some(global)) => global.matched(rel, is_dir).map(|_| ()),
        _ => decided,
    };
    decided.is_ignore()
}

/// Reads one ignore file, `name` in `dir`: a regular file, not through a
/// symlink, at most [`MAX_IGNORE_FILE_BYTES`]. `Ok(None)` when it is
/// absent; `Err(why)` when it is there but was skipped.
fn read_rules(dir: &Dir, name: &str) -> Result<Option<Gitignore>, String> {
    let (file, _) = match open_regular_at(dir, Path::new(name)) {
        Ok(opened) => opened,
        Err(OpenRegularError::Io(err)) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None);
        }
        Err(OpenRegularError::Io(err)) => return Err(format!("ignore file not read: {err}")),
        Err(OpenRegularError::NotRegular(kind)) => {
            return Err(format!("ignore file not read: it is {kind}"));
        }
    };
    let mut bytes = Vec::new();
    file.take(MAX_IGNORE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("ignore file not read: {err}"))?;
    if bytes.len() as u64 > MAX_IGNORE_FILE_BYTES {
        return Err(format!(
            "ignore file not read: larger than {MAX_IGNORE_FILE_BYTES} bytes"
        ));
    }
    Ok(Some(rules_from_bytes(&bytes)))
}

/// Gitignore rules from an ignore file's bytes, anchored at its directory:
/// a UTF-8 byte-order mark and `\r` line ends are dropped, and lines that
/// are not UTF-8 or not valid globs are skipped, as git skips them.
pub fn rules_from_bytes(bytes: &[u8]) -> Gitignore {
    let mut builder = GitignoreBuilder::new("");
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    for line in bytes.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Ok(line) = std::str::from_utf8(line) {
            let _ = builder.add_line(None, line);
        }
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// The bytes of the user's global excludes file (`core.excludesFile`, or
/// `~/.config/git/ignore`), if it is a readable regular file of bounded
/// size. Kept as bytes so a later query can tell whether it changed.
pub fn global_excludes_bytes() -> Option<Vec<u8>> {
    let path = ignore::gitignore::gitconfig_excludes_path()?;
    // The file lives outside the workspace and belongs to the user running
    // the server, so a symlink to it is followed; it must still be regular.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_IGNORE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= MAX_IGNORE_FILE_BYTES).then_some(bytes)
}

/// The global excludes as rules.
pub fn global_rules(bytes: Option<&[u8]>) -> Option<Gitignore> {
    bytes.map(rules_from_bytes)
}

/// `dir/name`, or `name` at the root.
pub fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// The parent of a root-relative path (`""` for a top-level entry).
pub fn parent_of(rel: &str) -> &str {
    rel.rfind('/').map_or("", |at| &rel[..at])
}

/// The last component of a root-relative path.
pub fn name_of(rel: &str) -> &str {
    rel.rfind('/').map_or(rel, |at| &rel[at + 1..])
}

/// Whether `rel` is `dir` or lies beneath it (every path lies beneath `""`).
pub fn is_within(rel: &str, dir: &str) -> bool {
    dir.is_empty()
        || (rel.starts_with(dir) && (rel.len() == dir.len() || rel.as_bytes()[dir.len()] == b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(
        root: &std::path::Path,
        rel: &str,
        parent: Option<Arc<RuleLevel>>,
    ) -> Option<Arc<RuleLevel>> {
        let mut troubles = Vec::new();
        let base = std::fs::File::open(root).unwrap_or_else(|e| panic!("{e}"));
        let dir = beneath::open_dir(&base, rel).unwrap_or_else(|e| panic!("{e}"));
        let level = level_for(&dir, rel, parent, &mut troubles);
        assert!(troubles.is_empty(), "{troubles:?}");
        level
    }

    #[test]
    fn deeper_rules_and_negation_decide() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(dir.path().join("a/b"))?;
        std::fs::write(dir.path().join(".gitignore"), "*.log\nbuild/\n")?;
        std::fs::write(dir.path().join("a/.gitignore"), "!keep.log\n")?;
        let top = level(dir.path(), "", None);
        let a = level(dir.path(), "a", top.clone());
        assert!(is_ignored(top.as_deref(), None, "x.log", false));
        assert!(is_ignored(top.as_deref(), None, "build", true));
        assert!(!is_ignored(top.as_deref(), None, "build", false));
        assert!(is_ignored(a.as_deref(), None, "a/x.log", false));
        assert!(!is_ignored(a.as_deref(), None, "a/keep.log", false));
        Ok(())
    }

    #[test]
    fn dot_ignore_outranks_gitignore_and_repository_tops_stop_gitignore() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(dir.path().join("repo/.git"))?;
        std::fs::write(dir.path().join(".gitignore"), "*.tmp\n")?;
        std::fs::write(dir.path().join(".ignore"), "*.bak\n")?;
        std::fs::write(dir.path().join("repo/.gitignore"), "!*.bak\n")?;
        let top = level(dir.path(), "", None);
        let repo = level(dir.path(), "repo", top.clone());
        // The parent's .gitignore stops at the repository's top ...
        assert!(!is_ignored(repo.as_deref(), None, "repo/x.tmp", false));
        // ... but its .ignore does not, and outranks the repo's .gitignore.
        assert!(is_ignored(repo.as_deref(), None, "repo/x.bak", false));
        Ok(())
    }

    #[test]
    fn an_ignore_file_that_is_a_symlink_is_trouble() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("real"), "*.x\n")?;
        std::os::unix::fs::symlink("real", dir.path().join(".gitignore"))?;
        let mut troubles = Vec::new();
        let base = beneath::open_dir(std::fs::File::open(dir.path())?, "")?;
        let _ = level_for(&base, "", None, &mut troubles);
        assert_eq!(
            troubles,
            vec![RuleTrouble {
                path: ".gitignore".into()
            }]
        );
        Ok(())
    }

    #[test]
    fn path_helpers() {
        assert_eq!(parent_of("a/b/c"), "a/b");
        assert_eq!(parent_of("c"), "");
        assert_eq!(name_of("a/b/c"), "c");
        assert!(is_within("a/b", "a"));
        assert!(is_within("a", "a"));
        assert!(!is_within("ab", "a"));
        assert!(is_within("x", ""));
    }
}
