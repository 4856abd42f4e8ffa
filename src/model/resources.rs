//! Resource lists: exact per-container lists (quantities) and the scheduler's integer
//! aggregate (`Resources`: cpu in millicores, bytes, integer scalars).

use super::quantity::Quantity;
use super::{PodDetails, Str};

/// The cpu resource name.
pub const CPU: &str = "cpu";
/// The memory resource name.
pub const MEMORY: &str = "memory";
/// The ephemeral-storage resource name.
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
/// The pods resource name (node allocatable pod slots).
pub const PODS: &str = "pods";

/// Whether the scheduler tracks a resource name as a scalar (extended resources,
/// hugepages, prefixed native resources, attachable volumes). Unprefixed unknown names are
/// ignored, as upstream's `IsScalarResourceName` does.
pub fn is_scalar_resource(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("attachable-volumes-") || name.contains('/')
}

/// Resources settable at pod level (`spec.resources.requests`).
pub fn is_pod_level_resource(name: &str) -> bool {
    name == CPU || name == MEMORY || name.starts_with("hugepages-")
}

/// An exact resource list (`requests`, `overhead`, ...), sorted by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ContainerResources(Vec<(Str, Quantity)>);

impl ContainerResources {
    /// The list of `items`, sorted.
    pub fn new(mut items: Vec<(Str, Quantity)>) -> Self {
        items.sort_by(|a, b| a.0.cmp(&b.0));
        items.dedup_by(|later, earlier| later.0 == earlier.0);
        ContainerResources(items)
    }

    /// The amount of resource `name`, if listed.
    pub fn get(&self, name: &str) -> Option<Quantity> {
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(name))
            .ok()
            .map(|i| self.0[i].1)
    }

    /// Nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each resource and its amount, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&Str, Quantity)> {
        self.0.iter().map(|(k, v)| (k, *v))
    }

    fn set(&mut self, name: &Str, value: Quantity) {
        match self.0.binary_search_by(|(k, _)| k.cmp(name)) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (name.clone(), value)),
        }
    }

    /// Upstream `addResourceList`: a name not yet listed takes the quantity as it is,
    /// a listed one adds to it (the sum's form decides how an overflowing value reads).
    fn add(&mut self, other: &ContainerResources) -> Result<(), ReadingError> {
        for (name, q) in other.iter() {
            let sum = match self.get(name) {
                None => q,
                Some(current) => {
                    current
                        .checked_add(q)
                        .ok_or_else(|| ReadingError::Unsummable {
                            resource: name.clone(),
                        })?
                }
            };
            self.set(name, sum);
        }
        Ok(())
    }

    fn max_with(&mut self, other: &ContainerResources) {
        for (name, q) in other.iter() {
            match self.get(name) {
                Some(current) if current.cmp_value(q).is_ge() => {}
                _ => self.set(name, q),
            }
        }
    }

    /// Converts to the scheduler's integer form (cpu in millicores, the rest in units,
    /// rounded up), as `NodeInfo` accounting does; an amount the scheduler would read as
    /// negative (an int64 overflow) is refused.
    pub fn to_resources(&self) -> Result<Resources, ReadingError> {
        let mut out = Resources::default();
        for (name, q) in self.iter() {
            let Some(amount) = scheduler_reading(name, q)? else {
                continue;
            };
            match &**name {
                CPU => out.milli_cpu = amount,
                MEMORY => out.memory = amount,
                EPHEMERAL_STORAGE => out.ephemeral_storage = amount,
                PODS => out.pods = amount,
                _ => out.scalars.push((name.clone(), amount)),
            }
        }
        Ok(out)
    }
}

/// Why a resource amount cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadingError {
    /// The sum of the requests cannot be held exactly.
    #[error("the summed {resource} requests are beyond the supported precision")]
    Unsummable {
        /// The resource.
        resource: Str,
    },
    /// kube-scheduler's integer reading of the amount overflows.
    #[error("kube-scheduler reads this {resource} amount as {reading} (int64 overflow)")]
    Negative {
        /// The resource.
        resource: Str,
        /// What kube-scheduler reads.
        reading: i64,
    },
}

impl ReadingError {
    /// The resource the amount is of.
    pub fn resource(&self) -> &Str {
        match self {
            ReadingError::Unsummable { resource } | ReadingError::Negative { resource, .. } => {
                resource
            }
        }
    }
}

