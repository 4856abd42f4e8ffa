//! A Kubernetes pod as the scheduler sees it: identity, placement, and the spec's details
//! the filters read, shared between pods of one template.

use triomphe::Arc;

use super::{
    ContainerResources, Interner, LabelSelector, Labels, NodeSelector, NodeSelectorTerm, PodRef,
    Resources, Str, Tolerations, key_hash, priority, resources, utf8,
};

/// A host port's protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
    /// SCTP.
    Sctp,
}

impl Protocol {
    /// The protocol named `value` in the API; `None` for any other text.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "" | "TCP" => Some(Self::Tcp),
            "UDP" => Some(Self::Udp),
            "SCTP" => Some(Self::Sctp),
            _ => None,
        }
    }

    /// The protocol's name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tcp => "TCP",
            Self::Udp => "UDP",
            Self::Sctp => "SCTP",
        }
    }
}

/// A host port a pod binds: (hostIP, protocol, hostPort); empty IP is stored as `0.0.0.0`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostPort {
    /// `hostIP`.
    pub ip: Str,
    /// `protocol`.
    pub protocol: Protocol,
    /// `hostPort`.
    pub port: i32,
}

/// The host IP a port binds when none is given.
pub const BIND_ALL_IP: &str = "0.0.0.0";

impl HostPort {
    /// Upstream `HostPortInfo.CheckConflict` for a single used entry.
    pub fn conflicts_with(&self, used: &HostPort) -> bool {
        if self.protocol != used.protocol || self.port != used.port {
            return false;
        }
        &*self.ip == BIND_ALL_IP || &*used.ip == BIND_ALL_IP || self.ip == used.ip
    }
}

/// A required pod (anti-)affinity term.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PodAffinityTerm {
    /// `None` (missing) matches no pod; `Some(empty)` matches every pod.
    pub label_selector: Option<LabelSelector>,
    /// `namespaces`: the namespaces of the pods the term selects.
    pub namespaces: Vec<Str>,
    /// `None` when missing; `Some(empty)` selects all namespaces.
    pub namespace_selector: Option<LabelSelector>,
    /// The node label whose values are the term's topology domains.
    pub topology_key: Str,
}

/// What a topology spread constraint does when it cannot be met.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WhenUnsatisfiable {
    /// The pod is not placed (a filter).
    DoNotSchedule,
    /// The pod is placed anyway (scoring only; no filter reads it).
    ScheduleAnyway,
}

/// Whether a topology spread constraint takes a node property into account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InclusionPolicy {
    /// Take it into account.
    Honor,
    /// Ignore it.
    Ignore,
}

/// One `topologySpreadConstraints` entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TopologySpreadConstraint {
    /// `maxSkew`.
    pub max_skew: i32,
    /// `topologyKey`.
    pub topology_key: Str,
    /// `whenUnsatisfiable`.
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// `None` (missing) matches no pod.
    pub label_selector: Option<LabelSelector>,
    /// `minDomains`.
    pub min_domains: Option<i32>,
    /// `matchLabelKeys`.
    pub match_label_keys: Vec<Str>,
    /// Default Honor.
    pub node_affinity_policy: InclusionPolicy,
    /// Default Ignore.
    pub node_taints_policy: InclusionPolicy,
}

/// `spec.preemptionPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreemptionPolicy {
    /// The pod may preempt pods of lower priority.
    PreemptLowerPriority,
    /// The pod never preempts.
    Never,
}

/// `status.phase`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodPhase {
    /// Accepted, not yet running.
    Pending,
    /// Bound, with containers running.
    Running,
    /// Every container ended successfully.
    Succeeded,
    /// Every container ended, some failed.
    Failed,
    /// The state could not be read.
    Unknown,
}

impl PodPhase {
    /// The phase named `value` in the API; `None` for any other text.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "" | "Pending" => Some(Self::Pending),
            "Running" => Some(Self::Running),
            "Succeeded" => Some(Self::Succeeded),
            "Failed" => Some(Self::Failed),
            "Unknown" => Some(Self::Unknown),
            _ => None,
        }
    }

    /// The phase's name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Running => "Running",
            Self::Succeeded => "Succeeded",
            Self::Failed => "Failed",
            Self::Unknown => "Unknown",
        }
    }

    /// The pod has finished: `Succeeded` or `Failed`.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }
}

