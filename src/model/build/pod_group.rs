//! PodGroups and Workloads (scheduling.k8s.io/v1beta1), validated as the API server and
//! the workload controllers' builder validate them.

use super::super::{DisruptionMode, PodGroup, SchedulingPolicy, Workload};
use super::path::OBJECT;
use super::{BuildError, rules};

/// A PodGroup (`metadata`, `spec`).
#[derive(Debug, Default)]
pub struct PodGroupInput<'a> {
    /// `metadata.namespace`.
    pub namespace: &'a str,
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.uid`.
    pub uid: &'a str,
    /// `metadata.resourceVersion`, as a number.
    pub resource_version: u64,
    /// `metadata.creationTimestamp`.
    pub creation_timestamp: &'a str,
    /// `spec.schedulingPolicy.basic` is set.
    pub basic: bool,
    /// `spec.schedulingPolicy.gang`, when set: its `minCount` (0 when missing).
    pub gang_min_count: Option<i32>,
    /// `spec.disruptionMode.single` is set.
    pub disruption_single: bool,
    /// `spec.disruptionMode.all` is set.
    pub disruption_all: bool,
    /// `spec.priorityClassName`.
    pub priority_class_name: &'a str,
    /// `spec.priority`.
    pub priority: Option<i32>,
    /// `spec.preemptionPolicy`.
    pub preemption_policy: &'a str,
    /// `spec.parentCompositePodGroupName`.
    pub parent: &'a str,
    /// `spec.workloadRef`, when set: `workloadName`, `templateName`.
    pub workload_ref: Option<(&'a str, &'a str)>,
}

/// A Workload (`metadata`, the names of `spec.podGroupTemplates`).
#[derive(Debug, Default)]
pub struct WorkloadInput<'a> {
    /// `metadata.namespace`.
    pub namespace: &'a str,
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.uid`.
    pub uid: &'a str,
    /// `metadata.resourceVersion`, as a number.
    pub resource_version: u64,
    /// `spec.podGroupTemplates[*].name`.
    pub pod_group_templates: Vec<&'a str>,
}

/// The group `g` describes. Its priority is `spec.priority`, or 0 until admitted (see
/// [`PodGroup::admit`]).
pub fn pod_group(g: &PodGroupInput<'_>) -> Result<PodGroup, BuildError> {
    OBJECT
        .field("metadata.name")
        .check(rules::required(g.name))?;
    let spec = OBJECT.field("spec");
    let policy = match (g.basic, g.gang_min_count) {
        (true, None) => SchedulingPolicy::Basic,
        (false, Some(min_count)) => {
            if min_count < 1 {
                return Err(spec
                    .field("schedulingPolicy.gang.minCount")
                    .error("must be greater than or equal to 1"));
            }
            SchedulingPolicy::Gang { min_count }
        }
        (true, Some(_)) => {
            return Err(spec
                .field("schedulingPolicy")
                .error("must specify exactly one of: `basic`, `gang`"));
        }
        (false, None) => {
            return Err(spec
                .field("schedulingPolicy")
                .error("must specify one of: `basic`, `gang`"));
        }
    };
    let disruption_mode = match (g.disruption_single, g.disruption_all) {
        (true, true) => {
            return Err(spec
                .field("disruptionMode")
                .error("must specify exactly one of: `single`, `all`"));
        }
        (_, true) => DisruptionMode::All,
        // `{}` and unset default to single.
        (_, false) => DisruptionMode::Single,
    };
    if disruption_mode == DisruptionMode::All && policy == SchedulingPolicy::Basic {
        return Err(spec
            .field("disruptionMode")
            .error("the disruptionMode `all` is not supported with the basic scheduling policy"));
    }
    let preemption_policy = if g.preemption_policy.is_empty() {
        None
    } else {
        Some(
            spec.field("preemptionPolicy")
                .check(rules::preemption_policy(g.preemption_policy))?,
        )
    };
    let workload = match g.workload_ref {
        None => None,
        Some((workload_name, template_name)) => {
            let reference = spec.field("workloadRef");
            reference
                .field("workloadName")
                .check(rules::required(workload_name))?;
            reference
                .field("templateName")
                .check(rules::required(template_name))?;
            Some((workload_name.into(), template_name.into()))
        }
    };
    if !g.parent.is_empty() && workload.is_none() {
        return Err(spec
            .field("workloadRef")
            .error("must be set when parentCompositePodGroupName is set"));
    }
    let creation_time = OBJECT
        .field("metadata.creationTimestamp")
        .check(rules::timestamp(g.creation_timestamp))?;
    let namespace = rules::namespace_or_default(g.namespace);
    Ok(PodGroup {
        namespace: namespace.into(),
        name: g.name.into(),
        uid: uid_or_key(g.uid, namespace, g.name).into(),
        resource_version: g.resource_version,
        creation_time,
        policy,
        disruption_mode,
        priority_class_name: (!g.priority_class_name.is_empty())
            .then(|| g.priority_class_name.into()),
        priority: g.priority.unwrap_or(0),
        priority_unset: g.priority.is_none(),
        preemption_policy,
        parent: (!g.parent.is_empty()).then(|| g.parent.into()),
        workload,
    })
}

