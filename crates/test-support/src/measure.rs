//! What a test or a benchmark reads about a process and the machine: the
//! processor time it used, a memory figure from `/proc`, the load average.
//! One home, so every figure in the README is read the same way.

use nix::sys::resource::{UsageWho, getrusage};

/// Processor time this process has used so far, user and system, in
/// seconds (every thread counted); 0 where the kernel will not say.
pub fn cpu_seconds() -> f64 {
    getrusage(UsageWho::RUSAGE_SELF).map_or(0.0, |usage| {
        let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        seconds(usage.user_time()) + seconds(usage.system_time())
    })
}

/// Which process a memory figure is read for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Process {
    /// The calling process.
    This,
    /// Another process, by id.
    Pid(u32),
}

/// A memory figure of `/proc/PID/status`, in bytes: `"VmRSS"` (resident
/// now) or `"VmHWM"` (resident at peak), for example. None when the
/// process is gone or the field is absent (the kernel gives it in kB).
pub fn status_bytes(process: Process, field: &str) -> Option<u64> {
    let path = match process {
        Process::This => "/proc/self/status".to_owned(),
        Process::Pid(pid) => format!("/proc/{pid}/status"),
    };
    let status = std::fs::read_to_string(path).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map(|kib| kib * 1024)
}

/// The machine's load averages over 1, 5 and 15 minutes, as the kernel
/// writes them; None where `/proc/loadavg` cannot be read.
pub fn load_averages() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(str::parse::<f64>);
    Some([
        fields.next()?.ok()?,
        fields.next()?.ok()?,
        fields.next()?.ok()?,
    ])
}

/// The three load averages as a benchmark prints them (`"0.52 0.61
/// 0.70"`), or `"unknown"`.
pub fn load_text() -> String {
    load_averages().map_or_else(
        || "unknown".to_owned(),
        |[one, five, fifteen]| format!("{one:.2} {five:.2} {fifteen:.2}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processor_time_grows_with_work() {
        let before = cpu_seconds();
        let mut x = 0u64;
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        assert!(cpu_seconds() > before, "no processor time counted ({x})");
    }

    #[test]
    fn memory_figures_are_read_for_this_process_and_by_pid() {
        let rss = status_bytes(Process::This, "VmRSS").unwrap();
        let peak = status_bytes(Process::This, "VmHWM").unwrap();
        assert!(rss > 0 && peak >= rss, "rss {rss}, peak {peak}");
        let by_pid = status_bytes(Process::Pid(std::process::id()), "VmHWM").unwrap();
        assert!(by_pid >= peak);
        // A field name is matched whole, not as a prefix of another.
        assert_eq!(status_bytes(Process::This, "VmRS"), None);
        assert_eq!(status_bytes(Process::This, "NoSuchField"), None);
    }

    #[test]
    fn load_averages_are_three_numbers() {
        let [one, five, fifteen] = load_averages().unwrap();
        assert!(one >= 0.0 && five >= 0.0 && fifteen >= 0.0);
        assert_eq!(load_text().split(' ').count(), 3);
    }
}
