use super::*;
use crate::model::build::{is_label_value, is_qualified_name};
use crate::model::{
    HostPort, InclusionPolicy, LabelSelector, Labels, NodeSelectorOperator, PodPhase,
    PreemptionPolicy, Protocol, Str, Taint, TaintEffect, TolerationOperator, WhenUnsatisfiable,
};
use serde_json::json;

fn err_of<T: std::fmt::Debug>(r: Result<T>) -> String {
    r.expect_err("expected an error").to_string()
}

fn conformance_files() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut files = Vec::new();
    for dir in [root.clone(), root.join("random")] {
        for entry in std::fs::read_dir(&dir).expect("conformance dir") {
            let path = entry.expect("dir entry").path();
            if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn decodes_every_conformance_scenario() {
    let files = conformance_files();
    assert!(files.len() >= 100, "found only {} files", files.len());
    let (mut nodes, mut pods, mut pdbs) = (0, 0, 0);
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read");
        let doc = parse_document(&text).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let cluster = decode_list(&doc["cluster"]).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let preemptor = decode_pod(&doc["preemptor"]).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        assert!(!preemptor.name().is_empty());
        assert_eq!(
            cluster.len(),
            doc["cluster"]["items"].as_array().map_or(0, Vec::len)
        );
        for object in &cluster {
            match object {
                Object::Node(n) => {
                    nodes += 1;
                    assert!(n.allocatable.pods > 0, "{file:?}: {}", n.name);
                }
                Object::Pod(_) => pods += 1,
                Object::Pdb(p) => {
                    pdbs += 1;
                    assert!(p.selector.as_ref().is_some_and(LabelSelector::is_valid));
                }
                Object::PriorityClass(_)
                | Object::Namespace(_)
                | Object::PodGroup(_)
                | Object::Workload(_) => {}
            }
        }
    }
    assert!(nodes > 0 && pods > 0 && pdbs > 0);
}

#[test]
fn spot_checks_a_scenario() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let text = std::fs::read_to_string(
        root.join("upstream-dryrun-fits-both-nodes-when-lower-priority-preempted.json"),
    )
    .expect("read");
    let doc = parse_document(&text).expect("parse");
    let cluster = decode_list(&doc["cluster"]).expect("cluster");
    let Object::Node(node) = &cluster[0] else {
        panic!("first item is a node")
    };
    assert_eq!(&*node.name, "node1");
    assert_eq!(&*node.uid, "node1");
    assert_eq!(node.allocatable.milli_cpu, 500);
    assert_eq!(node.allocatable.memory, 500);
    assert_eq!(node.allocatable.pods, 32);
    assert_eq!(
        node.labels.get("kubernetes.io/hostname").map(|v| &**v),
        Some("node1")
    );
    let Object::Pod(p1) = &cluster[2] else {
        panic!("third item is a pod")
    };
    assert_eq!(
        (&*p1.namespace, p1.name(), p1.uid()),
        ("default", "p1", "p1")
    );
    assert_eq!(p1.node_name.as_deref(), Some("node1"));
    assert_eq!(p1.priority, 100);
    assert_eq!(p1.phase, PodPhase::Running);
    assert_eq!(p1.requests().milli_cpu, 300);
    assert_eq!(p1.requests().memory, 300);
    let preemptor = decode_pod(&doc["preemptor"]).expect("preemptor");
    assert_eq!(preemptor.priority, 1000);
    assert_eq!(preemptor.node_name, None);
    assert_eq!(preemptor.start_time.get(), None);
    assert_eq!(
        preemptor.preemption_policy,
        PreemptionPolicy::PreemptLowerPriority
    );
}

#[test]
fn spot_checks_taints_ports_pdbs_and_terminating() {
    let (mut taints, mut ports, mut disrupted, mut terminating, mut conditions) = (0, 0, 0, 0, 0);
    for file in conformance_files() {
        let text = std::fs::read_to_string(&file).expect("read");
        let doc = parse_document(&text).expect("parse");
        for object in decode_list(&doc["cluster"]).expect("cluster") {
            match object {
                Object::Node(n) => taints += n.taints.len(),
                Object::Pod(p) => {
                    ports += p.details.host_ports.len();
                    terminating += usize::from(p.terminating);
                    conditions += usize::from(p.terminating_by_preemption());
                }
                Object::Pdb(p) => disrupted += p.disrupted_pods.len(),
                Object::PriorityClass(_)
                | Object::Namespace(_)
                | Object::PodGroup(_)
                | Object::Workload(_) => {}
            }
        }
    }
    assert!(taints > 0 && ports > 0 && disrupted > 0 && terminating > 0 && conditions > 0);
}

const YAML_POD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: web-0
  namespace: shop
  resourceVersion: "42"
  labels:
    app: web
    "tier": frontend
spec:
  priority: 1000
  preemptionPolicy: Never
  schedulerName: custom
  containers:
    - name: app
      image: nginx
      resources:
        requests:
          cpu: 250m
          memory: 64Mi
        limits:
          cpu: 1
          nvidia.com/gpu: 2
      ports:
        - containerPort: 80
          hostPort: 8080
        - containerPort: 81
          hostPort: 8081
          protocol: UDP
          hostIP: 10.0.0.1
        - containerPort: 9090
  tolerations:
    - key: dedicated
      operator: Exists
    - key: gpu
      value: "true"
      effect: NoSchedule
      tolerationSeconds: 30
  nodeSelector:
    disk: ssd
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions:
              - key: zone
                operator: In
                values: [a, b]
            matchFields:
              - key: metadata.name
                operator: NotIn
                values: [n1]
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 1
          preference: {}
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector:
            matchLabels: {app: web}
          topologyKey: kubernetes.io/hostname
        - labelSelector: {}
          namespaces: [other]
          namespaceSelector: {}
          topologyKey: zone
        - topologyKey: zone
  topologySpreadConstraints:
    - maxSkew: 2
      topologyKey: zone
      whenUnsatisfiable: DoNotSchedule
      labelSelector:
        matchExpressions:
          - key: app
            operator: Exists
      minDomains: 3
      matchLabelKeys: [pod-template-hash]
      nodeTaintsPolicy: Honor
