//! read_file round trips over MCP stdio, with the tests' MCP client.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_tools::{AgentTools, Config};
use agent_tools_test_support::mcp::McpClient;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::Ctx;
use crate::measure::{Stats, Step, interleaved, run_captured};
use crate::report::{Table, duration, median_mean, ratio};

/// The goals for one round trip: the median and the 99th percentile.
const GOAL_MEDIAN: Duration = Duration::from_micros(60);
const GOAL_P99: Duration = Duration::from_micros(150);

/// The pause before each timed call.
const CALL_GAP: Duration = Duration::from_millis(1);

/// How many calls a server gets before the next one's turn.
const BLOCK: usize = 250;

/// Another MCP file server measured in the same run when it is installed
/// (`cargo install rust-mcp-filesystem`), with the name of its read tool.
const OTHER_SERVER: &str = "rust-mcp-filesystem";

/// A child `agent-tools mcp` (or another stdio server) driven by the same
/// client the end-to-end tests use.
pub(super) struct Client(McpClient);

impl Client {
    fn start(exe: &Path, root: &Path) -> Result<Client> {
        Client::start_surface(exe, root, "agent-tools")
    }

    /// `agent-tools mcp --root <root>` with more options, initialized.
    pub(super) fn start_with(exe: &Path, root: &Path, options: &[&str]) -> Result<Client> {
        let mut command = Command::new(exe);
        command.arg("mcp").arg("--root").arg(root).args(options);
        Client::spawn(command, "agent-tools mcp")
    }

    fn start_surface(exe: &Path, root: &Path, surface: &str) -> Result<Client> {
        let mut command = Command::new(exe);
        command
            .arg("mcp")
            .arg("--surface")
            .arg(surface)
            .arg("--root")
            .arg(root);
        Client::spawn(command, "agent-tools mcp")
    }

    /// Starts any stdio MCP server and initializes the session.
    fn spawn(mut command: Command, what: &str) -> Result<Client> {
        command.stderr(Stdio::null());
        let mut client = McpClient::spawn(command).with_context(|| format!("starting {what}"))?;
        client.try_initialize(json!({}), "xtask-bench")?;
        Ok(Client(client))
    }

    /// Sends a request and reads lines until its response.
    pub(super) fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        Ok(self.0.try_request(method, params)?)
    }

    /// One tools/call; returns the text, failing on an error result.
    pub(super) fn call(&mut self, name: &str, args: &Value) -> Result<String> {
        let response = self.request("tools/call", json!({"name": name, "arguments": args}))?;
        let result = response.get("result").context("no result")?;
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            bail!("{name} failed: {result}");
        }
        result["content"][0]["text"]
            .as_str()
            .map(str::to_string)
            .context("no text content")
    }

    /// The server's process id.
    pub(super) fn pid(&self) -> u32 {
        self.0.pid()
    }

    pub(super) fn shutdown(self) -> Result<()> {
        self.0.try_shutdown()?;
        Ok(())
    }
}

