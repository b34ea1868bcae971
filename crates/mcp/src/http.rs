//! Serving the tools over Streamable HTTP (rmcp's server), behind a bearer
//! token, an `Origin` allow list and a `Host` check.
//!
//! A client that opens an MCP session (protocol versions before
//! 2026-07-28) gets a session of the surface of its own, as a stdio
//! connection does. A request outside any session (2026-07-28 is
//! stateless) uses the session of its principal: the label of the token it
//! presented, so a `Read` in one request lets an `Edit` in the next.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_tools::Session;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::{McpServer, ServerLimits, ToolSet};

/// One configured bearer token and the principal it names.
#[derive(Clone)]
pub struct Principal {
    /// The label: whose stateless session state a request uses.
    pub label: String,
    /// The secret sent as `Authorization: Bearer <token>`.
    pub token: String,
}

impl std::fmt::Debug for Principal {
    // The token never reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Principal")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

/// Who may call: tokens, or nobody checked (loopback only).
#[derive(Debug, Clone)]
pub enum Access {
    /// Every request carries one of these tokens.
    Tokens(Vec<Principal>),
    /// No token is asked for. Allowed only on a loopback address.
    NoAuthLoopback,
}

/// The label requests take when no token is asked for.
pub const ANONYMOUS: &str = "anonymous";

/// How the HTTP server is set up.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Who may call.
    pub access: Access,
    /// `Host` values accepted besides the loopback names (`host` or
    /// `host:port`): DNS rebinding names a foreign host.
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted (`scheme://host:port`); a request with any
    /// other `Origin` is refused with 403. Requests without one pass.
    pub allowed_origins: Vec<String>,
    /// How long an MCP session may be idle before it ends (its shells
    /// with it): long, since background commands outlive a turn.
    pub session_idle: Duration,
    /// Requests handled at once; more are answered 503.
    pub max_concurrent_requests: usize,
}

/// The default of [`HttpOptions::session_idle`]: an hour.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(3600);

/// The default of [`HttpOptions::max_concurrent_requests`].
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 64;

/// Why the HTTP server would not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpSetupError {
    /// Serving without a token was asked for on a non-loopback address.
    #[error("serving without a token is allowed only on a loopback address, not {0}")]
    NoAuthNotLoopback(SocketAddr),
    /// No token was configured.
    #[error("no token configured: give one, or serve on loopback with the no-auth flag")]
    NoTokens,
    /// A token was empty.
    #[error("the token of principal {0:?} is empty")]
    EmptyToken(String),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// The principal a request authenticated as, in its extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrincipalLabel(pub(crate) String);

/// Sessions of the surface for requests outside an MCP session, one per
/// principal.
#[derive(Default)]
pub(crate) struct PrincipalSessions {
    sessions: Mutex<HashMap<String, Session>>,
}

impl PrincipalSessions {
    /// The session of the principal the request in `context` authenticated
    /// as, if it is a stateless HTTP request; `None` for anything else (a
    /// request inside an MCP session, stdio).
    pub(crate) fn for_request<T: ToolSet>(
        &self,
        tools: &T,
        context: &rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Option<Session> {
        let parts = context.extensions.get::<axum::http::request::Parts>()?;
        if parts.headers.contains_key("mcp-session-id") {
            return None;
        }
        let label = parts.extensions.get::<PrincipalLabel>()?;
        let mut sessions = self
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Some(
            sessions
                .entry(label.0.clone())
                .or_insert_with(|| tools.new_session())
                .clone(),
        )
    }
}

struct Gate {
    access: Access,
    requests: Arc<tokio::sync::Semaphore>,
}

/// Checks the token (in constant time, against every token, so the time
/// says nothing about which matched) and bounds the requests at once.
async fn gate(State(gate): State<Arc<Gate>>, mut request: Request, next: Next) -> Response {
    let label = match &gate.access {
        Access::NoAuthLoopback => ANONYMOUS.to_owned(),
        Access::Tokens(principals) => match authenticate(principals, request.headers()) {
            Some(label) => label,
            None => {
                // Plain `Bearer`, no resource metadata: a client that saw
                // OAuth metadata would stop sending the static header.
                return (
                    StatusCode::UNAUTHORIZED,
                    [(header::WWW_AUTHENTICATE, "Bearer")],
                    "a valid bearer token is required\n",
                )
                    .into_response();
            }
        },
    };
    let Ok(_permit) = gate.requests.clone().try_acquire_owned() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            "too many requests at once\n",
        )
            .into_response();
    };
    tracing::debug!(principal = %label, method = %request.method(), "request");
    request.extensions_mut().insert(PrincipalLabel(label));
    next.run(request).await
}

fn authenticate(principals: &[Principal], headers: &HeaderMap) -> Option<String> {
    let presented = headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")?
        .trim();
    let mut found = None;
    for principal in principals {
        if constant_time_eq::constant_time_eq(presented.as_bytes(), principal.token.as_bytes())
            && found.is_none()
        {
            found = Some(principal.label.clone());
        }
    }
    found
}

async fn healthz() -> &'static str {
    "ok\n"
}

/// How long the end waits for open responses to finish once every call
/// was cancelled.
const END_GRACE: Duration = Duration::from_secs(2);

