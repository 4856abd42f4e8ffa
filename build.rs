//! Compiles `proto/` with protox (pure Rust, no `protoc` anywhere), generates the tonic
//! client, server and messages, and writes the encoded descriptor set for server
//! reflection.

use std::path::PathBuf;

use prost::Message as _;

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
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;
    Ok(())
}
