//! The pipeline every call runs through, whatever the surface: look up,
//! validate, run, bound, render.

use std::panic::{AssertUnwindSafe, catch_unwind};

use agent_tools_error::{ErrorCode, ToolError};
use agent_tools_text::truncate_utf8;
use serde_json::{Map, Value};

use crate::config::{Config, StartupError};
use crate::context::{CallContext, Session};
use crate::registry::{ToolDef, ToolSpec};
use crate::result::{CallOutcome, Content, DispatchResult, Reply};
use crate::structured::{Omitted, structured_copy};
use crate::surface::{Failure, Issue, Stage, Surface};

/// The tools of one surface, bound to one workspace. `Send + Sync`: share
/// it (for example in an `Arc`) and make independent calls from many
/// threads at once.
pub struct AgentTools {
    bound: Box<dyn Pipeline>,
}

impl std::fmt::Debug for AgentTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTools")
            .field("surface", &self.bound.surface_name())
            .field("config", self.bound.config())
            .field(
                "tools",
                &self
                    .bound
                    .specs()
                    .iter()
                    .map(ToolSpec::name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl AgentTools {
    /// Opens the workspace and prepares `surface`'s tools that the config
    /// allows.
    pub fn with_surface<S: Surface>(config: Config, surface: S) -> Result<Self, StartupError> {
        if config.structured_output() && !surface.offers_structured_output() {
            return Err(StartupError::NoStructuredOutput {
                surface: surface.name(),
            });
        }
        let state = surface.open(&config)?;
        let mut tools = surface.tools();
        // The undo journal's two tools, on every surface, only when it is
        // on (so the lists stay as they were without it).
        tools.extend(crate::journal_tools::tools(surface.name(), &config));
        let all_names = tools.iter().map(ToolDef::name).collect();
        let offered = tools
            .into_iter()
            .filter(|def| !(config.read_only() && def.spec().mutating()))
            .filter(|def| !def.spec().needs_lsp() || config.lsp().is_some())
            .map(|def| {
                let schema = Value::Object((**def.validation_schema()).clone());
                let validator = jsonschema::validator_for(&schema).map_err(|err| {
                    StartupError::InvalidSchema {
                        tool: def.name(),
                        message: err.to_string(),
                    }
                })?;
                Ok(Offered { def, validator })
            })
            .collect::<Result<Vec<_>, StartupError>>()?;
        // Listed and offered; an unlisted tool is offered (callable) only.
        let specs = offered
            .iter()
            .filter(|tool| tool.def.spec().listed())
            .map(|tool| tool.def.spec().clone())
            .collect();
        let session = surface.new_session();
        Ok(AgentTools {
            bound: Box::new(Bound {
                surface,
                state,
                config,
                offered,
                specs,
                all_names,
                session,
            }),
        })
    }

    /// The tools this instance offers, in a stable order.
    pub fn list_tools(&self) -> Vec<ToolSpec> {
        self.bound.specs().to_vec()
    }

    /// The frozen configuration.
    pub fn config(&self) -> &Config {
        self.bound.config()
    }

    /// The workspace index the tools use, when it is on (to wait until it
    /// is ready, say).
    pub fn workspace_index(&self) -> Option<&agent_tools_fs::WorkspaceIndex> {
        self.bound.workspace_index()
    }

    /// Whether a call of `name` with `args` is brief: the tool is offered
    /// and marked brief, and when its brevity depends on the arguments
    /// ([`ToolDef::brief_when`](crate::ToolDef::brief_when)), these pass
    /// its test. Unknown names are not brief.
    pub fn is_brief(&self, name: &str, args: &Map<String, Value>) -> bool {
        self.bound.is_brief(name, args)
    }

    /// The surface's name.
    pub fn surface_name(&self) -> &'static str {
        self.bound.surface_name()
    }

    /// What the surface tells a client about its tools as a whole.
    pub fn instructions(&self) -> &'static str {
        self.bound.instructions()
    }

    /// A new session (for one connection) of the surface.
    pub fn new_session(&self) -> Session {
        self.bound.new_session()
    }

    /// Whether the allowed directories are to come from the client (the
    /// configuration named none; see [`ConfigBuilder::awaiting_roots`](crate::ConfigBuilder::awaiting_roots)).
    pub fn wants_client_roots(&self) -> bool {
        self.config().awaiting_client_roots()
    }

    /// Takes the directories a client announced as the allowed ones (each
    /// must be an existing directory; on failure nothing changes). Does
    /// nothing unless [`wants_client_roots`](Self::wants_client_roots).
    pub fn use_client_roots(&self, roots: &[std::path::PathBuf]) -> Result<(), StartupError> {
        if !self.wants_client_roots() {
            return Ok(());
        }
        self.bound.replace_roots(roots)
    }

    /// Runs one tool call and returns its text. Never panics and never
    /// fails: every outcome, including a panic inside the tool, becomes a
    /// [`DispatchResult`]. [`dispatch`](Self::dispatch) gives the outcome
    /// with all its items.
    pub fn call(&self, name: &str, args: Value) -> DispatchResult {
        self.call_with(name, args, &CallContext::default())
    }

    /// Like [`call`](Self::call), with a context (for cancellation).
    pub fn call_with(&self, name: &str, args: Value, call: &CallContext) -> DispatchResult {
        self.dispatch(name, args, call).into_dispatch_result()
    }

    /// Runs one tool call: look up, validate, run, bound, render. Never
    /// panics; every outcome is a [`CallOutcome`] as the surface renders it.
    pub fn dispatch(&self, name: &str, args: Value, call: &CallContext) -> CallOutcome {
        self.bound.dispatch(name, args, call)
    }

    /// Renders a failure met outside the pipeline (a request a transport
    /// could not read, a call cancelled before it started) the way the
    /// surface renders its own.
    pub fn render_failure(
        &self,
        tool: &str,
        stage: Stage,
        error: ToolError,
        cancelled: bool,
    ) -> CallOutcome {
        self.bound.fail(tool, stage, error, cancelled)
    }
}

