//! Domain types: the scheduling-relevant subset of Kubernetes Nodes, Pods and
//! PodDisruptionBudgets, already reduced to what the filters and the preemption
//! algorithm read (effective requests, host ports, parsed selectors).
//!
//! Nothing here knows about gRPC or async runtimes.

pub mod build;
pub mod decode;
pub mod labels;
pub mod named;
pub mod namespace;
pub mod priority;
pub mod quantity;
pub mod resources;

use triomphe::Arc;

pub use labels::{LabelSelector, Labels, Operator, Requirement};
pub use resources::{ContainerResources, Resources};

/// Interned-by-sharing string used for names, label keys and values.
pub type Str = Arc<str>;

/// Identity of a pod in results (victims, nominations to clear).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct PodRef {
    #[serde(serialize_with = "serialize_str")]
    pub namespace: Str,
    #[serde(serialize_with = "serialize_str")]
    pub name: Str,
    #[serde(serialize_with = "serialize_str")]
    pub uid: Str,
}

fn serialize_str<S: serde::Serializer>(value: &Str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(value)
}

/// Taint effects as Kubernetes spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl TaintEffect {
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "NoSchedule" => Some(Self::NoSchedule),
            "PreferNoSchedule" => Some(Self::PreferNoSchedule),
            "NoExecute" => Some(Self::NoExecute),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoSchedule => "NoSchedule",
            Self::PreferNoSchedule => "PreferNoSchedule",
            Self::NoExecute => "NoExecute",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Taint {
    pub key: Str,
    pub value: Str,
    pub effect: TaintEffect,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TolerationOperator {
    /// Also what an empty operator means.
    Equal,
    Exists,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Toleration {
    /// Empty key matches every key.
    pub key: Str,
    pub operator: TolerationOperator,
    pub value: Str,
    /// `None` matches every effect.
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// Upstream `Toleration.ToleratesTaint`.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if let Some(effect) = self.effect
            && effect != taint.effect
        {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            TolerationOperator::Exists => true,
            TolerationOperator::Equal => self.value == taint.value,
        }
    }
}

/// A pod's tolerations, one list shared by the pods that have the same (see
/// [`build::Memo`]): an API server gives nearly every pod the two DefaultTolerationSeconds
/// adds, and a list of each pod's own cost it 80–160 bytes. No tolerations allocate
/// nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tolerations(Option<Arc<[Toleration]>>);

impl Tolerations {
    /// The same tolerations and `toleration` after them, in a list of their own.
    pub fn push(&mut self, toleration: Toleration) {
        let mut tolerations = self.to_vec();
        tolerations.push(toleration);
        *self = tolerations.into();
    }

    /// Whether both are one shared list (or both empty).
    pub fn ptr_eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        }
    }
}

impl std::ops::Deref for Tolerations {
    type Target = [Toleration];

    fn deref(&self) -> &[Toleration] {
        self.0.as_deref().unwrap_or_default()
    }
}

impl From<Vec<Toleration>> for Tolerations {
    fn from(tolerations: Vec<Toleration>) -> Self {
        Self((!tolerations.is_empty()).then(|| tolerations.into()))
    }
}

impl FromIterator<Toleration> for Tolerations {
    fn from_iter<I: IntoIterator<Item = Toleration>>(tolerations: I) -> Self {
        tolerations.into_iter().collect::<Vec<_>>().into()
    }
}

/// A Kubernetes node as the scheduler sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub name: Str,
    pub uid: Str,
    pub resource_version: u64,
    pub labels: Labels,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    /// `status.allocatable`; `pods` is the pod-slot count.
    pub allocatable: Resources,
    /// `metadata.annotations`: only a placement policy's termination-notice signals read
    /// them.
    pub annotations: Labels,
    /// `status.conditions`: likewise.
    pub conditions: Vec<NodeCondition>,
}

/// A node condition (`status.conditions[]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCondition {
    /// `Ready`, `MemoryPressure`, ...
    pub kind: Str,
    /// `True`, `False` or `Unknown`.
    pub status: Str,
    pub reason: Str,
    pub message: Str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

impl Protocol {
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "" | "TCP" => Some(Self::Tcp),
            "UDP" => Some(Self::Udp),
            "SCTP" => Some(Self::Sctp),
            _ => None,
        }
    }

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
    pub ip: Str,
    pub protocol: Protocol,
    pub port: i32,
}

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

/// Operators of node-selector requirements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeSelectorOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

