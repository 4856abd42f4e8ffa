"""A small client over the generated preemptd.v1 stub: one deadline over every call and its
retries, retries with backoff on UNAVAILABLE and RESOURCE_EXHAUSTED, epoch tracking (the
server restarted: push state again), bulk loads through Sync and a nominations watch that
resumes on its own. The retry and deadline contract is the one of every preemptd client
(docs/clients.md)."""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, Union

import grpc

from preemptd import kube
from preemptd.v1 import preemptd_pb2 as pb
from preemptd.v1 import preemptd_pb2_grpc as pb_grpc

log = logging.getLogger("preemptd.client")


class _Response(Protocol):
    @property
    def epoch(self) -> str: ...


Response = TypeVar("Response", bound=_Response)
PodInput = Union[pb.Pod, pb.PodRef, Mapping[str, Any], str]
SyncItem = Union[pb.SyncRequest, pb.Node, pb.Pod, pb.PodDisruptionBudget, pb.PodGroup, pb.Workload, Mapping[str, Any]]
UpdateResponse = Union[
    pb.UpdateNodeResponse,
    pb.UpdatePodResponse,
    pb.UpdatePodDisruptionBudgetResponse,
    pb.UpdatePodGroupResponse,
    pb.UpdateWorkloadResponse,
]
_SUPPORTED_KINDS = "Node, Pod, PodDisruptionBudget, PodGroup, Workload"
EpochCallback = Callable[[str, str], None]

_RECONNECT_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
]


# The codes a call is retried on: the server is restarting, draining or not reachable yet
# (UNAVAILABLE), or refused the call for load (RESOURCE_EXHAUSTED: too many Preempt,
# PlanDrain or Sync calls at once).
RETRY_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED})

DEFAULT_TIMEOUT = 10.0