/// Who the journal says made a call that names no principal: the local
/// user (stdio, one-shot calls).
const LOCAL_PRINCIPAL: &str = "local";

/// A surface with its state, behind a trait object so that [`AgentTools`]
/// is one type whatever the surface.
trait Pipeline: Send + Sync {
    fn config(&self) -> &Config;
    fn surface_name(&self) -> &'static str;
    fn instructions(&self) -> &'static str;
    fn specs(&self) -> &[ToolSpec];
    fn is_brief(&self, name: &str, args: &Map<String, Value>) -> bool;
    fn new_session(&self) -> Session;
    fn replace_roots(&self, roots: &[std::path::PathBuf]) -> Result<(), StartupError>;
    fn dispatch(&self, name: &str, args: Value, call: &CallContext) -> CallOutcome;
    fn fail(&self, tool: &str, stage: Stage, error: ToolError, cancelled: bool) -> CallOutcome;
    fn workspace_index(&self) -> Option<&agent_tools_fs::WorkspaceIndex>;
}

/// A tool in the offered set, with its compiled argument validator.
struct Offered<State> {
    def: ToolDef<State>,
    validator: jsonschema::Validator,
}

struct Bound<S: Surface> {
    surface: S,
    state: S::State,
    config: Config,
    offered: Vec<Offered<S::State>>,
    specs: Vec<ToolSpec>,
    /// Every tool of the surface, offered or hidden by read-only mode.
    all_names: Vec<&'static str>,
    /// The session of calls that bring none.
    session: Session,
}

impl<S: Surface> Pipeline for Bound<S> {
    fn config(&self) -> &Config {
        &self.config
    }

    fn workspace_index(&self) -> Option<&agent_tools_fs::WorkspaceIndex> {
        self.surface.workspace_index(&self.state)
    }

