//! Tool definitions: what a tool is called, how it presents itself to
//! clients ([`ToolSpec`]), and what runs it ([`ToolDef`]).

use std::fmt;
use std::sync::Arc;

use agent_tools_error::{ToolError, ToolResult};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::context::CallContext;
use crate::result::Reply;
use crate::schema;
use crate::structured::{MediaAnswer, OutputKind, TextAnswer};

/// The most bytes a read may take to count as brief
/// ([`ToolDef::brief_when`]): read and decoded in about a millisecond, well
/// under the time a brief call may hold its thread unwatched.
pub const BRIEF_READ_BYTES: u64 = 1024 * 1024;

/// The four MCP tool annotations. They are hints for the client and the
/// model (which calls to confirm, which to retry), and are set truthfully.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hints {
    /// The tool changes nothing.
    pub read_only: bool,
    /// The tool may overwrite or delete what exists (meaningful when not
    /// read-only).
    pub destructive: bool,
    /// Repeating a call with the same arguments changes nothing more
    /// (meaningful when not read-only).
    pub idempotent: bool,
    /// The tool reaches beyond the workspace (a shell command can reach
    /// anything).
    pub open_world: bool,
}

impl Hints {
    /// A tool that only reads the workspace.
    pub const READ: Hints = Hints {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    /// A tool that replaces content wholesale: destructive, and the same
    /// call twice leaves what one call leaves.
    pub const OVERWRITE: Hints = Hints {
        read_only: false,
        destructive: true,
        idempotent: true,
        open_world: false,
    };
    /// A tool that changes content relative to what is there: destructive,
    /// and a second call acts again (or fails).
    pub const EDIT: Hints = Hints {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: false,
    };
    /// A tool that only adds (creates what is missing): not destructive,
    /// and repeating it changes nothing more.
    pub const ADD: Hints = Hints {
        read_only: false,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    /// A tool that runs arbitrary commands.
    pub const RUN: Hints = Hints {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    };
}

/// How a tool presents itself: name, title, description, argument schema
/// and hints. Cheap to clone.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    input_schema: Arc<Map<String, Value>>,
    hints: Hints,
    bounded: bool,
    brief: bool,
    listed: bool,
    connection_bound: bool,
    needs_lsp: bool,
    output: OutputKind,
    output_schema: Arc<Map<String, Value>>,
}

impl ToolSpec {
    /// The tool's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// A short human-readable title.
    pub fn title(&self) -> &'static str {
        self.title
    }

    /// What the tool does, written for the model that calls it.
    pub fn description(&self) -> &'static str {
        self.description
    }

    /// The advertised JSON Schema (an object schema in the portable subset,
    /// see [`crate::schema`]) of the tool's arguments.
    pub fn input_schema(&self) -> &Arc<Map<String, Value>> {
        &self.input_schema
    }

    /// The tool's annotations.
    pub fn hints(&self) -> Hints {
        self.hints
    }

    /// Whether the tool changes files or runs commands.
    pub fn mutating(&self) -> bool {
        !self.hints.read_only
    }

    /// Whether the tool caps its own output.
    pub fn bounded(&self) -> bool {
        self.bounded
    }

    /// Whether calls of the tool can be brief: always ([`ToolDef::brief`])
    /// or when their arguments say so ([`ToolDef::brief_when`]). Which call
    /// is, [`AgentTools::is_brief`](crate::AgentTools::is_brief) decides.
    pub fn brief(&self) -> bool {
        self.brief
    }

    /// Whether the tool is advertised (in `tools/list`, the tool listings
    /// and the snapshot). An unlisted tool can still be called.
    pub fn listed(&self) -> bool {
        self.listed
    }

    /// Whether the tool works with what outlives one call (a job started
    /// by an earlier call of the same connection), so that a one-shot call
    /// with no connection behind it cannot use it.
    pub fn connection_bound(&self) -> bool {
        self.connection_bound
    }

    /// Whether the tool works through language servers, and so is offered
    /// only when they are on (`--lsp`).
    pub fn needs_lsp(&self) -> bool {
        self.needs_lsp
    }

    /// What the tool's structured copy of an answer is made of (see
    /// [`crate::structured`]).
    pub fn output(&self) -> OutputKind {
        self.output
    }

    /// The JSON Schema (an object schema in the portable subset) of the
    /// tool's structured copy, advertised as `outputSchema` when structured
    /// output is on ([`Config::structured_output`](crate::Config::structured_output)).
    pub fn output_schema(&self) -> &Arc<Map<String, Value>> {
        &self.output_schema
    }
}

type Handler<S> = dyn Fn(&S, Value, &CallContext) -> ToolResult<Reply> + Send + Sync;

/// Decides from a call's arguments (not yet validated: any JSON object)
/// whether its work is bounded small enough to be brief. It may look at the
/// files the arguments name (a stat beneath the root), nothing slower.
pub type BriefTest<S> = fn(&S, &Map<String, Value>) -> bool;

