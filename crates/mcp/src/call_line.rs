//! The common line of a session, a plain `tools/call` request, read
//! straight into rmcp's model types.
//!
//! rmcp reads a client's message by buffering the whole line as a generic
//! tree, checking its shape, then trying the variants of an untagged enum
//! over that tree (each failed try builds an error with its message) until
//! the request whose method matches. For a small call that was about a
//! fifth of the server's processor time per round trip (22 µs of some 78
//! µs, `perf` over 1,500 calls spaced 1 ms apart). A line that is exactly
//! a `tools/call` request (the four members of one, nothing else, and no
//! `_meta` in its params) is read here into the same types rmcp would make
//! of it: its `jsonrpc`, `id` and params by rmcp's own `Deserialize`
//! impls, and the request with no extensions (only `_meta` makes any).
//! Anything else, a line this reader refuses included, is read by rmcp as
//! before, so what a line means never depends on which reader took it.

use std::fmt;

use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, JsonRpcRequest,
    JsonRpcVersion2_0, Request, RequestId,
};
use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

/// The members of a plain `tools/call` request; any other member makes the
/// line rmcp's to read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallLine<'a> {
    /// Read only to be checked (`"2.0"`).
    #[serde(rename = "jsonrpc")]
    _version: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    method: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    params: &'a RawValue,
}

/// `text` read as rmcp reads it, when it is a plain `tools/call` request
/// (see the module docs); `None` leaves it to rmcp.
pub(crate) fn read_plain_call(text: &[u8]) -> Option<ClientJsonRpcMessage> {
    let line: CallLine<'_> = serde_json::from_slice(text).ok()?;
    if line.method != "tools/call" || names_meta(line.params)? {
        return None;
    }
    let params: CallToolRequestParams = serde_json::from_str(line.params.get()).ok()?;
    Some(JsonRpcMessage::Request(JsonRpcRequest::new(
        line.id,
        ClientRequest::CallToolRequest(Request::new(params)),
    )))
}

/// Whether the object `params` has a `_meta` member (whatever its value);
/// `None` when `params` is not an object.
fn names_meta(params: &RawValue) -> Option<bool> {
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
            let mut meta = false;
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                meta |= key == "_meta";
                map.next_value::<IgnoredAny>()?;
            }
            Ok(meta)
        }
    }
    let mut reader = serde_json::Deserializer::from_str(params.get());
    serde::Deserializer::deserialize_map(&mut reader, Keys).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What rmcp makes of `line`, and what this reader does, when it takes it.
    fn both(line: &str) -> (Option<String>, Option<String>) {
        let rmcp = serde_json::from_str::<ClientJsonRpcMessage>(line)
            .ok()
            .map(|m| format!("{m:?}"));
        let ours = read_plain_call(line.as_bytes()).map(|m| format!("{m:?}"));
        (rmcp, ours)
    }

    #[test]
    fn a_plain_call_is_read_as_rmcp_reads_it() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}"#,
            r#"{"jsonrpc":"2.0","id":"x-7","method":"tools/call","params":{"name":"grep","arguments":{"pattern":"a\"b\\u00e9","n":1.5,"big":123456789012345678901234567890,"neg":-3,"list":[1,{"k":null}],"t":true}}}"#,
            r#"{"params":{"arguments":{},"name":"glob"},"method":"tools/call","id":0,"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools\/call","params":{"name":"x","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{},"requestState":"s","unknownMember":5}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","arguments":{"a":1,"a":2}}}"#,
            r#"  {"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"x"}}  "#,
        ];
        for line in lines {
            let (rmcp, ours) = both(line);
            assert!(ours.is_some(), "not taken: {line}");
            assert_eq!(ours, rmcp, "{line}");
        }
    }

    #[test]
    fn anything_but_a_plain_call_is_left_to_rmcp() {
        let lines = [
            // `_meta` makes extensions: rmcp's to read.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":null}}"#,
            // Another method, a member more, a notification, a response.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            // Members repeated, a wrong version, params that are no object
            // or lack a name, arguments that are no object, a bad id.
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            "not json",
        ];
        for line in lines {
            assert!(read_plain_call(line.as_bytes()).is_none(), "taken: {line}");
        }
    }
}
