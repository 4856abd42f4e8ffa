//! NodeResourcesFit: the node's allocatable less what its pods request covers the pod's
//! requests, and a pod slot is free.

use super::{Code, NodeScratch, PreFilter, Reason, Reasons, Status};
use crate::cache::{NodeInfo, NodeSummary};
use crate::model::Resources;

/// The plugin's name in statuses and diagnostics.
pub const NODE_RESOURCES_FIT: &str = "NodeResourcesFit";

impl PreFilter<'_> {
    pub(super) fn resources_fit(&self, scratch: &NodeScratch<'_>) -> Status {
        let alloc = &scratch.node.allocatable;
        let used = &scratch.requested;
        resources_fit(
            self.pod.requests(),
            alloc.pods,
            scratch.pod_count,
            [
                (alloc.milli_cpu, used.milli_cpu),
                (alloc.memory, used.memory),
                (alloc.ephemeral_storage, used.ephemeral_storage),
            ],
            |name| (alloc.scalar(name), used.scalar(name)),
        )
    }

    /// Whether a node whose digest needs no full read (no NoSchedule/NoExecute taint,
    /// schedulable, nothing nominated) passes the node-only filters and NodePorts for
    /// sure, and NodeResourcesFit is decided by the digest: the preemptor asks for no node,
    /// node affinity, host port or extended resource. A resource failure is then the
    /// node's status, as the later filters never run.
    pub fn digest_decides_resources(&self) -> bool {
        let pod = self.pod;
        pod.node_name.as_deref().is_none_or(str::is_empty)
            && pod.details.node_selector.is_empty()
            && pod.details.required_node_affinity.is_none()
            && pod.details.host_ports.is_empty()
            && pod.requests().scalars.iter().all(|(_, v)| *v == 0)
    }

    /// Whether such a node is filtered from its digest alone, success included: nothing
    /// after NodeResourcesFit has anything to check.
    pub fn digest_suffices(&self) -> bool {
        self.digest_decides_resources() && self.spread.is_empty() && !self.inter_pod
    }

    /// The filters for a node, from its digest; only when [`Self::digest_decides_resources`]
    /// and the digest does not ask for a full read. A failure equals `static_filters` then
    /// `fits_with_nominated` on the node entry; so does a success when
    /// [`Self::digest_suffices`].
    pub fn filter_digest(&self, summary: &NodeSummary) -> Status {
        fit_status(self.digest_fit_mask(summary))
    }

    /// [`Self::filter_digest`] as [`fit`] bits.
    pub fn digest_fit_mask(&self, summary: &NodeSummary) -> u8 {
        self.digest_fit_mask_with(summary, &Occupied::default())
    }

    /// NodeResourcesFit bits from a node's digest with `nominated` (see
    /// [`Self::nominated_occupancy`]) also in use. For a node with no hard taint and a
    /// preemptor the digest decides resources for, these are the node's filter result
    /// (upstream's first pass with nominated pods fails exactly when this does, and the
    /// second pass, with fewer pods, then passes too).
    pub fn digest_fit_mask_with(&self, summary: &NodeSummary, nominated: &Occupied) -> u8 {
        let [cpu, memory, storage, slots] = summary.allocatable;
        let [used_cpu, used_memory, used_storage] = summary.requested;
        let [add_cpu, add_memory, add_storage] = nominated.requested;
        fit_mask(
            self.pod.requests(),
            slots,
            summary.pods as i64 + nominated.pods,
            [
                (cpu, used_cpu.wrapping_add(add_cpu)),
                (memory, used_memory.wrapping_add(add_memory)),
                (storage, used_storage.wrapping_add(add_storage)),
            ],
        )
    }

    /// What the pods nominated to the node that count for the preemptor occupy.
    pub fn nominated_occupancy(&self, info: &NodeInfo) -> Occupied {
        let mut occupied = Occupied::default();
        for pod in self.nominated_pods(info) {
            let r = pod.requests();
            // Wrapping, as upstream's int64 sums on the node.
            occupied.requested[0] = occupied.requested[0].wrapping_add(r.milli_cpu);
            occupied.requested[1] = occupied.requested[1].wrapping_add(r.memory);
            occupied.requested[2] = occupied.requested[2].wrapping_add(r.ephemeral_storage);
            occupied.pods += 1;
        }
        occupied
    }
}

