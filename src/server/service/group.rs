//! `PreemptGroup`: reads the group and its members through the one builder, calls the
//! core's group preemption, and writes its answer.

use tonic::{Request, Response, Status};

use crate::app::{AppError, GroupSource, ObjectKey, PreemptGroupRequest};
use crate::engine::GroupDecision;
use crate::model::{Pod, decode};

use super::super::convert;
use super::super::errors::ApiError;
use super::super::pb;
use super::changes::decode_document;
use super::{PreemptionService, on_blocking_pool, outcome_label, parses_inline};

impl PreemptionService {
    pub(super) async fn preempt_group_call(
        &self,
        request: Request<pb::PreemptGroupRequest>,
    ) -> Result<Response<pb::PreemptGroupResponse>, Status> {
        let app = &self.app;
        app.check_generic_workload().map_err(ApiError::from)?;
        if !request.get_ref().dry_run {
            super::super::authz::check_commit(request.extensions(), self.authz_enforced)?;
            app.check_committable().map_err(ApiError::from)?;
        }
        app.check_listed().map_err(ApiError::from)?;
        let permit = app
            .decision_permit(AppError::preempt_overloaded)
            .map_err(ApiError::from)?;
        let request = request.into_inner();
        let group = read_group(app, &request).await?;
        let members = read_members(app, &request).await?;
        let decide = PreemptGroupRequest {
            group,
            members,
            dry_run: request.dry_run,
            explain: request.explain,
            pdb_mode: convert::pdb_mode(request.pdb_mode)?,
        };
        let start = std::time::Instant::now();
        let decided = app
            .preempt_group(decide, permit)
            .await
            .map_err(ApiError::from)?;
        let mut response = group_decision(&decided.decision);
        response.epoch = app.epoch.clone();
        response.revision = decided.revision;
        response.nominations_revision = decided.nominations_revision;
        crate::ops::metrics::record_decision(
            outcome_label(response.outcome),
            response.victims.len(),
            start.elapsed(),
        );
        Ok(Response::new(response))
    }
}

/// The group the request names: held (by reference) or sent (admitted).
async fn read_group(
    app: &crate::app::App,
    request: &pb::PreemptGroupRequest,
) -> Result<GroupSource, ApiError> {
    use pb::preempt_group_request::Group;
    let (mut group, class_path) = match &request.group {
        None => {
            return Err(ApiError::invalid(
                "group",
                "one of group_ref, pod_group and pod_group_json is required",
            ));
        }
        Some(Group::GroupRef(r)) => {
            return Ok(GroupSource::Held(ObjectKey {
                namespace: r.namespace.clone(),
                name: r.name.clone(),
                uid: (!r.uid.is_empty()).then(|| r.uid.clone()),
            }));
        }
        Some(Group::PodGroup(typed)) => (
            convert::pod_group("pod_group", typed)?,
            "pod_group.priority_class_name",
        ),
        Some(Group::PodGroupJson(text)) => {
            let text = text.clone();
            let group = if parses_inline(&text) {
                decode_document("pod_group_json", &text, decode::decode_pod_group)?
            } else {
                on_blocking_pool(move || {
                    decode_document("pod_group_json", &text, decode::decode_pod_group)
                })
                .await?
            };
            (group, "pod_group_json: spec.priorityClassName")
        }
    };
    app.admit_group(&mut group, class_path)?;
    Ok(GroupSource::Inline(group))
}

/// The members sent with the request, typed then JSON, each admitted; `None` when none
/// were sent (the held ones are used).
async fn read_members(
    app: &crate::app::App,
    request: &pb::PreemptGroupRequest,
) -> Result<Option<Vec<Pod>>, ApiError> {
    if request.members.is_empty() && request.member_json.is_empty() {
        return Ok(None);
    }
    let mut members = Vec::with_capacity(request.members.len() + request.member_json.len());
    for (i, typed) in request.members.iter().enumerate() {
        let field = format!("members[{i}]");
        let mut pod = convert::pod(&field, typed)?;
        admit(app, &mut pod, &format!("{field}.spec.priorityClassName"))?;
        members.push(pod);
    }
    for (i, text) in request.member_json.iter().enumerate() {
        let field = format!("member_json[{i}]");
        let text = text.clone();
        let mut pod = if parses_inline(&text) {
            decode_document(&field, &text, decode::decode_pod)?
        } else {
            let document = field.clone();
            on_blocking_pool(move || decode_document(&document, &text, decode::decode_pod)).await?
        };
        admit(app, &mut pod, &format!("{field}: spec.priorityClassName"))?;
        members.push(pod);
    }
    Ok(Some(members))
}

fn admit(app: &crate::app::App, pod: &mut Pod, class_path: &str) -> Result<(), ApiError> {
    crate::engine::check_pending(pod)?;
    app.admit(pod, class_path)?;
    Ok(())
}

/// A group decision as the response; `epoch` and the revisions are filled by the caller.
pub(crate) fn group_decision(d: &GroupDecision) -> pb::PreemptGroupResponse {
    pb::PreemptGroupResponse {
        outcome: convert::outcome(d.outcome).into(),
        victims: d.victims.iter().map(convert::pod_ref).collect(),
        pdb_violations: d.pdb_violations,
        nominations: d
            .nominations
            .iter()
            .map(|(pod, node)| pb::GroupNomination {
                pod: Some(convert::pod_ref(pod)),
                node_name: node.to_string(),
            })
            .collect(),
        nominated_pods_to_clear: d
            .nominated_pods_to_clear
            .iter()
            .map(convert::pod_ref)
            .collect(),
        message: d.message.clone(),
        kubernetes_version: d.kubernetes_version.as_str().to_string(),
        pod_group_disruptions: i32::try_from(d.pod_group_disruptions).unwrap_or(i32::MAX),
        notes: d.notes.clone(),
        ..Default::default()
    }
}
