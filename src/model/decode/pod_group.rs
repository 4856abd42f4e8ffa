//! PodGroups and Workloads (scheduling.k8s.io/v1beta1, as v1.37 serves them).

use super::super::build::{self, PodGroupInput, WorkloadInput};
use super::super::{PodGroup, Workload};
use super::{Cur, KIND_POD_GROUP, KIND_WORKLOAD, Result, built, check_type, metadata};

/// The group-version both kinds are served at.
pub const SCHEDULING_V1BETA1: &str = "scheduling.k8s.io/v1beta1";

pub(super) fn pod_group_at(cur: &Cur<'_, '_>) -> Result<PodGroup> {
    cur.require_object()?;
    check_type(cur, KIND_POD_GROUP, &[SCHEDULING_V1BETA1])?;
    let meta = metadata::<0>(cur)?;
    let spec = cur.get("spec")?;
    spec.object()?;
    let policy = spec.get("schedulingPolicy")?;
    let gang = policy.get("gang")?;
    let mode = spec.get("disruptionMode")?;
    let workload_ref = spec.get("workloadRef")?;
    let input = PodGroupInput {
        namespace: meta.namespace,
        name: meta.name,
        uid: meta.uid,
        resource_version: meta.resource_version,
        creation_timestamp: cur.get("metadata")?.get("creationTimestamp")?.string()?,
        basic: policy.get("basic")?.object()?.is_some(),
        gang_min_count: match gang.object()? {
            None => None,
            Some(_) => Some(gang.get("minCount")?.int32()?.unwrap_or(0)),
        },
        disruption_single: mode.get("single")?.object()?.is_some(),
        disruption_all: mode.get("all")?.object()?.is_some(),
        priority_class_name: spec.get("priorityClassName")?.string()?,
        priority: spec.get("priority")?.int32()?,
        preemption_policy: spec.get("preemptionPolicy")?.string()?,
        parent: spec.get("parentCompositePodGroupName")?.string()?,
        workload_ref: match workload_ref.object()? {
            None => None,
            Some(_) => Some((
                workload_ref.get("workloadName")?.string()?,
                workload_ref.get("templateName")?.string()?,
            )),
        },
    };
    built(cur, build::pod_group(&input))
}

pub(super) fn workload_at(cur: &Cur<'_, '_>) -> Result<Workload> {
    cur.require_object()?;
    check_type(cur, KIND_WORKLOAD, &[SCHEDULING_V1BETA1])?;
    let meta = metadata::<0>(cur)?;
    let spec = cur.get("spec")?;
    let templates = spec.get("podGroupTemplates")?;
    let input = WorkloadInput {
        namespace: meta.namespace,
        name: meta.name,
        uid: meta.uid,
        resource_version: meta.resource_version,
        pod_group_templates: templates
            .elements()?
            .map(|template| {
                template.require_object()?;
                template.get("name")?.string()
            })
            .collect::<Result<_>>()?,
    };
    built(cur, build::workload(&input))
}