status:
  phase: Running
  startTime: 2024-05-01T10:00:00.5Z
  nominatedNodeName: ""
  conditions:
    - type: Ready
      status: "True"
"#;

#[test]
fn decodes_a_yaml_pod() {
    let value = parse_document(YAML_POD).expect("yaml");
    let pod = decode_pod(&value).expect("pod");
    assert_eq!(
        (&*pod.namespace, pod.name(), pod.uid()),
        ("shop", "web-0", "shop/web-0")
    );
    assert_eq!(pod.resource_version, 42);
    assert_eq!(pod.labels.get("tier").map(|v| &**v), Some("frontend"));
    assert_eq!(pod.priority, 1000);
    assert_eq!(pod.preemption_policy, PreemptionPolicy::Never);
    assert_eq!(pod.scheduler_name(), "custom");
    assert_eq!(pod.requests().milli_cpu, 250);
    assert_eq!(pod.requests().memory, 64 << 20);
    assert_eq!(pod.requests().scalar("nvidia.com/gpu"), 2);
    assert_eq!(
        pod.details.host_ports,
        vec![
            HostPort {
                ip: "0.0.0.0".into(),
                protocol: Protocol::Tcp,
                port: 8080
            },
            HostPort {
                ip: "10.0.0.1".into(),
                protocol: Protocol::Udp,
                port: 8081
            },
        ]
    );
    assert_eq!(pod.details.tolerations.len(), 2);
    assert_eq!(
        pod.details.tolerations[0].operator,
        TolerationOperator::Exists
    );
    assert_eq!(pod.details.tolerations[0].effect, None);
    assert_eq!(
        pod.details.tolerations[1].operator,
        TolerationOperator::Equal
    );
    assert_eq!(&*pod.details.tolerations[1].value, "true");
    assert_eq!(
        pod.details.tolerations[1].effect,
        Some(TaintEffect::NoSchedule)
    );
    assert_eq!(
        pod.details.node_selector.get("disk").map(|v| &**v),
        Some("ssd")
    );
    let affinity = pod
        .details
        .required_node_affinity
        .as_ref()
        .expect("node affinity");
    assert_eq!(affinity.terms.len(), 1);
    assert_eq!(
        affinity.terms[0].match_expressions[0].operator,
        NodeSelectorOperator::In
    );
    assert_eq!(affinity.terms[0].match_expressions[0].values.len(), 2);
    assert_eq!(&*affinity.terms[0].match_fields[0].key, "metadata.name");
    assert!(pod.details.pod_affinity.is_empty());
    assert_eq!(pod.details.pod_anti_affinity.len(), 3);
    let anti = &pod.details.pod_anti_affinity;
    assert_eq!(&*anti[0].topology_key, "kubernetes.io/hostname");
    assert!(anti[0].namespace_selector.is_none());
    assert_eq!(anti[1].label_selector, Some(LabelSelector::everything()));
    assert_eq!(
        anti[1].namespace_selector,
        Some(LabelSelector::everything())
    );
    assert_eq!(anti[1].namespaces, vec![Str::from("other")]);
    assert_eq!(anti[2].label_selector, None);
    let spread = &pod.details.topology_spread[0];
    assert_eq!(spread.max_skew, 2);
    assert_eq!(spread.when_unsatisfiable, WhenUnsatisfiable::DoNotSchedule);
    assert_eq!(spread.min_domains, Some(3));
    assert_eq!(
        spread.match_label_keys,
        vec![Str::from("pod-template-hash")]
    );
    assert_eq!(spread.node_affinity_policy, InclusionPolicy::Honor);
    assert_eq!(spread.node_taints_policy, InclusionPolicy::Honor);
    assert_eq!(
        spread
            .label_selector
            .as_ref()
            .map(|s| s.match_expressions.len()),
        Some(1)
    );
    assert_eq!(pod.phase, PodPhase::Running);
    assert_eq!(pod.start_time.get(), Some(1_714_557_600_500_000_000));
    assert_eq!(pod.nominated_node_name, None);
    assert_eq!(pod.details.conditions.len(), 1);
    assert!(!pod.terminating);
}

#[test]
fn json_and_yaml_agree() {
    let yaml = parse_document(YAML_POD).expect("yaml");
    let json_text = serde_json::to_string_pretty(&yaml).expect("json");
    assert_eq!(parse_document(&json_text).expect("json"), yaml);
    // YAML flow style that is not JSON still parses.
    let flow = parse_document("{kind: Node, metadata: {name: n1}}").expect("flow");
    assert!(matches!(decode_object(&flow), Ok(Object::Node(n)) if &*n.name == "n1"));
}

#[test]
fn parse_errors_name_line_and_column() {
    let e = parse_document("{\n  \"kind\": \"Pod\",\n  \"metadata\": {\"name\": }\n}")
        .expect_err("bad json");
    assert!(e.path.is_empty());
    assert!(
        e.message.starts_with("invalid JSON at line 3 column"),
        "{}",
        e.message
    );
    let e = parse_document("kind: Pod\nmetadata:\n  name: [a\n").expect_err("bad yaml");
    assert!(e.message.starts_with("invalid YAML"), "{}", e.message);
    assert!(e.message.contains("line"), "{}", e.message);
    assert_eq!(err_of(parse_document("  \n")), "empty document");
    assert!(parse_document("a: 1\n---\nb: 2\n").is_err());
}

fn pod_with(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
}

fn pod_err(spec: Value) -> String {
    err_of(decode_pod(&pod_with(spec)))
}

