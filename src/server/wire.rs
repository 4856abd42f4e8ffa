//! `Sync`'s pods and nodes, read straight from their encoding (nodes: see the `node`
//! module).
//!
//! Decoding a pod into a `pb::Pod` allocates a string per field and a sorted map per label
//! set and resource list, which the conversion then reads once and drops: together more
//! than half of a bulk load's receiving work. So `Sync` receives `SyncRequestWire` (the
//! server is generated with it as the method's input): `SyncRequest` with the pod and
//! node items left as bytes, the same on the wire. The fields most pods set (identity,
//! labels, node, priority, containers with their requests, limits and ports,
//! tolerations, node selector, scheduling group, times, phase) are read from those bytes into the builder's [`PodInput`]; a
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
    /// The item, as `SyncRequest.item`.
    pub item: Option<WireItem>,
}

/// `SyncRequest.item`, with a pod's `UpdatePodRequest` and a node's `UpdateNodeRequest`
/// as their encodings. Budgets are boxed: a load's items are nearly all pods, and each
/// item is moved a few times on its way to the converter, at the size of the largest
/// variant (a budget inline is five times a pod's bytes handle).
#[derive(Clone, Debug, PartialEq)]
pub enum WireItem {
    /// An `UpdateNodeRequest`'s encoding.
    Node(Bytes),
    /// An `UpdatePodRequest`'s encoding.
    Pod(Bytes),
    /// A budget's update, decoded.
    Pdb(Box<pb::UpdatePodDisruptionBudgetRequest>),
    /// A PriorityClass's update, decoded.
    PriorityClass(Box<pb::UpdatePriorityClassRequest>),
    /// A Namespace's update, decoded.
    Namespace(Box<pb::UpdateNamespaceRequest>),
    /// A PodGroup's update, decoded.
    PodGroup(Box<pb::UpdatePodGroupRequest>),
    /// A Workload's update, decoded.
    Workload(Box<pb::UpdateWorkloadRequest>),
}

/// Field numbers of every message, from the descriptors (written by build.rs).
#[allow(dead_code)]
mod fields {
    include!(concat!(env!("OUT_DIR"), "/field_numbers.rs"));
}

use fields::sync_request::{NAMESPACE, NODE, PDB, POD, POD_GROUP, PRIORITY_CLASS, WORKLOAD};
use fields::{
    container, container_port, pod, pod_scheduling_group, toleration, update_node_request,
    update_pod_request,
};

// One reader takes the upsert of both update requests.
const UPSERT: u32 = update_pod_request::UPSERT;
const _: () = assert!(update_node_request::UPSERT == UPSERT);

impl prost::Message for SyncRequestWire {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        use prost::encoding::{bytes, message};
        match &self.item {
            Some(WireItem::Node(b)) => bytes::encode(NODE, b, buf),
            Some(WireItem::Pod(b)) => bytes::encode(POD, b, buf),
            Some(WireItem::Pdb(r)) => message::encode(PDB, &**r, buf),
            Some(WireItem::PriorityClass(r)) => message::encode(PRIORITY_CLASS, &**r, buf),
            Some(WireItem::Namespace(r)) => message::encode(NAMESPACE, &**r, buf),
            Some(WireItem::PodGroup(r)) => message::encode(POD_GROUP, &**r, buf),
            Some(WireItem::Workload(r)) => message::encode(WORKLOAD, &**r, buf),
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
        if matches!(
            tag,
            NODE | POD | PDB | PRIORITY_CLASS | NAMESPACE | POD_GROUP | WORKLOAD
        ) {
            check_replaced(self.item.as_ref(), tag)?;
        }
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
            POD_GROUP => {
                let held = match self.item.take() {
                    Some(WireItem::PodGroup(r)) => Some(*r),
                    _ => None,
                };
                let merged = merged(held, wire_type, buf, ctx)?;
                self.item = Some(WireItem::PodGroup(Box::new(merged)));
            }
            WORKLOAD => {
                let held = match self.item.take() {
                    Some(WireItem::Workload(r)) => Some(*r),
                    _ => None,
                };
                let merged = merged(held, wire_type, buf, ctx)?;
                self.item = Some(WireItem::Workload(Box::new(merged)));
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
            Some(WireItem::PodGroup(r)) => message::encoded_len(POD_GROUP, &**r),
            Some(WireItem::Workload(r)) => message::encoded_len(WORKLOAD, &**r),
            None => 0,
        }
    }

