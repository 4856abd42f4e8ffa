//! Typed readers of the extender's request envelopes, straight from the body: no
//! `serde_json::Value` tree but for the Kubernetes objects the builder reads (the pod, and
//! the nodes or victim pods of non-cache-capable requests).
//!
//! Names and UIDs are borrowed from the body (owned only when they hold escapes): a
//! `/preempt` names thousands of victims, and the reply needs none of them.
//!
//! Keys are matched as Go's decoder does: exactly, else without case (an exact key wins
//! over an inexact one). A value of the wrong shape is not a serde error: it is read over
//! and kept as a [`Misfit`], so that only malformed JSON fails the parse and the caller
//! reports the first misfit with its field path, in the envelope's field order.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// A value of the wrong shape: where below the field (spelled out only on error) and why.
#[derive(Debug)]
pub(super) struct Misfit {
    pub path: String,
    pub message: &'static str,
}

impl Misfit {
    fn new(message: &'static str) -> Self {
        Self {
            path: String::new(),
            message,
        }
    }

    fn under(mut self, prefix: impl fmt::Display) -> Self {
        self.path = format!("{prefix}{}", self.path);
        self
    }
}

/// A field as read: `Ok(None)` when missing or `null`.
pub(super) type Read<T> = Result<Option<T>, Misfit>;

/// Visitor methods for the JSON scalars but strings: `null` reads as missing, the others
/// as `$misfit`.
macro_rules! other_values {
    ($misfit:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Self::Value::from(Ok(None)))
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Self::Value::from(Err(Misfit::new($misfit))))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Self::Value::from(Err(Misfit::new($misfit))))
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Self::Value::from(Err(Misfit::new($misfit))))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Self::Value::from(Err(Misfit::new($misfit))))
        }
    };
}

/// Reads the fields `names` of a JSON object, calling `read` with a field's index for
/// its value; other keys are skipped.
fn read_fields<'de, A: MapAccess<'de>>(
    map: &mut A,
    names: &[&str],
    mut read: impl FnMut(&mut A, usize) -> Result<(), A::Error>,
) -> Result<(), A::Error> {
    let mut exact = 0u32;
    while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
        if let Some(i) = names.iter().position(|name| *name == key) {
            exact |= 1 << i;
            read(map, i)?;
        } else if let Some(i) = names
            .iter()
            .position(|name| name.eq_ignore_ascii_case(&key))
            .filter(|i| exact & (1 << i) == 0)
        {
            read(map, i)?;
        } else {
            map.next_value::<IgnoredAny>()?;
        }
    }
    Ok(())
}

/// An object key, borrowed from the body when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// A field's value read through a shape visitor `V`.
struct Shaped<T, V>(Read<T>, PhantomData<V>);

impl<T, V> From<Read<T>> for Shaped<T, V> {
    fn from(read: Read<T>) -> Self {
        Self(read, PhantomData)
    }
}

/// The shape of a field: how its expected JSON reads. An object or array of a shape that
/// does not take one is read over and refused.
pub(super) trait Shape<'de>: Sized {
    type Item;
    fn expecting() -> &'static str;
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Read<Self::Item>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Err(Misfit::new(Self::expecting())))
    }
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Read<Self::Item>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Err(Misfit::new(Self::expecting())))
    }
}

impl<'de, T, V: Shape<'de, Item = T>> Deserialize<'de> for Shaped<T, V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ShapeVisitor<T, V>(PhantomData<(T, V)>);
        impl<'de, T, V: Shape<'de, Item = T>> Visitor<'de> for ShapeVisitor<T, V> {
            type Value = Shaped<T, V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(V::expecting())
            }
            other_values!(V::expecting());
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Shaped::from(Err(Misfit::new(V::expecting()))))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                V::map(map).map(Shaped::from)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                V::seq(seq).map(Shaped::from)
            }
        }
        deserializer.deserialize_any(ShapeVisitor(PhantomData))
    }
}

const OBJECT: &str = "expected an object";
const ARRAY: &str = "expected an array";

/// Reads the rest of an array after a misfit at `index`, and reports it there.
fn skip_rest<'de, A: SeqAccess<'de>, T>(
    mut seq: A,
    index: usize,
    misfit: Misfit,
) -> Result<Read<T>, A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(Err(misfit.under(format_args!("[{index}]"))))
}

/// A Kubernetes object, kept as JSON for the builder.
struct ObjectShape;
impl<'de> Shape<'de> for ObjectShape {
    type Item = Value;
    fn expecting() -> &'static str {
        OBJECT
    }
    fn map<A: MapAccess<'de>>(map: A) -> Result<Read<Value>, A::Error> {
        Value::deserialize(de::value::MapAccessDeserializer::new(map)).map(|v| Ok(Some(v)))
    }
}
type Object = Shaped<Value, ObjectShape>;

