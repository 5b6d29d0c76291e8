//! Go's duration strings (`90s`, `1m30s`, `1.5h`), as Kueue, AppWrapper and kubectl's flags
//! write them: annotations and flags that mirror theirs take the same text.

use std::time::Duration;

/// Text that is not a Go duration.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a duration like 90s, 1m30s or 2h")]
pub struct NotADuration(String);

/// A Go `time.ParseDuration` string: `90s`, `1m30s`, `1.5h`, `300ms`; no negative values.
pub fn parse_go_duration(text: &str) -> Result<Duration, NotADuration> {
    let bad = || NotADuration(text.to_string());
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        let (number, tail) = rest.split_at(number_end);
        let value: f64 = number.parse().map_err(|_| bad())?;
        let unit_end = tail.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let seconds = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += value * seconds;
        rest = tail;
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        for (text, secs) in
            [("90s", 90.0), ("1m30s", 90.0), ("1.5h", 5400.0), ("300ms", 0.3), ("0", 0.0), ("2h0m", 7200.0)]
        {
            assert_eq!(parse_go_duration(text), Ok(Duration::from_secs_f64(secs)), "{text}");
        }
        for bad in ["", "10", "-1s", "1d", "s", "1..5s", "abc"] {
            assert!(parse_go_duration(bad).is_err(), "{bad}");
        }
    }
}
