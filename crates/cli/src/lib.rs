//! The `agent-tools` command line: the binary that serves the tools over
//! MCP, calls one, or lists them, and the list of surfaces it knows.
//!
//! The list lives here rather than in `agent-tools-mcp` because choosing a
//! surface by name is the command line's business: the server library
//! serves any tool set and needs none of the surface crates.
//!
//! ```
//! let names: Vec<_> = agent_tools_cli::surfaces().iter().map(|s| s.name()).collect();
//! assert_eq!(names[0], "agent-tools");
//! assert!(agent_tools_cli::surface("nope").is_err());
//! ```
#![deny(missing_docs)]
// Denied, not forbidden: `allocator` holds the one allowed unsafe call.
#![deny(unsafe_code)]

use agent_tools::SurfaceChoice;

pub mod allocator;

/// Every surface the server can serve, the default (`agent-tools`) first.
pub fn surfaces() -> Vec<SurfaceChoice> {
    vec![
        SurfaceChoice::of::<agent_tools_surface_default::DefaultSurface>(),
        SurfaceChoice::of::<agent_tools_surface_codex::CodexSurface>(),
        SurfaceChoice::of::<agent_tools_surface_filesystem::FilesystemSurface>(),
        SurfaceChoice::of::<agent_tools_surface_claude_code::ClaudeCodeSurface>(),
    ]
}

/// Another name of the default surface.
pub const DEFAULT_ALIAS: &str = "default";

/// The surface called `name`; when there is none, an error naming the
/// known ones.
pub fn surface(name: &str) -> Result<SurfaceChoice, UnknownSurface> {
    let known = surfaces();
    // `default` is the name users guess for the default surface.
    let wanted = if name == DEFAULT_ALIAS {
        agent_tools_surface_default::DEFAULT_SURFACE
    } else {
        name
    };
    known
        .iter()
        .find(|choice| choice.name() == wanted)
        .copied()
        .ok_or_else(|| UnknownSurface {
            name: name.to_string(),
            known: known.iter().map(SurfaceChoice::name).collect(),
        })
}

/// A surface name that is not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSurface {
    /// The name asked for.
    pub name: String,
    /// The names known.
    pub known: Vec<&'static str>,
}

impl std::fmt::Display for UnknownSurface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown surface {:?}; the known surfaces are: {} (see `agent-tools surfaces`)",
            self.name,
            self.known.join(", ")
        )
    }
}

impl std::error::Error for UnknownSurface {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_surfaces_are_refused_with_the_known_names() {
        assert_eq!(
            surface(agent_tools_surface_default::DEFAULT_SURFACE)
                .unwrap()
                .name(),
            "agent-tools"
        );
        assert_eq!(surface("codex").unwrap().name(), "codex");
        let err = surface("nope").unwrap_err();
        assert_eq!(
            err.known,
            ["agent-tools", "codex", "filesystem", "claude-code"]
        );
        assert!(
            err.to_string()
                .contains("known surfaces are: agent-tools, codex, filesystem, claude-code"),
            "{err}"
        );
    }
}
