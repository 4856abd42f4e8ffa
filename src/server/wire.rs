//! `Sync`'s pods and nodes and `UpdatePod`'s requests, read straight from their encoding
//! (nodes: see the `node` module).
//!
//! Decoding a pod into a `pb::Pod` allocates a string per field and a sorted map per label
//! set and resource list, which the conversion then reads once and drops: together more
//! than half of a bulk load's receiving work. So `Sync` receives `SyncRequestWire` (the
//! server is generated with it as the method's input): `SyncRequest` with the pod and
//! node items left as bytes, the same on the wire; `UpdatePod`'s whole request arrives as
//! bytes (`server::unary`). The fields most pods set (identity, labels, node,
//! priority, containers with their requests, limits and ports, tolerations, node
//! selector, times, phase) are read from those bytes into the builder's [`PodInput`]; a
//! pod with any other field, or anything out of the ordinary (a field of an unexpected
//! wire type, invalid UTF-8, an unknown field) goes through prost and the typed reader.
//! Both paths end in the same builder, so they give the same pod or the same error.
//! Malformed protobuf is rejected as prost rejects it; only the cause a decode error names can
//! differ, when a field of a `Sync` pod item claims to run past the item's end (prost,
//! decoding the item in place, read on into what followed it).

use std::borrow::Cow;

use bytes::{Buf, BufMut, Bytes};
use prost::Message as _;
use prost::encoding::{DecodeContext, WireType};
use smallvec::SmallVec;

use super::errors::ApiError;
use super::pb;
use crate::model::Pod;
use crate::model::build::{
    self, ContainerInput, Memo, PodInput, PortInput, Source, TolerationInput,
};

mod node;

pub use node::{ReceivedNode, receive_node};

/// `SyncRequest` with its pod and node items undecoded (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SyncRequestWire {
    pub item: Option<WireItem>,
}

/// `SyncRequest.item`, with a pod's `UpdatePodRequest` and a node's `UpdateNodeRequest`
/// as their encodings. Budgets are boxed: a load's items are nearly all pods, and each
/// item is moved a few times on its way to the converter, at the size of the largest
/// variant (a budget inline is five times a pod's bytes handle).
#[derive(Clone, Debug, PartialEq)]
pub enum WireItem {
    Node(Bytes),
    Pod(Bytes),
    Pdb(Box<pb::UpdatePodDisruptionBudgetRequest>),
    PriorityClass(Box<pb::UpdatePriorityClassRequest>),
    Namespace(Box<pb::UpdateNamespaceRequest>),
}

const NODE: u32 = 1;
const POD: u32 = 2;
const PDB: u32 = 3;
const PRIORITY_CLASS: u32 = 4;
const NAMESPACE: u32 = 5;

impl prost::Message for SyncRequestWire {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        use prost::encoding::{bytes, message};
        match &self.item {
            Some(WireItem::Node(b)) => bytes::encode(NODE, b, buf),
            Some(WireItem::Pod(b)) => bytes::encode(POD, b, buf),
            Some(WireItem::Pdb(r)) => message::encode(PDB, &**r, buf),
            Some(WireItem::PriorityClass(r)) => message::encode(PRIORITY_CLASS, &**r, buf),
            Some(WireItem::Namespace(r)) => message::encode(NAMESPACE, &**r, buf),
            None => {}
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        use prost::encoding::skip_field;
        match tag {
            NODE => {
                let held = match self.item.take() {
                    Some(WireItem::Node(b)) => Some(b),
                    _ => None,
                };
                let encoding = merged_encoding::<pb::UpdateNodeRequest>(held, wire_type, buf, ctx)?;
                self.item = Some(WireItem::Node(encoding));
            }
            POD => {
                let held = match self.item.take() {
                    Some(WireItem::Pod(b)) => Some(b),
                    _ => None,
                };
                let encoding = merged_encoding::<pb::UpdatePodRequest>(held, wire_type, buf, ctx)?;
                self.item = Some(WireItem::Pod(encoding));
            }
            PDB => {
                let held = match self.item.take() {
                    Some(WireItem::Pdb(r)) => Some(*r),
                    _ => None,
                };
                self.item = Some(WireItem::Pdb(Box::new(merged(held, wire_type, buf, ctx)?)));
            }
            PRIORITY_CLASS => {
                let held = match self.item.take() {
                    Some(WireItem::PriorityClass(r)) => Some(*r),
                    _ => None,
                };
                let merged = merged(held, wire_type, buf, ctx)?;
                self.item = Some(WireItem::PriorityClass(Box::new(merged)));
            }
            NAMESPACE => {
                let held = match self.item.take() {
                    Some(WireItem::Namespace(r)) => Some(*r),
                    _ => None,
                };
                let merged = merged(held, wire_type, buf, ctx)?;
                self.item = Some(WireItem::Namespace(Box::new(merged)));
            }
            _ => return skip_field(wire_type, tag, buf, ctx),
        }
        Ok(())
    }