impl NodeSelectorOperator {
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "In" => Some(Self::In),
            "NotIn" => Some(Self::NotIn),
            "Exists" => Some(Self::Exists),
            "DoesNotExist" => Some(Self::DoesNotExist),
            "Gt" => Some(Self::Gt),
            "Lt" => Some(Self::Lt),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::In => "In",
            Self::NotIn => "NotIn",
            Self::Exists => "Exists",
            Self::DoesNotExist => "DoesNotExist",
            Self::Gt => "Gt",
            Self::Lt => "Lt",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeSelectorRequirement {
    pub key: Str,
    pub operator: NodeSelectorOperator,
    pub values: Vec<Str>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct NodeSelectorTerm {
    pub match_expressions: Vec<NodeSelectorRequirement>,
    pub match_fields: Vec<NodeSelectorRequirement>,
}

/// `requiredDuringSchedulingIgnoredDuringExecution` of node affinity: OR over terms.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct NodeSelector {
    pub terms: Vec<NodeSelectorTerm>,
}

/// A required pod (anti-)affinity term.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PodAffinityTerm {
    /// `None` (missing) matches no pod; `Some(empty)` matches every pod.
    pub label_selector: Option<LabelSelector>,
    pub namespaces: Vec<Str>,
    /// `None` when missing; `Some(empty)` selects all namespaces.
    pub namespace_selector: Option<LabelSelector>,
    pub topology_key: Str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WhenUnsatisfiable {
    DoNotSchedule,
    ScheduleAnyway,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InclusionPolicy {
    Honor,
    Ignore,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TopologySpreadConstraint {
    pub max_skew: i32,
    pub topology_key: Str,
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// `None` (missing) matches no pod.
    pub label_selector: Option<LabelSelector>,
    pub min_domains: Option<i32>,
    pub match_label_keys: Vec<Str>,
    /// Default Honor.
    pub node_affinity_policy: InclusionPolicy,
    /// Default Ignore.
    pub node_taints_policy: InclusionPolicy,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreemptionPolicy {
    PreemptLowerPriority,
    Never,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
}

impl PodPhase {
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

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Running => "Running",
            Self::Succeeded => "Succeeded",
            Self::Failed => "Failed",
            Self::Unknown => "Unknown",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }
}

/// One container's scheduling-relevant fields.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Container {
    pub name: Str,
    pub requests: ContainerResources,
    pub ports: Vec<HostPort>,
    /// Init containers only: `restartPolicy: Always` makes it a sidecar.
    pub restart_always: bool,
}

impl Default for Container {
    fn default() -> Self {
        Self {
            name: Str::from(""),
            requests: ContainerResources::default(),
            ports: Vec::new(),
            restart_always: false,
        }
    }
}

/// A pod condition, reduced to what preemption reads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PodCondition {
    pub type_: Str,
    pub status: Str,
    pub reason: Str,
}

/// `status.startTime` in Unix nanoseconds, or unset ("now" to the scheduler), in 8 bytes:
/// an `Option<i64>` would take 16 in every pod record.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct StartTime(i64);

impl StartTime {
    pub const UNSET: StartTime = StartTime(i64::MIN);

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
    pub namespace: Str,
    pub resource_version: u64,
    pub labels: Labels,
    /// `spec.nodeName`; `None` for pending pods.
    pub node_name: Option<Str>,
    /// `spec.priority`, 0 when unset.
    pub priority: i32,
    pub preemption_policy: PreemptionPolicy,
    /// `status.startTime`; unset means "now".
    pub start_time: StartTime,
    /// `metadata.deletionTimestamp` is set.
    pub terminating: bool,
    /// `status.nominatedNodeName` (only meaningful without `node_name`).
    pub nominated_node_name: Option<Str>,
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
    pub containers: Vec<Container>,
    pub init_containers: Vec<Container>,
    pub overhead: ContainerResources,
    /// Pod-level `spec.resources.requests` (cpu, memory, hugepages-*).
    pub pod_requests: ContainerResources,
    pub tolerations: Tolerations,
    pub node_selector: Labels,
    pub required_node_affinity: Option<NodeSelector>,
    pub pod_affinity: Vec<PodAffinityTerm>,
    pub pod_anti_affinity: Vec<PodAffinityTerm>,
    pub topology_spread: Vec<TopologySpreadConstraint>,
    pub conditions: Vec<PodCondition>,
    /// Derived by [`Pod::finish`]: host ports of regular and sidecar containers.
    pub host_ports: Vec<HostPort>,
    /// Derived by [`Pod::finish`]: effective requests (containers, init steps, sidecars,
    /// pod-level, overhead). Kept here, not in every pod: they follow from the spec
    /// above, so pods of one template share them (56 bytes a pod).
    pub requests: Resources,
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
    }
}

