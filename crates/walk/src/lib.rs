//! The one walk `glob`, `grep` and `find` share: hidden files included, the git
//! ignore stack respected on request (even outside a git repository), `.git/`
//! skipped with it, symlinks never followed, and every directory and file
//! opened relative to its parent's descriptor.
//!
//! Why this is written by hand: the walkers of the ecosystem (`ignore`,
//! `walkdir`, `jwalk`) open directories, files and ignore files by absolute
//! name, so a symlink swapped in mid-walk leads out of the root, and an
//! ignore file that is a symlink, a FIFO or a device is followed, blocks, or
//! is read without bound. No library walks by descriptor while honouring
//! gitignore, so this module does the walking with cap-std directory handles
//! (each entry opened beneath its parent, without following a final
//! symlink) and only borrows the ignore crate's gitignore *matcher*, fed
//! with the contents of ignore files read through the same handles.
//!
//! The walk is parallel: a shared stack of directories to read, one worker
//! per core (at most 12). A worker reads one directory, hands its
//! subdirectories to the stack, then visits its files itself, so threads
//! only meet on the stack once per directory.
//!
//! The ignore rules ([`RuleLevel`], [`is_ignored`]) and the primitives that
//! open paths beneath a descriptor ([`beneath`]) are the workspace index's
//! too, so the index holds the paths this walk visits by construction.
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use agent_tools_confine::{Confinement, Workspace};
//! use agent_tools_walk::{Flow, Walk};
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::create_dir(dir.path().join("src")).unwrap();
//! std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
//! std::fs::write(dir.path().join("debug.log"), "noise\n").unwrap();
//! std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
//! let ws = Workspace::open(dir.path(), Confinement::Confined).unwrap();
//!
//! let base = ws.root_path();
//! let cancel = AtomicBool::new(false);
//! let walk = Walk {
//!     workspace: &ws,
//!     base: &base,
//!     respect_gitignore: true,
//!     cancel: &cancel,
//!     visit_dirs: false,
//!     max_depth: None,
//!     exclude: None,
//! };
//! let walked = walk
//!     .run(|| (), |_, entry, sink| {
//!         sink.found.push(entry.rel.to_string());
//!         Flow::Continue
//!     })
//!     .unwrap();
//! let mut found = walked.found;
//! found.sort();
//! assert_eq!(found, [".gitignore", "src/main.rs"]);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod beneath;
mod matcher;
pub mod rules;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use agent_tools_confine::{ConfinedPath, FileKind, Workspace, quote_os, quote_text};
use agent_tools_error::ToolResult;
use cap_std::fs::Dir;
use globset::GlobSet;
use ignore::gitignore::Gitignore;

pub use matcher::{IgnoreMatcher, WorkspaceIgnores};
use rules::parent_of;
pub use rules::{
    MAX_IGNORE_FILE_BYTES, RuleLevel, RuleNames, global_excludes_bytes, global_rules, is_ignored,
    rules_from_bytes,
};

/// The most skipped paths a note names one by one.
const MAX_NAMED_SKIPS: usize = 10;

/// Something the walk (or a visitor) could not look at, said in a note.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Skipped {
    /// The path as shown (already quoted when it needs to be).
    pub path: String,
    /// Why, in a few words.
    pub why: String,
}

impl Skipped {
    /// A skip of `raw_path` (quoted here when it needs to be), for `why`.
    pub fn new(raw_path: &str, why: impl Into<String>) -> Self {
        Skipped {
            path: quote_text(raw_path).into_owned(),
            why: why.into(),
        }
    }
}

/// The note listing skipped paths, or nothing. Sorted, so the same tree
/// always gives the same note; at most `MAX_NAMED_SKIPS` named.
pub fn skipped_note(skipped: &mut [Skipped]) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    skipped.sort_unstable();
    let named: Vec<String> = skipped
        .iter()
        .take(MAX_NAMED_SKIPS)
        .map(|s| format!("{} ({})", s.path, s.why))
        .collect();
    let more = skipped.len().saturating_sub(MAX_NAMED_SKIPS);
    let more = if more > 0 {
        format!("; and {more} more")
    } else {
        String::new()
    };
    format!(
        "[note: {} path{} not looked at: {}{more}]\n",
        skipped.len(),
        if skipped.len() == 1 { " was" } else { "s were" },
        named.join("; ")
    )
}