#[test]
fn error_paths_and_messages() {
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "12x"}}}]}),
            r#"spec.containers[0].resources.requests[cpu]: invalid quantity "12x""#,
        ),
        (
            json!({"containers": [{"name": "a", "resources": {"limits": {"memory": "-1Gi"}}}]}),
            "spec.containers[0].resources.limits[memory]: must be non-negative",
        ),
        (
            json!({"overhead": {"cpu": "-5m"}}),
            "spec.overhead[cpu]: must be non-negative",
        ),
        (
            json!({"containers": [{"resources": {"requests": {"cpu": true}}}]}),
            "spec.containers[0].resources.requests[cpu]: expected a quantity (a string or a number)",
        ),
        (
            json!({"priority": "100"}),
            "spec.priority: expected an integer",
        ),
        (
            json!({"priority": 1.5}),
            "spec.priority: expected an integer",
        ),
        (
            json!({"priority": 3_000_000_000i64}),
            "spec.priority: expected a 32-bit integer",
        ),
        (
            json!({"preemptionPolicy": "Sometimes"}),
            r#"spec.preemptionPolicy: unsupported value "Sometimes": supported values are "PreemptLowerPriority", "Never""#,
        ),
        (
            json!({"containers": {}}),
            "spec.containers: expected an array",
        ),
        (
            json!({"containers": ["x"]}),
            "spec.containers[0]: expected an object",
        ),
        (
            json!({"initContainers": [{"name": "i", "ports": [{"hostPort": 1, "protocol": "ICMP"}]}]}),
            r#"spec.initContainers[0].ports[0].protocol: unsupported value "ICMP": supported values are "TCP", "UDP", "SCTP""#,
        ),
        (
            json!({"containers": [{"ports": [{"hostPort": "80"}]}]}),
            "spec.containers[0].ports[0].hostPort: expected an integer",
        ),
        (
            json!({"tolerations": [{"key": "k", "operator": "Gt"}]}),
            r#"spec.tolerations[0].operator: unsupported value "Gt": supported values are "Equal", "Exists""#,
        ),
        (
            json!({"tolerations": [{"effect": "Never"}]}),
            r#"spec.tolerations[0].effect: unsupported value "Never": supported values are "NoSchedule", "PreferNoSchedule", "NoExecute""#,
        ),
        (
            json!({"nodeSelector": {"a": 1}}),
            "spec.nodeSelector[a]: expected a string",
        ),
        (
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Like"}]}]}}}}),
            r#"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: unsupported value "Like": supported values are "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt""#,
        ),
        (
            json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}}}),
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: must not be empty",
        ),
        (
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "z", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}}]}}}),
            r#"spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator: unsupported value "Equals": supported values are "In", "NotIn", "Exists", "DoesNotExist""#,
        ),
        (
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "z", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}]}}}),
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values: must be specified when operator is In or NotIn",
        ),
        (
            json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "z", "namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}}]}}}),
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector.matchExpressions[0].values: may not be specified when operator is Exists or DoesNotExist",
        ),
        (
            json!({"topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}]}),
            "spec.topologySpreadConstraints[0].maxSkew: must be greater than zero",
        ),
        (
            json!({"topologySpreadConstraints": [{"topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}]}),
            "spec.topologySpreadConstraints[0].maxSkew: must be greater than zero",
        ),
        (
            json!({"topologySpreadConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]}),
            "spec.topologySpreadConstraints[0].topologyKey: must not be empty",
        ),
        (
            json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "Maybe"}]}),
            r#"spec.topologySpreadConstraints[0].whenUnsatisfiable: unsupported value "Maybe": supported values are "DoNotSchedule", "ScheduleAnyway""#,
        ),
        (
            json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "ScheduleAnyway", "nodeTaintsPolicy": "Always"}]}),
            r#"spec.topologySpreadConstraints[0].nodeTaintsPolicy: unsupported value "Always": supported values are "Honor", "Ignore""#,
        ),
        (
            json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": []}}]}),
            "spec.topologySpreadConstraints[0].labelSelector.matchLabels: expected an object",
        ),
        (json!("nope"), "spec: expected an object"),
        (json!({"nodeName": 7}), "spec.nodeName: expected a string"),
        (
            json!({"hostNetwork": "yes"}),
            "spec.hostNetwork: expected a boolean",
        ),
    ];
    for (spec, expected) in cases {
        assert_eq!(pod_err(spec.clone()), expected, "spec: {spec}");
    }
}

