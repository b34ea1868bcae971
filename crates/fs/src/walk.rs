//! The one walking policy `glob` and `grep` share: hidden files included,
//! the git ignore stack respected on request (even outside a git repository),
//! `.git/` skipped with it, symlinks not followed.

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use ignore::{WalkBuilder, WalkState};

/// A parallel walker over `base` with the shared policy.
pub(crate) fn walker(base: &Path, respect_gitignore: bool) -> WalkBuilder {
    let mut builder = WalkBuilder::new(base);
    builder
        .hidden(false)
        .follow_links(false)
        .parents(respect_gitignore)
        .ignore(respect_gitignore)
        .git_ignore(respect_gitignore)
        .git_global(respect_gitignore)
        .git_exclude(respect_gitignore)
        // Agents work in fresh checkouts and scratch folders alike: a
        // .gitignore means the same with or without a .git directory.
        .require_git(false)
        .threads(worker_threads());
    if respect_gitignore {
        builder.filter_entry(|entry| entry.file_name() != ".git");
    }
    builder
}

fn worker_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(12)
}

/// Runs the parallel walk, gathering what `visit` pushes. Each walker thread
/// keeps its own state (`init`) and its own result vector, moved into the
/// shared one once when the thread finishes, so threads never contend on a
/// lock per file.
pub(crate) fn collect_parallel<T, S, I, V>(builder: &WalkBuilder, init: I, visit: V) -> Vec<T>
where
    T: Send,
    S: Send,
    I: Fn() -> S + Sync,
    V: Fn(&mut S, ignore::DirEntry, &mut Vec<T>) -> WalkState + Sync,
{
    let shared: Mutex<Vec<T>> = Mutex::new(Vec::new());
    let mut visitors = VisitorBuilder {
        shared: &shared,
        init: &init,
        visit: &visit,
    };
    builder.build_parallel().visit(&mut visitors);
    shared.into_inner().unwrap_or_else(PoisonError::into_inner)
}

struct VisitorBuilder<'s, T, I, V> {
    shared: &'s Mutex<Vec<T>>,
    init: &'s I,
    visit: &'s V,
}

impl<'s, T, S, I, V> ignore::ParallelVisitorBuilder<'s> for VisitorBuilder<'s, T, I, V>
where
    T: Send,
    S: Send + 's,
    I: Fn() -> S + Sync,
    V: Fn(&mut S, ignore::DirEntry, &mut Vec<T>) -> WalkState + Sync,
{
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Visitor {
            shared: self.shared,
            state: (self.init)(),
            local: Vec::new(),
            visit: self.visit,
        })
    }
}

struct Visitor<'s, T, S, V> {
    shared: &'s Mutex<Vec<T>>,
    state: S,
    local: Vec<T>,
    visit: &'s V,
}

impl<T, S, V> ignore::ParallelVisitor for Visitor<'_, T, S, V>
where
    T: Send,
    S: Send,
    V: Fn(&mut S, ignore::DirEntry, &mut Vec<T>) -> WalkState + Sync,
{
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> WalkState {
        match entry {
            // Unreadable entries are skipped, as ripgrep does without --debug.
            Err(_) => WalkState::Continue,
            Ok(entry) => (self.visit)(&mut self.state, entry, &mut self.local),
        }
    }
}

impl<T, S, V> Drop for Visitor<'_, T, S, V> {
    fn drop(&mut self) {
        let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        shared.append(&mut self.local);
    }
}
