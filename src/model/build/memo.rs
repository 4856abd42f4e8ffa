//! Strings, label sets and pod details a stream of builds has already made, handed out
//! again.
//!
//! A bulk load converts hundreds of thousands of pods whose namespaces, node names, label
//! sets, resource names and templates repeat. Without a memo, each conversion allocates its
//! own copy of each, which the cache then drops in favour of the copy it already shares (on
//! another thread, which makes the free dearer). With one, a repeated value costs a lookup
//! and a reference count, and the cache's interning meets a pointer it already holds. Label
//! sets and details read from an encoding are also kept by that encoding: the same bytes
//! again skip their reading and conversion altogether.

use std::hash::{BuildHasher, Hasher};

use triomphe::Arc;

use crate::model::quantity::Quantity;
use crate::model::{Labels, PodDetails, Str, Toleration, Tolerations};
use crate::recent::RecentTable;

/// The longest encoding the memo keeps a value by: a template's container specs are a few
/// hundred bytes, and a bound keeps a memo of odd pods small.
const MAX_ENCODING_BYTES: usize = 1024;
/// The bytes of keys (encodings, texts) one table holds at most: a memo of full tables
/// stays within a few tens of megabytes however long its keys.
const MAX_KEY_BYTES: usize = 8 << 20;

/// Strings, label sets and quantities a stream's conversions remember (namespaces, label
/// sets and the node names of a stretch of pods fit).
const STREAM_VALUES: usize = 1 << 13;
/// Pod templates (details and label sets, by their encoding) a stream's conversions
/// remember: more than a large cluster's (a 1M-pod load of `preemptd bench` has ~15k),
/// which arrive interleaved, so a template is still held when its next pod comes.
pub(super) const STREAM_TEMPLATES: usize = 1 << 16;

/// The bytes of keys the details and label sets a long-lived memo (see
/// [`Memo::for_long_lived`]) keeps by: a few thousand templates' worth. Changes that come
/// a few at a time need little memory; what it forgets, the cache still shares.
const LONG_LIVED_KEY_BYTES: usize = 1 << 20;

/// Values kept by the encoding of the fields they were converted from (each whole, in
/// order): the same fields again make the same value.
struct ByEncoding<V>(RecentTable<(Box<[u8]>, V)>);

impl<V: Clone> ByEncoding<V> {
    fn new(capacity: usize) -> Self {
        Self::with_key_bytes(capacity, MAX_KEY_BYTES)
    }

    fn with_key_bytes(capacity: usize, key_bytes: usize) -> Self {
        Self(RecentTable::new(capacity, key_bytes))
    }

    fn get(&self, hash: u64, encoding: &[u8]) -> Option<V> {
        self.0
            .find(hash, |(held, _)| **held == *encoding)
            .map(|(_, value)| value.clone())
    }

    fn insert(
        &mut self,
        hash: u64,
        encoding: &[u8],
        value: &V,
        hasher: &hashbrown::DefaultHashBuilder,
    ) {
        if let Some(held) = self.0.find_mut(hash, |(held, _)| **held == *encoding) {
            held.1 = value.clone();
            return;
        }
        self.0.insert(
            hash,
            (encoding.into(), value.clone()),
            encoding.len(),
            |(held, _)| hasher.hash_one(&**held),
        );
    }
}

/// A bounded memo of recent strings, label sets, quantities and pod details. Once a table
/// holds `capacity` values, it drops its oldest for each new one (see [`RecentTable`]), so
/// a stream of ever-new values costs a bounded amount of memory and no call drops a whole
/// table. A memo of capacity 0 remembers nothing (every call allocates).
pub struct Memo {
    /// foldhash (hashbrown's default), seeded at random per memo, so a client cannot
    /// choose colliding keys.
    hasher: hashbrown::DefaultHashBuilder,
    strings: RecentTable<Str>,
    label_sets: RecentTable<Labels>,
    /// Pods' toleration lists: most pods have the same few (an API server's, the two
    /// DefaultTolerationSeconds adds), whatever else their details differ in.
    tolerations: RecentTable<Tolerations>,
    /// Quantity texts already parsed (and valid): requests repeat across a load's pods,
    /// and a parse costs far more than a lookup.
    quantities: RecentTable<(Box<str>, Quantity)>,
    /// Pod details by the encoding of the fields they are made of: the pods of one
    /// template share them, so one conversion serves them all.
    details: ByEncoding<Arc<PodDetails>>,
    /// Pods' label sets by the encoding of their entries.
    encoded_labels: ByEncoding<Labels>,
    /// Where encoded fields are joined to be looked up.
    joined: Vec<u8>,
    capacity: usize,
}