/// A regular file the walk found (by its directory entry; the visitor opens
/// it through `dir` with
/// [`open_regular_at`](agent_tools_confine::open_regular_at), which checks again), or a
/// directory when the walk visits those too ([`Walk::visit_dirs`]).
pub struct FileEntry<'a> {
    /// The directory holding it.
    pub dir: &'a Dir,
    /// Whether it is a directory (only when directories are visited).
    pub is_dir: bool,
    /// Its name in `dir`.
    pub name: &'a str,
    /// Its path relative to the walk's base, `/`-separated.
    pub rel: &'a str,
    /// Its path as printed (relative to the root), not yet quoted.
    pub shown: &'a str,
}

/// What a visitor tells the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Continue,
    /// Stop the whole walk (a budget was reached).
    Quit,
}

/// What a walk gathered.
pub struct Walked<T> {
    /// What the visitors gathered.
    pub found: Vec<T>,
    /// What the walk and the visitors could not look at.
    pub skipped: Vec<Skipped>,
    /// The cancel flag was seen: `found` is partial.
    pub cancelled: bool,
}

/// The walk's settings.
pub struct Walk<'a> {
    /// The workspace walked in.
    pub workspace: &'a Workspace,
    /// The directory walked.
    pub base: &'a ConfinedPath,
    /// Honour `.ignore`, `.gitignore`, `.git/info/exclude` and the global
    /// excludes, and skip `.git/`.
    pub respect_gitignore: bool,
    /// Checked at every directory and file: once set, the walk stops.
    pub cancel: &'a AtomicBool,
    /// Visit directories too (before their contents are read), not only
    /// regular files.
    pub visit_dirs: bool,
    /// How deep to go: entries of the base are at depth 1; a directory at
    /// the last depth is visited (with `visit_dirs`) but not read. `None`
    /// for no limit.
    pub max_depth: Option<usize>,
    /// Entries whose path relative to the base matches are left out, and
    /// an excluded directory is not read at all.
    pub exclude: Option<&'a GlobSet>,
}

/// Per-thread output of the walk.
pub struct Sink<T> {
    /// What the visitor gathered.
    pub found: Vec<T>,
    /// What the visitor could not look at.
    pub skipped: Vec<Skipped>,
}