def _check_timeout(timeout: float) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter for calls failing with a code of RETRY_CODES:
    `attempts` calls in all, the waits between them drawn between half and all of a backoff
    that starts at `initial_backoff` and doubles up to `max_backoff` seconds. The call's
    deadline bounds the whole: a wait that would pass it is not taken."""

    attempts: int = 5
    initial_backoff: float = 0.05
    max_backoff: float = 2.0
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")

    def delays(self) -> Iterator[float]:
        backoff = self.initial_backoff
        for _ in range(self.attempts - 1):
            yield backoff / 2 + random.uniform(0, backoff / 2)
            backoff = min(backoff * self.multiplier, self.max_backoff)


class Client:
    """A connection to `preemptd serve`.

    `credentials`: None is plaintext; TLS (and mTLS) is
    `credentials=grpc.ssl_channel_credentials(root_certificates=..., private_key=...,
    certificate_chain=...)` against `preemptd serve --tls-cert ...`.

    `token`: a bearer token sent as `authorization: Bearer <token>` metadata on every call
    (`serve --authz` maps it to a role); use it with TLS, tokens travel in the clear otherwise.

    `timeout` (seconds, default 10) is the deadline of each call, its retries and the waits
    between them included; every method takes its own `timeout=` too. 0 and negative
    timeouts are refused with ValueError. `retry` says how often and how long apart a call
    failing with UNAVAILABLE or RESOURCE_EXHAUSTED is tried.

    `on_epoch_change(old, new)` runs (in the calling thread) when a response carries an
    epoch other than the last one seen: the server restarted with an empty cache and the
    caller must push its state again.
    """

    def __init__(
        self,
        address: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy = RetryPolicy(),
        on_epoch_change: EpochCallback | None = None,
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        # gRPC's own reconnect backoff starts at 1 s and grows to 2 min: far slower than a
        # restarting server; the caller's options take precedence.
        given = {key for key, _ in options}
        channel_options = [o for o in _RECONNECT_OPTIONS if o[0] not in given] + list(options)
        if credentials is None:
            self._channel = grpc.insecure_channel(address, options=channel_options)
        else:
            self._channel = grpc.secure_channel(address, credentials, options=channel_options)
        self._stub = pb_grpc.PreemptionStub(self._channel)  # type: ignore[no-untyped-call]
        self.metadata: tuple[tuple[str, str], ...] = (("authorization", f"Bearer {token}"),) if token else ()
        self.timeout = _check_timeout(timeout)
        self.retry = retry
        self.on_epoch_change = on_epoch_change
        self._epoch: str | None = None
        self._epoch_lock = threading.Lock()

    def close(self) -> None:
        self._channel.close()

    @property
    def stub(self) -> pb_grpc.PreemptionStub:
        """The generated stub on the client's channel, for calls the wrapper does not cover
        (pass `metadata=client.metadata` when a token is set)."""
        return self._stub

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def epoch(self) -> str | None:
        """The epoch of the last response (None before the first)."""
        return self._epoch

    def observe_epoch(self, epoch: str) -> None:
        if not epoch:
            return
        with self._epoch_lock:
            old, self._epoch = self._epoch, epoch
        if old is not None and old != epoch and self.on_epoch_change is not None:
            self.on_epoch_change(old, epoch)

    def _call(
        self, method: Callable[..., Any], request: Any, timeout: float | None, response_type: type[Response]
    ) -> Response:
        budget = self.timeout if timeout is None else _check_timeout(timeout)
        deadline = time.monotonic() + budget
        delays = self.retry.delays()
        while True:
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0:
                    raise _DeadlineExceeded(budget)
                response = method(request, timeout=remaining, metadata=self.metadata)
                if not isinstance(response, response_type):
                    raise TypeError(f"expected {response_type.__name__}, got {type(response).__name__}")
            except grpc.RpcError as error:
                delay = next(delays, None)
                if error.code() not in RETRY_CODES or delay is None:
                    raise
                if time.monotonic() + delay >= deadline:
                    raise
                log.debug("retrying", extra={"code": error.code().name, "delay": delay})
                time.sleep(delay)
                continue
            self.observe_epoch(response.epoch)
            return response

    # --- cluster state -----------------------------------------------------------------

    def upsert_json(
        self, obj: Mapping[str, Any] | str, *, kind: str | None = None, timeout: float | None = None
    ) -> UpdateResponse:
        """Upserts a Node, Pod, PodDisruptionBudget, PodGroup or Workload given as Kubernetes
        JSON (a dict or its text); the kind comes from the object unless given."""
        text = obj if isinstance(obj, str) else json.dumps(obj)
        if kind is None:
            kind = str((json.loads(text) if isinstance(obj, str) else obj).get("kind", ""))
        if kind == "Node":
            return self._call(self._stub.UpdateNode, pb.UpdateNodeRequest(upsert_json=text), timeout, pb.UpdateNodeResponse)
        if kind == "Pod":
            return self._call(self._stub.UpdatePod, pb.UpdatePodRequest(upsert_json=text), timeout, pb.UpdatePodResponse)
        if kind == "PodDisruptionBudget":
            request = pb.UpdatePodDisruptionBudgetRequest(upsert_json=text)
            return self._call(self._stub.UpdatePodDisruptionBudget, request, timeout, pb.UpdatePodDisruptionBudgetResponse)
        if kind == "PodGroup":
            return self.update_pod_group(pb.UpdatePodGroupRequest(upsert_json=text), timeout=timeout)
        if kind == "Workload":
            return self.update_workload(pb.UpdateWorkloadRequest(upsert_json=text), timeout=timeout)
        raise ValueError(f"unsupported kind {kind!r}: supported kinds are {_SUPPORTED_KINDS}")

    def upsert(self, obj: kube.TypedObject, *, timeout: float | None = None) -> UpdateResponse:
        """Upserts a typed Node, Pod, PodDisruptionBudget, PodGroup or Workload (see
        preemptd.kube to convert Kubernetes objects)."""
        if isinstance(obj, pb.Node):
            return self._call(self._stub.UpdateNode, pb.UpdateNodeRequest(upsert=obj), timeout, pb.UpdateNodeResponse)
        if isinstance(obj, pb.Pod):
            return self._call(self._stub.UpdatePod, pb.UpdatePodRequest(upsert=obj), timeout, pb.UpdatePodResponse)
        if isinstance(obj, pb.PodGroup):
            return self.update_pod_group(pb.UpdatePodGroupRequest(upsert=obj), timeout=timeout)
        if isinstance(obj, pb.Workload):
            return self.update_workload(pb.UpdateWorkloadRequest(upsert=obj), timeout=timeout)
        request = pb.UpdatePodDisruptionBudgetRequest(upsert=obj)
        return self._call(self._stub.UpdatePodDisruptionBudget, request, timeout, pb.UpdatePodDisruptionBudgetResponse)

    def delete_node(self, name: str, *, uid: str | None = None, timeout: float | None = None) -> pb.UpdateNodeResponse:
        ref = pb.ObjectRef(name=name)
        if uid is not None:
            ref.uid = uid
        return self._call(self._stub.UpdateNode, pb.UpdateNodeRequest(delete=ref), timeout, pb.UpdateNodeResponse)

    def delete_pod(
        self, namespace: str, name: str, *, uid: str | None = None, timeout: float | None = None
    ) -> pb.UpdatePodResponse:
        ref = pb.ObjectRef(namespace=namespace, name=name)
        if uid is not None:
            ref.uid = uid
        return self._call(self._stub.UpdatePod, pb.UpdatePodRequest(delete=ref), timeout, pb.UpdatePodResponse)

    def delete_pdb(self, namespace: str, name: str, *, timeout: float | None = None) -> pb.UpdatePodDisruptionBudgetResponse:
        ref = pb.ObjectRef(namespace=namespace, name=name)
        request = pb.UpdatePodDisruptionBudgetRequest(delete=ref)
        return self._call(self._stub.UpdatePodDisruptionBudget, request, timeout, pb.UpdatePodDisruptionBudgetResponse)

    def update_pod_group(
        self, request: pb.UpdatePodGroupRequest, *, timeout: float | None = None
    ) -> pb.UpdatePodGroupResponse:
        """Upserts or deletes one PodGroup (scheduling.k8s.io/v1beta1)."""
        return self._call(self._stub.UpdatePodGroup, request, timeout, pb.UpdatePodGroupResponse)

    def update_workload(
        self, request: pb.UpdateWorkloadRequest, *, timeout: float | None = None
    ) -> pb.UpdateWorkloadResponse:
        """Upserts or deletes one Workload (scheduling.k8s.io/v1beta1)."""
        return self._call(self._stub.UpdateWorkload, request, timeout, pb.UpdateWorkloadResponse)

    def delete_pod_group(self, namespace: str, name: str, *, timeout: float | None = None) -> pb.UpdatePodGroupResponse:
        """Deletes a PodGroup; its pods keep naming it."""
        ref = pb.ObjectRef(namespace=namespace, name=name)
        return self.update_pod_group(pb.UpdatePodGroupRequest(delete=ref), timeout=timeout)

    def delete_workload(self, namespace: str, name: str, *, timeout: float | None = None) -> pb.UpdateWorkloadResponse:
        ref = pb.ObjectRef(namespace=namespace, name=name)
        return self.update_workload(pb.UpdateWorkloadRequest(delete=ref), timeout=timeout)

    def sync(self, items: Iterable[SyncItem], *, typed: bool = False, timeout: float | None = None) -> pb.SyncResponse:
        """Applies updates in order through one client-streaming Sync call. Items are
        SyncRequests, typed messages, or Kubernetes objects (sent as `upsert_json`, or
        converted to typed messages when `typed`). The requests are built up front so a
        retry after UNAVAILABLE can send them again."""
        requests = [_sync_request(item, typed, f"items[{index}]") for index, item in enumerate(items)]
        return self._call(
            lambda reqs, timeout, metadata: self._stub.Sync(iter(reqs), timeout=timeout, metadata=metadata),
            requests,
            timeout,
            pb.SyncResponse,
        )

    def sync_list(
        self, kube_list: Mapping[str, Any] | str, *, typed: bool = False, timeout: float | None = None
    ) -> pb.SyncResponse:
        """Bulk-loads a `kubectl get nodes,pods,pdb -A -o json` List (a dict or its text)."""
        value = json.loads(kube_list) if isinstance(kube_list, str) else kube_list
        items = [dict(item, kind=kind) for kind, item in kube.list_items(value)]
        return self.sync(items, typed=typed, timeout=timeout)

    # --- decisions -----------------------------------------------------------------------

    def preempt(
        self,
        pod: PodInput,
        *,
        dry_run: bool = False,
        explain: bool = False,
        pdb_mode: pb.PdbMode = pb.PDB_MODE_UNSPECIFIED,
        timeout: float | None = None,
    ) -> pb.PreemptResponse:
        """Decides preemption for a pod given typed, as Kubernetes JSON text, as a dict (sent
        as JSON), or as a `pb.PodRef` naming a pending pod the server's cache holds.
        `pdb_mode` (PDB_MODE_PREFER or PDB_MODE_STRICT) overrides the server's policy."""
        request = pb.PreemptRequest(dry_run=dry_run, explain=explain, pdb_mode=pdb_mode)
        if isinstance(pod, pb.Pod):
            request.pod.CopyFrom(pod)
        elif isinstance(pod, pb.PodRef):
            request.pod_ref.CopyFrom(pod)
        elif isinstance(pod, str):
            request.pod_json = pod
        elif isinstance(pod, Mapping):
            request.pod_json = json.dumps(pod)
        else:
            raise TypeError(f"pod: expected a Pod, PodRef, dict or JSON text, got {type(pod).__name__}")
        return self._call(self._stub.Preempt, request, timeout, pb.PreemptResponse)

    def preempt_group(
        self,
        group: pb.PodGroupRef,
        members: Iterable[pb.Pod | Mapping[str, Any] | str] = (),
        *,
        dry_run: bool = False,
        explain: bool = False,
        pdb_mode: pb.PdbMode = pb.PDB_MODE_UNSPECIFIED,
        timeout: float | None = None,
    ) -> pb.PreemptGroupResponse:
        """Decides group preemption for a PodGroup the server's cache holds (the server must
        answer as kubernetes 1.37 with GenericWorkload=true, else FAILED_PRECONDITION).
        `members` are its pending pods, typed, as Kubernetes JSON text or as dicts (sent as
        JSON); none means the pending pods the cache holds that name the group."""
        request = pb.PreemptGroupRequest(group_ref=group, dry_run=dry_run, explain=explain, pdb_mode=pdb_mode)
        for member in members:
            if isinstance(member, pb.Pod):
                request.members.append(member)
            elif isinstance(member, str):
                request.member_json.append(member)
            elif isinstance(member, Mapping):
                request.member_json.append(json.dumps(member))
            else:
                raise TypeError(f"members: expected Pods, dicts or JSON text, got {type(member).__name__}")
        return self._call(self._stub.PreemptGroup, request, timeout, pb.PreemptGroupResponse)

    def plan_drain(
        self,
        node_names: Sequence[str],
        *,
        pdb_mode: pb.PdbMode = pb.PDB_MODE_UNSPECIFIED,
        explain: bool = False,
        timeout: float | None = None,
    ) -> pb.PlanDrainResponse:
        """Plans where the pods of the nodes about to go away would go, in eviction batches
        that respect every PodDisruptionBudget (docs/drain-plans.md)."""
        if isinstance(node_names, str):
            raise TypeError("node_names: expected a sequence of node names, got one string")
        request = pb.PlanDrainRequest(node_names=list(node_names), pdb_mode=pdb_mode, explain=explain)
        return self._call(self._stub.PlanDrain, request, timeout, pb.PlanDrainResponse)

    def list_nominations(self, *, timeout: float | None = None) -> pb.ListNominationsResponse:
        return self._call(self._stub.ListNominations, pb.ListNominationsRequest(), timeout, pb.ListNominationsResponse)

    def watch_nominations(
        self,
        after_revision: int = 0,
        *,
        on_relist: Callable[[pb.ListNominationsResponse], None] | None = None,
        call_timeout: float = 300.0,
    ) -> NominationWatch:
        """Follows nomination changes; see NominationWatch."""
        return NominationWatch(self, after_revision, on_relist, call_timeout)


