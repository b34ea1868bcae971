//! What the handlers work with: the frozen config and the tool back-ends
//! built from it once.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use agent_tools_fs::FileTools;
use agent_tools_lsp::{Launch, LspClient, LspSettings, Report, Severity};

use agent_tools::{Config, LspReport};

/// The default surface's state: the back-ends shared by every call.
#[derive(Debug)]
pub struct Services {
    pub(crate) config: Config,
    pub(crate) files: FileTools,
    pub(crate) lsp: Option<Arc<LspClient>>,
}

impl Services {
    pub(crate) fn new(config: &Config, files: FileTools) -> Services {
        let lsp = config.lsp().map(|options| {
            Arc::new(LspClient::new(LspSettings {
                root: files.workspace().root().to_path_buf(),
                servers: options.servers.clone(),
                wait: std::time::Duration::from_millis(options.wait_ms),
                report: match options.report {
                    LspReport::Errors => Severity::Error,
                    LspReport::Warnings => Severity::Warning,
                },
                // Servers run project code: they start as commands do,
                // through the launcher and under the same sandbox.
                launch: Launch {
                    launcher: config.bash_launcher().cloned(),
                    sandbox: config.sandbox().map(|s| s.policy().clone()),
                },
            }))
        });
        Services {
            config: config.clone(),
            files,
            lsp,
        }
    }

    /// The frozen configuration the tools run under.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The file tools (and through them the confined workspace), for
    /// surfaces that compose their own tools from the engine's.
    pub fn files(&self) -> &FileTools {
        &self.files
    }

    /// The language servers, when `--lsp` turned them on.
    pub fn lsp(&self) -> Option<&LspClient> {
        self.lsp.as_deref()
    }

    /// After a write: for each file written (as the tool named it) that a
    /// language server handles, its diagnostics for the text now on disk,
    /// each file checked at once (in parallel), so a call waits one
    /// deadline however many files it wrote. Empty when servers are off
    /// or none handles the files.
    pub fn diagnostics_after_write(&self, written: &[&str], cancel: &AtomicBool) -> Vec<Report> {
        let Some(lsp) = self.lsp() else {
            return Vec::new();
        };
        let workspace = self.files.workspace();
        let paths: Vec<_> = written
            .iter()
            .filter_map(|path| workspace.resolve(path).ok())
            .filter(|path| lsp.server_for(path.abs()).is_some())
            .collect();
        match paths.as_slice() {
            [] => Vec::new(),
            [one] => lsp.after_write(one.abs(), cancel).into_iter().collect(),
            many => std::thread::scope(|scope| {
                let checks: Vec<_> = many
                    .iter()
                    .map(|path| scope.spawn(move || lsp.after_write(path.abs(), cancel)))
                    .collect();
                checks
                    .into_iter()
                    .filter_map(|check| check.join().ok().flatten())
                    .collect()
            }),
        }
    }

    /// After files were deleted or moved away (as the tool named them):
    /// their servers forget them (`didClose`), so no answer or diagnostic
    /// is given for text that is no longer there.
    pub fn forget_removed(&self, removed: &[&str]) {
        let Some(lsp) = self.lsp() else {
            return;
        };
        let workspace = self.files.workspace();
        for path in removed {
            if let Ok(path) = workspace.resolve(path) {
                lsp.closed(path.abs());
            }
        }
    }

    /// After a patch was applied: the files it removed (deleted, or moved
    /// away from) are forgotten by their servers, and `answer` gets the
    /// diagnostics of every file it left in place (added, changed or moved
    /// to), as [`with_diagnostics`](Self::with_diagnostics).
    pub fn after_patch(
        &self,
        answer: String,
        patch: &agent_tools_patch::Patch,
        cancel: &AtomicBool,
    ) -> String {
        let removed: Vec<&str> = patch
            .files
            .iter()
            .filter(|file| file.operation != agent_tools_patch::Operation::Copy)
            .filter_map(|file| match (&file.old_path, &file.new_path) {
                (Some(old), Some(new)) if old == new => None,
                (Some(old), _) => Some(old.as_str()),
                (None, _) => None,
            })
            .collect();
        self.forget_removed(&removed);
        let written: Vec<&str> = patch
            .files
            .iter()
            .filter_map(|file| file.new_path.as_deref())
            .collect();
        self.with_diagnostics(answer, &written, cancel)
    }

    /// `answer` with the diagnostics blocks of the files written appended
    /// (see [`Report::render_plain`]), each after a blank line.
    pub fn with_diagnostics(
        &self,
        answer: String,
        written: &[&str],
        cancel: &AtomicBool,
    ) -> String {
        let reports = self.diagnostics_after_write(written, cancel);
        if reports.is_empty() {
            return answer;
        }
        let root = self.files.workspace().root();
        let mut out = answer;
        for report in reports {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push('\n');
            out.push_str(&report.render_plain(&report.relative_to(root)));
            out.push('\n');
        }
        out
    }
}