    fn surface_name(&self) -> &'static str {
        self.surface.name()
    }

    fn instructions(&self) -> &'static str {
        self.surface.instructions()
    }

    fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    fn is_brief(&self, name: &str, args: &Map<String, Value>) -> bool {
        self.offered
            .iter()
            .find(|tool| tool.def.name() == name)
            .is_some_and(|tool| tool.def.is_brief(&self.state, args))
    }

    fn new_session(&self) -> Session {
        self.surface.new_session()
    }

    fn replace_roots(&self, roots: &[std::path::PathBuf]) -> Result<(), StartupError> {
        self.surface.replace_roots(&self.state, roots)
    }

    fn fail(&self, tool: &str, stage: Stage, error: ToolError, cancelled: bool) -> CallOutcome {
        self.fail_with(tool, stage, error, cancelled, Vec::new())
    }

    fn dispatch(&self, name: &str, args: Value, call: &CallContext) -> CallOutcome {
        // 1. Look up in the offered set: hidden tools do not exist.
        let Some(tool) = self.offered.iter().find(|tool| tool.def.name() == name) else {
            let why = if self.config.read_only() && self.all_names.contains(&name) {
                format!("tool {name:?} is not available in read-only mode")
            } else {
                format!("unknown tool {name:?}")
            };
            return self.fail(
                name,
                Stage::Lookup,
                ToolError::new(ErrorCode::NotFound, why),
                false,
            );
        };

        // 2. Validate, with defaults filled in.
        let mut args = match args {
            Value::Null => Value::Object(Map::new()),
            other => other,
        };
        let Value::Object(object) = &mut args else {
            return self.fail(
                name,
                Stage::Validation,
                ToolError::invalid_input(format!("{name}: arguments must be a JSON object")),
                false,
            );
        };
        fill_defaults(object, tool.def.validation_schema());
        let mut issues = Vec::new();
        let problems: Vec<String> = tool
            .validator
            .iter_errors(&args)
            .take(5)
            .map(|err| {
                issues.extend(issues_of(&err));
                let at = err.instance_path().to_string();
                if at.is_empty() {
                    err.to_string()
                } else {
                    format!("{at}: {err}")
                }
            })
            .collect();
        if !problems.is_empty() {
            return self.fail_with(
                name,
                Stage::Validation,
                ToolError::invalid_input(format!(
                    "{name}: invalid arguments: {}",
                    problems.join("; ")
                )),
                false,
                issues,
            );
        }

        // 3. Run, in the caller's session or else the instance's; a panic
        // is an internal error and leaves the tools usable.
        let in_own_session;
        let call = if !call.session.is_set() && self.session.is_set() {
            in_own_session = CallContext {
                cancel: call.cancel.clone(),
                session: self.session.clone(),
                principal: call.principal.clone(),
            };
            &in_own_session
        } else {
            call
        };
        // A call that may change files is recorded in the undo journal,
        // when it is on; the scope files the record when it ends.
        let scope = match self.config.journal() {
            Some(active) if tool.def.spec().mutating() => Some(active.journal().begin(
                name,
                self.surface.name(),
                call.principal.as_deref().unwrap_or(LOCAL_PRINCIPAL),
            )),
            _ => None,
        };
        // A command changes files behind the write path's back: the roots
        // are looked at before and after it (see agent_tools_fs::commands).
        let watching = match self.config.journal() {
            Some(active) if scope.is_some() && tool.def.spec().hints().open_world => {
                let roots = crate::journal_tools::workspaces(&self.config);
                let index = self.surface.workspace_index(&self.state);
                active
                    .commands()
                    .before(&roots, index)
                    .map(|watching| (active, watching, roots))
            }
            _ => None,
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| tool.def.run(&self.state, args, call)))
            .unwrap_or_else(|panic| {
                let detail = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a tool panicked".into());
                Err(ToolError::internal(format!("{name} panicked: {detail}")))
            });
        if let Some((active, watching, roots)) = watching {
            let index = self.surface.workspace_index(&self.state);
            active.commands().after(watching, &roots, index);
        }
        drop(scope);

        // 4 and 5. Bound and render.
        match outcome {
            Ok(mut reply) => {
                if !tool.def.spec().bounded() {
                    bound_reply(&mut reply, self.config.max_output_bytes());
                }
                let structured = (self.config.structured_output() && !reply.is_error)
                    .then(|| {
                        structured_copy(
                            tool.def.spec().output(),
                            &reply.content,
                            self.config.max_output_bytes(),
                        )
                    })
                    .and_then(|copy| {
                        // The text alone still answers; a client that
                        // insists on the copy says so.
                        copy.inspect_err(|why| match why {
                            Omitted::OverBudget { .. } => {
                                tracing::debug!(tool = name, %why, "answer sent without its structured copy")
                            }
                            // A tool that does not answer what it declares.
                            Omitted::NotAnObject(_) => {
                                tracing::warn!(tool = name, %why, "answer sent without its structured copy")
                            }
                        })
                        .ok()
                    });
                let mut outcome = CallOutcome::from_reply(reply);
                if let CallOutcome::Result(result) = &mut outcome {
                    result.structured = structured;
                }
                outcome
            }
            Err(err) => {
                let cancelled = call.cancel.is_cancelled();
                self.fail(name, Stage::Run, err, cancelled)
            }
        }
    }
}