#[test]
fn metadata_and_status_errors() {
    let cases: Vec<(Value, &str)> = vec![
        (json!({"kind": "Pod"}), "metadata.name: must not be empty"),
        (
            json!({"kind": "Pod", "metadata": {"name": ""}}),
            "metadata.name: must not be empty",
        ),
        (
            json!({"kind": "Pod", "metadata": []}),
            "metadata: expected an object",
        ),
        (
            json!({"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "abc"}}),
            r#"metadata.resourceVersion: invalid resource version "abc""#,
        ),
        (
            json!({"kind": "Pod", "metadata": {"name": "p", "resourceVersion": -3}}),
            "metadata.resourceVersion: invalid resource version -3",
        ),
        (
            json!({"kind": "Pod", "metadata": {"name": "p", "labels": ["a"]}}),
            "metadata.labels: expected an object",
        ),
        (
            json!({"kind": "Pod", "metadata": {"name": "p"}, "status": {"startTime": "yesterday"}}),
            r#"status.startTime: invalid RFC 3339 timestamp "yesterday""#,
        ),
        (
            json!({"kind": "Pod", "metadata": {"name": "p"}, "status": {"conditions": [{"type": 1}]}}),
            "status.conditions[0].type: expected a string",
        ),
        (
            json!({"kind": "Node", "apiVersion": "v1", "metadata": {"name": "p"}}),
            r#"kind: expected kind "Pod", got "Node""#,
        ),
        (
            json!({"kind": "Pod", "apiVersion": "apps/v1", "metadata": {"name": "p"}}),
            r#"apiVersion: unsupported apiVersion "apps/v1" for kind Pod"#,
        ),
        (json!([]), "expected an object"),
    ];
    for (value, expected) in cases {
        assert_eq!(err_of(decode_pod(&value)), expected, "value: {value}");
    }

    let node = |spec: Value, status: Value| json!({"kind": "Node", "metadata": {"name": "n"}, "spec": spec, "status": status});
    let node_cases: Vec<(Value, &str)> = vec![
        (
            node(
                json!({"taints": [{"key": "k", "effect": "Sometimes"}]}),
                json!({}),
            ),
            r#"spec.taints[0].effect: unsupported value "Sometimes": supported values are "NoSchedule", "PreferNoSchedule", "NoExecute""#,
        ),
        (
            node(json!({"taints": [{"key": "k"}]}), json!({})),
            r#"spec.taints[0].effect: unsupported value "": supported values are "NoSchedule", "PreferNoSchedule", "NoExecute""#,
        ),
        (
            node(json!({"unschedulable": "true"}), json!({})),
            "spec.unschedulable: expected a boolean",
        ),
        (
            node(json!({}), json!({"allocatable": {"cpu": "-1"}})),
            "status.allocatable[cpu]: must be non-negative",
        ),
        (
            node(json!({}), json!({"allocatable": {"memory": "1Qi"}})),
            r#"status.allocatable[memory]: invalid quantity "1Qi""#,
        ),
    ];
    for (value, expected) in node_cases {
        assert_eq!(err_of(decode_node(&value)), expected, "value: {value}");
    }

    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"}, "status": {"disruptionsAllowed": "1"}});
    assert_eq!(
        err_of(decode_pdb(&pdb)),
        "status.disruptionsAllowed: expected an integer"
    );
    assert_eq!(
        err_of(decode_object(
            &json!({"kind": "Service", "metadata": {"name": "s"}})
        )),
        r#"kind: unsupported kind "Service": supported kinds are "Node", "Pod", "PodDisruptionBudget", "PriorityClass", "Namespace", "PodGroup", "Workload""#
    );
    assert_eq!(
        err_of(decode_object(&json!({"metadata": {"name": "s"}}))),
        "kind: must not be empty"
    );
}

#[test]
fn display_without_path_is_just_the_message() {
    let e = DecodeError::new("", "empty document");
    assert_eq!(e.to_string(), "empty document");
    let e = DecodeError::new("spec", "expected an object");
    assert_eq!(e.to_string(), "spec: expected an object");
}

#[test]
fn list_errors_carry_the_item_index() {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"kind": "Node", "metadata": {"name": "n"}},
        {"kind": "Pod", "metadata": {"name": "a"}},
        {"kind": "PodDisruptionBudget", "apiVersion": "policy/v1", "metadata": {"name": "b"}},
        {"kind": "Pod", "metadata": {"name": "c"}, "spec": {"containers": [{"resources": {"requests": {"cpu": "12x"}}}]}},
    ]});
    let e = decode_list(&list).expect_err("bad item");
    assert_eq!(
        e.path,
        "items[3].spec.containers[0].resources.requests[cpu]"
    );
    assert_eq!(e.message, r#"invalid quantity "12x""#);
    assert_eq!(
        e.to_string(),
        r#"items[3].spec.containers[0].resources.requests[cpu]: invalid quantity "12x""#
    );
    let e = decode_list(&json!({"kind": "List", "items": [{"kind": "Secret"}]})).expect_err("kind");
    assert_eq!(e.path, "items[0].kind");
    let e = decode_list(&json!({"kind": "List", "items": {}})).expect_err("items");
    assert_eq!(e.to_string(), "items: expected an array");
    let e = decode_list(&json!({"kind": "List", "items": [null]})).expect_err("null item");
    assert_eq!(e.to_string(), "items[0]: expected an object");
}

#[test]
fn lists_typed_lists_and_single_objects() {
    let typed = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "9"},
            "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b", "namespace": "x", "uid": "u-b"}}]});
    let objects = decode_list(&typed).expect("pod list");
    assert_eq!(objects.len(), 2);
    match &objects[1] {
        Object::Pod(p) => assert_eq!((&*p.namespace, p.uid()), ("x", "u-b")),
        other => panic!("unexpected {other:?}"),
    }
    let nodes = json!({"kind": "NodeList", "items": [{"metadata": {"name": "n"}}]});
    assert!(matches!(
        &decode_list(&nodes).expect("nodes")[..],
        [Object::Node(_)]
    ));
    let single =
        json!({"kind": "Node", "metadata": {"name": "n", "uid": "uid-n", "resourceVersion": 17}});
    match &decode_list(&single).expect("single")[..] {
        [Object::Node(n)] => {
            assert_eq!(&*n.uid, "uid-n");
            assert_eq!(n.resource_version, 17);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        decode_list(&json!({"kind": "List", "items": null}))
            .expect("empty")
            .is_empty()
    );
}

#[test]
fn limits_default_requests() {
    let pod = decode_pod(&pod_with(json!({"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "500m"}}},
            {"name": "b", "resources": {"limits": {"example.com/dongle": 1}}},
        ]})))
        .expect("pod");
    assert_eq!(
        pod.details.containers[0]
            .requests
            .get("cpu")
            .map(|q| q.milli_value()),
        Some(500)
    );
    assert_eq!(
        pod.details.containers[0]
            .requests
            .get("memory")
            .map(|q| q.value()),
        Some(1 << 30)
    );
    assert_eq!(pod.requests().milli_cpu, 500);
    assert_eq!(pod.requests().memory, 1 << 30);
    assert_eq!(pod.requests().scalar("example.com/dongle"), 1);
}

