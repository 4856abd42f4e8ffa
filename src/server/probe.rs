//! The client side of `grpc.health.v1.Health`, for `preemptd health` (the container's
//! HEALTHCHECK and probes: distroless images have no shell and no `grpc_health_probe`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// How a health check reaches a server with TLS, mTLS or `--authz` on.
#[derive(Clone, Debug, Default)]
pub struct ProbeCredentials {
    /// Speak TLS, trusting server certificates this CA (PEM) signed.
    pub tls_ca: Option<PathBuf>,
    /// The client certificate and key (PEM) to present, for mTLS.
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// The name the server's certificate must carry (default: the address's IP).
    pub server_name: Option<String>,
    /// A file holding a bearer token, sent as `authorization: Bearer ...`.
    pub token_file: Option<PathBuf>,
}

fn read(path: &PathBuf, what: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("{what}: read {}", path.display()))
}

fn endpoint(addr: SocketAddr, credentials: &ProbeCredentials) -> anyhow::Result<Endpoint> {
    let Some(ca) = &credentials.tls_ca else {
        return Endpoint::from_shared(format!("http://{addr}")).context("endpoint");
    };
    let mut tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read(ca, "tls ca")?));
    if let Some((cert, key)) = &credentials.client_cert {
        tls = tls.identity(Identity::from_pem(
            read(cert, "tls cert")?,
            read(key, "tls key")?,
        ));
    }
    if let Some(name) = &credentials.server_name {
        tls = tls.domain_name(name.clone());
    }
    Endpoint::from_shared(format!("https://{addr}"))
        .context("endpoint")?
        .tls_config(tls)
        .context("tls settings")
}

/// Asks `addr` for the serving status of `service` ("" = the whole server); `Ok(true)`
/// when SERVING.
pub async fn check_health(
    addr: SocketAddr,
    service: &str,
    timeout: Duration,
    credentials: &ProbeCredentials,
) -> anyhow::Result<bool> {
    let channel = endpoint(addr, credentials)?
        .connect_timeout(timeout)
        .timeout(timeout)
        .connect()
        .await
        .with_context(|| format!("connect to {addr}"))?;
    let mut request = tonic::Request::new(tonic_health::pb::HealthCheckRequest {
        service: service.to_string(),
    });
    if let Some(path) = &credentials.token_file {
        let token = String::from_utf8(read(path, "token file")?).context("token file")?;
        let value = format!("Bearer {}", token.trim())
            .parse()
            .context("token file: not a valid header value")?;
        request.metadata_mut().insert("authorization", value);
    }
    let response = HealthClient::new(channel)
        .check(request)
        .await
        .with_context(|| format!("health check of {addr}"))?;
    Ok(response.into_inner().status == ServingStatus::Serving as i32)
}
