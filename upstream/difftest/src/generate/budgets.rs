//! The PodDisruptionBudgets of a scenario: independent ones with random selectors, and often a
//! layer of two or three budgets in one namespace that all count one bound pod, some of them
//! exhausted (disruptionsAllowed 0), so that pods matched by several budgets are common. From
//! v1.37 upstream's classification of such a pod depends on the budgets' order; names and the
//! List's order are shuffled independently, so the List rarely lists them in the order they
//! are walked in, (namespace, name).

use rand::Rng;
use rand::seq::{IndexedRandom, SliceRandom};
use serde_json::{Map, Value, json};

use super::{APPS, Ctx, random_namespace, selector};

fn namespace_of(pod: &Value) -> &str {
    pod["metadata"]["namespace"].as_str().unwrap_or("default")
}

fn name_of(pod: &Value) -> &str {
    pod["metadata"]["name"].as_str().unwrap_or("")
}

/// The scenario's budgets, named and listed in shuffled orders.
pub(super) fn budgets(ctx: &mut Ctx, bound: &[Value]) -> Vec<Value> {
    let independent = match ctx.rng.random_range(0..10) {
        0..5 => 0,
        5..8 => 1,
        _ => ctx.rng.random_range(2..=4),
    };
    let mut list: Vec<Value> = (0..independent)
        .map(|_| independent_budget(ctx, bound))
        .collect();
    if ctx.chance(0.5) {
        list.extend(layered_budgets(ctx, bound));
    }
    let mut names: Vec<usize> = (1..=list.len()).collect();
    names.shuffle(ctx.rng);
    for (budget, n) in list.iter_mut().zip(names) {
        budget["metadata"]["name"] = json!(format!("pdb{n}"));
    }
    list.shuffle(ctx.rng);
    list
}

fn budget(namespace: &str, selector: Value, status: Map<String, Value>) -> Value {
    json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"namespace": namespace},
        "spec": {"minAvailable": 1, "selector": selector},
        "status": status,
    })
}

/// Up to two of the namespace's bound pods as already disrupted (`status.disruptedPods`).
fn disrupted_pods(ctx: &mut Ctx, namespace: &str, bound: &[Value], p: f64) -> Option<Value> {
    let in_ns: Vec<&str> = bound
        .iter()
        .filter(|pod| namespace_of(pod) == namespace)
        .map(name_of)
        .collect();
    if in_ns.is_empty() || !ctx.chance(p) {
        return None;
    }
    let mut disrupted = Map::new();
    for _ in 0..ctx.rng.random_range(1..=2) {
        disrupted.insert(
            (*ctx.pick(&in_ns)).to_string(),
            json!("2026-01-01T12:00:00Z"),
        );
    }
    Some(Value::Object(disrupted))
}

/// A budget in a random namespace with a random selector (sometimes empty, matching nothing).
fn independent_budget(ctx: &mut Ctx, bound: &[Value]) -> Value {
    let namespace = random_namespace(ctx);
    let sel = if ctx.chance(0.05) {
        json!({})
    } else {
        selector(ctx)
    };
    let mut status = Map::new();
    status.insert(
        "disruptionsAllowed".into(),
        json!(ctx.rng.random_range(0..=2)),
    );
    if let Some(d) = disrupted_pods(ctx, namespace, bound, 0.3) {
        status.insert("disruptedPods".into(), d);
    }
    budget(namespace, sel, status)
}

/// Selectors that all match `labels` (an `app` label is assumed), in a random order.
fn selectors_matching(ctx: &mut Ctx, labels: &Map<String, Value>) -> Vec<Value> {
    let app = labels["app"].clone();
    let other_app = json!(
        APPS.iter()
            .find(|a| Some(**a) != app.as_str())
            .copied()
            .unwrap_or("web")
    );
    let mut candidates = vec![
        json!({"matchLabels": {"app": app}}),
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": [app, ctx.pick(&APPS)]}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": [other_app]}]}),
    ];
    for key in ["tier", "version"] {
        match labels.get(key) {
            Some(v) => {
                candidates.push(json!({"matchLabels": {key: v}}));
                candidates.push(json!({"matchExpressions": [{"key": key, "operator": "Exists"}]}));
                candidates.push(json!({"matchLabels": {"app": app, key: v}}));
            }
            None => candidates
                .push(json!({"matchExpressions": [{"key": key, "operator": "DoesNotExist"}]})),
        }
    }
    candidates.shuffle(ctx.rng);
    candidates
}

