#!/usr/bin/env python3
"""Loads examples/cluster.json through Sync, decides examples/pod.json with Preempt (a dry
run, then for real), prints the decision and follows WatchNominations for a few seconds.

    python clients/python/examples/example.py --addr 127.0.0.1:50051

Against `preemptd serve --tls-cert ... --authz ...`: add `--ca-cert ca.crt --token-file
writer.token`.
"""

import argparse
import threading
from pathlib import Path

import grpc
from google.protobuf import json_format

from preemptd import Client, pb

# The repository's examples/ when run from clients/python/examples; --cluster and --pod otherwise.
EXAMPLES = Path(__file__).resolve().parent.parent.parent.parent / "examples"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--addr", default="127.0.0.1:50051")
    parser.add_argument("--watch-seconds", type=float, default=2.0)
    parser.add_argument("--cluster", type=Path, default=EXAMPLES / "cluster.json")
    parser.add_argument("--pod", type=Path, default=EXAMPLES / "pod.json")
    parser.add_argument("--ca-cert", type=Path, help="TLS: the CA that signed the server's certificate")
    parser.add_argument("--token-file", type=Path, help="a bearer token for `serve --authz`")
    args = parser.parse_args()

    credentials = None
    if args.ca_cert:
        credentials = grpc.ssl_channel_credentials(root_certificates=args.ca_cert.read_bytes())
    token = args.token_file.read_text().strip() if args.token_file else None

    def restarted(old: str, new: str) -> None:
        print(f"server restarted (epoch {old} -> {new}): push the cluster again")

    with Client(args.addr, credentials=credentials, token=token, timeout=10.0, on_epoch_change=restarted) as client:
        synced = client.sync_list(args.cluster.read_text())
        print(f"synced {synced.applied.nodes} nodes, {synced.applied.pods} pods, "
              f"{synced.applied.pdbs} budgets; {synced.rejected} rejected")

        pod = args.pod.read_text()
        plan = client.preempt(pod, dry_run=True, explain=True)
        print(f"dry run: {pb.Outcome.Name(plan.outcome)} on {plan.nominated_node_name}")
        decision = client.preempt(pod)
        print(json_format.MessageToJson(decision))

        watch = client.watch_nominations(after_revision=plan.nominations_revision)
        threading.Timer(args.watch_seconds, watch.cancel).start()
        for event in watch:
            print(event.revision, pb.NominationEventType.Name(event.type),
                  f"{event.pod.namespace}/{event.pod.name}", event.node)


if __name__ == "__main__":
    main()
