//! Workload-aware scheduling objects (scheduling.k8s.io/v1beta1 as v1.37 serves them): the
//! PodGroup a gang of pods schedules and is preempted as, and the Workload that templates it.

use super::priority::{PriorityClasses, PriorityRequest, UnknownPriorityClass};
use super::{PreemptionPolicy, Str};

/// How a group is preempted (`spec.disruptionMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DisruptionMode {
    /// `{single: {}}` (also when unset): each member is its own victim, ranked as a group's.
    #[default]
    Single,
    /// `{all: {}}`: the whole group is one victim, on every node its pods run on.
    All,
}

impl DisruptionMode {
    /// The mode's key in the API's one-of.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Single => "single",
            Self::All => "all",
        }
    }
}

/// `spec.schedulingPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchedulingPolicy {
    /// `{basic: {}}`: members schedule one by one.
    Basic,
    /// `{gang: {minCount}}`: at least `min_count` members schedule together or none does.
    Gang {
        /// `gang.minCount`.
        min_count: i32,
    },
}

/// A PodGroup: the runtime unit of workload-aware scheduling. Its members are the pods in
/// its namespace whose `spec.schedulingGroup.podGroupName` names it.
#[derive(Clone, Debug, PartialEq)]
pub struct PodGroup {
    /// `metadata.namespace`.
    pub namespace: Str,
    /// `metadata.name`.
    pub name: Str,
    /// `metadata.uid`.
    pub uid: Str,
    /// The API server's resourceVersion, as a number.
    pub resource_version: u64,
    /// `metadata.creationTimestamp` in Unix nanoseconds, if set.
    pub creation_time: Option<i64>,
    /// `spec.schedulingPolicy`.
    pub policy: SchedulingPolicy,
    /// `spec.disruptionMode`.
    pub disruption_mode: DisruptionMode,
    /// `spec.priorityClassName`: read only while `priority_unset`.
    pub priority_class_name: Option<Str>,
    /// `spec.priority`; when unset, the value admission gives it from its class (see
    /// [`PodGroup::admit`]), 0 until then.
    pub priority: i32,
    /// `spec.priority` was unset in the input: the priority is its class's, and follows
    /// the classes as they change (a group made from a manifest, never admitted).
    pub priority_unset: bool,
    /// `spec.preemptionPolicy`; `None` when unset.
    pub preemption_policy: Option<PreemptionPolicy>,
    /// `spec.parentCompositePodGroupName` (CompositePodGroup, alpha: kept, not evaluated).
    pub parent: Option<Str>,
    /// `spec.workloadRef`: (workloadName, templateName).
    pub workload: Option<(Str, Str)>,
}

impl PodGroup {
    /// Gives a group whose `spec.priority` was unset the priority the Priority admission
    /// plugin sets: its class's value, else the global default's, else 0 (the one
    /// resolver pods use). Again after the classes change, as it reads them anew. The
    /// preemption policy is left as given: admission sets it from the class only under
    /// the PodGroupPreemptionPolicy gate. A group naming a class that does not exist is
    /// left unchanged.
    pub fn admit(&mut self, classes: &PriorityClasses) -> Result<(), UnknownPriorityClass> {
        if !self.priority_unset {
            return Ok(());
        }
        let request = PriorityRequest {
            priority: None,
            class_name: self.priority_class_name.as_deref().unwrap_or(""),
            preemption_policy: None,
        };
        self.priority = classes.resolve(request)?.0;
        Ok(())
    }
}

/// A Workload: a static template of pod groups. Kept so every input takes it; scheduling
/// reads the PodGroups made from it.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// `metadata.namespace`.
    pub namespace: Str,
    /// `metadata.name`.
    pub name: Str,
    /// `metadata.uid`.
    pub uid: Str,
    /// The API server's resourceVersion, as a number.
    pub resource_version: u64,
    /// The names of `spec.podGroupTemplates`.
    pub pod_group_templates: Vec<Str>,
}