#[test]
fn pod_level_resources_default_like_upstream() {
    // Containers request cpu: the pod-level cpu request is the container aggregate, not
    // the pod-level limit; memory has no container request: it takes the pod limit.
    let pod = decode_pod(&pod_with(json!({
        "resources": {"limits": {"cpu": "4", "memory": "2Gi", "example.com/x": "3"}},
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
    })))
    .expect("pod");
    assert_eq!(pod.requests().milli_cpu, 1000);
    assert_eq!(pod.requests().memory, 2 << 30);
    assert_eq!(pod.details.pod_requests.get("example.com/x"), None);
    // Explicit pod-level requests win.
    let pod = decode_pod(&pod_with(json!({
        "resources": {"requests": {"cpu": "3"}, "limits": {"cpu": "4"}},
        "overhead": {"cpu": "100m"},
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
    })))
    .expect("pod");
    assert_eq!(pod.requests().milli_cpu, 3100);
}

#[test]
fn sidecars_and_init_containers() {
    let pod = decode_pod(&pod_with(json!({
            "containers": [{"name": "app", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}, "ports": [{"containerPort": 1, "hostPort": 80}]}],
            "initContainers": [
                {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}, "ports": [{"hostPort": 9000, "protocol": "SCTP"}]},
                {"name": "setup", "resources": {"requests": {"cpu": "500m"}}, "ports": [{"hostPort": 7000}]},
            ],
        })))
        .expect("pod");
    assert!(!pod.details.containers[0].restart_always);
    assert!(pod.details.init_containers[0].restart_always);
    assert!(!pod.details.init_containers[1].restart_always);
    assert_eq!(pod.requests().milli_cpu, 700);
    let ports: Vec<i32> = pod.details.host_ports.iter().map(|p| p.port).collect();
    assert_eq!(ports, vec![80, 9000]);
    assert_eq!(pod.details.host_ports[1].protocol, Protocol::Sctp);
}

#[test]
fn host_network_defaults_host_ports() {
    let pod = decode_pod(&pod_with(json!({
            "hostNetwork": true,
            "containers": [{"name": "a", "ports": [{"containerPort": 53, "protocol": "UDP"}, {"containerPort": 80, "hostPort": 8080}]}],
        })))
        .expect("pod");
    let ports: Vec<(i32, Protocol)> = pod
        .details
        .host_ports
        .iter()
        .map(|p| (p.port, p.protocol))
        .collect();
    assert_eq!(ports, vec![(53, Protocol::Udp), (8080, Protocol::Tcp)]);
}

#[test]
fn deletion_timestamp_and_conditions() {
    let value = json!({"kind": "Pod", "metadata": {"name": "v", "uid": "u", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": "n1", "priority": -5},
            "status": {"phase": "Running", "nominatedNodeName": "n2", "conditions": [
                {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler", "message": "x"},
                {"type": "Ready", "status": "False"}]}});
    let pod = decode_pod(&value).expect("pod");
    assert!(pod.terminating);
    assert!(pod.terminating_by_preemption());
    assert_eq!(pod.details.conditions.len(), 2);
    assert_eq!(pod.priority, -5);
    assert_eq!(pod.node_name.as_deref(), Some("n1"));
    assert_eq!(pod.nominated_node_name.as_deref(), Some("n2"));
    assert_eq!(pod.nomination(), None);
    let value = json!({"kind": "Pod", "metadata": {"name": "v", "deletionTimestamp": null}, "spec": {"nodeName": ""}});
    let pod = decode_pod(&value).expect("pod");
    assert!(!pod.terminating);
    assert_eq!(pod.node_name, None);
    assert_eq!(pod.uid(), "default/v");
    assert_eq!(&*pod.namespace, "default");
    assert_eq!(pod.phase, PodPhase::Pending);
    assert_eq!(pod.start_time.get(), None);
}

#[test]
fn start_times_are_unix_nanos() {
    let at = |t: &str| {
        decode_pod(&json!({"kind": "Pod", "metadata": {"name": "p"}, "status": {"startTime": t}}))
            .map(|p| p.start_time.get())
    };
    assert_eq!(at("1970-01-01T00:00:01Z"), Ok(Some(1_000_000_000)));
    assert_eq!(at("1970-01-01T01:00:00+01:00"), Ok(Some(0)));
    assert_eq!(
        at("2026-01-01T00:00:00.000000001Z"),
        Ok(Some(1_767_225_600_000_000_001))
    );
    assert!(at("2026-01-01").is_err());
    assert!(at("9999-12-31T23:59:59Z").is_err());
}

#[test]
fn nodes_read_allocatable_not_capacity() {
    let node = decode_node(&json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n", "resourceVersion": "123", "labels": {"zone": "a"}},
            "spec": {"unschedulable": true, "taints": [{"key": "k", "value": "v", "effect": "NoExecute", "timeAdded": "x"}]},
            "status": {"capacity": {"cpu": "64"}, "allocatable": {"cpu": 3.5, "memory": 1024, "pods": "110", "hugepages-2Mi": "4Mi", "example.com/gpu": "2", "weird": "1"}}}))
        .expect("node");
    assert_eq!(node.resource_version, 123);
    assert!(node.unschedulable);
    assert_eq!(
        node.taints,
        vec![Taint {
            key: "k".into(),
            value: "v".into(),
            effect: TaintEffect::NoExecute
        }]
    );
    assert_eq!(node.allocatable.milli_cpu, 3500);
    assert_eq!(node.allocatable.memory, 1024);
    assert_eq!(node.allocatable.pods, 110);
    assert_eq!(node.allocatable.scalar("hugepages-2Mi"), 4 << 20);
    assert_eq!(node.allocatable.scalar("example.com/gpu"), 2);
    assert_eq!(node.allocatable.scalars.len(), 2);
}

