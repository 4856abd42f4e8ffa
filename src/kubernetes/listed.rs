//! The keys a list in progress has named, packed end to end in one buffer with a table
//! of spans: two allocations for a list of any length. Two owned strings per key (the
//! first version) made 300k small allocations during a 150k-pod list, among the pods
//! the cache keeps, and freed them all at its end: the slabs they shared with the cache
//! stayed resident, part full.

use std::hash::BuildHasher as _;

use hashbrown::HashTable;

/// Where one key's namespace and name sit in [`ListedKeys::text`].
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    namespace_len: u32,
    name_len: u32,
}

/// A set of (namespace, name) keys.
#[derive(Default)]
pub(super) struct ListedKeys {
    /// Each key's namespace then name, end to end; a removed key's bytes stay.
    text: String,
    spans: HashTable<Span>,
    hasher: hashbrown::DefaultHashBuilder,
}

impl ListedKeys {
    pub(super) fn len(&self) -> usize {
        self.spans.len()
    }

    fn hash(&self, namespace: &str, name: &str) -> u64 {
        self.hasher.hash_one((namespace, name))
    }

    /// Adds a key; a key held already is left as it is.
    pub(super) fn insert(&mut self, namespace: &str, name: &str) {
        let hash = self.hash(namespace, name);
        let (Ok(namespace_len), Ok(name_len)) =
            (u32::try_from(namespace.len()), u32::try_from(name.len()))
        else {
            // Kubernetes names are at most 253 bytes: such a key names no object.
            return;
        };
        let Self {
            text,
            spans,
            hasher,
        } = self;
        if spans
            .find(hash, |span| split(text, *span) == (namespace, name))
            .is_some()
        {
            return;
        }
        let span = Span {
            start: text.len(),
            namespace_len,
            name_len,
        };
        text.push_str(namespace);
        text.push_str(name);
        spans.insert_unique(hash, span, |span| hasher.hash_one(split(text, *span)));
    }

    pub(super) fn remove(&mut self, namespace: &str, name: &str) {
        let hash = self.hash(namespace, name);
        let text = &self.text;
        if let Ok(entry) = self
            .spans
            .find_entry(hash, |span| split(text, *span) == (namespace, name))
        {
            entry.remove();
        }
    }

    pub(super) fn contains(&self, namespace: &str, name: &str) -> bool {
        let hash = self.hash(namespace, name);
        self.spans
            .find(hash, |span| split(&self.text, *span) == (namespace, name))
            .is_some()
    }
}

/// The namespace and name `span` marks in `text`.
fn split(text: &str, span: Span) -> (&str, &str) {
    let namespace_end = span.start + span.namespace_len as usize;
    let end = namespace_end + span.name_len as usize;
    (&text[span.start..namespace_end], &text[namespace_end..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_by_namespace_and_name_not_by_their_concatenation() {
        let mut keys = ListedKeys::default();
        keys.insert("shop", "web-1");
        keys.insert("", "node-1");
        keys.insert("shop", "web-1");
        assert_eq!(keys.len(), 2);
        assert!(keys.contains("shop", "web-1"));
        assert!(keys.contains("", "node-1"));
        assert!(!keys.contains("sho", "pweb-1"));
        assert!(!keys.contains("shop", "web-2"));
        assert!(!keys.contains("node-1", ""));
    }

    #[test]
    fn a_removed_key_is_gone_and_can_come_back() {
        let mut keys = ListedKeys::default();
        for i in 0..1000 {
            keys.insert("ns", &format!("pod-{i}"));
        }
        keys.remove("ns", "pod-7");
        keys.remove("ns", "absent");
        assert_eq!(keys.len(), 999);
        assert!(!keys.contains("ns", "pod-7"));
        assert!(keys.contains("ns", "pod-8") && keys.contains("ns", "pod-999"));
        keys.insert("ns", "pod-7");
        assert!(keys.contains("ns", "pod-7"));
        assert_eq!(keys.len(), 1000);
    }
}
