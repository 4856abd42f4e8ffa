//! Compiles `proto/` with protox (pure Rust, no `protoc` anywhere), generates the tonic
//! client and messages, then the tonic server, and writes the encoded descriptor set for
//! server reflection.
//!
//! The server is generated apart, in one way unlike the client: `Sync`'s and `UpdatePod`'s
//! requests are read by hand-written types of the same wire format (`SyncRequestWire` and
//! `UpdatePodRequestWire` keep a pod's encoding undecoded, for the server to read it
//! straight into its model; see `server::wire`). Clients and reflection see the real descriptors. That reader takes
//! its field numbers from `field_numbers.rs`, written here from the same descriptors.

use std::fmt::Write as _;
use std::path::PathBuf;

use prost::Message as _;

const PACKAGE: &str = "preemptd.v1";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/preemptd/v1/preemptd.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out_dir.join("preemptd_descriptor.bin"), fds.encode_to_vec())?;
    std::fs::write(out_dir.join("field_numbers.rs"), field_numbers(&fds))?;
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
        .extern_path(
            format!(".{PACKAGE}.UpdatePodRequest"),
            "crate::server::wire::UpdatePodRequestWire",
        )
        .compile_fds(fds)?;
    Ok(())
}

/// A module per message (nested ones inside their parent's) with a constant per field:
/// `pod::NODE_NAME` is `Pod.node_name`'s number.
fn field_numbers(fds: &prost_types::FileDescriptorSet) -> String {
    fn message(out: &mut String, m: &prost_types::DescriptorProto) {
        let _ = writeln!(out, "pub(crate) mod {} {{", snake_case(m.name()));
        for field in &m.field {
            let name = field.name().to_ascii_uppercase();
            let _ = writeln!(out, "pub(crate) const {name}: u32 = {};", field.number());
        }
        for nested in &m.nested_type {
            message(out, nested);
        }
        out.push_str("}\n");
    }
    let mut out = String::new();
    for file in fds.file.iter().filter(|f| f.package() == PACKAGE) {
        for m in &file.message_type {
            message(&mut out, m);
        }
    }
    out
}

/// `PodDisruptionBudget` as `pod_disruption_budget`.
fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.char_indices() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
