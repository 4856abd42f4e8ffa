//! The three verbs over the cache and the engine. Blocking work: callers run them off the
//! async threads.

use rayon::prelude::*;

use crate::app::App;
use crate::cache::{NodeInfo, Snapshot};
use crate::engine::DecideOptions;
use crate::engine::per_node::{self, NoVictims, NodeVerdict, NodeVictims};
use crate::model::{Node, Pod, PodRef};
use crate::server::errors::ApiError;

use super::wire::{
    ArgsJson, ExtenderArgs, FilterResult, HostPriority, MetaPod, MetaVictims, NodeList, NodesGiven,
    PreemptionArgsJson, PreemptionResult, Text,
};

/// Why a node named in a nodeCacheCapable request fails: preemptd cannot judge it.
pub const NOT_CACHED: &str = "node is not in preemptd's cache";

/// Names judged by one rayon task at least: a short list is judged on the calling thread,
/// a long one (kube-scheduler names thousands) on the pool.
const NAMES_PER_TASK: usize = 512;

/// A request naming at least one node in this many of the cluster's looks its names up in
/// a flat copy of the node list (see [`CachedNodes`]).
const FLAT_LOOKUP_SHARE: usize = 8;

/// The cached nodes of one request, by name. Finding a node in the snapshot's list (an
/// imbl tree) costs more than copying one pointer out of it in order, so a request that
/// names a good part of the cluster copies the list once and indexes the copy.
struct CachedNodes<'s> {
    snapshot: &'s Snapshot,
    flat: Option<Vec<&'s NodeInfo>>,
}

impl<'s> CachedNodes<'s> {
    fn new(snapshot: &'s Snapshot, names: usize) -> Self {
        let flat = (names.saturating_mul(FLAT_LOOKUP_SHARE) >= snapshot.nodes.len())
            .then(|| snapshot.nodes.iter().map(|info| &**info).collect());
        CachedNodes { snapshot, flat }
    }

    fn node(&self, name: &str) -> Option<&'s Node> {
        let info = match &self.flat {
            Some(flat) => *flat.get(self.snapshot.node_index(name)?)?,
            None => &**self.snapshot.node(name)?,
        };
        info.node.as_deref()
    }
}

/// The request's pod with its priority from its PriorityClass, as the Priority admission
/// plugin sets it (the scheduler's copy normally has it already).
fn admitted(app: &App, mut pod: Pod) -> Result<Pod, ApiError> {
    app.admit(&mut pod, "Pod: spec.priorityClassName")?;
    Ok(pod)
}

fn built<'de>(app: &App, args: ArgsJson<'de>) -> Result<ExtenderArgs<'de>, ApiError> {
    let mut args = args.build()?;
    args.pod = admitted(app, args.pod)?;
    Ok(args)
}

/// `/filter`: the nodes the placement policy allows; without a policy, every node the
/// request names (that the cache holds, for nodeCacheCapable requests).
pub(super) fn filter<'de>(app: &App, args: ArgsJson<'de>) -> FilterResult<'de> {
    match built(app, args) {
        Ok(args) => filter_built(app, args),
        Err(error) => FilterResult {
            error: error.to_string(),
            ..FilterResult::default()
        },
    }
}

fn filter_built<'de>(app: &App, args: ExtenderArgs<'de>) -> FilterResult<'de> {
    let policy = app.policy().map(|p| &**p);
    let critical = policy.is_some_and(|p| p.is_critical(&args.pod));
    let mut result = FilterResult::default();
    match args.nodes {
        NodesGiven::Names(names) => {
            let snapshot = app.cache.snapshot();
            let cached = CachedNodes::new(&snapshot, names.len());
            let verdicts: Vec<Option<NodeVerdict>> = names
                .par_iter()
                .with_min_len(NAMES_PER_TASK)
                .map(|name| {
                    let node = cached.node(name)?;
                    Some(per_node::verdict(policy, critical, node))
                })
                .collect();
            let mut passed = Vec::with_capacity(names.len());
            for (name, verdict) in names.into_iter().zip(verdicts) {
                let Some(verdict) = verdict else {
                    result.failed_nodes.insert(name, NOT_CACHED.to_string());
                    continue;
                };
                if let Some(name) = result.record(name, verdict) {
                    passed.push(name);
                }
            }
            result.node_names = Some(passed);
        }
        NodesGiven::Full(nodes) => {
            let mut items = Vec::with_capacity(nodes.len());
            for (node, json) in nodes {
                let verdict = per_node::verdict(policy, critical, &node);
                if result
                    .record(Text::Owned(node.name.to_string()), verdict)
                    .is_some()
                {
                    items.push(json);
                }
            }
            result.nodes = Some(NodeList {
                items,
                ..NodeList::default()
            });
        }
    }
    result
}