impl Memo {
    /// A memo of at most `capacity` values of each kind.
    pub fn new(capacity: usize) -> Self {
        Self {
            hasher: hashbrown::DefaultHashBuilder::default(),
            strings: RecentTable::new(capacity, MAX_KEY_BYTES),
            label_sets: RecentTable::new(capacity, usize::MAX),
            tolerations: RecentTable::new(capacity, usize::MAX),
            quantities: RecentTable::new(capacity, MAX_KEY_BYTES),
            details: ByEncoding::new(capacity),
            encoded_labels: ByEncoding::new(capacity),
            joined: Vec::new(),
            capacity,
        }
    }

    /// The memo a `Sync` stream converts with. A full table drops one old value for each
    /// new one, so none stalls the stream's receiving async thread.
    pub fn for_stream() -> Self {
        let mut memo = Self::new(STREAM_VALUES);
        memo.details = ByEncoding::new(STREAM_TEMPLATES);
        memo.encoded_labels = ByEncoding::new(STREAM_TEMPLATES);
        memo
    }

    /// A memo for conversions that go on as long as the process runs (a Kubernetes
    /// watch's changes between its lists): as a stream's, but its details and label sets
    /// keyed by at most [`LONG_LIVED_KEY_BYTES`] of encodings. A stream's memo keeps up
    /// to 8 MB of keys and is dropped with its stream; one kept for good holds them for
    /// good (the bench's 60k pods have 14k templates, keyed by a few hundred bytes each).
    pub fn for_long_lived() -> Self {
        let mut memo = Self::for_stream();
        memo.details = ByEncoding::with_key_bytes(STREAM_TEMPLATES, LONG_LIVED_KEY_BYTES);
        memo.encoded_labels = ByEncoding::with_key_bytes(STREAM_TEMPLATES, LONG_LIVED_KEY_BYTES);
        memo
    }

    /// A memo that remembers nothing: for one-off conversions.
    pub fn disabled() -> Self {
        Self::new(0)
    }

    /// Whether the memo keeps anything: readers need not make the keys a disabled memo
    /// would not keep.
    pub fn is_enabled(&self) -> bool {
        self.capacity > 0
    }

    /// A string equal to `value`: the remembered one if there is one.
    pub fn str(&mut self, value: &str) -> Str {
        if self.capacity == 0 {
            return value.into();
        }
        let hash = self.hasher.hash_one(value);
        if let Some(held) = self.strings.find(hash, |held| **held == *value) {
            return held.clone();
        }
        let value: Str = value.into();
        let hasher = &self.hasher;
        self.strings
            .insert(hash, value.clone(), value.len(), |held| {
                hasher.hash_one(&**held)
            });
        value
    }

    /// The label set of `pairs` (whose keys are sorted and unique, as a label set's are).
    pub fn labels(&mut self, pairs: &[(&str, &str)]) -> Labels {
        if self.capacity == 0 {
            return pairs.iter().copied().collect();
        }
        let hash = self.pairs_hash(pairs.iter().copied());
        let same = |held: &Labels| {
            held.len() == pairs.len()
                && held
                    .iter()
                    .zip(pairs)
                    .all(|((hk, hv), (k, v))| **hk == **k && **hv == **v)
        };
        if let Some(held) = self.label_sets.find(hash, same) {
            return held.clone();
        }
        let shared = pairs
            .iter()
            .map(|&(k, v)| (self.str(k), self.str(v)))
            .collect();
        let labels = Labels::new(shared);
        let (hasher, label_sets) = (&self.hasher, &mut self.label_sets);
        // Weighed as nothing: its strings are weighed in `strings`.
        label_sets.insert(hash, labels.clone(), 0, |held| {
            pairs_hash(hasher, held.iter().map(|(k, v)| (&**k, &**v)))
        });
        labels
    }

