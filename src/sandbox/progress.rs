//! Progress of long steps: a live line on a terminal, plain lines otherwise (CI logs, pipes).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

/// Reports the steps of a command on stderr.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    tty: bool,
}

impl Progress {
    pub fn stderr() -> Self {
        Progress { tty: std::io::stderr().is_terminal() }
    }

    pub fn line(&self, message: impl AsRef<str>) {
        eprintln!("{}", message.as_ref());
    }

    /// Starts a step; finish it with [`Step::done`]. Long steps tick while they run.
    pub fn step(&self, message: impl Into<String>) -> Step {
        let message = message.into();
        let started = Instant::now();
        let ticker = Some(spawn_ticker(message.clone(), started, self.tty));
        if !self.tty {
            eprintln!("• {message} ...");
        }
        Step { message, started, ticker, progress: *self }
    }
}

pub struct Step {
    message: String,
    started: Instant,
    ticker: Option<JoinHandle<()>>,
    progress: Progress,
}

impl Step {
    pub fn done(mut self) -> Duration {
        let elapsed = self.started.elapsed();
        self.stop_ticker();
        self.progress.line(format!("✓ {} ({})", self.message, human_duration(elapsed)));
        elapsed
    }

    fn stop_ticker(&mut self) {
        if let Some(ticker) = self.ticker.take() {
            ticker.abort();
            if self.progress.tty {
                eprint!("\r\x1b[2K");
            }
        }
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        self.stop_ticker();
    }
}

fn spawn_ticker(message: String, started: Instant, tty: bool) -> JoinHandle<()> {
    tokio::spawn(async move {
        const FRAMES: [char; 4] = ['|', '/', '-', '\\'];
        let period = if tty { Duration::from_millis(250) } else { Duration::from_secs(60) };
        let mut tick = 0usize;
        loop {
            tokio::time::sleep(period).await;
            tick += 1;
            let elapsed = human_duration(started.elapsed());
            if tty {
                eprint!("\r\x1b[2K{} {message} {elapsed}", FRAMES[tick % FRAMES.len()]);
                let _ = std::io::stderr().flush();
            } else {
                eprintln!("  {message}: still running after {elapsed}");
            }
        }
    })
}

/// `850ms`, `12.3s`, `4m05s`.
pub fn human_duration(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 60 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else if d.as_millis() >= 1000 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format!("{}ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_a_human_wrote_them() {
        assert_eq!(human_duration(Duration::from_millis(850)), "850ms");
        assert_eq!(human_duration(Duration::from_millis(12_340)), "12.3s");
        assert_eq!(human_duration(Duration::from_secs(245)), "4m05s");
    }
}
