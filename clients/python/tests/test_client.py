"""The wrapper's behaviour against the real server: unary updates, stale updates, the watch
resuming after its deadline, the re-list on OUT_OF_RANGE, and a server restart on the same
port (retries on UNAVAILABLE, the epoch callback, the watch following the new server)."""

from __future__ import annotations

import threading
import time
from typing import Any

import grpc
import pytest

from preemptd import Client, RetryPolicy, node_from_kube, pb, pdb_from_kube, pod_from_kube

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node-a", "resourceVersion": "5"},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}


def pending_pod(name: str, nominated: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "team", "name": name, "uid": f"uid-{name}"},
        "spec": {"priority": 100, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Pending", "nominatedNodeName": nominated},
    }


def nominate(client: Client, name: str, node: str) -> None:
    """One nominations-log event: NOMINATED when `node` is set, else CLEARED."""
    assert client.upsert_json(pending_pod(name, node)).applied


def test_unary_updates_as_json_and_typed_report_staleness(client: Client) -> None:
    first = client.upsert_json(NODE)
    assert first.applied and first.resource_version == 5 and first.epoch
    older = client.upsert(node_from_kube({**NODE, "metadata": {"name": "node-a", "resourceVersion": "4"}}))
    assert not older.applied and older.stale and older.resource_version == 5
    pod = client.upsert(pod_from_kube(pending_pod("p1")))
    assert pod.applied and pod.revision > first.revision
    pdb = client.upsert_json(
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"namespace": "team", "name": "b"},
         "spec": {"selector": {"matchLabels": {"app": "x"}}}, "status": {"disruptionsAllowed": 1}}
    )
    assert pdb.applied
    assert client.delete_pdb("team", "b").applied
    assert client.delete_pod("team", "p1").applied
    assert client.delete_node("node-a").applied
    with pytest.raises(grpc.RpcError) as error:
        client.delete_node("node-a")
    assert error.value.code() == grpc.StatusCode.NOT_FOUND


def test_invalid_input_is_invalid_argument_naming_the_field(client: Client) -> None:
    bad = pb.Node(name="bad", allocatable={"cpu": "lots"})
    with pytest.raises(grpc.RpcError) as error:
        client.upsert(bad)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "upsert.status.allocatable[cpu]" in error.value.details()
    assert pdb_from_kube({"metadata": {"name": "x"}}).HasField("selector") is False


def test_watch_resumes_after_each_deadline_without_gaps(server_factory: Any) -> None:
    server = server_factory().start()
    with Client(server.address) as client:
        client.upsert_json(NODE)
        watch = client.watch_nominations(call_timeout=0.3)
        events: list[pb.WatchNominationsResponse] = []
        total = 16

        def consume() -> None:
            for event in watch:
                events.append(event)
                if len(events) == total:
                    return

        consumer = threading.Thread(target=consume)
        consumer.start()
        for i in range(total):
            nominate(client, "p", "node-a" if i % 2 == 0 else "")
            time.sleep(0.1)
        consumer.join(timeout=20)
        watch.cancel()
    assert not consumer.is_alive()
    assert [e.revision for e in events] == list(range(1, total + 1))
    assert [e.type for e in events[:2]] == [pb.NOMINATION_EVENT_TYPE_NOMINATED, pb.NOMINATION_EVENT_TYPE_CLEARED]
    assert watch.resumes >= 2 and watch.relists == 0


def test_watch_cut_off_for_falling_behind_resumes_without_gaps(server_factory: Any) -> None:
    server = server_factory("--subscriber-buffer", "1").start()
    with Client(server.address) as client:
        client.upsert_json(NODE)
        watch = client.watch_nominations()
        nominate(client, "x", "node-a")
        events = [next(watch)]
        # 2000 events while the watcher reads nothing: the server cuts it off with
        # RESOURCE_EXHAUSTED once its one-event queue is full.
        items = [pending_pod(f"p{i % 50}", "node-a" if (i // 50) % 2 == 0 else "") for i in range(2000)]
        synced = client.sync(items)
        while events[-1].revision < synced.nominations_revision:
            events.append(next(watch))
        watch.cancel()
    assert [e.revision for e in events] == list(range(1, synced.nominations_revision + 1))
    assert watch.resumes >= 1 and watch.relists == 0


def test_watch_relists_on_out_of_range(server_factory: Any) -> None:
    server = server_factory("--history-capacity", "2").start()
    with Client(server.address) as client:
        client.upsert_json(NODE)
        for i in range(6):
            nominate(client, f"p{i % 3}", "node-a" if i < 3 else "")
        nominate(client, "p9", "node-a")
        listed: list[pb.ListNominationsResponse] = []
        watch = client.watch_nominations(after_revision=1, on_relist=listed.append)
        initial = [next(watch)]
        assert watch.relists == 1 and len(listed) == 1
        assert listed[0].revision == 7 and [n.pod.name for n in listed[0].nominations] == ["p9"]
        assert initial[0].initial and initial[0].pod.name == "p9" and initial[0].revision == 7
        # A re-list's initial events are one batch at the list's revision, as the server's own.
        assert initial[0].batch_revision == 7
        nominate(client, "p9", "")
        live = next(watch)
        watch.cancel()
    assert (live.revision, live.type, live.initial) == (8, pb.NOMINATION_EVENT_TYPE_CLEARED, False)
    assert live.batch_revision == 8


def test_restart_on_the_same_port_retries_fires_the_epoch_callback_and_the_watch_follows(
    server_factory: Any,
) -> None:
    first = server_factory().start()
    changes: list[tuple[str, str]] = []
    retry = RetryPolicy(attempts=30, initial_backoff=0.05, max_backoff=0.5)
    with Client(first.address, retry=retry, on_epoch_change=lambda old, new: changes.append((old, new))) as client:
        old_epoch = client.upsert_json(NODE).epoch
        nominate(client, "p", "node-a")
        watch = client.watch_nominations()
        events: list[pb.WatchNominationsResponse] = []
        got_first, got_new_epoch = threading.Event(), threading.Event()

        def consume() -> None:
            for event in watch:
                events.append(event)
                got_first.set()
                if event.epoch != old_epoch:
                    got_new_epoch.set()
                    return

        consumer = threading.Thread(target=consume)
        consumer.start()
        assert got_first.wait(timeout=10)
        first.stop()
        second = server_factory(port=first.port)
        threading.Timer(0.5, second.start).start()
        # Sent while nothing listens: retried on UNAVAILABLE until the new server answers.
        new_epoch = client.upsert_json(NODE).epoch
        assert new_epoch != old_epoch
        assert changes[0] == (old_epoch, new_epoch)
        nominate(client, "q", "node-a")
        assert got_new_epoch.wait(timeout=20)
        watch.cancel()
        consumer.join(timeout=5)
    assert events[0].epoch == old_epoch and events[0].pod.name == "p"
    assert (events[-1].pod.name, events[-1].node, events[-1].epoch) == ("q", "node-a", new_epoch)
    assert watch.relists >= 1
