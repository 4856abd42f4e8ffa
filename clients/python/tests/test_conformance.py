"""Every conformance scenario through the client: the cluster bulk-loaded with Sync, the
preemptor decided with a dry-run Preempt, once as Kubernetes JSON and once as typed
messages converted by preemptd.kube, the answer compared with the scenario's `expect`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc
import pytest
from conftest import SCENARIOS

from preemptd import Client, pb, pod_from_kube
from preemptd.kube import list_items

FILES = sorted(SCENARIOS.glob("**/*.json"))
OUTCOMES = {
    pb.OUTCOME_PREEMPT: "PREEMPT",
    pb.OUTCOME_FITS: "FITS",
    pb.OUTCOME_NOT_ELIGIBLE: "NOT_ELIGIBLE",
    pb.OUTCOME_NO_CANDIDATE: "NO_CANDIDATE",
}


def test_scenarios_are_found() -> None:
    assert FILES, f"no scenarios under {SCENARIOS}"


def mismatch(answer: pb.PreemptResponse, expect: dict[str, Any]) -> str | None:
    got = OUTCOMES.get(answer.outcome, str(answer.outcome))
    if got != expect["outcome"]:
        return f"outcome {got} != {expect['outcome']}: {answer.message}"
    if got == "PREEMPT":
        node = answer.nominated_node_name
        victims = sorted(f"{v.namespace}/{v.name}" for v in answer.victims)
        cleared = sorted(f"{v.namespace}/{v.name}" for v in answer.nominated_pods_to_clear)
        if node not in expect["nominatedNodeNameAnyOf"]:
            return f"node {node} not in {expect['nominatedNodeNameAnyOf']}"
        if victims != sorted(expect["victimsByNode"].get(node, [])):
            return f"victims {victims} != {expect['victimsByNode'].get(node)}"
        if cleared != sorted(expect["nominatedPodsToClearByNode"].get(node, [])):
            return f"cleared {cleared} != {expect['nominatedPodsToClearByNode'].get(node)}"
    if got == "FITS" and "feasibleNodes" in expect:
        if sorted(answer.feasible_nodes) != sorted(expect["feasibleNodes"]):
            return f"feasible {sorted(answer.feasible_nodes)} != {expect['feasibleNodes']}"
    return None


def delete_all(client: Client, items: list[tuple[str, dict[str, Any]]]) -> None:
    # Pods first so nodes and budgets leave an empty cache behind. Succeeded and Failed
    # pods were never cached: NOT_FOUND.
    for kind, obj in sorted(items, key=lambda item: item[0] != "Pod"):
        meta = obj.get("metadata", {})
        try:
            if kind == "Pod":
                client.delete_pod(meta.get("namespace", ""), meta["name"])
            elif kind == "Node":
                client.delete_node(meta["name"])
            else:
                client.delete_pdb(meta.get("namespace", ""), meta["name"])
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.NOT_FOUND:
                raise


@pytest.mark.parametrize("mode", ["json", "typed"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(Path(p).relative_to(SCENARIOS)))
def test_scenario(client: Client, path: Path, mode: str) -> None:
    scenario = json.loads(path.read_text())
    items = list_items(scenario["cluster"])
    synced = client.sync_list(scenario["cluster"], typed=mode == "typed")
    try:
        assert synced.rejected == 0, list(synced.rejections)
        applied = synced.applied.nodes + synced.applied.pods + synced.applied.pdbs
        assert applied == len(items)
        preemptor = scenario["preemptor"]
        pod = pod_from_kube(preemptor) if mode == "typed" else preemptor
        answer = client.preempt(pod, dry_run=True, timeout=30)
        assert answer.epoch == synced.epoch
        problem = mismatch(answer, scenario["expect"])
        assert problem is None, problem
    finally:
        delete_all(client, items)