    fn encoded_len(&self) -> usize {
        use prost::encoding::{bytes, message};
        match &self.item {
            Some(WireItem::Node(b)) => bytes::encoded_len(NODE, b),
            Some(WireItem::Pod(b)) => bytes::encoded_len(POD, b),
            Some(WireItem::Pdb(r)) => message::encoded_len(PDB, &**r),
            Some(WireItem::PriorityClass(r)) => message::encoded_len(PRIORITY_CLASS, &**r),
            Some(WireItem::Namespace(r)) => message::encoded_len(NAMESPACE, &**r),
            None => 0,
        }
    }

    fn clear(&mut self) {
        self.item = None;
    }
}

impl SyncRequestWire {
    /// Decodes `encoding` as prost does. A pod or node item alone, the whole message, as
    /// nearly every item of a load is, is taken without prost's merge loop.
    pub fn decode_encoding(encoding: Bytes) -> Result<Self, prost::DecodeError> {
        let mut reader = Reader(&encoding);
        if let Some((tag @ (NODE | POD), WireType::LengthDelimited)) = reader.key()
            && let Some(len) = reader.varint()
            && usize::try_from(len).ok() == Some(reader.0.len())
        {
            let item = encoding.slice(encoding.len() - reader.0.len()..);
            return Ok(SyncRequestWire {
                item: Some(if tag == POD {
                    WireItem::Pod(item)
                } else {
                    WireItem::Node(item)
                }),
            });
        }
        Self::decode(encoding)
    }
}

/// A `Sync` item or an update request as received (`R`: the request, `T`: what it
/// upserts).
#[derive(Debug)]
pub enum Received<T, R> {
    /// An upsert, read from its encoding and converted.
    Upserted(Result<T, ApiError>),
    /// Anything else, decoded by prost, for the usual conversion (boxed: rare in a load).
    Decoded(Box<R>),
}

/// A `Sync` pod item or an `UpdatePod` request as received.
pub type ReceivedPod = Received<Pod, pb::UpdatePodRequest>;

/// Receives a pod item: converted straight from its encoding when it can be, else decoded
/// by prost with the errors it would have given inside `SyncRequest` (under the same
/// field path).
pub fn receive_pod(encoding: Bytes, memo: &mut Memo) -> Result<ReceivedPod, prost::DecodeError> {
    read_update_pod(encoding, memo).map_err(within_item)
}

/// Reads an `UpdatePodRequest` from its encoding: an upsert straight into a pod when it
/// can be, anything else decoded by prost (with the errors prost gives).
pub fn read_update_pod(
    encoding: Bytes,
    memo: &mut Memo,
) -> Result<ReceivedPod, prost::DecodeError> {
    // Filled in place: the input is over a kilobyte, and returned by value it was copied
    // twice a pod.
    {
        let mut input = PodInput::default();
        if pod_upsert_fields(&encoding, memo, &mut input).is_some() {
            return Ok(ReceivedPod::Upserted(
                build::pod(&input, memo).map_err(|e| ApiError::from_build("upsert", e)),
            ));
        }
    }
    pb::UpdatePodRequest::decode(encoding).map(|request| ReceivedPod::Decoded(Box::new(request)))
}