#[test]
fn pdbs() {
    let pdb = decode_pdb(&json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "b", "namespace": "ns"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": 2, "disruptedPods": {"p1": "2026-01-01T00:00:00Z", "p2": "2026-01-01T00:00:00Z"}}}))
        .expect("pdb");
    assert_eq!(&*pdb.uid, "ns/b");
    assert_eq!(pdb.disruptions_allowed, 2);
    assert_eq!(pdb.disrupted_pods, vec![Str::from("p1"), Str::from("p2")]);
    assert!(pdb.selector.as_ref().is_some_and(LabelSelector::is_valid));
    let mut pod = Pod::new("ns", "p1", "u");
    pod.labels = Labels::from_iter([("app", "web")]);
    assert!(pdb.covers(&pod));

    let bare = decode_pdb(&json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": {"name": "b", "uid": "x"}, "spec": {"selector": null}}))
            .expect("pdb");
    assert_eq!(bare.selector, None);
    assert_eq!(bare.disruptions_allowed, 0);
    assert_eq!(&*bare.uid, "x");
    assert_eq!(&*bare.namespace, "default");
}

#[test]
fn invalid_pdb_selectors_decode_but_are_invalid() {
    let selector_of = |selector: Value| {
        decode_pdb(&json!({"kind": "PodDisruptionBudget", "metadata": {"name": "b"}, "spec": {"selector": selector}}))
                .expect("pdb decodes")
                .selector
                .expect("selector kept")
    };
    for selector in [
        json!({"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["web"]}]}),
        json!({"matchExpressions": [{"key": "app", "values": ["web"]}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "In"}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": []}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]}),
        json!({"matchLabels": {"app": "not a valid value"}}),
        json!({"matchLabels": {"bad key": "web"}}),
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["-bad-"]}]}),
    ] {
        let s = selector_of(selector.clone());
        assert!(!s.is_valid(), "{selector} should be invalid");
    }
    for selector in [
        json!({}),
        json!({"matchLabels": {"app.kubernetes.io/name": "web", "a": ""}}),
        json!({"matchExpressions": [{"key": "example.com/tier", "operator": "NotIn", "values": ["a-b", "c.d"]}]}),
    ] {
        let s = selector_of(selector.clone());
        assert!(s.is_valid(), "{selector} should be valid");
    }
    // Wrong JSON types are still errors.
    let e = decode_pdb(&json!({"kind": "PodDisruptionBudget", "metadata": {"name": "b"}, "spec": {"selector": {"matchExpressions": {}}}}))
            .expect_err("type");
    assert_eq!(
        e.to_string(),
        "spec.selector.matchExpressions: expected an array"
    );
}

#[test]
fn label_syntax() {
    assert!(is_qualified_name("kubernetes.io/hostname"));
    assert!(is_qualified_name("a"));
    assert!(!is_qualified_name(""));
    assert!(!is_qualified_name("/a"));
    assert!(!is_qualified_name("a/b/c"));
    assert!(!is_qualified_name("Example.com/a"));
    assert!(!is_qualified_name(&"a".repeat(64)));
    assert!(is_label_value(""));
    assert!(is_label_value("a_b.c-d"));
    assert!(!is_label_value("_a"));
}

#[test]
fn malformed_inputs_error_without_panicking() {
    let texts = [
        "",
        "   ",
        "null",
        "42",
        "\"pod\"",
        "[]",
        "[1, 2]",
        "{",
        "}",
        "{\"kind\": }",
        "kind: [",
        "- a\n- b",
        ": :",
        "{\"kind\": \"Pod\"}",
        "{\"kind\": \"Pod\", \"metadata\": null}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": null}}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": 5}}",
        "{\"kind\": 5, \"metadata\": {\"name\": \"x\"}}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"resources\": []}]}}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"resources\": {\"requests\": []}}]}}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"resources\": {\"requests\": {\"cpu\": \"1e9999999999999999999\"}}}]}}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"resources\": {\"requests\": {\"cpu\": \"\"}}}]}}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"resources\": {\"requests\": {\"cpu\": \"é\"}}}]}}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"resources\": {\"requests\": {\"cpu\": 9223372036854775807}}}]}}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"priority\": 18446744073709551615}}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"affinity\": []}}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"affinity\": {\"podAffinity\": {\"requiredDuringSchedulingIgnoredDuringExecution\": [null]}}}}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"topologySpreadConstraints\": [{\"maxSkew\": 99999999999}]}}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"status\": {\"startTime\": \"+999999-01-01T00:00:00Z\"}}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\", \"resourceVersion\": \"99999999999999999999999\"}}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\", \"resourceVersion\": 1.5}}",
        "{\"kind\": \"Node\", \"metadata\": {\"name\": \"n\"}, \"status\": {\"allocatable\": {\"cpu\": {}}}}",
        "{\"kind\": \"Node\", \"metadata\": {\"name\": \"n\"}, \"spec\": {\"taints\": [[]]}}",
        "{\"kind\": \"PodDisruptionBudget\", \"metadata\": {\"name\": \"b\"}, \"status\": {\"disruptedPods\": []}}",
        "{\"kind\": \"PodDisruptionBudget\", \"metadata\": {\"name\": \"b\"}, \"spec\": {\"selector\": \"app=web\"}}",
        "{\"kind\": \"List\", \"items\": [{\"kind\": \"List\", \"items\": []}]}",
        "{\"kind\": \"List\", \"items\": 3}",
        "kind: Pod\nmetadata:\n  name: p\nspec:\n  priority: 1.0e3\n",
        "kind: Pod\nmetadata:\n  name: p\nspec:\n  containers: &a [*a]\n",
        "a: &a [*a, *a]\nb: *a\n",
        "\u{0}\u{1}\u{2}",
        "{\"a\": \"\\ud800\"}",
    ];
    for text in texts {
        let result =
            std::panic::catch_unwind(|| parse_document(text).and_then(|value| decode_list(&value)));
        match result {
            Ok(Err(e)) => assert!(!e.message.is_empty(), "{text:?}"),
            Ok(Ok(objects)) => panic!("{text:?} decoded to {objects:?}"),
            Err(_) => panic!("{text:?} panicked"),
        }
    }
    // Every single-object decoder on every shape of value.
    for value in [
        json!(null),
        json!(1),
        json!("x"),
        json!([{}]),
        json!({}),
        json!({"metadata": {"name": "n"}, "spec": 1, "status": 1}),
        json!({"metadata": {"name": "n"}, "spec": {}, "status": {"allocatable": 1, "disruptedPods": 1, "conditions": 1}}),
    ] {
        let outcomes = std::panic::catch_unwind(|| {
            (
                decode_node(&value).is_err(),
                decode_pod(&value).is_err(),
                decode_pdb(&value).is_err(),
                decode_object(&value).is_err(),
            )
        })
        .unwrap_or_else(|_| panic!("{value} panicked"));
        assert_eq!(outcomes, (true, true, true, true), "{value}");
    }
}

fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let child = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                pointers(v, child, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                pointers(v, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

#[test]
fn replacing_any_field_with_junk_never_panics() {
    let junk = [
        json!(null),
        json!(true),
        json!(0),
        json!(-1),
        json!(1.5),
        json!(u64::MAX),
        json!(""),
        json!("x"),
        json!("1e2147483647"),
        json!("9223372036854775807"),
        json!([]),
        json!([null]),
        json!({}),
    ];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut documents = vec![parse_document(YAML_POD).expect("yaml")];
    for name in [
        "upstream-preempt-topology-spread.json",
        "upstream-dryrun-pod-with-anti-affinity-preempted.json",
        "upstream-dryrun-pdb-disrupted-pods-victim-listed.json",
    ] {
        let text = std::fs::read_to_string(root.join(name)).expect("read");
        let doc = parse_document(&text).expect("parse");
        documents.push(doc["cluster"].clone());
        documents.push(doc["preemptor"].clone());
    }
    for document in documents {
        let mut paths = Vec::new();
        pointers(&document, String::new(), &mut paths);
        for path in &paths {
            for replacement in &junk {
                let mut mutated = document.clone();
                match mutated.pointer_mut(path) {
                    Some(slot) => *slot = replacement.clone(),
                    None => continue,
                }
                let outcome = std::panic::catch_unwind(|| {
                    let _ = decode_list(&mutated);
                    let _ = decode_object(&mutated);
                });
                assert!(outcome.is_ok(), "panicked with {path} = {replacement}");
            }
        }
    }
}

#[test]
fn an_admitted_pods_class_name_is_not_kept_and_its_details_are_shared() {
    let pod = |name: &str, class: &str, admitted: bool| {
        let mut spec = json!({"priorityClassName": class,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]});
        if admitted {
            spec["priority"] = json!(1000);
            spec["preemptionPolicy"] = json!("PreemptLowerPriority");
        }
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "shop"}, "spec": spec})
    };
    let mut memo = crate::model::build::Memo::for_stream();
    let mut decode = |value: Value| decode_pod_with(&value, &mut memo).expect("a pod");
    let high = decode(pod("a", "high", true));
    let low = decode(pod("b", "low", true));
    assert_eq!(high.details.priority_class_name, None);
    assert!(triomphe::Arc::ptr_eq(&high.details, &low.details));
    assert!(!high.needs_admission());
    // Admission still reads it where the priority or the policy is unset.
    let unadmitted = decode(pod("c", "high", false));
    assert_eq!(
        unadmitted.details.priority_class_name.as_deref(),
        Some("high")
    );
    assert!(unadmitted.needs_admission());
    let mut policy_unset = pod("d", "high", true);
    policy_unset["spec"]
        .as_object_mut()
        .expect("a spec")
        .remove("preemptionPolicy");
    let policy_unset = decode(policy_unset);
    assert_eq!(
        policy_unset.details.priority_class_name.as_deref(),
        Some("high")
    );
    assert!(!triomphe::Arc::ptr_eq(&policy_unset.details, &high.details));
}

const YAML_GANG: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: scheduling.k8s.io/v1beta1
  kind: Workload
  metadata: {name: training, namespace: ml, uid: w-1, resourceVersion: "11"}
  spec:
    podGroupTemplates:
    - name: workers
      schedulingPolicy: {gang: {minCount: 4}}
- apiVersion: scheduling.k8s.io/v1beta1
  kind: PodGroup
  metadata:
    name: training-workers
    namespace: ml
    uid: g-1
    resourceVersion: "12"
    creationTimestamp: "2026-03-01T10:00:00Z"
  spec:
    schedulingPolicy: {gang: {minCount: 4}}
    disruptionMode: {all: {}}
    priorityClassName: training
    workloadRef: {workloadName: training, templateName: workers}
- apiVersion: v1
  kind: Pod
  metadata: {name: worker-0, namespace: ml}
  spec:
    schedulingGroup: {podGroupName: training-workers}
    containers: [{name: c}]
"#;

#[test]
fn pod_groups_workloads_and_members_decode_from_yaml_and_json_alike() {
    let yaml = parse_document(YAML_GANG).expect("yaml");
    let json_text = serde_json::to_string(&yaml).expect("json");
    for document in [yaml, parse_document(&json_text).expect("json")] {
        let objects = decode_list(&document).expect("a list");
        let [
            Object::Workload(workload),
            Object::PodGroup(group),
            Object::Pod(pod),
        ] = &objects[..]
        else {
            panic!("a workload, a group and a pod: {objects:?}");
        };
        assert_eq!(
            (&*workload.namespace, &*workload.name, &*workload.uid),
            ("ml", "training", "w-1")
        );
        assert_eq!(workload.resource_version, 11);
        assert_eq!(workload.pod_group_templates, [Str::from("workers")]);
        assert_eq!((&*group.name, &*group.uid), ("training-workers", "g-1"));
        assert_eq!(
            group.policy,
            crate::model::SchedulingPolicy::Gang { min_count: 4 }
        );
        assert_eq!(group.disruption_mode, crate::model::DisruptionMode::All);
        assert_eq!(group.priority_class_name.as_deref(), Some("training"));
        assert!(group.priority_unset);
        assert_eq!(
            group.workload,
            Some((Str::from("training"), Str::from("workers")))
        );
        assert_eq!(group.creation_time, Some(1_772_359_200_000_000_000));
        assert_eq!(
            pod.details.scheduling_group.as_deref(),
            Some("training-workers")
        );
    }
}

