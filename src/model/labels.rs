//! Label sets and label selectors with Kubernetes semantics.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

use triomphe::ThinArc;

use super::Str;

/// Label sets up to this size are searched by a scan rather than by bisection.
const LINEAR_LOOKUP_MAX: usize = 32;

/// The `(key, value)` pairs of a label set, sorted by key.
pub type LabelPairs = [(Str, Str)];

/// A label set, kept sorted by key for binary-search lookups. Immutable and cheap to
/// clone, so pods with equal labels can hold one copy. One pointer wide (the length
/// lives beside the pairs): every held pod has one.
#[derive(Clone)]
pub struct Labels(ThinArc<(), (Str, Str)>);

impl Default for Labels {
    /// The empty set, shared: objects start with it, so making one allocates nothing.
    fn default() -> Self {
        static EMPTY: std::sync::LazyLock<Labels> =
            std::sync::LazyLock::new(|| Labels::from_sorted(&[]));
        EMPTY.clone()
    }
}

impl std::fmt::Debug for Labels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Equality and hashing are those of the pairs, so a set of `Labels` can be searched
/// by `&LabelPairs` (interning).
impl PartialEq for Labels {
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || self.pairs() == other.pairs()
    }
}

impl Eq for Labels {}

impl Hash for Labels {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.pairs().hash(state);
    }
}

impl Borrow<LabelPairs> for Labels {
    fn borrow(&self) -> &LabelPairs {
        self.pairs()
    }
}

impl Labels {
    /// The labels of `pairs`.
    pub fn new(mut pairs: Vec<(Str, Str)>) -> Self {
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        pairs.dedup_by(|later, earlier| later.0 == earlier.0);
        Labels::from_sorted(&pairs)
    }

    fn from_sorted(pairs: &LabelPairs) -> Self {
        Labels(ThinArc::from_header_and_iter((), pairs.iter().cloned()))
    }

    /// The pairs, sorted by key.
    pub fn pairs(&self) -> &LabelPairs {
        &self.0.slice
    }

    /// Both hold one allocation (interning shared them).
    pub fn ptr_eq(&self, other: &Labels) -> bool {
        self.0.ptr() == other.0.ptr()
    }

    /// The address of the allocation: equal for sets that are one (see [`Labels::ptr_eq`]).
    pub fn addr(&self) -> usize {
        self.0.ptr() as usize
    }

    /// How many holders share this set.
    pub fn holders(&self) -> usize {
        ThinArc::strong_count(&self.0)
    }

    /// The value of label `key`.
    pub fn get(&self, key: &str) -> Option<&Str> {
        let pairs = self.pairs();
        if pairs.len() <= LINEAR_LOOKUP_MAX {
            // Equality tests lengths first, so most keys cost no byte comparison at all:
            // cheaper than ordering comparisons on sets of the size nodes and pods carry.
            return pairs.iter().find(|(k, _)| **k == *key).map(|(_, v)| v);
        }
        pairs
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &pairs[i].1)
    }

    /// Where the pairs live in memory, for prefetching.
    pub fn as_ptr(&self) -> *const (Str, Str) {
        self.pairs().as_ptr()
    }

    /// Label `key` is set.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// No label is set.
    pub fn is_empty(&self) -> bool {
        self.pairs().is_empty()
    }

    /// How many labels are set.
    pub fn len(&self) -> usize {
        self.pairs().len()
    }

    /// Each key and value, by key.
    pub fn iter(&self) -> impl Iterator<Item = (&Str, &Str)> {
        self.pairs().iter().map(|(k, v)| (k, v))
    }

    /// The same labels with every key and value replaced by an equal string from `share`
    /// (interning).
    pub fn with_shared_strings(&self, mut share: impl FnMut(&Str) -> Str) -> Labels {
        let pairs: Vec<(Str, Str)> = self
            .pairs()
            .iter()
            .map(|(k, v)| (share(k), share(v)))
            .collect();
        // Already made of the shared strings (a bulk load's memoized sets are): this set
        // itself, so its holders and the shared copy are one.
        let same = |a: &Str, b: &Str| triomphe::Arc::ptr_eq(a, b);
        if pairs
            .iter()
            .zip(self.pairs())
            .all(|((k, v), (hk, hv))| same(k, hk) && same(v, hv))
        {
            return self.clone();
        }
        Labels(ThinArc::from_header_and_iter((), pairs.into_iter()))
    }

    /// Every pair of `self` is present in `other` with the same value.
    pub fn is_subset_of(&self, other: &Labels) -> bool {
        self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl<K: Into<Str>, V: Into<Str>> FromIterator<(K, V)> for Labels {
    fn from_iter<T: IntoIterator<Item = (K, V)>>(iter: T) -> Self {
        Labels::new(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

/// The operator of a label selector requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// The label's value is one of `values`.
    In,
    /// The label is absent or its value is none of `values`.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
}

impl Operator {
    /// The operator named `value` in the API; `None` for any other text.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "In" => Some(Self::In),
            "NotIn" => Some(Self::NotIn),
            "Exists" => Some(Self::Exists),
            "DoesNotExist" => Some(Self::DoesNotExist),
            _ => None,
        }
    }

    /// The operator's name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::In => "In",
            Self::NotIn => "NotIn",
            Self::Exists => "Exists",
            Self::DoesNotExist => "DoesNotExist",
        }
    }
}

