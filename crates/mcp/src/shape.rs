//! The wire shape of what the server answers, by protocol version: the one
//! place that decides it. Every response the stdio transport writes, the
//! calls it answers itself and those the protocol library answers alike,
//! passes through `shape_message` with the version of its request (the
//! version named in the request's `_meta`, else the one negotiated at
//! `initialize`).
//!
//! What changes with the version (rmcp's result types carry the newest
//! shape; older versions lack parts of it):
//!
//! * Before 2026-07-28 a result has no `resultType: "complete"`, and a
//!   tool's structured output and output schema are objects only (a
//!   non-object structured value moves into the first text item).
//! * From 2026-07-28 cacheable results carry their caching hints, and
//!   "resource not found" is the standard invalid-params error.

use rmcp::model::{
    ErrorCode, ErrorData, JsonRpcMessage, ProtocolVersion, ServerJsonRpcMessage, ServerResult,
};

/// Whether `version` is 2026-07-28 or later, when results took their
/// current shape. Versions are ISO dates, which order as text, so an
/// unknown later version counts as later.
pub fn has_result_type(version: &ProtocolVersion) -> bool {
    version.as_str() >= ProtocolVersion::V_2026_07_28.as_str()
}

/// Gives `result` the shape `version` defines.
pub fn shape(result: &mut ServerResult, version: &ProtocolVersion) {
    if has_result_type(version) {
        result.fill_missing_cache_hints();
    } else {
        result.strip_result_type_for_legacy_peer();
        result.strip_non_object_output_for_legacy_peer();
    }
}

/// Gives `error` the code `version` defines for it.
pub fn shape_error(error: &mut ErrorData, version: &ProtocolVersion) {
    if has_result_type(version) && error.code == ErrorCode::RESOURCE_NOT_FOUND {
        error.code = ErrorCode::INVALID_PARAMS;
    }
}

/// Shapes a response or an error response for `version`; other messages
/// (the server's own requests and notifications) are left as they are.
pub(crate) fn shape_message(message: &mut ServerJsonRpcMessage, version: &ProtocolVersion) {
    match message {
        JsonRpcMessage::Response(response) => shape(&mut response.result, version),
        JsonRpcMessage::Error(error) => shape_error(&mut error.error, version),
        JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CallToolResult, ContentBlock, ListToolsResult};
    use serde_json::{Value, json};

    fn wire(result: &ServerResult) -> Value {
        serde_json::to_value(result).unwrap()
    }

    /// Each version rmcp knows, shaped as its server handler shapes the
    /// results of a session on that version.
    #[test]
    fn every_known_version_gets_the_shape_rmcp_gives_it() {
        for version in ProtocolVersion::KNOWN_VERSIONS {
            let list =
                || ServerResult::CallToolResult(CallToolResult::structured(json!(["a", "b"])));
            let mut ours = list();
            shape(&mut ours, version);
            let mut library = list();
            if version.as_str() >= "2026-07-28" {
                library.fill_missing_cache_hints();
            } else {
                library.strip_result_type_for_legacy_peer();
                library.strip_non_object_output_for_legacy_peer();
            }
            assert_eq!(wire(&ours), wire(&library), "{version}");
            let legacy = !has_result_type(version);
            assert_eq!(wire(&ours).get("resultType").is_none(), legacy, "{version}");
            assert_eq!(
                wire(&ours).get("structuredContent").is_none(),
                legacy,
                "{version}"
            );
            let mut listed = ServerResult::ListToolsResult(ListToolsResult::with_all_items(vec![]));
            shape(&mut listed, version);
            assert_eq!(wire(&listed).get("ttlMs").is_some(), !legacy, "{version}");
            let mut error = ErrorData::resource_not_found("gone", None);
            shape_error(&mut error, version);
            let code = if legacy {
                ErrorCode::RESOURCE_NOT_FOUND
            } else {
                ErrorCode::INVALID_PARAMS
            };
            assert_eq!(error.code, code, "{version}");
        }
        // Shaping twice changes nothing: rmcp's handler shapes first, the
        // transport after it.
        let mut twice =
            ServerResult::CallToolResult(CallToolResult::success(vec![ContentBlock::text("x")]));
        shape(&mut twice, &ProtocolVersion::V_2025_06_18);
        let once = wire(&twice);
        shape(&mut twice, &ProtocolVersion::V_2025_06_18);
        assert_eq!(wire(&twice), once);
    }
}
