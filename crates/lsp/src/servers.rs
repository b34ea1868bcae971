//! Which server handles which files: the built-in table and Claude Code's
//! `.lsp.json` shape for adding or overriding entries.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// How long a server may take to answer `initialize` before it is given up.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(45);
/// How many crashes (within [`CRASH_WINDOW`]) are restarted before a server
/// is disabled.
pub const DEFAULT_MAX_RESTARTS: u32 = 3;
/// The window crashes are counted in.
pub const CRASH_WINDOW: Duration = Duration::from_secs(600);

/// One language server and the files it handles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// Its name, as notes and `status` show it.
    pub name: String,
    /// The program (looked up on `PATH` when it has no slash).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// File extensions (with the dot) and the language id sent for each.
    pub extensions: Vec<(String, String)>,
    /// `initializationOptions`.
    pub initialization_options: Option<Value>,
    /// Answers to `workspace/configuration` (by section) and the body of
    /// `workspace/didChangeConfiguration`.
    pub settings: Value,
    /// How long `initialize` may take.
    pub startup_timeout: Duration,
    /// How many crashes are restarted before the server is disabled.
    pub max_restarts: u32,
}

impl ServerSpec {
    /// A server run as `command args...` for `extensions` (`(".py",
    /// "python")`), with the default timeouts.
    pub fn new(
        name: &str,
        command: &str,
        args: &[&str],
        extensions: &[(&str, &str)],
    ) -> ServerSpec {
        ServerSpec {
            name: name.to_owned(),
            command: command.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: Vec::new(),
            extensions: extensions
                .iter()
                .map(|(e, l)| ((*e).to_owned(), (*l).to_owned()))
                .collect(),
            initialization_options: None,
            settings: Value::Null,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            max_restarts: DEFAULT_MAX_RESTARTS,
        }
    }

    /// The language id for `path`, when this server handles it.
    pub fn language_of(&self, path: &Path) -> Option<&str> {
        let ext = extension_of(path)?;
        self.extensions
            .iter()
            .find(|(e, _)| e.eq_ignore_ascii_case(&ext))
            .map(|(_, l)| l.as_str())
    }

    /// Where its program is: the command itself when it names a file, else
    /// the first match on `PATH`.
    pub fn locate(&self) -> Option<PathBuf> {
        find_program(&self.command)
    }
}

/// `.py` for `a/b.py`.
pub(crate) fn extension_of(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(|e| format!(".{e}"))
}

/// The first executable `program` on `PATH` (or `program` itself when it
/// contains a slash).
pub fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = PathBuf::from(program);
        return executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))
}

const PY: &[(&str, &str)] = &[(".py", "python"), (".pyi", "python")];
const TS: &[(&str, &str)] = &[
    (".ts", "typescript"),
    (".tsx", "typescriptreact"),
    (".mts", "typescript"),
    (".cts", "typescript"),
    (".js", "javascript"),
    (".jsx", "javascriptreact"),
    (".mjs", "javascript"),
    (".cjs", "javascript"),
];
const C: &[(&str, &str)] = &[
    (".c", "c"),
    (".h", "c"),
    (".cc", "cpp"),
    (".cpp", "cpp"),
    (".cxx", "cpp"),
    (".hpp", "cpp"),
];

/// The built-in table, in order of preference per language: for each file
/// the first entry that handles it and is found on `PATH` is used.
pub fn builtin_servers() -> Vec<ServerSpec> {
    vec![
        ServerSpec::new("pyright", "pyright-langserver", &["--stdio"], PY),
        ServerSpec::new("basedpyright", "basedpyright-langserver", &["--stdio"], PY),
        ServerSpec::new("ty", "ty", &["server"], PY),
        ServerSpec::new(
            "typescript-language-server",
            "typescript-language-server",
            &["--stdio"],
            TS,
        ),
        ServerSpec::new("gopls", "gopls", &[], &[(".go", "go")]),
        ServerSpec::new("rust-analyzer", "rust-analyzer", &[], &[(".rs", "rust")]),
        ServerSpec::new("clangd", "clangd", &[], C),
    ]
}

