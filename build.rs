//! Compiles `proto/` with protox (pure Rust, no `protoc` anywhere), generates the tonic
//! client and messages, then the tonic server, and writes the encoded descriptor set for
//! server reflection.
//!
//! The server is generated apart, in one way unlike the client: `Sync`'s requests are
//! read by a hand-written type of the same wire format (`SyncRequestWire` keeps a pod's
//! encoding undecoded, for the server to read it straight into its model; see
//! `server::wire`). Clients and reflection see the real descriptors.

use std::path::PathBuf;

use prost::Message as _;

const PACKAGE: &str = "preemptd.v1";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/preemptd/v1/preemptd.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out_dir.join("preemptd_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        // Label and resource maps are a few entries each: a sorted map decodes faster than
        // a seeded hash map and hands entries out in a stable order.
        .btree_map(".")
        .build_server(false)
        .build_client(true)
        .compile_fds(fds.clone())?;
    let server_dir = out_dir.join("server");
    std::fs::create_dir_all(&server_dir)?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(false)
        .out_dir(&server_dir)
        // Every message is the client pass's but the request read by hand (prost prefers
        // a message's own path to its package's).
        .extern_path(format!(".{PACKAGE}"), "crate::server::pb")
        .extern_path(
            format!(".{PACKAGE}.SyncRequest"),
            "crate::server::wire::SyncRequestWire",
        )
        .compile_fds(fds)?;
    Ok(())
}