/// A pod's [`key_hash`]es, kept with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyHashes {
    pub name: u32,
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

/// A short hash of a pod's name or uid, the same for the process's life (seeded at
/// random, so clients cannot choose colliding names).
pub fn key_hash(key: &str) -> u32 {
    static STATE: std::sync::LazyLock<ahash::RandomState> =
        std::sync::LazyLock::new(ahash::RandomState::new);
    // The low half of a 64-bit hash: every bit of it is mixed.
    STATE.hash_one(key) as u32
}

/// `bytes` as a string when they are UTF-8. Most strings a client sends (names, uids,
/// label values) are short and ASCII: those skip the alignment steps `std::str::from_utf8`
/// takes before its own ASCII fast path, which cost more than the check on such strings.
#[inline]
pub fn utf8(bytes: &[u8]) -> Option<&str> {
    if bytes.is_ascii() {
        // SAFETY: every ASCII byte is a one-byte UTF-8 character, so ASCII bytes are UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    }
}

/// The instant an RFC 3339 timestamp names, in nanoseconds since the Unix epoch; `None`
/// when it is not one or falls outside the nanoseconds an `i64` holds.
///
/// Kubernetes writes every timestamp as `YYYY-MM-DDTHH:MM:SSZ`: that form is read here
/// field by field, a fifth of what chrono's general parser costs (BENCHMARKS.md), and
/// anything else (fractions, offsets, lowercase, a leap second, an invalid date) is left to
/// chrono, which then decides alone.
pub fn rfc3339_nanos(text: &str) -> Option<i64> {
    kubernetes_timestamp_nanos(text.as_bytes()).or_else(|| {
        chrono::DateTime::parse_from_rfc3339(text)
            .ok()?
            .timestamp_nanos_opt()
    })
}

fn kubernetes_timestamp_nanos(text: &[u8]) -> Option<i64> {
    let [
        y0,
        y1,
        y2,
        y3,
        b'-',
        m0,
        m1,
        b'-',
        d0,
        d1,
        b'T',
        h0,
        h1,
        b':',
        i0,
        i1,
        b':',
        s0,
        s1,
        b'Z',
    ] = *text
    else {
        return None;
    };
    let number = |digits: &[u8]| {
        digits.iter().try_fold(0u32, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
    };
    let year = i32::try_from(number(&[y0, y1, y2, y3])?).ok()?;
    // An invalid date or time, and a leap second (60), are chrono's to read.
    chrono::NaiveDate::from_ymd_opt(year, number(&[m0, m1])?, number(&[d0, d1])?)?
        .and_hms_opt(number(&[h0, h1])?, number(&[i0, i1])?, number(&[s0, s1])?)?
        .and_utc()
        .timestamp_nanos_opt()
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

pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
pub const PREEMPTION_BY_SCHEDULER: &str = "PreemptionByScheduler";
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

    pub fn has_required_anti_affinity(&self) -> bool {
        !self.details.pod_anti_affinity.is_empty()
    }
}

/// Where held objects get one shared copy of values many of them carry. Each call makes
/// its argument the shared copy of its value, leaving it as it is when it already is one.
pub trait Interner {
    fn share_str(&mut self, s: &mut Str);
    /// Equal label sets become one, and so do the strings in them.
    fn share_labels(&mut self, labels: &mut Labels);
    /// Equal details become one, held without the container specs [`PodDetails::finish`]
    /// has folded into them (see [`PodDetails::drop_specs`]).
    fn share_details(&mut self, details: &mut Arc<PodDetails>);
}

/// A PodDisruptionBudget, reduced to what preemption reads.
#[derive(Clone, Debug, PartialEq)]
pub struct PodDisruptionBudget {
    pub namespace: Str,
    pub name: Str,
    pub uid: Str,
    pub resource_version: u64,
    /// `None` when missing; an invalid selector is kept as `Some` with `valid == false`
    /// (upstream skips such a PDB).
    pub selector: Option<LabelSelector>,
    pub disruptions_allowed: i32,
    /// Pod names in `status.disruptedPods`.
    pub disrupted_pods: Vec<Str>,
}

impl PodDisruptionBudget {
    /// Whether this PDB covers the pod (same namespace, valid non-empty selector matching).
    pub fn covers(&self, pod: &Pod) -> bool {
        if self.namespace != pod.namespace || pod.labels.is_empty() {
            return false;
        }
        match &self.selector {
            Some(selector) => {
                selector.is_valid() && !selector.is_empty() && selector.matches(&pod.labels)
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn chrono_nanos(text: &str) -> Option<i64> {
        chrono::DateTime::parse_from_rfc3339(text)
            .ok()?
            .timestamp_nanos_opt()
    }

    #[test]
    fn timestamps_read_as_chrono_reads_them() {
        for (text, nanos) in [
            ("1970-01-01T00:00:00Z", Some(0)),
            ("2023-11-14T22:13:20Z", Some(1_700_000_000_000_000_000)),
            ("2024-02-29T23:59:59Z", Some(1_709_251_199_000_000_000)),
            // The edges of what nanoseconds in an i64 hold.
            ("1677-09-21T00:12:44Z", Some(-9_223_372_036_000_000_000)),
            ("1677-09-21T00:12:43Z", None),
            ("2262-04-11T23:47:16Z", Some(9_223_372_036_000_000_000)),
            ("2262-04-11T23:47:17Z", None),
            ("2023-02-29T00:00:00Z", None),
            ("2023-13-01T00:00:00Z", None),
            ("2023-04-31T00:00:00Z", None),
            ("2023-01-01T24:00:00Z", None),
            ("2023-01-01T00:00:0xZ", None),
            ("2023-01-01 00:00:00Z", Some(1_672_531_200_000_000_000)),
            // Left to chrono: a leap second, a fraction, an offset, lowercase.
            (
                "2016-12-31T23:59:60Z",
                Some(1_483_228_799_000_000_000 + 1_000_000_000),
            ),
            ("2023-11-14T22:13:20.5Z", Some(1_700_000_000_500_000_000)),
            ("2023-11-14T23:13:20+01:00", Some(1_700_000_000_000_000_000)),
            ("2023-11-14t22:13:20z", Some(1_700_000_000_000_000_000)),
            ("", None),
        ] {
            assert_eq!(rfc3339_nanos(text), nanos, "{text}");
            assert_eq!(rfc3339_nanos(text), chrono_nanos(text), "{text}");
        }
    }

    proptest! {
        #[test]
        fn any_timestamp_of_the_kubernetes_shape_reads_as_chrono_reads_it(
            digits in proptest::collection::vec(prop_oneof![8 => 0u8..10, 1 => 10u8..16], 14),
        ) {
            let d: Vec<char> = digits
                .iter()
                .map(|&d| char::from(if d < 10 { b'0' + d } else { b"x:/ Z-"[usize::from(d - 10)] }))
                .collect();
            let text = format!(
                "{}{}{}{}-{}{}-{}{}T{}{}:{}{}:{}{}Z",
                d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13]
            );
            prop_assert_eq!(rfc3339_nanos(&text), chrono_nanos(&text), "{}", text);
        }

        #[test]
        fn any_timestamp_in_range_reads_back(nanos in -9_223_372_036i64..=9_223_372_036) {
            let text = chrono::DateTime::from_timestamp(nanos, 0)
                .unwrap()
                .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
            prop_assert_eq!(rfc3339_nanos(&text), Some(nanos * 1_000_000_000));
        }

        #[test]
        fn bytes_are_a_string_exactly_when_std_says_so(bytes in proptest::collection::vec(
            prop_oneof![4 => 0u8..0x80, 1 => any::<u8>()], 0..40,
        )) {
            prop_assert_eq!(utf8(&bytes), std::str::from_utf8(&bytes).ok());
        }
    }

    #[test]
    fn tolerations_pushed_to_a_shared_list_leave_it_as_it_was() {
        let toleration = |key: &str| Toleration {
            key: key.into(),
            operator: TolerationOperator::Exists,
            value: "".into(),
            effect: None,
        };
        let empty = Tolerations::default();
        assert!(empty.is_empty() && empty.ptr_eq(&Vec::new().into()));
        let shared: Tolerations = vec![toleration("a")].into();
        let mut pushed = shared.clone();
        assert!(pushed.ptr_eq(&shared));
        pushed.push(toleration("b"));
        assert!(!pushed.ptr_eq(&shared));
        assert_eq!(&*shared, &[toleration("a")]);
        assert_eq!(&*pushed, &[toleration("a"), toleration("b")]);
        assert_eq!(
            ["a", "b"]
                .map(toleration)
                .into_iter()
                .collect::<Tolerations>(),
            pushed
        );
    }

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
