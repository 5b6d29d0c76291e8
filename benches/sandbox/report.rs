//! Rows of the benchmark table: our samples and the peer's, min/median/max, and the ratio of
//! the medians; printed as a table (written as JSON by `kept.rs`).

use crate::figures::spread;

pub struct Row {
    pub name: String,
    pub unit: &'static str,
    pub ours: Vec<f64>,
    pub peer: Vec<f64>,
    pub peer_name: String,
}

impl Row {
    pub fn new(name: impl Into<String>, unit: &'static str, peer_name: impl Into<String>) -> Row {
        Row { name: name.into(), unit, ours: Vec::new(), peer: Vec::new(), peer_name: peer_name.into() }
    }

    pub fn push(&mut self, ours: f64, peer: f64) {
        self.ours.push(ours);
        self.peer.push(peer);
    }

    pub fn ratio(&self) -> Option<f64> {
        Some(Summary::of(&self.ours)?.median / Summary::of(&self.peer)?.median)
    }
}

/// A count as the table writes it: `1,000`.
pub fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

pub struct Summary {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = match n {
            0 => return None,
            _ if n % 2 == 1 => sorted[n / 2],
            _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
        };
        Some(Summary { min: sorted[0], median, max: sorted[n - 1] })
    }

    fn text(&self, unit: &str) -> String {
        spread(self.min, self.median, self.max, unit)
    }
}

/// The 1, 5 and 15 minute load averages: how busy the machine was.
pub fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// Prints the table; returns the rows that have no sample on one side or both.
pub fn print<'a>(rows: impl IntoIterator<Item = &'a Row> + Clone) -> Vec<String> {
    let width = rows.clone().into_iter().map(|r| r.name.chars().count()).max().unwrap_or(0);
    println!(
        "\n{:<width$}  {:>3}  {:>26}  {:>26}  {:>6}  peer",
        "benchmark", "n", "ours min/median/max", "peer min/median/max", "ratio"
    );
    let mut empty = Vec::new();
    for row in rows {
        let (Some(ours), Some(peer), Some(ratio)) = (Summary::of(&row.ours), Summary::of(&row.peer), row.ratio())
        else {
            println!("{:<width$}  no samples", row.name);
            empty.push(row.name.clone());
            continue;
        };
        println!(
            "{:<width$}  {:>3}  {:>26}  {:>26}  {:>6.2}  {}",
            row.name,
            row.ours.len(),
            ours.text(row.unit),
            peer.text(row.unit),
            ratio,
            row.peer_name
        );
    }
    empty
}