/// A message item merged into the one it continues (a oneof set to another item starts
/// afresh), as prost merges it.
fn merged<M: prost::Message + Default>(
    held: Option<M>,
    wire_type: WireType,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<M, prost::DecodeError> {
    let mut message = held.unwrap_or_default();
    prost::encoding::message::merge(wire_type, &mut message, buf, ctx).map_err(within_item)?;
    Ok(message)
}

/// The encoding of a message item, merged with the `held` one it continues (a oneof set
/// to another item starts afresh). Prost decodes a message field seen twice part by part
/// and merges them; for valid parts, that is decoding their concatenation.
fn merged_encoding<M: prost::Message + Default>(
    held: Option<Bytes>,
    wire_type: WireType,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<Bytes, prost::DecodeError> {
    let mut encoding = Bytes::new();
    prost::encoding::bytes::merge(wire_type, &mut encoding, buf, ctx).map_err(within_item)?;
    let Some(earlier) = held else {
        return Ok(encoding);
    };
    for part in [&earlier, &encoding] {
        M::decode(part.clone()).map_err(within_item)?;
    }
    Ok([earlier, encoding].concat().into())
}

/// A message item's decode error as prost reports it inside `SyncRequest`.
fn within_item(mut error: prost::DecodeError) -> prost::DecodeError {
    error.push("SyncRequest", "item");
    error
}

/// Reads the pod an `UpdatePodRequest` upserts from its encoding into `f` (empty); `None`
/// when the request does anything else or the pod has a field left to prost, and `f` is
/// then to be dropped. Details `memo` made before from the same encoding are taken as
/// they are.
fn pod_upsert_fields<'a>(request: &'a [u8], memo: &mut Memo, f: &mut PodInput<'a>) -> Option<()> {
    pod_fields(lone_upsert(request)?, memo, f)
}

/// The object an update request (`UpdatePodRequest`, `UpdateNodeRequest`) upserts, when
/// that is all the request holds: a oneof set twice is prost's to sort out.
fn lone_upsert(request: &[u8]) -> Option<&[u8]> {
    let mut reader = Reader(request);
    if reader.key()? != (1, WireType::LengthDelimited) {
        return None;
    }
    let object = reader.bytes()?;
    reader.0.is_empty().then_some(object)
}

fn pod_fields<'a>(encoding: &'a [u8], memo: &mut Memo, f: &mut PodInput<'a>) -> Option<()> {
    use WireType::{LengthDelimited as Len, Varint};
    // The fields the details are made of: whole, to ask the memo by, and their payloads,
    // read only when it has no answer.
    let mut detail_fields = Adjacent::default();
    // The label entries, likewise.
    let mut label_fields = Adjacent::default();
    let mut label_entries: SmallVec<[&[u8]; 4]> = SmallVec::new();
    let mut scheduler_name = None;
    let mut containers: SmallVec<[&[u8]; 2]> = SmallVec::new();
    let mut tolerations: SmallVec<[&[u8]; 2]> = SmallVec::new();
    let mut node_selector: SmallVec<[&[u8]; 4]> = SmallVec::new();
    let mut reader = Reader(encoding);
    while !reader.0.is_empty() {
        let field = reader.0;
        let key = reader.key()?;
        match key {
            (1, Len) => f.namespace = reader.str()?,
            (2, Len) => f.name = reader.str()?,
            (3, Len) => f.uid = reader.str()?,
            (4, Varint) => f.resource_version = reader.varint()?,
            (5, Len) => label_entries.push(reader.bytes()?),
            (6, Len) => f.node_name = reader.str()?,
            (7, Len) => scheduler_name = Some(reader.str()?),
            // As prost reads an int32: the varint's low 32 bits.
            (8, Varint) => f.priority = Some(reader.varint()? as i32),
            (9, Len) => f.preemption_policy = reader.str()?,
            (10, Len) => containers.push(reader.bytes()?),
            (14, Len) => tolerations.push(reader.bytes()?),
            (15, Len) => node_selector.push(reader.bytes()?),
            (18, Len) => f.start_time = reader.str()?,
            (19, Len) => f.deletion_timestamp = reader.str()?,
            (21, Len) => f.nominated_node_name = reader.str()?,
            (22, Len) => f.phase = reader.str()?,
            _ => return None,
        };
        let (start, end) = (
            encoding.len() - field.len(),
            encoding.len() - reader.0.len(),
        );
        match key.0 {
            5 => label_fields.push(encoding, start, end),
            7 | 10 | 14 | 15 => detail_fields.push(encoding, start, end),
            _ => {}
        }
    }
    let (label_fields, detail_fields) = (label_fields.fields, detail_fields.fields);
    f.label_set = match memo.encoded_labels(&label_fields) {
        Some(labels) => Source::Remembered(labels),
        None => {
            for encoding in label_entries {
                f.labels.push(map_entry(encoding)?);
            }
            Source::Encoded(label_fields)
        }
    };
    if let Some(details) = memo.details(&detail_fields) {
        f.details = Source::Remembered(details);
        return Some(());
    }
    if let Some(name) = scheduler_name {
        f.scheduler_name = name;
    }
    for encoding in containers {
        f.containers.push(container(encoding)?);
    }
    for encoding in tolerations {
        f.tolerations.push(toleration(encoding)?);
    }
    for encoding in node_selector {
        f.node_selector.push(map_entry(encoding)?);
    }
    f.details = Source::Encoded(detail_fields);
    Some(())
}

/// Whole fields of a message, in order, those that lie side by side in it held as one
/// slice: the memo keys by them, and a single slice is its own key (no copy). A pod's label
/// entries are usually adjacent, and so are its detail fields.
#[derive(Default)]
struct Adjacent<'a> {
    fields: SmallVec<[&'a [u8]; 4]>,
    /// Where the last slice ends in the message.
    end: usize,
}

impl<'a> Adjacent<'a> {
    /// Adds the field at `start..end` of `message`.
    #[inline]
    fn push(&mut self, message: &'a [u8], start: usize, end: usize) {
        match self.fields.last_mut() {
            Some(last) if self.end == start => {
                *last = &message[start - last.len()..end];
            }
            _ => self.fields.push(&message[start..end]),
        }
        self.end = end;
    }
}