/// The Workload `w` describes: its name and its templates' names, each required and
/// each once.
pub fn workload(w: &WorkloadInput<'_>) -> Result<Workload, BuildError> {
    OBJECT
        .field("metadata.name")
        .check(rules::required(w.name))?;
    let templates = OBJECT.field("spec.podGroupTemplates");
    for (i, &name) in w.pod_group_templates.iter().enumerate() {
        let path = templates.index(i);
        let name_path = path.field("name");
        name_path.check(rules::required(name))?;
        if w.pod_group_templates[..i].contains(&name) {
            return Err(name_path.error(format!("duplicate value {name:?}")));
        }
    }
    let namespace = rules::namespace_or_default(w.namespace);
    Ok(Workload {
        namespace: namespace.into(),
        name: w.name.into(),
        uid: uid_or_key(w.uid, namespace, w.name).into(),
        resource_version: w.resource_version,
        pod_group_templates: w.pod_group_templates.iter().map(|&n| n.into()).collect(),
    })
}

fn uid_or_key(uid: &str, namespace: &str, name: &str) -> String {
    if uid.is_empty() {
        rules::namespaced_uid(namespace, name)
    } else {
        uid.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PreemptionPolicy;

    fn gang(min_count: i32) -> PodGroupInput<'static> {
        PodGroupInput {
            namespace: "team",
            name: "train",
            gang_min_count: Some(min_count),
            ..PodGroupInput::default()
        }
    }

    fn refused(input: &PodGroupInput<'_>) -> String {
        pod_group(input).expect_err("refused").to_string()
    }

    #[test]
    fn a_gang_group_keeps_its_policy_mode_priority_and_references() {
        let input = PodGroupInput {
            uid: "u1",
            resource_version: 7,
            creation_timestamp: "2026-01-01T00:00:00Z",
            disruption_all: true,
            priority_class_name: "high",
            preemption_policy: "Never",
            parent: "parent",
            workload_ref: Some(("job", "workers")),
            ..gang(4)
        };
        let group = pod_group(&input).expect("valid");
        assert_eq!(group.policy, SchedulingPolicy::Gang { min_count: 4 });
        assert_eq!(group.disruption_mode, DisruptionMode::All);
        assert_eq!(group.priority_class_name.as_deref(), Some("high"));
        assert!(group.priority_unset);
        assert_eq!(group.preemption_policy, Some(PreemptionPolicy::Never));
        assert_eq!(group.parent.as_deref(), Some("parent"));
        assert_eq!(
            group.workload,
            Some(("job".into(), "workers".into())),
            "workloadRef"
        );
        assert_eq!(group.creation_time, Some(1_767_225_600_000_000_000));
        assert_eq!((&*group.uid, group.resource_version), ("u1", 7));
    }

    #[test]
    fn a_basic_group_defaults_to_single_and_the_namespace_and_uid_are_defaulted() {
        let input = PodGroupInput {
            name: "web",
            basic: true,
            priority: Some(5),
            ..PodGroupInput::default()
        };
        let group = pod_group(&input).expect("valid");
        assert_eq!(group.policy, SchedulingPolicy::Basic);
        assert_eq!(group.disruption_mode, DisruptionMode::Single);
        assert_eq!((&*group.namespace, &*group.uid), ("default", "default/web"));
        assert_eq!((group.priority, group.priority_unset), (5, false));
        assert_eq!(group.preemption_policy, None);
    }

    #[test]
    fn every_invalid_field_is_named_by_its_path() {
        let cases: Vec<(PodGroupInput<'_>, &str)> = vec![
            (
                PodGroupInput {
                    name: "",
                    ..gang(1)
                },
                "metadata.name: must not be empty",
            ),
            (
                PodGroupInput {
                    basic: true,
                    ..gang(1)
                },
                "spec.schedulingPolicy: must specify exactly one of: `basic`, `gang`",
            ),
            (
                PodGroupInput {
                    gang_min_count: None,
                    ..gang(1)
                },
                "spec.schedulingPolicy: must specify one of: `basic`, `gang`",
            ),
            (
                gang(0),
                "spec.schedulingPolicy.gang.minCount: must be greater than or equal to 1",
            ),
            (
                PodGroupInput {
                    disruption_single: true,
                    disruption_all: true,
                    ..gang(2)
                },
                "spec.disruptionMode: must specify exactly one of: `single`, `all`",
            ),
            (
                PodGroupInput {
                    basic: true,
                    gang_min_count: None,
                    disruption_all: true,
                    ..gang(2)
                },
                "spec.disruptionMode: the disruptionMode `all` is not supported with the basic scheduling policy",
            ),
            (
                PodGroupInput {
                    preemption_policy: "Sometimes",
                    ..gang(2)
                },
                "spec.preemptionPolicy: unsupported value \"Sometimes\": supported values are \"PreemptLowerPriority\", \"Never\"",
            ),
            (
                PodGroupInput {
                    workload_ref: Some(("", "t")),
                    ..gang(2)
                },
                "spec.workloadRef.workloadName: must not be empty",
            ),
            (
                PodGroupInput {
                    workload_ref: Some(("w", "")),
                    ..gang(2)
                },
                "spec.workloadRef.templateName: must not be empty",
            ),
            (
                PodGroupInput {
                    parent: "p",
                    ..gang(2)
                },
                "spec.workloadRef: must be set when parentCompositePodGroupName is set",
            ),
            (
                PodGroupInput {
                    creation_timestamp: "yesterday",
                    ..gang(2)
                },
                "metadata.creationTimestamp: invalid RFC 3339 timestamp \"yesterday\"",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(refused(&input), expected);
        }
    }

    #[test]
    fn workload_templates_are_named_once_each() {
        let valid = WorkloadInput {
            namespace: "team",
            name: "job",
            pod_group_templates: vec!["leader", "workers"],
            ..WorkloadInput::default()
        };
        let built = workload(&valid).expect("valid");
        assert_eq!(
            built.pod_group_templates,
            ["leader".into(), "workers".into()]
        );
        assert_eq!(&*built.uid, "team/job");
        let unnamed = WorkloadInput {
            name: "",
            ..WorkloadInput::default()
        };
        assert_eq!(
            workload(&unnamed).expect_err("no name").to_string(),
            "metadata.name: must not be empty"
        );
        let empty_template = WorkloadInput {
            pod_group_templates: vec!["a", ""],
            ..valid
        };
        assert_eq!(
            workload(&empty_template).expect_err("unnamed").to_string(),
            "spec.podGroupTemplates[1].name: must not be empty"
        );
        let twice = WorkloadInput {
            name: "job",
            pod_group_templates: vec!["a", "b", "a"],
            ..WorkloadInput::default()
        };
        assert_eq!(
            workload(&twice).expect_err("duplicate").to_string(),
            "spec.podGroupTemplates[2].name: duplicate value \"a\""
        );
    }
}