/// NodeResourcesFit failures on cpu, memory, ephemeral storage and pod slots as bits, so
/// the filter pass over many nodes tallies a byte per node instead of building statuses.
pub mod fit {
    /// Too many pods.
    pub const TOO_MANY_PODS: u8 = 1;
    /// Insufficient cpu.
    pub const CPU: u8 = 2;
    /// Insufficient memory.
    pub const MEMORY: u8 = 4;
    /// Insufficient ephemeral-storage.
    pub const EPHEMERAL_STORAGE: u8 = 8;
    /// Some request exceeds the allocatable: UnschedulableAndUnresolvable.
    pub const UNRESOLVABLE: u8 = 16;
    /// Every combination of the bits above.
    pub const MASKS: usize = 32;
    /// The reason of each bit, in upstream's reason order.
    pub const REASONS: [(u8, &str); 4] = [
        (TOO_MANY_PODS, "Too many pods"),
        (CPU, "Insufficient cpu"),
        (MEMORY, "Insufficient memory"),
        (EPHEMERAL_STORAGE, "Insufficient ephemeral-storage"),
    ];
}

/// NodeResourcesFit on plain amounts, without extended resources: the [`fit`] bits of
/// what is short (0 when the pod fits). `amounts` are `(allocatable, in use)` for CPU,
/// memory and ephemeral storage, `pods` the pods already on the node.
fn fit_mask(request: &Resources, pod_slots: i64, pods: i64, amounts: [(i64, i64); 3]) -> u8 {
    let mut mask = 0;
    if pods + 1 > pod_slots {
        mask |= fit::TOO_MANY_PODS;
    }
    if !request.is_zero_request() {
        let wants = [request.milli_cpu, request.memory, request.ephemeral_storage];
        let bits = [fit::CPU, fit::MEMORY, fit::EPHEMERAL_STORAGE];
        for ((want, (have, in_use)), bit) in wants.into_iter().zip(amounts).zip(bits) {
            if want > 0 && want > have.wrapping_sub(in_use) {
                mask |= bit;
                if want > have {
                    mask |= fit::UNRESOLVABLE;
                }
            }
        }
    }
    mask
}

/// The status of a [`fit_mask`] result with no extended resource short.
pub fn fit_status(mask: u8) -> Status {
    fit_status_with(mask, Reasons::new())
}

fn fit_status_with(mask: u8, scalar_reasons: Reasons) -> Status {
    if mask == 0 && scalar_reasons.is_empty() {
        return Status::success();
    }
    let mut reasons: Reasons = fit::REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, reason)| Reason::Borrowed(reason))
        .collect();
    reasons.extend(scalar_reasons);
    Status {
        code: if mask & fit::UNRESOLVABLE != 0 {
            Code::UnschedulableAndUnresolvable
        } else {
            Code::Unschedulable
        },
        plugin: NODE_RESOURCES_FIT,
        reasons,
    }
}

/// NodeResourcesFit on plain amounts: `(allocatable, in use)` for CPU, memory and
/// ephemeral storage, `scalar(name)` for the rest, `pods` already on the node.
fn resources_fit(
    request: &Resources,
    pod_slots: i64,
    pods: i64,
    amounts: [(i64, i64); 3],
    scalar: impl Fn(&str) -> (i64, i64),
) -> Status {
    let mut mask = fit_mask(request, pod_slots, pods, amounts);
    let mut scalar_reasons = Reasons::new();
    if !request.is_zero_request() {
        for (name, want) in &request.scalars {
            let (have, in_use) = scalar(name);
            if *want > 0 && *want > have.wrapping_sub(in_use) {
                scalar_reasons.push(Reason::Owned(format!("Insufficient {name}")));
                if *want > have {
                    mask |= fit::UNRESOLVABLE;
                }
            }
        }
    }
    fit_status_with(mask, scalar_reasons)
}

/// Room taken beyond a node's bound pods: milli-CPU, memory and ephemeral storage
/// requested, and pod slots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Occupied {
    /// Milli-CPU, memory and ephemeral storage.
    pub requested: [i64; 3],
    /// Pod slots.
    pub pods: i64,
}
