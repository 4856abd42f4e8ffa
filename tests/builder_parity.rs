//! One object, three readers, one answer. Generated Nodes, Pods and PodDisruptionBudgets,
//! valid and invalid (odd quantities and exponents, selectors with bad keys and operators,
//! tolerations, ports, missing keys), are read as Kubernetes JSON, as typed messages
//! (mapped from the JSON by the tests' own mapping, `grpc_support::typed`) and as those
//! messages' protobuf encoding through the wire reader `Sync` and `UpdatePod` use. Each
//! must give the same model object, or the same error naming the same field.

mod grpc_support;

use bytes::Bytes;
use grpc_support::typed;
use preemptd::app::AppError;
use preemptd::model::build::Memo;
use preemptd::model::decode::{self, DecodeError};
use preemptd::model::{Node, Pod, PodDisruptionBudget};
use preemptd::server::errors::ApiError;
use preemptd::server::wire::{self, Received, ReceivedPod};
use preemptd::server::{convert, pb};
use proptest::prelude::*;
use prost::Message as _;
use serde_json::{Map, Value, json};

/// What a reader made of an object: the object, or the refused field and why.
type Outcome<T> = Result<T, (String, String)>;

fn from_json<T>(result: Result<T, DecodeError>) -> Outcome<T> {
    result.map_err(|e| (e.path, e.message))
}

/// A typed request's error, its request field (`upsert`) taken off.
fn from_typed<T>(result: Result<T, ApiError>) -> Outcome<T> {
    result.map_err(|e| match e {
        ApiError::App(AppError::InvalidArgument { path, message }) => {
            let path = path.strip_prefix("upsert").unwrap_or(&path);
            (path.strip_prefix('.').unwrap_or(path).to_string(), message)
        }
        other => panic!("not an invalid argument: {other:?}"),
    })
}

/// A pod as the cache holds it: pods read from their encoding come without the container
/// specs already folded into their requests and host ports.
fn held(mut pod: Pod) -> Pod {
    if pod.details.holds_specs() {
        pod.details_mut().drop_specs();
    }
    pod
}

fn node_outcomes(object: &Value) -> [Outcome<Node>; 4] {
    let message = typed::node(object);
    let encoding = Bytes::from(
        pb::UpdateNodeRequest {
            change: Some(pb::update_node_request::Change::Upsert(message.clone())),
        }
        .encode_to_vec(),
    );
    // Twice through one memo: the second read takes what the first remembered.
    let mut memo = Memo::new(64);
    let mut wire = || match wire::receive_node(encoding.clone(), &mut memo).expect("decodes") {
        Received::Upserted(node) => from_typed(node),
        Received::Decoded(_) => panic!("a node's upsert is read from its encoding"),
    };
    [
        from_json(decode::decode_node(object)),
        from_typed(convert::node("upsert", &message)),
        wire(),
        wire(),
    ]
}

fn pod_outcomes(object: &Value) -> [Outcome<Pod>; 4] {
    let message = typed::pod(object);
    let encoding = Bytes::from(
        pb::UpdatePodRequest {
            change: Some(pb::update_pod_request::Change::Upsert(message.clone())),
        }
        .encode_to_vec(),
    );
    let mut memo = Memo::new(64);
    let mut wire = || {
        let pod = match wire::read_update_pod(encoding.clone(), &mut memo).expect("decodes") {
            ReceivedPod::Upserted(pod) => pod,
            // A field the wire reader leaves to prost: decoded, then the typed reader.
            Received::Decoded(request) => match request.change {
                Some(pb::update_pod_request::Change::Upsert(p)) => {
                    convert::pod_with_memo("upsert", &p, &mut memo)
                }
                other => panic!("not an upsert: {other:?}"),
            },
        };
        from_typed(pod).map(held)
    };
    [
        from_json(decode::decode_pod(object)).map(held),
        from_typed(convert::pod("upsert", &message)).map(held),
        wire(),
        wire(),
    ]
}

fn pdb_outcomes(object: &Value) -> [Outcome<PodDisruptionBudget>; 2] {
    [
        from_json(decode::decode_pdb(object)),
        from_typed(convert::pdb("upsert", &typed::pdb(object))),
    ]
}

