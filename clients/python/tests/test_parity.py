"""One test per row of the client parity table (docs/clients.md) that test_client.py and
test_conformance.py do not cover already: Preempt by pod_ref, pdb_mode, PlanDrain, the
public stub, TLS with bearer tokens, and the converters refusing the shared bad inputs
(clients/testdata/bad-objects.json) at their field path."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import grpc
import pytest
from conftest import REPO
from google.protobuf import json_format

from preemptd import Client, ConversionError, from_kube, pb, workload_from_kube

TESTDATA = REPO / "clients" / "testdata"


def node(name: str, cpu: str) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "pods": "10"}}}


def pod(name: str, cpu: str, *, priority: int = 0, node_name: str = "", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"namespace": "parity", "name": name, "uid": f"uid-{name}", "labels": labels or {}},
        "spec": {"nodeName": node_name, "priority": priority,
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        "status": {"phase": "Running" if node_name else "Pending"},
    }


PDB = {"kind": "PodDisruptionBudget", "metadata": {"namespace": "parity", "name": "keep-victim"},
       "spec": {"selector": {"matchLabels": {"app": "victim"}}}, "status": {"disruptionsAllowed": 0}}


@pytest.fixture
def parity_client(server_factory: Any) -> Any:
    server = server_factory().start()
    with Client(server.address) as client:
        client.sync([node("node-a", "1"), pod("victim", "1", node_name="node-a", labels={"app": "victim"}), PDB])
        yield client


def test_preempt_by_pod_ref_decides_on_the_cached_pod(parity_client: Client) -> None:
    parity_client.upsert_json(pod("urgent", "1", priority=100))
    answer = parity_client.preempt(pb.PodRef(namespace="parity", name="urgent"), dry_run=True)
    assert answer.outcome == pb.OUTCOME_PREEMPT
    assert [v.name for v in answer.victims] == ["victim"]
    with pytest.raises(grpc.RpcError) as error:
        parity_client.preempt(pb.PodRef(namespace="parity", name="absent"), dry_run=True)
    assert error.value.code() == grpc.StatusCode.NOT_FOUND


def test_pdb_mode_strict_refuses_a_node_whose_victim_a_budget_protects(parity_client: Client) -> None:
    urgent = pod("urgent", "1", priority=100)
    prefer = parity_client.preempt(urgent, dry_run=True, pdb_mode=pb.PDB_MODE_PREFER)
    assert (prefer.outcome, prefer.pdb_violations) == (pb.OUTCOME_PREEMPT, 1)
    strict = parity_client.preempt(urgent, dry_run=True, pdb_mode=pb.PDB_MODE_STRICT)
    assert strict.outcome == pb.OUTCOME_NO_CANDIDATE


def test_plan_drain_places_the_pods_of_the_drained_node(parity_client: Client) -> None:
    parity_client.upsert_json(node("node-b", "2"))
    plan = parity_client.plan_drain(["node-a"])
    assert [(p.pod.name, p.outcome, p.node_name) for p in plan.pods] == [
        ("victim", pb.DRAIN_OUTCOME_FITS, "node-b")
    ]
    assert plan.pods[0].blocked_by_pdb.name == "keep-victim" and plan.epoch == parity_client.epoch
    with pytest.raises(grpc.RpcError) as error:
        parity_client.plan_drain([])
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_the_generated_stub_is_public_on_the_clients_channel(parity_client: Client) -> None:
    listed = parity_client.stub.ListNominations(pb.ListNominationsRequest(), timeout=5)
    assert listed.epoch == parity_client.epoch


def test_tls_and_bearer_tokens_map_to_roles(server_factory: Any, tmp_path: Path) -> None:
    subprocess.run([str(TESTDATA / "make-tls.sh"), str(tmp_path)], check=True)
    server = server_factory(
        "--tls-cert", str(tmp_path / "server.crt"), "--tls-key", str(tmp_path / "server.key"),
        "--authz", str(tmp_path / "authz.yaml"),
    ).start()
    tls = grpc.ssl_channel_credentials(root_certificates=(tmp_path / "ca.crt").read_bytes())
    writer_token = (tmp_path / "writer.token").read_text()
    reader_token = (tmp_path / "reader.token").read_text()
    with Client(server.address, credentials=tls, token=writer_token) as writer:
        assert writer.upsert_json(node("node-a", "1")).applied
    with Client(server.address, credentials=tls, token=reader_token) as reader:
        assert reader.preempt(pod("p", "1"), dry_run=True).outcome == pb.OUTCOME_FITS
        with pytest.raises(grpc.RpcError) as denied:
            reader.upsert_json(node("node-b", "1"))
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with Client(server.address, credentials=tls) as anonymous:
        with pytest.raises(grpc.RpcError) as refused:
            anonymous.list_nominations()
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


BAD = json.loads((TESTDATA / "bad-objects.json").read_text())["cases"]


@pytest.mark.parametrize("case", BAD, ids=[c["name"] for c in BAD])
def test_converters_refuse_bad_input_at_its_field(case: dict[str, Any]) -> None:
    with pytest.raises(ConversionError) as error:
        from_kube(case["object"])
    assert error.value.path == case["path"]
    assert str(error.value).startswith(case["path"] + ": ")


def test_a_bad_list_item_is_named_by_its_index(parity_client: Client) -> None:
    bad = {"kind": "List", "items": [node("ok", "1"), BAD[0]["object"]]}
    with pytest.raises(ConversionError) as error:
        parity_client.sync_list(bad, typed=True)
    assert error.value.path == "items[1].spec.priority"


GOLDEN = json.loads((TESTDATA / "converter-golden.json").read_text())["items"]


def test_the_converter_matches_the_shared_golden() -> None:
    from preemptd.client import _sync_request
    from preemptd.kube import list_items

    kube_list = json.loads((TESTDATA / "converter-input.json").read_text())
    converted = [_sync_request(dict(obj, kind=kind), True) for kind, obj in list_items(kube_list)]
    expected = [json_format.ParseDict(item, pb.SyncRequest()) for item in GOLDEN]
    assert converted == expected


def test_the_golden_sets_every_field_of_the_typed_objects() -> None:
    """The golden is checked against the proto: a field added to Node, Pod, PodDisruptionBudget,
    PodGroup or Workload (or a message inside them) fails here until the golden, and so every
    converter, maps it."""
    instances: dict[str, list[Any]] = {}
    types: dict[str, Any] = {}

    def reachable(descriptor: Any) -> None:
        if descriptor.full_name not in types:
            types[descriptor.full_name] = descriptor
            instances.setdefault(descriptor.full_name, [])
            for field in descriptor.fields:
                if field.message_type is not None and not field.message_type.GetOptions().map_entry:
                    reachable(field.message_type)

    def collect(message: Any) -> None:
        instances[message.DESCRIPTOR.full_name].append(message)
        for field in message.DESCRIPTOR.fields:
            if field.message_type is None or field.message_type.GetOptions().map_entry:
                continue
            if field.is_repeated:
                for element in getattr(message, field.name):
                    collect(element)
            elif message.HasField(field.name):
                collect(getattr(message, field.name))

    def present(message: Any, field: Any) -> bool:
        if field.is_repeated:
            return len(getattr(message, field.name)) > 0
        if field.message_type is not None or field.has_presence:
            return bool(message.HasField(field.name))
        return bool(getattr(message, field.name) != field.default_value)

    for root in (pb.Node, pb.Pod, pb.PodDisruptionBudget, pb.PodGroup, pb.Workload):
        reachable(root.DESCRIPTOR)
    for item in GOLDEN:
        request = json_format.ParseDict(item, pb.SyncRequest())
        collect(getattr(request, str(request.WhichOneof("item"))).upsert)
    unset = {
        f"{descriptor.name}.{field.name}"
        for name, descriptor in types.items()
        for field in descriptor.fields
        if not any(present(m, field) for m in instances[name])
    }
    assert not unset, f"fields the golden never sets: {sorted(unset)}"


def gang_pod(name: str, priority: int, group: str, node_name: str = "") -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"namespace": "gang", "name": name, "uid": f"uid-{name}"},
        "spec": {"nodeName": node_name, "priority": priority, "schedulingGroup": {"podGroupName": group},
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "8"}}}]},
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def gang_group(name: str, priority: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"namespace": "gang", "name": name},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"all": {}}, "priority": priority}}


def test_preempt_group_evicts_an_all_mode_gang_for_every_member(server_factory: Any) -> None:
    server = server_factory("--kubernetes-version", "1.37", "--feature-gates", "GenericWorkload=true").start()
    with Client(server.address) as client:
        report = client.sync(
            [node("n1", "8"), node("n2", "8"), gang_group("inference", 100),
             gang_pod("inf-0", 100, "inference", "n1"), gang_pod("inf-1", 100, "inference", "n2")],
            typed=True,
        )
        assert report.rejected == 0 and report.applied.pod_groups == 1
        assert client.upsert_json(gang_group("training", 1000)).applied
        members = [from_kube(gang_pod("train-1", 1000, "training")), gang_pod("train-0", 1000, "training")]
        answer = client.preempt_group(pb.PodGroupRef(namespace="gang", name="training"), members)
        assert answer.outcome == pb.OUTCOME_PREEMPT, answer.message
        assert [v.name for v in answer.victims] == ["inf-0", "inf-1"]
        assert [(n.pod.name, n.node_name) for n in answer.nominations] == [("train-0", "n1"), ("train-1", "n2")]
        assert answer.pod_group_disruptions == 1 and answer.epoch == client.epoch
        assert len(client.list_nominations().nominations) == 2
        with pytest.raises(grpc.RpcError) as error:
            client.preempt_group(pb.PodGroupRef(namespace="gang", name="absent"), dry_run=True)
        assert error.value.code() == grpc.StatusCode.NOT_FOUND
        workload = workload_from_kube({"kind": "Workload", "metadata": {"namespace": "gang", "name": "job"},
                                       "spec": {"podGroupTemplates": [{"name": "workers"}]}})
        assert client.upsert(workload).applied
        assert client.update_workload(pb.UpdateWorkloadRequest(delete=pb.ObjectRef(namespace="gang", name="job"))).applied
        assert client.delete_pod_group("gang", "training").applied
        with pytest.raises(grpc.RpcError) as error:
            client.preempt_group(pb.PodGroupRef(namespace="gang", name="training"), members, dry_run=True)
        assert error.value.code() == grpc.StatusCode.NOT_FOUND
