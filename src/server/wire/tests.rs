//! The wire reader against prost and the typed reader.
use proptest::prelude::*;
use prost::Message as _;

use triomphe::Arc;

use super::super::{convert, messages};
use super::*;
use crate::generate;

#[test]
fn fields_side_by_side_are_held_as_one_slice() {
    let message: &[u8] = b"aabbbcdd";
    let mut fields = Adjacent::default();
    fields.push(message, 0, 2);
    fields.push(message, 2, 5);
    // Not adjacent: "c" lies between.
    fields.push(message, 6, 8);
    assert_eq!(&fields.fields[..], [&b"aabbb"[..], &b"dd"[..]]);
    let mut none = Adjacent::default();
    none.push(message, 3, 5);
    assert_eq!(&none.fields[..], [&b"bb"[..]]);
}

#[test]
fn a_sync_item_moves_at_about_the_size_of_a_pods_bytes() {
    // Budgets are boxed: every item of a load moves at this size.
    assert!(size_of::<SyncRequestWire>() <= size_of::<Bytes>() + 8);
    assert!(size_of::<pb::UpdatePodDisruptionBudgetRequest>() > 4 * size_of::<Bytes>());
}

/// What became of a pod item: a decode error, an upsert's conversion, or another change.
#[derive(Debug, PartialEq)]
enum Outcome {
    Undecodable(String),
    Upsert(Result<Pod, ApiError>),
    Other(Box<pb::UpdatePodRequest>),
}

/// A `SyncRequest` whose pod item is `request` (an `UpdatePodRequest`'s encoding).
fn sync_request(request: &[u8]) -> Vec<u8> {
    let mut encoded = Vec::new();
    prost::encoding::bytes::encode(POD, &request.to_vec(), &mut encoded);
    encoded
}

proptest! {
    /// Whatever prost decodes as a `SyncRequest`, the server's request type decodes
    /// too, to bytes that are the same request: valid items, items repeated or
    /// followed by more, or garbage.
    #[test]
    fn the_wire_request_keeps_what_prost_decodes(
        item in proptest::collection::vec(any::<u8>(), 0..40),
        node in any::<bool>(),
        tail in proptest::collection::vec(any::<u8>(), 0..6),
        cut in 0usize..50,
    ) {
        let whole = len_field(if node { NODE } else { POD }, &item);
        let mut with_tail = whole.clone();
        with_tail.extend_from_slice(&tail);
        let cut_short = whole[..cut.min(whole.len())].to_vec();
        for encoding in [whole.clone(), with_tail, cut_short, [whole.clone(), whole].concat(), tail] {
            let Ok(typed) = pb::SyncRequest::decode(&encoding[..]) else { continue };
            let wire = SyncRequestWire::decode(&encoding[..]).expect("prost decodes it");
            prop_assert_eq!(pb::SyncRequest::decode(&wire.encode_to_vec()[..]).ok(), Some(typed));
        }
    }
}

/// The reference: prost decodes the whole request, then the usual conversion.
fn with_prost(sync_request: &[u8]) -> Outcome {
    match pb::SyncRequest::decode(sync_request) {
        Err(error) => Outcome::Undecodable(error.to_string()),
        Ok(pb::SyncRequest {
            item: Some(pb::sync_request::Item::Pod(request)),
        }) => of_request(Box::new(request)),
        Ok(other) => panic!("not a pod item: {other:?}"),
    }
}

fn of_request(request: Box<pb::UpdatePodRequest>) -> Outcome {
    match request.change {
        Some(pb::update_pod_request::Change::Upsert(p)) => {
            Outcome::Upsert(convert::pod("upsert", &p).map(held))
        }
        _ => Outcome::Other(request),
    }
}

/// A pod as the cache holds it: pods read from their encoding come without the specs
/// `finish` has folded into their requests (see `build::Source`).
fn held(mut pod: Pod) -> Pod {
    if pod.details.holds_specs() {
        pod.details_mut().drop_specs();
    }
    pod
}

