//! What `version` says of the build itself: the commit, the day it was built, the target and the
//! compiler. Outside a git checkout (a source archive) the commit is "unknown".

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = output(Command::new(rustc).arg("--version")).unwrap_or_else(|| "rustc (unknown)".into());
    println!("cargo:rustc-env=KUEUE_EXT_COMMIT={commit}");
    println!("cargo:rustc-env=KUEUE_EXT_BUILD_DATE={}", build_date());
    println!("cargo:rustc-env=KUEUE_EXT_TARGET={}", std::env::var("TARGET").unwrap_or_default());
    println!("cargo:rustc-env=KUEUE_EXT_RUSTC={rustc_version}");
    // A new commit is a new version to report; nothing else here needs a rebuild.
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={git_dir}/{reference}");
        }
        println!("cargo:rerun-if-changed={git_dir}/packed-refs");
    }
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
}

fn git(args: &[&str]) -> Option<String> {
    output(Command::new("git").args(args))
}

fn output(command: &mut Command) -> Option<String> {
    let out = command.output().ok().filter(|out| out.status.success())?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// The build's day as `YYYY-MM-DD` (UTC); `SOURCE_DATE_EPOCH` makes it reproducible.
fn build_date() -> String {
    let seconds = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0));
    let (year, month, day) = civil_from_days((seconds / 86_400) as i64);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Howard Hinnant's days-to-civil algorithm: the proleptic Gregorian date of a day count since
/// 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
