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

#[cfg(test)]
mod tests {
    use super::super::super::messages::{pod_group_message, workload_message};
    use super::*;
    use crate::model::decode;

    #[test]
    fn typed_groups_and_workloads_mean_what_their_json_means_and_round_trip() {
        let json = serde_json::json!({
            "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": "ml", "uid": "g-1",
                         "resourceVersion": "9", "creationTimestamp": "2026-03-01T10:00:00Z"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 8}},
                     "disruptionMode": {"all": {}}, "priorityClassName": "training",
                     "preemptionPolicy": "Never",
                     "workloadRef": {"workloadName": "job", "templateName": "workers"}}
        });
        let from_json = decode::decode_pod_group(&json).expect("json");
        let typed = pod_group_message(&from_json);
        assert_eq!(pod_group("upsert", &typed).expect("typed"), from_json);
        let mut admitted = from_json.clone();
        (admitted.priority, admitted.priority_unset) = (100, false);
        assert_eq!(
            pod_group("upsert", &pod_group_message(&admitted)).expect("typed"),
            admitted
        );
        let workload = decode::decode_workload(&serde_json::json!({
            "kind": "Workload", "metadata": {"name": "job", "namespace": "ml"},
            "spec": {"podGroupTemplates": [{"name": "leader"}, {"name": "workers"}]}
        }))
        .expect("json");
        assert_eq!(
            super::workload("upsert", &workload_message(&workload)).expect("typed"),
            workload
        );
        let mut unset = typed.clone();
        unset.scheduling_policy = None;
        let error = pod_group("upsert", &unset).expect_err("no policy");
        assert!(
            error.to_string().contains("upsert.spec.schedulingPolicy"),
            "{error}"
        );
    }
}