/// As the server receives: the wire request, then `receive_pod`. Also says whether
/// the pod was read from its encoding.
fn with_wire(sync_request: &[u8], memo: &mut Memo) -> (Outcome, bool) {
    let encoding = match SyncRequestWire::decode(sync_request) {
        Err(error) => return (Outcome::Undecodable(error.to_string()), false),
        Ok(SyncRequestWire {
            item: Some(WireItem::Pod(encoding)),
        }) => encoding,
        Ok(other) => panic!("not a pod item: {other:?}"),
    };
    let read =
        pod_upsert_fields(&encoding, &mut Memo::disabled(), &mut PodInput::default()).is_some();
    let outcome = match receive_pod(encoding, memo) {
        Err(error) => Outcome::Undecodable(error.to_string()),
        Ok(ReceivedPod::Upserted(pod)) => Outcome::Upsert(pod.map(held)),
        Ok(ReceivedPod::Decoded(request)) => of_request(request),
    };
    (outcome, read)
}

/// An outcome with a decode error's text left out: decoding a pod item apart from the
/// rest of the request can name another cause (see the module docs).
fn kind(outcome: Outcome) -> Outcome {
    match outcome {
        Outcome::Undecodable(_) => Outcome::Undecodable(String::new()),
        other => other,
    }
}

fn upsert(pod: pb::Pod) -> Vec<u8> {
    pb::UpdatePodRequest {
        change: Some(pb::update_pod_request::Change::Upsert(pod)),
    }
    .encode_to_vec()
}

fn pods() -> Vec<pb::Pod> {
    generate::mixed_pods(40, 10, 11)
        .iter()
        .map(messages::pod_message)
        .collect()
}

/// Each field of an encoded message, whole (key and payload); the encoding is
/// prost's, so varints and length-delimited fields only.
pub(super) fn fields(encoding: &[u8]) -> Vec<&[u8]> {
    let mut reader = Reader(encoding);
    let mut fields = Vec::new();
    while !reader.0.is_empty() {
        let start = reader.0;
        match reader.key().unwrap() {
            (_, WireType::Varint) => drop(reader.varint().unwrap()),
            (_, WireType::LengthDelimited) => drop(reader.bytes().unwrap()),
            other => panic!("unexpected field {other:?}"),
        }
        fields.push(&start[..start.len() - reader.0.len()]);
    }
    fields
}

pub(super) fn len_field(tag: u32, payload: &[u8]) -> Vec<u8> {
    let mut encoded = Vec::new();
    prost::encoding::bytes::encode(tag, &payload.to_vec(), &mut encoded);
    encoded
}

#[test]
fn pods_read_from_their_encoding_are_the_ones_prost_and_the_conversion_make() {
    let pods = pods();
    let mut memo = Memo::new(64);
    let (mut read, mut read_with_ports_or_tolerations) = (0, 0);
    for pod in &pods {
        let request = sync_request(&upsert(pod.clone()));
        let (outcome, was_read) = with_wire(&request, &mut memo);
        assert_eq!(outcome, with_prost(&request), "pod {}", pod.name);
        assert!(matches!(outcome, Outcome::Upsert(Ok(_))));
        read += usize::from(was_read);
        let ports = pod.containers.iter().any(|c| !c.ports.is_empty());
        read_with_ports_or_tolerations +=
            usize::from(was_read && (ports || !pod.tolerations.is_empty()));
    }
    // Most of a generated cluster's pods set only the fields read from the encoding
    // (host ports and tolerations among them); the rest (affinity, spread constraints,
    // init containers, overhead, pod-level resources) went through prost.
    assert!(read * 4 > pods.len() * 3, "{read} of {} read", pods.len());
    assert!(
        read_with_ports_or_tolerations * 20 > pods.len(),
        "{read_with_ports_or_tolerations} with ports or tolerations read"
    );
    assert!(read < pods.len());
}