/// The integer the scheduler reads for `name` (`MilliValue` for cpu, `Value` for the
/// rest it tracks; `None` for names it ignores), refused when int64 overflow makes it
/// negative: the quantity itself is not negative (the builder refuses those), and a
/// negative request would give capacity back.
pub fn scheduler_reading(name: &Str, q: Quantity) -> Result<Option<i64>, ReadingError> {
    let amount = match &**name {
        CPU => q.milli_value(),
        MEMORY | EPHEMERAL_STORAGE | PODS => q.value(),
        other if is_scalar_resource(other) => q.value(),
        _ => return Ok(None),
    };
    if amount < 0 && !q.is_negative() {
        return Err(ReadingError::Negative {
            resource: name.clone(),
            reading: amount,
        });
    }
    Ok(Some(amount))
}

/// API-server defaulting of a container's requests: a resource with a limit and no
/// request requests its limit.
pub fn requests_defaulted_from_limits(
    mut requests: Vec<(Str, Quantity)>,
    limits: Vec<(Str, Quantity)>,
) -> ContainerResources {
    for (name, limit) in limits {
        if !requests.iter().any(|(n, _)| *n == name) {
            requests.push((name, limit));
        }
    }
    ContainerResources::new(requests)
}

/// Upstream `defaultPodRequests` for pod-level resources: a supported resource with a
/// pod-level limit and no pod-level request takes the limit, unless it is cpu or memory
/// that some container requests — then it stays unset, which means the containers'
/// aggregate, the same effective request upstream computes. Needs the pod's containers.
pub fn pod_level_requests_defaulted(
    mut requests: Vec<(Str, Quantity)>,
    limits: Vec<(Str, Quantity)>,
    details: &PodDetails,
) -> ContainerResources {
    for (name, limit) in limits {
        if requests.iter().any(|(n, _)| *n == name) || !is_pod_level_resource(&name) {
            continue;
        }
        let overcommittable = &*name == CPU || &*name == MEMORY;
        let containers_request_it = details
            .containers
            .iter()
            .chain(&details.init_containers)
            .any(|c| c.requests.get(&name).is_some());
        if !(overcommittable && containers_request_it) {
            requests.push((name, limit));
        }
    }
    ContainerResources::new(requests)
}

/// The scheduler's integer resource vector.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Resources {
    /// Milli-CPU.
    pub milli_cpu: i64,
    /// Memory, in bytes.
    pub memory: i64,
    /// Ephemeral storage, in bytes.
    pub ephemeral_storage: i64,
    /// Pod slots (only meaningful for node allocatable).
    pub pods: i64,
    /// Scalar resources sorted by name.
    pub scalars: Vec<(Str, i64)>,
}

impl Resources {
    /// The amount of scalar resource `name` (0 when absent).
    pub fn scalar(&self, name: &str) -> i64 {
        self.scalars
            .binary_search_by(|(k, _)| (**k).cmp(name))
            .map(|i| self.scalars[i].1)
            .unwrap_or(0)
    }

    /// True when nothing but possibly `pods` is requested.
    pub fn is_zero_request(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalars.iter().all(|(_, v)| *v == 0)
    }

    /// Adds `other`'s amounts.
    pub fn add(&mut self, other: &Resources) {
        self.combine(other, 1);
    }

    /// Subtracts `other`'s amounts.
    pub fn sub(&mut self, other: &Resources) {
        self.combine(other, -1);
    }

    /// Adds or subtracts as upstream's int64 `+=` and `-=` do: wrapping, which keeps
    /// every add undone exactly by its subtract whatever the amounts.
    fn combine(&mut self, other: &Resources, sign: i64) {
        let step = |total: i64, amount: i64| total.wrapping_add(amount.wrapping_mul(sign));
        self.milli_cpu = step(self.milli_cpu, other.milli_cpu);
        self.memory = step(self.memory, other.memory);
        self.ephemeral_storage = step(self.ephemeral_storage, other.ephemeral_storage);
        self.pods = step(self.pods, other.pods);
        for (name, value) in &other.scalars {
            match self.scalars.binary_search_by(|(k, _)| k.cmp(name)) {
                Ok(i) => self.scalars[i].1 = step(self.scalars[i].1, *value),
                Err(i) => self.scalars.insert(i, (name.clone(), step(0, *value))),
            }
        }
    }
}

