//! Which kinds to watch: the core ones always, PodGroups and Workloads only when the API
//! server serves them (scheduling.k8s.io/v1beta1 comes with v1.37 and the GenericWorkload
//! gate); a watch of a resource the server does not serve would fail forever.

use std::time::Duration;

use crate::model::decode::SCHEDULING_V1BETA1;

use super::Kind;

/// The pause between discovery attempts while the API server does not answer.
const RETRY_DELAY: Duration = Duration::from_secs(1);
/// How often discovery that keeps failing says so again.
const FAILING_LOG_EVERY: u32 = 30;

/// The kinds to watch: [`Kind::CORE`], then PodGroups and Workloads where served. Asks the
/// API server until it answers (the watches could not list without it either).
pub(super) async fn served_kinds(client: &kube::Client) -> Vec<Kind> {
    let mut failures = 0u32;
    loop {
        match discover(client).await {
            Ok(kinds) => return kinds,
            Err(error) => {
                if failures.is_multiple_of(FAILING_LOG_EVERY) {
                    tracing::warn!(
                        group_version = SCHEDULING_V1BETA1,
                        %error,
                        "cannot discover the served resources, retrying"
                    );
                }
                failures += 1;
                tokio::time::sleep(RETRY_DELAY).await;
            }
        }
    }
}

/// [`served_kinds`], asked once: an API server that does not answer is an error.
pub(super) async fn discover(client: &kube::Client) -> Result<Vec<Kind>, kube::Error> {
    match client.list_api_group_resources(SCHEDULING_V1BETA1).await {
        Ok(list) => {
            let served: Vec<&str> = list.resources.iter().map(|r| r.name.as_str()).collect();
            Ok(kinds_served(SCHEDULING_V1BETA1, &served))
        }
        Err(kube::Error::Api(status)) if status.is_not_found() => {
            Ok(kinds_served(SCHEDULING_V1BETA1, &[]))
        }
        Err(error) => Err(error),
    }
}

/// [`Kind::CORE`] and the workload kinds among the `served` resources of `group_version`;
/// says once which are not watched.
fn kinds_served(group_version: &str, served: &[&str]) -> Vec<Kind> {
    let mut kinds = Kind::CORE.to_vec();
    let mut missing = Vec::new();
    for kind in [Kind::PodGroup, Kind::Workload] {
        let resource = kind.api_resource().plural;
        if served.contains(&resource.as_str()) {
            kinds.push(kind);
        } else {
            missing.push(resource);
        }
    }
    if !missing.is_empty() {
        tracing::info!(
            group_version,
            resources = %missing.join(","),
            "the api server does not serve these resources, not watched"
        );
    }
    kinds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_kinds_are_watched_only_where_served() {
        let all = kinds_served(
            SCHEDULING_V1BETA1,
            &["podgroups", "podgroups/status", "workloads"],
        );
        assert_eq!(all, Kind::ALL);
        assert_eq!(kinds_served(SCHEDULING_V1BETA1, &[]), Kind::CORE);
        let groups_only = kinds_served(SCHEDULING_V1BETA1, &["podgroups"]);
        assert_eq!(groups_only.last(), Some(&Kind::PodGroup));
        assert_eq!(groups_only.len(), Kind::CORE.len() + 1);
    }
}