// ---------------------------------------------------------------------------------------
// Generated objects. Every value is of the JSON type Kubernetes gives the field (a
// wrong type is the JSON reader's own error, which typed messages cannot carry); the
// values themselves range over valid, odd and invalid ones.

/// An object of the fields whose value is `Some`.
fn object(fields: Vec<(&str, Option<Value>)>) -> Value {
    Value::Object(
        fields
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_string(), v?)))
            .collect::<Map<_, _>>(),
    )
}

fn pick(values: &'static [&'static str]) -> impl Strategy<Value = Value> + Clone {
    proptest::sample::select(values).prop_map(Value::from)
}

/// Mostly one of `valid`, now and then one of `invalid`: each object has many fields,
/// and the rules after the first refused one are reached only by objects valid so far.
fn mostly(
    valid: &'static [&'static str],
    invalid: &'static [&'static str],
) -> impl Strategy<Value = Value> + Clone {
    prop_oneof![24 => pick(valid), 1 => pick(invalid)]
}

fn maybe<S: Strategy<Value = Value>>(s: S) -> impl Strategy<Value = Option<Value>> {
    proptest::option::weighted(0.6, s)
}

fn quantity() -> impl Strategy<Value = Value> {
    prop_oneof![
        40 => pick(&["100m", "1", "2Gi", "1.5", "0", "64Mi", "12Ki", "3", "1e3", "5e-3",
            "1.5e-2147483648", "0e2147483647", "1E3", "+5", "-0", ".5", "5."]),
        1 => pick(&[
            "1e3", "5e-3", "1.5e-2147483648", "1e2147483647", "1e9223372036854775808",
            "0e2147483647", "1E3", "1e", "1ee", "+5", "-1", "-0", "lots", "", "1..2",
            "0x10", ".5", "5.", "1 ", "1Qi", "9223372036854775807", "99999999999999999999",
        ]),
        4 => prop_oneof![Just(json!(3)), Just(json!(2.5)), Just(json!(1e300)), Just(json!(-4))],
    ]
}

fn resource_list() -> impl Strategy<Value = Value> {
    let name = mostly(
        &[
            "cpu",
            "memory",
            "pods",
            "ephemeral-storage",
            "example.com/gpu",
            "hugepages-2Mi",
        ],
        &[""],
    );
    proptest::collection::vec((name, quantity()), 0..4).prop_map(|entries| {
        Value::Object(
            entries
                .into_iter()
                .map(|(k, v)| (k.as_str().unwrap().to_string(), v))
                .collect(),
        )
    })
}

fn label_key() -> impl Strategy<Value = Value> + Clone {
    pick(&[
        "app",
        "tier",
        "example.com/team",
        "kubernetes.io/hostname",
        "-bad",
        "bad key",
        "a/b/c",
        "Example.com/x",
        "",
    ])
}

fn label_value() -> impl Strategy<Value = Value> + Clone {
    pick(&["web", "db", "", "a-b.c_d", "not valid", "-x"])
}

fn string_map() -> impl Strategy<Value = Value> {
    proptest::collection::vec((label_key(), label_value()), 0..3).prop_map(|entries| {
        Value::Object(
            entries
                .into_iter()
                .map(|(k, v)| (k.as_str().unwrap().to_string(), v))
                .collect(),
        )
    })
}

fn values() -> impl Strategy<Value = Value> {
    proptest::collection::vec(label_value(), 0..3).prop_map(Value::from)
}

fn requirement(operators: &'static [&'static str]) -> impl Strategy<Value = Value> {
    let operator = prop_oneof![12 => pick(operators), 1 => pick(BAD_OPERATORS)];
    (maybe(label_key()), operator.prop_map(Some), maybe(values())).prop_map(
        |(key, operator, values)| {
            object(vec![
                ("key", key),
                ("operator", operator),
                ("values", values),
            ])
        },
    )
}

