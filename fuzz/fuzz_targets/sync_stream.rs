//! `Sync` streams of arbitrary items: each item, read as the server reads it (the wire
//! readers, with one memo for the whole stream as `Sync` keeps it), is refused exactly
//! when prost refuses it, and gives the node or pod (or the error) the typed reader gives
//! for prost's decoding. Items are a generated cluster's nodes and pods (some of them
//! members of gangs, whose PodGroups and Workload are items too) as a client
//! encodes them, corrupted, cut short, merged, or any bytes: the memo then sees many
//! near-identical templates, which is where reading from the encoding can go wrong.
#![no_main]

use std::sync::LazyLock;

use bytes::Bytes;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use preemptd::generate::{self, ClusterSpec};
use preemptd::model::Pod;
use preemptd::model::build::Memo;
use preemptd::server::wire::{self, Received, SyncRequestWire, WireItem};
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
    // Every other pod a member of one of two gangs, whose groups and workload are items too.
    let pods = cluster.pods.iter().enumerate().map(|(i, p)| {
        let mut pod = messages::pod_message(p);
        if i % 2 == 1 {
            pod.scheduling_group = Some(pb::PodSchedulingGroup {
                pod_group_name: format!("gang-{}", i % 4),
            });
        }
        Item::Pod(pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::Upsert(pod)),
        })
    });
    let groups = (0..2).map(|i| {
        Item::PodGroup(pb::UpdatePodGroupRequest {
            change: Some(pb::update_pod_group_request::Change::Upsert(pb::PodGroup {
                name: format!("gang-{}", 2 * i + 1),
                scheduling_policy: Some(pb::PodGroupSchedulingPolicy {
                    gang: Some(pb::GangSchedulingPolicy { min_count: 2 }),
                    ..Default::default()
                }),
                ..Default::default()
            })),
        })
    });
    let workload = Item::Workload(pb::UpdateWorkloadRequest {
        change: Some(pb::update_workload_request::Change::Upsert(pb::Workload {
            name: "job".into(),
            pod_group_templates: vec![pb::PodGroupTemplate {
                name: "workers".into(),
            }],
            ..Default::default()
        })),
    });
    nodes
        .chain(pods)
        .chain(groups)
        .chain([workload])
        .map(|item| pb::SyncRequest { item: Some(item) }.encode_to_vec())
        .collect()
});

/// A pod as the cache holds it: a pod read from its encoding comes without the container
/// specs its requests and host ports were made of.
fn held(mut pod: Pod) -> Pod {
    if pod.details.holds_specs() {
        pod.details_mut().drop_specs();
    }
    pod
}

#[derive(Arbitrary, Debug)]
enum Item {
    /// A node, pod, PodGroup or Workload of the base cluster, as a client encodes it.
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

fuzz_target!(|items: Vec<Item>| {
    let mut memo = Memo::for_stream();
    for item in &items {
        let encoding = Bytes::from(item.encoding());
        let typed = pb::SyncRequest::decode(encoding.clone()).map(|request| request.item);
        // The server decodes the request as tonic does (pod and node items kept as bytes) and reads them
        // (refusing them or not) when it converts the item.
        let read = SyncRequestWire::decode(encoding).map(|request| request.item);
        use pb::sync_request::Item as Typed;
        match (typed, read) {
            (Err(_), Err(_)) => {}
            (Err(error), Ok(Some(WireItem::Pod(encoding)))) => {
                let read = wire::receive_pod(encoding, &mut memo);
                assert!(
                    read.is_err(),
                    "prost refused a pod item ({error}) the wire reader read: {read:?}"
                );
            }
            (Err(error), Ok(Some(WireItem::Node(encoding)))) => {
                let read = wire::receive_node(encoding, &mut memo);
                assert!(
                    read.is_err(),
                    "prost refused a node item ({error}) the wire reader read: {read:?}"
                );
            }
            (Ok(Some(Typed::Pod(request))), Ok(Some(WireItem::Pod(encoding)))) => {
                match wire::receive_pod(encoding, &mut memo) {
                    Ok(Received::Upserted(pod)) => {
                        let Some(pb::update_pod_request::Change::Upsert(typed)) = request.change
                        else {
                            panic!("the wire reader upserted an item that holds no upsert");
                        };
                        assert_eq!(pod.map(held), convert::pod("upsert", &typed).map(held));
                    }
                    Ok(Received::Decoded(boxed)) => assert_eq!(request, *boxed),
                    Err(error) => {
                        panic!("prost decoded a pod item the wire reader refused: {error}")
                    }
                }
            }
            (Ok(Some(Typed::Node(request))), Ok(Some(WireItem::Node(encoding)))) => {
                match wire::receive_node(encoding, &mut memo) {
                    Ok(Received::Upserted(node)) => {
                        let Some(pb::update_node_request::Change::Upsert(typed)) = request.change
                        else {
                            panic!("the wire reader upserted an item that holds no upsert");
                        };
                        assert_eq!(node, convert::node("upsert", &typed));
                    }
                    Ok(Received::Decoded(boxed)) => assert_eq!(request, *boxed),
                    Err(error) => {
                        panic!("prost decoded a node item the wire reader refused: {error}")
                    }
                }
            }
            (Ok(Some(Typed::Pdb(typed))), Ok(Some(WireItem::Pdb(read)))) => {
                assert_eq!(typed, *read)
            }
            (Ok(Some(Typed::PriorityClass(typed))), Ok(Some(WireItem::PriorityClass(read)))) => {
                assert_eq!(typed, *read)
            }
            (Ok(Some(Typed::Namespace(typed))), Ok(Some(WireItem::Namespace(read)))) => {
                assert_eq!(typed, *read)
            }
            (Ok(Some(Typed::PodGroup(typed))), Ok(Some(WireItem::PodGroup(read)))) => {
                assert_eq!(typed, *read)
            }
            (Ok(Some(Typed::Workload(typed))), Ok(Some(WireItem::Workload(read)))) => {
                assert_eq!(typed, *read)
            }
            (Ok(None), Ok(None)) => {}
            (typed, read) => panic!("prost and the wire reader disagree: {typed:?} / {read:?}"),
        }
    }
});
