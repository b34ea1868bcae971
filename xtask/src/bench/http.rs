//! read_file over Streamable HTTP (`agent-tools mcp --listen`) beside
//! rmcp's own minimal Streamable HTTP server, and calls per second from 16
//! clients at once.
//!
//! The minimal server is this program run as `cargo xtask rmcp-probe`: one
//! trivial tool (`echo`) on the same rmcp version and the same transport
//! settings (stateless JSON answers), in a process of its own as ours is.
//! Both are driven by the same raw HTTP/1.1 client over one kept-alive
//! connection, with 2026-07-28 requests (no session; the version in
//! `_meta` and in the routing headers).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use super::Ctx;
use crate::measure::Stats;
use crate::report::{Table, count, duration, ratio};

/// The goal: our round trip at most this many times the minimal server's.
const GOAL_RATIO: f64 = 1.3;

/// The pause before each timed sequential call (an agent thinks between
/// calls, so each finds its server idle).
const CALL_GAP: Duration = Duration::from_millis(1);

/// How many sequential calls a server gets before the other's turn.
const BLOCK: usize = 250;

/// Clients calling at once in the throughput run.
const CLIENTS: usize = 16;

const TOKEN: &str = "bench-token";
const VERSION: &str = "2026-07-28";

/// A child server, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads the first line of a child's output: where it listens.
fn address_from(line: &str) -> Result<SocketAddr> {
    let url = line.trim().rsplit(' ').next().context("no address line")?;
    url.trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .with_context(|| format!("no address in {line:?}"))
}

fn ours(exe: &Path, root: &Path, tokens: &Path) -> Result<Server> {
    let mut child = Command::new(exe)
        .args(["mcp", "--listen", "127.0.0.1:0", "--root"])
        .arg(root)
        .arg("--token-file")
        .arg(tokens)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting agent-tools mcp --listen")?;
    let mut stderr = BufReader::new(child.stderr.take().context("no stderr")?);
    let mut line = String::new();
    stderr.read_line(&mut line)?;
    let addr = address_from(&line)?;
    // Drained so that the server never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    Ok(Server { child, addr })
}

fn probe() -> Result<Server> {
    let mut child = Command::new(std::env::current_exe()?)
        .arg("rmcp-probe")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting the rmcp probe server")?;
    let mut stdout = BufReader::new(child.stdout.take().context("no stdout")?);
    let mut line = String::new();
    stdout.read_line(&mut line)?;
    let addr = address_from(&line)?;
    Ok(Server { child, addr })
}

/// One kept-alive HTTP/1.1 connection, speaking just enough HTTP for
/// JSON answers with a length.
struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    host: String,
    next_id: u64,
}

impl Conn {
    fn open(addr: SocketAddr) -> Result<Conn> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Conn {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            host: addr.to_string(),
            next_id: 1,
        })
    }

    /// One 2026-07-28 `tools/call`; the text of a non-error result, after
    /// checking that the answer is to this request.
    fn call(&mut self, tool: &str, args: &Value) -> Result<String> {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": tool, "arguments": args, "_meta": {
                "io.modelcontextprotocol/protocolVersion": VERSION,
                "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string();
        // One write: a request split over two would meet Nagle's delay.
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: {VERSION}\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n\
             Content-Length: {}\r\n\r\n{body}",
            self.host,
            body.len()
        );
        self.writer.write_all(request.as_bytes())?;
        let (status, answer) = self.read_response()?;
        if status != 200 {
            bail!("{tool}: HTTP {status}: {answer}");
        }
        let answer: Value =
            serde_json::from_str(&answer).with_context(|| format!("{tool}: not JSON: {answer}"))?;
        if answer["id"] != id {
            bail!("{tool}: the answer to request {id} names {}", answer["id"]);
        }
        let result = &answer["result"];
        if result["isError"] == true {
            bail!("{tool} failed: {result}");
        }
        result["content"][0]["text"]
            .as_str()
            .map(str::to_owned)
            .with_context(|| format!("{tool}: no text: {answer}"))
    }

    fn read_response(&mut self) -> Result<(u16, String)> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            bail!("the server closed the connection");
        }
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("no status line: {line:?}"))?;
        let mut length = None;
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = Some(value.trim().parse::<usize>()?);
                } else if name.eq_ignore_ascii_case("transfer-encoding") {
                    bail!("a chunked answer: the bench reads only answers with a length");
                }
            }
        }
        let mut body = vec![0; length.context("an answer without a length")?];
        self.reader.read_exact(&mut body)?;
        Ok((status, String::from_utf8(body)?))
    }
}

