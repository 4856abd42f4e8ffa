//! NodePorts: a host port (IP, protocol, port) is bound by one pod a node.

use super::{NodeScratch, PreFilter, Status};
use crate::cache::NodeInfo;
use crate::model::{HostPort, Pod};

/// The plugin's name in statuses and diagnostics.
pub const NODE_PORTS: &str = "NodePorts";

impl PreFilter<'_> {
    /// Whether NodePorts has anything to check: the preemptor binds a host port.
    pub(super) fn wants_ports(&self) -> bool {
        self.pod.details.host_ports.iter().any(|p| p.port > 0)
    }

    pub(super) fn ports_fit(&self, scratch: &NodeScratch<'_>) -> Status {
        if scratch
            .used_ports
            .as_ref()
            .is_some_and(|used| used.conflicts_with(&self.pod.details.host_ports))
        {
            return Status::unschedulable(
                NODE_PORTS,
                "node(s) didn't have free ports for the requested pod ports",
            );
        }
        Status::success()
    }
}

/// Upstream `HostPortInfo`: a set of (IP, protocol, port) entries, not a count. Removing
/// a pod deletes its entries even when another pod on the node binds the same one, as
/// upstream's `RemovePod` does, and preemption's dry runs see the port free.
#[derive(Clone, Debug, Default)]
pub(super) struct UsedPorts(Vec<HostPort>);

impl UsedPorts {
    /// The node's port set as upstream holds it: its pods' ports less those a snapshot
    /// edit made it forget (see [`NodeInfo::forgotten_ports`]).
    pub(super) fn of(info: &NodeInfo) -> Self {
        let mut used = Self::default();
        for pod in &info.pods {
            used.add(pod);
        }
        used.0.retain(|port| !info.forgotten_ports.contains(port));
        used
    }

    pub(super) fn add(&mut self, pod: &Pod) {
        for port in pod.details.host_ports.iter().filter(|p| p.port > 0) {
            if !self.0.contains(port) {
                self.0.push(port.clone());
            }
        }
    }

    pub(super) fn remove(&mut self, pod: &Pod) {
        self.0.retain(|used| !pod.details.host_ports.contains(used));
    }

    fn conflicts_with(&self, wanted: &[HostPort]) -> bool {
        wanted
            .iter()
            .any(|want| want.port > 0 && self.0.iter().any(|used| want.conflicts_with(used)))
    }
}
