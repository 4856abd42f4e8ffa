"""The retry and deadline contract every preemptd client follows (docs/clients.md): 5
attempts, 50 ms backoff doubling to 2 s, retries on UNAVAILABLE and RESOURCE_EXHAUSTED
only, one deadline over the call and its retries, timeouts of 0 or less refused. Checked
against an in-process server that answers what each test needs and counts the calls."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from preemptd import Client, RetryPolicy, pb
from preemptd.v1 import preemptd_pb2_grpc as pb_grpc


class Scripted(pb_grpc.PreemptionServicer):
    """Answers Preempt with the scripted codes in order, then with a decision."""

    def __init__(self) -> None:
        self.codes: list[grpc.StatusCode] = []
        self.calls = 0

    def Preempt(self, request: pb.PreemptRequest, context: grpc.ServicerContext) -> pb.PreemptResponse:
        self.calls += 1
        if self.codes:
            code = self.codes.pop(0)
            context.abort(code, f"scripted {code.name}")
        return pb.PreemptResponse(outcome=pb.OUTCOME_FITS, epoch="scripted")


@pytest.fixture
def scripted() -> Iterator[tuple[Scripted, str]]:
    servicer = Scripted()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_PreemptionServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield servicer, f"127.0.0.1:{port}"
    server.stop(None)


POD: dict[str, Any] = {"kind": "Pod", "metadata": {"name": "p"}}


def test_defaults_are_the_shared_contract() -> None:
    policy = RetryPolicy()
    assert (policy.attempts, policy.initial_backoff, policy.max_backoff) == (5, 0.05, 2.0)
    with Client("127.0.0.1:1") as client:
        assert client.timeout == 10.0


@pytest.mark.parametrize("code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED])
def test_unavailable_and_resource_exhausted_are_retried(scripted: tuple[Scripted, str], code: grpc.StatusCode) -> None:
    servicer, address = scripted
    servicer.codes = [code, code]
    with Client(address) as client:
        assert client.preempt(POD).epoch == "scripted"
    assert servicer.calls == 3


def test_other_codes_are_not_retried(scripted: tuple[Scripted, str]) -> None:
    servicer, address = scripted
    servicer.codes = [grpc.StatusCode.INVALID_ARGUMENT]
    with Client(address) as client, pytest.raises(grpc.RpcError) as error:
        client.preempt(POD)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT and servicer.calls == 1


def test_attempts_are_bounded(scripted: tuple[Scripted, str]) -> None:
    servicer, address = scripted
    servicer.codes = [grpc.StatusCode.UNAVAILABLE] * 10
    with Client(address) as client, pytest.raises(grpc.RpcError) as error:
        client.preempt(POD)
    assert error.value.code() == grpc.StatusCode.UNAVAILABLE and servicer.calls == 5


def test_the_deadline_covers_the_retries(scripted: tuple[Scripted, str]) -> None:
    servicer, address = scripted
    servicer.codes = [grpc.StatusCode.UNAVAILABLE] * 1000
    # Were the timeout per attempt, 1000 attempts 0.2 s apart would take over 3 minutes.
    retry = RetryPolicy(attempts=1000, initial_backoff=0.2, max_backoff=0.2)
    started = time.monotonic()
    with Client(address, retry=retry) as client, pytest.raises(grpc.RpcError):
        client.preempt(POD, timeout=1.0)
    assert time.monotonic() - started < 30
    assert servicer.calls < 1000


@pytest.mark.parametrize("timeout", [0, -1.0])
def test_timeouts_of_zero_or_less_are_refused(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        Client("127.0.0.1:1", timeout=timeout)
    with Client("127.0.0.1:1") as client, pytest.raises(ValueError, match="timeout must be a positive"):
        client.preempt(POD, timeout=timeout)