impl<'de> FilterResult<'de> {
    /// Records a node the policy rules out with its reason; the name back if it passes.
    fn record(&mut self, name: Text<'de>, verdict: NodeVerdict) -> Option<Text<'de>> {
        let failed = match verdict {
            NodeVerdict::Allowed => return Some(name),
            NodeVerdict::Unschedulable(reason) => (&mut self.failed_nodes, reason),
            NodeVerdict::Unresolvable(reason) => (&mut self.failed_and_unresolvable_nodes, reason),
        };
        failed.0.insert(name, failed.1.into_owned());
        None
    }
}

/// `/prioritize`: every node the request names with the policy's score, 0 to 10
/// (without a policy, or for a node the cache lacks: 0).
pub(super) fn prioritize<'de>(
    app: &App,
    args: ArgsJson<'de>,
) -> Result<Vec<HostPriority<'de>>, ApiError> {
    let args = built(app, args)?;
    let policy = app.policy().map(|p| &**p);
    let critical = policy.is_some_and(|p| p.is_critical(&args.pod));
    let score = |node: &Node| policy.map_or(0, |p| p.score_for(critical, node));
    Ok(match args.nodes {
        NodesGiven::Names(names) => {
            let snapshot = app.cache.snapshot();
            let cached = CachedNodes::new(&snapshot, names.len());
            names
                .into_par_iter()
                .with_min_len(NAMES_PER_TASK)
                .map(|name| HostPriority {
                    score: cached.node(&name).map_or(0, score),
                    host: name,
                })
                .collect()
        }
        NodesGiven::Full(nodes) => nodes
            .iter()
            .map(|(node, _)| HostPriority {
                host: Text::Owned(node.name.to_string()),
                score: score(node),
            })
            .collect(),
    })
}

/// `/preempt`: of the scheduler's candidates, those the policy (and strict PDB mode)
/// allows, each with the victims preemptd's engine chooses there — kept only when every
/// one of them is a pod the scheduler lists for that node.
pub(super) fn preempt<'de>(
    app: &App,
    args: PreemptionArgsJson<'de>,
) -> Result<PreemptionResult<'de>, ApiError> {
    let mut args = args.build()?;
    crate::engine::check_pending(&args.pod)?;
    let mut preemptor = admitted(app, args.pod)?;
    app.cache.fill_held_nomination(&mut preemptor);
    let options = DecideOptions {
        policy: app.policy().cloned(),
        version: app.kubernetes_version(),
        ..DecideOptions::default()
    };
    let names: Vec<&str> = args.candidates.iter().map(|(n, _)| &**n).collect();
    let snapshot = app.cache.snapshot();
    let chosen = per_node::victims_on_nodes(&snapshot, &preemptor, &names, &options);
    // The scheduler's lists checked on the pool, as the selections ran there.
    let judged: Vec<Candidate> = args
        .candidates
        .par_iter()
        .zip(chosen)
        .with_min_len(CANDIDATES_PER_TASK)
        .map(|((_, listed), chosen)| judge(listed, chosen))
        .collect();
    let mut result = PreemptionResult::default();
    let mut diverged = 0;
    let mut first_diverged = None;
    for ((node, _), judged) in args.candidates.drain(..).zip(judged) {
        match judged {
            Candidate::Kept(victims) => {
                result.node_name_to_meta_victims.insert(node, victims);
            }
            Candidate::NoVictims(why) => {
                tracing::debug!(node = %node, reason = %no_victims_reason(&why), "preemption candidate dropped");
            }
            Candidate::NoneListed => {
                tracing::debug!(node = %node, "preemption candidate without victims dropped");
            }
            Candidate::Diverged(unlisted) => {
                diverged += 1;
                first_diverged.get_or_insert((node, unlisted));
            }
        }
    }
    if let Some((node, unlisted)) = first_diverged {
        // One line a request, naming the first such node: the views of preemptd and the
        // scheduler differ (a pod one of them has not seen yet).
        tracing::warn!(
            nodes = diverged,
            node = %node,
            victim.namespace = %unlisted.namespace,
            victim.name = %unlisted.name,
            victim.uid = %unlisted.uid,
            "preemption candidates dropped: preemptd's victim is not among the scheduler's"
        );
        crate::ops::metrics::extender_diverged(diverged);
    }
    Ok(result)
}