/// Two or three budgets in the namespace of one bound pod, every one of them counting it,
/// often exhausted; other pods of the namespace match some of them.
fn layered_budgets(ctx: &mut Ctx, bound: &[Value]) -> Vec<Value> {
    let labelled: Vec<&Value> = bound
        .iter()
        .filter(|p| p["metadata"]["labels"]["app"].is_string())
        .collect();
    let Some(anchor) = labelled.choose(ctx.rng).copied() else {
        return Vec::new();
    };
    let namespace = namespace_of(anchor);
    let labels = anchor["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let count = if ctx.chance(0.55) { 2 } else { 3 };
    let selectors = selectors_matching(ctx, &labels);
    selectors
        .into_iter()
        .take(count)
        .map(|sel| {
            let allowed = match ctx.rng.random_range(0..10) {
                0..5 => 0,
                5..9 => 1,
                _ => 2,
            };
            let mut status = Map::new();
            status.insert("disruptionsAllowed".into(), json!(allowed));
            if let Some(d) = disrupted_pods(ctx, namespace, bound, 0.1) {
                status.insert("disruptedPods".into(), d);
            }
            budget(namespace, sel, status)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use crate::budgets::{counts, most_budgets_on_one_pod};
    use crate::generate::scenario;

    use super::*;

    /// What a thousand cases (seeds 0..1000) hold: pods matched by two and by three budgets,
    /// exhausted budgets counting such pods, budgets listed out of (namespace, name) order,
    /// and still cases with one budget or none.
    #[test]
    fn a_thousand_cases_have_many_pods_under_several_budgets() {
        let (mut two, mut three, mut exhausted, mut unsorted, mut one_or_none) = (0, 0, 0, 0, 0);
        for seed in 0..1000 {
            let s = scenario(&mut ChaCha8Rng::seed_from_u64(seed));
            let items = s.cluster["items"].as_array().expect("items");
            let budgets: Vec<&Value> = items
                .iter()
                .filter(|i| i["kind"] == "PodDisruptionBudget")
                .collect();
            let most = most_budgets_on_one_pod(&s.cluster);
            two += usize::from(most >= 2);
            three += usize::from(most >= 3);
            one_or_none += usize::from(budgets.len() <= 1);
            let exhausted_on_shared_pod = items
                .iter()
                .filter(|p| p["kind"] == "Pod")
                .filter(|p| budgets.iter().filter(|b| counts(b, p)).count() >= 2)
                .any(|p| {
                    budgets
                        .iter()
                        .any(|b| counts(b, p) && b["status"]["disruptionsAllowed"] == 0)
                });
            exhausted += usize::from(exhausted_on_shared_pod);
            let keys: Vec<(&str, &str)> = budgets
                .iter()
                .map(|b| (namespace_of(b), name_of(b)))
                .collect();
            unsorted += usize::from(!keys.is_sorted());
        }
        println!(
            "two budgets {two}, three {three}, exhausted {exhausted}, unsorted {unsorted}, one or none {one_or_none}"
        );
        assert!(two >= 250, "{two} cases with a pod under two budgets");
        assert!(three >= 100, "{three} cases with a pod under three budgets");
        assert!(
            exhausted >= 150,
            "{exhausted} cases with an exhausted budget on such a pod"
        );
        assert!(
            unsorted >= 250,
            "{unsorted} cases listing budgets out of order"
        );
        assert!(
            one_or_none >= 400,
            "{one_or_none} cases with one budget or none"
        );
    }
}
