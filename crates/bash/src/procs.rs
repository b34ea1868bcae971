//! The process table as Linux's `/proc` shows it: who is whose parent, in
//! which process group, and whether it is a zombie.
//!
//! Hand-read because what is needed is three numbers from `/proc/PID/stat`
//! for every process; the crates that parse all of procfs would be a large
//! dependency for that.

use std::collections::HashMap;
use std::fs;

/// One process, from `/proc/PID/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub(crate) pid: i32,
    pub(crate) ppid: i32,
    pub(crate) pgrp: i32,
    /// A zombie (or a dead task): it holds nothing but its exit status.
    pub(crate) dead: bool,
}

/// Every process visible in `/proc`, or `None` when `/proc` is not procfs.
/// Processes that end while being read are left out.
pub(crate) fn snapshot() -> Option<Vec<ProcStat>> {
    let entries = fs::read_dir("/proc").ok()?;
    let mut procs = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some(parsed) = parse_stat(pid, &stat) {
            procs.push(parsed);
        }
    }
    // A /proc without processes is not procfs (we, at least, are running).
    if procs.is_empty() { None } else { Some(procs) }
}

/// `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses,
/// so the fields are counted from the last `)`.
fn parse_stat(pid: i32, stat: &str) -> Option<ProcStat> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(ProcStat {
        pid,
        ppid,
        pgrp,
        dead: matches!(state, "Z" | "X"),
    })
}

/// The living descendants of `root` in `procs` (children, their children,
/// ...), not `root` itself.
pub(crate) fn descendants(procs: &[ProcStat], root: i32) -> Vec<ProcStat> {
    let mut children: HashMap<i32, Vec<&ProcStat>> = HashMap::new();
    for proc in procs {
        children.entry(proc.ppid).or_default().push(proc);
    }
    let mut found = Vec::new();
    let mut stack = vec![root];
    while let Some(parent) = stack.pop() {
        for child in children.get(&parent).into_iter().flatten() {
            // A pid seen twice would be a cycle only a racing snapshot can
            // show; the length bound keeps the walk finite regardless.
            if child.pid == root || found.len() > procs.len() {
                continue;
            }
            stack.push(child.pid);
            if !child.dead {
                found.push(**child);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_lines_with_odd_names() {
        assert_eq!(
            parse_stat(7, "7 (a) b (c)) S 1 7 7 0 -1"),
            Some(ProcStat {
                pid: 7,
                ppid: 1,
                pgrp: 7,
                dead: false
            })
        );
        assert!(parse_stat(7, "7 (x) Z 1 7 7").is_some_and(|p| p.dead));
        assert_eq!(parse_stat(7, "garbage"), None);
    }

    #[test]
    fn descendants_walks_the_tree_and_skips_zombies() {
        let p = |pid, ppid, dead| ProcStat {
            pid,
            ppid,
            pgrp: 1,
            dead,
        };
        let procs = [
            p(1, 0, false),
            p(10, 1, false),
            p(11, 10, false),
            p(12, 11, true),
            p(13, 12, false),
            p(20, 1, false),
        ];
        let mut pids: Vec<i32> = descendants(&procs, 10).iter().map(|p| p.pid).collect();
        pids.sort();
        assert_eq!(pids, [11, 13]);
    }
}