fn container(encoding: &[u8]) -> Option<ContainerInput<'_>> {
    use WireType::LengthDelimited as Len;
    let mut c = ContainerInput::default();
    let mut reader = Reader(encoding);
    while !reader.0.is_empty() {
        match reader.key()? {
            (1, Len) => c.name = reader.str()?,
            (2, Len) => c.resources.requests.push(quantity_entry(reader.bytes()?)?),
            (3, Len) => c.resources.limits.push(quantity_entry(reader.bytes()?)?),
            (4, Len) => c.ports.push(port(reader.bytes()?)?),
            (5, Len) => c.restart_policy = reader.str()?,
            _ => return None,
        }
    }
    Some(c)
}

fn port(encoding: &[u8]) -> Option<PortInput<'_>> {
    use WireType::{LengthDelimited as Len, Varint};
    let mut p = PortInput::default();
    let mut reader = Reader(encoding);
    while !reader.0.is_empty() {
        match reader.key()? {
            // int32s, as prost reads them: the varint's low 32 bits.
            (1, Varint) => p.host_port = reader.varint()? as i32,
            (2, Len) => p.protocol = reader.str()?,
            (3, Len) => p.host_ip = reader.str()?,
            (4, Varint) => p.container_port = reader.varint()? as i32,
            _ => return None,
        }
    }
    Some(p)
}

fn toleration(encoding: &[u8]) -> Option<TolerationInput<'_>> {
    use WireType::{LengthDelimited as Len, Varint};
    let mut t = TolerationInput::default();
    let mut reader = Reader(encoding);
    while !reader.0.is_empty() {
        match reader.key()? {
            (1, Len) => t.key = reader.str()?,
            (2, Len) => t.operator = reader.str()?,
            (3, Len) => t.value = reader.str()?,
            (4, Len) => t.effect = reader.str()?,
            (5, Varint) => {
                reader.varint()?;
            }
            _ => return None,
        }
    }
    Some(t)
}

/// A `map<string, string>` entry: a missing key or value is empty, as prost reads it.
#[inline]
fn map_entry(encoding: &[u8]) -> Option<(&str, &str)> {
    use WireType::LengthDelimited as Len;
    let (mut key, mut value) = ("", "");
    let mut reader = Reader(encoding);
    while !reader.0.is_empty() {
        match reader.key()? {
            (1, Len) => key = reader.str()?,
            (2, Len) => value = reader.str()?,
            _ => return None,
        }
    }
    Some((key, value))
}

/// A resource list's entry (`map<string, string>` of quantities).
#[inline]
fn quantity_entry(encoding: &[u8]) -> Option<(&str, Cow<'_, str>)> {
    let (name, quantity) = map_entry(encoding)?;
    Some((name, Cow::Borrowed(quantity)))
}

/// Reads protobuf wire format, answering `None` on anything prost would reject.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// Keys, lengths and most numbers are one byte: that case is inlined where a varint
    /// is read, the rest is a call.
    #[inline(always)]
    fn varint(&mut self) -> Option<u64> {
        if let Some(&byte) = self.0.first()
            && byte < 0x80
        {
            self.0 = &self.0[1..];
            return Some(u64::from(byte));
        }
        self.long_varint()
    }

    #[inline(never)]
    fn long_varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for (i, &byte) in self.0.iter().enumerate().take(10) {
            // The tenth byte holds the top bit only.
            if i == 9 && byte > 1 {
                return None;
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                self.0 = &self.0[i + 1..];
                return Some(value);
            }
        }
        None
    }

    #[inline]
    fn key(&mut self) -> Option<(u32, WireType)> {
        let key = self.varint()?;
        let tag = u32::try_from(key >> 3).ok().filter(|&t| t > 0)?;
        let wire_type = WireType::try_from(key & 0x7).ok()?;
        Some((tag, wire_type))
    }

    #[inline]
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.varint()?).ok()?;
        let (bytes, rest) = self.0.split_at_checked(len)?;
        self.0 = rest;
        Some(bytes)
    }

    #[inline]
    fn str(&mut self) -> Option<&'a str> {
        crate::model::utf8(self.bytes()?)
    }
}

#[cfg(test)]
mod tests {
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
        /// Taking a lone pod or node item without prost gives what prost's decoding
        /// gives, for any bytes: a valid item, items repeated or followed by more, or
        /// garbage.
        #[test]
        fn a_lone_item_decodes_as_prost_decodes_it(
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
                let direct = SyncRequestWire::decode_encoding(Bytes::from(encoding.clone()));
                let prost = SyncRequestWire::decode(Bytes::from(encoding));
                prop_assert_eq!(direct.map_err(|e| e.to_string()), prost.map_err(|e| e.to_string()));
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
            include_bytes!("../../fuzz/regressions/wire_pod/first-scheduler-name-not-utf8")
                .to_vec(),
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
}
