#!/usr/bin/env python3
"""Generates the committed stubs in src/preemptd/v1 from proto/ with the pinned
grpcio-tools (messages, type stubs, gRPC stub); `--check` regenerates into a temporary
directory and fails when the committed files differ.

    python tools/generate.py           # rewrite src/preemptd/v1/*_pb2*.py[i]
    python tools/generate.py --check   # CI: committed stubs are fresh
"""

import argparse
import difflib
import filecmp
import os
import sys
import tempfile
from importlib.metadata import version

GRPCIO_TOOLS = "1.85.1"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO_ROOT = os.path.join(HERE, "..", "..", "proto")
PROTO = os.path.join("preemptd", "v1", "preemptd.proto")
OUT = os.path.join(HERE, "src")
FILES = ["preemptd_pb2.py", "preemptd_pb2.pyi", "preemptd_pb2_grpc.py"]


def generate(out: str) -> None:
    from grpc_tools import protoc

    if version("grpcio-tools") != GRPCIO_TOOLS:
        sys.exit(f"grpcio-tools {version('grpcio-tools')} installed, {GRPCIO_TOOLS} pinned")
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        os.path.join(PROTO_ROOT, PROTO),
    ]
    if protoc.main(args) != 0:
        sys.exit("protoc failed")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if not args.check:
        generate(OUT)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp)
        stale = []
        for name in FILES:
            fresh = os.path.join(tmp, "preemptd", "v1", name)
            committed = os.path.join(OUT, "preemptd", "v1", name)
            if not os.path.exists(committed) or not filecmp.cmp(fresh, committed, shallow=False):
                stale.append(name)
                old = open(committed).readlines() if os.path.exists(committed) else []
                diff = difflib.unified_diff(old, open(fresh).readlines(), committed, fresh)
                sys.stdout.writelines(list(diff)[:40])
        if stale:
            print(f"stale generated stubs: {', '.join(stale)}; run python tools/generate.py")
            return 1
    print("python stubs are fresh")
    return 0


if __name__ == "__main__":
    sys.exit(main())