/// One requirement of a label selector (`matchExpressions`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    /// The label key.
    pub key: Str,
    /// How the label's value is compared.
    pub operator: Operator,
    /// The values compared against.
    pub values: Vec<Str>,
}

impl Requirement {
    fn is_valid(&self) -> bool {
        match self.operator {
            Operator::In | Operator::NotIn => !self.values.is_empty(),
            Operator::Exists | Operator::DoesNotExist => self.values.is_empty(),
        }
    }

    /// `labels` satisfy the requirement.
    pub fn matches(&self, labels: &Labels) -> bool {
        match self.operator {
            Operator::In => labels
                .get(&self.key)
                .is_some_and(|v| self.values.iter().any(|x| x == v)),
            Operator::NotIn => labels
                .get(&self.key)
                .is_none_or(|v| !self.values.iter().any(|x| x == v)),
            Operator::Exists => labels.contains_key(&self.key),
            Operator::DoesNotExist => !labels.contains_key(&self.key),
        }
    }
}

/// A `metav1.LabelSelector`. A missing selector is modelled by the caller as `None`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct LabelSelector {
    /// `matchLabels`.
    pub match_labels: Labels,
    /// `matchExpressions`.
    pub match_expressions: Vec<Requirement>,
}

impl LabelSelector {
    /// Selects every object (the `{}` selector).
    pub fn everything() -> Self {
        Self::default()
    }

    /// Selector with no requirements at all (matches everything).
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// In/NotIn need values, Exists/DoesNotExist take none; upstream refuses the selector
    /// otherwise.
    pub fn is_valid(&self) -> bool {
        self.match_expressions.iter().all(Requirement::is_valid)
    }

    /// `labels` satisfy the selector.
    pub fn matches(&self, labels: &Labels) -> bool {
        self.match_labels.is_subset_of(labels)
            && self.match_expressions.iter().all(|r| r.matches(labels))
    }

    /// Adds `key In (value)` for each pair (used for `matchLabelKeys`).
    pub fn with_labels(&self, extra: &[(Str, Str)]) -> Self {
        let mut out = self.clone();
        for (k, v) in extra {
            out.match_expressions.push(Requirement {
                key: k.clone(),
                operator: Operator::In,
                values: vec![v.clone()],
            });
        }
        out
    }
}

/// Matches a possibly-missing selector: missing matches nothing.
pub fn optional_matches(selector: Option<&LabelSelector>, labels: &Labels) -> bool {
    selector.is_some_and(|s| s.matches(labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs.iter().map(|(k, v)| (*k, *v)).collect()
    }

    #[test]
    fn lookup_is_by_key() {
        let l = labels(&[("b", "2"), ("a", "1")]);
        assert_eq!(l.get("a").map(|v| &**v), Some("1"));
        assert_eq!(l.get("b").map(|v| &**v), Some("2"));
        assert!(l.get("c").is_none());
    }

    #[test]
    fn a_set_of_shared_strings_is_its_own_shared_copy() {
        let set = labels(&[("app", "web"), ("tier", "front")]);
        // Every string shared as it is: the set itself comes back.
        let same = set.with_shared_strings(Str::clone);
        assert_eq!(same.addr(), set.addr());
        // A string replaced by another copy: a new set, equal, of the shared strings.
        let shared_web: Str = "web".into();
        let copy = set.with_shared_strings(|s| {
            if &**s == "web" {
                shared_web.clone()
            } else {
                s.clone()
            }
        });
        assert_ne!(copy.addr(), set.addr());
        assert_eq!(copy, set);
        assert!(triomphe::Arc::ptr_eq(copy.get("app").unwrap(), &shared_web));
    }

    #[test]
    fn operators_follow_kubernetes() {
        let l = labels(&[("app", "web")]);
        let req = |op, values: &[&str]| Requirement {
            key: "app".into(),
            operator: op,
            values: values.iter().map(|v| Str::from(*v)).collect(),
        };
        assert!(req(Operator::In, &["web", "db"]).matches(&l));
        assert!(!req(Operator::In, &["db"]).matches(&l));
        assert!(req(Operator::NotIn, &["db"]).matches(&l));
        assert!(req(Operator::NotIn, &["db"]).matches(&Labels::default()));
        assert!(req(Operator::Exists, &[]).matches(&l));
        assert!(req(Operator::DoesNotExist, &[]).matches(&Labels::default()));
        assert!(!req(Operator::In, &[]).is_valid());
    }

    #[test]
    fn empty_selector_matches_everything() {
        assert!(LabelSelector::everything().matches(&Labels::default()));
        assert!(!optional_matches(None, &labels(&[("a", "b")])));
    }
}
