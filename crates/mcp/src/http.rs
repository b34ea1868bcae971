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
use tokio_util::task::{TaskTracker, task_tracker::TaskTrackerToken};

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
    /// Connections open at once; one more is answered 503 and closed.
    pub max_connections: usize,
}

/// The default of [`HttpOptions::session_idle`]: an hour.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(3600);

/// The default of [`HttpOptions::max_concurrent_requests`].
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 64;

/// The default of [`HttpOptions::max_connections`]: room for every request
/// slot plus the event streams of old-protocol sessions and the idle
/// connections clients keep.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

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

/// The principal an HTTP request authenticated as; `None` off HTTP.
pub(crate) fn principal_of(
    context: &rmcp::service::RequestContext<rmcp::RoleServer>,
) -> Option<Arc<str>> {
    let parts = context.extensions.get::<axum::http::request::Parts>()?;
    let label = parts.extensions.get::<PrincipalLabel>()?;
    Some(Arc::from(label.0.as_str()))
}

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
    /// Who opened each MCP session.
    sessions: SessionOwners,
    /// Every answer to a POST being sent, until its last byte is handed to
    /// the connection: the end waits for these, not for connections (an
    /// idle one, or one whose client is still sending headers, would hold
    /// it).
    answers: TaskTracker,
}

/// A response body that holds its answer's place in [`Gate::answers`]
/// until it is dropped (sent, or its connection gone).
struct TrackedBody {
    body: axum::body::Body,
    _answer: TaskTrackerToken,
}

impl http_body::Body for TrackedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
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
    // An MCP session's state is its opener's: a session id is no
    // credential, so another principal presenting it is refused.
    let session = request
        .headers()
        .get(SESSION_ID)
        .and_then(|id| id.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session
        && gate.sessions.owner(id).is_some_and(|owner| owner != label)
    {
        return (
            StatusCode::FORBIDDEN,
            "this session was opened with another principal's token\n",
        )
            .into_response();
    }
    request
        .extensions_mut()
        .insert(PrincipalLabel(label.clone()));
    // A GET is a session's event stream, open until the session ends: not
    // an answer the end should wait for.
    if request.method() == axum::http::Method::GET {
        return next.run(request).await;
    }
    let answer = gate.answers.token();
    let response = next.run(request).await;
    if session.is_none()
        && let Some(opened) = response
            .headers()
            .get(SESSION_ID)
            .and_then(|id| id.to_str().ok())
    {
        gate.sessions.opened(opened, label).await;
    }
    response.map(|body| {
        axum::body::Body::new(TrackedBody {
            body,
            _answer: answer,
        })
    })
}

/// The header naming an MCP session.
const SESSION_ID: &str = "mcp-session-id";

/// Which principal opened each MCP session.
struct SessionOwners {
    owners: Mutex<HashMap<String, String>>,
    /// rmcp's sessions, to forget the owners of ended ones.
    manager: Arc<LocalSessionManager>,
    /// How many owners may be kept before the ended sessions' are dropped.
    prune_at: std::sync::atomic::AtomicUsize,
}

/// The fewest owners kept before ended sessions' are looked for.
const OWNERS_PRUNE_FLOOR: usize = 64;

