//! What a call produces: content items with an error flag, or a protocol
//! error. A leaf module: it knows nothing of tools, surfaces or the pipeline.

use std::borrow::Cow;

use agent_tools_error::ErrorCode;
use serde::Serialize;

/// One item of a call's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Text for the model.
    Text(String),
    /// An image, as raw bytes (encoded for the wire by the transport).
    Image {
        /// The bytes of the image file.
        data: Vec<u8>,
        /// Its MIME type, e.g. `image/png`.
        mime_type: String,
    },
    /// A sound, as raw bytes.
    Audio {
        /// The bytes of the audio file.
        data: Vec<u8>,
        /// Its MIME type, e.g. `audio/wav`.
        mime_type: String,
    },
    /// A resource carried whole: a file's text, or its bytes (a binary file
    /// a text item cannot hold).
    Resource {
        /// The resource's URI, e.g. `file:///work/logo.bin`.
        uri: String,
        /// Its MIME type, when known.
        mime_type: Option<String>,
        /// What it holds.
        body: ResourceBody,
    },
}

/// The contents of a [`Content::Resource`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceBody {
    /// Text.
    Text(String),
    /// Raw bytes (base64 on the wire).
    Blob(Vec<u8>),
}

impl Content {
    /// A text item.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(text.into())
    }

    /// Binary bytes with a MIME type, carried as an embedded resource (MCP
    /// has no bare blob item).
    pub fn blob(uri: impl Into<String>, mime_type: impl Into<String>, data: Vec<u8>) -> Self {
        Content::Resource {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Blob(data),
        }
    }

    /// The text of a text item.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(text) => Some(text),
            Content::Image { .. } | Content::Audio { .. } | Content::Resource { .. } => None,
        }
    }
}

/// What a tool's handler returns when it ran: its content, and whether the
/// content reports a failure (a command's non-zero exit on a surface whose
/// contract says so, say). Failures of the engine are `Err(ToolError)`
/// instead, which the surface renders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The items, in order.
    pub content: Vec<Content>,
    /// True when the content reports a failure.
    pub is_error: bool,
}

impl Reply {
    /// A successful reply of several items.
    pub fn items(content: Vec<Content>) -> Self {
        Reply {
            content,
            is_error: false,
        }
    }
}

impl From<String> for Reply {
    fn from(text: String) -> Self {
        Reply::items(vec![Content::Text(text)])
    }
}

/// Why a call failed, typed: read this instead of the rendered text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    /// The engine (or the pipeline: unknown tool, bad arguments) failed with
    /// this code.
    Error(ErrorCode),
    /// The caller cancelled the call and it stopped.
    Cancelled,
}

/// A `tools/call` result: content, and whether it is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResult {
    /// The items, in order.
    pub content: Vec<Content>,
    /// True when the result reports a failure.
    pub is_error: bool,
    /// Why it failed, when the failure came from the engine, the pipeline or
    /// a cancellation (a failure a tool reports in its content, such as a
    /// non-zero exit, has none).
    pub cause: Option<Cause>,
    /// The structured copy of a successful answer (MCP's
    /// `structuredContent`), when structured output is on and the copy
    /// fits (see [`crate::structured`]); never on an error.
    pub structured: Option<serde_json::Value>,
}

/// A failure answered as a JSON-RPC error instead of a result, where a
/// surface's contract says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    /// The JSON-RPC error code, e.g. -32602.
    pub code: i64,
    /// What went wrong and what to do next.
    pub message: String,
    /// Why, typed.
    pub cause: Option<Cause>,
}

/// The outcome of one call, as the surface rendered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    /// A result (which may report an error).
    Result(CallResult),
    /// A JSON-RPC error response.
    Protocol(ProtocolError),
}

impl CallOutcome {
    /// A success carrying `reply`'s content.
    pub fn from_reply(reply: Reply) -> Self {
        CallOutcome::Result(CallResult {
            content: reply.content,
            is_error: reply.is_error,
            cause: None,
            structured: None,
        })
    }

    /// An error result of one text item.
    pub fn error_text(text: String, cause: Cause) -> Self {
        CallOutcome::Result(CallResult {
            content: vec![Content::Text(text)],
            is_error: true,
            cause: Some(cause),
            structured: None,
        })
    }

    /// Whether the call failed (an error result or a protocol error).
    pub fn is_error(&self) -> bool {
        match self {
            CallOutcome::Result(result) => result.is_error,
            CallOutcome::Protocol(_) => true,
        }
    }