impl Walk<'_> {
    /// Walks the base directory, calling `visit` on every regular file the
    /// policy lets through. Each worker thread keeps its own state (`init`)
    /// and output, merged once at the end.
    pub fn run<T, S, I, V>(&self, init: I, visit: V) -> ToolResult<Walked<T>>
    where
        T: Send,
        I: Fn() -> S + Sync,
        V: Fn(&mut S, &FileEntry<'_>, &mut Sink<T>) -> Flow + Sync,
    {
        let Start {
            job,
            skipped,
            global,
            shown_prefix,
        } = self.start()?;
        Ok(self.run_jobs(vec![job], skipped, global, shown_prefix, init, visit))
    }

    /// Walks only the directories `starts` (paths relative to the base,
    /// none inside another), as [`run`](Self::run) would walk them as part
    /// of the base: the same paths, depths, exclusions, notes and
    /// visitors. Only for walks that do not consult ignore files (the
    /// directories' ignore rules are not read). Each start's parents are
    /// opened beneath the base one component at a time without following
    /// symlinks; `Ok(None)` when one cannot be (the tree changed: the
    /// caller walks the whole base instead).
    pub fn run_within<T, S, I, V>(
        &self,
        starts: &[String],
        init: I,
        visit: V,
    ) -> ToolResult<Option<Walked<T>>>
    where
        T: Send,
        I: Fn() -> S + Sync,
        V: Fn(&mut S, &FileEntry<'_>, &mut Sink<T>) -> Flow + Sync,
    {
        if self.respect_gitignore {
            // The rules above each start would have to be read first.
            return Ok(None);
        }
        let Start {
            job,
            skipped,
            global,
            shown_prefix,
        } = self.start()?;
        let JobDir::Open(base) = job.dir else {
            return Ok(None);
        };
        let base = Arc::new(base);
        let mut jobs = Vec::with_capacity(starts.len());
        for rel in starts {
            let (parent_rel, name) = match rel.rfind('/') {
                Some(at) => (&rel[..at], &rel[at + 1..]),
                None => ("", rel.as_str()),
            };
            let mut parent = Arc::clone(&base);
            if !parent_rel.is_empty() {
                for part in parent_rel.split('/') {
                    match open_subdir(&parent, OsStr::new(part)) {
                        Ok(dir) => parent = Arc::new(dir),
                        Err(_) => return Ok(None),
                    }
                }
            }
            jobs.push(Job {
                dir: JobDir::Child {
                    parent,
                    name: name.to_string(),
                },
                rel: rel.clone(),
                anchor_rel: String::new(),
                ignore: None,
            });
        }
        if jobs.is_empty() {
            return Ok(Some(Walked {
                found: Vec::new(),
                skipped,
                cancelled: self.cancel.load(Ordering::Relaxed),
            }));
        }
        Ok(Some(self.run_jobs(
            jobs,
            skipped,
            global,
            shown_prefix,
            init,
            visit,
        )))
    }

    /// Runs the workers over `jobs` (the directories to read first).
    fn run_jobs<T, S, I, V>(
        &self,
        jobs: Vec<Job>,
        skipped: Vec<Skipped>,
        global: Option<Gitignore>,
        shown_prefix: String,
        init: I,
        visit: V,
    ) -> Walked<T>
    where
        T: Send,
        I: Fn() -> S + Sync,
        V: Fn(&mut S, &FileEntry<'_>, &mut Sink<T>) -> Flow + Sync,
    {
        let shared = Shared {
            queue: Mutex::new(Queue { jobs, active: 0 }),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            cancel: self.cancel,
            respect_gitignore: self.respect_gitignore,
            visit_dirs: self.visit_dirs,
            max_depth: self.max_depth,
            exclude: self.exclude,
            global,
            shown_prefix,
        };
        let results: Mutex<Sink<T>> = Mutex::new(Sink {
            found: Vec::new(),
            skipped,
        });
        std::thread::scope(|scope| {
            for _ in 0..worker_threads() {
                scope.spawn(|| {
                    let mut state = init();
                    let mut sink = Sink {
                        found: Vec::new(),
                        skipped: Vec::new(),
                    };
                    while let Some(job) = shared.next_job() {
                        shared.read_dir(job, &mut state, &visit, &mut sink);
                        shared.finish_job();
                    }
                    let mut all = results.lock().unwrap_or_else(PoisonError::into_inner);
                    all.found.append(&mut sink.found);
                    all.skipped.append(&mut sink.skipped);
                });
            }
        });
        let sink = results.into_inner().unwrap_or_else(PoisonError::into_inner);
        Walked {
            found: sink.found,
            skipped: sink.skipped,
            cancelled: self.cancel.load(Ordering::Relaxed),
        }
    }

    /// Opens the base, and (when ignoring) reads the ignore files of the
    /// directories from the root down to it. Ignore files above the root are
    /// never read: a parent folder may belong to someone else.
    fn start(&self) -> ToolResult<Start> {
        let ws = self.workspace;
        let base = self.base;
        let mut skipped = Vec::new();
        let base_rel_to_root: Option<PathBuf> = ws.strip_root(base.abs()).map(Path::to_path_buf);
        let shown_prefix = match &base_rel_to_root {
            Some(rel) if rel.as_os_str().is_empty() => String::new(),
            Some(rel) => format!("{}/", raw_slash(rel)),
            None => format!("{}/", base.abs().to_string_lossy().trim_end_matches('/')),
        };
        let global = if self.respect_gitignore {
            global_rules(global_excludes_bytes().as_deref())
        } else {
            None
        };
        let (dir, ignore, anchor_rel) = match (&base_rel_to_root, self.respect_gitignore) {
            (Some(rel), true) => {
                // Descend from the root one component at a time, reading each
                // level's ignore files; the last level is the base itself.
                let mut dir = ws.open_dir(&ws.root_path())?;
                let mut stack: Option<Arc<RuleLevel>> = None;
                let mut anchor_rel = String::new();
                let components: Vec<&OsStr> = rel.iter().collect();
                for name in components {
                    stack = ignore_level(&dir, stack, &anchor_rel, &mut skipped, None);
                    dir = open_subdir(&dir, name).map_err(|err| ws.io_error(&err, base))?;
                    if !anchor_rel.is_empty() {
                        anchor_rel.push('/');
                    }
                    anchor_rel.push_str(&name.to_string_lossy());
                }
                (dir, stack, anchor_rel)
            }
            _ => (ws.open_dir(base)?, None, String::new()),
        };
        Ok(Start {
            job: Job {
                dir: JobDir::Open(dir),
                rel: String::new(),
                anchor_rel,
                ignore,
            },
            skipped,
            global,
            shown_prefix,
        })
    }
}

struct Start {
    job: Job,
    skipped: Vec<Skipped>,
    global: Option<Gitignore>,
    shown_prefix: String,
}

/// A directory waiting to be read.
struct Job {
    dir: JobDir,
    /// Relative to the base, `/`-separated, empty for the base.
    rel: String,
    /// Relative to the directory the ignore rules are anchored at (the root,
    /// or the base when it lies outside an unconfined root).
    anchor_rel: String,
    /// The ignore rules of its parents.
    ignore: Option<Arc<RuleLevel>>,
}

enum JobDir {
    /// The base, opened already.
    Open(Dir),
    /// A subdirectory, opened when its turn comes: queued directories hold
    /// their parent's handle, not their own, so open descriptors stay few.
    Child { parent: Arc<Dir>, name: String },
}

struct Queue {
    jobs: Vec<Job>,
    active: usize,
}

struct Shared<'a> {
    queue: Mutex<Queue>,
    wake: Condvar,
    stop: AtomicBool,
    cancel: &'a AtomicBool,
    respect_gitignore: bool,
    visit_dirs: bool,
    max_depth: Option<usize>,
    exclude: Option<&'a GlobSet>,
    global: Option<Gitignore>,
    shown_prefix: String,
}

impl Shared<'_> {
    fn halted(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.cancel.load(Ordering::Relaxed)
    }

    fn next_job(&self) -> Option<Job> {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if self.halted() {
                queue.jobs.clear();
            }
            if let Some(job) = queue.jobs.pop() {
                queue.active += 1;
                return Some(job);
            }
            if queue.active == 0 {
                self.wake.notify_all();
                return None;
            }
            queue = self
                .wake
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn push_jobs(&self, jobs: Vec<Job>) {
        if jobs.is_empty() {
            return;
        }
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.jobs.extend(jobs);
        self.wake.notify_all();
    }

    fn finish_job(&self) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.active -= 1;
        if queue.active == 0 && queue.jobs.is_empty() {
            self.wake.notify_all();
        }
    }

    /// Reads one directory: queues its subdirectories, then visits its files.
    fn read_dir<T, S, V>(&self, job: Job, state: &mut S, visit: &V, sink: &mut Sink<T>)
    where
        V: Fn(&mut S, &FileEntry<'_>, &mut Sink<T>) -> Flow + Sync,
    {
        let shown_dir = if job.rel.is_empty() {
            self.shown_prefix.trim_end_matches('/').to_string()
        } else {
            format!("{}{}", self.shown_prefix, job.rel)
        };
        let dir = match job.dir {
            JobDir::Open(dir) => dir,
            JobDir::Child { parent, name } => match open_subdir(&parent, OsStr::new(&name)) {
                Ok(dir) => dir,
                Err(err) => {
                    sink.skipped.push(Skipped::new(
                        or_dot(&shown_dir),
                        format!("cannot open: {err}"),
                    ));
                    return;
                }
            },
        };
        let mut entries: Vec<(String, FileKind)> = Vec::new();
        let listing = match dir.entries() {
            Ok(listing) => listing,
            Err(err) => {
                sink.skipped.push(Skipped::new(
                    or_dot(&shown_dir),
                    format!("cannot list: {err}"),
                ));
                return;
            }
        };
        for entry in listing {
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    sink.skipped.push(Skipped::new(
                        or_dot(&shown_dir),
                        format!("cannot list: {err}"),
                    ));
                    break;
                }
            };
            let raw_name = entry.file_name();
            let Some(name) = raw_name.to_str() else {
                let mut full = std::ffi::OsString::from(join(&shown_dir, ""));
                full.push(&raw_name);
                sink.skipped.push(Skipped {
                    path: quote_os(&full),
                    why: "the name is not UTF-8, which the file tools cannot address".into(),
                });
                continue;
            };
            let kind = match entry.file_type() {
                Ok(file_type) => FileKind::of(file_type),
                Err(err) => {
                    sink.skipped.push(Skipped::new(
                        &join(&shown_dir, name),
                        format!("cannot stat: {err}"),
                    ));
                    continue;
                }
            };
            entries.push((name.to_string(), kind));
        }

        let ignore = if self.respect_gitignore {
            let names = names_seen(&entries);
            if names.any() {
                ignore_level(
                    &dir,
                    job.ignore,
                    &job.anchor_rel,
                    &mut sink.skipped,
                    Some((names, &shown_dir)),
                )
            } else {
                job.ignore
            }
        } else {
            None
        };

        let dir = Arc::new(dir);
        let mut children = Vec::new();
        let mut files = Vec::new();
        // Entries of the base are at depth 1.
        let depth = if job.rel.is_empty() {
            1
        } else {
            job.rel.matches('/').count() + 2
        };
        let read_children = self.max_depth.is_none_or(|max| depth < max);
        for (name, kind) in entries {
            if self.respect_gitignore && name == ".git" {
                continue;
            }
            match kind {
                FileKind::Directory | FileKind::Regular => {}
                // Symlinks are not followed; FIFOs, sockets and devices are
                // not files to search or list.
                _ => continue,
            }
            let is_dir = kind == FileKind::Directory;
            let anchor_rel = join(&job.anchor_rel, &name);
            if self.is_ignored(ignore.as_deref(), &anchor_rel, is_dir) {
                continue;
            }
            let rel = join(&job.rel, &name);
            if self.exclude.is_some_and(|exclude| exclude.is_match(&rel)) {
                continue;
            }
            if is_dir && self.visit_dirs {
                files.push((name.clone(), rel.clone(), true));
            }
            if is_dir && !read_children {
                continue;
            }
            if is_dir {
                children.push(Job {
                    dir: JobDir::Child {
                        parent: Arc::clone(&dir),
                        name,
                    },
                    rel,
                    anchor_rel,
                    ignore: ignore.clone(),
                });
            } else {
                files.push((name, rel, false));
            }
        }
        if self.max_depth.is_some_and(|max| depth > max) {
            // Only a max depth of 0 reads the base without showing it.
            files.clear();
        }
        self.push_jobs(children);
        for (name, rel, is_dir) in files {
            if self.halted() {
                return;
            }
            let shown = format!("{}{rel}", self.shown_prefix);
            let entry = FileEntry {
                dir: &dir,
                is_dir,
                name: &name,
                rel: &rel,
                shown: &shown,
            };
            if visit(state, &entry, sink) == Flow::Quit {
                self.stop.store(true, Ordering::Relaxed);
                return;
            }
        }
    }

    /// Git's precedence over the ignore files of `ignore`'s levels and the
    /// global excludes (one rule for the walk and the index; see
    /// [`is_ignored`]).
    fn is_ignored(&self, ignore: Option<&RuleLevel>, anchor_rel: &str, is_dir: bool) -> bool {
        is_ignored(ignore, self.global.as_ref(), anchor_rel, is_dir)
    }
}

