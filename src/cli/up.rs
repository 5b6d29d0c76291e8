use std::process::ExitCode;

use crate::sandbox::kwok::NodePool;
use crate::sandbox::progress::{Progress, human_duration};
use crate::sandbox::{self, UpOptions, UpOutcome};

use super::SandboxArgs;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// Number of worker clusters (0: a single cluster that admits and runs jobs itself).
    #[arg(long, default_value_t = 2)]
    pub workers: u32,
    /// Port of the manager's kube-apiserver on 127.0.0.1 [default: a free port]
    #[arg(long, value_name = "PORT")]
    pub api_server_port: Option<u16>,
    /// Fake (kwok) nodes per cluster that runs pods.
    #[arg(long, default_value_t = 4)]
    pub nodes: u32,
    /// CPU of each fake node.
    #[arg(long, default_value = "8")]
    pub node_cpu: String,
    /// Memory of each fake node.
    #[arg(long, default_value = "32Gi")]
    pub node_memory: String,
    /// Also merge the sandbox contexts into your kubeconfig ($KUBECONFIG or ~/.kube/config), as
    /// kind does; `down` removes them again.
    #[arg(long)]
    pub merge_kubeconfig: bool,
    /// Extra flag for one component on every cluster, e.g. `kube-apiserver=--v=4` (repeatable).
    #[arg(long = "component-arg", value_name = "COMPONENT=FLAG", value_parser = parse_component_arg)]
    pub component_args: Vec<(String, String)>,
}

fn parse_component_arg(text: &str) -> Result<(String, String), String> {
    let (component, flag) = text.split_once('=').ok_or("expected COMPONENT=FLAG, e.g. kube-apiserver=--v=4")?;
    if !sandbox::COMPONENTS.contains(&component) {
        return Err(format!("unknown component {component:?}; one of {}", sandbox::COMPONENTS.join(", ")));
    }
    Ok((component.to_string(), flag.to_string()))
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let options = UpOptions {
        state_dir: args.sandbox.dir(),
        workers: args.workers,
        api_server_port: args.api_server_port,
        nodes: NodePool { count: args.nodes, cpu: args.node_cpu, memory: args.node_memory },
        component_args: args.component_args,
        merge_kubeconfig: args.merge_kubeconfig.then(crate::sandbox::kubeconfig::user_default_path),
    };
    match sandbox::up(&options, &Progress::stderr()).await? {
        UpOutcome::AlreadyUp(state) => {
            println!("sandbox already up at {}: nothing changed", options.state_dir.display());
            println!("kubeconfig: {}", state.kubeconfig.display());
        }
        UpOutcome::Started { state, elapsed } => {
            println!("sandbox up in {} ({} cluster(s))", human_duration(elapsed), state.clusters.len());
            println!("kubeconfig: {}", state.kubeconfig.display());
            let contexts: Vec<&str> = state.clusters.iter().map(|c| c.context.as_str()).collect();
            println!("contexts:   {}", contexts.join(", "));
            println!("try:        kubectl --kubeconfig {} get clusterqueues,nodes", state.kubeconfig.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_args_name_a_known_component() {
        assert_eq!(
            parse_component_arg("kueue=--zap-log-level=2").unwrap(),
            ("kueue".into(), "--zap-log-level=2".into())
        );
        assert!(parse_component_arg("kubelet=--v=2").unwrap_err().contains("unknown component"));
        assert!(parse_component_arg("--v=2").is_err());
    }
}
