//! `simulate` with a PodGroup preemptor, through the library: the answer is the
//! `PreemptGroupResponse` JSON (the scenario files' PodGroups are read by the decoder;
//! here the groups and memberships are given to the loaded core directly).

use preemptd::app::AppConfig;
use preemptd::engine::{FeatureGates, KubernetesVersion};
use preemptd::model::{DisruptionMode, PodGroup, SchedulingPolicy};
use preemptd::simulate;
use serde_json::json;

fn group(name: &str, priority: i32, min_count: i32) -> PodGroup {
    PodGroup {
        namespace: "default".into(),
        name: name.into(),
        uid: format!("uid-{name}").into(),
        resource_version: 0,
        creation_time: None,
        policy: SchedulingPolicy::Gang { min_count },
        disruption_mode: DisruptionMode::All,
        priority_class_name: None,
        priority,
        priority_unset: false,
        preemption_policy: None,
        parent: None,
        workload: None,
    }
}

fn node(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
           "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110"}}})
}

fn pod(name: &str, priority: i32, node: Option<&str>) -> serde_json::Value {
    let mut spec = json!({"priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "8"}}}]});
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"namespace": "default", "name": name, "uid": format!("uid-{name}")},
           "spec": spec,
           "status": {"phase": if node.is_some() { "Running" } else { "Pending" }}})
}

#[test]
fn a_pod_group_preemptor_prints_the_preempt_group_response() {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [
        node("n1"), node("n2"), node("n3"),
        pod("a-0", 100, Some("n1")), pod("a-1", 100, Some("n3")),
        pod("t-0", 1000, None), pod("t-1", 1000, None),
    ]});
    let (objects, _) = simulate::read_objects(&list.to_string(), false).expect("list reads");
    let config = AppConfig {
        feature_gates: FeatureGates::parse(KubernetesVersion::V1_37, "GenericWorkload=true")
            .expect("gates"),
        ..AppConfig::default()
    };
    let app = simulate::load_cluster(objects, &config).expect("cluster loads");
    for (name, group_name) in [
        ("a-0", "inf"),
        ("a-1", "inf"),
        ("t-0", "train"),
        ("t-1", "train"),
    ] {
        let mut held = (*app.cache.get_pod_by_name("default", name).expect("held")).clone();
        held.details_mut().scheduling_group = Some(group_name.into());
        app.cache.upsert_pod(held).expect("member");
    }
    app.cache.upsert_pod_group(group("inf", 100, 2));

    let decision = simulate::decide_group(&app, group("train", 1000, 2), false).expect("decides");
    let rendered = preemptd::server::json::group_decision_json(&decision).expect("renders");
    let pod_ref =
        |name: &str| json!({"namespace": "default", "name": name, "uid": format!("uid-{name}")});
    assert_eq!(rendered["outcome"], json!("OUTCOME_PREEMPT"), "{rendered}");
    // n2 is free; t-1 needs n1 or n3: the inference gang goes whole, from both.
    assert_eq!(rendered["victims"], json!([pod_ref("a-0"), pod_ref("a-1")]));
    assert_eq!(
        rendered["nominations"],
        json!([{"pod": pod_ref("t-0"), "nodeName": "n1"}, {"pod": pod_ref("t-1"), "nodeName": "n2"}])
    );
    assert_eq!(rendered["pdbViolations"], json!(0));
    assert_eq!(rendered["nominatedPodsToClear"], json!([]));
    assert_eq!(rendered["kubernetesVersion"], json!("1.37"));

    // Nothing was recorded: deciding again answers the same.
    let again = simulate::decide_group(&app, group("train", 1000, 2), false).expect("decides");
    assert_eq!(
        preemptd::server::json::group_decision_json(&again).expect("renders"),
        rendered
    );
}
