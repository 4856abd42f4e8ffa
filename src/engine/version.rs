//! The Kubernetes version whose kube-scheduler preemptd answers as, and that version's
//! feature gates that change preemption results. A version's rules live next to the rule
//! they change (see [`KubernetesVersion::stops_at_first_violated_budget`]); the gates are
//! data, one table per version, read by one parser with upstream's `--feature-gates`
//! syntax.

use std::fmt;

/// A Kubernetes minor whose kube-scheduler preemptd answers exactly as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KubernetesVersion {
    /// v1.35 (checked against k8s.io/kubernetes v1.35.4).
    V1_35,
    /// v1.36 (checked against v1.36.3).
    V1_36,
    /// v1.37 (checked against v1.37.2), the newest.
    #[default]
    V1_37,
}

impl KubernetesVersion {
    /// Every supported version, oldest first.
    pub const ALL: [KubernetesVersion; 3] = [Self::V1_35, Self::V1_36, Self::V1_37];

    /// `major.minor`, as `--kubernetes-version` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1_35 => "1.35",
            Self::V1_36 => "1.36",
            Self::V1_37 => "1.37",
        }
    }

    /// The minor number.
    pub fn minor(self) -> u32 {
        match self {
            Self::V1_35 => 35,
            Self::V1_36 => 36,
            Self::V1_37 => 37,
        }
    }

    /// The accepted spellings, for error messages: `1.35, 1.36, 1.37`.
    pub fn accepted() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }

    /// PodDisruptionBudget classification of a victim matched by several budgets: from
    /// v1.37 (`FilterVictimsWithPDBViolation`) the walk over its budgets stops at the
    /// first one that goes negative, so later budgets keep their disruption; before,
    /// every matching budget is charged.
    pub fn stops_at_first_violated_budget(self) -> bool {
        self >= Self::V1_37
    }

    /// The feature gates of this version that change preemption results.
    fn gates(self) -> &'static [Gate] {
        match self {
            Self::V1_35 => V1_35_GATES,
            Self::V1_36 => V1_36_GATES,
            Self::V1_37 => V1_37_GATES,
        }
    }
}

impl fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for KubernetesVersion {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|v| v.as_str() == text)
            .ok_or_else(|| {
                format!(
                    "unsupported kubernetes version {text:?}: accepted {}",
                    Self::accepted()
                )
            })
    }
}

/// A feature gate's maturity in one version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Alpha,
    Beta,
    /// GA and locked to its default: it cannot be set to anything else.
    LockedGa,
}

/// One gate of one version's table.
#[derive(Clone, Copy, Debug)]
struct Gate {
    name: &'static str,
    stage: Stage,
    default: bool,
    /// preemptd answers as upstream with the gate at its non-default value too (the gate
    /// changes only actuation, or nothing preemptd models).
    both_values: bool,
}

const fn gate(name: &'static str, stage: Stage, default: bool, both_values: bool) -> Gate {
    Gate {
        name,
        stage,
        default,
        both_values,
    }
}

/// Only when and how victims are evicted: the decision is the same either way.
const ASYNC_PREEMPTION: Gate = gate("SchedulerAsyncPreemption", Stage::Beta, true, true);

// Extended resources handed to DRA when a DeviceClass maps them: preemptd reads no
// DeviceClasses, which is exactly the gate off, or on with no such class.
const V1_35_GATES: &[Gate] = &[
    ASYNC_PREEMPTION,
    gate("GenericWorkload", Stage::Alpha, false, false),
    gate("GangScheduling", Stage::Alpha, false, false),
    gate("DRAExtendedResource", Stage::Alpha, false, true),
];
const V1_36_GATES: &[Gate] = &[
    ASYNC_PREEMPTION,
    gate("GenericWorkload", Stage::Alpha, false, false),
    gate("GangScheduling", Stage::Alpha, false, false),
    gate("WorkloadAwarePreemption", Stage::Alpha, false, false),
    gate("DRAExtendedResource", Stage::Beta, true, true),
];
const V1_37_GATES: &[Gate] = &[
    ASYNC_PREEMPTION,
    // Workload-aware preemption (victim units, PreemptGroup) as v1.37.2 has it.
    gate("GenericWorkload", Stage::Beta, false, true),
    // A group's own preemptionPolicy rules its eligibility instead of its members'.
    gate("PodGroupPreemptionPolicy", Stage::Alpha, false, true),
    gate("CompositePodGroup", Stage::Alpha, false, false),
    gate("DRAExtendedResource", Stage::LockedGa, true, false),
];

