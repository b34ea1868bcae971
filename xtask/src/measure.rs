//! Timing: samples, their summary, and interleaved runs of several contenders.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// Timed samples of one contender, sorted.
#[derive(Debug, Clone)]
pub struct Stats {
    sorted: Vec<Duration>,
}

impl Stats {
    /// Summarizes samples (at least one).
    pub fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort();
        if samples.is_empty() {
            samples.push(Duration::ZERO);
        }
        Stats { sorted: samples }
    }

    /// The middle sample (upper middle for an even count).
    pub fn median(&self) -> Duration {
        self.sorted[self.sorted.len() / 2]
    }

    /// The arithmetic mean.
    pub fn mean(&self) -> Duration {
        let n = u32::try_from(self.sorted.len()).unwrap_or(u32::MAX);
        self.sorted.iter().sum::<Duration>() / n.max(1)
    }

    /// The sample at a quantile (0.0 to 1.0), nearest rank.
    pub fn quantile(&self, q: f64) -> Duration {
        let rank = (q * self.sorted.len() as f64).ceil() as usize;
        self.sorted[rank.clamp(1, self.sorted.len()) - 1]
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }
}

/// A contender: a label and one timed step.
pub type Step<'a> = Box<dyn FnMut() -> Result<()> + 'a>;

/// Runs every step once untimed (warm-up, and a chance to check results),
/// then `runs` rounds in which each step runs once, timed, in a rotating
/// order; interleaving spreads any drift of a busy machine over all
/// contenders alike, and rotating evens out what one step leaves behind for
/// the next.
pub fn interleaved(runs: usize, steps: &mut [Step<'_>]) -> Result<Vec<Stats>> {
    for step in steps.iter_mut() {
        step()?;
    }
    let n = steps.len();
    let mut samples = vec![Vec::with_capacity(runs); n];
    for round in 0..runs {
        for index in rotation(round, n) {
            let started = Instant::now();
            steps[index]()?;
            samples[index].push(started.elapsed());
        }
    }
    Ok(samples.into_iter().map(Stats::of).collect())
}

/// The order of the steps in a round: rotated by one each round, so every
/// step runs in every position (after every other step) equally often.
fn rotation(round: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |i| (round + i) % n.max(1))
}

/// Like [`interleaved`], with an untimed `setup` before every run of a step
/// (for example restoring a file the step changes).
pub fn interleaved_with_setup(
    runs: usize,
    setup: &mut dyn FnMut() -> Result<()>,
    steps: &mut [Step<'_>],
) -> Result<Vec<Stats>> {
    for step in steps.iter_mut() {
        setup()?;
        step()?;
    }
    let n = steps.len();
    let mut samples = vec![Vec::with_capacity(runs); n];
    for round in 0..runs {
        for index in rotation(round, n) {
            setup()?;
            let started = Instant::now();
            steps[index]()?;
            samples[index].push(started.elapsed());
        }
    }
    Ok(samples.into_iter().map(Stats::of).collect())
}

/// Runs a command to completion with stdin closed and stdout captured;
/// fails unless it exits with one of the `ok` codes.
pub fn run_captured(cmd: &mut Command, ok: &[i32]) -> Result<Output> {
    let output = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("starting {cmd:?}"))?;
    match output.status.code() {
        Some(code) if ok.contains(&code) => Ok(output),
        _ => bail!(
            "{cmd:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ),
    }
}

/// The first line of `PROGRAM --version`, or None when it cannot run.
pub fn tool_version(program: &str) -> Option<String> {
    let output = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .map(str::to_string)
}

/// Filesystem type of a folder as `stat -f` names it, if it can tell.
pub fn fs_type(path: &Path) -> Option<String> {
    let output = Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(path)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Flushes dirty data to disk (`sync`), untimed, before a step that
/// fsyncs: otherwise that step would also pay for writing back what the
/// setup or an earlier contender left dirty. Best effort.
pub fn settle() {
    let _ = Command::new("sync")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