    /// Why the call failed, when known.
    pub fn cause(&self) -> Option<Cause> {
        match self {
            CallOutcome::Result(result) => result.cause,
            CallOutcome::Protocol(error) => error.cause,
        }
    }

    /// The engine's error code, when the call failed with one.
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self.cause()? {
            Cause::Error(code) => Some(code),
            Cause::Cancelled => None,
        }
    }

    /// Whether the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cause() == Some(Cause::Cancelled)
    }

    /// The text of the outcome: the text items joined by newlines (borrowed
    /// when there is one), or a protocol error's message. Other items are
    /// left out.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            CallOutcome::Result(result) => {
                let mut texts = result.content.iter().filter_map(Content::as_text);
                match (texts.next(), texts.next()) {
                    (None, _) => Cow::Borrowed(""),
                    (Some(only), None) => Cow::Borrowed(only),
                    (Some(first), Some(second)) => {
                        let mut joined = format!("{first}\n{second}");
                        for text in texts {
                            joined.push('\n');
                            joined.push_str(text);
                        }
                        Cow::Owned(joined)
                    }
                }
            }
            CallOutcome::Protocol(error) => Cow::Borrowed(&error.message),
        }
    }

    /// The outcome as text with an error flag: the shape callers of the
    /// library used before results had several items.
    pub fn into_dispatch_result(self) -> DispatchResult {
        let cause = self.cause();
        let is_error = self.is_error();
        let text = match self {
            // One text item, the usual case: moved, not copied.
            CallOutcome::Result(CallResult { mut content, .. })
                if content.len() == 1 && content[0].as_text().is_some() =>
            {
                match content.pop() {
                    Some(Content::Text(text)) => text,
                    _ => String::new(),
                }
            }
            CallOutcome::Protocol(error) => error.message,
            other => other.text().into_owned(),
        };
        DispatchResult {
            is_error,
            text,
            cause,
        }
    }
}

/// A call's outcome as text: the text items joined, and whether it is an
/// error (for the default surface, the text is then a JSON error envelope).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DispatchResult {
    /// True when the call failed.
    pub is_error: bool,
    /// The tool's output, or the error as the surface renders it.
    pub text: String,
    #[serde(skip)]
    cause: Option<Cause>,
}

impl DispatchResult {
    /// The error code, when the call failed with one.
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self.cause? {
            Cause::Error(code) => Some(code),
            Cause::Cancelled => None,
        }
    }

    /// Why the call failed, when known.
    pub fn cause(&self) -> Option<Cause> {
        self.cause
    }

    /// Whether the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cause == Some(Cause::Cancelled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(content: Vec<Content>) -> CallOutcome {
        CallOutcome::Result(CallResult {
            content,
            is_error: false,
            cause: None,
            structured: None,
        })
    }

    #[test]
    fn text_joins_text_items_and_skips_the_rest() {
        assert_eq!(result(vec![]).text(), "");
        assert_eq!(result(vec![Content::text("a")]).text(), "a");
        let mixed = result(vec![
            Content::text("a"),
            Content::blob("file:///x", "application/octet-stream", vec![0, 1]),
            Content::text("b"),
            Content::text("c"),
        ]);
        assert_eq!(mixed.text(), "a\nb\nc");
        assert_eq!(mixed.into_dispatch_result().text, "a\nb\nc");
    }

    #[test]
    fn causes_are_typed() {
        let failed = CallOutcome::error_text("x".into(), Cause::Error(ErrorCode::NoMatch));
        assert!(failed.is_error());
        assert_eq!(failed.error_code(), Some(ErrorCode::NoMatch));
        assert!(!failed.is_cancelled());
        let text = failed.into_dispatch_result();
        assert_eq!(text.error_code(), Some(ErrorCode::NoMatch));

        let cancelled = CallOutcome::error_text("x".into(), Cause::Cancelled);
        assert!(cancelled.is_cancelled());
        assert_eq!(cancelled.error_code(), None);
        assert!(cancelled.into_dispatch_result().is_cancelled());

        let protocol = CallOutcome::Protocol(ProtocolError {
            code: -32602,
            message: "bad".into(),
            cause: Some(Cause::Error(ErrorCode::InvalidInput)),
        });
        assert!(protocol.is_error());
        assert_eq!(protocol.text(), "bad");
        let text = protocol.into_dispatch_result();
        assert!(text.is_error);
        assert_eq!(text.error_code(), Some(ErrorCode::InvalidInput));

        let reported = CallOutcome::from_reply(Reply {
            content: vec![Content::text("exit 1")],
            is_error: true,
        });
        assert!(reported.is_error());
        assert_eq!(reported.cause(), None);
    }
}