class _DeadlineExceeded(grpc.RpcError):
    """The call's deadline passed between attempts (the server was never asked again)."""

    def __init__(self, budget: float) -> None:
        super().__init__(f"deadline of {budget}s exceeded")
        self._details = f"deadline of {budget}s exceeded across retries"

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.DEADLINE_EXCEEDED

    def details(self) -> str:
        return self._details


def _sync_request(item: SyncItem, typed: bool, path: str = "") -> pb.SyncRequest:
    if isinstance(item, pb.SyncRequest):
        return item
    if isinstance(item, pb.Node):
        return pb.SyncRequest(node=pb.UpdateNodeRequest(upsert=item))
    if isinstance(item, pb.Pod):
        return pb.SyncRequest(pod=pb.UpdatePodRequest(upsert=item))
    if isinstance(item, pb.PodDisruptionBudget):
        return pb.SyncRequest(pdb=pb.UpdatePodDisruptionBudgetRequest(upsert=item))
    if isinstance(item, pb.PodGroup):
        return pb.SyncRequest(pod_group=pb.UpdatePodGroupRequest(upsert=item))
    if isinstance(item, pb.Workload):
        return pb.SyncRequest(workload=pb.UpdateWorkloadRequest(upsert=item))
    if typed:
        return _sync_request(kube.from_kube(item, path=path), typed)
    kind, text = str(item.get("kind", "")), json.dumps(item)
    if kind == "Node":
        return pb.SyncRequest(node=pb.UpdateNodeRequest(upsert_json=text))
    if kind == "Pod":
        return pb.SyncRequest(pod=pb.UpdatePodRequest(upsert_json=text))
    if kind == "PodDisruptionBudget":
        return pb.SyncRequest(pdb=pb.UpdatePodDisruptionBudgetRequest(upsert_json=text))
    if kind == "PodGroup":
        return pb.SyncRequest(pod_group=pb.UpdatePodGroupRequest(upsert_json=text))
    if kind == "Workload":
        return pb.SyncRequest(workload=pb.UpdateWorkloadRequest(upsert_json=text))
    raise ValueError(f"unsupported kind {kind!r}: supported kinds are {_SUPPORTED_KINDS}")