/// One container's scheduling-relevant fields.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Container {
    /// The container's name.
    pub name: Str,
    /// `resources.requests`.
    pub requests: ContainerResources,
    /// The host ports of its `ports`.
    pub ports: Vec<HostPort>,
    /// Init containers only: `restartPolicy: Always` makes it a sidecar.
    pub restart_always: bool,
    /// `image`, as written (ImageLocality reads it normalised, see [`PodDetails::images`]).
    pub image: Str,
}

impl Default for Container {
    fn default() -> Self {
        Self {
            name: Str::from(""),
            image: Str::from(""),
            requests: ContainerResources::default(),
            ports: Vec::new(),
            restart_always: false,
        }
    }
}

/// A `preferredDuringSchedulingIgnoredDuringExecution` term of node affinity.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PreferredSchedulingTerm {
    /// `weight` (1-100).
    pub weight: i32,
    /// `preference`.
    pub preference: NodeSelectorTerm,
}

/// A `preferredDuringSchedulingIgnoredDuringExecution` term of pod (anti-)affinity.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WeightedPodAffinityTerm {
    /// `weight` (1-100).
    pub weight: i32,
    /// `podAffinityTerm`.
    pub term: PodAffinityTerm,
}

/// The requests scoring reads of a pod: cpu and memory with each container that sets
/// none given the scheduler's defaults (see [`resources::non_zero_requests`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NonZeroRequests {
    /// Milli-CPU.
    pub milli_cpu: i64,
    /// Memory, in bytes.
    pub memory: i64,
}

/// A pod condition, reduced to what preemption reads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PodCondition {
    /// The condition type.
    pub type_: Str,
    /// The condition status.
    pub status: Str,
    /// The condition reason.
    pub reason: Str,
}

/// `status.startTime` in Unix nanoseconds, or unset ("now" to the scheduler), in 8 bytes:
/// an `Option<i64>` would take 16 in every pod record.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct StartTime(i64);

impl StartTime {
    /// No start time: "now".
    pub const UNSET: StartTime = StartTime(i64::MIN);

    /// The time, `None` when unset.
    pub fn get(self) -> Option<i64> {
        (self != Self::UNSET).then_some(self.0)
    }

    /// The time, or `now` when unset.
    pub fn unwrap_or(self, now: i64) -> i64 {
        self.get().unwrap_or(now)
    }
}

impl Default for StartTime {
    fn default() -> Self {
        Self::UNSET
    }
}

impl From<Option<i64>> for StartTime {
    /// `i64::MIN` itself (1677-09-21T00:12:43.145224192Z) is kept as the nanosecond after.
    fn from(time: Option<i64>) -> Self {
        match time {
            Some(nanos) => StartTime(nanos.max(i64::MIN + 1)),
            None => Self::UNSET,
        }
    }
}

impl std::fmt::Debug for StartTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// A Kubernetes pod as the scheduler sees it. Build with [`Pod::finish`] so the derived
/// fields (`requests`, `host_ports`) agree with the spec fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Pod {
    /// Name then uid in one string: one allocation a pod instead of two (see
    /// [`Pod::name`], [`Pod::uid`]).
    identity: Str,
    /// Bytes of `identity` that are the name (Kubernetes names are at most 253 bytes;
    /// 4 bytes rather than 8 keep the record small).
    name_len: u32,
    /// [`key_hash`] of the name and of the uid, for the cache's indexes: growing an index
    /// rehashes every pod in it, and these spare it a read of each pod's identity string.
    key_hashes: KeyHashes,
    /// `metadata.namespace`.
    pub namespace: Str,
    /// The API server's resourceVersion, as a number.
    pub resource_version: u64,
    /// `metadata.labels`.
    pub labels: Labels,
    /// `spec.nodeName`; `None` for pending pods.
    pub node_name: Option<Str>,
    /// `spec.priority`, 0 when unset.
    pub priority: i32,
    /// `spec.preemptionPolicy`.
    pub preemption_policy: PreemptionPolicy,
    /// `status.startTime`; unset means "now".
    pub start_time: StartTime,
    /// `metadata.deletionTimestamp` is set.
    pub terminating: bool,
    /// `status.nominatedNodeName` (only meaningful without `node_name`).
    pub nominated_node_name: Option<Str>,
    /// `status.phase`.
    pub phase: PodPhase,
    /// What the Priority admission plugin has yet to set (a manifest never admitted).
    pub unadmitted: Unadmitted,
    /// The rest of spec and status; change it through [`Pod::details_mut`].
    pub details: Arc<PodDetails>,
}

