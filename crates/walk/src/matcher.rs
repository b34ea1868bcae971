//! Whether one path is ignored, asked path by path rather than found by
//! walking: for answers that name files some other way (a language server's
//! locations, the files of a rename) and should agree with what the walk,
//! and so `grep`, `glob` and the index, would show.
//!
//! The answer is the walk's by construction: the same rule levels
//! ([`read_level`](crate::rules::read_level), read beneath the root's
//! descriptor), the same precedence ([`is_ignored`]), the same global
//! excludes, `.git` skipped, and a file below an ignored directory ignored
//! however the rules below read, since the walk never enters that
//! directory. Each directory's rules are read once per matcher, so asking
//! about many files of one tree costs a hash look-up per directory on the
//! way.

use std::collections::HashMap;
use std::path::{Component, Path};
use std::sync::Arc;

use agent_tools_confine::Workspace;
use agent_tools_error::ToolResult;
use cap_std::fs::Dir;
use ignore::gitignore::Gitignore;

use crate::beneath;
use crate::rules::{RuleLevel, global_excludes_bytes, global_rules, is_ignored, read_level};

/// Answers "is this path ignored" for paths beneath one root, with the
/// rules the walk honours when ignore files are respected: `.ignore`,
/// `.gitignore` and `.git/info/exclude` of the root and every directory
/// down to the path (never above the root, as the walk never reads there),
/// the user's global excludes, and `.git` itself.
///
/// ```
/// use agent_tools_walk::IgnoreMatcher;
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir_all(dir.path().join("node_modules/lib")).unwrap();
/// std::fs::write(dir.path().join(".gitignore"), "node_modules/\n").unwrap();
/// let root = cap_std::fs::Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap();
/// let mut ignored = IgnoreMatcher::new(root);
/// assert!(ignored.is_ignored("node_modules/lib/index.js", false));
/// assert!(!ignored.is_ignored("src/main.js", false));
/// ```
pub struct IgnoreMatcher {
    root: Dir,
    global: Option<Gitignore>,
    /// The directories asked about so far, by root-relative path (`""` for
    /// the root).
    dirs: HashMap<String, DirRules>,
}

/// What a directory means for the paths below it.
#[derive(Clone)]
enum DirRules {
    /// It (or a directory above it) is ignored, or it is `.git`: the walk
    /// does not enter it, so everything below is ignored.
    Ignored,
    /// The rules in force for its entries: its own linked over its
    /// parents' (its parents' alone when it could not be opened, for a
    /// directory that cannot be opened holds no rules to read).
    Rules(Option<Arc<RuleLevel>>),
}

impl IgnoreMatcher {
    /// A matcher for paths beneath `root` (the directory the paths are
    /// relative to, where matching is anchored), with the user's global
    /// excludes as the walk reads them.
    pub fn new(root: Dir) -> Self {
        Self::with_global_excludes(root, global_excludes_bytes().as_deref())
    }

    /// The same with the global excludes given as the bytes of an excludes
    /// file (`None` for none).
    pub fn with_global_excludes(root: Dir, global_excludes: Option<&[u8]>) -> Self {
        IgnoreMatcher {
            root,
            global: global_rules(global_excludes),
            dirs: HashMap::new(),
        }
    }

