//! The API server's version against the one decisions answer as: read once at start
//! (`/version`); a different minor is worth a warning, never a refusal — an operator may
//! run preemptd for the kube-scheduler of a version the control plane is moving to.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::version::Info;

use crate::engine::KubernetesVersion;

/// How long the start waits for `/version` before saying it could not read it.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads the API server's `/version` and logs a warning naming both versions when its
/// minor is not `configured`'s, or when it cannot be read; `configured` stays in force.
pub async fn check_server_version(client: kube::Client, configured: KubernetesVersion) {
    match tokio::time::timeout(VERSION_TIMEOUT, client.apiserver_version()).await {
        Ok(Ok(info)) => compare(&info, configured),
        Ok(Err(error)) => tracing::warn!(
            %error,
            kubernetes_version = %configured,
            "cannot read the api server's version; answering as the configured kubernetes version"
        ),
        Err(_) => tracing::warn!(
            timeout = ?VERSION_TIMEOUT,
            kubernetes_version = %configured,
            "the api server did not answer /version in time; answering as the configured kubernetes version"
        ),
    }
}

fn compare(info: &Info, configured: KubernetesVersion) {
    let server = server_version(info);
    match minor_of(info) {
        Some((1, minor)) if minor == configured.minor() => tracing::info!(
            api_server = %server,
            kubernetes_version = %configured,
            "the api server's kubernetes version matches --kubernetes-version"
        ),
        _ => tracing::warn!(
            api_server = %server,
            kubernetes_version = %configured,
            "the api server runs kubernetes {server} but preemptd answers as kubernetes {configured} (--kubernetes-version); decisions follow {configured}'s kube-scheduler"
        ),
    }
}

/// `gitVersion` (e.g. `v1.37.2`), else `major.minor`.
fn server_version(info: &Info) -> String {
    if info.git_version.is_empty() {
        format!("{}.{}", info.major, info.minor)
    } else {
        info.git_version.clone()
    }
}

/// (major, minor) from `major` and `minor` (managed clusters report e.g. `"37+"`), else
/// from `gitVersion`.
fn minor_of(info: &Info) -> Option<(u32, u32)> {
    let leading = |text: &str| -> Option<u32> {
        let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    if let (Some(major), Some(minor)) = (leading(&info.major), leading(&info.minor)) {
        return Some((major, minor));
    }
    let mut parts = info.git_version.trim_start_matches('v').split('.');
    Some((leading(parts.next()?)?, leading(parts.next()?)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(major: &str, minor: &str, git_version: &str) -> Info {
        Info {
            major: major.into(),
            minor: minor.into(),
            git_version: git_version.into(),
            ..Info::default()
        }
    }

    #[test]
    fn minors_are_read_from_major_minor_or_the_git_version() {
        assert_eq!(minor_of(&info("1", "37", "v1.37.2")), Some((1, 37)));
        assert_eq!(
            minor_of(&info("1", "36+", "v1.36.3-gke.100")),
            Some((1, 36))
        );
        assert_eq!(minor_of(&info("", "", "v1.35.4")), Some((1, 35)));
        assert_eq!(minor_of(&info("", "", "")), None);
        assert_eq!(server_version(&info("1", "36", "")), "1.36");
    }
}