/// Gates a newer version folded into another: named in the error for that version.
const FOLDED: &[(&str, KubernetesVersion, &str)] = &[
    (
        "WorkloadAwarePreemption",
        KubernetesVersion::V1_37,
        "GenericWorkload",
    ),
    (
        "GangScheduling",
        KubernetesVersion::V1_37,
        "GenericWorkload",
    ),
];

/// Why a `--feature-gates` value is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// A pair without `=`.
    #[error("malformed pair {0:?}: expected Name=true or Name=false")]
    Malformed(String),
    /// A value that is not a boolean.
    #[error("invalid value {value:?} for feature gate {gate}: expected true or false")]
    BadValue {
        /// The gate.
        gate: String,
        /// What was given.
        value: String,
    },
    /// A name no supported version has among the gates that change preemption.
    #[error(
        "unknown feature gate {gate} for kubernetes {version}: the gates that change preemption there are {known}"
    )]
    Unknown {
        /// The name given.
        gate: String,
        /// The version in force.
        version: KubernetesVersion,
        /// That version's gates.
        known: String,
    },
    /// A gate of other versions only.
    #[error("feature gate {gate} does not exist in kubernetes {version}{hint}")]
    NotInVersion {
        /// The gate.
        gate: String,
        /// The version in force.
        version: KubernetesVersion,
        /// Where it went, or which versions have it.
        hint: String,
    },
    /// A GA gate set away from the value it is locked to.
    #[error(
        "feature gate {gate} is GA and locked to {locked} in kubernetes {version}: it cannot be set to {value}"
    )]
    Locked {
        /// The gate.
        gate: String,
        /// The version in force.
        version: KubernetesVersion,
        /// Its locked value.
        locked: bool,
        /// What was asked.
        value: bool,
    },
    /// A value whose preemption preemptd does not implement yet.
    #[error(
        "feature gate {gate}={value} is not supported yet: preemptd answers as kubernetes {version} with {gate}={default} only"
    )]
    NotSupported {
        /// The gate.
        gate: String,
        /// What was asked.
        value: bool,
        /// The version in force.
        version: KubernetesVersion,
        /// The value preemptd implements.
        default: bool,
    },
}

/// The values of one version's gates that change preemption results: its defaults with
/// what `--feature-gates` set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureGates {
    version: KubernetesVersion,
    /// `values[i]` is the value of `version.gates()[i]`.
    values: Vec<bool>,
}

impl Default for FeatureGates {
    fn default() -> Self {
        Self::defaults(KubernetesVersion::default())
    }
}

impl FeatureGates {
    /// `version`'s gates at their defaults, as that kube-scheduler has them.
    pub fn defaults(version: KubernetesVersion) -> Self {
        FeatureGates {
            version,
            values: version.gates().iter().map(|g| g.default).collect(),
        }
    }

    /// Parses upstream's syntax, `Name=true,Other=false` (whitespace around names and
    /// values ignored, empty pairs skipped, values as Go's `strconv.ParseBool`; a later
    /// pair wins), over `version`'s defaults.
    pub fn parse(version: KubernetesVersion, text: &str) -> Result<Self, GateError> {
        let mut gates = Self::defaults(version);
        for pair in text.split(',').filter(|pair| !pair.is_empty()) {
            let Some((name, value)) = pair.split_once('=') else {
                return Err(GateError::Malformed(pair.to_string()));
            };
            let (name, value) = (name.trim(), value.trim());
            let value = parse_bool(value).ok_or_else(|| GateError::BadValue {
                gate: name.to_string(),
                value: value.to_string(),
            })?;
            gates.set(name, value)?;
        }
        Ok(gates)
    }

