//! One comparison rule: same outcome; for PREEMPT preemptd's node is one upstream may pick and
//! its victims and nominations to clear are upstream's for that node; for FITS the same
//! feasible nodes and, when both sides name one, the same placement node (the node the
//! kube-scheduler binds the pod to; upstream's tie-break pinned to the lowest name).
//!
//! For a PodGroup preemptor (upstream's answer has `victims`, not `victimsByNode`): same
//! outcome, the same victims in the same order, the same budget violations, the same node for
//! every member, the same nominations to clear.

use std::collections::BTreeSet;

use serde_json::Value;

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn pod_refs(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|p| {
                    format!(
                        "{}/{}",
                        p["namespace"].as_str().unwrap_or(""),
                        p["name"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The outcome name both sides share: upstream says PREEMPT, preemptd OUTCOME_PREEMPT.
fn outcome(v: &Value) -> &str {
    let s = v["outcome"].as_str().unwrap_or("");
    s.strip_prefix("OUTCOME_").unwrap_or(s)
}

/// Pod references in order, as `namespace/name`.
fn pod_list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|p| {
                    format!(
                        "{}/{}",
                        p["namespace"].as_str().unwrap_or(""),
                        p["name"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `member -> node` of a group answer's nominations.
fn nominations(v: &Value) -> std::collections::BTreeMap<String, String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|n| {
                    let pod = &n["pod"];
                    (
                        format!(
                            "{}/{}",
                            pod["namespace"].as_str().unwrap_or(""),
                            pod["name"].as_str().unwrap_or("")
                        ),
                        n["nodeName"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A proto3 JSON int64: a string, a number, or absent for zero.
fn int64(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().unwrap_or(-1),
        Value::Number(n) => n.as_i64().unwrap_or(-1),
        _ => 0,
    }
}

/// Whether `upstream` is the harness's answer for a PodGroup preemptor.
pub fn is_group_answer(upstream: &Value) -> bool {
    upstream.get("victimsByNode").is_none() && upstream.get("nominations").is_some()
}

/// Both victim lists with every unit of several pods (a disruption-mode-all group, whose pods
/// upstream lists in Go map order) sorted, cut where upstream's `victimUnits` cut.
fn canonical_victims(upstream: &Value, preemptd: &Value) -> (Vec<String>, Vec<String>) {
    let (mut ours, mut theirs) = (
        pod_list(&preemptd["victims"]),
        pod_list(&upstream["victims"]),
    );
    let mut start = 0;
    for unit in upstream["victimUnits"].as_array().into_iter().flatten() {
        let end = start + unit.as_array().map_or(0, Vec::len);
        for list in [&mut ours, &mut theirs] {
            if end <= list.len() {
                list[start..end].sort();
            }
        }
        start = end;
    }
    (ours, theirs)
}

fn group_difference(upstream: &Value, preemptd: &Value) -> Option<String> {
    let (victims, expected) = canonical_victims(upstream, preemptd);
    if victims != expected {
        let (a, b): (BTreeSet<_>, BTreeSet<_>) =
            (victims.iter().collect(), expected.iter().collect());
        let what = if a == b { "order" } else { "set" };
        return Some(format!(
            "victims ({what}) {victims:?}, upstream {expected:?}"
        ));
    }
    let (ours, theirs) = (
        int64(&preemptd["pdbViolations"]),
        int64(&upstream["pdbViolations"]),
    );
    if ours != theirs {
        return Some(format!("pdbViolations {ours}, upstream {theirs}"));
    }
    let (ours, theirs) = (
        nominations(&preemptd["nominations"]),
        nominations(&upstream["nominations"]),
    );
    if ours != theirs {
        let members: BTreeSet<&String> = ours.keys().chain(theirs.keys()).collect();
        let differing: Vec<String> = members
            .into_iter()
            .filter(|m| ours.get(*m) != theirs.get(*m))
            .map(|m| {
                format!(
                    "{m}: {:?}, upstream {:?}",
                    ours.get(m).map_or("-", String::as_str),
                    theirs.get(m).map_or("-", String::as_str)
                )
            })
            .collect();
        return Some(format!("nominations differ: {}", differing.join("; ")));
    }
    let cleared = pod_refs(&preemptd["nominatedPodsToClear"]);
    let expected = pod_refs(&upstream["nominatedPodsToClear"]);
    if cleared != expected {
        return Some(format!(
            "nominations to clear {cleared:?}, upstream {expected:?}"
        ));
    }
    None
}

/// None when preemptd agrees with upstream, else what differs.
pub fn difference(upstream: &Value, preemptd: &Value) -> Option<String> {
    let (up, ours) = (outcome(upstream), outcome(preemptd));
    if up != ours {
        let why = upstream["message"].as_str().unwrap_or("");
        return Some(format!(
            "outcome {ours}, upstream {up} ({why}); preemptd: {}",
            preemptd["message"].as_str().unwrap_or("")
        ));
    }
    if is_group_answer(upstream) {
        return group_difference(upstream, preemptd);
    }
    match up {
        "PREEMPT" => {
            let node = preemptd["nominatedNodeName"].as_str().unwrap_or("");
            let tied = strings(&upstream["nominatedNodeNameAnyOf"]);
            if !tied.contains(node) {
                return Some(format!("node {node:?}, upstream any of {tied:?}"));
            }
            let victims = pod_refs(&preemptd["victims"]);
            let expected = strings(&upstream["victimsByNode"][node]);
            if victims != expected {
                return Some(format!(
                    "victims on {node} {victims:?}, upstream {expected:?}"
                ));
            }
            let cleared = pod_refs(&preemptd["nominatedPodsToClear"]);
            let expected = strings(&upstream["nominatedPodsToClearByNode"][node]);
            if cleared != expected {
                return Some(format!(
                    "nominations to clear on {node} {cleared:?}, upstream {expected:?}"
                ));
            }
        }
        "FITS" => {
            let ours = strings(&preemptd["feasibleNodes"]);
            let theirs = strings(&upstream["feasibleNodes"]);
            if ours != theirs {
                return Some(format!("feasible nodes {ours:?}, upstream {theirs:?}"));
            }
            if let (Some(ours), Some(theirs)) = (
                preemptd["placement"]["nodeName"].as_str(),
                upstream["placementNode"].as_str(),
            ) && ours != theirs
            {
                return Some(format!("placement {ours}, upstream {theirs}"));
            }
        }
        _ => {}
    }
    None
}

#[cfg(test)]
mod tests {
    use super::difference;
    use serde_json::json;

    fn upstream_preempt() -> serde_json::Value {
        json!({
            "outcome": "PREEMPT",
            "nominatedNodeNameAnyOf": ["n1", "n2"],
            "victimsByNode": {"n1": ["default/a"], "n2": ["default/b"]},
            "nominatedPodsToClearByNode": {"n1": [], "n2": ["default/c"]},
        })
    }

    fn ours(node: &str, victim: &str, cleared: &[&str]) -> serde_json::Value {
        let cleared: Vec<_> = cleared
            .iter()
            .map(|n| json!({"namespace": "default", "name": n, "uid": n}))
            .collect();
        json!({
            "outcome": "OUTCOME_PREEMPT",
            "nominatedNodeName": node,
            "victims": [{"namespace": "default", "name": victim, "uid": victim}],
            "nominatedPodsToClear": cleared,
        })
    }

    #[test]
    fn any_node_of_the_tie_with_its_own_victims_agrees() {
        assert_eq!(difference(&upstream_preempt(), &ours("n1", "a", &[])), None);
        assert_eq!(
            difference(&upstream_preempt(), &ours("n2", "b", &["c"])),
            None
        );
    }

    #[test]
    fn a_node_outside_the_tie_or_other_victims_or_nominations_differ() {
        let up = upstream_preempt();
        assert!(
            difference(&up, &ours("n3", "a", &[]))
                .unwrap()
                .starts_with("node")
        );
        assert!(
            difference(&up, &ours("n1", "b", &[]))
                .unwrap()
                .starts_with("victims")
        );
        assert!(
            difference(&up, &ours("n2", "b", &[]))
                .unwrap()
                .starts_with("nominations")
        );
    }

    fn group(victims: &[&str], noms: &[(&str, &str)], pdb: i64) -> serde_json::Value {
        let refs = |names: &[&str]| -> Vec<serde_json::Value> {
            names
                .iter()
                .map(|n| json!({"namespace": "default", "name": n, "uid": n}))
                .collect()
        };
        let noms: Vec<_> = noms
            .iter()
            .map(|(m, n)| json!({"pod": {"namespace": "default", "name": m, "uid": m}, "nodeName": n}))
            .collect();
        json!({"outcome": "PREEMPT", "victims": refs(victims), "pdbViolations": pdb,
               "nominations": noms, "nominatedPodsToClear": []})
    }

    #[test]
    fn group_answers_compare_victim_order_budgets_and_every_members_node() {
        let up = group(&["a", "b"], &[("m0", "n1"), ("m1", "n2")], 1);
        // preemptd's proto3 JSON: OUTCOME_ prefix, int64 as a string, empty lists omitted.
        let same = json!({"outcome": "OUTCOME_PREEMPT",
            "victims": up["victims"], "pdbViolations": "1",
            "nominations": [up["nominations"][1], up["nominations"][0]]});
        assert_eq!(difference(&up, &same), None);
        let reordered = group(&["b", "a"], &[("m0", "n1"), ("m1", "n2")], 1);
        assert!(
            difference(&up, &reordered)
                .unwrap()
                .starts_with("victims (order)")
        );
        let other = group(&["a"], &[("m0", "n1"), ("m1", "n2")], 1);
        assert!(
            difference(&up, &other)
                .unwrap()
                .starts_with("victims (set)")
        );
        let budgets = group(&["a", "b"], &[("m0", "n1"), ("m1", "n2")], 0);
        assert!(
            difference(&up, &budgets)
                .unwrap()
                .starts_with("pdbViolations")
        );
        let moved = group(&["a", "b"], &[("m0", "n1"), ("m1", "n3")], 1);
        assert_eq!(
            difference(&up, &moved).unwrap(),
            r#"nominations differ: default/m1: "n3", upstream "n2""#
        );
        let unplaced = group(&["a", "b"], &[("m0", "n1")], 1);
        assert!(
            difference(&up, &unplaced)
                .unwrap()
                .starts_with("nominations differ")
        );
    }

    #[test]
    fn pods_of_one_all_mode_unit_may_come_in_any_order() {
        let mut up = group(&["x", "a", "b"], &[], 0);
        up["victimUnits"] = json!([[up["victims"][0]], [up["victims"][1], up["victims"][2]]]);
        assert_eq!(difference(&up, &group(&["x", "b", "a"], &[], 0)), None);
        assert!(
            difference(&up, &group(&["a", "x", "b"], &[], 0))
                .unwrap()
                .starts_with("victims (order)")
        );
    }

    #[test]
    fn a_fits_placement_is_compared_when_both_name_one() {
        let up = json!({"outcome": "FITS", "feasibleNodes": ["n1", "n2"], "placementNode": "n2"});
        let ours = |placement: serde_json::Value| json!({"outcome": "OUTCOME_FITS", "feasibleNodes": ["n1", "n2"], "placement": placement});
        assert_eq!(difference(&up, &ours(json!({"nodeName": "n2"}))), None);
        assert_eq!(difference(&up, &ours(serde_json::Value::Null)), None);
        assert_eq!(
            difference(&up, &ours(json!({"nodeName": "n1"}))).unwrap(),
            "placement n1, upstream n2"
        );
    }

    #[test]
    fn outcomes_and_feasible_nodes_are_compared() {
        let fits = json!({"outcome": "FITS", "feasibleNodes": ["n1"]});
        assert_eq!(
            difference(
                &fits,
                &json!({"outcome": "OUTCOME_FITS", "feasibleNodes": ["n1"]})
            ),
            None
        );
        assert!(
            difference(
                &fits,
                &json!({"outcome": "OUTCOME_FITS", "feasibleNodes": ["n1", "n2"]})
            )
            .unwrap()
            .starts_with("feasible")
        );
        assert!(
            difference(&fits, &json!({"outcome": "OUTCOME_NO_CANDIDATE"}))
                .unwrap()
                .starts_with("outcome NO_CANDIDATE, upstream FITS")
        );
    }
}
