//! The client side of `grpc.health.v1.Health`, for `preemptd health` (the container's
//! HEALTHCHECK: distroless images have no shell and no `grpc_health_probe`).

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// Asks `addr` for the serving status of `service` ("" = the whole server); `Ok(true)`
/// when SERVING.
pub async fn check_health(
    addr: SocketAddr,
    service: &str,
    timeout: Duration,
) -> anyhow::Result<bool> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .context("endpoint")?
        .connect_timeout(timeout)
        .timeout(timeout)
        .connect()
        .await
        .with_context(|| format!("connect to {addr}"))?;
    let response = HealthClient::new(channel)
        .check(tonic_health::pb::HealthCheckRequest {
            service: service.to_string(),
        })
        .await
        .with_context(|| format!("health check of {addr}"))?;
    Ok(response.into_inner().status == ServingStatus::Serving as i32)
}
