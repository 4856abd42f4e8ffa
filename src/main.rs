//! The `preemptd` binary: thin wiring of the library's commands.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "preemptd",
    version,
    about = "Kubernetes pod-preemption decisions, exactly as kube-scheduler makes them"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decide preemption offline for one pod against a cluster file and print the decision
    /// as proto3 JSON (`preemptd.v1.PreemptResponse`).
    Simulate {
        /// A v1 List of Nodes, Pods and PodDisruptionBudgets (JSON or YAML), as
        /// `kubectl get nodes,pods,pdb -A -o json` prints it.
        #[arg(long, value_name = "CLUSTER.json")]
        cluster: PathBuf,
        /// The pending pod to decide for (v1 Pod, JSON or YAML).
        #[arg(long, value_name = "POD.json")]
        pod: PathBuf,
        /// Include per-node diagnostics.
        #[arg(long)]
        explain: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Simulate {
            cluster,
            pod,
            explain,
        } => match preemptd::simulate::simulate(&cluster, &pod, explain) {
            Ok(decision) => {
                let json = preemptd::simulate::decision_json(&decision);
                println!(
                    "{}",
                    serde_json::to_string_pretty(&json).unwrap_or_default()
                );
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("preemptd: error: {error}");
                ExitCode::from(error.exit_code() as u8)
            }
        },
    }
}
