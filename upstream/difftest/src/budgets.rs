//! Pods matched by several PodDisruptionBudgets. From v1.37 upstream's classification of such a
//! pod depends on the order of the budget list (it stops at the first budget that goes
//! negative); the harness pins (namespace, name) order, as preemptd walks them. On a mismatch
//! `other_orders` says whether preemptd's answer is upstream's under another order.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::compare::difference;
use crate::generate::Scenario;
use crate::peers::Harness;

/// Budget orders `other_orders` tries at most (every order up to five budgets).
const MAX_ORDERS: usize = 120;

fn namespace(object: &Value) -> &str {
    object["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
}

fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or("")
}

/// A label selector as upstream's budget matching reads it: an empty or missing selector
/// matches nothing, and so does one it cannot parse (an unknown operator, `In` without values).
pub fn selector_matches(selector: &Value, labels: &serde_json::Map<String, Value>) -> bool {
    let match_labels = selector["matchLabels"].as_object();
    let expressions = selector["matchExpressions"].as_array();
    if match_labels.is_none_or(|m| m.is_empty()) && expressions.is_none_or(|e| e.is_empty()) {
        return false;
    }
    let label = |key: &str| labels.get(key).and_then(Value::as_str);
    let labels_match = match_labels
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k).is_some_and(|l| Some(l) == v.as_str()));
    let expressions_match = expressions.into_iter().flatten().all(|e| {
        let key = e["key"].as_str().unwrap_or("");
        let values: Vec<&str> = e["values"]
            .as_array()
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match e["operator"].as_str() {
            Some("In") => !values.is_empty() && label(key).is_some_and(|l| values.contains(&l)),
            Some("NotIn") => !values.is_empty() && label(key).is_none_or(|l| !values.contains(&l)),
            Some("Exists") => label(key).is_some(),
            Some("DoesNotExist") => label(key).is_none(),
            _ => false,
        }
    });
    labels_match && expressions_match
}

/// Whether `budget` counts `pod` as upstream's classification does: same namespace, the pod
/// has labels and the selector matches them, and the pod is not already in `disruptedPods`.
pub fn counts(budget: &Value, pod: &Value) -> bool {
    let Some(labels) = pod["metadata"]["labels"].as_object() else {
        return false;
    };
    namespace(budget) == namespace(pod)
        && !labels.is_empty()
        && selector_matches(&budget["spec"]["selector"], labels)
        && budget["status"]["disruptedPods"].get(name(pod)).is_none()
}