    /// Tolerations equal to `tolerations`: the remembered list if there is one.
    pub fn tolerations(&mut self, tolerations: Vec<Toleration>) -> Tolerations {
        if self.capacity == 0 || tolerations.is_empty() {
            return tolerations.into();
        }
        let hash = self.hasher.hash_one(&tolerations);
        if let Some(held) = self.tolerations.find(hash, |held| **held == tolerations) {
            return held.clone();
        }
        let shared = Tolerations::from(tolerations);
        let hasher = &self.hasher;
        // Weighed as nothing: their strings are weighed in `strings`.
        self.tolerations
            .insert(hash, shared.clone(), 0, |held| hasher.hash_one(&**held));
        shared
    }

    /// The label set of `pairs` (sorted and unique keys) made of remembered strings, the
    /// set itself not remembered: for a node's labels, a set of its own (its hostname)
    /// whose keys and most values every node repeats.
    pub fn labels_of_strings(&mut self, pairs: &[(&str, &str)]) -> Labels {
        if self.capacity == 0 {
            return pairs.iter().copied().collect();
        }
        Labels::new(
            pairs
                .iter()
                .map(|&(k, v)| (self.str(k), self.str(v)))
                .collect(),
        )
    }

    /// The valid quantity `text` was parsed to, or `parse`'s answer (remembered when
    /// valid).
    pub fn quantity<E>(
        &mut self,
        text: &str,
        parse: impl FnOnce(&str) -> Result<Quantity, E>,
    ) -> Result<Quantity, E> {
        if self.capacity == 0 {
            return parse(text);
        }
        let hash = self.hasher.hash_one(text);
        if let Some((_, held)) = self.quantities.find(hash, |(held, _)| **held == *text) {
            return Ok(*held);
        }
        let quantity = parse(text)?;
        let hasher = &self.hasher;
        self.quantities
            .insert(hash, (text.into(), quantity), text.len(), |(held, _)| {
                hasher.hash_one(&**held)
            });
        Ok(quantity)
    }

    /// The details made before for a pod whose detail fields were encoded as `fields`
    /// (each whole, in order).
    pub fn details(&mut self, fields: &[&[u8]]) -> Option<Arc<PodDetails>> {
        let (hash, key) = encoding_key(&mut self.joined, &self.hasher, self.capacity, fields)?;
        self.details.get(hash, key)
    }

    /// Keeps `details` as those of pods whose detail fields are encoded as `fields`.
    pub fn remember_details(&mut self, fields: &[&[u8]], details: &Arc<PodDetails>) {
        if let Some((hash, key)) =
            encoding_key(&mut self.joined, &self.hasher, self.capacity, fields)
        {
            self.details.insert(hash, key, details, &self.hasher);
        }
    }

    /// The label set made before from label entries encoded as `fields` (each whole, in
    /// order).
    pub fn encoded_labels(&mut self, fields: &[&[u8]]) -> Option<Labels> {
        let (hash, key) = encoding_key(&mut self.joined, &self.hasher, self.capacity, fields)?;
        self.encoded_labels.get(hash, key)
    }

    /// Keeps `labels` as the label set of entries encoded as `fields`.
    pub fn remember_labels(&mut self, fields: &[&[u8]], labels: &Labels) {
        if let Some((hash, key)) =
            encoding_key(&mut self.joined, &self.hasher, self.capacity, fields)
        {
            self.encoded_labels.insert(hash, key, labels, &self.hasher);
        }
    }

    fn pairs_hash<'a>(&self, pairs: impl Iterator<Item = (&'a str, &'a str)>) -> u64 {
        pairs_hash(&self.hasher, pairs)
    }
}

/// The key encoded `fields` are kept by (their bytes, joined in `joined`) and its hash;
/// `None` when a memo of `capacity` keeps nothing by them (disabled, or too long an
/// encoding). One field is its own key, not copied: callers pass fields that lie side by
/// side in their message as one.
fn encoding_key<'k>(
    joined: &'k mut Vec<u8>,
    hasher: &hashbrown::DefaultHashBuilder,
    capacity: usize,
    fields: &[&'k [u8]],
) -> Option<(u64, &'k [u8])> {
    let len: usize = fields.iter().map(|f| f.len()).sum();
    if capacity == 0 || len > MAX_ENCODING_BYTES {
        return None;
    }
    let key: &[u8] = match fields {
        [one] => one,
        _ => {
            joined.clear();
            fields.iter().for_each(|f| joined.extend_from_slice(f));
            joined
        }
    };
    Some((hasher.hash_one(key), key))
}