/// Why an `.lsp.json` file was refused.
#[derive(Debug, thiserror::Error)]
pub enum ServerConfigError {
    /// Not JSON of the expected shape.
    #[error("the language server configuration is not valid: {0}")]
    Shape(#[from] serde_json::Error),
    /// An entry is unusable.
    #[error("language server {name}: {problem}")]
    Entry {
        /// The entry's name.
        name: String,
        /// What is wrong.
        problem: String,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LspJsonEntry {
    command: String,
    #[serde(default)]
    args: Vec<String>,
    extension_to_language: BTreeMap<String, String>,
    #[serde(default)]
    transport: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    initialization_options: Option<Value>,
    #[serde(default)]
    settings: Option<Value>,
    #[serde(default)]
    workspace_folder: Option<String>,
    #[serde(default)]
    startup_timeout: Option<u64>,
    #[serde(default)]
    shutdown_timeout: Option<u64>,
    #[serde(default)]
    restart_on_crash: Option<bool>,
    #[serde(default)]
    max_restarts: Option<u32>,
}

/// Parses Claude Code's `.lsp.json` shape: an object of named servers, each
/// `{command, args?, extensionToLanguage, env?, initializationOptions?,
/// settings?, startupTimeout? (ms), restartOnCrash?, maxRestarts?}`. Only
/// the stdio transport is supported.
pub fn parse_lsp_json(text: &str) -> Result<Vec<ServerSpec>, ServerConfigError> {
    let entries: BTreeMap<String, LspJsonEntry> = serde_json::from_str(text)?;
    let mut specs = Vec::new();
    for (name, entry) in entries {
        let problem = |problem: &str| ServerConfigError::Entry {
            name: name.clone(),
            problem: problem.to_owned(),
        };
        if entry.transport.as_deref().is_some_and(|t| t != "stdio") {
            return Err(problem("only the stdio transport is supported"));
        }
        if entry.workspace_folder.is_some() {
            return Err(problem(
                "workspaceFolder is not supported: servers run in the workspace root",
            ));
        }
        if entry.command.trim().is_empty() || entry.command.contains(' ') {
            return Err(problem(
                "command must be one program (arguments go in args)",
            ));
        }
        if entry.extension_to_language.is_empty() {
            return Err(problem("extensionToLanguage is empty"));
        }
        if entry
            .extension_to_language
            .keys()
            .any(|e| !e.starts_with('.'))
        {
            return Err(problem(
                "extensions in extensionToLanguage start with a dot",
            ));
        }
        let _ = entry.shutdown_timeout;
        let max_restarts = if entry.restart_on_crash == Some(false) {
            0
        } else {
            entry.max_restarts.unwrap_or(DEFAULT_MAX_RESTARTS)
        };
        specs.push(ServerSpec {
            name,
            command: entry.command,
            args: entry.args,
            env: entry.env.into_iter().collect(),
            extensions: entry.extension_to_language.into_iter().collect(),
            initialization_options: entry.initialization_options,
            settings: entry.settings.unwrap_or(Value::Null),
            startup_timeout: entry
                .startup_timeout
                .map_or(DEFAULT_STARTUP_TIMEOUT, Duration::from_millis),
            max_restarts,
        });
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_claude_code_shape() {
        let specs = parse_lsp_json(
            r#"{"py": {"command": "pyright-langserver", "args": ["--stdio"],
                "extensionToLanguage": {".py": "python"}, "startupTimeout": 1000,
                "restartOnCrash": false, "settings": {"python": {"x": 1}}}}"#,
        )
        .unwrap();
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].name, "py");
        assert_eq!(specs[0].language_of(Path::new("a/b.PY")), Some("python"));
        assert_eq!(specs[0].language_of(Path::new("a/b.rs")), None);
        assert_eq!(specs[0].startup_timeout, Duration::from_secs(1));
        assert_eq!(specs[0].max_restarts, 0);
    }

    #[test]
    fn refuses_what_it_cannot_honour() {
        for (text, needle) in [
            (
                r#"{"a": {"command": "x", "extensionToLanguage": {}}}"#,
                "empty",
            ),
            (
                r#"{"a": {"command": "x y", "extensionToLanguage": {".a": "a"}}}"#,
                "one program",
            ),
            (
                r#"{"a": {"command": "x", "transport": "socket", "extensionToLanguage": {".a": "a"}}}"#,
                "stdio",
            ),
            (
                r#"{"a": {"command": "x", "extensionToLanguage": {"a": "a"}}}"#,
                "dot",
            ),
            (
                r#"{"a": {"command": "x", "extensionToLanguage": {".a": "a"}, "bogus": 1}}"#,
                "bogus",
            ),
            (r#"[1]"#, "not valid"),
        ] {
            let err = parse_lsp_json(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn finds_programs_on_the_path() {
        assert!(find_program("sh").is_some());
        assert!(find_program("surely-no-such-program-here").is_none());
        assert!(find_program("/bin/sh").is_some());
        assert!(find_program("/nonexistent/x").is_none());
    }
}