const SELECTOR_OPERATORS: &[&str] = &["In", "NotIn", "Exists", "DoesNotExist"];
const NODE_OPERATORS: &[&str] = &["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];
const BAD_OPERATORS: &[&str] = &["Near", "", "in", "Equals"];

fn selector() -> impl Strategy<Value = Value> {
    (
        maybe(string_map()),
        maybe(
            proptest::collection::vec(requirement(SELECTOR_OPERATORS), 0..3).prop_map(Value::from),
        ),
    )
        .prop_map(|(labels, expressions)| {
            object(vec![
                ("matchLabels", labels),
                ("matchExpressions", expressions),
            ])
        })
}

fn timestamp() -> impl Strategy<Value = Value> {
    mostly(
        &[
            "2024-05-01T10:00:00Z",
            "2024-05-01T10:00:00.5Z",
            "2024-05-01T11:00:00+01:00",
            "",
        ],
        &["yesterday", "2023-02-29T00:00:00Z"],
    )
}

fn metadata(namespaced: bool) -> impl Strategy<Value = Value> {
    (
        prop_oneof![12 => pick(&["a", "web-0"]).prop_map(Some), 1 => Just(None), 1 => Just(Some(json!("")))],
        maybe(pick(&["", "team", "default"])),
        maybe(pick(&["", "uid-1"])),
        maybe(pick(&["", "7", "42"])),
        maybe(string_map()),
        maybe(timestamp()),
    )
        .prop_map(move |(name, namespace, uid, version, labels, deletion)| {
            object(vec![
                ("name", name),
                ("namespace", namespace.filter(|_| namespaced)),
                ("uid", uid),
                ("resourceVersion", version),
                ("labels", labels),
                ("deletionTimestamp", deletion.filter(|_| namespaced)),
            ])
        })
}

fn node() -> impl Strategy<Value = Value> {
    let taint = (
        mostly(&["k", "dedicated"], &[""]).prop_map(Some),
        maybe(pick(&["v", ""])),
        mostly(
            &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            &["Sometimes", ""],
        )
        .prop_map(Some),
    )
        .prop_map(|(key, value, effect)| {
            object(vec![("key", key), ("value", value), ("effect", effect)])
        });
    let condition = (
        mostly(&["Ready", "MemoryPressure"], &[""]).prop_map(Some),
        maybe(pick(&["True", "False", "Unknown"])),
        maybe(pick(&["KubeletNotReady", ""])),
        maybe(pick(&["node is shutting down", ""])),
    )
        .prop_map(|(kind, status, reason, message)| {
            object(vec![
                ("type", kind),
                ("status", status),
                ("reason", reason),
                ("message", message),
            ])
        });
    let image = (
        maybe(
            proptest::collection::vec(pick(&["nginx:1.27", "sha256:ab12", ""]), 0..3)
                .prop_map(Value::from),
        ),
        maybe(prop_oneof![
            8 => prop_oneof![Just(json!(0)), Just(json!(52428800)), Just(json!(5368709120_i64))],
            1 => Just(json!(-1)),
        ]),
    )
        .prop_map(|(names, size)| object(vec![("names", names), ("sizeBytes", size)]));
    (
        metadata(false),
        maybe(proptest::collection::vec(taint, 0..3).prop_map(Value::from)),
        maybe(any::<bool>().prop_map(Value::from)),
        maybe(resource_list()),
        maybe(string_map()),
        maybe(proptest::collection::vec(condition, 0..3).prop_map(Value::from)),
        maybe(proptest::collection::vec(image, 0..3).prop_map(Value::from)),
    )
        .prop_map(
            |(
                mut metadata,
                taints,
                unschedulable,
                allocatable,
                annotations,
                conditions,
                images,
            )| {
                if let (Some(annotations), Some(fields)) = (annotations, metadata.as_object_mut()) {
                    fields.insert("annotations".into(), annotations);
                }
                object(vec![
                    ("apiVersion", Some(json!("v1"))),
                    ("kind", Some(json!("Node"))),
                    ("metadata", Some(metadata)),
                    (
                        "spec",
                        Some(object(vec![
                            ("taints", taints),
                            ("unschedulable", unschedulable),
                        ])),
                    ),
                    (
                        "status",
                        Some(object(vec![
                            ("allocatable", allocatable),
                            ("conditions", conditions),
                            ("images", images),
                        ])),
                    ),
                ])
            },
        )
}

fn container() -> impl Strategy<Value = Value> {
    let port = (
        maybe(prop_oneof![
            8 => prop_oneof![Just(json!(0)), Just(json!(80)), Just(json!(65535))],
            1 => prop_oneof![Just(json!(70000)), Just(json!(-1))],
        ]),
        maybe(Just(json!(8080))),
        maybe(mostly(&["", "TCP", "UDP", "SCTP"], &["ICMP", "tcp"])),
        maybe(pick(&["", "10.0.0.1"])),
    )
        .prop_map(|(host_port, container_port, protocol, host_ip)| {
            object(vec![
                ("hostPort", host_port),
                ("containerPort", container_port),
                ("protocol", protocol),
                ("hostIP", host_ip),
            ])
        });
    (
        maybe(pick(&["app", "sidecar", ""])),
        maybe(resource_list()),
        maybe(resource_list()),
        maybe(proptest::collection::vec(port, 0..3).prop_map(Value::from)),
        maybe(mostly(
            &["", "Always", "OnFailure", "Never"],
            &["Sometimes"],
        )),
        maybe(pick(&[
            "nginx",
            "registry.example:5000/app",
            "busybox:1.36",
            "",
        ])),
    )
        .prop_map(|(name, requests, limits, ports, restart_policy, image)| {
            object(vec![
                ("name", name),
                (
                    "resources",
                    Some(object(vec![("requests", requests), ("limits", limits)])),
                ),
                ("ports", ports),
                ("restartPolicy", restart_policy),
                ("image", image),
            ])
        })
}

fn toleration() -> impl Strategy<Value = Value> {
    (
        maybe(pick(&["k", "", "dedicated"])),
        maybe(mostly(&["", "Equal", "Exists"], &["Maybe"])),
        maybe(pick(&["", "v"])),
        maybe(mostly(&["", "NoSchedule", "NoExecute"], &["Sometimes"])),
        maybe(Just(json!(30))),
    )
        .prop_map(|(key, operator, value, effect, seconds)| {
            object(vec![
                ("key", key),
                ("operator", operator),
                ("value", value),
                ("effect", effect),
                ("tolerationSeconds", seconds),
            ])
        })
}

fn affinity() -> impl Strategy<Value = Value> {
    let term = || {
        (
            maybe(
                proptest::collection::vec(requirement(NODE_OPERATORS), 0..2).prop_map(Value::from),
            ),
            maybe(
                proptest::collection::vec(requirement(NODE_OPERATORS), 0..2).prop_map(Value::from),
            ),
        )
            .prop_map(|(expressions, fields)| {
                object(vec![
                    ("matchExpressions", expressions),
                    ("matchFields", fields),
                ])
            })
    };
    let weight = || {
        prop_oneof![
            8 => prop_oneof![Just(json!(1)), Just(json!(50)), Just(json!(100))],
            1 => prop_oneof![Just(json!(0)), Just(json!(101))],
        ]
    };
    let preferred_node = (weight(), maybe(term())).prop_map(|(weight, preference)| {
        object(vec![("weight", Some(weight)), ("preference", preference)])
    });
    let node_affinity = (
        maybe(proptest::collection::vec(term(), 0..2).prop_map(Value::from)),
        maybe(proptest::collection::vec(preferred_node, 0..2).prop_map(Value::from)),
    )
        .prop_map(|(required, preferred)| {
            object(vec![
                (
                    "requiredDuringSchedulingIgnoredDuringExecution",
                    required.map(|terms| json!({"nodeSelectorTerms": terms})),
                ),
                ("preferredDuringSchedulingIgnoredDuringExecution", preferred),
            ])
        });
    let pod_term = || {
        (
            maybe(selector()),
            maybe(values()),
            maybe(selector()),
            mostly(&["zone", "kubernetes.io/hostname"], &[""]).prop_map(Some),
        )
            .prop_map(|(labels, namespaces, namespace_selector, key)| {
                object(vec![
                    ("labelSelector", labels),
                    ("namespaces", namespaces),
                    ("namespaceSelector", namespace_selector),
                    ("topologyKey", key),
                ])
            })
    };
    let pod_terms = move || {
        (
            maybe(proptest::collection::vec(pod_term(), 0..2).prop_map(Value::from)),
            maybe(
                proptest::collection::vec(
                    (weight(), maybe(pod_term())).prop_map(|(weight, term)| {
                        object(vec![("weight", Some(weight)), ("podAffinityTerm", term)])
                    }),
                    0..2,
                )
                .prop_map(Value::from),
            ),
        )
            .prop_map(|(required, preferred)| {
                object(vec![
                    ("requiredDuringSchedulingIgnoredDuringExecution", required),
                    ("preferredDuringSchedulingIgnoredDuringExecution", preferred),
                ])
            })
    };
    (maybe(node_affinity), maybe(pod_terms()), maybe(pod_terms())).prop_map(|(node, pod, anti)| {
        object(vec![
            ("nodeAffinity", node),
            ("podAffinity", pod),
            ("podAntiAffinity", anti),
        ])
    })
}

fn spread_constraint() -> impl Strategy<Value = Value> {
    (
        prop_oneof![12 => prop_oneof![Just(json!(1)), Just(json!(3))].prop_map(Some), 1 => Just(Some(json!(0))), 1 => Just(None)],
        mostly(&["zone"], &[""]).prop_map(Some),
        mostly(&["DoNotSchedule", "ScheduleAnyway"], &["", "Maybe"]).prop_map(Some),
        maybe(selector()),
        maybe(Just(json!(2))),
        maybe(values()),
        maybe(mostly(&["", "Honor", "Ignore"], &["Always"])),
        maybe(mostly(&["", "Honor", "Ignore"], &["Never"])),
    )
        .prop_map(
            |(skew, key, when, selector, min_domains, keys, affinity_policy, taints_policy)| {
                object(vec![
                    ("maxSkew", skew),
                    ("topologyKey", key),
                    ("whenUnsatisfiable", when),
                    ("labelSelector", selector),
                    ("minDomains", min_domains),
                    ("matchLabelKeys", keys),
                    ("nodeAffinityPolicy", affinity_policy),
                    ("nodeTaintsPolicy", taints_policy),
                ])
            },
        )
}

fn pod() -> impl Strategy<Value = Value> {
    let spec = (
        (
            maybe(pick(&["", "n1"])),
            maybe(pick(&["", "default-scheduler", "batch"])),
            maybe(prop_oneof![
                Just(json!(0)),
                Just(json!(100)),
                Just(json!(-5))
            ]),
            maybe(mostly(
                &["", "PreemptLowerPriority", "Never"],
                &["Sometimes"],
            )),
            maybe(proptest::collection::vec(container(), 0..3).prop_map(Value::from)),
            maybe(proptest::collection::vec(container(), 0..2).prop_map(Value::from)),
        ),
        (
            maybe(resource_list()),
            maybe((maybe(resource_list()), maybe(resource_list())).prop_map(
                |(requests, limits)| object(vec![("requests", requests), ("limits", limits)]),
            )),
            maybe(proptest::collection::vec(toleration(), 0..3).prop_map(Value::from)),
            maybe(string_map()),
            maybe(affinity()),
            maybe(proptest::collection::vec(spread_constraint(), 0..2).prop_map(Value::from)),
            maybe(prop_oneof![
                Just(json!({})),
                Just(json!({"podGroupName": ""})),
                Just(json!({"podGroupName": "gang-1"})),
            ]),
        ),
    )
        .prop_map(
            |(
                (node, scheduler, priority, policy, containers, init),
                (overhead, resources, tolerations, node_selector, affinity, spread, group),
            )| {
                object(vec![
                    ("nodeName", node),
                    ("schedulerName", scheduler),
                    ("priority", priority),
                    ("preemptionPolicy", policy),
                    ("containers", containers),
                    ("initContainers", init),
                    ("overhead", overhead),
                    ("resources", resources),
                    ("tolerations", tolerations),
                    ("nodeSelector", node_selector),
                    ("affinity", affinity),
                    ("topologySpreadConstraints", spread),
                    ("schedulingGroup", group),
                ])
            },
        );
    let condition = (
        maybe(pick(&["DisruptionTarget", "Ready"])),
        maybe(pick(&["True", "False"])),
        maybe(pick(&["PreemptionByScheduler", ""])),
    )
        .prop_map(|(kind, status, reason)| {
            object(vec![("type", kind), ("status", status), ("reason", reason)])
        });
    let status = (
        maybe(timestamp()),
        maybe(proptest::collection::vec(condition, 0..2).prop_map(Value::from)),
        maybe(pick(&["", "n2"])),
        maybe(mostly(
            &["", "Pending", "Running", "Succeeded"],
            &["Sleeping"],
        )),
    )
        .prop_map(|(start, conditions, nominated, phase)| {
            object(vec![
                ("startTime", start),
                ("conditions", conditions),
                ("nominatedNodeName", nominated),
                ("phase", phase),
            ])
        });
    (metadata(true), maybe(spec), maybe(status)).prop_map(|(metadata, spec, status)| {
        object(vec![
            ("apiVersion", Some(json!("v1"))),
            ("kind", Some(json!("Pod"))),
            ("metadata", Some(metadata)),
            ("spec", spec),
            ("status", status),
        ])
    })
}

fn pdb() -> impl Strategy<Value = Value> {
    let disrupted = proptest::collection::vec(pick(&["p1", "p2", "p3"]), 0..3).prop_map(|names| {
        Value::Object(
            names
                .into_iter()
                .map(|n| {
                    (
                        n.as_str().unwrap().to_string(),
                        json!("2024-05-01T10:00:00Z"),
                    )
                })
                .collect(),
        )
    });
    (
        metadata(true),
        maybe(selector()),
        maybe(prop_oneof![Just(json!(0)), Just(json!(2))]),
        maybe(disrupted),
    )
        .prop_map(|(metadata, selector, allowed, disrupted)| {
            object(vec![
                ("apiVersion", Some(json!("policy/v1"))),
                ("kind", Some(json!("PodDisruptionBudget"))),
                ("metadata", Some(metadata)),
                ("spec", Some(object(vec![("selector", selector)]))),
                (
                    "status",
                    Some(object(vec![
                        ("disruptionsAllowed", allowed),
                        ("disruptedPods", disrupted),
                    ])),
                ),
            ])
        })
}

/// All readers agree with the first (the JSON one).
fn agree<T: PartialEq + std::fmt::Debug>(
    object: &Value,
    outcomes: &[Outcome<T>],
) -> Result<(), TestCaseError> {
    let (json, others) = outcomes.split_first().expect("outcomes");
    for (i, other) in others.iter().enumerate() {
        prop_assert_eq!(json, other, "reader {} differs on {}", i + 1, object);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_node_is_the_same_whichever_reader_reads_it(object in node()) {
        agree(&object, &node_outcomes(&object))?;
    }

    #[test]
    fn a_pod_is_the_same_whichever_reader_reads_it(object in pod()) {
        agree(&object, &pod_outcomes(&object))?;
    }

    #[test]
    fn a_budget_is_the_same_whichever_reader_reads_it(object in pdb()) {
        agree(&object, &pdb_outcomes(&object))?;
    }
}

/// The generators reach both sides of the rules: objects built and objects refused, the
/// refusals at many fields.
#[test]
fn the_generated_objects_are_both_valid_and_invalid() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut built, mut fields) = (0, std::collections::BTreeSet::new());
    for _ in 0..400 {
        let object = pod().new_tree(&mut runner).expect("tree").current();
        match &pod_outcomes(&object)[0] {
            Ok(_) => built += 1,
            Err((path, _)) => {
                fields.insert(path.split('[').next().unwrap_or_default().to_string());
            }
        }
    }
    assert!(built >= 100, "{built} of 400 pods built");
    assert!(fields.len() >= 8, "refused only at {fields:?}");
}