/// An array of Kubernetes objects, kept as JSON for the builder.
struct ObjectsShape;
impl<'de> Shape<'de> for ObjectsShape {
    type Item = Vec<Value>;
    fn expecting() -> &'static str {
        ARRAY
    }
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Read<Vec<Value>>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Ok(Some(items)))
    }
}
type Objects = Shaped<Vec<Value>, ObjectsShape>;

/// A string of the body: borrowed, unless it holds escapes.
pub type Text<'de> = Cow<'de, str>;

/// An array of strings (`NodeNames`).
struct NamesShape;
impl<'de> Shape<'de> for NamesShape {
    type Item = Vec<Text<'de>>;
    fn expecting() -> &'static str {
        ARRAY
    }
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Read<Vec<Text<'de>>>, A::Error> {
        let mut names = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(Name(name)) = seq.next_element::<Name>()? {
            match name {
                Some(name) => names.push(name),
                None => {
                    let index = names.len();
                    return skip_rest(seq, index, Misfit::new("expected a string"));
                }
            }
        }
        Ok(Ok(Some(names)))
    }
}
type Names<'de> = Shaped<Vec<Text<'de>>, NamesShape>;

/// A string, or `None` for any other value.
struct Name<'de>(Option<Text<'de>>);

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Name(match StrOrOther::deserialize(deserializer)?.0 {
            Ok(Some(name)) => Some(name),
            _ => None,
        }))
    }
}

struct StrOrOther<'de>(Read<Text<'de>>);

impl<'de> From<Read<Text<'de>>> for StrOrOther<'de> {
    fn from(read: Read<Text<'de>>) -> Self {
        Self(read)
    }
}

impl<'de> Deserialize<'de> for StrOrOther<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor;
        impl<'de> Visitor<'de> for StrVisitor {
            type Value = StrOrOther<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            other_values!("expected a string");
            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(StrOrOther(Ok(Some(Cow::Borrowed(text)))))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(StrOrOther(Ok(Some(Cow::Owned(text.to_owned())))))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(StrOrOther(Err(Misfit::new("expected a string"))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(StrOrOther(Err(Misfit::new("expected a string"))))
            }
        }
        deserializer.deserialize_any(StrVisitor)
    }
}

/// `{"items": [...]}` of a v1 NodeList: its items (none when missing).
struct NodeListShape;
impl<'de> Shape<'de> for NodeListShape {
    type Item = Vec<Value>;
    fn expecting() -> &'static str {
        OBJECT
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Read<Vec<Value>>, A::Error> {
        let mut items = Ok(None);
        read_fields(&mut map, &["items"], |map, _| {
            items = map.next_value::<Objects>()?.0;
            Ok(())
        })?;
        Ok(items
            .map(|items| Some(items.unwrap_or_default()))
            .map_err(|m| m.under(".items")))
    }
}
type NodeList = Shaped<Vec<Value>, NodeListShape>;

/// A map of node names to their values, in the body's order. The values stay JSON text
/// (checked, not read) so that each node's victims can be read apart, in parallel.
struct PerNodeShape;
impl<'de> Shape<'de> for PerNodeShape {
    type Item = ByNode<'de>;
    fn expecting() -> &'static str {
        OBJECT
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Read<Self::Item>, A::Error> {
        let mut nodes = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(Key(node)) = map.next_key::<Key<'de>>()? {
            nodes.push((node, map.next_value::<&'de RawValue>()?));
        }
        Ok(Ok(Some(nodes)))
    }
}

/// Reads one node's value of `NodeNameToMetaVictims`: its victims' UIDs.
pub(super) fn meta_victims(raw: &RawValue) -> Read<Vec<Text<'_>>> {
    read_raw::<VictimsShape<MetaPodsShape>>(raw)
}

/// Reads one node's value of `NodeNameToVictims`: its victim pods, as JSON.
pub(super) fn victim_pods(raw: &RawValue) -> Read<Vec<Value>> {
    read_raw::<VictimsShape<ObjectsShape>>(raw)
}

fn read_raw<'de, V: Shape<'de>>(raw: &'de RawValue) -> Read<V::Item> {
    // The envelope's parse checked this text: only its shape can be wrong.
    serde_json::from_str::<Shaped<V::Item, V>>(raw.get())
        .unwrap_or_else(|_| Shaped::from(Err(Misfit::new(OBJECT))))
        .0
}

/// A `Victims` or `MetaVictims`: what `V` reads of its `Pods` (a nil one: none).
struct VictimsShape<V>(PhantomData<V>);
impl<'de, T, V: Shape<'de, Item = Vec<T>>> Shape<'de> for VictimsShape<V> {
    type Item = Vec<T>;
    fn expecting() -> &'static str {
        OBJECT
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Read<Vec<T>>, A::Error> {
        let mut pods = Ok(None);
        read_fields(&mut map, &["Pods"], |map, _| {
            pods = map.next_value::<Shaped<Vec<T>, V>>()?.0;
            Ok(())
        })?;
        Ok(pods
            .map(|pods| Some(pods.unwrap_or_default()))
            .map_err(|m| m.under(".Pods")))
    }
}

