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
