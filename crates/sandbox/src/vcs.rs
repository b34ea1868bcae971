//! Which version-control folders a policy keeps read-only.
//!
//! Looked for at every launch, not once at startup: a repository made by
//! one command (`git init`) is protected from the next command on, and a
//! worktree's `.git` file is read as it is now.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::{SandboxPolicy, VCS_DIRS};

/// A `.git` file is one line (`gitdir: PATH`); more than this is not one.
const GIT_FILE_LIMIT: u64 = 4096;

/// The paths to bind read-only for `policy`: each [`VCS_DIRS`] entry at the
/// top of a writable path (folder, `.git` file, or a link's target), and
/// for a `.git` file the git folder it names and that folder's common
/// folder (where a linked worktree's hooks and settings live). Canonical,
/// each beneath a writable path (elsewhere Landlock keeps it read-only
/// already), none beneath another, in order. Empty when the policy lets
/// commands write them.
pub(crate) fn protected_paths(policy: &SandboxPolicy) -> Vec<PathBuf> {
    if policy.vcs_writes() {
        return Vec::new();
    }
    let mut found = Vec::new();
    for root in policy.writable() {
        for name in VCS_DIRS {
            // A link is followed: the mount lands on its target. The link
            // itself stays replaceable (noted in the SPEC). A missing entry
            // (or a dangling link) does not canonicalize.
            let Ok(real) = fs::canonicalize(root.join(name)) else {
                continue;
            };
            if *name == ".git" && fs::metadata(&real).is_ok_and(|m| m.is_file()) {
                found.extend(git_file_targets(&real));
            }
            found.push(real);
        }
    }
    // The writable paths are canonical when the server made them; as given
    // otherwise, so both spellings count.
    let writable: Vec<PathBuf> = policy
        .writable()
        .iter()
        .flat_map(|w| [w.clone(), fs::canonicalize(w).unwrap_or_else(|_| w.clone())])
        .collect();
    found.retain(|path| writable.iter().any(|w| path.starts_with(w)));
    found.sort();
    found.dedup();
    // A path beneath one already protected is read-only through it.
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in found {
        if !kept.iter().any(|outer| path.starts_with(outer)) {
            kept.push(path);
        }
    }
    kept
}

/// The git folder a `.git` file names (`gitdir: PATH`, relative to the
/// file's folder) and, when it has one, its common folder (`commondir`,
/// relative to the git folder). Canonical; missing ones are left out.
fn git_file_targets(git_file: &Path) -> Vec<PathBuf> {
    let Some(base) = git_file.parent() else {
        return Vec::new();
    };
    let Some(gitdir) = read_small(git_file)
        .as_deref()
        .and_then(|text| text.strip_prefix("gitdir:"))
        .map(|rest| base.join(rest.trim()))
        .and_then(|dir| fs::canonicalize(dir).ok())
    else {
        return Vec::new();
    };
    let common = read_small(&gitdir.join("commondir"))
        .map(|text| gitdir.join(text.trim()))
        .and_then(|dir| fs::canonicalize(dir).ok());
    let mut targets = vec![gitdir];
    targets.extend(common);
    targets
}

/// The first line of a small file; `None` when it cannot be read or is
/// not text.
fn read_small(path: &Path) -> Option<String> {
    let mut text = String::new();
    fs::File::open(path)
        .ok()?
        .take(GIT_FILE_LIMIT)
        .read_to_string(&mut text)
        .ok()?;
    Some(text.lines().next().unwrap_or_default().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(roots: &[&Path]) -> SandboxPolicy {
        SandboxPolicy::new(roots.iter().map(|r| r.to_path_buf()).collect(), vec![]).unwrap()
    }

    #[test]
    fn finds_the_folders_at_the_top_of_each_writable_root() {
        let outer = tempfile::tempdir().unwrap();
        let outer = fs::canonicalize(outer.path()).unwrap();
        let (a, b) = (outer.join("a"), outer.join("b"));
        for dir in [a.join(".git/hooks"), a.join("src/.git"), b.join(".hg")] {
            fs::create_dir_all(dir).unwrap();
        }
        fs::write(a.join(".svn"), "not a folder, still protected").unwrap();
        assert_eq!(
            protected_paths(&policy(&[&a, &b])),
            [a.join(".git"), a.join(".svn"), b.join(".hg")]
        );
        assert!(protected_paths(&policy(&[&a]).with_vcs_writes(true)).is_empty());
    }

    #[test]
    fn a_git_file_brings_its_git_folder_and_common_folder_when_writable() {
        let outer = tempfile::tempdir().unwrap();
        let outer = fs::canonicalize(outer.path()).unwrap();
        let main = outer.join("main");
        let wt = outer.join("wt");
        let gitdir = main.join(".git/worktrees/wt");
        fs::create_dir_all(&gitdir).unwrap();
        fs::create_dir_all(&wt).unwrap();
        fs::write(wt.join(".git"), format!("gitdir: {}\n", gitdir.display())).unwrap();
        fs::write(gitdir.join("commondir"), "../..\n").unwrap();
        // Only the worktree is writable: the main repository is read-only
        // to commands already.
        assert_eq!(protected_paths(&policy(&[&wt])), [wt.join(".git")]);
        // Only the top of a root is looked at.
        assert!(protected_paths(&policy(&[&outer])).is_empty());
        // Both writable: the worktree's file and the main git folder (which
        // holds the worktree's git folder).
        assert_eq!(
            protected_paths(&policy(&[&wt, &main])),
            [main.join(".git"), wt.join(".git")]
        );
        // A relative gitdir, as submodules write it.
        fs::write(wt.join(".git"), "gitdir: ../main/.git/worktrees/wt").unwrap();
        assert_eq!(
            protected_paths(&policy(&[&wt, &main])),
            [main.join(".git"), wt.join(".git")]
        );
        // Something that is not a git file names nothing.
        fs::write(wt.join(".git"), vec![b'x'; 10_000]).unwrap();
        assert_eq!(protected_paths(&policy(&[&wt])), [wt.join(".git")]);
    }

    #[test]
    fn a_root_given_through_a_link_still_has_its_folder_found() {
        let outer = tempfile::tempdir().unwrap();
        let outer = fs::canonicalize(outer.path()).unwrap();
        let real = outer.join("real");
        fs::create_dir_all(real.join(".git")).unwrap();
        std::os::unix::fs::symlink(&real, outer.join("alias")).unwrap();
        assert_eq!(
            protected_paths(&policy(&[&outer.join("alias")])),
            [real.join(".git")]
        );
    }

    #[test]
    fn a_linked_folder_is_protected_at_its_target() {
        let outer = tempfile::tempdir().unwrap();
        let outer = fs::canonicalize(outer.path()).unwrap();
        let root = outer.join("root");
        fs::create_dir_all(root.join("real-git")).unwrap();
        std::os::unix::fs::symlink("real-git", root.join(".git")).unwrap();
        assert_eq!(protected_paths(&policy(&[&root])), [root.join("real-git")]);
    }
}