/// Candidates checked by one rayon task at least.
const CANDIDATES_PER_TASK: usize = 64;

/// What becomes of a candidate once preemptd chose its victims there.
enum Candidate {
    Kept(MetaVictims),
    /// preemptd finds no victims there.
    NoVictims(NoVictims),
    /// The scheduler found nothing to evict there: a node returned needs victims.
    NoneListed,
    /// A victim of preemptd's the scheduler does not list.
    Diverged(PodRef),
}

/// Keeps a candidate when each of the victims `chosen` is among those the scheduler
/// `listed`.
fn judge(listed: &[Text<'_>], chosen: Result<NodeVictims, NoVictims>) -> Candidate {
    let victims = match chosen {
        Ok(victims) => victims,
        Err(why) => return Candidate::NoVictims(why),
    };
    if listed.is_empty() {
        return Candidate::NoneListed;
    }
    // A scan: victims are few, and a node holds at most a few hundred pods.
    let is_listed = |uid: &str| listed.iter().any(|listed| listed == uid);
    if let Some(unlisted) = victims.victims.iter().find(|v| !is_listed(v.uid())) {
        return Candidate::Diverged(unlisted.pod_ref());
    }
    let pods = victims.victims.into_iter().map(MetaPod).collect();
    Candidate::Kept(MetaVictims {
        pods,
        num_pdb_violations: i64::from(victims.pdb_violations),
    })
}

fn no_victims_reason(why: &NoVictims) -> String {
    match why {
        NoVictims::UnknownNode => NOT_CACHED.to_string(),
        NoVictims::Policy(reason) => reason.to_string(),
        NoVictims::StrictPdb => {
            "every victim set violates a PodDisruptionBudget (pdbMode strict)".to_string()
        }
        NoVictims::Selection(status) => status.reasons.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::ClusterCache;
    use crate::model::{Labels, Resources};

    fn node(name: &str) -> Node {
        Node {
            name: name.into(),
            uid: name.into(),
            resource_version: 1,
            labels: Labels::default(),
            taints: Vec::new(),
            unschedulable: false,
            allocatable: Resources::default(),
            annotations: Labels::default(),
            conditions: Vec::new(),
            images: Vec::new(),
        }
    }

    #[test]
    fn names_are_found_alike_in_the_snapshot_and_in_its_flat_copy() {
        let cache = ClusterCache::new();
        let names: Vec<String> = (0..40).map(|i| format!("n{i}")).collect();
        for name in &names {
            cache.upsert_node(node(name));
        }
        let snapshot = cache.snapshot();
        let few = CachedNodes::new(&snapshot, 1);
        let many = CachedNodes::new(&snapshot, names.len());
        assert!(few.flat.is_none() && many.flat.is_some());
        for name in names.iter().map(String::as_str).chain(["ghost"]) {
            let found = |nodes: &CachedNodes| nodes.node(name).map(|n| n.name.to_string());
            let expected = (name != "ghost").then(|| name.to_string());
            assert_eq!(found(&few), expected);
            assert_eq!(found(&many), expected);
        }
    }
}