#[test]
fn container_images_are_read_from_the_encoding() {
    let mut memo = Memo::new(64);
    for (i, mut pod) in pods().into_iter().take(40).enumerate() {
        for c in &mut pod.containers {
            c.image = format!("registry.example/app-{}:v{i}", i % 3);
        }
        let request = sync_request(&upsert(pod.clone()));
        let (outcome, was_read) = with_wire(&request, &mut memo);
        assert_eq!(outcome, with_prost(&request), "pod {}", pod.name);
        let Outcome::Upsert(Ok(held)) = &outcome else {
            panic!("pod {}: {outcome:?}", pod.name);
        };
        assert_eq!(
            held.details.images.len(),
            pod.containers.len() + pod.init_containers.len()
        );
        assert!(
            was_read
                || pod.affinity.is_some()
                || !pod.init_containers.is_empty()
                || !pod.topology_spread_constraints.is_empty()
                || !pod.overhead.is_empty()
                || pod.resources.is_some(),
            "pod {} went through prost",
            pod.name
        );
    }
}

#[test]
fn pods_of_one_template_share_the_details_converted_once() {
    let mut memo = Memo::new(64);
    let pods: Vec<pb::Pod> = pods()
        .into_iter()
        .filter(|p| {
            let request = sync_request(&upsert(p.clone()));
            with_wire(&request, &mut Memo::disabled()).1
        })
        .take(20)
        .collect();
    for pod in &pods {
        let receive = |pod: pb::Pod, memo: &mut Memo| {
            let request = sync_request(&upsert(pod));
            let (outcome, _) = with_wire(&request, memo);
            assert_eq!(outcome, with_prost(&request));
            match outcome {
                Outcome::Upsert(result) => result,
                other => panic!("not an upsert: {other:?}"),
            }
        };
        let first = receive(pod.clone(), &mut memo).unwrap();
        // Another pod of the template: its own identity, the same details.
        let sibling = pb::Pod {
            name: format!("{}-sibling", pod.name),
            uid: format!("{}-sibling", pod.uid),
            start_time: String::new(),
            ..pod.clone()
        };
        let second = receive(sibling.clone(), &mut memo).unwrap();
        assert!(Arc::ptr_eq(&first.details, &second.details));
        assert_eq!(second.name(), sibling.name);
        // The details came from the memo; the pod's own fields are still checked.
        let invalid = pb::Pod {
            start_time: "yesterday".into(),
            ..sibling.clone()
        };
        assert!(receive(invalid, &mut memo).is_err());
        // Another request is another template.
        let mut bigger = sibling.clone();
        bigger.containers[0]
            .requests
            .insert("cpu".into(), "12345m".into());
        let third = receive(bigger, &mut memo).unwrap();
        assert!(!Arc::ptr_eq(&first.details, &third.details));
        assert_eq!(third.requests().milli_cpu, 12_345);
    }
}

/// Update requests prost decodes, or rejects, rather than the wire reader, made around
/// `upsert` (a valid upsert request's encoding, of the object encoded as `object`):
/// `others` (no change, a delete, a JSON document) as they are, then the upsert cut
/// short, with an unknown field in the object and in the request, twice (merged by
/// prost), followed by `delete` (the last wins), and with a name (field `name_tag`)
/// that is not UTF-8.
pub(super) fn odd_requests(
    upsert: &[u8],
    object: &[u8],
    others: Vec<Vec<u8>>,
    delete: &[u8],
    name_tag: u32,
) -> Vec<Vec<u8>> {
    let unknown_field: &[u8] = &[0xb8, 0x06, 0x01];
    let mut cases = others;
    cases.push(upsert[..upsert.len() - 1].to_vec());
    cases.push(upsert[..upsert.len() / 2].to_vec());
    cases.push(len_field(1, &[object, unknown_field].concat()));
    cases.push([upsert, unknown_field].concat());
    cases.push([upsert, upsert].concat());
    cases.push([upsert, delete].concat());
    cases.push(len_field(
        1,
        &[object, &len_field(name_tag, &[0xff, 0xfe])[..]].concat(),
    ));
    cases
}