    /// A matcher for the workspace's root, for absolute paths
    /// ([`is_ignored_abs`](WorkspaceIgnores::is_ignored_abs)).
    pub fn for_workspace(workspace: &Workspace) -> ToolResult<WorkspaceIgnores<'_>> {
        let root = workspace.open_dir(&workspace.root_path())?;
        Ok(WorkspaceIgnores {
            workspace,
            matcher: Self::new(root),
        })
    }

    /// Whether `rel` (relative to the root, `/`-separated; `is_dir` when it
    /// names a directory) is ignored: it lies in `.git`, a directory on the
    /// way to it is ignored, or the rules in force in its directory ignore
    /// it. A path that is empty, or holds `.` or `..` components, is not
    /// one the walk could yield under another name: it is answered as not
    /// ignored, so nothing is hidden on a guess.
    pub fn is_ignored(&mut self, rel: &str, is_dir: bool) -> bool {
        let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
        let Some((_name, dirs)) = parts.split_last() else {
            return false;
        };
        if parts.iter().any(|p| *p == "." || *p == "..") {
            return false;
        }
        // The walk skips `.git` (file or directory) wherever it appears.
        if parts.contains(&".git") {
            return true;
        }
        let mut dir_rel = String::new();
        let mut rules = self.rules_of_root();
        for part in dirs {
            let parent = match rules {
                DirRules::Ignored => return true,
                DirRules::Rules(level) => level,
            };
            if !dir_rel.is_empty() {
                dir_rel.push('/');
            }
            dir_rel.push_str(part);
            rules = self.rules_of(&dir_rel, parent);
        }
        let rel = parts.join("/");
        match rules {
            DirRules::Ignored => true,
            DirRules::Rules(level) => {
                is_ignored(level.as_deref(), self.global.as_ref(), &rel, is_dir)
            }
        }
    }

    fn rules_of_root(&mut self) -> DirRules {
        if let Some(known) = self.dirs.get("") {
            return known.clone();
        }
        let level = read_level(&self.root, "", None, None, &mut |_, _| {});
        let rules = DirRules::Rules(level);
        self.dirs.insert(String::new(), rules.clone());
        rules
    }

    /// The rules in force below the directory `dir_rel`, whose parent's
    /// rules are `parent`.
    fn rules_of(&mut self, dir_rel: &str, parent: Option<Arc<RuleLevel>>) -> DirRules {
        if let Some(known) = self.dirs.get(dir_rel) {
            return known.clone();
        }
        let rules = if is_ignored(parent.as_deref(), self.global.as_ref(), dir_rel, true) {
            DirRules::Ignored
        } else {
            match beneath::open_dir(&self.root, dir_rel) {
                // An ignore file that cannot be read is the walk's note to
                // make; here it is skipped as the walk skips it.
                Ok(dir) => DirRules::Rules(read_level(&dir, dir_rel, parent, None, &mut |_, _| {})),
                Err(_) => DirRules::Rules(parent),
            }
        };
        self.dirs.insert(dir_rel.to_owned(), rules.clone());
        rules
    }
}

/// An [`IgnoreMatcher`] for a workspace's root, asked with absolute paths.
pub struct WorkspaceIgnores<'a> {
    workspace: &'a Workspace,
    matcher: IgnoreMatcher,
}