/// Upstream `resource.PodRequests`: max(containers + sidecars, every init step including
/// the sidecars declared before it), pod-level requests replacing the aggregate for the
/// resources they set, plus overhead. No non-zero defaults. Quantities are summed
/// before they are read, as upstream sums them.
pub fn effective_pod_requests(details: &PodDetails) -> Result<Resources, ReadingError> {
    let mut running = ContainerResources::default();
    for c in &details.containers {
        running.add(&c.requests)?;
    }
    let mut sidecars = ContainerResources::default();
    let mut init_max = ContainerResources::default();
    for c in &details.init_containers {
        if c.restart_always {
            running.add(&c.requests)?;
            sidecars.add(&c.requests)?;
            init_max.max_with(&sidecars);
        } else {
            let mut step = c.requests.clone();
            step.add(&sidecars)?;
            init_max.max_with(&step);
        }
    }
    running.max_with(&init_max);
    let pod_level: Vec<_> = details
        .pod_requests
        .iter()
        .filter(|(name, _)| is_pod_level_resource(name))
        .collect();
    for (name, q) in pod_level {
        running.set(name, q);
    }
    running.add(&details.overhead)?;
    running.to_resources()
}

/// The scheduler's request for a container that sets no cpu request, in milli-CPU.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// The scheduler's request for a container that sets no memory request (200 MiB).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// The cpu and memory the scoring plugins count a pod for (upstream's non-zero requests):
/// [`effective_pod_requests`] with every container (init containers too) that sets no cpu
/// (memory) request counted at [`DEFAULT_MILLI_CPU_REQUEST`] ([`DEFAULT_MEMORY_REQUEST`]).
/// With pod-level requests set, only a resource that neither the pod level, nor any
/// container, nor the overhead sets is defaulted (the pod level replaces the aggregate
/// anyway).
pub fn non_zero_requests(
    details: &PodDetails,
) -> Result<super::pod::NonZeroRequests, ReadingError> {
    let pod_level_set = details
        .pod_requests
        .iter()
        .any(|(name, _)| is_pod_level_resource(name));
    // Upstream's test is whether the pod's requests (containers, pod level, overhead)
    // name the resource at all.
    let set_anywhere = |name: &str| {
        details.pod_requests.get(name).is_some()
            || details.overhead.get(name).is_some()
            || details
                .containers
                .iter()
                .chain(&details.init_containers)
                .any(|c| c.requests.get(name).is_some())
    };
    let defaults: Vec<(Str, Quantity)> = [
        (CPU, Quantity::from_millis(DEFAULT_MILLI_CPU_REQUEST)),
        (MEMORY, Quantity::from_units(DEFAULT_MEMORY_REQUEST)),
    ]
    .into_iter()
    .filter(|(name, _)| !pod_level_set || !set_anywhere(name))
    .map(|(name, q)| (Str::from(name), q))
    .collect();
    let requests = if defaults.is_empty() {
        effective_pod_requests(details)?
    } else {
        let mut defaulted = details.clone();
        for c in defaulted
            .containers
            .iter_mut()
            .chain(defaulted.init_containers.iter_mut())
        {
            for (name, q) in &defaults {
                if c.requests.get(name).is_none() {
                    c.requests.set(name, *q);
                }
            }
        }
        effective_pod_requests(&defaulted)?
    };
    Ok(super::pod::NonZeroRequests {
        milli_cpu: requests.milli_cpu,
        memory: requests.memory,
    })
}

