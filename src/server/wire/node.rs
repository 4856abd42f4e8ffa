//! `Sync`'s nodes, read straight from their encoding as its pods are (see the parent
//! module), without building a `pb::Node`'s two sorted maps of owned strings (labels and
//! allocatable) for the conversion to read once and drop.

use bytes::Bytes;
use prost::Message as _;
use prost::encoding::WireType;

use super::super::errors::ApiError;
use super::super::pb;
use super::fields::{container_image, node, node_condition, taint};
use super::{Reader, Received, lone_upsert, map_entry, quantity_entry, read_message, within_item};
use crate::model::Node;
use crate::model::build::{self, ImageInput, Memo, NodeConditionInput, NodeInput, TaintInput};

/// A `Sync` node item as received.
pub type ReceivedNode = Received<Node, pb::UpdateNodeRequest>;

/// Receives a node item (an `UpdateNodeRequest`'s encoding): an upsert straight into a
/// node when it can be, anything else decoded by prost, with the errors it would have
/// given inside `SyncRequest`.
pub fn receive_node(encoding: Bytes, memo: &mut Memo) -> Result<ReceivedNode, prost::DecodeError> {
    {
        let mut input = NodeInput::default();
        if let Some(node) = lone_upsert(&encoding)
            && node_fields(node, &mut input).is_some()
        {
            return Ok(Received::Upserted(
                build::node(&input, memo).map_err(|e| ApiError::from_build("upsert", e)),
            ));
        }
    }
    pb::UpdateNodeRequest::decode(encoding)
        .map(|request| Received::Decoded(Box::new(request)))
        .map_err(within_item)
}

/// Reads a `Node`'s encoding into `f` (empty); `None` when it has a field of an unexpected
/// wire type, an unknown field or anything prost would reject, and `f` is then to be
/// dropped.
fn node_fields<'a>(encoding: &'a [u8], f: &mut NodeInput<'a>) -> Option<()> {
    use WireType::{LengthDelimited as Len, Varint};
    let mut reader = Reader(encoding);
    while !reader.0.is_empty() {
        match reader.key()? {
            (node::NAME, Len) => f.name = reader.str()?,
            (node::UID, Len) => f.uid = reader.str()?,
            (node::RESOURCE_VERSION, Varint) => f.resource_version = reader.varint()?,
            (node::LABELS, Len) => f.labels.push(map_entry(reader.bytes()?)?),
            (node::TAINTS, Len) => f.taints.push(taint(reader.bytes()?)?),
            // As prost reads a bool: any value but zero is true.
            (node::UNSCHEDULABLE, Varint) => f.unschedulable = reader.varint()? != 0,
            (node::ALLOCATABLE, Len) => f.allocatable.push(quantity_entry(reader.bytes()?)?),
            (node::ANNOTATIONS, Len) => f.annotations.push(map_entry(reader.bytes()?)?),
            (node::CONDITIONS, Len) => f.conditions.push(condition(reader.bytes()?)?),
            (node::IMAGES, Len) => f.images.push(image(reader.bytes()?)?),
            _ => return None,
        }
    }
    Some(())
}

fn condition<'a>(encoding: &'a [u8]) -> Option<NodeConditionInput<'a>> {
    use WireType::LengthDelimited as Len;
    read_message(encoding, |c: &mut NodeConditionInput<'a>, key, reader| {
        match key {
            (node_condition::TYPE, Len) => c.type_ = reader.str()?,
            (node_condition::STATUS, Len) => c.status = reader.str()?,
            (node_condition::REASON, Len) => c.reason = reader.str()?,
            (node_condition::MESSAGE, Len) => c.message = reader.str()?,
            _ => return None,
        }
        Some(())
    })
}

fn image<'a>(encoding: &'a [u8]) -> Option<ImageInput<'a>> {
    use WireType::{LengthDelimited as Len, Varint};
    read_message(encoding, |i: &mut ImageInput<'a>, key, reader| {
        match key {
            (container_image::NAMES, Len) => i.names.push(reader.str()?),
            // Two's complement in ten bytes, as int64 is encoded.
            (container_image::SIZE_BYTES, Varint) => i.size_bytes = reader.varint()? as i64,
            _ => return None,
        }
        Some(())
    })
}

