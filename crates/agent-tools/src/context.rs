//! What a call carries besides its arguments: a cancel flag and the session
//! it belongs to. A leaf module.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A flag a caller sets to ask a running call to stop (a command is killed;
/// quick file tools finish anyway). Clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the call to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// The raw flag, for back-ends that poll it.
    pub fn flag(&self) -> &AtomicBool {
        &self.0
    }
}

/// State a surface keeps for one connection between its calls (which files
/// were read, and when, say). Made by the surface
/// ([`Surface::new_session`](crate::Surface::new_session)); the tools of the
/// surface reach it through [`CallContext::session`]. Clones share the state,
/// which therefore guards its own mutability (a `Mutex` inside, say).
#[derive(Clone, Default)]
pub struct Session(Option<Arc<dyn Any + Send + Sync>>);

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Session")
            .field(&if self.0.is_some() { "set" } else { "unset" })
            .finish()
    }
}

impl Session {
    /// A session holding `state`.
    pub fn new<T: Any + Send + Sync>(state: T) -> Self {
        Session(Some(Arc::new(state)))
    }

    /// The state, when it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.as_deref()?.downcast_ref()
    }

    /// Whether the session holds any state.
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }
}

/// Per-call context: handed in by the caller, passed on to the tool.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// Set when the caller gives up on the call.
    pub cancel: CancelToken,
    /// The connection's session. Left unset, the tools instance's own
    /// session is used (one shared by every call that brings none).
    pub session: Session,
    /// Who made the call, as the transport authenticated it (over HTTP,
    /// the label of the request's token). `None` is the local user: stdio
    /// and one-shot calls, which the journal records as `local`.
    pub principal: Option<Arc<str>>,
}

impl CallContext {
    /// A context for calls of one session.
    pub fn in_session(session: Session) -> Self {
        CallContext {
            cancel: CancelToken::new(),
            session,
            principal: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_state_is_shared_by_clones_and_typed() {
        let session = Session::new(std::sync::Mutex::new(0u32));
        let clone = session.clone();
        if let Some(count) = clone.get::<std::sync::Mutex<u32>>() {
            *count.lock().unwrap() += 1;
        }
        assert_eq!(
            *session
                .get::<std::sync::Mutex<u32>>()
                .unwrap()
                .lock()
                .unwrap(),
            1
        );
        assert!(session.get::<String>().is_none());
        assert!(!Session::default().is_set());
        assert!(Session::default().get::<u32>().is_none());
    }

    #[test]
    fn cancel_is_seen_by_clones() {
        let token = CancelToken::new();
        let clone = token.clone();
        assert!(!clone.is_cancelled());
        token.cancel();
        assert!(clone.is_cancelled());
    }
}
