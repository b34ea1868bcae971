//! Argument schemas in a form every MCP client and model API takes.
//!
//! schemars writes what serde can read: `"format": "uint64"` on integers
//! (Ajv-based clients warn about the unknown format, Gemini refuses it),
//! `"type": ["string", "null"]` for an `Option` (Gemini refuses type lists),
//! `oneOf` of constants for an enum. [`portable`] rewrites a schema into the
//! small subset [`portability_problems`] accepts: one type per schema,
//! integer ranges as `minimum`/`maximum`, enums as `enum`, optional fields
//! simply left out of `required`. The generated schema stays the one the
//! arguments are validated against (it takes `null` for an optional field,
//! meaning absent, as it always did); the portable one is what is advertised.

use serde_json::{Map, Value};

/// The largest integer every JSON number reader holds exactly (2^53 - 1).
const SAFE_INTEGER_MAX: i64 = 9_007_199_254_740_991;

/// The keywords a portable schema may use.
pub const PORTABLE_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "default",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
];

/// The types a portable schema may name (one per schema).
pub const PORTABLE_TYPES: &[&str] = &["object", "array", "string", "integer", "number", "boolean"];

/// `schema` rewritten into the portable subset (see the module's doc).
pub fn portable(schema: &Map<String, Value>) -> Map<String, Value> {
    let mut out = schema.clone();
    out.remove("$schema");
    out.remove("title");
    make_portable(&mut out);
    out
}

fn make_portable(schema: &mut Map<String, Value>) {
    // An Option of a sub-schema: `anyOf`/`oneOf` with a `null` branch.
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get_mut(key) {
            branches.retain(|branch| branch.get("type") != Some(&Value::from("null")));
            if branches.len() == 1
                && let Some(Value::Object(only)) = branches.pop()
            {
                schema.remove(key);
                for (k, v) in only {
                    schema.entry(k).or_insert(v);
                }
            }
        }
    }
    // An enum of unit variants: constants with their own descriptions.
    for key in ["oneOf", "anyOf"] {
        let constants = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|branches| {
                branches
                    .iter()
                    .map(|branch| branch.get("const").cloned())
                    .collect::<Option<Vec<Value>>>()
            });
        if let Some(constants) = constants {
            let all_strings = constants.iter().all(Value::is_string);
            schema.remove(key);
            if all_strings {
                schema.insert("type".into(), Value::from("string"));
            }
            schema.insert("enum".into(), Value::Array(constants));
        }
    }
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            schema.insert("type".into(), only);
        }
    }
    if schema.get("default") == Some(&Value::Null) {
        schema.remove("default");
    }
    if let Some(Value::String(format)) = schema.get("format")
        && let Some((min, max)) = integer_range(format)
    {
        schema.remove("format");
        schema.entry("minimum").or_insert(Value::from(min));
        // A range schemars set from an attribute stays as it is.
        schema.entry("maximum").or_insert(Value::from(max));
    }
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for property in properties.values_mut() {
            if let Value::Object(property) = property {
                make_portable(property);
            }
        }
    }
    if let Some(Value::Object(items)) = schema.get_mut("items") {
        make_portable(items);
    }
}

/// The range of one of schemars' integer formats, capped to what every
/// reader holds exactly.
fn integer_range(format: &str) -> Option<(i64, i64)> {
    Some(match format {
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        "uint64" | "uint" => (0, SAFE_INTEGER_MAX),
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" | "int" => (-SAFE_INTEGER_MAX, SAFE_INTEGER_MAX),
        _ => return None,
    })
}

/// What keeps `schema` (a tool's argument schema) out of the portable
/// subset; empty when it is portable. Each problem names where it is.
pub fn portability_problems(schema: &Map<String, Value>) -> Vec<String> {
    let mut problems = Vec::new();
    if schema.get("type") != Some(&Value::from("object")) {
        problems.push("the top level must be `\"type\": \"object\"`".to_string());
    }
    check(schema, "#", &mut problems);
    problems
}