fn taint<'a>(encoding: &'a [u8]) -> Option<TaintInput<'a>> {
    use WireType::LengthDelimited as Len;
    read_message(encoding, |t: &mut TaintInput<'a>, key, reader| {
        match key {
            (taint::KEY, Len) => t.key = reader.str()?,
            (taint::VALUE, Len) => t.value = reader.str()?,
            (taint::EFFECT, Len) => t.effect = reader.str()?,
            _ => return None,
        }
        Some(())
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::tests::{len_field, odd_requests, reencoded_upsert};
    use super::super::{NODE, SyncRequestWire, WireItem};
    use super::*;
    use crate::generate::{self, ClusterSpec};
    use crate::server::{convert, messages};

    /// What became of a node item: a decode error, an upsert's conversion, or another
    /// change.
    #[derive(Debug, PartialEq)]
    enum Outcome {
        Undecodable(String),
        Upsert(Result<Node, ApiError>),
        Other(Box<pb::UpdateNodeRequest>),
    }

    /// A `SyncRequest` whose node item is `request` (an `UpdateNodeRequest`'s encoding).
    fn sync_request(request: &[u8]) -> Vec<u8> {
        len_field(NODE, request)
    }

    fn upsert(node: pb::Node) -> Vec<u8> {
        pb::UpdateNodeRequest {
            change: Some(pb::update_node_request::Change::Upsert(node)),
        }
        .encode_to_vec()
    }

    fn nodes() -> Vec<pb::Node> {
        generate::generate(&ClusterSpec {
            nodes: 60,
            pods_per_node: 0,
            seed: 5,
        })
        .nodes
        .iter()
        .map(messages::node_message)
        .collect()
    }

    /// The reference: prost decodes the whole request, then the usual conversion.
    fn with_prost(sync_request: &[u8]) -> Outcome {
        match pb::SyncRequest::decode(sync_request) {
            Err(error) => Outcome::Undecodable(error.to_string()),
            Ok(pb::SyncRequest {
                item: Some(pb::sync_request::Item::Node(request)),
            }) => of_request(Box::new(request)),
            Ok(other) => panic!("not a node item: {other:?}"),
        }
    }

    fn of_request(request: Box<pb::UpdateNodeRequest>) -> Outcome {
        match request.change {
            Some(pb::update_node_request::Change::Upsert(n)) => {
                Outcome::Upsert(convert::node("upsert", &n))
            }
            _ => Outcome::Other(request),
        }
    }

    /// As the server receives: the wire request, then `receive_node`. Also says whether
    /// the node was read from its encoding.
    fn with_wire(sync_request: &[u8], memo: &mut Memo) -> (Outcome, bool) {
        let encoding = match SyncRequestWire::decode(Bytes::copy_from_slice(sync_request)) {
            Err(error) => return (Outcome::Undecodable(error.to_string()), false),
            Ok(SyncRequestWire {
                item: Some(WireItem::Node(encoding)),
            }) => encoding,
            Ok(other) => panic!("not a node item: {other:?}"),
        };
        let read = lone_upsert(&encoding)
            .is_some_and(|node| node_fields(node, &mut NodeInput::default()).is_some());
        let outcome = match receive_node(encoding, memo) {
            Err(error) => Outcome::Undecodable(error.to_string()),
            Ok(Received::Upserted(node)) => Outcome::Upsert(node),
            Ok(Received::Decoded(request)) => of_request(request),
        };
        (outcome, read)
    }

    /// An outcome with a decode error's text left out: decoding an item apart from the
    /// rest of the request can name another cause (see the parent module's docs).
    fn kind(outcome: Outcome) -> Outcome {
        match outcome {
            Outcome::Undecodable(_) => Outcome::Undecodable(String::new()),
            other => other,
        }
    }

    #[test]
    fn nodes_read_from_their_encoding_are_the_ones_prost_and_the_conversion_make() {
        let mut nodes = nodes();
        for (i, node) in nodes.iter_mut().enumerate().filter(|(i, _)| i % 3 == 0) {
            node.images = vec![pb::ContainerImage {
                names: vec![format!("registry.example/app:{i}"), format!("sha256:{i:x}")],
                size_bytes: (i as i64 + 1) << 30,
            }];
        }
        assert!(
            nodes.iter().any(|n| !n.taints.is_empty()),
            "some nodes tainted"
        );
        assert!(nodes.iter().any(|n| n.labels.len() > 3), "labelled nodes");
        let mut memo = Memo::new(64);
        for node in &nodes {
            let request = sync_request(&upsert(node.clone()));
            let (outcome, was_read) = with_wire(&request, &mut memo);
            assert!(was_read, "node {} read from its encoding", node.name);
            assert_eq!(outcome, with_prost(&request), "node {}", node.name);
            assert!(matches!(outcome, Outcome::Upsert(Ok(_))));
        }
    }

    #[test]
    fn other_changes_and_odd_encodings_go_through_prost() {
        let node = nodes().swap_remove(0);
        let delete = pb::UpdateNodeRequest {
            change: Some(pb::update_node_request::Change::Delete(Default::default())),
        }
        .encode_to_vec();
        let others = vec![
            pb::UpdateNodeRequest::default().encode_to_vec(),
            pb::UpdateNodeRequest {
                change: Some(pb::update_node_request::Change::Delete(pb::ObjectRef {
                    namespace: String::new(),
                    name: "n".into(),
                    uid: None,
                })),
            }
            .encode_to_vec(),
            pb::UpdateNodeRequest {
                change: Some(pb::update_node_request::Change::UpsertJson("{}".into())),
            }
            .encode_to_vec(),
        ];
        let node_encoding = node.encode_to_vec();
        let mut cases = odd_requests(&upsert(node.clone()), &node_encoding, others, &delete, 1);
        // A taint field of the wrong wire type.
        cases.push(len_field(
            1,
            &[&node_encoding[..], &len_field(5, &[0x08, 0x01])[..]].concat(),
        ));
        // Unschedulable as a varint of more than one byte: still true.
        cases.push(len_field(
            1,
            &[&node_encoding[..], &[0x30, 0x80, 0x01][..]].concat(),
        ));
        // Values the conversion rejects, read from the encoding all the same.
        for bad in [
            pb::Node {
                name: String::new(),
                ..node.clone()
            },
            pb::Node {
                taints: vec![pb::Taint {
                    key: String::new(),
                    value: "v".into(),
                    effect: "NoSchedule".into(),
                }],
                ..node.clone()
            },
            pb::Node {
                taints: vec![pb::Taint {
                    key: "k".into(),
                    value: String::new(),
                    effect: "Sometimes".into(),
                }],
                ..node.clone()
            },
            pb::Node {
                allocatable: [("cpu".to_string(), "lots".to_string())].into(),
                ..node.clone()
            },
            pb::Node {
                allocatable: [(String::new(), "1".to_string())].into(),
                ..node.clone()
            },
            pb::Node {
                uid: String::new(),
                resource_version: u64::MAX,
                unschedulable: true,
                ..node.clone()
            },
        ] {
            cases.push(upsert(bad));
        }
        let mut memo = Memo::new(64);
        for (i, case) in cases.iter().enumerate() {
            let request = sync_request(case);
            assert_eq!(
                kind(with_wire(&request, &mut memo).0),
                kind(with_prost(&request)),
                "case {i}"
            );
        }
    }

    #[test]
    fn a_node_item_sent_in_two_parts_is_merged_as_prost_merges_it() {
        let node = nodes().swap_remove(1);
        let encoded = upsert(node.clone());
        let (head, tail) = encoded.split_at(encoded.len() / 2);
        // Two node items, each a valid request: the second's fields merge into the
        // first's.
        let first = upsert(pb::Node {
            labels: Default::default(),
            ..node.clone()
        });
        let second = upsert(pb::Node {
            labels: [("late".to_string(), "label".to_string())].into(),
            taints: vec![pb::Taint {
                key: "late".into(),
                value: String::new(),
                effect: "NoExecute".into(),
            }],
            ..Default::default()
        });
        for (a, b) in [(&first[..], &second[..]), (head, tail)] {
            let request = [sync_request(a), sync_request(b)].concat();
            let mut memo = Memo::new(64);
            assert_eq!(
                kind(with_wire(&request, &mut memo).0),
                kind(with_prost(&request))
            );
        }
    }

    proptest! {
        /// Fields in any order, map entries repeated with new values, a byte changed: the
        /// same answer as prost's.
        #[test]
        fn any_encoding_of_a_node_gives_prost_answer(
            index in 0usize..60,
            order in any::<u64>(),
            relabel in any::<bool>(),
            corrupt in proptest::option::of((any::<usize>(), any::<u8>())),
        ) {
            let nodes = nodes();
            let node = &nodes[index % nodes.len()];
            let mut extra = Vec::new();
            if relabel {
                // Entries for keys the node already has, later in the stream: they win.
                for (field, key) in [
                    (4, node.labels.keys().next()),
                    (7, node.allocatable.keys().next()),
                ] {
                    let key = key.cloned().unwrap_or_default();
                    let entry = [len_field(1, key.as_bytes()), len_field(2, b"7")].concat();
                    extra.push(len_field(field, &entry));
                }
            }
            let request =
                sync_request(&reencoded_upsert(&node.encode_to_vec(), extra, order, corrupt));
            let mut memo = Memo::new(64);
            with_wire(&sync_request(&upsert(node.clone())), &mut memo);
            prop_assert_eq!(kind(with_wire(&request, &mut memo).0), kind(with_prost(&request)));
        }
    }
}
