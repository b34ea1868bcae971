//! Surfaces chosen by name at run time.

use crate::config::{Config, StartupError};
use crate::dispatch::AgentTools;
use crate::registry::ToolSpec;
use crate::result::CallOutcome;
use crate::surface::{Failure, Surface, offered_specs};

/// A surface chosen by name at run time (a command line's `--surface`):
/// its name and summary, its tool list, and a way to open it.
#[derive(Clone, Copy)]
pub struct SurfaceChoice {
    name: &'static str,
    summary: &'static str,
    several_roots: bool,
    list: fn(bool) -> Vec<ToolSpec>,
    every: fn() -> Vec<ToolSpec>,
    open: fn(Config) -> Result<AgentTools, StartupError>,
    render: fn(Failure<'_>) -> CallOutcome,
}

impl std::fmt::Debug for SurfaceChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SurfaceChoice")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl SurfaceChoice {
    /// The choice of surface `S`, configured by default.
    pub fn of<S: Surface + Default>() -> Self {
        let surface = S::default();
        SurfaceChoice {
            name: surface.name(),
            summary: surface.summary(),
            several_roots: surface.serves_several_roots(),
            list: |read_only| offered_specs(&S::default(), read_only),
            every: || {
                S::default()
                    .tools()
                    .into_iter()
                    .map(|tool| tool.spec().clone())
                    .collect()
            },
            open: |config| AgentTools::with_surface(config, S::default()),
            render: |failure| S::default().render_error(failure),
        }
    }

    /// The surface's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// What it is for.
    pub fn summary(&self) -> &'static str {
        self.summary
    }

    /// Whether it serves several allowed directories.
    pub fn serves_several_roots(&self) -> bool {
        self.several_roots
    }

    /// The tools it offers in a mode.
    pub fn tools(&self, read_only: bool) -> Vec<ToolSpec> {
        (self.list)(read_only)
    }

    /// Every tool it registers, unlisted ones included (those can be
    /// called by name but appear in no listing).
    pub fn every_tool(&self) -> Vec<ToolSpec> {
        (self.every)()
    }

    /// How it shows a failure (what [`Surface::render_error`] gives), so
    /// that every surface's rendering can be checked in one place.
    pub fn render_error(&self, failure: Failure<'_>) -> CallOutcome {
        (self.render)(failure)
    }

    /// Opens it on a workspace.
    pub fn open(&self, config: Config) -> Result<AgentTools, StartupError> {
        (self.open)(config)
    }
}
