//! A pod's scheduling terms: node and pod (anti-)affinity, required and preferred, and
//! topology spread constraints.

use super::super::build::{
    AffinityInput, AffinityTermInput, NodeSelectorTermInput, PreferredTermInput, SpreadInput,
    WeightedAffinityTermInput,
};
use super::{Cur, Result, int32_or_zero, requirements, selector, strings};

pub(super) fn affinity<'v>(cur: &Cur<'v, '_>) -> Result<AffinityInput<'v>> {
    let node_affinity = cur.get("nodeAffinity")?;
    let required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")?;
    let required_node_affinity = match required.object()? {
        None => None,
        Some(_) => {
            let terms = required.get("nodeSelectorTerms")?;
            let terms = terms
                .elements()?
                .map(|term| {
                    term.require_object()?;
                    Ok(NodeSelectorTermInput {
                        match_expressions: requirements(&term.get("matchExpressions")?)?,
                        match_fields: requirements(&term.get("matchFields")?)?,
                    })
                })
                .collect::<Result<_>>()?;
            Some(terms)
        }
    };
    let preferred_node_affinity = node_affinity
        .get("preferredDuringSchedulingIgnoredDuringExecution")?
        .elements()?
        .map(|term| {
            term.require_object()?;
            let preference = term.get("preference")?;
            Ok(PreferredTermInput {
                weight: int32_or_zero(&term.get("weight")?)?,
                preference: NodeSelectorTermInput {
                    match_expressions: requirements(&preference.get("matchExpressions")?)?,
                    match_fields: requirements(&preference.get("matchFields")?)?,
                },
            })
        })
        .collect::<Result<_>>()?;
    Ok(AffinityInput {
        required_node_affinity,
        pod_affinity: affinity_terms(&cur.get("podAffinity")?)?,
        pod_anti_affinity: affinity_terms(&cur.get("podAntiAffinity")?)?,
        preferred_node_affinity,
        preferred_pod_affinity: weighted_affinity_terms(&cur.get("podAffinity")?)?,
        preferred_pod_anti_affinity: weighted_affinity_terms(&cur.get("podAntiAffinity")?)?,
    })
}

fn weighted_affinity_terms<'v>(cur: &Cur<'v, '_>) -> Result<Vec<WeightedAffinityTermInput<'v>>> {
    cur.get("preferredDuringSchedulingIgnoredDuringExecution")?
        .elements()?
        .map(|term| {
            term.require_object()?;
            Ok(WeightedAffinityTermInput {
                weight: int32_or_zero(&term.get("weight")?)?,
                // Missing reads as an empty term, as the typed reader has it (refused
                // for its missing topology key).
                term: match term.get("podAffinityTerm")? {
                    inner if inner.object()?.is_some() => affinity_term(&inner)?,
                    _ => AffinityTermInput::default(),
                },
            })
        })
        .collect()
}

fn affinity_terms<'v>(cur: &Cur<'v, '_>) -> Result<Vec<AffinityTermInput<'v>>> {
    let required = cur.get("requiredDuringSchedulingIgnoredDuringExecution")?;
    required
        .elements()?
        .map(|term| affinity_term(&term))
        .collect()
}

fn affinity_term<'v>(term: &Cur<'v, '_>) -> Result<AffinityTermInput<'v>> {
    term.require_object()?;
    Ok(AffinityTermInput {
        label_selector: selector(&term.get("labelSelector")?)?,
        namespaces: strings(&term.get("namespaces")?)?,
        namespace_selector: selector(&term.get("namespaceSelector")?)?,
        topology_key: term.get("topologyKey")?.string()?,
    })
}

pub(super) fn spread_constraints<'v>(cur: &Cur<'v, '_>) -> Result<Vec<SpreadInput<'v>>> {
    cur.elements()?
        .map(|c| {
            c.require_object()?;
            Ok(SpreadInput {
                max_skew: int32_or_zero(&c.get("maxSkew")?)?,
                topology_key: c.get("topologyKey")?.string()?,
                when_unsatisfiable: c.get("whenUnsatisfiable")?.string()?,
                label_selector: selector(&c.get("labelSelector")?)?,
                min_domains: c.get("minDomains")?.int32()?,
                match_label_keys: strings(&c.get("matchLabelKeys")?)?,
                node_affinity_policy: c.get("nodeAffinityPolicy")?.string()?,
                node_taints_policy: c.get("nodeTaintsPolicy")?.string()?,
            })
        })
        .collect()
}
