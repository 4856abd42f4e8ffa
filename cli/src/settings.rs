//! Settings read beyond a flag's own parsing: the policy and authorization files, and the
//! Kubernetes version with its feature gates (shared by `serve`, `simulate` and
//! `plan-drain`). Each error names its flag, and the environment variable when the value
//! came from one.

use std::path::Path;
use std::sync::Arc;

use clap::CommandFactory as _;

use preemptd::engine::{FeatureGates, KubernetesVersion, Policy};
use preemptd::server::authz::AuthzPolicy;

use crate::cli::Cli;

/// Which kube-scheduler preemptd answers as.
#[derive(clap::Args, Debug, Clone)]
pub struct KubernetesArgs {
    /// The Kubernetes version whose kube-scheduler preemptd answers as (its preemption
    /// rules and feature gates): 1.35, 1.36 or 1.37.
    #[arg(long, env = "PREEMPTD_KUBERNETES_VERSION", default_value_t = KubernetesVersion::default(), value_parser = parse_kubernetes_version, value_name = "1.35|1.36|1.37")]
    pub kubernetes_version: KubernetesVersion,
    /// Upstream feature gates that change preemption results in that version, as
    /// kube-scheduler's --feature-gates takes them (e.g. SchedulerAsyncPreemption=false);
    /// unset gates default as that kube-scheduler has them. Values preemptd does not
    /// implement yet are refused.
    #[arg(
        long,
        env = "PREEMPTD_FEATURE_GATES",
        default_value = "",
        value_name = "NAME=BOOL,..."
    )]
    pub feature_gates: String,
}

impl KubernetesArgs {
    /// The version's feature gates with `--feature-gates` applied.
    pub fn feature_gates(&self) -> Result<FeatureGates, String> {
        FeatureGates::parse(self.kubernetes_version, &self.feature_gates).map_err(|error| {
            match env_source("--feature-gates") {
                Some(env) => format!("--feature-gates (from {env}): {error}"),
                None => format!("--feature-gates: {error}"),
            }
        })
    }
}

fn parse_kubernetes_version(text: &str) -> Result<KubernetesVersion, String> {
    text.parse()
}

/// Reads and checks a policy file: a bad one is named with its flag, file and field.
pub fn load_policy(path: Option<&Path>) -> Result<Option<Arc<Policy>>, String> {
    path.map(|path| {
        Policy::load(path)
            .map(Arc::new)
            .map_err(|error| file_error("--policy", path, &error.to_string()))
    })
    .transpose()
}

/// Reads and checks an authorization file, as [`load_policy`] does.
pub fn load_authz(path: Option<&Path>) -> Result<Option<Arc<AuthzPolicy>>, String> {
    path.map(|path| {
        AuthzPolicy::load(path)
            .map(Arc::new)
            .map_err(|error| file_error("--authz", path, &error.to_string()))
    })
    .transpose()
}

/// `--flag PATH: error`, naming the environment variable when the value came from one;
/// the path is not repeated when the error starts with it.
fn file_error(flag: &str, path: &Path, error: &str) -> String {
    let shown = path.display().to_string();
    let error = error.strip_prefix(&format!("{shown}: ")).unwrap_or(error);
    match env_source(flag) {
        Some(env) => format!("{flag} {shown} (from {env}): {error}"),
        None => format!("{flag} {shown}: {error}"),
    }
}

/// The environment variable a flag's value came from, when it was not on the command
/// line. `arg` is clap's rendering, e.g. `--listen <LISTEN>`.
pub fn env_source(arg: &str) -> Option<String> {
    let long = arg.strip_prefix("--")?.split([' ', '=']).next()?;
    if std::env::args().any(|a| a == format!("--{long}") || a.starts_with(&format!("--{long}="))) {
        return None;
    }
    let command = Cli::command();
    command
        .get_subcommands()
        .flat_map(|c| c.get_arguments())
        .find(|a| a.get_long() == Some(long))
        .and_then(|a| a.get_env())
        .map(|env| env.to_string_lossy().into_owned())
        .filter(|env| std::env::var_os(env).is_some())
}