/// Serves `tools` over Streamable HTTP at `/mcp` (and `/healthz`) until
/// `stop` completes; then stops accepting, cancels every call (their
/// commands killed), ends the sessions and returns. `ready` gets the bound
/// address (port 0 picks one).
pub async fn serve_http<T: ToolSet>(
    tools: T,
    limits: ServerLimits,
    options: HttpOptions,
    ready: impl FnOnce(SocketAddr),
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    match &options.access {
        Access::NoAuthLoopback if !options.listen.ip().is_loopback() => {
            return Err(HttpSetupError::NoAuthNotLoopback(options.listen).into());
        }
        Access::Tokens(principals) if principals.is_empty() => {
            return Err(HttpSetupError::NoTokens.into());
        }
        Access::Tokens(principals) => {
            if let Some(empty) = principals.iter().find(|p| p.token.is_empty()) {
                return Err(HttpSetupError::EmptyToken(empty.label.clone()).into());
            }
        }
        Access::NoAuthLoopback => {}
    }
    let frame_bytes = limits.frame_bytes;
    let mut server = McpServer::with_limits(tools, limits);
    server.principals = Some(Arc::default());
    let flow = server.flow.clone();
    flow.watch_brief_calls(tokio::runtime::Handle::current());
    let ended = CancellationToken::new();
    let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".into(), "::1".into()];
    hosts.extend(options.allowed_hosts.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(options.allowed_origins.clone())
        // rmcp checks no Origin unless told to: a browser page on any site
        // could otherwise reach a loopback server.
        .enforce_origin_validation()
        .with_max_request_body_bytes(frame_bytes)
        // A stateless answer waits for its call, so a client that goes away
        // cancels it.
        .with_json_response(true)
        .with_cancellation_token(ended.clone());
    let mut manager = LocalSessionManager::default();
    // rmcp ends an idle session after 300 s, which would kill a
    // background command the agent means to read later.
    manager.session_config.keep_alive = Some(options.session_idle);
    let factory = {
        let server = server.clone();
        // Every MCP session gets a session of the surface of its own.
        move || Ok(server.with_fresh_session())
    };
    let service = StreamableHttpService::new(factory, Arc::new(manager), config);
    let gate = Arc::new(Gate {
        access: options.access.clone(),
        requests: Arc::new(tokio::sync::Semaphore::new(
            options.max_concurrent_requests.max(1),
        )),
    });
    let router = Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(gate, self::gate))
        .route("/healthz", get(healthz));
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|source| HttpSetupError::Bind {
            addr: options.listen,
            source,
        })?;
    ready(listener.local_addr()?);
    let stopping = CancellationToken::new();
    let serving = axum::serve(listener, router).with_graceful_shutdown({
        let stopping = stopping.clone();
        async move { stopping.cancelled().await }
    });
    let serving = tokio::spawn(async move { serving.await });
    stop.await;
    // Stop accepting, cancel every call (killing its commands), end the
    // sessions' streams; then give the open responses a moment.
    stopping.cancel();
    flow.shut_down();
    ended.cancel();
    match tokio::time::timeout(END_GRACE, serving).await {
        Ok(Ok(served)) => served.map_err(Into::into),
        Ok(Err(join)) => Err(join.into()),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principals() -> Vec<Principal> {
        vec![
            Principal {
                label: "alice".into(),
                token: "tok-a".into(),
            },
            Principal {
                label: "bob".into(),
                token: "tok-b".into(),
            },
        ]
    }

    fn with_auth(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, value.parse().unwrap());
        headers
    }

    #[test]
    fn a_token_names_its_principal_and_nothing_else_passes() {
        let known = principals();
        assert_eq!(
            authenticate(&known, &with_auth("Bearer tok-b")).as_deref(),
            Some("bob")
        );
        assert_eq!(authenticate(&known, &with_auth("Bearer tok-c")), None);
        assert_eq!(authenticate(&known, &with_auth("Bearer tok-")), None);
        assert_eq!(authenticate(&known, &with_auth("Basic tok-a")), None);
        assert_eq!(authenticate(&known, &with_auth("tok-a")), None);
        assert_eq!(authenticate(&known, &HeaderMap::new()), None);
    }

    fn options(listen: &str, access: Access) -> HttpOptions {
        HttpOptions {
            listen: listen.parse().unwrap(),
            access,
            allowed_hosts: vec![],
            allowed_origins: vec![],
            session_idle: DEFAULT_SESSION_IDLE,
            max_concurrent_requests: 1,
        }
    }

    async fn refusal(options: HttpOptions) -> String {
        let tools =
            agent_tools_surface_default::open(agent_tools::Config::builder(".").build().unwrap())
                .unwrap();
        serve_http(tools, ServerLimits::default(), options, |_| {}, async {})
            .await
            .unwrap_err()
            .to_string()
    }

    #[tokio::test]
    async fn unsafe_setups_are_refused_before_listening() {
        let err = refusal(options("0.0.0.0:0", Access::NoAuthLoopback)).await;
        assert!(err.contains("only on a loopback address"), "{err}");
        let err = refusal(options("127.0.0.1:0", Access::Tokens(vec![]))).await;
        assert!(err.contains("no token configured"), "{err}");
        let mut empty = principals();
        empty[1].token.clear();
        let err = refusal(options("127.0.0.1:0", Access::Tokens(empty))).await;
        assert!(err.contains("\"bob\" is empty"), "{err}");
    }
}