/// Which rule files a directory's listing holds.
fn names_seen(entries: &[(String, FileKind)]) -> RuleNames {
    let mut seen = RuleNames::default();
    for (name, kind) in entries {
        match name.as_str() {
            ".ignore" => seen.ignore = true,
            ".gitignore" => seen.gitignore = true,
            ".git" => seen.git = Some(*kind),
            _ => {}
        }
    }
    seen
}

/// Reads the ignore files of `dir` (those `names` lists, or all candidates
/// when not known) and links them over `parent`, with a note for each one
/// skipped. Returns `parent` itself when the directory adds nothing.
fn ignore_level(
    dir: &Dir,
    parent: Option<Arc<RuleLevel>>,
    anchor_rel: &str,
    skipped: &mut Vec<Skipped>,
    names: Option<(RuleNames, &str)>,
) -> Option<Arc<RuleLevel>> {
    let shown_dir = match names {
        Some((_, shown)) => shown,
        None => anchor_rel,
    };
    rules::read_level(
        dir,
        anchor_rel,
        parent,
        names.map(|(names, _)| names),
        &mut |name, why| skipped.push(Skipped::new(&join(shown_dir, name), why)),
    )
}

/// Opens the subdirectory `name` of `dir`: one component, beneath `dir`,
/// not following a symlink, non-blocking.
pub fn open_subdir(dir: &Dir, name: &OsStr) -> std::io::Result<Dir> {
    beneath::open_subdir(dir, name)
}

