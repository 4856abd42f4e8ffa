//! `--target`: the address of a server bench did not start, and the check that it is
//! fresh.

use std::net::{SocketAddr, ToSocketAddrs as _};

use anyhow::{Context as _, bail};
use tonic::transport::Channel;

use pb::preemption_client::PreemptionClient;
use preemptd::generate;
use preemptd::server::{messages, pb};

/// `--target`: an IP address or a name with a port; a name's first IPv4 address, else its
/// first (as `serve --listen` binds it).
pub(crate) fn parse_target(text: &str) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = text
        .to_socket_addrs()
        .map_err(|error| format!("invalid address {text:?}: {error}; expected host:port"))?
        .collect();
    addrs
        .iter()
        .find(|addr| addr.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("{text:?} resolves to no address"))
}

/// `--target` must be a fresh server: the generated cluster would otherwise mix with (and
/// stay in) what it holds, and every figure would be off. A dry-run Preempt answers with
/// the cache revision, 0 until anything was ever applied.
pub(crate) async fn ensure_fresh(
    client: &mut PreemptionClient<Channel>,
    addr: SocketAddr,
) -> anyhow::Result<()> {
    let response = client
        .preempt(pb::PreemptRequest {
            preemptor: Some(pb::preempt_request::Preemptor::Pod(messages::pod_message(
                &generate::resource_preemptor(0),
            ))),
            dry_run: true,
            explain: false,
            pdb_mode: pb::PdbMode::Unspecified.into(),
        })
        .await
        .with_context(|| format!("ask --target {addr} whether it is empty"))?
        .into_inner();
    if response.revision != 0 {
        bail!(
            "--target {addr} already holds cluster state (cache revision {}): bench loads a \
             generated cluster into the server it measures; start a fresh `preemptd serve` \
             for it, or pass --force to load into this one anyway",
            response.revision
        );
    }
    Ok(())
}