/// The cpu and memory NodeResourcesFit scores the incoming pod with: its
/// [`non_zero_requests`] without the pod-level requests. Upstream builds that plugin's
/// scorer without the PodLevelResources switch (v1.35 to v1.37), so its score reads the
/// containers alone, each defaulted, while the node's side counts pod-level requests.
pub fn fit_score_requests(
    details: &PodDetails,
) -> Result<super::pod::NonZeroRequests, ReadingError> {
    if !details
        .pod_requests
        .iter()
        .any(|(name, _)| is_pod_level_resource(name))
    {
        return Ok(details.non_zero_requests);
    }
    let mut containers_only = details.clone();
    containers_only.pod_requests = ContainerResources::default();
    non_zero_requests(&containers_only)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Container, Pod};

    fn list(items: &[(&str, &str)]) -> ContainerResources {
        ContainerResources::new(
            items
                .iter()
                .map(|(k, v)| (Str::from(*k), Quantity::parse(v).unwrap()))
                .collect(),
        )
    }

    fn container(cpu: &str, sidecar: bool) -> Container {
        Container {
            name: "c".into(),
            requests: list(&[("cpu", cpu)]),
            ports: vec![],
            restart_always: sidecar,
            image: "".into(),
        }
    }

    #[test]
    fn init_steps_include_earlier_sidecars() {
        let mut pod = Pod::new("ns", "p", "u");
        pod.details_mut().containers = vec![container("100m", false)];
        // sidecar 200m, then an init container of 500m: step = 500 + 200 = 700
        pod.details_mut().init_containers = vec![container("200m", true), container("500m", false)];
        let pod = pod.finish();
        assert_eq!(pod.requests().milli_cpu, 700);
    }

    #[test]
    fn running_sum_wins_over_small_init() {
        let mut pod = Pod::new("ns", "p", "u");
        pod.details_mut().containers = vec![container("300m", false)];
        pod.details_mut().init_containers = vec![container("100m", true), container("150m", false)];
        let pod = pod.finish();
        // running = 300 + 100 = 400; init step = 150 + 100 = 250
        assert_eq!(pod.requests().milli_cpu, 400);
    }

    #[test]
    fn overhead_and_pod_level_requests() {
        let mut pod = Pod::new("ns", "p", "u");
        pod.details_mut().containers = vec![container("300m", false)];
        pod.details_mut().pod_requests = list(&[("cpu", "1")]);
        pod.details_mut().overhead = list(&[("cpu", "50m"), ("memory", "1Ki")]);
        let pod = pod.finish();
        assert_eq!(pod.requests().milli_cpu, 1050);
        assert_eq!(pod.requests().memory, 1024);
    }

    #[test]
    fn fit_scoring_reads_the_containers_not_the_pod_level_requests() {
        // Container: 600m cpu, no memory; pod level: 1920Mi memory.
        let mut pod = Pod::new("ns", "p", "u");
        pod.details_mut().containers = vec![container("600m", false)];
        pod.details_mut().pod_requests = list(&[("memory", "1920Mi")]);
        let mut pod = pod.finish();
        let details = &pod.details;
        assert_eq!(details.non_zero_requests.memory, 1920 << 20);
        assert_eq!(details.fit_score_requests.milli_cpu, 600);
        assert_eq!(
            details.fit_score_requests.memory, DEFAULT_MEMORY_REQUEST,
            "the container's memory, defaulted"
        );
        // Held in the cache, the specs are dropped; the derived requests stay.
        pod.details_mut().drop_specs();
        assert_eq!(
            pod.details.fit_score_requests.memory,
            DEFAULT_MEMORY_REQUEST
        );
    }

    #[test]
    fn with_pod_level_requests_an_overhead_resource_is_not_defaulted() {
        // Pod level: memory only; the overhead names cpu, so upstream's requests name
        // cpu and it gets no 100m default: the overhead's 100m alone.
        let mut pod = Pod::new("ns", "p", "u");
        pod.details_mut().containers = vec![Container::default()];
        pod.details_mut().pod_requests = list(&[("memory", "2816Mi")]);
        pod.details_mut().overhead = list(&[("cpu", "100m")]);
        let pod = pod.finish();
        assert_eq!(pod.details.non_zero_requests.milli_cpu, 100);
        assert_eq!(pod.details.non_zero_requests.memory, 2816 << 20);
    }

    #[test]
    fn scalar_names() {
        assert!(is_scalar_resource("nvidia.com/gpu"));
        assert!(is_scalar_resource("hugepages-2Mi"));
        assert!(!is_scalar_resource("foo"));
        let r = list(&[("example.com/foo", "3"), ("foo", "1")])
            .to_resources()
            .unwrap();
        assert_eq!(r.scalar("example.com/foo"), 3);
        assert_eq!(r.scalars.len(), 1);
    }
}