/// The fields of a pod that admission sets and its manifest left unset; see [`Pod::admit`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Unadmitted {
    /// `spec.priority` was unset (`priority` is then 0 until admitted).
    pub priority: bool,
    /// `spec.preemptionPolicy` was unset.
    pub preemption_policy: bool,
}

/// The parts of a pod that pods made from one template have in common, kept apart so
/// held pods can share one copy (see [`Pod::compact`]) and a pod stays small.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PodDetails {
    /// `spec.schedulerName` when set to other than the default (see
    /// [`Pod::scheduler_name`]); kept here rather than in every pod, as pods of one
    /// template share it.
    pub scheduler_name: Option<Str>,
    /// `spec.priorityClassName`: read only while the pod is [`Unadmitted`].
    pub priority_class_name: Option<Str>,
    /// `spec.schedulingGroup.podGroupName`: the PodGroup (in the pod's namespace) the pod
    /// is a member of. Kept here: a gang's members share their template.
    pub scheduling_group: Option<Str>,
    /// `spec.containers`.
    pub containers: Vec<Container>,
    /// `spec.initContainers`.
    pub init_containers: Vec<Container>,
    /// `spec.overhead`.
    pub overhead: ContainerResources,
    /// Pod-level `spec.resources.requests` (cpu, memory, hugepages-*).
    pub pod_requests: ContainerResources,
    /// `spec.tolerations`.
    pub tolerations: Tolerations,
    /// `spec.nodeSelector`.
    pub node_selector: Labels,
    /// `requiredDuringSchedulingIgnoredDuringExecution` of the node affinity.
    pub required_node_affinity: Option<NodeSelector>,
    /// Required pod affinity terms.
    pub pod_affinity: Vec<PodAffinityTerm>,
    /// Required pod anti-affinity terms.
    pub pod_anti_affinity: Vec<PodAffinityTerm>,
    /// Preferred node affinity terms (scoring only).
    pub preferred_node_affinity: Vec<PreferredSchedulingTerm>,
    /// Preferred pod affinity terms (scoring only).
    pub preferred_pod_affinity: Vec<WeightedPodAffinityTerm>,
    /// Preferred pod anti-affinity terms (scoring only).
    pub preferred_pod_anti_affinity: Vec<WeightedPodAffinityTerm>,
    /// `spec.topologySpreadConstraints`.
    pub topology_spread: Vec<TopologySpreadConstraint>,
    /// `status.conditions`.
    pub conditions: Vec<PodCondition>,
    /// Derived by [`Pod::finish`]: host ports of regular and sidecar containers.
    pub host_ports: Vec<HostPort>,
    /// Derived by [`Pod::finish`]: effective requests (containers, init steps, sidecars,
    /// pod-level, overhead). Kept here, not in every pod: they follow from the spec
    /// above, so pods of one template share them (56 bytes a pod).
    pub requests: Resources,
    /// Derived by [`Pod::finish`]: the requests scoring reads (see [`NonZeroRequests`]).
    pub non_zero_requests: NonZeroRequests,
    /// Derived by [`Pod::finish`]: the requests NodeResourcesFit scores the pod with when
    /// it is the one being placed (see [`resources::fit_score_requests`]).
    pub fit_score_requests: NonZeroRequests,
    /// Derived by [`Pod::finish`]: the images of the init containers, then of the
    /// containers, normalised as ImageLocality looks them up (kept when the container
    /// specs are dropped).
    pub images: Vec<Str>,
}