#[test]
fn pod_group_and_workload_errors_name_their_fields() {
    let group = |spec: Value| {
        json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
               "metadata": {"name": "g"}, "spec": spec})
    };
    let cases = [
        (
            group(json!({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}})),
            "spec.disruptionMode: the disruptionMode `all` is not supported with the basic scheduling policy",
        ),
        (
            group(json!({"schedulingPolicy": {"gang": {}}})),
            "spec.schedulingPolicy.gang.minCount: must be greater than or equal to 1",
        ),
        (
            group(json!({"schedulingPolicy": {"gang": {"minCount": "4"}}})),
            "spec.schedulingPolicy.gang.minCount: expected an integer",
        ),
        (
            group(json!({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 1}}})),
            "spec.schedulingPolicy: must specify exactly one of: `basic`, `gang`",
        ),
        (
            group(json!({})),
            "spec.schedulingPolicy: must specify one of: `basic`, `gang`",
        ),
        (
            group(json!({"schedulingPolicy": {"basic": {}},
                         "disruptionMode": {"single": {}, "all": {}}})),
            "spec.disruptionMode: must specify exactly one of: `single`, `all`",
        ),
        (
            group(json!({"schedulingPolicy": {"basic": {}}, "preemptionPolicy": "Always"})),
            "spec.preemptionPolicy: unsupported value \"Always\": supported values are \"PreemptLowerPriority\", \"Never\"",
        ),
        (
            json!({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                   "metadata": {"name": "g"}}),
            "apiVersion: unsupported apiVersion \"scheduling.k8s.io/v1alpha2\" for kind PodGroup",
        ),
        (
            json!({"kind": "Workload", "metadata": {"name": "w"},
                   "spec": {"podGroupTemplates": [{"name": "a"}, {}]}}),
            "spec.podGroupTemplates[1].name: must not be empty",
        ),
    ];
    for (document, expected) in cases {
        assert_eq!(err_of(decode_object(&document)), expected);
    }
    let listed = json!({"kind": "PodGroupList", "items": [
        {"metadata": {"name": "ok"}, "spec": {"schedulingPolicy": {"basic": {}}}},
        {"metadata": {"name": "bad"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 0}}}}
    ]});
    assert_eq!(
        err_of(decode_list(&listed)),
        "items[1].spec.schedulingPolicy.gang.minCount: must be greater than or equal to 1"
    );
}

#[test]
fn pods_of_different_groups_do_not_share_their_details() {
    let pod = |name: &str, group: Option<&str>| {
        let mut spec = json!({"containers": [{"name": "c",
            "resources": {"requests": {"cpu": "100m"}}}]});
        if let Some(group) = group {
            spec["schedulingGroup"] = json!({"podGroupName": group});
        }
        json!({"kind": "Pod", "metadata": {"name": name, "namespace": "ml"}, "spec": spec})
    };
    let mut memo = crate::model::build::Memo::for_stream();
    let mut decode = |value: Value| decode_pod_with(&value, &mut memo).expect("a pod");
    let a = decode(pod("a", Some("left")));
    let b = decode(pod("b", Some("right")));
    let c = decode(pod("c", Some("left")));
    let none = decode(pod("d", None));
    assert_eq!(b.details.scheduling_group.as_deref(), Some("right"));
    assert_eq!(none.details.scheduling_group, None);
    assert!(triomphe::Arc::ptr_eq(&a.details, &c.details));
    assert!(!triomphe::Arc::ptr_eq(&a.details, &b.details));
    assert!(!triomphe::Arc::ptr_eq(&a.details, &none.details));
}

#[test]
fn scoring_inputs_are_decoded_and_weights_checked() {
    let pod = decode_pod(&pod_with(json!({
        "containers": [{"name": "a", "image": "nginx"}],
        "initContainers": [{"name": "i", "image": "busybox:1.36"}],
        "affinity": {
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 30, "preference": {"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a"]}]}}]},
            "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "podAffinityTerm": {"topologyKey": "zone",
                    "labelSelector": {"matchLabels": {"app": "db"}}}}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 7, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}
        }
    })))
    .expect("pod");
    let d = &pod.details;
    assert_eq!(
        d.images,
        vec![Str::from("busybox:1.36"), Str::from("nginx:latest")]
    );
    assert_eq!(d.preferred_node_affinity[0].weight, 30);
    assert_eq!(
        &*d.preferred_node_affinity[0].preference.match_expressions[0].key,
        "zone"
    );
    assert_eq!(d.preferred_pod_affinity[0].weight, 5);
    assert_eq!(&*d.preferred_pod_affinity[0].term.topology_key, "zone");
    assert_eq!(d.preferred_pod_anti_affinity[0].weight, 7);
    assert!(d.pod_affinity.is_empty() && d.pod_anti_affinity.is_empty());
    assert_eq!(
        pod_err(json!({"containers": [], "affinity": {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]}}})),
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: must be in the range 1-100"
    );
    assert_eq!(
        pod_err(json!({"containers": [], "affinity": {"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {}}]}}})),
        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey: must not be empty"
    );
    let node = decode_node(
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
        "status": {"images": [{"names": ["nginx:latest", "sha256:ab"], "sizeBytes": 12345}]}}),
    )
    .expect("node");
    assert_eq!(node.images[0].names.len(), 2);
    assert_eq!(node.images[0].size_bytes, 12345);
    assert_eq!(
        err_of(decode_node(
            &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
            "status": {"images": [{"names": ["x"], "sizeBytes": -1}]}})
        )),
        "status.images[0].sizeBytes: must be greater than or equal to 0"
    );
}