    fn clear(&mut self) {
        self.item = None;
    }
}

/// `UpdatePodRequest` as the server receives it: its encoding, for [`read_update_pod`]
/// to read (the server is generated with it as `UpdatePod`'s input).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdatePodRequestWire(pub Bytes);

impl prost::Message for UpdatePodRequestWire {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        buf.put_slice(&self.0);
    }

    /// Takes the whole message as it is (tonic hands the decoder one message; taking it
    /// does not copy it). Two parts merged are their concatenation, as for any message.
    fn merge(&mut self, mut buf: impl Buf) -> Result<(), prost::DecodeError> {
        let more = buf.copy_to_bytes(buf.remaining());
        self.0 = if self.0.is_empty() {
            more
        } else {
            [self.0.clone(), more].concat().into()
        };
        Ok(())
    }

    /// Only reached when the type is a field of another message, which it never is: the
    /// field is kept as prost would skip an unknown one.
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        prost::encoding::skip_field(wire_type, tag, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        self.0.len()
    }

    fn clear(&mut self) {
        self.0 = Bytes::new();
    }
}

/// A request prost rejects, as tonic answers one it cannot decode.
pub fn undecodable(error: prost::DecodeError) -> ApiError {
    ApiError::Transport {
        code: tonic::Code::Internal,
        message: error.to_string(),
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

/// A node or pod item that another kind of item replaces was kept undecoded, but prost
/// decodes every occurrence of the oneof: a malformed one fails the request even when a
/// later item replaces it.
fn check_replaced(held: Option<&WireItem>, tag: u32) -> Result<(), prost::DecodeError> {
    match held {
        Some(WireItem::Node(b)) if tag != NODE => {
            pb::UpdateNodeRequest::decode(b.clone()).map(drop)
        }
        Some(WireItem::Pod(b)) if tag != POD => pb::UpdatePodRequest::decode(b.clone()).map(drop),
        _ => Ok(()),
    }
    .map_err(within_item)
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
    if reader.key()? != (UPSERT, WireType::LengthDelimited) {
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
    let mut scheduling_group = None;
    let mut reader = Reader(encoding);
    while !reader.0.is_empty() {
        let field = reader.0;
        let key = reader.key()?;
        match key {
            (pod::NAMESPACE, Len) => f.namespace = reader.str()?,
            (pod::NAME, Len) => f.name = reader.str()?,
            (pod::UID, Len) => f.uid = reader.str()?,
            (pod::RESOURCE_VERSION, Varint) => f.resource_version = reader.varint()?,
            (pod::LABELS, Len) => label_entries.push(reader.bytes()?),
            (pod::NODE_NAME, Len) => f.node_name = reader.str()?,
            (pod::SCHEDULER_NAME, Len) => scheduler_name = Some(reader.str()?),
            // As prost reads an int32: the varint's low 32 bits.
            (pod::PRIORITY, Varint) => f.priority = Some(reader.varint()? as i32),
            (pod::PREEMPTION_POLICY, Len) => f.preemption_policy = reader.str()?,
            (pod::CONTAINERS, Len) => containers.push(reader.bytes()?),
            (pod::TOLERATIONS, Len) => tolerations.push(reader.bytes()?),
            (pod::NODE_SELECTOR, Len) => node_selector.push(reader.bytes()?),
            (pod::START_TIME, Len) => f.start_time = reader.str()?,
            (pod::DELETION_TIMESTAMP, Len) => f.deletion_timestamp = reader.str()?,
            (pod::NOMINATED_NODE_NAME, Len) => f.nominated_node_name = reader.str()?,
            (pod::PHASE, Len) => f.phase = reader.str()?,
            // Seen twice, its parts merge: prost's to do.
            (pod::SCHEDULING_GROUP, Len) if scheduling_group.is_none() => {
                scheduling_group = Some(reader.bytes()?)
            }
            _ => return None,
        };
        let (start, end) = (
            encoding.len() - field.len(),
            encoding.len() - reader.0.len(),
        );
        match key.0 {
            pod::LABELS => label_fields.push(encoding, start, end),
            pod::SCHEDULER_NAME
            | pod::CONTAINERS
            | pod::TOLERATIONS
            | pod::NODE_SELECTOR
            | pod::SCHEDULING_GROUP => detail_fields.push(encoding, start, end),
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
    if let Some(encoding) = scheduling_group {
        let group = read_message(encoding, |name: &mut &'a str, key, reader| {
            match key {
                (pod_scheduling_group::POD_GROUP_NAME, WireType::LengthDelimited) => {
                    *name = reader.str()?
                }
                _ => return None,
            }
            Some(())
        })?;
        f.scheduling_group = group;
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

fn container<'a>(encoding: &'a [u8]) -> Option<ContainerInput<'a>> {
    use WireType::LengthDelimited as Len;
    read_message(encoding, |c: &mut ContainerInput<'a>, key, reader| {
        match key {
            (container::NAME, Len) => c.name = reader.str()?,
            (container::REQUESTS, Len) => {
                c.resources.requests.push(quantity_entry(reader.bytes()?)?)
            }
            (container::LIMITS, Len) => c.resources.limits.push(quantity_entry(reader.bytes()?)?),
            (container::PORTS, Len) => c.ports.push(port(reader.bytes()?)?),
            (container::RESTART_POLICY, Len) => c.restart_policy = reader.str()?,
            (container::IMAGE, Len) => c.image = reader.str()?,
            _ => return None,
        }
        Some(())
    })
}

fn port<'a>(encoding: &'a [u8]) -> Option<PortInput<'a>> {
    use WireType::{LengthDelimited as Len, Varint};
    read_message(encoding, |p: &mut PortInput<'a>, key, reader| {
        match key {
            // int32s, as prost reads them: the varint's low 32 bits.
            (container_port::HOST_PORT, Varint) => p.host_port = reader.varint()? as i32,
            (container_port::PROTOCOL, Len) => p.protocol = reader.str()?,
            (container_port::HOST_IP, Len) => p.host_ip = reader.str()?,
            (container_port::CONTAINER_PORT, Varint) => p.container_port = reader.varint()? as i32,
            _ => return None,
        }
        Some(())
    })
}

