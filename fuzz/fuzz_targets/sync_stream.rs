//! `Sync` and `UpdatePod` requests of arbitrary bytes, read as the server reads them:
//! decoded by prost (tonic's codec), then each pod or node upsert converted by the typed
//! converter with one memo for the whole stream, as `Sync`'s converter keeps it (and as a
//! thread keeps one for `UpdatePod`). Whatever the bytes, nothing panics, and a converted
//! object (or its error) is the one a conversion without a memo gives. Items are a
//! generated cluster's nodes and pods as a client encodes them, corrupted, cut short,
//! merged, or any bytes: the memo then sees many near-identical values, which is where
//! sharing what it remembers can go wrong.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use preemptd::generate::{self, ClusterSpec};
use preemptd::model::build::Memo;
use preemptd::server::{convert, messages, pb};
use prost::Message as _;

/// A small generated cluster's nodes and pods, each as a `SyncRequest`'s encoding.
static BASE: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    use pb::sync_request::Item;
    let cluster = generate::generate(&ClusterSpec {
        nodes: 8,
        pods_per_node: 4,
        seed: 7,
    });
    let nodes = cluster.nodes.iter().map(|n| {
        Item::Node(pb::UpdateNodeRequest {
            change: Some(pb::update_node_request::Change::Upsert(
                messages::node_message(n),
            )),
        })
    });
    let pods = cluster.pods.iter().map(|p| {
        Item::Pod(pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::Upsert(
                messages::pod_message(p),
            )),
        })
    });
    nodes
        .chain(pods)
        .map(|item| pb::SyncRequest { item: Some(item) }.encode_to_vec())
        .collect()
});

#[derive(Arbitrary, Debug)]
enum Item {
    /// A node or pod of the base cluster, as a client encodes it.
    Base { index: u8 },
    /// A base item with one byte replaced.
    Corrupted { index: u8, at: u16, byte: u8 },
    /// A base item cut short.
    Truncated { index: u8, len: u16 },
    /// Two base items in one message: prost merges the second into the first.
    Merged { first: u8, second: u8 },
    /// A base item followed by arbitrary bytes.
    Extended { index: u8, tail: Vec<u8> },
    /// Any bytes.
    Raw(Vec<u8>),
}

impl Item {
    fn encoding(&self) -> Vec<u8> {
        let base = |i: &u8| BASE[usize::from(*i) % BASE.len()].clone();
        match self {
            Item::Base { index } => base(index),
            Item::Corrupted { index, at, byte } => {
                let mut encoding = base(index);
                let at = usize::from(*at) % encoding.len();
                encoding[at] = *byte;
                encoding
            }
            Item::Truncated { index, len } => {
                let mut encoding = base(index);
                encoding.truncate(usize::from(*len) % (encoding.len() + 1));
                encoding
            }
            Item::Merged { first, second } => [base(first), base(second)].concat(),
            Item::Extended { index, tail } => [&base(index)[..], tail].concat(),
            Item::Raw(bytes) => bytes.clone(),
        }
    }
}

/// A pod or node upsert converted with the stream's memo, as the server converts it, and
/// without one.
fn check_upserts(item: Option<pb::sync_request::Item>, memo: &mut Memo) {
    use pb::sync_request::Item as Typed;
    match item {
        Some(Typed::Pod(pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::Upsert(pod)),
        })) => assert_eq!(
            convert::pod_with_memo("upsert", &pod, memo),
            convert::pod("upsert", &pod)
        ),
        Some(Typed::Node(pb::UpdateNodeRequest {
            change: Some(pb::update_node_request::Change::Upsert(node)),
        })) => assert_eq!(
            convert::node_with_memo("upsert", &node, memo),
            convert::node("upsert", &node)
        ),
        _ => {}
    }
}

fuzz_target!(|items: Vec<Item>| {
    let mut memo = Memo::for_stream();
    for item in &items {
        let encoding = item.encoding();
        // A `Sync` item, as its stream's converter receives it from tonic.
        if let Ok(request) = pb::SyncRequest::decode(&encoding[..]) {
            check_upserts(request.item, &mut memo);
        }
        // The same bytes as an `UpdatePod` request, as its handler decodes and converts it.
        if let Ok(request) = pb::UpdatePodRequest::decode(&encoding[..]) {
            check_upserts(Some(pb::sync_request::Item::Pod(request)), &mut memo);
        }
    }
});