/// An image name as ImageLocality looks it up on a node: `:latest` added when the name
/// has no tag after its last `/`.
pub fn normalized_image_name(name: &str) -> Str {
    let tag = name.rfind(':').map_or(-1, |i| i as i64);
    let slash = name.rfind('/').map_or(-1, |i| i as i64);
    if tag <= slash {
        format!("{name}:latest").into()
    } else {
        name.into()
    }
}

impl PodDetails {
    /// Recomputes the derived fields (`requests`, `host_ports`) from the spec fields;
    /// requests the scheduler cannot read are refused (see [`resources::ReadingError`]).
    pub fn try_finish(&mut self) -> Result<(), resources::ReadingError> {
        self.host_ports = self
            .containers
            .iter()
            .chain(self.init_containers.iter().filter(|c| c.restart_always))
            .flat_map(|c| c.ports.iter().cloned())
            .collect();
        self.requests = Resources::default();
        self.requests = resources::effective_pod_requests(self)?;
        self.non_zero_requests = resources::non_zero_requests(self)?;
        self.fit_score_requests = resources::fit_score_requests(self)?;
        self.images = self
            .init_containers
            .iter()
            .chain(&self.containers)
            .map(|c| normalized_image_name(&c.image))
            .collect();
        Ok(())
    }

    /// [`PodDetails::try_finish`] for specs known to be readable (built in code, not
    /// from input): unreadable requests count as none.
    pub fn finish(&mut self) {
        let _ = self.try_finish();
    }

    /// Whether the container specs and resource lists `finish` reads are still here.
    pub fn holds_specs(&self) -> bool {
        !(self.containers.is_empty()
            && self.init_containers.is_empty()
            && self.overhead.is_empty()
            && self.pod_requests.is_empty())
    }

    /// Drops what `finish` has folded into `requests` and `host_ports`, for details held
    /// long (see [`Pod::compact`]); `finish` must not run again afterwards.
    pub fn drop_specs(&mut self) {
        self.containers = Vec::new();
        self.init_containers = Vec::new();
        self.overhead = ContainerResources::default();
        self.pod_requests = ContainerResources::default();
        self.host_ports.shrink_to_fit();
        self.conditions.shrink_to_fit();
        self.images.shrink_to_fit();
    }
}

/// A pod's [`key_hash`]es, kept with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyHashes {
    /// The name's hash.
    pub name: u32,
    /// The uid's hash.
    pub uid: u32,
}

impl KeyHashes {
    fn of(name: &str, uid: &str) -> Self {
        KeyHashes {
            name: key_hash(name),
            uid: key_hash(uid),
        }
    }
}

/// A pod's name and uid as one string, allocated once (the usual short ones are joined on
/// the stack first).
fn identity(name: &str, uid: &str) -> Str {
    let mut joined = [0u8; 128];
    let len = name.len() + uid.len();
    if len <= joined.len() {
        joined[..name.len()].copy_from_slice(name.as_bytes());
        joined[name.len()..len].copy_from_slice(uid.as_bytes());
        // Two whole strings joined are UTF-8 too: the check cannot fail.
        if let Some(joined) = utf8(&joined[..len]) {
            return joined.into();
        }
    }
    [name, uid].concat().into()
}

/// A name's length as stored in [`Pod`]. No message the server accepts carries a 4 GiB
/// name; should a library caller pass one, it is cut short at a character boundary
/// rather than left to split the identity string anywhere.
fn name_len(name: &str) -> u32 {
    let mut len = name.len().min(u32::MAX as usize);
    while !name.is_char_boundary(len) {
        len -= 1;
    }
    len as u32
}

/// The condition type a preempted victim is given.
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// The reason of that condition when the scheduler preempted the pod.
pub const PREEMPTION_BY_SCHEDULER: &str = "PreemptionByScheduler";
/// The scheduler name a pod without one is given.
pub const DEFAULT_SCHEDULER: &str = "default-scheduler";