    fn set(&mut self, name: &str, value: bool) -> Result<(), GateError> {
        let version = self.version;
        let Some(index) = version.gates().iter().position(|g| g.name == name) else {
            return Err(missing(version, name));
        };
        let gate = version.gates()[index];
        if value != gate.default {
            if gate.stage == Stage::LockedGa {
                return Err(GateError::Locked {
                    gate: name.to_string(),
                    version,
                    locked: gate.default,
                    value,
                });
            }
            if !gate.both_values {
                return Err(GateError::NotSupported {
                    gate: name.to_string(),
                    value,
                    version,
                    default: gate.default,
                });
            }
        }
        self.values[index] = value;
        Ok(())
    }

    /// The version these gates belong to.
    pub fn version(&self) -> KubernetesVersion {
        self.version
    }

    /// GenericWorkload is on: pods of a PodGroup are preempted as units (v1.37 only; the
    /// earlier versions refuse the gate).
    pub fn generic_workload(&self) -> bool {
        self.enabled("GenericWorkload") == Some(true)
    }

    /// PodGroupPreemptionPolicy is on: a PodGroup's own `preemptionPolicy` decides.
    pub fn pod_group_preemption_policy(&self) -> bool {
        self.enabled("PodGroupPreemptionPolicy") == Some(true)
    }

    /// Whether `name` is on; `None` when the version has no such gate.
    pub fn enabled(&self, name: &str) -> Option<bool> {
        let index = self.version.gates().iter().position(|g| g.name == name)?;
        Some(self.values[index])
    }
}

/// `Name=value,...` of every gate, in the table's order.
impl fmt::Display for FeatureGates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (gate, value)) in self.version.gates().iter().zip(&self.values).enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}={value}", gate.name)?;
        }
        Ok(())
    }
}

/// The error for a name `version` lacks: a gate of other versions, or unknown.
fn missing(version: KubernetesVersion, name: &str) -> GateError {
    if let Some((_, _, into)) = FOLDED
        .iter()
        .find(|(gate, since, _)| *gate == name && version >= *since)
    {
        return GateError::NotInVersion {
            gate: name.to_string(),
            version,
            hint: format!(": it is folded into {into}"),
        };
    }
    let elsewhere: Vec<&str> = KubernetesVersion::ALL
        .into_iter()
        .filter(|v| v.gates().iter().any(|g| g.name == name))
        .map(KubernetesVersion::as_str)
        .collect();
    if elsewhere.is_empty() {
        GateError::Unknown {
            gate: name.to_string(),
            version,
            known: version
                .gates()
                .iter()
                .map(|g| g.name)
                .collect::<Vec<_>>()
                .join(", "),
        }
    } else {
        GateError::NotInVersion {
            gate: name.to_string(),
            version,
            hint: format!(" (it exists in {})", elsewhere.join(", ")),
        }
    }
}

