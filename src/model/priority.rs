//! PriorityClasses and the priority a pod gets from them, as the Priority admission plugin
//! sets it: `spec.priority` when present; else the value of the class named by
//! `spec.priorityClassName`; else that of the global default class (the lowest value when
//! several are marked); else 0. `preemptionPolicy` comes from the class when the pod sets
//! none. The two built-in classes always exist.

use super::named::{ByName, Named};
use super::{PreemptionPolicy, Str};

/// A scheduling.k8s.io/v1 PriorityClass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorityClass {
    /// The class's name.
    pub name: Str,
    /// The class's uid.
    pub uid: Str,
    /// The API server's resourceVersion, as a number.
    pub resource_version: u64,
    /// The priority of pods of this class.
    pub value: i32,
    /// This class is the default of pods that name none.
    pub global_default: bool,
    /// `None` when the class sets none (pods then default to PreemptLowerPriority).
    pub preemption_policy: Option<PreemptionPolicy>,
}

/// The classes every cluster has, as the API server creates them.
pub const BUILT_IN: [(&str, i32); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

/// What a pod asks of admission: the fields it set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriorityRequest<'a> {
    /// The pod's `spec.priority`, if set.
    pub priority: Option<i32>,
    /// Empty: the global default class, if any.
    pub class_name: &'a str,
    /// The pod's `spec.preemptionPolicy`, if set.
    pub preemption_policy: Option<PreemptionPolicy>,
}

/// A pod names a class that does not exist (admission would refuse it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no PriorityClass with name {0:?} was found")]
pub struct UnknownPriorityClass(pub String);

/// Every PriorityClass held, by name.
pub type PriorityClasses = ByName<PriorityClass>;

impl Named for PriorityClass {
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

impl ByName<PriorityClass> {
    /// The value and policy of the class `name`: a held class, else a built-in one.
    fn class(&self, name: &str) -> Option<(i32, Option<PreemptionPolicy>)> {
        if let Some(class) = self.get(name) {
            return Some((class.value, class.preemption_policy));
        }
        BUILT_IN
            .iter()
            .find(|(built_in, _)| *built_in == name)
            .map(|&(_, value)| (value, None))
    }

    /// The global default class: the lowest value among those marked, as admission picks.
    fn global_default(&self) -> Option<(i32, Option<PreemptionPolicy>)> {
        self.values()
            .filter(|c| c.global_default)
            .min_by_key(|c| (c.value, c.name.clone()))
            .map(|c| (c.value, c.preemption_policy))
    }

    /// The priority and preemption policy admission gives a pod that asks `request`.
    /// A pod that carries its priority keeps it even when its class is gone (it was
    /// admitted when the class existed); one without names an existing class or none.
    pub fn resolve(
        &self,
        request: PriorityRequest<'_>,
    ) -> Result<(i32, PreemptionPolicy), UnknownPriorityClass> {
        let class = if request.class_name.is_empty() {
            self.global_default()
        } else {
            match self.class(request.class_name) {
                Some(class) => Some(class),
                None if request.priority.is_some() => None,
                None => return Err(UnknownPriorityClass(request.class_name.to_string())),
            }
        };
        let priority = request
            .priority
            .or(class.map(|(value, _)| value))
            .unwrap_or(0);
        let policy = request
            .preemption_policy
            .or(class.and_then(|(_, policy)| policy))
            .unwrap_or(PreemptionPolicy::PreemptLowerPriority);
        Ok((priority, policy))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, value: i32, global_default: bool) -> PriorityClass {
        PriorityClass {
            name: name.into(),
            uid: name.into(),
            resource_version: 1,
            value,
            global_default,
            preemption_policy: None,
        }
    }

    fn ask(priority: Option<i32>, class_name: &str) -> PriorityRequest<'_> {
        PriorityRequest {
            priority,
            class_name,
            preemption_policy: None,
        }
    }

    #[test]
    fn spec_priority_wins_then_the_named_class_then_the_default_then_zero() {
        let mut classes = PriorityClasses::default();
        assert_eq!(
            classes.resolve(ask(None, "")),
            Ok((0, PreemptionPolicy::PreemptLowerPriority))
        );
        classes.insert(class("high", 1000, false));
        classes.insert(class("default", 10, true));
        assert_eq!(classes.resolve(ask(Some(7), "high")).unwrap().0, 7);
        assert_eq!(classes.resolve(ask(None, "high")).unwrap().0, 1000);
        assert_eq!(classes.resolve(ask(None, "")).unwrap().0, 10);
        assert_eq!(classes.resolve(ask(Some(3), "")).unwrap().0, 3);
    }

    #[test]
    fn the_lowest_of_several_global_defaults_is_taken() {
        let mut classes = PriorityClasses::default();
        classes.insert(class("a", 500, true));
        classes.insert(class("b", 50, true));
        classes.insert(class("c", 5, false));
        assert_eq!(classes.resolve(ask(None, "")).unwrap().0, 50);
    }

    #[test]
    fn built_in_classes_always_exist_and_unknown_ones_are_refused_unless_admitted() {
        let classes = PriorityClasses::default();
        assert_eq!(
            classes
                .resolve(ask(None, "system-node-critical"))
                .unwrap()
                .0,
            2_000_001_000
        );
        assert_eq!(
            classes
                .resolve(ask(None, "system-cluster-critical"))
                .unwrap()
                .0,
            2_000_000_000
        );
        assert_eq!(
            classes.resolve(ask(None, "missing")),
            Err(UnknownPriorityClass("missing".into()))
        );
        // An admitted pod keeps its priority after its class is deleted.
        assert_eq!(classes.resolve(ask(Some(42), "missing")).unwrap().0, 42);
    }

    #[test]
    fn preemption_policy_comes_from_the_class_when_the_pod_sets_none() {
        let mut classes = PriorityClasses::default();
        let mut never = class("never", 100, false);
        never.preemption_policy = Some(PreemptionPolicy::Never);
        classes.insert(never);
        assert_eq!(
            classes.resolve(ask(None, "never")).unwrap().1,
            PreemptionPolicy::Never
        );
        let explicit = PriorityRequest {
            priority: None,
            class_name: "never",
            preemption_policy: Some(PreemptionPolicy::PreemptLowerPriority),
        };
        assert_eq!(
            classes.resolve(explicit).unwrap().1,
            PreemptionPolicy::PreemptLowerPriority
        );
    }

    #[test]
    fn a_held_class_shadows_a_built_in_of_the_same_name_and_removal_restores_it() {
        let mut classes = PriorityClasses::default();
        classes.insert(class("system-node-critical", 1, false));
        assert_eq!(
            classes
                .resolve(ask(None, "system-node-critical"))
                .unwrap()
                .0,
            1
        );
        classes.remove("system-node-critical");
        assert_eq!(
            classes
                .resolve(ask(None, "system-node-critical"))
                .unwrap()
                .0,
            2_000_001_000
        );
    }
}
