//! Structured output: a tool's answer as a JSON object (MCP's
//! `structuredContent`) beside its text, when the server turns it on
//! ([`Config::structured_output`](crate::Config::structured_output)).
//!
//! The text stays exactly what it is without structured output; the copy
//! is derived from it in one place (`structured_copy`, called by the
//! pipeline after the text was bounded), so that every transport and
//! every call path carries the same copy. What the copy holds depends on
//! the tool ([`OutputKind`]): the text itself for tools that answer text
//! (their layout is their contract, and a second breakdown would double
//! the answer and could drift from it), the answer's JSON object for
//! tools that already answer JSON, and a description of images, sounds
//! and binary resources for tools that answer them (their bytes are not
//! copied: an image would count twice against the output budget).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::result::{Content, ResourceBody};

/// What a tool's structured copy is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputKind {
    /// `{"content": text}` ([`TextAnswer`]): the text items joined by
    /// newlines. The default.
    Text,
    /// [`MediaAnswer`]: the text, and one entry per non-text item.
    Media,
    /// The answer's one text item, a JSON object, without its `null`
    /// fields (absent means null: the portable schema names one type per
    /// field).
    Json,
}

/// The structured copy of a tool that answers text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TextAnswer {
    /// The answer's text, exactly as in its text content (several text
    /// items joined by newlines).
    pub content: String,
}

/// The structured copy of a tool that may answer images, sounds or binary
/// resources.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct MediaAnswer {
    /// The answer's text items joined by newlines; empty when it has none.
    pub content: String,
    /// The answer's other items, in order, described (their bytes are in
    /// the content items only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(default)]
    pub media: Vec<MediaItem>,
}

/// One non-text item of an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct MediaItem {
    /// What kind of content item carries it.
    #[serde(rename = "type")]
    pub kind: MediaKind,
    /// Its MIME type, when known.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The resource's URI (resources only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// Its size in bytes, before encoding.
    pub bytes: u64,
}

/// The kind of a non-text content item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MediaKind {
    /// An image item.
    Image,
    /// An audio item.
    Audio,
    /// An embedded resource.
    Resource,
}

/// Why an answer got no structured copy. Each leaves the text as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Omitted {
    /// The text and the copy together would pass the output budget.
    #[error(
        "the text ({text} bytes) and its structured copy ({copy} bytes) pass the output budget of {budget} bytes"
    )]
    OverBudget {
        /// Bytes of text.
        text: usize,
        /// Bytes of the serialized copy.
        copy: usize,
        /// `max_output_bytes`.
        budget: usize,
    },
    /// A tool declared to answer a JSON object answered something else.
    #[error("the answer is not one JSON object: {0}")]
    NotAnObject(String),
}

/// The structured copy of a successful answer's `content` for a tool of
/// `kind`, if it fits in `budget` bytes together with the text.
pub(crate) fn structured_copy(
    kind: OutputKind,
    content: &[Content],
    budget: usize,
) -> Result<Value, Omitted> {
    let texts: Vec<&str> = content.iter().filter_map(Content::as_text).collect();
    let joined = texts.join("\n");
    let copy = match kind {
        OutputKind::Text => to_value(&TextAnswer { content: joined }),
        OutputKind::Media => to_value(&MediaAnswer {
            content: joined,
            media: content.iter().filter_map(media_item).collect(),
        }),
        OutputKind::Json => match texts.as_slice() {
            [only] if texts.len() == content.len() => match serde_json::from_str::<Value>(only) {
                Ok(Value::Object(mut object)) => {
                    drop_nulls(&mut object);
                    Value::Object(object)
                }
                Ok(other) => {
                    return Err(Omitted::NotAnObject(format!(
                        "a JSON {}",
                        json_kind(&other)
                    )));
                }
                Err(err) => return Err(Omitted::NotAnObject(err.to_string())),
            },
            _ => {
                return Err(Omitted::NotAnObject(format!(
                    "{} items, {} of them text",
                    content.len(),
                    texts.len()
                )));
            }
        },
    };
    let text: usize = texts.iter().map(|t| t.len()).sum();
    let copy_len = serde_json::to_string(&copy).map_or(usize::MAX, |s| s.len());
    if text.saturating_add(copy_len) > budget {
        return Err(Omitted::OverBudget {
            text,
            copy: copy_len,
            budget,
        });
    }
    Ok(copy)
}