/// Room for the victims of one node at first (JSON gives no length): a node holds tens of
/// pods, and growing a list a step at a time costs more than reading it.
const VICTIMS_EXPECTED: usize = 32;

/// The `UID`s of an array of `MetaPod`s.
struct MetaPodsShape;
impl<'de> Shape<'de> for MetaPodsShape {
    type Item = Vec<Text<'de>>;
    fn expecting() -> &'static str {
        ARRAY
    }
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Read<Vec<Text<'de>>>, A::Error> {
        let mut uids = Vec::with_capacity(seq.size_hint().unwrap_or(VICTIMS_EXPECTED));
        while let Some(pod) = seq.next_element::<MetaPod<'de>>()? {
            match pod.0 {
                Ok(Some(uid)) => uids.push(uid),
                Ok(None) => {
                    let index = uids.len();
                    return skip_rest(seq, index, Misfit::new(OBJECT));
                }
                Err(misfit) => {
                    let index = uids.len();
                    return skip_rest(seq, index, misfit);
                }
            }
        }
        Ok(Ok(Some(uids)))
    }
}

/// A `MetaPod`: its non-empty `UID`.
struct MetaPodShape;
impl<'de> Shape<'de> for MetaPodShape {
    type Item = Text<'de>;
    fn expecting() -> &'static str {
        OBJECT
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Read<Text<'de>>, A::Error> {
        let mut uid = None;
        read_fields(&mut map, &["UID"], |map, _| {
            uid = map.next_value::<StrOrOther>()?.0.ok().flatten();
            Ok(())
        })?;
        Ok(match uid {
            Some(uid) if !uid.is_empty() => Ok(Some(uid)),
            _ => Err(Misfit::new("expected a non-empty string").under(".UID")),
        })
    }
}
type MetaPod<'de> = Shaped<Text<'de>, MetaPodShape>;

/// Each candidate node with its victims, unread (see [`meta_victims`], [`victim_pods`]).
pub(super) type ByNode<'de> = Vec<(Text<'de>, &'de RawValue)>;
type VictimsByNode<'de> = Shaped<ByNode<'de>, PerNodeShape>;

/// `ExtenderArgs` (`/filter`, `/prioritize`).
pub(super) struct Args<'de> {
    pub pod: Read<Value>,
    pub node_names: Read<Vec<Text<'de>>>,
    pub nodes: Read<Vec<Value>>,
}

pub(super) struct ArgsShape;
impl<'de> Shape<'de> for ArgsShape {
    type Item = Args<'de>;
    fn expecting() -> &'static str {
        OBJECT
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Read<Args<'de>>, A::Error> {
        let mut args = Args {
            pod: Ok(None),
            node_names: Ok(None),
            nodes: Ok(None),
        };
        read_fields(&mut map, &["Pod", "NodeNames", "Nodes"], |map, i| {
            match i {
                0 => args.pod = map.next_value::<Object>()?.0,
                1 => args.node_names = map.next_value::<Names>()?.0,
                _ => args.nodes = map.next_value::<NodeList>()?.0,
            }
            Ok(())
        })?;
        Ok(Ok(Some(args)))
    }
}

/// `ExtenderPreemptionArgs` (`/preempt`).
pub(super) struct PreemptionArgs<'de> {
    pub pod: Read<Value>,
    pub meta_victims: Read<ByNode<'de>>,
    pub victims: Read<ByNode<'de>>,
}

pub(super) struct PreemptionArgsShape;
impl<'de> Shape<'de> for PreemptionArgsShape {
    type Item = PreemptionArgs<'de>;
    fn expecting() -> &'static str {
        OBJECT
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Read<PreemptionArgs<'de>>, A::Error> {
        let mut args = PreemptionArgs {
            pod: Ok(None),
            meta_victims: Ok(None),
            victims: Ok(None),
        };
        let names = ["Pod", "NodeNameToMetaVictims", "NodeNameToVictims"];
        read_fields(&mut map, &names, |map, i| {
            match i {
                0 => args.pod = map.next_value::<Object>()?.0,
                1 => args.meta_victims = map.next_value::<VictimsByNode>()?.0,
                _ => args.victims = map.next_value::<VictimsByNode>()?.0,
            }
            Ok(())
        })?;
        Ok(Ok(Some(args)))
    }
}

/// Reads a body: `Err` only for malformed JSON; `Ok(None)` for JSON that is not an object.
pub(super) fn read_body<'de, V: Shape<'de>>(
    body: &'de [u8],
) -> Result<Option<V::Item>, serde_json::Error> {
    // UTF-8 checked once for the whole body rather than string by string (a `/preempt`
    // holds thousands). A body that is not UTF-8 is malformed: read as bytes, it fails
    // with the position of the first bad string.
    let read = match std::str::from_utf8(body) {
        Ok(text) => serde_json::from_str::<Shaped<V::Item, V>>(text)?.0,
        Err(_) => serde_json::from_slice::<Shaped<V::Item, V>>(body)?.0,
    };
    Ok(read.ok().flatten())
}