fn or_dot(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// A relative path with `/` separators, unquoted (quoting is done on the
/// whole path when printed).
fn raw_slash(path: &Path) -> String {
    path.iter()
        .map(|part| part.to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Visits a list of files (root-relative paths from the workspace index,
/// sorted) instead of walking: up to 32 files of one directory are a unit
/// of work, their directory opened once beneath `root` and each file then
/// opened by name beneath it, as the walk does. As many threads as the walk
/// uses, each with its own state (`init`) and output, merged once at the
/// end. `visit` gets the directory, the file's name and its path;
/// returning [`Flow::Quit`] stops every thread.
pub fn visit_listed<T, S, I, V>(root: &Dir, paths: &[String], init: I, visit: V) -> Sink<T>
where
    T: Send,
    I: Fn() -> S + Sync,
    V: Fn(&mut S, &Dir, &str, &str, &mut Sink<T>) -> Flow + Sync,
{
    // A unit is at most this many files, so one large directory is still
    // shared between the threads.
    const MOST_PER_UNIT: usize = 32;
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    for (at, path) in paths.iter().enumerate() {
        match groups.last_mut() {
            Some(group)
                if group.len() < MOST_PER_UNIT
                    && parent_of(&paths[group.start]) == parent_of(path) =>
            {
                group.end = at + 1;
            }
            _ => groups.push(at..at + 1),
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let results: Mutex<Sink<T>> = Mutex::new(Sink {
        found: Vec::new(),
        skipped: Vec::new(),
    });
    std::thread::scope(|scope| {
        for _ in 0..worker_threads().min(groups.len().max(1)) {
            scope.spawn(|| {
                let mut state = init();
                let mut sink = Sink {
                    found: Vec::new(),
                    skipped: Vec::new(),
                };
                while !stop.load(Ordering::Relaxed) {
                    let at = next.fetch_add(1, Ordering::Relaxed);
                    let Some(group) = groups.get(at) else { break };
                    let files = &paths[group.clone()];
                    let dir_rel = parent_of(&files[0]);
                    let opened = if dir_rel.is_empty() {
                        root.try_clone()
                    } else {
                        beneath::open_dir(root, dir_rel)
                    };
                    let dir = match opened {
                        Ok(dir) => dir,
                        Err(err) => {
                            for path in files {
                                sink.skipped
                                    .push(Skipped::new(path, format!("cannot open: {err}")));
                            }
                            continue;
                        }
                    };
                    for path in files {
                        let name = path.rsplit('/').next().unwrap_or(path);
                        if visit(&mut state, &dir, name, path, &mut sink) == Flow::Quit {
                            stop.store(true, Ordering::Relaxed);
                            break;
                        }
                    }
                }
                let mut all = results.lock().unwrap_or_else(PoisonError::into_inner);
                all.found.append(&mut sink.found);
                all.skipped.append(&mut sink.skipped);
            });
        }
    });
    results.into_inner().unwrap_or_else(PoisonError::into_inner)
}

fn worker_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(12)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_tools_confine::Confinement;
    use globset::GlobSetBuilder;

    fn tree() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["a/b/c", "skip/deep"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        for file in [
            "top.txt",
            "a/one.txt",
            "a/b/two.txt",
            "a/b/c/three.txt",
            "skip/deep/x.txt",
        ] {
            std::fs::write(dir.path().join(file), "x").unwrap();
        }
        let ws = Workspace::open(dir.path(), Confinement::Confined).unwrap();
        (dir, ws)
    }

    /// Every (rel, is_dir) the walk visits, sorted.
    fn visited(
        ws: &Workspace,
        visit_dirs: bool,
        max_depth: Option<usize>,
        exclude: Option<&GlobSet>,
    ) -> Vec<(String, bool)> {
        let base = ws.root_path();
        let cancel = AtomicBool::new(false);
        let walk = Walk {
            workspace: ws,
            base: &base,
            respect_gitignore: false,
            cancel: &cancel,
            visit_dirs,
            max_depth,
            exclude,
        };
        let walked = walk
            .run(
                || (),
                |_, entry, sink| {
                    sink.found.push((entry.rel.to_owned(), entry.is_dir));
                    Flow::Continue
                },
            )
            .unwrap();
        let mut found = walked.found;
        found.sort();
        found
    }

    fn rels(found: &[(String, bool)]) -> Vec<&str> {
        found.iter().map(|(rel, _)| rel.as_str()).collect()
    }

    #[test]
    fn files_only_unless_directories_are_asked_for() {
        let (_dir, ws) = tree();
        let files = visited(&ws, false, None, None);
        assert!(files.iter().all(|(_, is_dir)| !is_dir));
        assert_eq!(
            rels(&files),
            [
                "a/b/c/three.txt",
                "a/b/two.txt",
                "a/one.txt",
                "skip/deep/x.txt",
                "top.txt"
            ]
        );
        let all = visited(&ws, true, None, None);
        assert_eq!(all.len(), files.len() + 5);
        assert!(all.contains(&("a/b".to_owned(), true)));
        assert!(all.contains(&("skip".to_owned(), true)));
    }

    #[test]
    fn max_depth_stops_reading_below_it() {
        let (_dir, ws) = tree();
        assert!(visited(&ws, true, Some(0), None).is_empty());
        assert_eq!(
            rels(&visited(&ws, true, Some(1), None)),
            ["a", "skip", "top.txt"]
        );
        assert_eq!(
            rels(&visited(&ws, true, Some(2), None)),
            ["a", "a/b", "a/one.txt", "skip", "skip/deep", "top.txt"]
        );
        assert_eq!(
            rels(&visited(&ws, false, Some(2), None)),
            ["a/one.txt", "top.txt"]
        );
    }

    #[test]
    fn an_excluded_directory_is_not_read() {
        let (_dir, ws) = tree();
        let mut set = GlobSetBuilder::new();
        set.add(globset::Glob::new("skip").unwrap());
        set.add(globset::Glob::new("**/two.txt").unwrap());
        let set = set.build().unwrap();
        assert_eq!(
            rels(&visited(&ws, true, None, Some(&set))),
            [
                "a",
                "a/b",
                "a/b/c",
                "a/b/c/three.txt",
                "a/one.txt",
                "top.txt"
            ]
        );
    }
}