/// The HTTP group: sequential round trips beside the minimal rmcp server,
/// and calls per second from 16 clients.
pub fn http(ctx: &Ctx<'_>) -> Result<Table> {
    eprintln!("http round trips ...");
    let k = ctx.pick(4000, 1000);
    let per_client = ctx.pick(1000, 200);
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("root");
    std::fs::create_dir(&root)?;
    let mut text = String::new();
    let mut rng = crate::tree::Rng::new(7);
    while text.lines().count() < 50 {
        crate::tree::code_line(&mut rng, &mut text);
    }
    std::fs::write(root.join("small.rs"), &text)?;
    for client in 0..CLIENTS {
        std::fs::write(
            root.join(format!("client{client}.txt")),
            format!("file of client {client}\n"),
        )?;
    }
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("bench:{TOKEN}\n"))?;

    // What read_file must answer, from the library itself.
    let tools = agent_tools_surface_default::open(agent_tools::Config::builder(&root).build()?)?;
    let expected = |path: &str| -> Result<String> {
        let result = tools.call("read_file", json!({"path": path}));
        if result.is_error {
            bail!("read_file {path} failed in process: {}", result.text);
        }
        Ok(result.text)
    };
    let small = expected("small.rs")?;

    let server = ours(ctx.exe()?, &root, &tokens)?;
    let reference = probe()?;
    let mut conn = Conn::open(server.addr)?;
    let mut probe_conn = Conn::open(reference.addr)?;
    let args = json!({"path": "small.rs"});
    let echo = json!({"text": "hello"});
    for _ in 0..100 {
        if conn.call("read_file", &args)? != small {
            bail!("read_file over HTTP returned another text");
        }
        if probe_conn.call("echo", &echo)? != "hello" {
            bail!("the probe's echo returned another text");
        }
    }
    let mut measure = |gap: Option<Duration>, block: usize| -> Result<[Stats; 2]> {
        let mut samples: [Vec<Duration>; 2] = [Vec::with_capacity(k), Vec::with_capacity(k)];
        let mut done = 0;
        while done < k {
            let calls = block.clamp(1, k - done);
            for (at, conn, tool, args) in [
                (0, &mut conn, "read_file", &args),
                (1, &mut probe_conn, "echo", &echo),
            ] {
                for _ in 0..calls {
                    if let Some(gap) = gap {
                        std::thread::sleep(gap);
                    }
                    let started = Instant::now();
                    conn.call(tool, args)?;
                    samples[at].push(started.elapsed());
                }
            }
            done += calls;
        }
        Ok(samples.map(Stats::of))
    };
    let [spaced, probe_spaced] = measure(Some(CALL_GAP), BLOCK)?;
    let [back_to_back, probe_back_to_back] = measure(None, 1)?;

    eprintln!("http: {CLIENTS} clients at once ...");
    let (ours_rate, ours_calls) = concurrent(server.addr, per_client, |client, _| {
        let path = format!("client{client}.txt");
        let want = expected(&path)?;
        Ok(("read_file", json!({"path": path}), want))
    })?;
    let (probe_rate, probe_calls) = concurrent(reference.addr, per_client, |client, call| {
        let text = format!("client {client} call {call}");
        Ok(("echo", json!({"text": text}), text))
    })?;
    drop(server);
    drop(reference);

    let mut table = Table::new(format!(
        "read_file over Streamable HTTP — {k} sequential round trips on one kept-alive \
         connection, vs rmcp's minimal HTTP server"
    ));
    table.timed(
        "round trip, spaced as an agent calls: our `read_file` (50 lines) vs the minimal \
         server's `echo`",
        &spaced,
        &probe_spaced,
    );
    table.row(
        "round trip p99 vs the minimal server's p99",
        duration(spaced.quantile(0.99)),
        duration(probe_spaced.quantile(0.99)),
        ratio(spaced.quantile(0.99), probe_spaced.quantile(0.99)),
    );
    table.timed(
        "call by call in turn, back to back",
        &back_to_back,
        &probe_back_to_back,
    );
    table.row(
        format!(
            "{CLIENTS} clients at once, each on its own connection: calls per second \
             ({} each, every answer checked)",
            count(per_client)
        ),
        format!("{ours_rate:.0}/s"),
        format!("{probe_rate:.0}/s"),
        format!("{:.2}× the rate", ours_rate / probe_rate),
    );
    let got = spaced.median().as_secs_f64() / probe_spaced.median().as_secs_f64();
    table.note(format!(
        "Goal: our round trip at most {GOAL_RATIO}× the minimal server's (median) — {} \
         ({got:.2}×; medians {} and {}). The minimal server is rmcp's `StreamableHttpService` \
         with one trivial tool, stateless JSON answers, in a process of its own (this \
         program, `rmcp-probe`); ours is `agent-tools mcp --listen` with a token. \
         Both take 2026-07-28 requests (no session) from the same raw HTTP/1.1 client; the \
         sequential servers take turns by blocks of {BLOCK} calls, each call {} after the \
         last, after 100 untimed calls each. With {CLIENTS} clients, {} calls to ours and {} \
         to the minimal server were answered, each with its own request's id and text \
         (a lost or wrong answer stops the bench).",
        if got <= GOAL_RATIO {
            "met"
        } else {
            "**not met**"
        },
        duration(spaced.median()),
        duration(probe_spaced.median()),
        duration(CALL_GAP),
        count(ours_calls),
        count(probe_calls),
    ));
    Ok(table)
}

