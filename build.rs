//! Compiles `proto/` with protox (pure Rust, no `protoc` anywhere), generates the tonic
//! client and messages, then the tonic server from a copy of the descriptors in which
//! `Sync` receives `SyncRequestWire` and `UpdatePod` `UpdatePodRequestWire`, and writes the
//! encoded descriptor set for server reflection (the real one: clients see no difference).

use std::path::PathBuf;

use prost::Message as _;
use prost_types::field_descriptor_proto::Type;

const PACKAGE: &str = "preemptd.v1";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/preemptd/v1/preemptd.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out_dir.join("preemptd_descriptor.bin"), fds.encode_to_vec())?;
    let server_fds = with_wire_inputs(fds.clone())?;
    tonic_prost_build::configure()
        // Label and resource maps are a few entries each: a sorted map decodes faster than
        // a seeded hash map and hands entries out in a stable order.
        .btree_map(".")
        .build_server(false)
        .build_client(true)
        .compile_fds(fds)?;
    let server_dir = out_dir.join("server");
    std::fs::create_dir_all(&server_dir)?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(false)
        .out_dir(&server_dir)
        // Every message is the client pass's; the wire request is written by hand.
        .extern_path(format!(".{PACKAGE}"), "crate::server::pb")
        .extern_path(
            format!(".{PACKAGE}.SyncRequestWire"),
            "crate::server::wire::SyncRequestWire",
        )
        .extern_path(
            format!(".{PACKAGE}.UpdatePodRequestWire"),
            "crate::server::wire::UpdatePodRequestWire",
        )
        .compile_fds(server_fds)?;
    Ok(())
}

/// The descriptors with a `SyncRequestWire` message, `SyncRequest` with its `pod` item
/// as `bytes`, as `Sync`'s input: on the wire the two are the same (a message and bytes
/// are both length-delimited), so the server receives each pod's encoding undecoded and
/// decodes it itself, straight into its model. Likewise `UpdatePod`'s request.
fn with_wire_inputs(
    mut fds: prost_types::FileDescriptorSet,
) -> Result<prost_types::FileDescriptorSet, Box<dyn std::error::Error>> {
    let file = fds
        .file
        .iter_mut()
        .find(|f| f.package() == PACKAGE)
        .ok_or("no preemptd.v1 file")?;
    let mut wire = copy_of(file, "SyncRequest", "SyncRequestWire")?;
    let pod = wire
        .field
        .iter_mut()
        .find(|f| f.name() == "pod")
        .ok_or("no SyncRequest.pod field")?;
    pod.set_type(Type::Bytes);
    pod.type_name = None;
    file.message_type.push(wire);
    // `UpdatePod` receives its request whole, undecoded (a copy of the message under
    // another name: the server's type reads the bytes as they are).
    let update_pod = copy_of(file, "UpdatePodRequest", "UpdatePodRequestWire")?;
    file.message_type.push(update_pod);
    for (method, input) in [
        ("Sync", "SyncRequestWire"),
        ("UpdatePod", "UpdatePodRequestWire"),
    ] {
        file.service
            .iter_mut()
            .flat_map(|s| s.method.iter_mut())
            .find(|m| m.name() == method)
            .ok_or(format!("no {method} method"))?
            .input_type = Some(format!(".{PACKAGE}.{input}"));
    }
    Ok(fds)
}

/// A copy of `file`'s message `name`, named `copy`.
fn copy_of(
    file: &prost_types::FileDescriptorProto,
    name: &str,
    copy: &str,
) -> Result<prost_types::DescriptorProto, Box<dyn std::error::Error>> {
    let mut message = file
        .message_type
        .iter()
        .find(|m| m.name() == name)
        .ok_or(format!("no {name} message"))?
        .clone();
    message.name = Some(copy.to_string());
    Ok(message)
}