class NominationWatch:
    """An iterator over WatchNominations events that survives stream ends.

    - Every stream has a deadline (`call_timeout`); when it passes, or the stream ends with
      UNAVAILABLE (server draining or gone) or RESOURCE_EXHAUSTED (this watcher fell
      behind), the watch resumes after the last revision received, with backoff while the
      server is unreachable.
    - On OUT_OF_RANGE (the revision left the server's history, or the server restarted and
      its log is behind), and when the server has another epoch after UNAVAILABLE (checked
      with ListNominations before resuming) or on a resumed stream, it re-lists:
      ListNominations, `on_relist(list)` so the caller can replace its state, the listed
      nominations yielded as `initial` NOMINATED events at the list's revision, then a watch
      from that revision.
    - `cancel()` (from any thread) ends the iteration.
    """

    def __init__(
        self,
        client: Client,
        after_revision: int,
        on_relist: Callable[[pb.ListNominationsResponse], None] | None,
        call_timeout: float,
    ) -> None:
        self._client = client
        self.revision = after_revision
        # A revision to resume from belongs to the epoch the client saw it in.
        self.epoch: str | None = client.epoch if after_revision else None
        self.resumes = 0
        self.relists = 0
        self._on_relist = on_relist
        self._call_timeout = call_timeout
        self._cancelled = threading.Event()
        self._call: Any = None
        self._lock = threading.Lock()
        self._events = self._run()

    def __iter__(self) -> NominationWatch:
        return self

    def __next__(self) -> pb.WatchNominationsResponse:
        return next(self._events)

    def cancel(self) -> None:
        self._cancelled.set()
        with self._lock:
            if self._call is not None:
                self._call.cancel()

    def _relist(self, listed: pb.ListNominationsResponse) -> Iterator[pb.WatchNominationsResponse]:
        self.relists += 1
        self.revision, self.epoch = listed.revision, listed.epoch
        if self._on_relist is not None:
            self._on_relist(listed)
        for n in listed.nominations:
            yield pb.WatchNominationsResponse(
                revision=listed.revision,
                batch_revision=listed.revision,
                type=pb.NOMINATION_EVENT_TYPE_NOMINATED,
                pod=n.pod,
                node=n.node,
                priority=n.priority,
                initial=True,
                epoch=listed.epoch,
            )

    def _run(self) -> Iterator[pb.WatchNominationsResponse]:
        delays = self._client.retry.delays()
        # After UNAVAILABLE the server may have restarted, and a new server's log may already
        # have reached our revision: its events after it would be taken for ours. So the
        # epoch is checked before resuming.
        verify_epoch = False
        while not self._cancelled.is_set():
            if verify_epoch:
                try:
                    listed = self._client.list_nominations()
                except grpc.RpcError as error:
                    if error.code() != grpc.StatusCode.UNAVAILABLE:
                        raise
                    continue  # list_nominations has waited with backoff already
                verify_epoch = False
                if listed.epoch != self.epoch:
                    yield from self._relist(listed)
                    continue
            request = pb.WatchNominationsRequest(after_revision=self.revision)
            with self._lock:
                if self._cancelled.is_set():
                    return
                self._call = self._client.stub.WatchNominations(
                    request, timeout=self._call_timeout, metadata=self._client.metadata
                )
            relist = False
            try:
                for event in self._call:
                    delays = self._client.retry.delays()
                    self._client.observe_epoch(event.epoch)
                    if self.epoch is not None and event.epoch != self.epoch:
                        relist = True
                        self._call.cancel()
                        break
                    self.epoch = event.epoch
                    self.revision = event.revision
                    yield event
            except grpc.RpcError as error:
                code = error.code()
                if self._cancelled.is_set():
                    return
                if code == grpc.StatusCode.OUT_OF_RANGE:
                    relist = True
                elif code == grpc.StatusCode.UNAVAILABLE:
                    delay = next(delays, None)
                    if delay is None:
                        # Keep trying at the longest backoff: a watch outlives restarts.
                        delay = self._client.retry.max_backoff
                    time.sleep(delay)
                    verify_epoch = self.epoch is not None
                elif code not in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED):
                    raise
            if relist and not self._cancelled.is_set():
                yield from self._relist(self._client.list_nominations())
            else:
                self.resumes += 1
