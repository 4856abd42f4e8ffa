//! Shrinking a mismatch: delta debugging over the List's items, then deleting fields one at a
//! time, keeping each step only while both sides still answer and still differ the same way.

use serde_json::{Value, json};

use crate::compare::difference;
use crate::generate::Scenario;
use crate::peers::{Harness, Preemptd};

pub struct Verdict {
    pub upstream: Value,
    pub preemptd: Value,
    pub difference: String,
}

pub struct Small {
    pub scenario: Scenario,
    pub upstream: Value,
    pub preemptd: Value,
    pub difference: String,
}

/// Re-asking both sides is the cost of shrinking; large clusters stop here.
const MAX_ATTEMPTS: usize = 2000;

/// Both answers, and what differs; None when they agree.
pub fn verdict(
    harness: &mut Harness,
    preemptd: &Preemptd,
    s: &Scenario,
) -> Result<Option<Verdict>, String> {
    let mut up = harness.ask(&s.cluster, &s.preemptor)?;
    // From 100 nodes on, upstream scores only the first numFeasibleNodesToFind feasible nodes
    // in its node tree's order, which the harness does not follow: no placement comparison.
    if node_count(&s.cluster) >= 100
        && let Ok(Value::Object(answer)) = &mut up
    {
        answer.shift_remove("placementNode");
    }
    let ours = preemptd.ask(&s.cluster, &s.preemptor)?;
    Ok(match (up, ours) {
        (Ok(u), Ok(o)) => difference(&u, &o).map(|d| Verdict {
            upstream: u,
            preemptd: o,
            difference: d,
        }),
        (Err(e), o) => Some(Verdict {
            upstream: json!({"error": e}),
            preemptd: o.unwrap_or_else(|e| json!({"error": e})),
            difference: format!("upstream harness could not decide: {e}"),
        }),
        (Ok(u), Err(e)) => Some(Verdict {
            upstream: u,
            preemptd: json!({"error": e}),
            difference: format!("preemptd refused the scenario: {e}"),
        }),
    })
}

/// The kind of a difference: a shrink step must keep it, not trade it for another one.
fn kind(d: &str) -> String {
    let mut words = d.split_whitespace();
    match words.next() {
        Some("outcome") => format!(
            "outcome {} {}",
            words.next().unwrap_or(""),
            words.nth(1).unwrap_or("")
        ),
        Some(first) => first.to_string(),
        None => String::new(),
    }
}

struct Shrinker<'a> {
    harness: &'a mut Harness,
    preemptd: &'a Preemptd,
    kind: String,
    attempts: usize,
    best: Verdict,
}

