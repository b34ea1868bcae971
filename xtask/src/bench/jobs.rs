//! Jobs over MCP stdio: how soon `job_start` shows an `echo`'s output next
//! to the same command through `bash`, and what a `job_read` of an idle
//! job costs next to a plain `read_file`.

use agent_tools_test_support::measure::{Process, load_text, status_bytes};
use anyhow::{Result, bail};
use serde_json::{Value, json};

use super::Ctx;
use super::mcp::Client;
use crate::measure::{Step, interleaved};
use crate::report::{Table, median_mean};

/// `job_start` of `echo` (waiting for its line) vs `bash` of `echo`, and
/// `job_read` of an idle job vs `read_file` of a small file and the
/// protocol's `ping`, all over one MCP stdio connection of the release
/// server (and of the baseline build in the same rounds, when given); then
/// the server's memory with 32 `yes` jobs.
pub fn jobs(ctx: &Ctx<'_>) -> Result<Table> {
    eprintln!("jobs ...");
    let mut table = Table::new("jobs");
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("small.txt"), "one line\n")?;
    let mut client = Client::start_with(ctx.exe()?, dir.path(), &[])?;
    let client = std::cell::RefCell::new(&mut client);
    let start = || -> Result<()> {
        let text = client.borrow_mut().call(
            "job_start",
            &json!({"command": "echo hi", "wait_for": "hi", "wait_ms": 5000}),
        )?;
        let value: Value = serde_json::from_str(&text)?;
        if value["output"] != "hi\n" {
            bail!("job_start did not see the output: {text}");
        }
        Ok(())
    };
    let bash = || -> Result<()> {
        let text = client
            .borrow_mut()
            .call("bash", &json!({"command": "echo hi"}))?;
        let value: Value = serde_json::from_str(&text)?;
        if value["stdout"] != "hi\n" {
            bail!("bash did not answer: {text}");
        }
        Ok(())
    };
    let runs = ctx.pick(200, 40);
    let stats = interleaved(runs, &mut [Box::new(start) as Step<'_>, Box::new(bash)])?;
    table.timed(
        "`echo hi`: job_start until its line vs bash (goal: within 2 ms)",
        &stats[0],
        &stats[1],
    );
    table.row(
        "job_start's first byte over bash (median difference)",
        format!(
            "{:+.0} µs",
            (stats[0].median().as_secs_f64() - stats[1].median().as_secs_f64()) * 1e6
        ),
        "—",
        "—",
    );

    let polls = ctx.pick(2000, 300);
    let idle = start_idle(&mut client.borrow_mut())?;
    // The same calls on the baseline build, when given, in the same rounds.
    let mut baseline = match &ctx.args.baseline_exe {
        Some(exe) => {
            let mut other = Client::start_with(exe, dir.path(), &[])?;
            let id = start_idle(&mut other)?;
            Some((std::cell::RefCell::new(other), id))
        }
        None => None,
    };
    let mut steps: Vec<Step<'_>> = vec![
        Box::new(|| poll(&mut client.borrow_mut(), &idle)),
        Box::new(|| read_small(&mut client.borrow_mut())),
        Box::new(|| ping(&mut client.borrow_mut())),
    ];
    if let Some((other, id)) = &baseline {
        steps.push(Box::new(|| poll(&mut other.borrow_mut(), id)));
        steps.push(Box::new(|| read_small(&mut other.borrow_mut())));
        steps.push(Box::new(|| ping(&mut other.borrow_mut())));
    }
    let load_polls = load_text();
    let stats = interleaved(polls, &mut steps)?;
    drop(steps);
    table.timed(
        "job_read of an idle job vs read_file of a one-line file (goal: poll under 200 µs)",
        &stats[0],
        &stats[1],
    );
    table.row(
        "for reference: MCP `ping` round trip (the transport alone)",
        median_mean(&stats[2]),
        "—",
        "—",
    );
    if baseline.is_some() {
        table.timed(
            "job_read poll: this build vs the baseline",
            &stats[0],
            &stats[3],
        );
        table.timed(
            "read_file: this build vs the baseline",
            &stats[1],
            &stats[4],
        );
        table.timed("ping: this build vs the baseline", &stats[2], &stats[5]);
    }
    table.note(format!(
        "{runs} starts and {polls} polls of each, interleaved, over one MCP stdio connection \
         to the release server (`agent-tools mcp`, launcher included){}. A job_start waits for \
         `hi` in the output; bash waits for the command's end. Load average at the polls: {load_polls}.",
        if baseline.is_some() { " and one to the baseline build" } else { "" }
    ));
    let _ = client
        .borrow_mut()
        .call("job_kill", &json!({"job_id": idle, "signal": "KILL"}));
    if let Some((other, id)) = &baseline {
        let _ = other
            .borrow_mut()
            .call("job_kill", &json!({"job_id": id, "signal": "KILL"}));
    }

    // 32 floods at once: the server's memory stays within the logs' caps.
    let settle = std::time::Duration::from_secs(ctx.pick(10, 4));
    let (before, after, answered, load) = floods(&mut client.borrow_mut(), settle)?;
    let base = match baseline.take() {
        Some((other, _)) => {
            let mut other = other.into_inner();
            let (before, after, _, load) = floods(&mut other, settle)?;
            other.shutdown()?;
            Some((before, after, load))
        }
        None => None,
    };
    let cap_mib = agent_tools_bash::jobs::DEFAULT_MAX_LOG_BYTES >> 20;
    table.row(
        format!("server RSS with 32 `yes` jobs (goal: under 32 × {cap_mib} MiB of logs + 32 MiB)"),
        format!("{} MiB ({} MiB before)", after / 1024, before / 1024),
        format!("{} MiB", 32 * cap_mib + 32),
        "—",
    );
    if let Some((base_before, base_after, base_load)) = &base {
        table.row(
            "server RSS with 32 `yes` jobs: this build vs the baseline",
            format!("{} MiB ({} MiB before)", after / 1024, before / 1024),
            format!(
                "{} MiB ({} MiB before)",
                base_after / 1024,
                base_before / 1024
            ),
            "—",
        );
        table.note(format!(
            "Load average during the floods: {load} (this build), {base_load} (the baseline)."
        ));
    } else {
        table.note(format!("Load average during the floods: {load}."));
    }
    table.row(
        "read_file during the 32 floods",
        format!("{:.1} ms", answered.as_secs_f64() * 1e3),
        "—",
        "—",
    );
    Ok(table)
}