/// `CLIENTS` threads, each on a connection of its own, make `per_client`
/// calls each (`call(client, n)` gives the tool, its arguments and the text
/// it must answer); the calls per second over the whole run, and how many
/// were answered. Any lost, failed or wrong answer is an error.
fn concurrent(
    addr: SocketAddr,
    per_client: usize,
    call: impl Fn(usize, usize) -> Result<(&'static str, Value, String)> + Sync,
) -> Result<(f64, usize)> {
    let mut conns = (0..CLIENTS)
        .map(|_| Conn::open(addr))
        .collect::<Result<Vec<_>>>()?;
    // Every client's first call, untimed: connections warm.
    for (client, conn) in conns.iter_mut().enumerate() {
        let (tool, args, want) = call(client, 0)?;
        if conn.call(tool, &args)? != want {
            bail!("client {client}: a wrong answer");
        }
    }
    let start = Arc::new(std::sync::Barrier::new(CLIENTS + 1));
    let call = &call;
    let (elapsed, answered) = std::thread::scope(|scope| -> Result<(Duration, usize)> {
        let workers: Vec<_> = conns
            .into_iter()
            .enumerate()
            .map(|(client, mut conn)| {
                let start = start.clone();
                scope.spawn(move || -> Result<usize> {
                    let calls = (0..per_client)
                        .map(|n| call(client, n))
                        .collect::<Result<Vec<_>>>()?;
                    start.wait();
                    for (n, (tool, args, want)) in calls.iter().enumerate() {
                        let got = conn.call(tool, args)?;
                        if &got != want {
                            bail!("client {client} call {n}: answered {got:?}, not {want:?}");
                        }
                    }
                    Ok(calls.len())
                })
            })
            .collect();
        start.wait();
        let began = Instant::now();
        let mut answered = 0;
        for worker in workers {
            answered += worker
                .join()
                .map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
        }
        Ok((began.elapsed(), answered))
    })?;
    if answered != CLIENTS * per_client {
        bail!("{answered} answers for {} calls", CLIENTS * per_client);
    }
    Ok((answered as f64 / elapsed.as_secs_f64(), answered))
}

/// rmcp's minimal server: one tool that answers its `text` argument.
#[derive(Clone)]
struct Probe {
    tools: Arc<Vec<Tool>>,
}

impl ServerHandler for Probe {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items((*self.tools).clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|args| args.get("text"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// `cargo xtask rmcp-probe`: serves the minimal server on a free loopback
/// port, prints `listening on http://ADDR/mcp` and serves until killed.
pub fn serve_probe() -> Result<()> {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let Value::Object(schema) = schema else {
        bail!("the schema is an object");
    };
    let probe = Probe {
        tools: Arc::new(vec![Tool::new("echo", "Answers its text.", schema)]),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let config = StreamableHttpServerConfig::default().with_json_response(true);
        let service = StreamableHttpService::new(
            move || Ok(probe.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("listening on http://{}/mcp", listener.local_addr()?);
        std::io::stdout().flush()?;
        // As ours does: answers are small writes, Nagle would delay them.
        let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
            let _ = stream.set_nodelay(true);
        });
        axum::serve(listener, router).await?;
        anyhow::Ok(())
    })
}