impl Shrinker<'_> {
    fn still_fails(&mut self, s: &Scenario) -> Result<bool, String> {
        self.attempts += 1;
        match verdict(self.harness, self.preemptd, s)? {
            Some(v) if kind(&v.difference) == self.kind => {
                self.best = v;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

pub fn shrink(
    harness: &mut Harness,
    preemptd: &Preemptd,
    s: Scenario,
    v: Verdict,
) -> Result<Small, String> {
    let mut sh = Shrinker {
        harness,
        preemptd,
        kind: kind(&v.difference),
        attempts: 0,
        best: v,
    };
    let mut s = s;
    shrink_items(&mut sh, &mut s)?;
    shrink_fields(&mut sh, &mut s)?;
    Ok(Small {
        scenario: s,
        upstream: sh.best.upstream,
        preemptd: sh.best.preemptd,
        difference: sh.best.difference,
    })
}

fn items(s: &Scenario) -> Vec<Value> {
    s.cluster["items"].as_array().cloned().unwrap_or_default()
}

fn node_count(cluster: &Value) -> usize {
    cluster["items"]
        .as_array()
        .map_or(0, |a| a.iter().filter(|i| i["kind"] == "Node").count())
}

fn namespaced(v: &Value) -> (String, String) {
    (
        v["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_string(),
        v["metadata"]["name"].as_str().unwrap_or("").to_string(),
    )
}

/// Pods bound to a node that is gone go with it, and the pods of a PodGroup that is gone go
/// with it (the preemptor's own group never goes): a cluster never holds them.
fn without_orphans(items: Vec<Value>, preemptor: &Value) -> Vec<Value> {
    let nodes: Vec<String> = items
        .iter()
        .filter(|i| i["kind"] == "Node")
        .filter_map(|i| i["metadata"]["name"].as_str().map(String::from))
        .collect();
    let mut groups: Vec<(String, String)> = items
        .iter()
        .filter(|i| i["kind"] == "PodGroup")
        .map(namespaced)
        .collect();
    if preemptor["kind"] == "PodGroup" {
        groups.push(namespaced(preemptor));
    }
    items
        .into_iter()
        .filter(|i| {
            if i["kind"] != "Pod" {
                return true;
            }
            let on_a_node = i["spec"]["nodeName"]
                .as_str()
                .is_none_or(|n| nodes.iter().any(|x| x == n));
            let in_a_group = i["spec"]["schedulingGroup"]["podGroupName"]
                .as_str()
                .is_none_or(|g| groups.contains(&(namespaced(i).0, g.to_string())));
            on_a_node && in_a_group
        })
        .collect()
}

fn with_items(s: &Scenario, items: Vec<Value>) -> Scenario {
    let mut cluster = s.cluster.clone();
    cluster["items"] = Value::Array(items);
    Scenario {
        cluster,
        preemptor: s.preemptor.clone(),
    }
}

fn shrink_items(sh: &mut Shrinker, s: &mut Scenario) -> Result<(), String> {
    let mut chunk = items(s).len().div_ceil(2).max(1);
    loop {
        let mut start = 0;
        while start < items(s).len() && sh.attempts < MAX_ATTEMPTS {
            let mut candidate = items(s);
            let end = (start + chunk).min(candidate.len());
            candidate.drain(start..end);
            let candidate = with_items(s, without_orphans(candidate, &s.preemptor));
            if sh.still_fails(&candidate)? {
                *s = candidate;
            } else {
                start += chunk;
            }
        }
        if chunk == 1 || sh.attempts >= MAX_ATTEMPTS {
            return Ok(());
        }
        chunk = chunk.div_ceil(2);
    }
}

#[derive(Clone, Debug)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Keys that keep an object what it is (identity, kind, the start time that makes the
/// victims' order deterministic, the creation time that orders a gang's members upstream
/// and preemptd cannot see, a pod's containers).
const PROTECTED: [&str; 11] = [
    "apiVersion",
    "kind",
    "name",
    "namespace",
    "uid",
    "startTime",
    "creationTimestamp",
    "image",
    "containers",
    "metadata",
    "spec",
];

fn has_protected(v: &Value) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| PROTECTED.contains(&k.as_str()) || has_protected(v)),
        Value::Array(a) => a.iter().any(has_protected),
        _ => false,
    }
}

/// Every deletable field below `v`, shallow ones first.
fn deletable(v: &Value, prefix: &mut Vec<Seg>, parent_key: &str, out: &mut Vec<Vec<Seg>>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                prefix.push(Seg::Key(k.clone()));
                if !PROTECTED.contains(&k.as_str()) && !has_protected(child) {
                    out.push(prefix.clone());
                }
                deletable(child, prefix, k, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                prefix.push(Seg::Index(i));
                let removable_container =
                    parent_key == "initContainers" || (parent_key == "containers" && a.len() > 1);
                if parent_key != "items" && (removable_container || !has_protected(child)) {
                    out.push(prefix.clone());
                }
                deletable(child, prefix, parent_key, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn delete_at(v: &mut Value, path: &[Seg]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = v;
    for seg in parents {
        cur = match seg {
            Seg::Key(k) => &mut cur[k.as_str()],
            Seg::Index(i) => &mut cur[*i],
        };
    }
    match (last, cur) {
        (Seg::Key(k), Value::Object(m)) => {
            m.shift_remove(k);
        }
        (Seg::Index(i), Value::Array(a)) if *i < a.len() => {
            a.remove(*i);
        }
        _ => {}
    }
}

fn shrink_fields(sh: &mut Shrinker, s: &mut Scenario) -> Result<(), String> {
    loop {
        let doc = json!({"cluster": s.cluster, "preemptor": s.preemptor});
        let mut paths = Vec::new();
        deletable(&doc, &mut Vec::new(), "", &mut paths);
        let mut progressed = false;
        for path in paths {
            if sh.attempts >= MAX_ATTEMPTS {
                return Ok(());
            }
            let mut candidate = json!({"cluster": s.cluster, "preemptor": s.preemptor});
            delete_at(&mut candidate, &path);
            let candidate = Scenario {
                cluster: candidate["cluster"].take(),
                preemptor: candidate["preemptor"].take(),
            };
            if sh.still_fails(&candidate)? {
                *s = candidate;
                progressed = true;
                break;
            }
        }
        if !progressed {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_of_a_removed_node_go_with_it() {
        let items = vec![
            json!({"kind": "Node", "metadata": {"name": "n1"}}),
            json!({"kind": "Pod", "metadata": {"name": "a"}, "spec": {"nodeName": "n1"}}),
            json!({"kind": "Pod", "metadata": {"name": "b"}, "spec": {"nodeName": "n2"}}),
            json!({"kind": "Pod", "metadata": {"name": "c"}, "spec": {}}),
        ];
        let kept: Vec<_> = without_orphans(items, &json!({"kind": "Pod"}))
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(kept, ["n1", "a", "c"]);
    }

    #[test]
    fn members_of_a_removed_group_go_with_it_but_the_preemptors_stay() {
        let member = |name: &str, group: &str| {
            json!({"kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
                   "spec": {"schedulingGroup": {"podGroupName": group}}})
        };
        let items = vec![
            json!({"kind": "PodGroup", "metadata": {"name": "kept", "namespace": "ns"}}),
            member("a", "kept"),
            member("b", "gone"),
            member("c", "train"),
        ];
        let preemptor =
            json!({"kind": "PodGroup", "metadata": {"name": "train", "namespace": "ns"}});
        let kept: Vec<_> = without_orphans(items, &preemptor)
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(kept, ["kept", "a", "c"]);
    }

    #[test]
    fn identity_and_start_times_are_never_deleted() {
        let doc = json!({"preemptor": {
            "metadata": {"name": "p", "labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {}}], "priority": 1},
            "status": {"startTime": "t", "phase": "Running"},
        }});
        let mut paths = Vec::new();
        deletable(&doc, &mut Vec::new(), "", &mut paths);
        let rendered: Vec<String> = paths
            .iter()
            .map(|p| {
                p.iter()
                    .map(|s| match s {
                        Seg::Key(k) => k.clone(),
                        Seg::Index(i) => i.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(".")
            })
            .collect();
        assert!(rendered.contains(&"preemptor.metadata.labels".to_string()));
        assert!(rendered.contains(&"preemptor.spec.priority".to_string()));
        assert!(rendered.contains(&"preemptor.status.phase".to_string()));
        assert!(rendered.contains(&"preemptor.spec.containers.0.resources".to_string()));
        for kept in [
            "name",
            "startTime",
            "image",
            "containers.0",
            "metadata",
            "status",
        ] {
            assert!(
                !rendered.iter().any(|p| p.ends_with(kept)),
                "{kept} must stay: {rendered:?}"
            );
        }
        let mut d = doc.clone();
        delete_at(&mut d, &paths[0]);
        assert_ne!(d, doc);
    }
}
