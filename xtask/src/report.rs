//! The Markdown report: one table per group.

use std::fmt::Write as _;
use std::time::Duration;

use crate::measure::Stats;

/// One row: what is compared, our figure, theirs, and ours ÷ theirs.
pub struct Row {
    what: String,
    ours: String,
    theirs: String,
    ratio: String,
}

/// A group's table, with notes printed under it.
pub struct Table {
    title: String,
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Table {
    /// An empty table.
    pub fn new(title: impl Into<String>) -> Self {
        Table {
            title: title.into(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// A row comparing two timings by median (and showing the mean).
    pub fn timed(&mut self, what: impl Into<String>, ours: &Stats, theirs: &Stats) {
        self.rows.push(Row {
            what: what.into(),
            ours: median_mean(ours),
            theirs: median_mean(theirs),
            ratio: ratio(ours.median(), theirs.median()),
        });
    }

    /// A free-form row.
    pub fn row(
        &mut self,
        what: impl Into<String>,
        ours: impl Into<String>,
        theirs: impl Into<String>,
        ratio: impl Into<String>,
    ) {
        self.rows.push(Row {
            what: what.into(),
            ours: ours.into(),
            theirs: theirs.into(),
            ratio: ratio.into(),
        });
    }

    /// A line printed under the table.
    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// The table as Markdown.
    pub fn markdown(&self) -> String {
        let mut out = format!("### {}\n\n", self.title);
        if !self.rows.is_empty() {
            out.push_str("| what | ours | theirs | ratio |\n|---|---:|---:|---:|\n");
            for row in &self.rows {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    row.what, row.ours, row.theirs, row.ratio
                );
            }
            out.push('\n');
        }
        for note in &self.notes {
            let _ = writeln!(out, "{note}  ");
        }
        if !self.notes.is_empty() {
            out.push('\n');
        }
        out
    }
}

/// `median / mean unit`, in a unit chosen from the median.
pub fn median_mean(stats: &Stats) -> String {
    let (scale, unit) = unit_for(stats.median());
    format!(
        "{} / {} {unit}",
        number(stats.median().as_secs_f64() * scale),
        number(stats.mean().as_secs_f64() * scale)
    )
}

/// One duration in a fitting unit.
pub fn duration(d: Duration) -> String {
    let (scale, unit) = unit_for(d);
    format!("{} {unit}", number(d.as_secs_f64() * scale))
}

fn unit_for(d: Duration) -> (f64, &'static str) {
    if d < Duration::from_millis(1) {
        (1e6, "µs")
    } else if d < Duration::from_secs(1) {
        (1e3, "ms")
    } else {
        (1.0, "s")
    }
}

/// Three significant figures at most, no exponent.
fn number(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// `ours ÷ theirs` as `0.42×`.
pub fn ratio(ours: Duration, theirs: Duration) -> String {
    if theirs.is_zero() {
        return "—".into();
    }
    format!("{:.2}×", ours.as_secs_f64() / theirs.as_secs_f64())
}

/// A count with thousands separators.
pub fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Megabytes per second for `bytes` moved in `d`.
pub fn throughput(bytes: u64, d: Duration) -> String {
    if d.is_zero() {
        return "—".into();
    }
    format!("{:.0} MB/s", bytes as f64 / 1e6 / d.as_secs_f64())
}