impl<S: Surface> Bound<S> {
    /// Hands a failure to the surface, with the schema issues of a
    /// validation failure.
    fn fail_with(
        &self,
        tool: &str,
        stage: Stage,
        error: ToolError,
        cancelled: bool,
        issues: Vec<Issue>,
    ) -> CallOutcome {
        if cancelled {
            // A call the caller gave up on failed because it was told to:
            // not worth an error line in the log.
            tracing::debug!(tool, detail = error.detail(), "call cancelled");
        } else if error.code() == ErrorCode::Internal {
            tracing::error!(tool, detail = error.detail(), "internal error");
        }
        self.surface.render_error(Failure {
            tool,
            stage,
            error,
            cancelled,
            issues,
        })
    }
}

/// The typed issue behind one schema violation.
fn issues_of(error: &jsonschema::ValidationError<'_>) -> Vec<Issue> {
    use jsonschema::error::{TypeKind, ValidationErrorKind};
    let at = error.instance_path().to_string();
    let param = at.rsplit('/').next().unwrap_or_default().to_owned();
    match error.kind() {
        ValidationErrorKind::Required { property } => vec![Issue::Missing {
            param: property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned),
        }],
        ValidationErrorKind::AdditionalProperties { unexpected } => unexpected
            .iter()
            .map(|param| Issue::Unexpected {
                param: param.clone(),
            })
            .collect(),
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(one) => one.to_string(),
                TypeKind::Multiple(many) => many
                    .iter()
                    .map(|t| t.to_string())
                    .filter(|t| t != "null")
                    .collect::<Vec<_>>()
                    .join(" | "),
            };
            vec![Issue::WrongType {
                param,
                expected,
                received: json_type(error.instance()).to_owned(),
            }]
        }
        _ => vec![Issue::Other {
            at,
            message: error.to_string(),
        }],
    }
}

/// The JSON type name of `value`.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Cuts the text items of `reply` to `max` bytes in all, in order: each
/// item past the budget is cut to what remains, with a note.
fn bound_reply(reply: &mut Reply, max: usize) {
    let mut left = max;
    for item in &mut reply.content {
        if let Content::Text(text) = item {
            if text.len() > left {
                *text = bound_output(std::mem::take(text), left);
            }
            left = left.saturating_sub(text.len());
        }
    }
}

/// Fills missing top-level properties that declare a default.
fn fill_defaults(args: &mut Map<String, Value>, schema: &Map<String, Value>) {
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return;
    };
    for (key, property) in properties {
        if args.contains_key(key) {
            continue;
        }
        if let Some(default) = property.get("default") {
            args.insert(key.clone(), default.clone());
        }
    }
}

/// Cuts `text` to `max` bytes on a character boundary, ending with a note
/// that says how much was dropped.
pub(crate) fn bound_output(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let total = text.len();
    let note_room = 96;
    let keep = truncate_utf8(&text, max.saturating_sub(note_room)).len();
    text.truncate(keep);
    text.push_str(&format!(
        "\n[output truncated: showed {keep} of {total} bytes]\n"
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounding_keeps_short_text_and_cuts_long_text_on_a_boundary() {
        assert_eq!(bound_output("short".into(), 1024), "short");
        let long = "é".repeat(2000);
        let cut = bound_output(long, 1024);
        assert!(cut.len() <= 1024, "{}", cut.len());
        assert!(cut.ends_with("of 4000 bytes]\n"), "{cut}");
    }
}