impl SessionOwners {
    fn new(manager: Arc<LocalSessionManager>) -> Self {
        SessionOwners {
            owners: Mutex::default(),
            manager,
            prune_at: OWNERS_PRUNE_FLOOR.into(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.owners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn owner(&self, id: &str) -> Option<String> {
        self.lock().get(id).cloned()
    }

    /// Records who opened session `id`. Sessions end without telling us
    /// (idle, DELETE), so once the map has doubled, the owners of sessions
    /// rmcp no longer has are dropped: the map stays about as large as the
    /// live sessions.
    async fn opened(&self, id: &str, label: String) {
        use std::sync::atomic::Ordering;
        let len = {
            let mut owners = self.lock();
            owners.insert(id.to_owned(), label);
            owners.len()
        };
        if len < self.prune_at.load(Ordering::Relaxed) {
            return;
        }
        let live: std::collections::HashSet<String> = self
            .manager
            .sessions
            .read()
            .await
            .keys()
            .map(ToString::to_string)
            .collect();
        let mut owners = self.lock();
        owners.retain(|id, _| live.contains(id));
        self.prune_at.store(
            (owners.len() * 2).max(OWNERS_PRUNE_FLOOR),
            Ordering::Relaxed,
        );
    }
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

/// The listener with a bound on open connections: each accepted one holds
/// a permit until it is closed; past the bound a connection gets a 503 and
/// is closed rather than left waiting in the backlog behind idle ones
/// (clients keep idle connections open for as long as they like).
struct BoundedListener {
    inner: tokio::net::TcpListener,
    open: Arc<tokio::sync::Semaphore>,
}

/// The answer a connection past the bound gets before it is closed.
const TOO_MANY_CONNECTIONS: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
    retry-after: 1\r\nconnection: close\r\ncontent-type: text/plain\r\n\
    content-length: 26\r\n\r\ntoo many connections open\n";

/// How long a refused connection is given to take its 503.
const REFUSAL_WRITE: Duration = Duration::from_secs(1);

impl axum::serve::Listener for BoundedListener {
    type Io = CountedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, addr) = match self.inner.accept().await {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of descriptors and the like: wait rather than
                    // spin; the connection is the client's to retry.
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            // Answers are small writes: Nagle's delay would add tens of
            // milliseconds to each.
            let _ = stream.set_nodelay(true);
            match self.open.clone().try_acquire_owned() {
                Ok(permit) => {
                    return (
                        CountedStream {
                            stream,
                            _open: permit,
                        },
                        addr,
                    );
                }
                Err(_) => {
                    tokio::spawn(refuse(stream));
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// Answers a connection past the bound with 503 and closes it, reading
/// what the client sent meanwhile (closing on unread bytes would reset
/// the connection, and the client would see that instead of the 503).
async fn refuse(mut stream: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = tokio::time::timeout(REFUSAL_WRITE, async {
        stream.write_all(TOO_MANY_CONNECTIONS).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    })
    .await;
}

/// An accepted connection, holding its place under the bound.
struct CountedStream {
    stream: tokio::net::TcpStream,
    _open: tokio::sync::OwnedSemaphorePermit,
}

impl tokio::io::AsyncRead for CountedStream {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for CountedStream {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

async fn healthz() -> &'static str {
    "ok\n"
}

/// How long the end waits for open answers to be sent once every call was
/// cancelled (a call stuck in a system call may never answer).
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
    let manager = Arc::new(manager);
    let service = StreamableHttpService::new(factory, manager.clone(), config);
    let answers = TaskTracker::new();
    let gate = Arc::new(Gate {
        sessions: SessionOwners::new(manager),
        answers: answers.clone(),
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
    let listener = BoundedListener {
        inner: listener,
        open: Arc::new(tokio::sync::Semaphore::new(options.max_connections.max(1))),
    };
    let stopping = CancellationToken::new();
    let serving = axum::serve(listener, router).with_graceful_shutdown({
        let stopping = stopping.clone();
        async move { stopping.cancelled().await }
    });
    let mut serving = tokio::spawn(async move { serving.await });
    stop.await;
    // Stop accepting, cancel every call (killing its commands), end the
    // sessions' streams; then wait for the answers under way, not for the
    // connections: the graceful end of the server also waits for a client
    // that has sent half a request's headers, which made the end take the
    // whole grace period.
    stopping.cancel();
    flow.shut_down();
    answers.close();
    tokio::select! {
        served = &mut serving => return joined(served),
        _ = tokio::time::timeout(END_GRACE, answers.wait()) => {}
    }
    // The calls have answered (that they were cancelled); only now end the
    // sessions, whose end would turn an answer still to come into a 500.
    ended.cancel();
    // An answer's body ends just before its connection's task writes the
    // last bytes out: let that task run. Connections that are done close at
    // once, so this ends as soon as only idle or half-sent ones are left.
    match tokio::time::timeout(LAST_WRITES, serving).await {
        Ok(served) => joined(served),
        Err(_) => Ok(()),
    }
}

/// How long the end lets the last answers' bytes leave.
const LAST_WRITES: Duration = Duration::from_millis(100);

fn joined(served: Result<std::io::Result<()>, tokio::task::JoinError>) -> anyhow::Result<()> {
    match served {
        Ok(served) => served.map_err(Into::into),
        Err(join) => Err(join.into()),
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
            max_connections: 1,
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
    async fn owners_of_ended_sessions_are_forgotten_once_the_map_doubles() {
        // rmcp knows no session here: every one has ended.
        let owners = SessionOwners::new(Arc::default());
        for n in 0..OWNERS_PRUNE_FLOOR - 1 {
            owners.opened(&format!("s{n}"), "alice".into()).await;
        }
        assert_eq!(owners.owner("s0").as_deref(), Some("alice"));
        owners.opened("last", "bob".into()).await;
        assert_eq!(owners.owner("s0"), None);
        assert_eq!(owners.owner("last"), None);
        assert!(owners.lock().is_empty());
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