/// Go's `strconv.ParseBool`, which upstream's flag parsing uses.
fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::KubernetesVersion::{V1_35, V1_36, V1_37};
    use super::*;

    #[test]
    fn versions_parse_only_as_accepted_and_default_to_the_newest() {
        assert_eq!("1.36".parse::<KubernetesVersion>(), Ok(V1_36));
        for bad in ["1.34", "1.38", "v1.37", "1.37.2", "", "latest"] {
            let error = bad.parse::<KubernetesVersion>().expect_err(bad);
            assert!(error.contains("1.35, 1.36, 1.37"), "{error}");
        }
        assert_eq!(KubernetesVersion::default(), V1_37);
        assert_eq!(KubernetesVersion::ALL.last(), Some(&V1_37));
    }

    #[test]
    fn defaults_are_each_kube_scheduler_s() {
        assert_eq!(
            FeatureGates::defaults(V1_35).to_string(),
            "SchedulerAsyncPreemption=true,GenericWorkload=false,GangScheduling=false,DRAExtendedResource=false"
        );
        let v136 = FeatureGates::defaults(V1_36);
        assert_eq!(v136.enabled("DRAExtendedResource"), Some(true));
        assert_eq!(v136.enabled("WorkloadAwarePreemption"), Some(false));
        let v137 = FeatureGates::defaults(V1_37);
        assert_eq!(v137.enabled("WorkloadAwarePreemption"), None);
        assert_eq!(v137.enabled("CompositePodGroup"), Some(false));
        assert_eq!(FeatureGates::parse(V1_37, ""), Ok(v137));
    }

    #[test]
    fn the_syntax_is_upstream_s() {
        let gates = FeatureGates::parse(
            V1_36,
            " SchedulerAsyncPreemption = false ,,DRAExtendedResource=F,DRAExtendedResource=1",
        )
        .expect("parses");
        assert_eq!(gates.enabled("SchedulerAsyncPreemption"), Some(false));
        assert_eq!(gates.enabled("DRAExtendedResource"), Some(true));
        assert_eq!(
            FeatureGates::parse(V1_37, "GenericWorkload"),
            Err(GateError::Malformed("GenericWorkload".into()))
        );
        let error = FeatureGates::parse(V1_37, "GenericWorkload=yes").expect_err("bad value");
        assert!(matches!(error, GateError::BadValue { .. }), "{error}");
        assert!(error.to_string().contains("GenericWorkload"), "{error}");
    }

    #[test]
    fn unknown_missing_and_locked_gates_are_named_with_the_version() {
        let unknown = FeatureGates::parse(V1_35, "NoSuchGate=true").expect_err("unknown");
        assert!(matches!(unknown, GateError::Unknown { .. }));
        let text = unknown.to_string();
        assert!(
            text.contains("NoSuchGate") && text.contains("1.35"),
            "{text}"
        );

        let newer = FeatureGates::parse(V1_35, "WorkloadAwarePreemption=false").expect_err("1.36");
        assert!(matches!(newer, GateError::NotInVersion { .. }));
        assert!(newer.to_string().contains("exists in 1.36"), "{newer}");

        let folded = FeatureGates::parse(V1_37, "WorkloadAwarePreemption=false").expect_err("gone");
        assert!(
            folded.to_string().contains("folded into GenericWorkload")
                && folded.to_string().contains("1.37"),
            "{folded}"
        );

        let locked = FeatureGates::parse(V1_37, "DRAExtendedResource=false").expect_err("locked");
        assert!(matches!(locked, GateError::Locked { .. }), "{locked}");
        assert!(
            FeatureGates::parse(V1_37, "DRAExtendedResource=true").is_ok(),
            "the locked value itself is accepted"
        );
    }

    #[test]
    fn generic_workload_is_accepted_on_1_37_only() {
        let gates = FeatureGates::parse(V1_37, "GenericWorkload=true").expect("1.37 takes it");
        assert!(gates.generic_workload());
        assert!(!gates.pod_group_preemption_policy());
        assert!(!FeatureGates::defaults(V1_37).generic_workload());
        let both = FeatureGates::parse(V1_37, "GenericWorkload=true,PodGroupPreemptionPolicy=true")
            .expect("1.37 takes both");
        assert!(both.pod_group_preemption_policy());
    }

    #[test]
    fn values_preemptd_does_not_implement_yet_are_refused_not_ignored() {
        for (version, gate) in [
            (V1_35, "GenericWorkload"),
            (V1_35, "GangScheduling"),
            (V1_36, "WorkloadAwarePreemption"),
            (V1_37, "CompositePodGroup"),
        ] {
            let error = FeatureGates::parse(version, &format!("{gate}=true")).expect_err(gate);
            let text = error.to_string();
            assert!(
                text.contains("not supported yet") && text.contains(gate),
                "{text}"
            );
            // Its default is fine.
            assert!(FeatureGates::parse(version, &format!("{gate}=false")).is_ok());
        }
    }
}