fn check(schema: &Map<String, Value>, at: &str, problems: &mut Vec<String>) {
    for (key, value) in schema {
        if !PORTABLE_KEYWORDS.contains(&key.as_str()) {
            problems.push(format!("{at}: keyword `{key}` is not portable"));
            continue;
        }
        match (key.as_str(), value) {
            ("type", Value::String(name)) if PORTABLE_TYPES.contains(&name.as_str()) => {}
            ("type", other) => problems.push(format!(
                "{at}: `type` must be one of {PORTABLE_TYPES:?}, not {other}"
            )),
            ("description", Value::String(_)) => {}
            ("additionalProperties", Value::Bool(_)) => {}
            ("required", Value::Array(names)) => {
                for name in names {
                    let known = name.as_str().is_some_and(|name| {
                        schema.get("properties").and_then(|p| p.get(name)).is_some()
                    });
                    if !known {
                        problems.push(format!("{at}: required {name} is not a property"));
                    }
                }
            }
            ("properties", Value::Object(properties)) => {
                for (name, property) in properties {
                    match property {
                        Value::Object(property) => {
                            check(property, &format!("{at}/properties/{name}"), problems);
                        }
                        _ => problems.push(format!("{at}/properties/{name}: not a schema")),
                    }
                }
            }
            ("items", Value::Object(items)) => check(items, &format!("{at}/items"), problems),
            ("enum", Value::Array(values)) if !values.is_empty() => {}
            ("default", _) => {}
            ("minimum" | "maximum", Value::Number(_)) => {}
            ("minItems" | "maxItems" | "minLength" | "maxLength", Value::Number(n))
                if n.is_u64() => {}
            (key, other) => problems.push(format!("{at}: `{key}` has an unusable value {other}")),
        }
    }
    if schema.contains_key("properties") && schema.get("type") != Some(&Value::from("object")) {
        problems.push(format!("{at}: `properties` without `\"type\": \"object\"`"));
    }
    if schema.contains_key("items") && schema.get("type") != Some(&Value::from("array")) {
        problems.push(format!("{at}: `items` without `\"type\": \"array\"`"));
    }
    if !schema.contains_key("type") && !schema.contains_key("enum") {
        problems.push(format!("{at}: no `type`"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("a test schema is an object"),
        }
    }

    #[test]
    fn rewrites_what_schemars_emits_into_the_subset() {
        let generated = object(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "limit": {"type": "integer", "format": "uint64", "minimum": 1, "default": 2000},
                "offset": {"type": "integer", "format": "int64"},
                "cwd": {"type": ["string", "null"], "default": null},
                "small": {"type": ["integer", "null"], "format": "uint32", "minimum": 0},
                "mode": {"oneOf": [
                    {"const": "a", "type": "string", "description": "A."},
                    {"const": "b", "type": "string"}
                ], "default": "a"},
                "nested": {"anyOf": [
                    {"type": "object", "properties": {"n": {"type": "integer", "format": "int32"}}},
                    {"type": "null"}
                ], "description": "kept"},
                "list": {"type": "array", "items": {"type": ["boolean", "null"]}}
            },
            "required": ["limit"]
        }));
        let portable = portable(&generated);
        assert_eq!(
            Value::Object(portable.clone()),
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "limit": {"type": "integer", "minimum": 1, "maximum": SAFE_INTEGER_MAX, "default": 2000},
                    "offset": {"type": "integer", "minimum": -SAFE_INTEGER_MAX, "maximum": SAFE_INTEGER_MAX},
                    "cwd": {"type": "string"},
                    "small": {"type": "integer", "minimum": 0, "maximum": u32::MAX},
                    "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                    "nested": {"type": "object", "description": "kept", "properties": {
                        "n": {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX}
                    }},
                    "list": {"type": "array", "items": {"type": "boolean"}}
                },
                "required": ["limit"]
            })
        );
        assert_eq!(portability_problems(&portable), Vec::<String>::new());
        assert!(!portability_problems(&generated).is_empty());
    }

    #[test]
    fn the_checker_names_each_problem() {
        let bad = object(json!({
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": {"type": "integer", "format": "uint64"},
                "c": {"$ref": "#/$defs/C"},
                "d": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "e": {"type": "object", "additionalProperties": {"type": "string"}}
            },
            "required": ["a", "zz"]
        }));
        let problems = portability_problems(&bad);
        for expected in [
            "#/properties/a: `type` must be one of",
            "#/properties/b: keyword `format`",
            "#/properties/c: keyword `$ref`",
            "#/properties/d: keyword `anyOf`",
            "#/properties/e: `additionalProperties` has an unusable value",
            "#: required \"zz\" is not a property",
        ] {
            assert!(
                problems.iter().any(|p| p.starts_with(expected)),
                "{expected} missing from {problems:#?}"
            );
        }
        assert_eq!(
            portability_problems(&object(json!({"type": "array"}))),
            ["the top level must be `\"type\": \"object\"`"]
        );
    }
}