impl WorkspaceIgnores<'_> {
    /// Whether the file at `abs` is ignored. A path outside the root is
    /// not (no rules above the root are read), nor is one whose name is
    /// not UTF-8 (the walk cannot name it either way).
    pub fn is_ignored_abs(&mut self, abs: &Path) -> bool {
        let Some(rel) = self.workspace.strip_root(abs) else {
            return false;
        };
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return false;
        }
        match rel.to_str() {
            Some(rel) => self.matcher.is_ignored(rel, false),
            None => false,
        }
    }

    /// Whether the root-relative `rel` is ignored (see
    /// [`IgnoreMatcher::is_ignored`]).
    pub fn is_ignored(&mut self, rel: &str, is_dir: bool) -> bool {
        self.matcher.is_ignored(rel, is_dir)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::atomic::AtomicBool;

    use agent_tools_confine::Confinement;

    use super::*;
    use crate::{Flow, Walk};

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap_or(root)).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
    }

    /// The files the walk yields with ignore files respected, or all.
    fn walked(ws: &Workspace, respect_gitignore: bool) -> BTreeSet<String> {
        let base = ws.root_path();
        let cancel = AtomicBool::new(false);
        let walk = Walk {
            workspace: ws,
            base: &base,
            respect_gitignore,
            cancel: &cancel,
            visit_dirs: false,
            max_depth: None,
            exclude: None,
        };
        walk.run(
            || (),
            |_, entry, sink| {
                sink.found.push(entry.rel.to_owned());
                Flow::Continue
            },
        )
        .unwrap_or_else(|e| panic!("{e}"))
        .found
        .into_iter()
        .collect()
    }

    /// A tree exercising every source of rules and their precedence.
    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        write(
            root,
            ".gitignore",
            "*.log\nbuild/\n/top-only.txt\ndocs/*.md\n!docs/keep.md\nlogs/\n*.tmp\n",
        );
        // The root's .gitignore does not name node_modules: .ignore does.
        write(root, ".ignore", "*.bak\nnode_modules/\n");
        for rel in [
            "src/main.py",
            "src/app.log",
            "top-only.txt",
            "src/top-only.txt",
            "docs/a.md",
            "docs/keep.md",
            "docs/deep/b.md",
            "build/out.js",
            "build/keep.js",
            "out/logs",
            "logs/today",
            "notes.bak",
            "a/keep.log",
            "a/other.log",
            "a/secret.txt",
            "a/b/c.txt",
            "a/b/d.py",
            "sub/x.tmp",
            "sub/y.gen",
            "sub/z.bak",
            "sub/ok.py",
            "wt/x.tmp",
            "node_modules/pkg/index.js",
            ".hidden/file",
            ".git/config",
        ] {
            write(root, rel, "x\n");
        }
        // An ignored directory's own rules cannot bring it back.
        write(root, "build/.gitignore", "!*\n");
        write(root, "a/.gitignore", "!keep.log\nsecret*\n");
        // `.ignore` outranks `.gitignore` at any depth.
        write(root, "a/b/.ignore", "*.txt\n");
        write(root, "a/b/.gitignore", "!*.txt\n");
        // A nested repository: the root's .gitignore stops at its top, its
        // own exclude file applies, the root's .ignore goes on.
        write(root, "sub/.git/info/exclude", "*.gen\n");
        // A worktree's `.git` is a file: still a repository's top.
        write(root, "wt/.git", "gitdir: elsewhere\n");
        dir
    }

    #[test]
    fn the_matcher_says_ignored_exactly_for_the_files_the_walk_leaves_out() {
        let dir = tree();
        let ws =
            Workspace::open(dir.path(), Confinement::Confined).unwrap_or_else(|e| panic!("{e}"));
        let all = walked(&ws, false);
        let kept = walked(&ws, true);
        assert!(all.len() > kept.len() + 10, "{all:?}\n{kept:?}");
        let mut ignores = IgnoreMatcher::for_workspace(&ws).unwrap_or_else(|e| panic!("{e}"));
        for rel in &all {
            assert_eq!(
                ignores.is_ignored(rel, false),
                !kept.contains(rel),
                "{rel}: the walk {}",
                if kept.contains(rel) {
                    "yields it"
                } else {
                    "leaves it out"
                }
            );
            assert_eq!(
                ignores.is_ignored_abs(&dir.path().join(rel)),
                !kept.contains(rel),
                "{rel} asked by absolute path"
            );
        }
        // Spot checks, so a walk that changed its mind fails here too.
        for (rel, ignored) in [
            ("src/main.py", false),
            ("src/app.log", true),
            ("top-only.txt", true),
            ("src/top-only.txt", false),
            ("docs/keep.md", false),
            ("docs/deep/b.md", false),
            ("build/keep.js", true),
            ("out/logs", false),
            ("logs/today", true),
            ("a/keep.log", false),
            ("a/secret.txt", true),
            ("a/b/c.txt", true),
            ("sub/x.tmp", false),
            ("sub/y.gen", true),
            ("sub/z.bak", true),
            ("wt/x.tmp", false),
            ("node_modules/pkg/index.js", true),
            (".git/config", true),
        ] {
            assert_eq!(ignores.is_ignored(rel, false), ignored, "{rel}");
        }
    }

    #[test]
    fn answers_follow_the_same_rules_when_asked_again_and_for_missing_files() {
        let dir = tree();
        let root = Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut ignores = IgnoreMatcher::with_global_excludes(root, None);
        for _ in 0..2 {
            assert!(ignores.is_ignored("build/new/deeper.js", false));
            assert!(ignores.is_ignored("missing/x.log", false));
            assert!(!ignores.is_ignored("missing/x.py", false));
            assert!(ignores.is_ignored("logs", true));
            assert!(!ignores.is_ignored("logs", false));
        }
        assert!(!ignores.is_ignored("", false));
        assert!(!ignores.is_ignored("../x.log", false));
        assert!(!ignores.is_ignored("a/./x.log", false));
    }

    #[test]
    fn global_excludes_apply_below_every_other_rule() {
        let dir = tree();
        let open = || {
            Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority())
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let mut none = IgnoreMatcher::with_global_excludes(open(), None);
        let mut global = IgnoreMatcher::with_global_excludes(open(), Some(b"*.py\n"));
        assert!(!none.is_ignored("src/main.py", false));
        assert!(global.is_ignored("src/main.py", false));
        // A project rule that keeps the file outranks the global excludes.
        assert!(!global.is_ignored("a/keep.log", false));
    }

    #[test]
    fn paths_outside_the_root_are_not_ignored() {
        let dir = tree();
        let ws = Workspace::open(dir.path().join("src"), Confinement::Confined)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut ignores = IgnoreMatcher::for_workspace(&ws).unwrap_or_else(|e| panic!("{e}"));
        // The rules above the root are never read: `app.log` is ignored by
        // the parent's .gitignore only.
        assert!(!ignores.is_ignored_abs(&dir.path().join("src/app.log")));
        assert!(!ignores.is_ignored_abs(&dir.path().join("build/out.js")));
        assert!(!ignores.is_ignored_abs(Path::new("/etc/passwd")));
    }
}