impl PodDetails {
    /// Empty details, shared: a new pod holds them until its spec is set, so making one
    /// allocates nothing here.
    pub fn empty() -> Arc<PodDetails> {
        static EMPTY: std::sync::LazyLock<Arc<PodDetails>> = std::sync::LazyLock::new(Arc::default);
        EMPTY.clone()
    }
}

impl Pod {
    /// A pod with only identity set; fill the rest and call [`Pod::finish`].
    pub fn new(namespace: &str, name: &str, uid: &str) -> Self {
        Self::new_in(namespace.into(), name, uid)
    }

    /// As [`Pod::new`], with the namespace already a shared string.
    pub fn new_in(namespace: Str, name: &str, uid: &str) -> Self {
        Pod {
            identity: identity(name, uid),
            name_len: name_len(name),
            key_hashes: KeyHashes::of(name, uid),
            namespace,
            resource_version: 0,
            labels: Labels::default(),
            node_name: None,
            priority: 0,
            preemption_policy: PreemptionPolicy::PreemptLowerPriority,
            start_time: StartTime::UNSET,
            terminating: false,
            nominated_node_name: None,
            phase: PodPhase::Pending,
            unadmitted: Unadmitted::default(),
            details: PodDetails::empty(),
        }
    }

    /// Whether [`Pod::admit`] has anything to set: the priority is unset, or a named class
    /// has a preemption policy to give.
    pub fn needs_admission(&self) -> bool {
        self.unadmitted.priority
            || (self.unadmitted.preemption_policy && self.details.priority_class_name.is_some())
    }

    /// Sets the priority and preemption policy as the Priority admission plugin does (see
    /// [`priority`]). A pod naming a class that does not exist is left unchanged.
    pub fn admit(
        &mut self,
        classes: &priority::PriorityClasses,
    ) -> Result<(), priority::UnknownPriorityClass> {
        if !self.needs_admission() {
            return Ok(());
        }
        let request = priority::PriorityRequest {
            priority: (!self.unadmitted.priority).then_some(self.priority),
            class_name: self.details.priority_class_name.as_deref().unwrap_or(""),
            preemption_policy: (!self.unadmitted.preemption_policy)
                .then_some(self.preemption_policy),
        };
        let (priority, policy) = classes.resolve(request)?;
        self.priority = priority;
        self.preemption_policy = policy;
        self.unadmitted = Unadmitted::default();
        Ok(())
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.identity[..self.name_len as usize]
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        &self.identity[self.name_len as usize..]
    }

    /// [`key_hash`] of the name and of the uid.
    pub fn key_hashes(&self) -> KeyHashes {
        self.key_hashes
    }

    /// The same pod under another name and uid.
    pub fn renamed(mut self, name: &str, uid: &str) -> Self {
        self.identity = identity(name, uid);
        self.name_len = name_len(name);
        self.key_hashes = KeyHashes::of(name, uid);
        self
    }

    /// `spec.schedulerName`, defaulted as the API server does.
    pub fn scheduler_name(&self) -> &str {
        self.details
            .scheduler_name
            .as_deref()
            .unwrap_or(DEFAULT_SCHEDULER)
    }

    /// The details to change, copied first if they are shared.
    /// Effective requests (set by [`Pod::finish`]).
    pub fn requests(&self) -> &Resources {
        &self.details.requests
    }

    /// The details to change, copied first when shared.
    pub fn details_mut(&mut self) -> &mut PodDetails {
        Arc::make_mut(&mut self.details)
    }

    /// Recomputes the derived fields from the spec fields.
    pub fn finish(mut self) -> Self {
        self.details_mut().finish();
        self
    }

    /// [`Pod::finish`], refusing requests the scheduler cannot read.
    pub fn try_finish(mut self) -> Result<Self, resources::ReadingError> {
        self.details_mut().try_finish()?;
        Ok(self)
    }

