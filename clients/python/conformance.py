#!/usr/bin/env python3
"""Runs conformance scenarios against a running `preemptd serve` through a Python client
generated from proto/preemptd/v1/preemptd.proto (grpcio-tools), as a client in another
language would: every object is loaded with `upsert_json`, the preemptor is decided with a
dry-run `Preempt`, and the objects are deleted again before the next scenario.

    python3 clients/python/conformance.py --addr 127.0.0.1:50051 tests/conformance

Exits non-zero when any scenario's answer differs from the expected one.
"""

import argparse
import glob
import json
import os
import sys
import tempfile


def generate_stubs(repo: str, out: str) -> None:
    from grpc_tools import protoc

    proto_dir = os.path.join(repo, "proto")
    args = [
        "protoc",
        f"-I{proto_dir}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        os.path.join(proto_dir, "preemptd", "v1", "preemptd.proto"),
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--addr", default="127.0.0.1:50051")
    parser.add_argument("paths", nargs="+", help="scenario files or directories")
    args = parser.parse_args()

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    stubs = tempfile.mkdtemp(prefix="preemptd-stubs-")
    generate_stubs(repo, stubs)
    sys.path.insert(0, stubs)
    import grpc
    from preemptd.v1 import preemptd_pb2 as pb
    from preemptd.v1 import preemptd_pb2_grpc as rpc

    files = []
    for path in args.paths:
        if os.path.isdir(path):
            files += glob.glob(os.path.join(path, "**", "*.json"), recursive=True)
        else:
            files.append(path)
    files.sort()

    channel = grpc.insecure_channel(args.addr)
    grpc.channel_ready_future(channel).result(timeout=10)
    stub = rpc.PreemptionStub(channel)
    outcome_name = {
        pb.OUTCOME_PREEMPT: "PREEMPT",
        pb.OUTCOME_FITS: "FITS",
        pb.OUTCOME_NOT_ELIGIBLE: "NOT_ELIGIBLE",
        pb.OUTCOME_NO_CANDIDATE: "NO_CANDIDATE",
    }
    failures = []
    for path in files:
        with open(path) as f:
            scenario = json.load(f)
        items = scenario["cluster"]["items"]
        loaded = []
        try:
            for item in items:
                kind = item["kind"]
                meta = item.get("metadata", {})
                ref = pb.ObjectRef(namespace=meta.get("namespace", ""), name=meta["name"])
                text = json.dumps(item)
                if kind == "Node":
                    stub.UpdateNode(pb.UpdateNodeRequest(upsert_json=text), timeout=10)
                    loaded.append(("node", ref))
                elif kind == "Pod":
                    stub.UpdatePod(pb.UpdatePodRequest(upsert_json=text), timeout=10)
                    loaded.append(("pod", ref))
                else:
                    stub.UpdatePodDisruptionBudget(
                        pb.UpdatePodDisruptionBudgetRequest(upsert_json=text), timeout=10
                    )
                    loaded.append(("pdb", ref))
            answer = stub.Preempt(
                pb.PreemptRequest(pod_json=json.dumps(scenario["preemptor"]), dry_run=True),
                timeout=30,
            )
            expect = scenario["expect"]
            got = outcome_name.get(answer.outcome, str(answer.outcome))
            problem = None
            if got != expect["outcome"]:
                problem = f"outcome {got} != {expect['outcome']}: {answer.message}"
            elif got == "PREEMPT":
                node = answer.nominated_node_name
                victims = sorted(f"{v.namespace}/{v.name}" for v in answer.victims)
                cleared = sorted(f"{v.namespace}/{v.name}" for v in answer.nominated_pods_to_clear)
                if node not in expect["nominatedNodeNameAnyOf"]:
                    problem = f"node {node} not in {expect['nominatedNodeNameAnyOf']}"
                elif victims != sorted(expect["victimsByNode"].get(node, [])):
                    problem = f"victims {victims} != {expect['victimsByNode'].get(node)}"
                elif cleared != sorted(expect["nominatedPodsToClearByNode"].get(node, [])):
                    problem = f"cleared {cleared} != {expect['nominatedPodsToClearByNode'].get(node)}"
            elif got == "FITS" and "feasibleNodes" in expect:
                if sorted(answer.feasible_nodes) != sorted(expect["feasibleNodes"]):
                    problem = f"feasible {sorted(answer.feasible_nodes)} != {expect['feasibleNodes']}"
            if problem:
                failures.append(f"{path}: {problem}")
        except grpc.RpcError as error:
            failures.append(f"{path}: rpc failed: {error.code()} {error.details()}")
        finally:
            # Pods first so nodes and budgets leave an empty cache behind.
            for kind, ref in sorted(loaded, key=lambda k: k[0] != "pod"):
                try:
                    if kind == "pod":
                        stub.UpdatePod(pb.UpdatePodRequest(delete=ref), timeout=10)
                    elif kind == "node":
                        stub.UpdateNode(pb.UpdateNodeRequest(delete=ref), timeout=10)
                    else:
                        stub.UpdatePodDisruptionBudget(
                            pb.UpdatePodDisruptionBudgetRequest(delete=ref), timeout=10
                        )
                except grpc.RpcError:
                    pass
    passed = len(files) - len(failures)
    for failure in failures:
        print(failure)
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
