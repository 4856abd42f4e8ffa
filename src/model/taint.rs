//! Taints and tolerations.

use triomphe::Arc;

use super::Str;

/// Taint effects as Kubernetes spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaintEffect {
    /// No new pod is placed unless it tolerates the taint.
    NoSchedule,
    /// The scheduler avoids the node; no filter reads it.
    PreferNoSchedule,
    /// No new pod is placed, and running pods that do not tolerate it are evicted.
    NoExecute,
}

impl TaintEffect {
    /// The effect named `value` in the API; `None` for any other text.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "NoSchedule" => Some(Self::NoSchedule),
            "PreferNoSchedule" => Some(Self::PreferNoSchedule),
            "NoExecute" => Some(Self::NoExecute),
            _ => None,
        }
    }

    /// The effect's name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoSchedule => "NoSchedule",
            Self::PreferNoSchedule => "PreferNoSchedule",
            Self::NoExecute => "NoExecute",
        }
    }
}

/// A node taint.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Taint {
    /// The taint's key.
    pub key: Str,
    /// The taint's value.
    pub value: Str,
    /// The taint's effect.
    pub effect: TaintEffect,
}

/// How a toleration compares its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TolerationOperator {
    /// Also what an empty operator means.
    Equal,
    /// Any value of the key.
    Exists,
}

/// A pod's toleration of taints.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Toleration {
    /// Empty key matches every key.
    pub key: Str,
    /// How `value` is compared.
    pub operator: TolerationOperator,
    /// The value an `Equal` toleration matches.
    pub value: Str,
    /// `None` matches every effect.
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// Upstream `Toleration.ToleratesTaint`.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if let Some(effect) = self.effect
            && effect != taint.effect
        {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            TolerationOperator::Exists => true,
            TolerationOperator::Equal => self.value == taint.value,
        }
    }
}

/// A pod's tolerations, one list shared by the pods that have the same (see
/// [`build::Memo`]): an API server gives nearly every pod the two DefaultTolerationSeconds
/// adds, and a list of each pod's own cost it 80–160 bytes. No tolerations allocate
/// nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tolerations(Option<Arc<[Toleration]>>);

impl Tolerations {
    /// The same tolerations and `toleration` after them, in a list of their own.
    pub fn push(&mut self, toleration: Toleration) {
        let mut tolerations = self.to_vec();
        tolerations.push(toleration);
        *self = tolerations.into();
    }

    /// Whether both are one shared list (or both empty).
    pub fn ptr_eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        }
    }
}

impl std::ops::Deref for Tolerations {
    type Target = [Toleration];

    fn deref(&self) -> &[Toleration] {
        self.0.as_deref().unwrap_or_default()
    }
}

impl From<Vec<Toleration>> for Tolerations {
    fn from(tolerations: Vec<Toleration>) -> Self {
        Self((!tolerations.is_empty()).then(|| tolerations.into()))
    }
}

impl FromIterator<Toleration> for Tolerations {
    fn from_iter<I: IntoIterator<Item = Toleration>>(tolerations: I) -> Self {
        tolerations.into_iter().collect::<Vec<_>>().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerations_pushed_to_a_shared_list_leave_it_as_it_was() {
        let toleration = |key: &str| Toleration {
            key: key.into(),
            operator: TolerationOperator::Exists,
            value: "".into(),
            effect: None,
        };
        let empty = Tolerations::default();
        assert!(empty.is_empty() && empty.ptr_eq(&Vec::new().into()));
        let shared: Tolerations = vec![toleration("a")].into();
        let mut pushed = shared.clone();
        assert!(pushed.ptr_eq(&shared));
        pushed.push(toleration("b"));
        assert!(!pushed.ptr_eq(&shared));
        assert_eq!(&*shared, &[toleration("a")]);
        assert_eq!(&*pushed, &[toleration("a"), toleration("b")]);
        assert_eq!(
            ["a", "b"]
                .map(toleration)
                .into_iter()
                .collect::<Tolerations>(),
            pushed
        );
    }
}