/// The most budgets that count one bound, non-terminal pod of the List.
pub fn most_budgets_on_one_pod(cluster: &Value) -> usize {
    let items = cluster["items"].as_array().map_or(&[][..], Vec::as_slice);
    let budgets: Vec<&Value> = items
        .iter()
        .filter(|i| i["kind"] == "PodDisruptionBudget")
        .collect();
    items
        .iter()
        .filter(|i| i["kind"] == "Pod" && i["spec"]["nodeName"].is_string())
        .filter(|p| !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
        .map(|p| budgets.iter().filter(|b| counts(b, p)).count())
        .max()
        .unwrap_or(0)
}

/// Every permutation of `0..n`, or MAX_ORDERS shuffles (the same ones every run) when there
/// are more.
fn orders(n: usize) -> Vec<Vec<usize>> {
    fn permute(prefix: &mut Vec<usize>, rest: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if rest.is_empty() {
            out.push(prefix.clone());
            return;
        }
        for i in 0..rest.len() {
            let x = rest.remove(i);
            prefix.push(x);
            permute(prefix, rest, out);
            prefix.pop();
            rest.insert(i, x);
        }
    }
    if (1..=n).product::<usize>() <= MAX_ORDERS {
        let mut out = Vec::new();
        permute(&mut Vec::new(), &mut (0..n).collect(), &mut out);
        return out;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    (0..MAX_ORDERS)
        .map(|_| {
            let mut o: Vec<usize> = (0..n).collect();
            o.shuffle(&mut rng);
            o
        })
        .collect()
}

/// Asks upstream with the List's budgets in other orders and says whether one of them gives
/// preemptd's answer.
pub fn other_orders(
    harness: &mut Harness,
    s: &Scenario,
    preemptd_answer: &Value,
) -> Result<String, String> {
    let items = s.cluster["items"].as_array().map_or(&[][..], Vec::as_slice);
    let slots: Vec<usize> = (0..items.len())
        .filter(|&i| items[i]["kind"] == "PodDisruptionBudget")
        .collect();
    let tried = orders(slots.len());
    for order in &tried {
        let mut reordered = items.to_vec();
        for (slot, &from) in slots.iter().zip(order) {
            reordered[*slot] = items[slots[from]].clone();
        }
        let mut cluster = s.cluster.clone();
        cluster["items"] = Value::Array(reordered);
        if let Ok(upstream) = harness.ask_with_budget_order(&cluster, &s.preemptor, "listed")?
            && difference(&upstream, preemptd_answer).is_none()
        {
            let names: Vec<String> = order
                .iter()
                .map(|&from| {
                    let b = &items[slots[from]];
                    format!("{}/{}", namespace(b), name(b))
                })
                .collect();
            return Ok(format!(
                "preemptd's answer is upstream's with the budgets in the order {}",
                names.join(", ")
            ));
        }
    }
    Ok(format!(
        "preemptd's answer is upstream's under none of {} budget orders",
        tried.len()
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(ns: &str, name: &str, labels: Value) -> Value {
        json!({"kind": "Pod", "metadata": {"namespace": ns, "name": name, "labels": labels},
               "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}})
    }

    fn budget(ns: &str, selector: Value, disrupted: Value) -> Value {
        json!({"kind": "PodDisruptionBudget", "metadata": {"namespace": ns, "name": "b"},
               "spec": {"selector": selector}, "status": {"disruptedPods": disrupted}})
    }

    #[test]
    fn selectors_match_as_upstream_reads_them() {
        let labels = json!({"app": "web", "tier": "front"});
        let labels = labels.as_object().expect("labels");
        let cases = [
            (json!({"matchLabels": {"app": "web"}}), true),
            (json!({"matchLabels": {"app": "db"}}), false),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "web"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "version", "operator": "NotIn", "values": ["v1"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}),
                false,
            ),
            (
                json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}),
                false,
            ),
            (json!({}), false),
            (Value::Null, false),
        ];
        for (selector, want) in cases {
            assert_eq!(selector_matches(&selector, labels), want, "{selector}");
        }
    }

    #[test]
    fn a_budget_counts_pods_of_its_namespace_with_labels_not_yet_disrupted() {
        let web = json!({"matchLabels": {"app": "web"}});
        let p = pod("default", "p1", json!({"app": "web"}));
        assert!(counts(&budget("default", web.clone(), json!({})), &p));
        assert!(!counts(&budget("team-a", web.clone(), json!({})), &p));
        assert!(!counts(
            &budget("default", web, json!({"p1": "2026-01-01T00:00:00Z"})),
            &p
        ));
        let anything_but_db =
            json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]});
        assert!(!counts(
            &budget("default", anything_but_db, json!({})),
            &pod("default", "p2", json!({}))
        ));
    }

    #[test]
    fn the_most_budgets_on_one_bound_pod_are_counted() {
        let web = json!({"matchLabels": {"app": "web"}});
        let front = json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]});
        let mut pending = pod("default", "p2", json!({"app": "web", "tier": "front"}));
        pending["spec"] = json!({});
        let cluster = json!({"items": [
            pod("default", "p1", json!({"app": "web"})),
            pending,
            budget("default", web, json!({})),
            budget("default", front, json!({})),
        ]});
        assert_eq!(most_budgets_on_one_pod(&cluster), 1);
    }

    #[test]
    fn orders_are_every_permutation_up_to_five_budgets() {
        assert_eq!(orders(3).len(), 6);
        let five = orders(5);
        assert_eq!(five.len(), 120);
        let distinct: std::collections::HashSet<_> = five.iter().collect();
        assert_eq!(distinct.len(), 120);
        assert_eq!(orders(7).len(), MAX_ORDERS);
        assert_eq!(orders(7), orders(7));
    }
}
