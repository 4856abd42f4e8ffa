//! Typed PodGroups and Workloads into the builder's input.

use crate::model::build::{self, PodGroupInput, WorkloadInput};
use crate::model::{PodGroup, Workload};

use super::super::errors::ApiError;
use super::super::pb;
use super::Result;

/// A typed PodGroup; `field` is the request field (`upsert`).
pub fn pod_group(field: &str, g: &pb::PodGroup) -> Result<PodGroup> {
    let policy = g.scheduling_policy.as_ref();
    let mode = g.disruption_mode.as_ref();
    let input = PodGroupInput {
        namespace: &g.namespace,
        name: &g.name,
        uid: &g.uid,
        resource_version: g.resource_version,
        creation_timestamp: &g.creation_timestamp,
        basic: policy.is_some_and(|p| p.basic.is_some()),
        gang_min_count: policy.and_then(|p| p.gang.as_ref()).map(|g| g.min_count),
        disruption_single: mode.is_some_and(|m| m.single.is_some()),
        disruption_all: mode.is_some_and(|m| m.all.is_some()),
        priority_class_name: &g.priority_class_name,
        priority: g.priority,
        preemption_policy: &g.preemption_policy,
        parent: &g.parent_composite_pod_group_name,
        workload_ref: g
            .workload_ref
            .as_ref()
            .map(|r| (r.workload_name.as_str(), r.template_name.as_str())),
    };
    build::pod_group(&input).map_err(|e| ApiError::from_build(field, e))
}

/// A typed Workload; `field` is the request field (`upsert`).
pub fn workload(field: &str, w: &pb::Workload) -> Result<Workload> {
    let input = WorkloadInput {
        namespace: &w.namespace,
        name: &w.name,
        uid: &w.uid,
        resource_version: w.resource_version,
        pod_group_templates: w
            .pod_group_templates
            .iter()
            .map(|t| t.name.as_str())
            .collect(),
    };
    build::workload(&input).map_err(|e| ApiError::from_build(field, e))
}