/// K sequential read_file round trips of a ~50-line file.
pub fn round_trips(ctx: &Ctx<'_>) -> Result<Table> {
    eprintln!("mcp round trips ...");
    let k = ctx.pick(5000, 1000);
    let dir = tempfile::tempdir()?;
    let mut text = String::new();
    let mut rng = crate::tree::Rng::new(7);
    while text.lines().count() < 50 {
        crate::tree::code_line(&mut rng, &mut text);
    }
    std::fs::write(dir.path().join("small.rs"), &text)?;
    let args = json!({"path": "small.rs"});

    // Over MCP stdio, and the other server when it is installed, call for
    // call in turn so that both see the same load.
    let mut client = Client::start(ctx.exe()?, dir.path())?;
    let first = client.call("read_file", &args)?;
    if first.lines().count() != 50 {
        bail!(
            "read_file over MCP returned {} lines",
            first.lines().count()
        );
    }
    let mut other = match other_server(dir.path())? {
        Some((mut other, tool)) => {
            let path = dir.path().join("small.rs");
            let other_args = json!({"path": path});
            let text = other.call(&tool, &other_args)?;
            if !text.contains(text_first_line(&text_of_file(&path)?)) {
                bail!("{OTHER_SERVER} returned another text: {text}");
            }
            Some((other, tool, other_args))
        }
        None => None,
    };
    // The filesystem surface's read_file (absolute path), in turn too.
    let mut surface = Client::start_surface(ctx.exe()?, dir.path(), "filesystem")?;
    let surface_args = json!({"path": dir.path().join("small.rs")});
    if surface.call("read_file", &surface_args)? != text {
        bail!("read_file of the filesystem surface returned another text");
    }
    let mut baseline = match &ctx.args.baseline_exe {
        Some(exe) => Some(Client::start(exe, dir.path())?),
        None => None,
    };
    if let Some(baseline) = baseline.as_mut()
        && baseline.call("read_file", &args)? != first
    {
        bail!("read_file of the baseline binary returned another text");
    }
    for _ in 0..100 {
        client.call("read_file", &args)?;
        if let Some(baseline) = baseline.as_mut() {
            baseline.call("read_file", &args)?;
        }
        surface.call("read_file", &surface_args)?;
        if let Some((other, tool, other_args)) = other.as_mut() {
            other.call(tool, other_args)?;
        }
    }
    // As an agent calls: one server at a time, the calls spaced (it thinks
    // between them), so every call finds its server idle. The servers
    // take turns by blocks of calls, so that all see the same machine.
    // Reference rows: the servers taking turns call by call, with and
    // without the gap, where a call may also find the machine busy with
    // the previous server's call, or the scheduler spreading the client's
    // wake-ups over the cores because it talks to three processes by turns.
    let mut servers = InTurn {
        client: &mut client,
        args: &args,
        surface: &mut surface,
        surface_args: &surface_args,
        other: other.as_mut(),
        baseline: baseline.as_mut(),
    };
    let [mcp, on_surface, other_alone, baseline_alone] =
        servers.measure(k, Some(CALL_GAP), BLOCK)?;
    let [in_turn, _, other_in_turn, _] = servers.measure(k, Some(CALL_GAP), 1)?;
    let [back_to_back, _, other_back_to_back, _] = servers.measure(k, None, 1)?;
    // A flood: many calls sent at once, then every answer read; ours and
    // the baseline in turn, so that both see the same machine.
    let flood_calls = ctx.pick(2000, 500);
    let mut floods: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..ctx.pick(10, 5) {
        floods[0].push(flood(&mut client, &args, flood_calls)?);
        if let Some(baseline) = baseline.as_mut() {
            floods[1].push(flood(baseline, &args, flood_calls)?);
        }
    }
    let [flood_ours, flood_baseline] = floods.map(Stats::of);

    surface.shutdown()?;
    let other_stats = other.map(|(other, _, _)| {
        let _ = other.shutdown();
        (other_alone, other_in_turn, other_back_to_back)
    });
    // The protocol's own `ping`: the transport alone, no tool, no thread hop.
    let mut samples = Vec::with_capacity(k);
    for _ in 0..k {
        let started = Instant::now();
        let pong = client.request("ping", json!({}))?;
        samples.push(started.elapsed());
        if pong.get("result").is_none() {
            bail!("ping failed: {pong}");
        }
    }
    let ping = Stats::of(samples);
    client.shutdown()?;
    if let Some(baseline) = baseline {
        baseline.shutdown()?;
    }

    // The same call in process: the floor under the transport.
    let tools = agent_tools_surface_default::open(Config::builder(dir.path()).build()?)?;
    let mut samples = Vec::with_capacity(k);
    for _ in 0..k {
        let started = Instant::now();
        let result = tools.call("read_file", args.clone());
        samples.push(started.elapsed());
        if result.is_error {
            bail!("read_file failed: {}", result.text);
        }
    }
    let inproc = Stats::of(samples);
    let tools = AgentTools::with_surface(
        Config::builder(dir.path()).build()?,
        agent_tools_surface_filesystem::FilesystemSurface,
    )?;
    let mut samples = Vec::with_capacity(k);
    for _ in 0..k {
        let started = Instant::now();
        let result = tools.call("read_file", surface_args.clone());
        samples.push(started.elapsed());
        if result.is_error {
            bail!(
                "read_file of the filesystem surface failed: {}",
                result.text
            );
        }
    }
    let surface_inproc = Stats::of(samples);

    // What a shell-only agent spawns to read a file.
    let cat = interleaved(
        ctx.pick(300, 100),
        &mut [Box::new(|| {
            run_captured(
                Command::new("cat")
                    .arg("-n")
                    .arg("small.rs")
                    .current_dir(dir.path()),
                &[0],
            )
            .map(drop)
        }) as Step<'_>],
    )?;
    let cat = &cat[0];

    let mut table = Table::new(format!(
        "read_file over MCP stdio — {k} sequential round trips of a 50-line file"
    ));
    table.timed(
        "round trip (MCP stdio) vs `cat -n FILE` as a process",
        &mcp,
        cat,
    );
    table.row(
        "round trip p99 vs `cat -n` p99",
        duration(mcp.quantile(0.99)),
        duration(cat.quantile(0.99)),
        ratio(mcp.quantile(0.99), cat.quantile(0.99)),
    );
    table.timed(
        "filesystem surface `read_file` (absolute path) vs the default surface's, in turn",
        &on_surface,
        &mcp,
    );
    match &other_stats {
        Some((other, other_in_turn, other_back_to_back)) => {
            table.timed(
                format!("round trip vs {OTHER_SERVER} (its read tool, same file, same way)"),
                &mcp,
                other,
            );
            table.row(
                format!("round trip p99 vs {OTHER_SERVER} p99"),
                duration(mcp.quantile(0.99)),
                duration(other.quantile(0.99)),
                ratio(mcp.quantile(0.99), other.quantile(0.99)),
            );
            for (what, ours, theirs) in [
                ("call by call in turn, spaced", &in_turn, other_in_turn),
                (
                    "call by call in turn, back to back",
                    &back_to_back,
                    other_back_to_back,
                ),
            ] {
                table.timed(
                    format!("{what}: round trip vs {OTHER_SERVER}"),
                    ours,
                    theirs,
                );
                table.row(
                    format!("{what}: p99 vs {OTHER_SERVER} p99"),
                    duration(ours.quantile(0.99)),
                    duration(theirs.quantile(0.99)),
                    ratio(ours.quantile(0.99), theirs.quantile(0.99)),
                );
            }
        }
        None => {
            for (what, ours) in [
                ("call by call in turn, spaced: round trip", &in_turn),
                (
                    "call by call in turn, back to back: round trip",
                    &back_to_back,
                ),
            ] {
                table.row(what, median_mean(ours), "—", "—");
            }
            table.note(format!(
                "{OTHER_SERVER} is not installed (`cargo install {OTHER_SERVER}`), so it is not measured."
            ));
        }
    }
    table.row(
        format!("a flood: {flood_calls} calls sent at once, until the last answer"),
        median_mean(&flood_ours),
        "—",
        "—",
    );
    if ctx.args.baseline_exe.is_some() {
        table.timed(
            "round trip vs the baseline binary (same file, in turn by blocks)",
            &mcp,
            &baseline_alone,
        );
        table.row(
            "round trip p99 vs the baseline's p99",
            duration(mcp.quantile(0.99)),
            duration(baseline_alone.quantile(0.99)),
            ratio(mcp.quantile(0.99), baseline_alone.quantile(0.99)),
        );
        table.timed(
            format!("a flood of {flood_calls} calls vs the baseline binary's"),
            &flood_ours,
            &flood_baseline,
        );
    }
    table.row(
        "for reference: MCP `ping` round trip (transport only, no tool)",
        median_mean(&ping),
        "—",
        "—",
    );
    table.row(
        "for reference: in-process `AgentTools::call` (no transport)",
        median_mean(&inproc),
        "—",
        "—",
    );
    table.row(
        "for reference: in-process `read_file` of the filesystem surface",
        median_mean(&surface_inproc),
        "—",
        "—",
    );
    let met = match (mcp.median() <= GOAL_MEDIAN, mcp.quantile(0.99) <= GOAL_P99) {
        (true, true) => "both met",
        (true, false) => "median met, p99 **not met**",
        (false, true) => "p99 met, median **not met**",
        (false, false) => "**neither met**",
    };
    table.note(format!(
        "Goals: median at most {}, p99 at most {} — {met} (median {}, mean {}, p99 {}; {} samples \
         after 100 untimed). Measured as an agent calls: one server at a time, each call {} after \
         the last (untimed; an agent thinks between calls), so that it finds its server idle; the \
         servers take turns by blocks of {BLOCK} calls. The in-turn rows alternate the servers \
         call by call instead, with and without the gap. `ping` isolates the transport (stdio pipes, JSON-RPC, the server's \
         async runtime); the in-process figure is the tool's own cost. `cat -n`: {} spawns.",
        duration(GOAL_MEDIAN),
        duration(GOAL_P99),
        duration(mcp.median()),
        duration(mcp.mean()),
        duration(mcp.quantile(0.99)),
        mcp.len(),
        duration(CALL_GAP),
        cat.len()
    ));
    Ok(table)
}

/// Sends `calls` read_file requests at once, reads every answer, and
/// returns how long that took.
fn flood(client: &mut Client, args: &Value, calls: usize) -> Result<Duration> {
    let params = json!({"name": "read_file", "arguments": args});
    let started = Instant::now();
    let answers = client.0.try_flood("tools/call", &params, calls)?;
    let elapsed = started.elapsed();
    if let Some(failed) = answers.iter().find(|answer| answer.get("result").is_none()) {
        bail!("a flooded call failed: {failed}");
    }
    Ok(elapsed)
}

/// The servers measured call for call in turn.
struct InTurn<'a> {
    client: &'a mut Client,
    args: &'a Value,
    surface: &'a mut Client,
    surface_args: &'a Value,
    other: Option<&'a mut (Client, String, Value)>,
    /// `--baseline-exe`, on the same file with the same arguments.
    baseline: Option<&'a mut Client>,
}

