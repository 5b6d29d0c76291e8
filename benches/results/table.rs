//! The Performance table of docs/performance.md, generated from the results files in
//! benches/results/ (one per run of `cargo bench --bench sandbox`, and one per commit the table
//! quoted before runs were kept). A row is a measure against a peer (its name and its peer's);
//! the table shows each from the newest file that has it, with that file's commit and date, so a
//! new run replaces the rows it measured and leaves the others as they were.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::figures::spread;

/// The lines between which the table is generated; everything else in the file is prose.
pub const BEGIN: &str = "<!-- results:begin (generated from benches/results/ by `cargo bench --bench results`) -->";
pub const END: &str = "<!-- results:end -->";

const HEADER: &str = "| benchmark | n | ours min/median/max | peer min/median/max | ratio of medians | peer | commit, date |\n\
                      | --- | --- | --- | --- | --- | --- | --- |\n";

/// Every results file in `dir`, by file name.
pub fn load(dir: &Path) -> Result<Vec<(String, Value)>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut paths: Vec<_> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok((path.display().to_string(), value))
        })
        .collect()
}

/// One row of one file, where the table places it.
struct Placed<'a> {
    rank: usize,
    date: &'a str,
    index: usize,
    commit: &'a str,
    row: &'a Value,
}

fn text<'a>(value: &'a Value, field: &str, place: &str) -> Result<&'a str, String> {
    value[field].as_str().ok_or_else(|| format!("{place}: no text field {field:?}"))
}

fn number(value: &Value, field: &str, place: &str) -> Result<f64, String> {
    value[field].as_f64().ok_or_else(|| format!("{place}: no number field {field:?}"))
}

/// The Markdown table of the newest row of each measure, in `order` of benchmarks, then by date.
pub fn table(files: &[(String, Value)], order: &[&str]) -> Result<String, String> {
    let mut newest: HashMap<(&str, &str), Placed> = HashMap::new();
    for (file, results) in files {
        let (commit, date) = (text(results, "commit", file)?, text(results, "date", file)?);
        let rows = results["rows"].as_array().ok_or_else(|| format!("{file}: no rows"))?;
        for (index, row) in rows.iter().enumerate() {
            let place = format!("{file}, row {index}");
            let bench = text(row, "benchmark", &place)?;
            let rank =
                order.iter().position(|b| *b == bench).ok_or_else(|| format!("{place}: no benchmark {bench:?}"))?;
            let key = (text(row, "name", &place)?, text(row, "peer_name", &place)?);
            let placed = Placed { rank, date, index, commit, row };
            match newest.get(&key) {
                Some(kept) if kept.date >= date => {}
                _ => {
                    newest.insert(key, placed);
                }
            }
        }
    }
    let mut placed: Vec<Placed> = newest.into_values().collect();
    placed.sort_by(|a, b| (a.rank, a.date, a.index).cmp(&(b.rank, b.date, b.index)));
    let mut out = HEADER.to_string();
    let mut last_peer = "";
    for Placed { commit, date, row, .. } in placed {
        out.push_str(&line(row, commit, date, last_peer)?);
        last_peer = row["peer_name"].as_str().unwrap_or_default();
    }
    Ok(out)
}

/// One table line; a peer named as on the line above reads "the same".
fn line(row: &Value, commit: &str, date: &str, last_peer: &str) -> Result<String, String> {
    let name = text(row, "name", "a row")?;
    let place = format!("row {name:?}");
    let unit = text(row, "unit", &place)?;
    let side = |side: &str| -> Result<String, String> {
        let figures = &row[side];
        let number = |field| number(figures, field, &format!("{place}, {side}"));
        Ok(spread(number("min")?, number("median")?, number("max")?, unit))
    };
    let name = match row["note"].as_str() {
        Some(note) => format!("{name} ({note})"),
        None => name.to_string(),
    };
    let peer = text(row, "peer_name", &place)?;
    let peer = if peer == last_peer { "the same" } else { peer };
    let n = number(row, "n", &place)?;
    let ratio = number(row, "ratio", &place)?;
    let (hash, dirty) = commit.split_once("-dirty").map_or((commit, ""), |(hash, _)| (hash, "-dirty"));
    let commit = format!("{}{dirty}", &hash[..hash.len().min(7)]);
    let day = &date[..date.len().min(10)];
    Ok(format!("| {name} | {n} | {} | {} | {ratio:.2} | {peer} | {commit}, {day} |\n", side("ours")?, side("peer")?))
}

/// `doc` with the lines between [`BEGIN`] and [`END`] replaced by `table`.
pub fn splice(doc: &str, table: &str) -> Result<String, String> {
    let missing = |marker: &str| format!("docs/performance.md has no line {marker:?}");
    let (before, rest) = doc.split_once(&format!("{BEGIN}\n")).ok_or_else(|| missing(BEGIN))?;
    let (_, after) = rest.split_once(END).ok_or_else(|| missing(END))?;
    Ok(format!("{before}{BEGIN}\n{table}{END}{after}"))
}

/// docs/performance.md as the results under `root` (the repository) make it.
pub fn regenerate(root: &Path, order: &[&str]) -> Result<String, String> {
    let doc_path = root.join("docs/performance.md");
    let doc = std::fs::read_to_string(&doc_path).map_err(|e| format!("{}: {e}", doc_path.display()))?;
    let files = load(&root.join("benches/results"))?;
    splice(&doc, &table(&files, order)?)
}
