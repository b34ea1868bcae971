//! MCP roots: when the tool set takes its allowed directories from the
//! client, they are asked for with `roots/list` once the client is
//! initialized, and again after `notifications/roots/list_changed`
//! (coalesced: one request out at a time, bounded in time).

// rmcp marks roots deprecated (a later protocol revision drops them); the
// clients of today still announce their folders this way.
#![allow(deprecated)]

use std::os::unix::ffi::OsStringExt as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ClientResult, ListRootsRequest, ServerRequest};
use rmcp::service::{Peer, PeerRequestOptions};

use crate::ToolSet;

/// How long the client has to answer `roots/list`: past it the request is
/// cancelled and the roots stay as they were.
pub(crate) const ROOTS_WAIT: Duration = Duration::from_secs(30);

/// The refreshes of one connection, coalesced: at most one `roots/list`
/// is out at a time, and however many changes are announced meanwhile,
/// one more refresh follows it. A client announcing changes in a flood
/// (or never answering) thus costs one request, not one per notice.
#[derive(Debug, Default)]
pub(crate) struct Refresher {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    running: bool,
    again: bool,
}

impl Refresher {
    /// Whether a refresh starts now; false when one runs (it will run
    /// once more when done).
    fn begin(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.running {
            state.again = true;
            return false;
        }
        state.running = true;
        true
    }

    /// Whether to refresh once more; false ends the run.
    fn finish(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if std::mem::take(&mut state.again) {
            return true;
        }
        state.running = false;
        false
    }
}

/// Asks the client for its roots and hands them to the tool set, on a task
/// of its own: the answer comes through the same connection, which must
/// keep being served meanwhile. Nothing happens when the tool set does not
/// want them or the client did not declare the `roots` capability; a
/// refresh asked for while one runs is folded into one that follows it.
pub(crate) fn refresh<T: ToolSet>(
    tools: Arc<T>,
    peer: Peer<RoleServer>,
    refresher: Arc<Refresher>,
) {
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
    if !refresher.begin() {
        return;
    }
    tokio::spawn(async move {
        loop {
            refresh_once(&*tools, &peer).await;
            if !refresher.finish() {
                break;
            }
        }
    });
}

/// One `roots/list`, waited for at most [`ROOTS_WAIT`].
async fn refresh_once<T: ToolSet>(tools: &T, peer: &Peer<RoleServer>) {
    let request = ServerRequest::ListRootsRequest(ListRootsRequest {
        method: Default::default(),
        extensions: Default::default(),
    });
    let options = PeerRequestOptions::with_timeout(ROOTS_WAIT);
    let answer = match peer.send_request_with_option(request, options).await {
        Ok(handle) => handle.await_response().await,
        Err(err) => Err(err),
    };
    let listed = match answer {
        Ok(ClientResult::ListRootsResult(listed)) => listed,
        Ok(_) => {
            tracing::warn!("the client answered roots/list with something else");
            return;
        }
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
    fn refreshes_coalesce_into_one_running_and_one_more() {
        let refresher = Refresher::default();
        assert!(refresher.begin(), "the first starts");
        for _ in 0..100_000 {
            assert!(!refresher.begin(), "the others fold into the running one");
        }
        assert!(refresher.finish(), "one more follows for all of them");
        assert!(!refresher.finish(), "and then the run ends");
        assert!(refresher.begin(), "a later change starts a new run");
    }

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
