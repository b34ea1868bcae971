//! Jobs over MCP stdio: how soon `job_start` shows an `echo`'s output next
//! to the same command through `bash`, and what a `job_read` of an idle
//! job costs next to a plain `read_file`.

use anyhow::{Result, bail};
use serde_json::{Value, json};

use super::Ctx;
use super::mcp::Client;
use crate::measure::{Step, interleaved};
use crate::report::Table;

/// `job_start` of `echo` (waiting for its line) vs `bash` of `echo`, and
/// `job_read` of an idle job vs `read_file` of a small file, all over one
/// MCP stdio connection of the release server.
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

    let idle = client
        .borrow_mut()
        .call("job_start", &json!({"command": "sleep 600", "wait_ms": 0}))?;
    let idle: Value = serde_json::from_str(&idle)?;
    let id = idle["job_id"].as_str().unwrap_or("job_0").to_owned();
    let poll = || -> Result<()> {
        let text = client
            .borrow_mut()
            .call("job_read", &json!({"job_id": id}))?;
        if !text.contains("\"status\":\"running\"") {
            bail!("the idle job is not running: {text}");
        }
        Ok(())
    };
    let read = || -> Result<()> {
        client
            .borrow_mut()
            .call("read_file", &json!({"path": "small.txt"}))?;
        Ok(())
    };
    let polls = ctx.pick(2000, 300);
    let stats = interleaved(polls, &mut [Box::new(poll) as Step<'_>, Box::new(read)])?;
    table.timed(
        "job_read of an idle job vs read_file of a one-line file (goal: poll under 200 µs)",
        &stats[0],
        &stats[1],
    );
    table.note(format!(
        "{runs} starts and {polls} polls of each, interleaved, over one MCP stdio connection \
         to the release server (`agent-tools mcp`, launcher included). A job_start waits for \
         `hi` in the output; bash waits for the command's end."
    ));
    let _ = client
        .borrow_mut()
        .call("job_kill", &json!({"job_id": id, "signal": "KILL"}));

    // 32 floods at once: the server's memory stays within the logs' caps.
    let pid = client.borrow().pid();
    let before = rss_kib(pid)?;
    for _ in 0..32 {
        client
            .borrow_mut()
            .call("job_start", &json!({"command": "yes", "wait_ms": 0}))?;
    }
    std::thread::sleep(std::time::Duration::from_secs(ctx.pick(10, 3)));
    let answering = std::time::Instant::now();
    client
        .borrow_mut()
        .call("read_file", &json!({"path": "small.txt"}))?;
    let answered = answering.elapsed();
    let after = rss_kib(pid)?;
    let cap_mib = agent_tools_bash::jobs::DEFAULT_MAX_LOG_BYTES >> 20;
    table.row(
        format!("server RSS with 32 `yes` jobs (goal: under 32 × {cap_mib} MiB of logs + 32 MiB)"),
        format!("{} MiB (was {} MiB)", after / 1024, before / 1024),
        format!("{} MiB", 32 * cap_mib + 32),
        "—",
    );
    table.row(
        "read_file during the 32 floods",
        format!("{:.1} ms", answered.as_secs_f64() * 1e3),
        "—",
        "—",
    );
    Ok(table)
}

/// A process's resident memory in KiB, from `/proc/PID/status`.
fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no VmRSS for {pid}"))
}