    /// Readies a finished pod to be held long: values many pods carry (namespace, node,
    /// labels, scheduler, details) are replaced by equal ones from `interner`, and the
    /// container specs, already folded into `requests` and `host_ports`, are dropped.
    /// `finish` must not run again afterwards.
    pub fn compact(&mut self, interner: &mut impl Interner) {
        interner.share_str(&mut self.namespace);
        for name in [&mut self.node_name, &mut self.nominated_node_name]
            .into_iter()
            .flatten()
        {
            interner.share_str(name);
        }
        interner.share_labels(&mut self.labels);
        interner.share_details(&mut self.details);
    }

    /// The pod's namespace, name and uid.
    pub fn pod_ref(&self) -> PodRef {
        PodRef {
            namespace: self.namespace.clone(),
            name: self.name().into(),
            uid: self.uid().into(),
        }
    }

    /// Terminating because the scheduler preempted it: deletionTimestamp set and the first
    /// `DisruptionTarget` condition is True with reason `PreemptionByScheduler`.
    pub fn terminating_by_preemption(&self) -> bool {
        self.terminating
            && self
                .details
                .conditions
                .iter()
                .find(|c| &*c.type_ == DISRUPTION_TARGET)
                .is_some_and(|c| &*c.status == "True" && &*c.reason == PREEMPTION_BY_SCHEDULER)
    }

    /// The node this pending pod is nominated to, if any.
    pub fn nomination(&self) -> Option<&Str> {
        if self.node_name.is_some() {
            None
        } else {
            self.nominated_node_name.as_ref().filter(|n| !n.is_empty())
        }
    }

    /// The pod has a required anti-affinity term.
    pub fn has_required_anti_affinity(&self) -> bool {
        !self.details.pod_anti_affinity.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::quantity;

    #[test]
    fn name_and_uid_share_one_string() {
        let pod = Pod::new("ns", "wëb-0", "3f1c-ü");
        assert_eq!((pod.name(), pod.uid()), ("wëb-0", "3f1c-ü"));
        let empty = Pod::new("ns", "", "");
        assert_eq!((empty.name(), empty.uid()), ("", ""));
        let renamed = pod.renamed("db", "u-2");
        assert_eq!((renamed.name(), renamed.uid()), ("db", "u-2"));
        let r = renamed.pod_ref();
        assert_eq!((&*r.namespace, &*r.name, &*r.uid), ("ns", "db", "u-2"));
    }

    #[test]
    fn a_held_pod_fits_a_128_byte_allocation() {
        // Held as `triomphe::Arc<Pod>` (an 8-byte count, no weak count): 8 + 120 bytes is
        // jemalloc's 128-byte size class; at 121 bytes it is 160.
        assert!(
            std::mem::size_of::<Pod>() <= 120,
            "{}",
            std::mem::size_of::<Pod>()
        );
    }

    #[test]
    fn a_name_length_always_falls_on_a_character_boundary() {
        assert_eq!(name_len("wëb"), 4);
        assert_eq!(name_len(""), 0);
    }

    #[test]
    fn start_time_keeps_unset_apart_from_every_time() {
        assert_eq!(StartTime::default().get(), None);
        assert_eq!(StartTime::from(None).unwrap_or(7), 7);
        assert_eq!(StartTime::from(Some(0)).get(), Some(0));
        assert_eq!(StartTime::from(Some(-5)).unwrap_or(7), -5);
        assert_eq!(StartTime::from(Some(i64::MIN)).get(), Some(i64::MIN + 1));
    }

    #[test]
    fn requests_follow_the_spec_and_are_shared_with_the_details() {
        let mut pod = Pod::new("ns", "a", "u");
        pod.details_mut().containers = vec![Container {
            requests: ContainerResources::new(vec![(
                "cpu".into(),
                quantity::Quantity::from_millis(250),
            )]),
            ..Container::default()
        }];
        let pod = pod.finish();
        assert_eq!(pod.requests().milli_cpu, 250);
        let twin = pod.clone().renamed("b", "v");
        assert!(std::ptr::eq(pod.requests(), twin.requests()));
    }
}
