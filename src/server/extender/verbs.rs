//! The three verbs over the cache and the engine. Blocking work: callers run them off the
//! async threads.

use crate::engine::DecideOptions;
use crate::engine::per_node::{self, NoVictims, NodeVerdict};
use crate::model::{Node, Pod};
use crate::server::errors::ApiError;
use crate::server::service::State;

use super::wire::{
    ArgsJson, ExtenderArgs, FilterResult, HostPriority, MetaPod, MetaVictims, NodeList, NodesGiven,
    PreemptionArgsJson, PreemptionResult, Shared, Text,
};

/// Why a node named in a nodeCacheCapable request fails: preemptd cannot judge it.
pub const NOT_CACHED: &str = "node is not in preemptd's cache";

/// The request's pod with its priority from its PriorityClass, as the Priority admission
/// plugin sets it (the scheduler's copy normally has it already).
fn admitted(state: &State, mut pod: Pod) -> Result<Pod, ApiError> {
    pod.admit(&state.cache.priority_classes())
        .map_err(|unknown| ApiError::invalid("Pod: spec.priorityClassName", unknown.to_string()))?;
    Ok(pod)
}

fn built<'de>(state: &State, args: ArgsJson<'de>) -> Result<ExtenderArgs<'de>, ApiError> {
    let mut args = args.build()?;
    args.pod = admitted(state, args.pod)?;
    Ok(args)
}

/// `/filter`: the nodes the placement policy allows; without a policy, every node the
/// request names (that the cache holds, for nodeCacheCapable requests).
pub fn filter<'de>(state: &State, args: ArgsJson<'de>) -> FilterResult<'de> {
    match built(state, args) {
        Ok(args) => filter_built(state, args),
        Err(error) => FilterResult {
            error: error.to_string(),
            ..FilterResult::default()
        },
    }
}

fn filter_built<'de>(state: &State, args: ExtenderArgs<'de>) -> FilterResult<'de> {
    let policy = state.policy().map(|p| &**p);
    let critical = policy.is_some_and(|p| p.is_critical(&args.pod));
    let mut result = FilterResult::default();
    match args.nodes {
        NodesGiven::Names(names) => {
            let snapshot = state.cache.snapshot();
            let mut passed = Vec::with_capacity(names.len());
            for name in names {
                let Some(node) = snapshot.node(&name).and_then(|info| info.node.as_deref()) else {
                    result.failed_nodes.insert(name, NOT_CACHED.to_string());
                    continue;
                };
                let verdict = per_node::verdict(policy, critical, node);
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
pub fn prioritize<'de>(
    state: &State,
    args: ArgsJson<'de>,
) -> Result<Vec<HostPriority<'de>>, ApiError> {
    let args = built(state, args)?;
    let policy = state.policy().map(|p| &**p);
    let critical = policy.is_some_and(|p| p.is_critical(&args.pod));
    let score = |node: &Node| policy.map_or(0, |p| p.score_for(critical, node));
    Ok(match args.nodes {
        NodesGiven::Names(names) => {
            let snapshot = state.cache.snapshot();
            names
                .into_iter()
                .map(|name| HostPriority {
                    score: snapshot
                        .node(&name)
                        .and_then(|info| info.node.as_deref())
                        .map_or(0, score),
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
pub fn preempt<'de>(
    state: &State,
    args: PreemptionArgsJson<'de>,
) -> Result<PreemptionResult<'de>, ApiError> {
    let mut args = args.build()?;
    let mut preemptor = admitted(state, args.pod)?;
    if preemptor
        .nominated_node_name
        .as_ref()
        .is_none_or(|n| n.is_empty())
    {
        // As gRPC Preempt (and upstream re-reading the pod): the cache's nomination.
        preemptor.nominated_node_name = state
            .cache
            .get_pod(preemptor.uid())
            .and_then(|held| held.nomination().cloned());
    }
    let options = DecideOptions {
        policy: state.policy().cloned(),
        ..DecideOptions::default()
    };
    let names: Vec<&str> = args.candidates.iter().map(|(n, _)| &**n).collect();
    let snapshot = state.cache.snapshot();
    let chosen = per_node::victims_on_nodes(&snapshot, &preemptor, &names, &options);
    let mut result = PreemptionResult::default();
    let mut diverged = 0;
    let mut first_diverged = None;
    for ((node, listed), chosen) in args.candidates.drain(..).zip(chosen) {
        let victims = match chosen {
            Ok(victims) => victims,
            Err(why) => {
                tracing::debug!(node = %node, reason = %no_victims_reason(&why), "preemption candidate dropped");
                continue;
            }
        };
        if listed.is_empty() {
            // The scheduler found nothing to evict here: a node returned needs victims.
            tracing::debug!(node = %node, "preemption candidate without victims dropped");
            continue;
        }
        // A scan: victims are few, and a node holds at most a few hundred pods.
        let is_listed = |uid: &str| listed.iter().any(|listed| listed == uid);
        if let Some(unlisted) = victims.victims.iter().find(|v| !is_listed(&v.uid)) {
            diverged += 1;
            first_diverged.get_or_insert_with(|| (node.clone(), unlisted.clone()));
            continue;
        }
        let pods = victims
            .victims
            .into_iter()
            .map(|v| MetaPod { uid: Shared(v.uid) })
            .collect();
        result.node_name_to_meta_victims.insert(
            node,
            MetaVictims {
                pods,
                num_pdb_violations: i64::from(victims.pdb_violations),
            },
        );
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