/// `object`'s encoding (a message of varint and length-delimited fields) with `extra`
/// fields after its own, all shuffled by `order`, as the `upsert` of an update request,
/// with the byte at `corrupt.0` (modulo the length) replaced by `corrupt.1`.
pub(super) fn reencoded_upsert(
    object: &[u8],
    extra: Vec<Vec<u8>>,
    order: u64,
    corrupt: Option<(usize, u8)>,
) -> Vec<u8> {
    let mut parts: Vec<Vec<u8>> = fields(object).into_iter().map(<[u8]>::to_vec).collect();
    parts.extend(extra);
    let mut rng = generate::Rng::new(order);
    for i in (1..parts.len()).rev() {
        parts.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut request = len_field(1, &parts.concat());
    if let Some((at, byte)) = corrupt {
        let at = at % request.len();
        request[at] = byte;
    }
    request
}

#[test]
fn other_changes_and_odd_encodings_go_through_prost() {
    let pod = pods().swap_remove(0);
    let delete = pb::UpdatePodRequest {
        change: Some(pb::update_pod_request::Change::Delete(Default::default())),
    }
    .encode_to_vec();
    let others = vec![
        pb::UpdatePodRequest::default().encode_to_vec(),
        pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::Delete(pb::ObjectRef {
                namespace: "ns".into(),
                name: "p".into(),
                uid: None,
            })),
        }
        .encode_to_vec(),
        pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::UpsertJson("{}".into())),
        }
        .encode_to_vec(),
    ];
    let mut cases = odd_requests(
        &upsert(pod.clone()),
        &pod.encode_to_vec(),
        others,
        &delete,
        2,
    );
    // Values the conversion rejects, read from the encoding all the same.
    for bad in [
        pb::Pod {
            name: String::new(),
            ..pod.clone()
        },
        pb::Pod {
            phase: "Sleeping".into(),
            ..pod.clone()
        },
        pb::Pod {
            preemption_policy: "Sometimes".into(),
            ..pod.clone()
        },
        pb::Pod {
            start_time: "yesterday".into(),
            ..pod.clone()
        },
        pb::Pod {
            containers: vec![pb::Container {
                name: "c".into(),
                requests: [("cpu".to_string(), "lots".to_string())].into(),
                limits: [(String::new(), "1".to_string())].into(),
                ..Default::default()
            }],
            ..pod.clone()
        },
        pb::Pod {
            priority: Some(-7),
            resource_version: u64::MAX,
            ..pod.clone()
        },
        pb::Pod {
            tolerations: vec![pb::Toleration {
                key: "k".into(),
                operator: "Maybe".into(),
                ..Default::default()
            }],
            ..pod.clone()
        },
        pb::Pod {
            tolerations: vec![pb::Toleration {
                effect: "Sometimes".into(),
                toleration_seconds: Some(-5),
                ..Default::default()
            }],
            ..pod.clone()
        },
    ] {
        cases.push(upsert(bad));
    }
    // Host ports out of range, an unknown protocol.
    for port in [
        pb::ContainerPort {
            host_port: 70_000,
            ..Default::default()
        },
        pb::ContainerPort {
            host_port: -1,
            ..Default::default()
        },
        pb::ContainerPort {
            host_port: 80,
            protocol: "ICMP".into(),
            ..Default::default()
        },
    ] {
        let container = pb::Container {
            name: "c".into(),
            ports: vec![port],
            ..Default::default()
        };
        cases.push(upsert(pb::Pod {
            containers: vec![container],
            ..pod.clone()
        }));
    }
    // Each string field twice, its first value not UTF-8: prost checks every value it
    // reads, not only the last (the fuzzer found the wire reader skipping the first
    // scheduler name; its input is the last case).
    for tag in [1, 2, 3, 6, 7, 9, 18, 19, 21, 22] {
        let twice = [len_field(tag, &[0x8a, 0x00]), len_field(tag, b"x")].concat();
        cases.push(len_field(
            1,
            &[&pod.encode_to_vec()[..], &twice[..]].concat(),
        ));
    }
    cases.push(
        include_bytes!("../../../fuzz/regressions/wire_pod/first-scheduler-name-not-utf8").to_vec(),
    );
    let mut memo = Memo::new(64);
    for (i, case) in cases.iter().enumerate() {
        let request = sync_request(case);
        assert_eq!(
            with_wire(&request, &mut memo).0,
            with_prost(&request),
            "case {i}"
        );
    }
}

