//! The policy file (YAML, or JSON): read with serde, then every value checked, so a bad
//! file is refused at start with the field it got wrong (`capacityLabels[1].key: ...`).
//! A list the file leaves out keeps its defaults; a list it gives replaces them.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{
    CapacityLabel, CriticalPods, NoticeCondition, NoticeLabel, NoticeTaint, PdbMode, Policy,
    default_capacity_labels, default_notice_conditions, default_notice_taints,
};
use crate::model::build::{is_label_value, is_qualified_name};
use crate::model::{LabelSelector, Labels, Operator, Requirement, Str, TaintEffect};

/// A policy file refused: the field (as the file spells it, empty for the whole file) and
/// why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if field.is_empty() { String::new() } else { format!("{field}: ") })]
pub struct PolicyError {
    /// Where in the policy the problem is; empty for the whole file.
    pub field: String,
    /// What is wrong there.
    pub message: String,
}

impl PolicyError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        PolicyError {
            field: field.into(),
            message: message.into(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PolicyFile {
    capacity_labels: Option<Vec<CapacityLabelFile>>,
    termination_notice: Option<NoticeFile>,
    critical_pods: Option<CriticalFile>,
    pdb_mode: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CapacityLabelFile {
    key: String,
    spot: String,
    on_demand: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoticeFile {
    taints: Option<Vec<TaintFile>>,
    labels: Option<Vec<LabelFile>>,
    annotations: Option<Vec<LabelFile>>,
    conditions: Option<Vec<ConditionFile>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ConditionFile {
    #[serde(rename = "type")]
    kind: String,
    status: String,
    message_contains: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaintFile {
    key: String,
    value: Option<String>,
    effect: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelFile {
    key: String,
    value: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CriticalFile {
    priority_at_least: Option<i32>,
    selector: Option<SelectorFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SelectorFile {
    #[serde(default)]
    match_labels: BTreeMap<String, String>,
    #[serde(default)]
    match_expressions: Vec<RequirementFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequirementFile {
    key: String,
    operator: String,
    #[serde(default)]
    values: Vec<String>,
}

impl Policy {
    /// Reads and checks the policy file at `path`.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| PolicyError::new("", format!("cannot read: {error}")))?;
        Policy::from_yaml(&text)
    }

    /// Reads and checks a policy (YAML, or JSON).
    pub fn from_yaml(text: &str) -> Result<Policy, PolicyError> {
        // serde_yaml_ng's errors name the field themselves (`capacityLabels[0]: missing
        // field ...`), with the line and column.
        let file: Option<PolicyFile> = serde_yaml_ng::from_str(text)
            .map_err(|error| PolicyError::new("", error.to_string()))?;
        // An empty file is the default policy.
        file.map_or_else(|| Ok(Policy::default()), PolicyFile::check)
    }
}

impl PolicyFile {
    fn check(self) -> Result<Policy, PolicyError> {
        let capacity_labels = match self.capacity_labels {
            None => default_capacity_labels(),
            Some(list) => list
                .into_iter()
                .enumerate()
                .map(|(i, label)| label.check(&format!("capacityLabels[{i}]")))
                .collect::<Result<_, _>>()?,
        };
        let notice = self.termination_notice.unwrap_or(NoticeFile {
            taints: None,
            labels: None,
            annotations: None,
            conditions: None,
        });
        let notice_taints = match notice.taints {
            None => default_notice_taints(),
            Some(list) => list
                .into_iter()
                .enumerate()
                .map(|(i, taint)| taint.check(&format!("terminationNotice.taints[{i}]")))
                .collect::<Result<_, _>>()?,
        };
        let notice_labels = notice
            .labels
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, label)| label.check(&format!("terminationNotice.labels[{i}]")))
            .collect::<Result<_, _>>()?;
        let notice_annotations = notice
            .annotations
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, annotation)| {
                annotation.check_annotation(&format!("terminationNotice.annotations[{i}]"))
            })
            .collect::<Result<_, _>>()?;
        let notice_conditions = match notice.conditions {
            None => default_notice_conditions(),
            Some(list) => list
                .into_iter()
                .enumerate()
                .map(|(i, c)| c.check(&format!("terminationNotice.conditions[{i}]")))
                .collect::<Result<_, _>>()?,
        };
        let critical = match self.critical_pods {
            None => CriticalPods::default(),
            Some(critical) => critical.check("criticalPods")?,
        };
        let pdb_mode = match self.pdb_mode.as_deref() {
            None => PdbMode::Prefer,
            Some(text) => PdbMode::parse(text).ok_or_else(|| {
                PolicyError::new(
                    "pdbMode",
                    format!("unsupported value {text:?}: supported values: \"prefer\", \"strict\""),
                )
            })?,
        };
        Ok(Policy {
            capacity_labels,
            notice_taints,
            notice_labels,
            notice_annotations,
            notice_conditions,
            critical,
            pdb_mode,
        })
    }
}

fn label_key(field: &str, key: &str) -> Result<Str, PolicyError> {
    if is_qualified_name(key) {
        Ok(key.into())
    } else {
        Err(PolicyError::new(
            format!("{field}.key"),
            format!("{key:?} is not a valid label key"),
        ))
    }
}

fn label_value(field: String, value: &str) -> Result<Str, PolicyError> {
    if is_label_value(value) {
        Ok(value.into())
    } else {
        Err(PolicyError::new(
            field,
            format!("{value:?} is not a valid label value"),
        ))
    }
}

impl CapacityLabelFile {
    fn check(self, field: &str) -> Result<CapacityLabel, PolicyError> {
        let key = label_key(field, &self.key)?;
        let spot = label_value(format!("{field}.spot"), &self.spot)?;
        let on_demand = self
            .on_demand
            .map(|v| label_value(format!("{field}.onDemand"), &v))
            .transpose()?;
        if on_demand.as_ref() == Some(&spot) {
            return Err(PolicyError::new(
                format!("{field}.onDemand"),
                "must differ from spot",
            ));
        }
        Ok(CapacityLabel {
            key,
            spot,
            on_demand,
        })
    }
}

impl TaintFile {
    fn check(self, field: &str) -> Result<NoticeTaint, PolicyError> {
        let effect = match self.effect.as_deref() {
            None => None,
            Some(text) => Some(TaintEffect::parse(text).ok_or_else(|| {
                PolicyError::new(
                    format!("{field}.effect"),
                    format!(
                        "unsupported value {text:?}: supported values: \"NoSchedule\", \
                         \"PreferNoSchedule\", \"NoExecute\""
                    ),
                )
            })?),
        };
        Ok(NoticeTaint {
            key: label_key(field, &self.key)?,
            value: self.value.map(Str::from),
            effect,
        })
    }
}

impl LabelFile {
    fn check(self, field: &str) -> Result<NoticeLabel, PolicyError> {
        Ok(NoticeLabel {
            key: label_key(field, &self.key)?,
            value: self
                .value
                .map(|v| label_value(format!("{field}.value"), &v))
                .transpose()?,
        })
    }
}

impl LabelFile {
    /// As an annotation: any value (annotation values are free text).
    fn check_annotation(self, field: &str) -> Result<NoticeLabel, PolicyError> {
        Ok(NoticeLabel {
            key: label_key(field, &self.key)?,
            value: self.value.map(Str::from),
        })
    }
}

impl ConditionFile {
    fn check(self, field: &str) -> Result<NoticeCondition, PolicyError> {
        if self.kind.is_empty() {
            return Err(PolicyError::new(
                format!("{field}.type"),
                "must not be empty",
            ));
        }
        if !matches!(self.status.as_str(), "True" | "False" | "Unknown") {
            return Err(PolicyError::new(
                format!("{field}.status"),
                format!(
                    "unsupported value {:?}: supported values: \"True\", \"False\", \"Unknown\"",
                    self.status
                ),
            ));
        }
        Ok(NoticeCondition {
            kind: self.kind.into(),
            status: self.status.into(),
            message_contains: self.message_contains.map(Str::from),
        })
    }
}

impl CriticalFile {
    fn check(self, field: &str) -> Result<CriticalPods, PolicyError> {
        if self.priority_at_least.is_none() && self.selector.is_none() {
            return Err(PolicyError::new(
                field,
                "needs priorityAtLeast, selector or both",
            ));
        }
        let selector = self
            .selector
            .map(|s| s.check(&format!("{field}.selector")))
            .transpose()?;
        Ok(CriticalPods {
            priority_at_least: self.priority_at_least,
            selector,
        })
    }
}

impl SelectorFile {
    fn check(self, field: &str) -> Result<LabelSelector, PolicyError> {
        if self.match_labels.is_empty() && self.match_expressions.is_empty() {
            // `{}` would make every pod critical: surely a mistake.
            return Err(PolicyError::new(
                field,
                "must have matchLabels or matchExpressions",
            ));
        }
        let mut pairs = Vec::with_capacity(self.match_labels.len());
        for (key, value) in &self.match_labels {
            let entry = format!("{field}.matchLabels.{key}");
            if !is_qualified_name(key) {
                return Err(PolicyError::new(
                    entry,
                    format!("{key:?} is not a valid label key"),
                ));
            }
            label_value(entry, value)?;
            pairs.push((key.as_str(), value.as_str()));
        }
        let match_expressions = self
            .match_expressions
            .into_iter()
            .enumerate()
            .map(|(i, r)| r.check(&format!("{field}.matchExpressions[{i}]")))
            .collect::<Result<_, _>>()?;
        Ok(LabelSelector {
            match_labels: pairs.into_iter().collect::<Labels>(),
            match_expressions,
        })
    }
}

impl RequirementFile {
    fn check(self, field: &str) -> Result<Requirement, PolicyError> {
        let key = label_key(field, &self.key)?;
        let operator = Operator::parse(&self.operator).ok_or_else(|| {
            PolicyError::new(
                format!("{field}.operator"),
                format!(
                    "unsupported value {:?}: supported values: \"In\", \"NotIn\", \"Exists\", \
                     \"DoesNotExist\"",
                    self.operator
                ),
            )
        })?;
        let needs_values = matches!(operator, Operator::In | Operator::NotIn);
        if needs_values == self.values.is_empty() {
            let message = if needs_values {
                "must be specified when operator is In or NotIn"
            } else {
                "may not be specified when operator is Exists or DoesNotExist"
            };
            return Err(PolicyError::new(format!("{field}.values"), message));
        }
        let values = self
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| label_value(format!("{field}.values[{i}]"), v))
            .collect::<Result<_, _>>()?;
        Ok(Requirement {
            key,
            operator,
            values,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> String {
        Policy::from_yaml(text).expect_err(text).to_string()
    }

    #[test]
    fn an_empty_file_or_mapping_is_the_default_policy() {
        assert_eq!(Policy::from_yaml(""), Ok(Policy::default()));
        assert_eq!(Policy::from_yaml("{}"), Ok(Policy::default()));
        assert_eq!(Policy::from_yaml("# nothing\n"), Ok(Policy::default()));
    }

    #[test]
    fn a_full_file_is_read_and_its_lists_replace_the_defaults() {
        let policy = Policy::from_yaml(
            r#"
capacityLabels:
  - key: example.com/lifecycle
    spot: preemptible
    onDemand: regular
terminationNotice:
  taints:
    - key: example.com/reclaim
      value: "now"
      effect: NoExecute
  labels:
    - key: example.com/draining
criticalPods:
  priorityAtLeast: 1000000
  selector:
    matchLabels: {tier: critical}
    matchExpressions:
      - {key: app, operator: In, values: [db, queue]}
pdbMode: strict
"#,
        )
        .expect("valid policy");
        assert_eq!(
            policy.capacity_labels,
            [CapacityLabel {
                key: "example.com/lifecycle".into(),
                spot: "preemptible".into(),
                on_demand: Some("regular".into()),
            }]
        );
        assert_eq!(
            policy.notice_taints,
            [NoticeTaint {
                key: "example.com/reclaim".into(),
                value: Some("now".into()),
                effect: Some(TaintEffect::NoExecute),
            }]
        );
        assert_eq!(
            policy.notice_labels,
            [NoticeLabel {
                key: "example.com/draining".into(),
                value: None,
            }]
        );
        assert_eq!(policy.critical.priority_at_least, Some(1_000_000));
        let selector = policy.critical.selector.expect("selector");
        assert_eq!(
            selector.match_labels.get("tier").map(|v| &**v),
            Some("critical")
        );
        assert_eq!(selector.match_expressions.len(), 1);
        assert_eq!(policy.pdb_mode, PdbMode::Strict);
    }

    #[test]
    fn lists_left_out_keep_their_defaults() {
        let policy = Policy::from_yaml("pdbMode: prefer\ncriticalPods: {priorityAtLeast: 5}\n")
            .expect("valid");
        assert_eq!(policy.capacity_labels, default_capacity_labels());
        assert_eq!(policy.notice_taints, default_notice_taints());
        assert!(policy.notice_labels.is_empty());
        let policy = Policy::from_yaml("terminationNotice: {labels: [{key: a}]}\n").expect("valid");
        assert_eq!(policy.notice_taints, default_notice_taints());
        let policy = Policy::from_yaml("terminationNotice: {taints: []}\n").expect("valid");
        assert!(policy.notice_taints.is_empty());
        assert_eq!(policy.notice_conditions, default_notice_conditions());
        let policy = Policy::from_yaml(
            "terminationNotice:\n  annotations: [{key: example.com/reclaim, value: 'at 05:00'}]\n  \
             conditions: [{type: Reclaiming, status: 'True'}]\n",
        )
        .expect("valid");
        assert_eq!(
            policy.notice_annotations,
            [NoticeLabel {
                key: "example.com/reclaim".into(),
                value: Some("at 05:00".into()),
            }]
        );
        assert_eq!(
            policy.notice_conditions,
            [NoticeCondition {
                kind: "Reclaiming".into(),
                status: "True".into(),
                message_contains: None,
            }]
        );
    }

    #[test]
    fn errors_name_the_field() {
        let mut wrong = Vec::new();
        for (text, expected) in [
            ("pdbMode: lenient", "pdbMode: unsupported value \"lenient\""),
            ("pdbMode: [strict]", "pdbMode: invalid type"),
            ("capacityLabel: []", "unknown field `capacityLabel`"),
            (
                "capacityLabels: [{key: a, spot: s}, {key: 'bad key', spot: s}]",
                "capacityLabels[1].key: \"bad key\" is not a valid label key",
            ),
            (
                "capacityLabels: [{key: a}]",
                "capacityLabels[0]: missing field `spot`",
            ),
            (
                "capacityLabels: [{key: a, spot: s, onDemand: s}]",
                "capacityLabels[0].onDemand: must differ from spot",
            ),
            (
                "capacityLabels: [{key: a, spot: 'not valid!'}]",
                "capacityLabels[0].spot: \"not valid!\" is not a valid label value",
            ),
            (
                "capacityLabels: [{key: a, spot: s, ondemand: o}]",
                "capacityLabels[0]: unknown field `ondemand`",
            ),
            (
                "terminationNotice: {taints: [{key: a, effect: Sometimes}]}",
                "terminationNotice.taints[0].effect: unsupported value \"Sometimes\"",
            ),
            (
                "terminationNotice: {labels: [{value: x}]}",
                "terminationNotice.labels[0]: missing field `key`",
            ),
            (
                "terminationNotice: {annotations: [{key: 'not a key'}]}",
                "terminationNotice.annotations[0].key: \"not a key\" is not a valid label key",
            ),
            (
                "terminationNotice: {conditions: [{type: Ready, status: false}]}",
                "terminationNotice.conditions[0].status: unsupported value \"false\"",
            ),
            (
                "terminationNotice: {conditions: [{type: '', status: 'True'}]}",
                "terminationNotice.conditions[0].type: must not be empty",
            ),
            (
                "terminationNotice: {conditions: [{type: Ready}]}",
                "terminationNotice.conditions[0]: missing field `status`",
            ),
            (
                "criticalPods: {priorityAtLeast: high}",
                "criticalPods.priorityAtLeast: invalid type",
            ),
            (
                "criticalPods: {priorityAtLeast: 9999999999}",
                "criticalPods.priorityAtLeast: invalid value",
            ),
            (
                "criticalPods: {}",
                "criticalPods: needs priorityAtLeast, selector or both",
            ),
            (
                "criticalPods: {selector: {}}",
                "criticalPods.selector: must have matchLabels or matchExpressions",
            ),
            (
                "criticalPods: {selector: {matchExpressions: [{key: a, operator: Has}]}}",
                "criticalPods.selector.matchExpressions[0].operator: unsupported value \"Has\"",
            ),
            (
                "criticalPods: {selector: {matchExpressions: [{key: a, operator: In}]}}",
                "criticalPods.selector.matchExpressions[0].values: must be specified",
            ),
            (
                "criticalPods: {selector: {matchLabels: {'a b': c}}}",
                "criticalPods.selector.matchLabels.a b: \"a b\" is not a valid label key",
            ),
            ("[1, 2]", "invalid type: sequence"),
        ] {
            let error = refused(text);
            if !error.starts_with(expected) {
                wrong.push(format!("{text}\n  gave: {error}\n  want: {expected}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// The deployed example spells out the defaults, plus a critical priority.
    #[test]
    fn the_example_in_deploy_is_the_default_policy_with_critical_pods() {
        let example = include_str!("../../../deploy/overlays/policy/policy.yaml");
        let policy = Policy::from_yaml(example).expect("the example is valid");
        assert_eq!(
            policy,
            Policy {
                critical: CriticalPods {
                    priority_at_least: Some(1_000_000),
                    selector: None,
                },
                ..Policy::default()
            }
        );
    }

    #[test]
    fn an_unreadable_file_says_so() {
        let error = Policy::load(Path::new("/nonexistent/policy.yaml")).unwrap_err();
        assert!(error.to_string().starts_with("cannot read: "), "{error}");
    }
}