/// One tool of a surface whose tools work with state `S` (the surface's
/// [`Surface::State`](crate::Surface::State)): its [`ToolSpec`], the schema
/// its arguments are validated against, and its handler.
pub struct ToolDef<S> {
    spec: ToolSpec,
    validation_schema: Arc<Map<String, Value>>,
    handler: Arc<Handler<S>>,
    /// With `spec.brief`: the test a call's arguments must pass to be
    /// brief; none means every call is.
    brief_test: Option<BriefTest<S>>,
}

impl<S> Clone for ToolDef<S> {
    fn clone(&self) -> Self {
        ToolDef {
            spec: self.spec.clone(),
            validation_schema: self.validation_schema.clone(),
            handler: self.handler.clone(),
            brief_test: self.brief_test,
        }
    }
}

impl<S> fmt::Debug for ToolDef<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDef")
            .field("name", &self.spec.name)
            .field("hints", &self.spec.hints)
            .field("bounded", &self.spec.bounded)
            .finish_non_exhaustive()
    }
}

impl<S: 'static> ToolDef<S> {
    /// Defines a tool whose arguments are `A`: the schema is generated from
    /// `A` (advertised in its portable form), and the handler receives `A`
    /// already checked against it. Until [`titled`](Self::titled) says
    /// otherwise, the title is the name and the hints are
    /// [`Hints::READ`] or [`Hints::EDIT`] as `mutating` says.
    pub fn typed<A, R>(
        name: &'static str,
        description: &'static str,
        mutating: bool,
        run: fn(&S, A, &CallContext) -> ToolResult<R>,
    ) -> ToolDef<S>
    where
        A: DeserializeOwned + JsonSchema + 'static,
        R: Into<Reply> + 'static,
    {
        Self::typed_with(name, description, mutating, run)
    }

    /// [`typed`](Self::typed) with a handler that carries state of its own
    /// (a closure), for tools the host adds to every surface.
    pub fn typed_with<A, R>(
        name: &'static str,
        description: &'static str,
        mutating: bool,
        run: impl Fn(&S, A, &CallContext) -> ToolResult<R> + Send + Sync + 'static,
    ) -> ToolDef<S>
    where
        A: DeserializeOwned + JsonSchema + 'static,
        R: Into<Reply> + 'static,
    {
        let handler = move |state: &S, args: Value, call: &CallContext| {
            let args: A = serde_json::from_value(args)
                .map_err(|err| ToolError::invalid_input(format!("{name}: {err}")))?;
            run(state, args, call).map(Into::into)
        };
        let generated = schema_of::<A>();
        ToolDef {
            spec: ToolSpec {
                name,
                title: name,
                description,
                input_schema: Arc::new(schema::portable(&generated)),
                hints: if mutating { Hints::EDIT } else { Hints::READ },
                bounded: false,
                brief: false,
                listed: true,
                connection_bound: false,
                needs_lsp: false,
                output: OutputKind::Text,
                output_schema: text_output_schema(),
            },
            validation_schema: Arc::new(generated),
            handler: Arc::new(handler),
            brief_test: None,
        }
    }

    /// Declares that the tool's answer is one text item holding a JSON
    /// object of type `T`: its structured copy is that object (without its
    /// `null` fields, which the portable schema cannot name), and its
    /// output schema is generated from `T`.
    pub fn answering_json<T: JsonSchema>(mut self) -> ToolDef<S> {
        self.spec.output = OutputKind::Json;
        self.spec.output_schema = Arc::new(schema::portable(&schema_of::<T>()));
        self
    }

    /// Declares that the tool may answer images, sounds or binary
    /// resources: its structured copy describes them beside the text
    /// ([`MediaAnswer`]).
    pub fn answering_media(mut self) -> ToolDef<S> {
        self.spec.output = OutputKind::Media;
        self.spec.output_schema = Arc::new(schema::portable(&schema_of::<MediaAnswer>()));
        self
    }

    /// Offers the tool only when language servers are on.
    pub fn needing_lsp(mut self) -> ToolDef<S> {
        self.spec.needs_lsp = true;
        self
    }

    /// Sets the title and the annotations.
    pub fn titled(mut self, title: &'static str, hints: Hints) -> ToolDef<S> {
        self.spec.title = title;
        self.spec.hints = hints;
        self
    }

    /// Marks the tool as brief by construction: it reads a bounded set of
    /// named paths (no walk of a tree), never waits on a lock, a process
    /// or the network, and opens nothing that could block (FIFOs and
    /// devices are refused before they are read). A server may run such a
    /// call on the thread that received it instead of handing it to a
    /// thread of its own, which is most of a small call's latency.
    /// Writers are not brief: they may wait on another process's file
    /// lock.
    pub fn brief(mut self) -> ToolDef<S> {
        self.spec.brief = true;
        self.brief_test = None;
        self
    }

    /// Marks the calls of the tool whose arguments pass `test` as brief
    /// (see [`brief`](Self::brief)): for a tool whose work depends on what
    /// it is given, a small file or a large one, a text or a PDF. Brief
    /// means a bound on the work, not a kind of tool: a call that could
    /// take more than a few milliseconds is not brief.
    pub fn brief_when(mut self, test: BriefTest<S>) -> ToolDef<S> {
        self.spec.brief = true;
        self.brief_test = Some(test);
        self
    }

    /// Whether a call with `args` is brief: never for a tool not marked
    /// so, always for one marked [`brief`](Self::brief), and as its test
    /// says for one marked [`brief_when`](Self::brief_when).
    pub fn is_brief(&self, state: &S, args: &Map<String, Value>) -> bool {
        self.spec.brief && self.brief_test.is_none_or(|test| test(state, args))
    }

    /// Marks the tool as capping its own output, so the pipeline does not
    /// cut it.
    pub fn bounding_itself(mut self) -> ToolDef<S> {
        self.spec.bounded = true;
        self
    }

    /// Marks the tool as working with what outlives one call (see
    /// [`ToolSpec::connection_bound`]).
    pub fn bound_to_connection(mut self) -> ToolDef<S> {
        self.spec.connection_bound = true;
        self
    }

    /// Keeps the tool callable but out of every listing: for names models
    /// trained on another server call (an older name of a tool, say) that
    /// should not crowd what is advertised. Read-only mode hides it like
    /// any tool of its hints.
    pub fn unlisted(mut self) -> ToolDef<S> {
        self.spec.listed = false;
        self
    }

    /// Accepts the arguments `hidden` without advertising them (older
    /// names some models send), and advertises `required` as required
    /// although the argument type takes them as optional (so that an older
    /// name may stand in for one; the handler checks that one of the two
    /// came). Validation is unchanged.
    pub fn accepting_unadvertised(
        mut self,
        hidden: &[&'static str],
        required: &[&'static str],
    ) -> ToolDef<S> {
        let mut advertised = (*self.spec.input_schema).clone();
        if let Some(Value::Object(properties)) = advertised.get_mut("properties") {
            properties.retain(|name, _| !hidden.contains(&name.as_str()));
        }
        if !required.is_empty() {
            advertised.insert("required".to_owned(), serde_json::json!(required));
        }
        self.spec.input_schema = Arc::new(advertised);
        self
    }

    /// Also accepts the argument `alias` in place of the required `name`
    /// (exactly one of the two): the validation schema takes either, the
    /// advertised schema keeps naming only `name`. The argument type reads
    /// both (`#[serde(alias = ...)]`).
    pub fn accepting_alias(mut self, alias: &'static str, name: &'static str) -> ToolDef<S> {
        let mut schema = (*self.validation_schema).clone();
        let property = schema.get("properties").and_then(|p| p.get(name)).cloned();
        if let (Some(property), Some(Value::Object(properties))) =
            (property, schema.get_mut("properties"))
        {
            properties.insert(alias.to_owned(), property);
        }
        if let Some(Value::Array(required)) = schema.get_mut("required") {
            required.retain(|r| r != name);
        }
        schema.insert(
            "oneOf".to_owned(),
            serde_json::json!([{ "required": [name] }, { "required": [alias] }]),
        );
        self.validation_schema = Arc::new(schema);
        self
    }

    /// How the tool presents itself.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The tool's name.
    pub fn name(&self) -> &'static str {
        self.spec.name
    }

    /// The schema the arguments are validated against: the generated one,
    /// which also takes `null` for an optional field (meaning absent).
    pub fn validation_schema(&self) -> &Arc<Map<String, Value>> {
        &self.validation_schema
    }

    /// Runs the handler on arguments that passed validation.
    pub fn run(&self, state: &S, args: Value, call: &CallContext) -> ToolResult<Reply> {
        (self.handler)(state, args, call)
    }
}

/// The output schema of a tool that answers text, made once and shared.
fn text_output_schema() -> Arc<Map<String, Value>> {
    static SCHEMA: std::sync::LazyLock<Arc<Map<String, Value>>> =
        std::sync::LazyLock::new(|| Arc::new(schema::portable(&schema_of::<TextAnswer>())));
    SCHEMA.clone()
}

/// The schema of `A`, with every sub-schema inlined (some MCP clients do not
/// follow `$ref`) and without the `$schema`/`title` keys models do not need.
pub(crate) fn schema_of<A: JsonSchema>() -> Map<String, Value> {
    let settings = SchemaSettings::draft2020_12().with(|settings| {
        settings.inline_subschemas = true;
    });
    let schema = settings.into_generator().into_root_schema_for::<A>();
    let mut object = match schema.to_value() {
        Value::Object(object) => object,
        _ => Map::new(),
    };
    object.remove("$schema");
    object.remove("title");
    object
}