impl InTurn<'_> {
    /// `k` round trips of each server (ours, the filesystem surface, the
    /// other server), the servers taking turns by blocks of `block` calls
    /// (1: call by call), each call after `gap` when given.
    fn measure(&mut self, k: usize, gap: Option<Duration>, block: usize) -> Result<[Stats; 4]> {
        let mut samples: [Vec<Duration>; 4] = std::array::from_fn(|_| Vec::with_capacity(k));
        let mut done = 0;
        while done < k {
            let calls = block.clamp(1, k - done);
            let mut timed = |at: usize, client: &mut Client, tool: &str, args: &Value| {
                for _ in 0..calls {
                    if let Some(gap) = gap {
                        std::thread::sleep(gap);
                    }
                    let started = Instant::now();
                    client.call(tool, args)?;
                    samples[at].push(started.elapsed());
                }
                anyhow::Ok(())
            };
            timed(0, self.client, "read_file", self.args)?;
            timed(1, self.surface, "read_file", self.surface_args)?;
            if let Some((other, tool, other_args)) = self.other.as_deref_mut() {
                timed(2, other, tool, other_args)?;
            }
            if let Some(baseline) = self.baseline.as_deref_mut() {
                timed(3, baseline, "read_file", self.args)?;
            }
            done += calls;
        }
        Ok(samples.map(Stats::of))
    }
}

/// The other server, started on `root`, with the name of its read tool
/// (found in its tool list), when it is on the PATH.
fn other_server(root: &Path) -> Result<Option<(Client, String)>> {
    let mut command = Command::new(OTHER_SERVER);
    command.arg(root);
    let Ok(mut client) = Client::spawn(command, OTHER_SERVER) else {
        return Ok(None);
    };
    let tools = client.request("tools/list", json!({}))?;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    let Some(tool) = ["read_text_file", "read_file"]
        .into_iter()
        .find(|name| names.contains(name))
    else {
        bail!("{OTHER_SERVER} offers no read tool: {names:?}");
    };
    Ok(Some((client, tool.to_string())))
}

fn text_of_file(path: &Path) -> Result<String> {
    Ok(std::fs::read_to_string(path)?)
}

fn text_first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
