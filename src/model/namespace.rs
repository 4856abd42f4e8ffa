//! Namespaces: their labels, which pod affinity's `namespaceSelector` matches.

use super::named::{ByName, Named};
use super::{Labels, Str};

/// The label the API server sets on every Namespace: its name.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// A v1 Namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    /// The namespace's name.
    pub name: Str,
    /// The namespace's uid.
    pub uid: Str,
    /// The API server's resourceVersion, as a number.
    pub resource_version: u64,
    /// Always holds [`NAME_LABEL`] with the name, as the API server keeps it.
    pub labels: Labels,
}

impl Namespace {
    /// A namespace with `labels` and the name label the API server adds (any other
    /// value given for it is replaced, as the API server does).
    pub fn new(name: Str, uid: Str, resource_version: u64, labels: &Labels) -> Self {
        let mut pairs: Vec<(Str, Str)> = labels
            .iter()
            .filter(|&(key, _)| &**key != NAME_LABEL)
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        pairs.push((NAME_LABEL.into(), name.clone()));
        Namespace {
            name,
            uid,
            resource_version,
            labels: Labels::new(pairs),
        }
    }
}

/// Every Namespace held, by name. A namespace with no object held (push mode without
/// Namespaces) has only its name label, as upstream's lookup falls back to.
pub type Namespaces = ByName<Namespace>;

impl Named for Namespace {
    fn name(&self) -> &Str {
        &self.name
    }

    fn uid(&self) -> &Str {
        &self.uid
    }

    fn resource_version(&self) -> u64 {
        self.resource_version
    }
}

impl ByName<Namespace> {
    /// The labels of namespace `name`.
    pub fn labels(&self, name: &Str) -> Labels {
        match self.get(name) {
            Some(namespace) => namespace.labels.clone(),
            None => Labels::new(vec![(NAME_LABEL.into(), name.clone())]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_label_is_always_the_name() {
        let given = Labels::new(vec![
            ("team".into(), "a".into()),
            (NAME_LABEL.into(), "other".into()),
        ]);
        let ns = Namespace::new("prod".into(), "u".into(), 1, &given);
        assert_eq!(ns.labels.get("team").map(|v| &**v), Some("a"));
        assert_eq!(ns.labels.get(NAME_LABEL).map(|v| &**v), Some("prod"));
    }

    #[test]
    fn unknown_namespaces_have_only_their_name_label() {
        let mut namespaces = Namespaces::default();
        let team = Labels::new(vec![("team".into(), "a".into())]);
        namespaces.insert(Namespace::new("prod".into(), "u".into(), 1, &team));
        assert_eq!(
            namespaces.labels(&"prod".into()).get("team").map(|v| &**v),
            Some("a")
        );
        let unknown = namespaces.labels(&"dev".into());
        assert_eq!(unknown.len(), 1);
        assert_eq!(unknown.get(NAME_LABEL).map(|v| &**v), Some("dev"));
    }
}
