use std::process::ExitCode;

use crate::sandbox::{self, SandboxError, StatusReport};

use super::SandboxArgs;
use super::output::{self, Output};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// Output format: name (`cluster/NAME`, one line per cluster), json or yaml [default: a table]
    #[arg(short, long, value_name = "FORMAT",
          value_parser = output::accepting(&[Output::Name, Output::Json, Output::Yaml]))]
    pub output: Option<Output>,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let report = match sandbox::status(&args.sandbox.dir()).await {
        Ok(report) => report,
        Err(err @ SandboxError::NotUp { .. }) => {
            eprintln!("error: {err}");
            return Ok(ExitCode::FAILURE);
        }
        Err(err) => return Err(err.into()),
    };
    print!("{}", render(&report, args.output.unwrap_or_default())?);
    Ok(if report.ready { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn render(report: &StatusReport, output: Output) -> anyhow::Result<String> {
    Ok(match output {
        Output::Json => serde_json::to_string_pretty(report)? + "\n",
        Output::Yaml => serde_saphyr::to_string(report)?,
        Output::Name => report.clusters.iter().map(|cluster| format!("cluster/{}\n", cluster.name)).collect(),
        Output::Human | Output::Wide => table(report),
    })
}

fn yes_no(ready: bool) -> &'static str {
    if ready { "yes" } else { "NO" }
}

fn table(report: &StatusReport) -> String {
    let mut out = format!(
        "sandbox {} ({} runtime) at {}: {}\nkubeconfig {}\n\n",
        report.name,
        report.runtime,
        report.state_dir.display(),
        if report.ready { "ready" } else { "NOT READY" },
        report.kubeconfig.display()
    );
    out.push_str(&format!(
        "{:<10} {:<8} {:<24} {:<6} {:<8} {}\n",
        "CLUSTER", "ROLE", "COMPONENT", "READY", "PID", "LOG"
    ));
    for cluster in &report.clusters {
        for c in &cluster.components {
            let role =
                serde_json::to_value(cluster.role).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
            let pid = c.pid.map_or_else(|| "-".to_string(), |pid| pid.to_string());
            out.push_str(&format!(
                "{:<10} {:<8} {:<24} {:<6} {:<8} {}\n",
                cluster.name,
                role,
                c.name,
                yes_no(c.ready),
                pid,
                c.log
            ));
            if let Some(reason) = &c.reason {
                out.push_str(&format!("{:>45}{reason}\n", "↳ "));
            }
        }
    }
    for cluster in &report.clusters {
        let Some(mk) = &cluster.multikueue else { continue };
        out.push_str(&format!(
            "\nMultiKueue on {} (AdmissionCheck multikueue {}):\n",
            cluster.name,
            if mk.admission_check_active { "Active" } else { "NOT Active" }
        ));
        out.push_str(&format!("{:<10} {:<7} {}\n", "WORKER", "ACTIVE", "REASON"));
        for c in &mk.clusters {
            out.push_str(&format!("{:<10} {:<7} {} {}\n", c.name, yes_no(c.active), c.reason, c.message));
        }
        if let Some(error) = &mk.error {
            out.push_str(&format!("cannot read MultiKueue state: {error}\n"));
        }
        for problem in &mk.preflight {
            out.push_str(&format!("  ↳ {problem}\n"));
        }
        if !mk.jobs.is_empty() {
            out.push_str(&format!("\n{:<44} {:<10} {}\n", "JOB (manager)", "STATE", "WORKER"));
            for job in &mk.jobs {
                out.push_str(&format!("{:<44} {:<10} {}\n", job.job, job.state, job.worker.as_deref().unwrap_or("-")));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::record::{Role, SandboxPhase};
    use crate::sandbox::{ClusterStatus, RuntimeKind};

    fn report() -> StatusReport {
        let cluster = |name: &str, role| ClusterStatus {
            name: name.into(),
            role,
            context: format!("kueue-ext-{name}"),
            ready: true,
            components: Vec::new(),
            multikueue: None,
        };
        StatusReport {
            name: "kueue-ext".into(),
            runtime: RuntimeKind::Process,
            state_dir: "/s".into(),
            kubeconfig: "/s/kubeconfig".into(),
            phase: SandboxPhase::Up,
            ready: true,
            clusters: vec![cluster("manager", Role::Manager), cluster("worker1", Role::Worker)],
        }
    }

    #[test]
    fn every_output_names_every_cluster() {
        let report = report();
        assert_eq!(render(&report, Output::Name).unwrap(), "cluster/manager\ncluster/worker1\n");
        let json: serde_json::Value = serde_json::from_str(&render(&report, Output::Json).unwrap()).unwrap();
        let yaml: serde_json::Value = serde_saphyr::from_str(&render(&report, Output::Yaml).unwrap()).unwrap();
        assert_eq!(json, yaml);
        assert_eq!(json["clusters"][1]["role"], "worker");
        assert!(render(&report, Output::Human).unwrap().contains("kueue-ext (process runtime)"));
    }
}
