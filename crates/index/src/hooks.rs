//! What the program around the index is told of its builds.

use std::sync::OnceLock;

/// Functions an index calls around the build of its table: `started`
/// just before the build's walk, `finished` once the build is over,
/// whether it made a table or not. A build frees far more memory than it
/// keeps, so a program may change how its allocator gives memory back
/// for that time (the `agent-tools` binary does). Both are called on the
/// index's own thread; indexes of several roots may build at once, each
/// calling both.
#[derive(Debug, Clone, Copy)]
pub struct BuildHooks {
    /// Called before a build starts.
    pub started: fn(),
    /// Called after a build ends.
    pub finished: fn(),
}

static HOOKS: OnceLock<BuildHooks> = OnceLock::new();

/// Sets the process's build hooks, once; `false` when they were set
/// already (the first stay).
///
/// ```
/// use agent_tools_index::{BuildHooks, set_build_hooks};
/// fn nothing() {}
/// let hooks = BuildHooks { started: nothing, finished: nothing };
/// assert!(set_build_hooks(hooks));
/// assert!(!set_build_hooks(hooks));
/// ```
pub fn set_build_hooks(hooks: BuildHooks) -> bool {
    HOOKS.set(hooks).is_ok()
}

/// Runs `build` between the hooks, when they are set. `build` must not
/// unwind (the index runs its build on a thread it joins).
pub(crate) fn around_build<T>(build: impl FnOnce() -> T) -> T {
    let hooks = HOOKS.get();
    if let Some(hooks) = hooks {
        (hooks.started)();
    }
    let built = build();
    if let Some(hooks) = hooks {
        (hooks.finished)();
    }
    built
}