#[test]
fn a_pod_item_sent_in_two_parts_is_merged_as_prost_merges_it() {
    let pod = pods().swap_remove(1);
    let encoded = upsert(pod.clone());
    let (head, tail) = encoded.split_at(encoded.len() / 2);
    // Two pod items, each a valid request: the second's fields merge into the first's.
    let first = upsert(pb::Pod {
        labels: Default::default(),
        ..pod.clone()
    });
    let second = pb::UpdatePodRequest {
        change: Some(pb::update_pod_request::Change::Upsert(pb::Pod {
            labels: [("late".to_string(), "label".to_string())].into(),
            ..Default::default()
        })),
    }
    .encode_to_vec();
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
    fn any_encoding_of_a_pod_gives_prost_answer(
        index in 0usize..402,
        order in any::<u64>(),
        relabel in any::<bool>(),
        corrupt in proptest::option::of((any::<usize>(), any::<u8>())),
    ) {
        let pods = pods();
        let pod = &pods[index % pods.len()];
        let mut extra = Vec::new();
        if relabel {
            // An entry for a key the pod already has, later in the stream: it wins.
            let key = pod.labels.keys().next().cloned().unwrap_or_default();
            let entry = [len_field(1, key.as_bytes()), len_field(2, b"relabeled")].concat();
            extra.push(len_field(5, &entry));
        }
        let request =
            sync_request(&reencoded_upsert(&pod.encode_to_vec(), extra, order, corrupt));
        // The memo has seen the pod as it was: what it made then must not stand in
        // for what changed.
        let mut memo = Memo::new(64);
        with_wire(&sync_request(&upsert(pod.clone())), &mut memo);
        prop_assert_eq!(kind(with_wire(&request, &mut memo).0), kind(with_prost(&request)));
    }
}

#[test]
fn a_pods_scheduling_group_is_read_from_its_encoding_and_keeps_details_apart() {
    let mut memo = Memo::new(64);
    let base = pods()
        .into_iter()
        .find(|p| {
            let request = sync_request(&upsert(p.clone()));
            with_wire(&request, &mut Memo::disabled()).1
        })
        .expect("a pod read from its encoding");
    let member = |name: &str, group: &str| {
        let mut pod = base.clone();
        pod.name = name.into();
        pod.uid = format!("uid-{name}");
        pod.scheduling_group = Some(pb::PodSchedulingGroup {
            pod_group_name: group.into(),
        });
        pod
    };
    let mut read = Vec::new();
    for pod in [
        member("a", "left"),
        member("b", "right"),
        member("c", "left"),
    ] {
        let request = sync_request(&upsert(pod));
        let (outcome, was_read) = with_wire(&request, &mut memo);
        assert!(was_read, "read from the encoding");
        assert_eq!(outcome, with_prost(&request));
        let Outcome::Upsert(Ok(pod)) = outcome else {
            panic!("an upsert: {outcome:?}");
        };
        read.push(pod);
    }
    let groups: Vec<_> = read
        .iter()
        .map(|p| p.details.scheduling_group.as_deref())
        .collect();
    assert_eq!(groups, [Some("left"), Some("right"), Some("left")]);
    assert!(Arc::ptr_eq(&read[0].details, &read[2].details));
    assert!(!Arc::ptr_eq(&read[0].details, &read[1].details));

    // The field given twice merges as prost merges it: prost reads that one.
    let mut pod_encoding = member("d", "first").encode_to_vec();
    pod_encoding.extend_from_slice(&len_field(
        pod::SCHEDULING_GROUP,
        &pb::PodSchedulingGroup::default().encode_to_vec(),
    ));
    let twice = len_field(UPSERT, &pod_encoding);
    let request = sync_request(&twice);
    let (outcome, was_read) = with_wire(&request, &mut memo);
    assert!(!was_read, "left to prost");
    assert_eq!(outcome, with_prost(&request));
    let Outcome::Upsert(Ok(pod)) = outcome else {
        panic!("an upsert");
    };
    assert_eq!(pod.details.scheduling_group.as_deref(), Some("first"));
}

