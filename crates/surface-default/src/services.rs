//! What the handlers work with: the frozen config and the tool back-ends
//! built from it once.

use agent_tools_fs::FileTools;

use agent_tools::Config;

/// The default surface's state: the back-ends shared by every call.
#[derive(Debug)]
pub struct Services {
    pub(crate) config: Config,
    pub(crate) files: FileTools,
}

impl Services {
    /// The frozen configuration the tools run under.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The file tools (and through them the confined workspace), for
    /// surfaces that compose their own tools from the engine's.
    pub fn files(&self) -> &FileTools {
        &self.files
    }
}