/// One hash for a sequence of pairs, however they are held.
fn pairs_hash<'a>(
    hasher: &hashbrown::DefaultHashBuilder,
    pairs: impl Iterator<Item = (&'a str, &'a str)>,
) -> u64 {
    let mut state = hasher.build_hasher();
    for (key, value) in pairs {
        // Lengths first, so ("ab", "c") and ("a", "bc") differ.
        state.write_usize(key.len());
        state.write(key.as_bytes());
        state.write_usize(value.len());
        state.write(value.as_bytes());
    }
    state.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_values_share_one_allocation() {
        let mut memo = Memo::new(16);
        let a = memo.str("web");
        let b = memo.str("web");
        assert!(Str::ptr_eq(&a, &b));
        assert!(!Str::ptr_eq(&a, &memo.str("batch")));

        let first = memo.labels(&[("app", "a"), ("tier", "web")]);
        let second = memo.labels(&[("app", "a"), ("tier", "web")]);
        assert!(first.ptr_eq(&second));
        let other = memo.labels(&[("app", "a"), ("tier", "db")]);
        assert!(!first.ptr_eq(&other));
        assert_eq!(other.get("tier").map(|v| &**v), Some("db"));
        // The strings inside label sets come from the memo too.
        assert!(Str::ptr_eq(
            other.get("app").unwrap(),
            first.get("app").unwrap()
        ));
        // Splitting a pair differently is another set.
        let split = memo.labels(&[("ap", "pa")]);
        assert_eq!(split.get("ap").map(|v| &**v), Some("pa"));
        assert!(memo.labels(&[]).is_empty());
    }

    #[test]
    fn a_full_memo_forgets_its_oldest_and_a_disabled_one_remembers_nothing() {
        let mut memo = Memo::new(2);
        let a = memo.str("a");
        let b = memo.str("b");
        let c = memo.str("c");
        // "a", the oldest, made way for "c": a new copy, equal to the old.
        let again = memo.str("a");
        assert_eq!(a, again);
        assert!(!Str::ptr_eq(&a, &again));
        // "b" made way for "a"; "c" is still held.
        assert!(Str::ptr_eq(&c, &memo.str("c")));
        assert!(!Str::ptr_eq(&b, &memo.str("b")));

        let mut disabled = Memo::disabled();
        assert!(!Str::ptr_eq(&disabled.str("x"), &disabled.str("x")));
        let labels = [("k", "v")];
        assert!(!disabled.labels(&labels).ptr_eq(&disabled.labels(&labels)));
        assert_eq!(disabled.labels(&labels), memo.labels(&labels));
    }

    #[test]
    fn equal_toleration_lists_share_one_allocation() {
        let toleration = |key: &str| Toleration {
            key: key.into(),
            operator: crate::model::TolerationOperator::Exists,
            value: "".into(),
            effect: Some(crate::model::TaintEffect::NoExecute),
        };
        let two = || {
            vec![
                toleration("node.kubernetes.io/not-ready"),
                toleration("node.kubernetes.io/unreachable"),
            ]
        };
        let mut memo = Memo::new(4);
        let first = memo.tolerations(two());
        let second = memo.tolerations(two());
        assert!(first.ptr_eq(&second));
        assert_eq!(&*first, &two()[..]);
        // Another list, or the same in another order, is another.
        let one = memo.tolerations(vec![toleration("node.kubernetes.io/not-ready")]);
        assert!(!one.ptr_eq(&first));
        let mut reversed = two();
        reversed.reverse();
        let reversed = memo.tolerations(reversed);
        assert!(!reversed.ptr_eq(&first));
        assert_eq!(reversed[0], toleration("node.kubernetes.io/unreachable"));
        assert!(memo.tolerations(Vec::new()).is_empty());

        let mut disabled = Memo::disabled();
        let (a, b) = (disabled.tolerations(two()), disabled.tolerations(two()));
        assert_eq!(a, b);
        assert!(!a.ptr_eq(&b));
    }

    #[test]
    fn a_long_lived_memo_keeps_fewer_bytes_of_keys_than_a_streams() {
        let details = Arc::new(PodDetails::default());
        let key = |i: usize| format!("{i:01000}").into_bytes();
        let mut stream = Memo::for_stream();
        let mut long_lived = Memo::for_long_lived();
        // 2 MB of keys: twice what a long-lived memo keeps.
        let keys = 2 * LONG_LIVED_KEY_BYTES / key(0).len();
        for i in 0..keys {
            stream.remember_details(&[&key(i)], &details);
            long_lived.remember_details(&[&key(i)], &details);
        }
        assert!(stream.details(&[&key(0)]).is_some());
        assert!(long_lived.details(&[&key(0)]).is_none());
        assert!(long_lived.details(&[&key(keys - 1)]).is_some());
    }

    #[test]
    fn quantities_are_parsed_once_and_errors_never_remembered() {
        let mut memo = Memo::new(4);
        let mut parses = 0;
        let mut parse = |text: &str| {
            parses += 1;
            Quantity::parse(text)
        };
        assert_eq!(memo.quantity("100m", &mut parse), Quantity::parse("100m"));
        assert_eq!(memo.quantity("100m", &mut parse), Quantity::parse("100m"));
        assert!(memo.quantity("1x", &mut parse).is_err());
        assert!(memo.quantity("1x", &mut parse).is_err());
        assert_eq!(parses, 3);

        let mut disabled = Memo::disabled();
        let mut parses = 0;
        for _ in 0..2 {
            let q = disabled.quantity("2Gi", |text| {
                parses += 1;
                Quantity::parse(text)
            });
            assert_eq!(q, Quantity::parse("2Gi"));
        }
        assert_eq!(parses, 2);
    }

    #[test]
    fn fields_are_keyed_by_their_bytes_however_they_are_split() {
        let mut memo = Memo::new(4);
        let details = Arc::new(PodDetails::default());
        let whole: &[u8] = b"\x52\x02ab\x72\x01c";
        memo.remember_details(&[whole], &details);
        let found = memo.details(&[&whole[..4], &whole[4..]]).unwrap();
        assert!(Arc::ptr_eq(&found, &details));
        let other = Arc::new(PodDetails::default());
        memo.remember_details(&[&whole[..4], &whole[4..]], &other);
        assert!(Arc::ptr_eq(&memo.details(&[whole]).unwrap(), &other));
        assert!(memo.details(&[&whole[..4]]).is_none());
    }

    #[test]
    fn values_kept_by_encoding_come_back_for_the_same_bytes_only() {
        let mut memo = Memo::new(2);
        let labels = memo.labels(&[("app", "web")]);
        let details = Arc::new(PodDetails::default());
        let fields: [&[u8]; 2] = [b"\x2a\x02ab", b"\x2a\x01c"];
        assert!(memo.encoded_labels(&fields).is_none());
        memo.remember_labels(&fields, &labels);
        assert!(memo.encoded_labels(&fields).unwrap().ptr_eq(&labels));
        assert!(memo.encoded_labels(&fields[..1]).is_none());
        // Details are kept apart from label sets, by the same kind of key.
        assert!(memo.details(&fields).is_none());
        memo.remember_details(&fields, &details);
        assert!(Arc::ptr_eq(&memo.details(&fields).unwrap(), &details));

        // Too long an encoding is not kept.
        let long = vec![0u8; MAX_ENCODING_BYTES + 1];
        memo.remember_labels(&[&long], &labels);
        assert!(memo.encoded_labels(&[&long]).is_none());
        // A full table forgets its oldest: remembered again, an encoding keeps its age.
        memo.remember_labels(&fields, &labels);
        memo.remember_labels(&[b"1"], &labels);
        assert!(memo.encoded_labels(&fields).is_some());
        memo.remember_labels(&[b"2"], &labels);
        assert!(memo.encoded_labels(&fields).is_none());
        assert!(memo.encoded_labels(&[b"1"]).is_some());
        assert!(memo.encoded_labels(&[b"2"]).is_some());

        let mut disabled = Memo::disabled();
        disabled.remember_details(&fields, &details);
        assert!(disabled.details(&fields).is_none());
    }
}
