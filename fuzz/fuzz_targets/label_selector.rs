//! Label selectors: a PodDisruptionBudget's selector read from Kubernetes JSON is refused
//! (kept, and skipped as upstream skips a budget whose selector it cannot convert) exactly
//! when upstream's `LabelSelectorAsSelector` fails, and otherwise selects exactly the pods
//! `labels.Selector` selects. Keys, values and operators come from small vocabularies whose
//! validity is known, so the expected answer is plain set logic.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use preemptd::model::decode;
use serde_json::{Value, json};

/// Label keys, and whether each is a qualified name.
const KEYS: &[(&str, bool)] = &[
    ("app", true),
    ("tier", true),
    ("example.com/role", true),
    ("a-b_c.d", true),
    ("", false),
    ("bad key", false),
    ("-app", false),
    ("example.com/", false),
];
/// Label values, and whether each is a label value.
const VALUES: &[(&str, bool)] = &[
    ("web", true),
    ("db", true),
    ("", true),
    ("a.b-c_d", true),
    ("bad value", false),
    ("-web", false),
];
/// Operators, and whether upstream knows each.
const OPERATORS: &[(&str, bool)] = &[
    ("In", true),
    ("NotIn", true),
    ("Exists", true),
    ("DoesNotExist", true),
    ("in", false),
    ("Gt", false),
];

#[derive(Arbitrary, Debug)]
struct Case {
    match_labels: Vec<(u8, u8)>,
    expressions: Vec<(u8, u8, Vec<u8>)>,
    /// The pod's labels: only valid keys and values (a pod's labels are validated by the
    /// API server).
    pod_labels: Vec<(u8, u8)>,
}

fn pick<T: Copy>(table: &[T], index: u8) -> T {
    table[usize::from(index) % table.len()]
}

fn valid_pick<T: Copy>(table: &[(T, bool)], index: u8) -> T {
    let valid: Vec<T> = table.iter().filter(|e| e.1).map(|e| e.0).collect();
    valid[usize::from(index) % valid.len()]
}

fuzz_target!(|case: Case| {
    // Later entries of a JSON object replace earlier ones, as Go's decoder does.
    let mut match_labels = serde_json::Map::new();
    for &(k, v) in &case.match_labels {
        match_labels.insert(pick(KEYS, k).0.into(), pick(VALUES, v).0.into());
    }
    let mut pod_labels = serde_json::Map::new();
    for &(k, v) in &case.pod_labels {
        pod_labels.insert(valid_pick(KEYS, k).into(), valid_pick(VALUES, v).into());
    }
    let expressions: Vec<(&str, bool, &str, bool, Vec<(&str, bool)>)> = case
        .expressions
        .iter()
        .map(|(k, op, values)| {
            let (key, key_ok) = pick(KEYS, *k);
            let (op, op_ok) = pick(OPERATORS, *op);
            (
                key,
                key_ok,
                op,
                op_ok,
                values.iter().map(|&v| pick(VALUES, v)).collect(),
            )
        })
        .collect();

    let convertible = match_labels.iter().all(|(k, v)| {
        KEYS.iter().any(|e| e.0 == k && e.1)
            && VALUES.iter().any(|e| Some(e.0) == v.as_str() && e.1)
    }) && expressions.iter().all(|(_, key_ok, op, op_ok, values)| {
        let sized = match *op {
            "In" | "NotIn" => !values.is_empty(),
            _ => values.is_empty(),
        };
        *key_ok && *op_ok && sized && values.iter().all(|v| v.1)
    });
    let label = |key: &str| pod_labels.get(key).and_then(Value::as_str);
    let selected = match_labels.iter().all(|(k, v)| label(k) == v.as_str())
        && expressions.iter().all(|(key, _, op, _, values)| {
            let listed = |value: &str| values.iter().any(|v| v.0 == value);
            match *op {
                "In" => label(key).is_some_and(listed),
                "NotIn" => !label(key).is_some_and(listed),
                "Exists" => label(key).is_some(),
                _ => label(key).is_none(),
            }
        });

    let pdb = json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"namespace": "ns", "name": "budget"},
        "spec": {
            "minAvailable": 1,
            "selector": {
                "matchLabels": match_labels,
                "matchExpressions": expressions.iter().map(|(key, _, op, _, values)| json!({
                    "key": key,
                    "operator": op,
                    "values": values.iter().map(|v| v.0).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            },
        },
    });
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "ns", "name": "p", "uid": "u", "labels": pod_labels},
        "spec": {"containers": [{"name": "c"}]},
    });
    let pdb = decode::decode_pdb(&parse(&pdb)).expect("a budget is never refused for its selector");
    let pod = decode::decode_pod(&parse(&pod)).expect("a pod with valid labels is read");
    let selector = pdb.selector.expect("the budget has a selector");
    assert_eq!(selector.is_valid(), convertible, "{selector:?}");
    if convertible {
        assert_eq!(
            selector.matches(&pod.labels),
            selected,
            "{selector:?} / {:?}",
            pod.labels
        );
    }
});

/// The document as preemptd's reader parses it.
fn parse(value: &Value) -> Value {
    decode::parse_document(&value.to_string()).expect("serde_json writes JSON")
}
