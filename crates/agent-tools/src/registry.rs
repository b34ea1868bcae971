//! The tool registry: each tool's name, description, JSON Schema, whether it
//! mutates, whether it bounds its own output, and its handler.

use std::fmt;
use std::sync::Arc;

use agent_tools_error::{ToolError, ToolResult};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::dispatch::CallContext;
use crate::services::Services;

type Handler = dyn Fn(&Services, Value, &CallContext) -> ToolResult<String> + Send + Sync;

/// One tool: what it is called, how it describes itself, and what runs it.
#[derive(Clone)]
pub struct ToolDef {
    name: &'static str,
    description: &'static str,
    input_schema: Arc<Map<String, Value>>,
    mutating: bool,
    bounded: bool,
    handler: Arc<Handler>,
}

impl fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDef")
            .field("name", &self.name)
            .field("mutating", &self.mutating)
            .field("bounded", &self.bounded)
            .finish_non_exhaustive()
    }
}

impl ToolDef {
    /// Defines a tool whose arguments are `A`: the schema is generated from
    /// `A`, and the handler receives `A` already checked against it.
    pub(crate) fn typed<A>(
        name: &'static str,
        description: &'static str,
        mutating: bool,
        run: fn(&Services, A, &CallContext) -> ToolResult<String>,
    ) -> ToolDef
    where
        A: DeserializeOwned + JsonSchema + 'static,
    {
        let handler = move |services: &Services, args: Value, call: &CallContext| {
            let args: A = serde_json::from_value(args)
                .map_err(|err| ToolError::invalid_input(format!("{name}: {err}")))?;
            run(services, args, call)
        };
        ToolDef {
            name,
            description,
            input_schema: Arc::new(schema_of::<A>()),
            mutating,
            bounded: false,
            handler: Arc::new(handler),
        }
    }

    /// Marks the tool as capping its own output, so dispatch does not cut it.
    #[allow(dead_code)] // the bash tool bounds its own output
    pub(crate) fn bounding_itself(mut self) -> ToolDef {
        self.bounded = true;
        self
    }

    /// The tool's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// What the tool does, written for the model that calls it.
    pub fn description(&self) -> &'static str {
        self.description
    }

    /// The JSON Schema (an object schema) of the tool's arguments.
    pub fn input_schema(&self) -> &Arc<Map<String, Value>> {
        &self.input_schema
    }

    /// Whether the tool changes files or runs commands.
    pub fn mutating(&self) -> bool {
        self.mutating
    }

    /// Whether the tool caps its own output.
    pub fn bounded(&self) -> bool {
        self.bounded
    }

    pub(crate) fn run(
        &self,
        services: &Services,
        args: Value,
        call: &CallContext,
    ) -> ToolResult<String> {
        (self.handler)(services, args, call)
    }
}

/// The schema of `A`, with every sub-schema inlined (some MCP clients do not
/// follow `$ref`) and without the `$schema`/`title` keys models do not need.
fn schema_of<A: JsonSchema>() -> Map<String, Value> {
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
