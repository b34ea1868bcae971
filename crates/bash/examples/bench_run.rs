//! Measures what `run` costs over a bare spawn, and how fast output flows.
//!
//! ```text
//! cargo run --release -p agent-tools-bash --example bench_run [RUNS] [MEGABYTES]
//! ```
//!
//! Defaults: 200 runs of `true` each way, 200 MB of output.

use std::error::Error;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use agent_tools_bash::{RunRequest, run};

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let runs: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(200);
    let megabytes: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(200);
    let tmp = tempfile::tempdir()?;
    let spill = tmp.path().join("spill");
    let cancel = AtomicBool::new(false);

    // Warm up both paths once.
    Command::new("sh").arg("-c").arg("true").status()?;
    run(&RunRequest::new("true", tmp.path(), &spill)?, &cancel)?;

    // Interleaved, so drift on a busy machine hits all three alike.
    let req = RunRequest::new("true", tmp.path(), &spill)?;
    let mut bare = Vec::new();
    let mut piped = Vec::new();
    let mut ours = Vec::new();
    for _ in 0..runs {
        bare.push(timed(|| {
            Command::new("sh").arg("-c").arg("true").status()?;
            Ok(())
        })?);
        piped.push(timed(|| {
            Command::new("/bin/sh")
                .arg("-c")
                .arg("true")
                .stdin(Stdio::null())
                .output()?;
            Ok(())
        })?);
        ours.push(timed(|| {
            run(&req, &cancel)?;
            Ok(())
        })?);
    }
    let (bare, piped, ours) = (Stats::of(bare), Stats::of(piped), Stats::of(ours));

    let bytes = megabytes * 1_000_000;
    let producer = format!("yes abcdefghijklmnopqrstuvwxyz | head -c {bytes}");
    let to_null = timed(|| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("{producer} > /dev/null"))
            .status()?;
        Ok(())
    })?;
    let captured = timed(|| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(&producer)
            .stderr(Stdio::null())
            .output()?;
        assert_eq!(out.stdout.len() as u64, bytes);
        Ok(())
    })?;
    let req = RunRequest::new(producer.as_str(), tmp.path(), &spill)?;
    let spilled = timed(|| {
        let outcome = run(&req, &cancel)?;
        let path = outcome.stdout_spill.ok_or("no spill")?;
        assert_eq!(std::fs::metadata(&path)?.len(), bytes);
        std::fs::remove_file(path)?;
        Ok(())
    })?;

    let mbps = |d: Duration| bytes as f64 / 1e6 / d.as_secs_f64();
    println!("spawn cost, {runs} runs of `true` each (mean / median)");
    bare.print("std Command sh -c true .status()");
    piped.print("std Command /bin/sh -c true .output()");
    ours.print("run() /bin/sh -c true");
    println!(
        "  {:<44} {:>8.0} / {:>6.0} us",
        "run() overhead over .status()",
        us(ours.mean) - us(bare.mean),
        us(ours.median) - us(bare.median)
    );
    println!("throughput, {megabytes} MB of `yes | head -c`");
    println!(
        "  {:<44} {:>10.0} MB/s",
        "sh -c '... > /dev/null'",
        mbps(to_null)
    );
    println!(
        "  {:<44} {:>10.0} MB/s",
        "std Command .output() (all in memory)",
        mbps(captured)
    );
    println!(
        "  {:<44} {:>10.0} MB/s",
        "run() (32 KiB inline, rest spilled)",
        mbps(spilled)
    );
    Ok(())
}

type Outcome = Result<(), Box<dyn Error>>;

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

struct Stats {
    mean: Duration,
    median: Duration,
}

impl Stats {
    fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort();
        let n = u32::try_from(samples.len()).unwrap_or(u32::MAX).max(1);
        Stats {
            mean: samples.iter().sum::<Duration>() / n,
            median: samples.get(samples.len() / 2).copied().unwrap_or_default(),
        }
    }

    fn print(&self, label: &str) {
        println!(
            "  {label:<44} {:>8.0} / {:>6.0} us",
            us(self.mean),
            us(self.median)
        );
    }
}

fn timed(mut step: impl FnMut() -> Outcome) -> Result<Duration, Box<dyn Error>> {
    let started = Instant::now();
    step()?;
    Ok(started.elapsed())
}
