"""Starts the real `preemptd serve` binary on a loopback port for the tests.

PREEMPTD_BIN names the binary (default: the repository's target/debug/preemptd, which
`cargo build` or `cargo test` leaves there); PREEMPTD_SCENARIOS the conformance scenario
directory (default: tests/conformance).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from preemptd import Client

REPO = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("PREEMPTD_BIN", REPO / "target" / "debug" / "preemptd"))
SCENARIOS = Path(os.environ.get("PREEMPTD_SCENARIOS", REPO / "tests" / "conformance"))
SERVING = re.compile(r"serving.*?addr\W+(127\.0\.0\.1:\d+)")


class Server:
    """One `preemptd serve` process; `port` 0 picks a free one, learned from its log."""

    def __init__(self, *flags: str, port: int = 0) -> None:
        self.flags = flags
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None
        self.log = tempfile.NamedTemporaryFile(prefix="preemptd-test-", suffix=".log", delete=False)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> Server:
        assert BIN.exists(), f"{BIN} not found: run cargo build, or set PREEMPTD_BIN"
        start = self.log.tell()
        self.process = subprocess.Popen(
            [str(BIN), "serve", "--listen", f"127.0.0.1:{self.port}", "--metrics-listen", "off",
             "--log-format", "json", *self.flags],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "RUST_LOG": "info", "NO_COLOR": "1"},
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open(self.log.name) as f:
                f.seek(start)
                match = SERVING.search(f.read())
            if match:
                self.port = int(match.group(1).rsplit(":", 1)[1])
                return self
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError(f"preemptd did not start; log:\n{open(self.log.name).read()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            assert self.process.wait(timeout=30) == 0, "preemptd exited non-zero on SIGTERM"
        self.process = None

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.log.close()
        os.unlink(self.log.name)


@pytest.fixture
def server_factory() -> Iterator[type[Server]]:
    servers: list[Server] = []

    def make(*flags: str, port: int = 0) -> Server:
        server = Server(*flags, port=port)
        servers.append(server)
        return server

    yield make  # type: ignore[misc]
    for server in servers:
        server.close()


@pytest.fixture(scope="session")
def shared_server() -> Iterator[Server]:
    server = Server().start()
    yield server
    server.stop()
    server.close()


@pytest.fixture
def client(shared_server: Server) -> Iterator[Client]:
    with Client(shared_server.address) as client:
        yield client
