//! One comparison rule: same outcome; for PREEMPT preemptd's node is one upstream may pick and
//! its victims and nominations to clear are upstream's for that node; for FITS the same
//! feasible nodes.

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
