//! MCP roots: when the tool set takes its allowed directories from the
//! client, they are asked for with `roots/list` once the client is
//! initialized, and again on every `notifications/roots/list_changed`.

// rmcp marks roots deprecated (a later protocol revision drops them); the
// clients of today still announce their folders this way.
#![allow(deprecated)]

use std::os::unix::ffi::OsStringExt as _;
use std::path::PathBuf;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::Peer;

use crate::ToolSet;

/// Asks the client for its roots and hands them to the tool set, on a task
/// of its own: the answer comes through the same connection, which must
/// keep being served meanwhile. Nothing happens when the tool set does not
/// want them or the client did not declare the `roots` capability.
pub(crate) fn refresh<T: ToolSet>(tools: Arc<T>, peer: Peer<RoleServer>) {
    if !tools.wants_client_roots() {
        return;
    }
    let declared = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.roots.is_some());
    if !declared {
        tracing::warn!(
            "no allowed directory: give --root DIR, or use a client that announces its roots"
        );
        return;
    }
    tokio::spawn(async move {
        let listed = match peer.list_roots().await {
            Ok(listed) => listed,
            Err(err) => {
                tracing::warn!(error = %err, "the client did not list its roots");
                return;
            }
        };
        let mut paths = Vec::new();
        for root in &listed.roots {
            match file_uri_path(&root.uri) {
                Some(path) => paths.push(path),
                None => {
                    tracing::warn!(uri = %root.uri, "a root that is not a file:// URI is ignored")
                }
            }
        }
        if let Err(err) = tools.use_client_roots(&paths) {
            tracing::warn!(error = %err, "the client's roots were not taken");
        }
    });
}

/// The local path of a `file://` URI (empty or `localhost` host), percent
/// escapes decoded; `None` for anything else.
pub(crate) fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(rest).collect();
    Some(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_uri_path("file:///home/a%20b/c"),
            Some(PathBuf::from("/home/a b/c"))
        );
        assert_eq!(
            file_uri_path("file://localhost/srv"),
            Some(PathBuf::from("/srv"))
        );
        assert_eq!(file_uri_path("https://x/y"), None);
        assert_eq!(file_uri_path("file://host/y"), None);
        assert_eq!(file_uri_path("file:relative"), None);
    }
}
