//! Runs the preemptd gRPC server until Ctrl-C or SIGTERM (for trying the API with grpcurl
//! before `preemptd serve` is wired). Listens on `PREEMPTD_LISTEN`, default
//! 127.0.0.1:50051.
//!
//!     cargo run --release --example serve

use preemptd::server::{ServeConfig, start};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut config = ServeConfig::default();
    if let Ok(listen) = std::env::var("PREEMPTD_LISTEN") {
        config.listen = listen.parse()?;
    }
    let server = start(config).await?;
    eprintln!(
        "preemptd listening on {} (epoch {})",
        server.local_addr(),
        server.epoch()
    );
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    server.shutdown().await
}