fn to_value<T: Serialize>(answer: &T) -> Value {
    // Strings, numbers and plain enums always serialize.
    serde_json::to_value(answer).unwrap_or_else(|_| Value::Object(Map::new()))
}

fn media_item(item: &Content) -> Option<MediaItem> {
    let len = |bytes: usize| u64::try_from(bytes).unwrap_or(u64::MAX);
    match item {
        Content::Text(_) => None,
        Content::Image { data, mime_type } => Some(MediaItem {
            kind: MediaKind::Image,
            mime_type: Some(mime_type.clone()),
            uri: None,
            bytes: len(data.len()),
        }),
        Content::Audio { data, mime_type } => Some(MediaItem {
            kind: MediaKind::Audio,
            mime_type: Some(mime_type.clone()),
            uri: None,
            bytes: len(data.len()),
        }),
        Content::Resource {
            uri,
            mime_type,
            body,
        } => Some(MediaItem {
            kind: MediaKind::Resource,
            mime_type: mime_type.clone(),
            uri: Some(uri.clone()),
            bytes: len(match body {
                ResourceBody::Text(text) => text.len(),
                ResourceBody::Blob(bytes) => bytes.len(),
            }),
        }),
    }
}

/// Removes every `null` field of `object` and of the objects inside it.
fn drop_nulls(object: &mut Map<String, Value>) {
    object.retain(|_, value| !value.is_null());
    for value in object.values_mut() {
        drop_nulls_in(value);
    }
}

fn drop_nulls_in(value: &mut Value) {
    match value {
        Value::Object(object) => drop_nulls(object),
        Value::Array(items) => items.iter_mut().for_each(drop_nulls_in),
        _ => {}
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_copied_whole_and_joined() {
        let content = [Content::text("a\n"), Content::text("b")];
        assert_eq!(
            structured_copy(OutputKind::Text, &content, 1000),
            Ok(json!({"content": "a\n\nb"}))
        );
    }

    #[test]
    fn media_is_described_not_copied() {
        let content = [
            Content::Image {
                data: vec![0; 10],
                mime_type: "image/png".into(),
            },
            Content::blob("file:///x.bin", "application/octet-stream", vec![1, 2]),
        ];
        assert_eq!(
            structured_copy(OutputKind::Media, &content, 1000),
            Ok(json!({"content": "", "media": [
                {"type": "image", "mimeType": "image/png", "bytes": 10},
                {"type": "resource", "mimeType": "application/octet-stream",
                 "uri": "file:///x.bin", "bytes": 2},
            ]}))
        );
        assert_eq!(
            structured_copy(OutputKind::Media, &[Content::text("t")], 1000),
            Ok(json!({"content": "t"}))
        );
    }

    #[test]
    fn json_answers_lose_their_nulls_and_must_be_objects() {
        let content = [Content::text(
            r#"{"a":null,"b":[{"c":null,"d":1},null],"e":{"f":null}}"#,
        )];
        assert_eq!(
            structured_copy(OutputKind::Json, &content, 1000),
            Ok(json!({"b": [{"d": 1}, null], "e": {}}))
        );
        for bad in ["[1]", "not json", "\"s\""] {
            assert!(matches!(
                structured_copy(OutputKind::Json, &[Content::text(bad)], 1000),
                Err(Omitted::NotAnObject(_))
            ));
        }
        let two = [Content::text("{}"), Content::text("{}")];
        assert!(matches!(
            structured_copy(OutputKind::Json, &two, 1000),
            Err(Omitted::NotAnObject(_))
        ));
    }

    #[test]
    fn a_copy_past_the_budget_is_omitted() {
        let content = [Content::text("x".repeat(60))];
        // 60 bytes of text and a 74-byte copy.
        assert!(structured_copy(OutputKind::Text, &content, 134).is_ok());
        assert_eq!(
            structured_copy(OutputKind::Text, &content, 133),
            Err(Omitted::OverBudget {
                text: 60,
                copy: 74,
                budget: 133
            })
        );
    }
}
