//! For tests: the peak memory (resident set) of a piece of work, measured
//! in a child process of the test binary that runs just one test, so that
//! the other tests running meanwhile do not count.

use std::process::Command;

/// The variable that tells a child which test it runs for measuring.
const CHILD: &str = "AGENT_TOOLS_PEAK_CHILD";

/// Whether this process is the child measuring `test`.
pub(crate) fn measuring(test: &str) -> bool {
    std::env::var_os(CHILD).is_some_and(|name| name == test)
}

/// In the measuring child: forgets the peak so far (the inputs built), so
/// that what follows alone counts. Linux: `5` in `clear_refs` resets it.
pub(crate) fn start() {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
}

/// In the measuring child: prints the peak resident set since [`start`].
pub(crate) fn report() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .unwrap();
    println!("peak-rss {line}");
}

/// Runs the test `test` (a full path, `module::name`) alone in a child
/// process and gives its peak resident set in bytes.
pub(crate) fn peak_of_test(test: &str) -> u64 {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, test)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let kib: u64 = stdout
        .lines()
        .find_map(|line| line.split_once("peak-rss VmHWM:").map(|(_, rest)| rest))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak reported: {stdout}"));
    kib * 1024
}
