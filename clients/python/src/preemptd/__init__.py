"""Python client for preemptd, the Kubernetes pod-preemption decision service.

    from preemptd import Client
    with Client("127.0.0.1:50051") as client:
        client.sync_list(open("cluster.json").read())
        decision = client.preempt(open("pod.json").read(), dry_run=True)

The generated messages and stub are `preemptd.v1.preemptd_pb2` and `preemptd_pb2_grpc`.
"""

from preemptd.client import Client, NominationWatch, RetryPolicy
from preemptd.kube import (
    ConversionError,
    from_kube,
    node_from_kube,
    pdb_from_kube,
    pod_from_kube,
    pod_group_from_kube,
    workload_from_kube,
)
from preemptd.v1 import preemptd_pb2 as pb

__all__ = [
    "Client",
    "ConversionError",
    "NominationWatch",
    "RetryPolicy",
    "from_kube",
    "node_from_kube",
    "pdb_from_kube",
    "pb",
    "pod_from_kube",
    "pod_group_from_kube",
    "workload_from_kube",
]