fn toleration<'a>(encoding: &'a [u8]) -> Option<TolerationInput<'a>> {
    use WireType::{LengthDelimited as Len, Varint};
    read_message(encoding, |t: &mut TolerationInput<'a>, key, reader| {
        match key {
            (toleration::KEY, Len) => t.key = reader.str()?,
            (toleration::OPERATOR, Len) => t.operator = reader.str()?,
            (toleration::VALUE, Len) => t.value = reader.str()?,
            (toleration::EFFECT, Len) => t.effect = reader.str()?,
            (toleration::TOLERATION_SECONDS, Varint) => {
                reader.varint()?;
            }
            _ => return None,
        }
        Some(())
    })
}

/// A `map<string, string>` entry: a missing key or value is empty, as prost reads it.
#[inline]
fn map_entry(encoding: &[u8]) -> Option<(&str, &str)> {
    use WireType::LengthDelimited as Len;
    read_message(encoding, |(key, value), field, reader| {
        match field {
            (pod::labels_entry::KEY, Len) => *key = reader.str()?,
            (pod::labels_entry::VALUE, Len) => *value = reader.str()?,
            _ => return None,
        }
        Some(())
    })
}

/// A resource list's entry (`map<string, string>` of quantities).
#[inline]
fn quantity_entry(encoding: &[u8]) -> Option<(&str, Cow<'_, str>)> {
    let (name, quantity) = map_entry(encoding)?;
    Some((name, Cow::Borrowed(quantity)))
}

/// Reads a message's fields into a fresh `T`, one call of `field` a field; `None` when
/// `field` leaves one to prost (it answers `None`) or the encoding is not one prost takes.
#[inline(always)]
fn read_message<'a, T: Default>(
    encoding: &'a [u8],
    mut field: impl FnMut(&mut T, (u32, WireType), &mut Reader<'a>) -> Option<()>,
) -> Option<T> {
    let mut value = T::default();
    let mut reader = Reader(encoding);
    while !reader.0.is_empty() {
        let key = reader.key()?;
        field(&mut value, key, &mut reader)?;
    }
    Some(value)
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
mod tests;