/// Starts `sleep 600` as a job that prints nothing; returns its id.
fn start_idle(client: &mut Client) -> Result<String> {
    let idle = client.call("job_start", &json!({"command": "sleep 600", "wait_ms": 0}))?;
    let idle: Value = serde_json::from_str(&idle)?;
    Ok(idle["job_id"].as_str().unwrap_or("job_0").to_owned())
}

/// One `job_read` of the idle job `id`, checked.
fn poll(client: &mut Client, id: &str) -> Result<()> {
    let text = client.call("job_read", &json!({"job_id": id}))?;
    if !text.contains("\"status\":\"running\"") {
        bail!("the idle job is not running: {text}");
    }
    Ok(())
}

/// One `read_file` of the one-line file.
fn read_small(client: &mut Client) -> Result<()> {
    client.call("read_file", &json!({"path": "small.txt"}))?;
    Ok(())
}

/// One MCP `ping`.
fn ping(client: &mut Client) -> Result<()> {
    let pong = client.request("ping", json!({}))?;
    if pong.get("result").is_none() {
        bail!("ping failed: {pong}");
    }
    Ok(())
}

/// Starts 32 `yes` jobs on `client`, lets them flood for `settle`, then
/// returns the server's RSS before and after (KiB), how long a read_file
/// took during the floods, and the load average then. The jobs are killed
/// after.
fn floods(
    client: &mut Client,
    settle: std::time::Duration,
) -> Result<(u64, u64, std::time::Duration, String)> {
    let pid = client.pid();
    let before = resident_kib(pid)?;
    let mut ids = Vec::new();
    for _ in 0..32 {
        let started = client.call("job_start", &json!({"command": "yes", "wait_ms": 0}))?;
        let started: Value = serde_json::from_str(&started)?;
        ids.push(started["job_id"].as_str().unwrap_or("job_0").to_owned());
    }
    std::thread::sleep(settle);
    let answering = std::time::Instant::now();
    client.call("read_file", &json!({"path": "small.txt"}))?;
    let answered = answering.elapsed();
    let after = resident_kib(pid)?;
    let load = load_text();
    for id in ids {
        let _ = client.call("job_kill", &json!({"job_id": id, "signal": "KILL"}));
    }
    Ok((before, after, answered, load))
}

/// A process's resident memory in KiB.
fn resident_kib(pid: u32) -> Result<u64> {
    status_bytes(Process::Pid(pid), "VmRSS")
        .map(|bytes| bytes / 1024)
        .ok_or_else(|| anyhow::anyhow!("no VmRSS for {pid}"))
}