#[test]
fn pod_group_and_workload_items_are_decoded_and_merged_as_prost_does() {
    use pb::sync_request::Item;
    let group = |name: &str, min_count: i32| pb::SyncRequest {
        item: Some(Item::PodGroup(pb::UpdatePodGroupRequest {
            change: Some(pb::update_pod_group_request::Change::Upsert(pb::PodGroup {
                name: name.into(),
                scheduling_policy: Some(pb::PodGroupSchedulingPolicy {
                    gang: Some(pb::GangSchedulingPolicy { min_count }),
                    ..Default::default()
                }),
                ..Default::default()
            })),
        })),
    };
    let workload = pb::SyncRequest {
        item: Some(Item::Workload(pb::UpdateWorkloadRequest {
            change: Some(pb::update_workload_request::Change::Delete(pb::ObjectRef {
                name: "job".into(),
                ..Default::default()
            })),
        })),
    };
    let (first, second) = (group("a", 2).encode_to_vec(), group("b", 3).encode_to_vec());
    for encoding in [
        first.clone(),
        workload.encode_to_vec(),
        [first.clone(), second].concat(),
        [workload.encode_to_vec(), first].concat(),
    ] {
        let typed = pb::SyncRequest::decode(&encoding[..]).expect("prost decodes it");
        let wire = SyncRequestWire::decode(&encoding[..]).expect("the server decodes it");
        assert!(matches!(
            wire.item,
            Some(WireItem::PodGroup(_) | WireItem::Workload(_))
        ));
        assert_eq!(
            pb::SyncRequest::decode(&wire.encode_to_vec()[..]).expect("re-encoded"),
            typed
        );
    }
}

/// A `SyncRequest` encoding with these item fields, in order.
fn sync_items(items: &[(u32, &[u8])]) -> Vec<u8> {
    let mut request = Vec::new();
    for (field, item) in items {
        prost::encoding::encode_key(*field, WireType::LengthDelimited, &mut request);
        prost::encoding::encode_varint(item.len() as u64, &mut request);
        request.extend_from_slice(item);
    }
    request
}

#[test]
fn a_malformed_pod_item_replaced_by_a_node_item_fails_as_prost_fails_it() {
    // Fuzzing found it: the pod item's upsert claims five bytes and has one; the node item
    // after it replaces it in the oneof, but prost has decoded (and refused) it by then.
    let malformed_pod = [0x0a, 0x05, 0x01];
    let node = pb::UpdateNodeRequest::default().encode_to_vec();
    let request = sync_items(&[(POD, &malformed_pod), (NODE, &node)]);
    assert!(pb::SyncRequest::decode(&request[..]).is_err());
    assert!(SyncRequestWire::decode(&request[..]).is_err());
    // The other way round, and a valid pod replaced, as prost has them.
    let valid_pod = pb::UpdatePodRequest::default().encode_to_vec();
    let replaced = sync_items(&[(POD, &valid_pod), (NODE, &node)]);
    assert!(pb::SyncRequest::decode(&replaced[..]).is_ok());
    assert!(matches!(
        SyncRequestWire::decode(&replaced[..]).map(|r| r.item),
        Ok(Some(WireItem::Node(_)))
    ));
}
