"""A small client over the generated preemptd.v1 stub: deadlines on every call, retries with
backoff on UNAVAILABLE, epoch tracking (the server restarted: push state again), bulk loads
through Sync and a nominations watch that resumes on its own."""

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
PodInput = Union[pb.Pod, Mapping[str, Any], str]
SyncItem = Union[pb.SyncRequest, pb.Node, pb.Pod, pb.PodDisruptionBudget, Mapping[str, Any]]
UpdateResponse = Union[
    pb.UpdateNodeResponse, pb.UpdatePodResponse, pb.UpdatePodDisruptionBudgetResponse
]
EpochCallback = Callable[[str, str], None]

_RECONNECT_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
]


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter for calls failing with UNAVAILABLE (server
    restarting, draining or not reachable yet): `attempts` calls in all, the waits between
    them growing from `initial_backoff` to at most `max_backoff` seconds."""

    attempts: int = 8
    initial_backoff: float = 0.1
    max_backoff: float = 2.0
    multiplier: float = 2.0

    def delays(self) -> Iterator[float]:
        backoff = self.initial_backoff
        for _ in range(self.attempts - 1):
            yield backoff / 2 + random.uniform(0, backoff / 2)
            backoff = min(backoff * self.multiplier, self.max_backoff)


class Client:
    """A connection to `preemptd serve`.

    `credentials`: None is plaintext (what `preemptd serve` speaks today). TLS and client
    certificates plug in here once the server supports them:
    `credentials=grpc.ssl_channel_credentials(root_certificates=..., private_key=...,
    certificate_chain=...)`.

    `on_epoch_change(old, new)` runs (in the calling thread) when a response carries an
    epoch other than the last one seen: the server restarted with an empty cache and the
    caller must push its state again.
    """

    def __init__(
        self,
        address: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        timeout: float = 10.0,
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
        self.timeout = timeout
        self.retry = retry
        self.on_epoch_change = on_epoch_change
        self._epoch: str | None = None
        self._epoch_lock = threading.Lock()

    def close(self) -> None:
        self._channel.close()

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
        delays = self.retry.delays()
        while True:
            try:
                response = method(request, timeout=timeout or self.timeout)
                if not isinstance(response, response_type):
                    raise TypeError(f"expected {response_type.__name__}, got {type(response).__name__}")
            except grpc.RpcError as error:
                delay = next(delays, None)
                if error.code() != grpc.StatusCode.UNAVAILABLE or delay is None:
                    raise
                log.debug("retrying after unavailable", extra={"delay": delay})
                time.sleep(delay)
                continue
            self.observe_epoch(response.epoch)
            return response

    # --- cluster state -----------------------------------------------------------------

    def upsert_json(
        self, obj: Mapping[str, Any] | str, *, kind: str | None = None, timeout: float | None = None
    ) -> UpdateResponse:
        """Upserts a Node, Pod or PodDisruptionBudget given as Kubernetes JSON (a dict or its
        text); the kind comes from the object unless given."""
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
        raise ValueError(f"unsupported kind {kind!r}: supported kinds are Node, Pod, PodDisruptionBudget")

    def upsert(self, obj: kube.TypedObject, *, timeout: float | None = None) -> UpdateResponse:
        """Upserts a typed Node, Pod or PodDisruptionBudget (see preemptd.kube to convert
        Kubernetes objects)."""
        if isinstance(obj, pb.Node):
            return self._call(self._stub.UpdateNode, pb.UpdateNodeRequest(upsert=obj), timeout, pb.UpdateNodeResponse)
        if isinstance(obj, pb.Pod):
            return self._call(self._stub.UpdatePod, pb.UpdatePodRequest(upsert=obj), timeout, pb.UpdatePodResponse)
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

    def sync(self, items: Iterable[SyncItem], *, typed: bool = False, timeout: float | None = None) -> pb.SyncResponse:
        """Applies updates in order through one client-streaming Sync call. Items are
        SyncRequests, typed messages, or Kubernetes objects (sent as `upsert_json`, or
        converted to typed messages when `typed`). The requests are built up front so a
        retry after UNAVAILABLE can send them again."""
        requests = [_sync_request(item, typed) for item in items]
        return self._call(
            lambda reqs, timeout: self._stub.Sync(iter(reqs), timeout=timeout), requests, timeout, pb.SyncResponse
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
        timeout: float | None = None,
    ) -> pb.PreemptResponse:
        """Decides preemption for a pod given typed, as Kubernetes JSON text, or as a dict
        (sent as JSON). A pod reference (namespace/name of a cached pod) is not in the API
        yet: send the pod itself."""
        request = pb.PreemptRequest(dry_run=dry_run, explain=explain)
        if isinstance(pod, pb.Pod):
            request.pod.CopyFrom(pod)
        elif isinstance(pod, str):
            request.pod_json = pod
        else:
            request.pod_json = json.dumps(pod)
        return self._call(self._stub.Preempt, request, timeout, pb.PreemptResponse)

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


def _sync_request(item: SyncItem, typed: bool) -> pb.SyncRequest:
    if isinstance(item, pb.SyncRequest):
        return item
    if isinstance(item, pb.Node):
        return pb.SyncRequest(node=pb.UpdateNodeRequest(upsert=item))
    if isinstance(item, pb.Pod):
        return pb.SyncRequest(pod=pb.UpdatePodRequest(upsert=item))
    if isinstance(item, pb.PodDisruptionBudget):
        return pb.SyncRequest(pdb=pb.UpdatePodDisruptionBudgetRequest(upsert=item))
    if typed:
        return _sync_request(kube.from_kube(item), typed)
    kind, text = str(item.get("kind", "")), json.dumps(item)
    if kind == "Node":
        return pb.SyncRequest(node=pb.UpdateNodeRequest(upsert_json=text))
    if kind == "Pod":
        return pb.SyncRequest(pod=pb.UpdatePodRequest(upsert_json=text))
    if kind == "PodDisruptionBudget":
        return pb.SyncRequest(pdb=pb.UpdatePodDisruptionBudgetRequest(upsert_json=text))
    raise ValueError(f"unsupported kind {kind!r}: supported kinds are Node, Pod, PodDisruptionBudget")


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
                self._call = self._client._stub.WatchNominations(request, timeout=self._call_timeout)
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
