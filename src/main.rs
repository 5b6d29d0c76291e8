use std::process::ExitCode;

use clap::Parser;
use kueue_ext::cli::{self, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli::init_tracing(cli.verbose, cli.log_format);
    // One TLS provider for the whole process: kube, the webhook server and rcgen all use ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::run(cli)) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
