/// Three significant digits at most: `0.412`, `12.3`, `1204`.
pub fn short(x: f64) -> String {
    match x.abs() {
        a if a >= 100.0 => format!("{x:.0}"),
        a if a >= 10.0 => format!("{x:.1}"),
        a if a >= 1.0 => format!("{x:.2}"),
        _ => format!("{x:.3}"),
    }
}

/// `min/median/max unit`, each figure [`short`].
pub fn spread(min: f64, median: f64, max: f64, unit: &str) -> String {
    format!("{}/{}/{} {unit}", short(min), short(median), short(max))
}
