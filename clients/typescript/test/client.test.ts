// The wrapper's behaviour against the real server: unary updates, stale updates, the watch
// resuming after its deadline, the re-list on OUT_OF_RANGE, and a server restart on the
// same port (retries on UNAVAILABLE, the epoch callback, the watch following the new
// server).

import assert from "node:assert/strict";
import { afterEach, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import {
  type KubeObject,
  type ListNominationsResponse,
  NominationEventType,
  nodeFromKube,
  pdbFromKube,
  PreemptdClient,
  podFromKube,
  type WatchNominationsResponse,
} from "../src";
import { Server } from "./server";

const NODE: KubeObject = {
  apiVersion: "v1",
  kind: "Node",
  metadata: { name: "node-a", resourceVersion: "5" },
  status: { allocatable: { cpu: "4", memory: "8Gi", pods: "110" } },
};

function pendingPod(name: string, nominated = ""): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace: "team", name, uid: `uid-${name}` },
    spec: { priority: 100, containers: [{ name: "c", resources: { requests: { cpu: "1" } } }] },
    status: { phase: "Pending", nominatedNodeName: nominated },
  };
}

/** One nominations-log event: NOMINATED when `node` is set, else CLEARED. */
async function nominate(client: PreemptdClient, name: string, node: string): Promise<void> {
  assert.ok((await client.upsertJson(pendingPod(name, node))).applied);
}

const servers: Server[] = [];
const clients: PreemptdClient[] = [];
async function startServer(port = 0, flags: string[] = []): Promise<Server> {
  const server = new Server(port, flags);
  servers.push(server);
  return server.start();
}
function connect(address: string, options: ConstructorParameters<typeof PreemptdClient>[1] = {}): PreemptdClient {
  const client = new PreemptdClient(address, options);
  clients.push(client);
  return client;
}
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const server of servers.splice(0)) await server.stop();
});

test("unary updates as JSON and typed report staleness", async () => {
  const client = connect((await startServer()).address);
  const first = await client.upsertJson(NODE);
  assert.ok(first.applied && first.resourceVersion === 5n && first.epoch);
  const older = await client.upsertNode(nodeFromKube({ ...NODE, metadata: { name: "node-a", resourceVersion: "4" } }));
  assert.ok(!older.applied && older.stale && older.resourceVersion === 5n);
  const pod = await client.upsertPod(podFromKube(pendingPod("p1")));
  assert.ok(pod.applied && pod.revision > first.revision);
  const pdb = pdbFromKube({
    metadata: { namespace: "team", name: "b" },
    spec: { selector: { matchLabels: { app: "x" } } },
    status: { disruptionsAllowed: 1 },
  });
  assert.ok((await client.upsertPodDisruptionBudget(pdb)).applied);
  assert.ok((await client.deletePodDisruptionBudget("team", "b")).applied);
  assert.ok((await client.deletePod("team", "p1")).applied);
  assert.ok((await client.deleteNode("node-a")).applied);
  await assert.rejects(client.deleteNode("node-a"), (e: any) => e.code === 5 /* NOT_FOUND */);
  await assert.rejects(
    client.upsertNode(nodeFromKube({ metadata: { name: "bad" }, status: { allocatable: { cpu: "lots" } } })),
    (e: any) => e.code === 3 /* INVALID_ARGUMENT */ && e.details.includes("upsert.status.allocatable[cpu]"),
  );
});

test("the watch resumes after each deadline without gaps", async () => {
  const client = connect((await startServer()).address);
  await client.upsertJson(NODE);
  const watch = client.watchNominations({ callTimeoutMs: 300 });
  const total = 16;
  const events: WatchNominationsResponse[] = [];
  const consumed = (async () => {
    for await (const event of watch) {
      events.push(event);
      if (events.length === total) return;
    }
  })();
  for (let i = 0; i < total; i++) {
    await nominate(client, "p", i % 2 === 0 ? "node-a" : "");
    await sleep(100);
  }
  await consumed;
  watch.cancel();
  assert.deepEqual(
    events.map((e) => Number(e.revision)),
    Array.from({ length: total }, (_, i) => i + 1),
  );
  assert.deepEqual(
    events.slice(0, 2).map((e) => e.type),
    [NominationEventType.NOMINATION_EVENT_TYPE_NOMINATED, NominationEventType.NOMINATION_EVENT_TYPE_CLEARED],
  );
  assert.ok(watch.resumes >= 2, `resumes ${watch.resumes}`);
  assert.equal(watch.relists, 0);
});

test("a watcher cut off for falling behind resumes without gaps", async () => {
  const client = connect((await startServer(0, ["--subscriber-buffer", "1"])).address);
  await client.upsertJson(NODE);
  const watch = client.watchNominations();
  const iterator = watch[Symbol.asyncIterator]();
  await nominate(client, "x", "node-a");
  const events = [(await iterator.next()).value as WatchNominationsResponse];
  // 2000 events while the watcher reads nothing: the server cuts it off with
  // RESOURCE_EXHAUSTED once its one-event queue is full.
  const items = Array.from({ length: 2000 }, (_, i) => pendingPod(`p${i % 50}`, Math.floor(i / 50) % 2 === 0 ? "node-a" : ""));
  const synced = await client.sync(items);
  while (events[events.length - 1].revision < synced.nominationsRevision) {
    events.push((await iterator.next()).value as WatchNominationsResponse);
  }
  watch.cancel();
  await iterator.return(undefined);
  assert.deepEqual(
    events.map((e) => Number(e.revision)),
    Array.from({ length: Number(synced.nominationsRevision) }, (_, i) => i + 1),
  );
  assert.ok(watch.resumes >= 1, `resumes ${watch.resumes}`);
  assert.equal(watch.relists, 0);
});

test("the watch re-lists on OUT_OF_RANGE", async () => {
  const client = connect((await startServer(0, ["--history-capacity", "2"])).address);
  await client.upsertJson(NODE);
  for (let i = 0; i < 6; i++) await nominate(client, `p${i % 3}`, i < 3 ? "node-a" : "");
  await nominate(client, "p9", "node-a");
  const listed: ListNominationsResponse[] = [];
  const watch = client.watchNominations({ afterRevision: 1n, onRelist: (l) => listed.push(l) });
  const iterator = watch[Symbol.asyncIterator]();
  const initial = (await iterator.next()).value as WatchNominationsResponse;
  assert.equal(watch.relists, 1);
  assert.equal(listed.length, 1);
  assert.equal(listed[0].revision, 7n);
  assert.deepEqual(listed[0].nominations.map((n) => n.pod!.name), ["p9"]);
  assert.ok(initial.initial && initial.pod!.name === "p9" && initial.revision === 7n);
  // A re-list's initial events are one batch at the list's revision, as the server's own.
  assert.equal(initial.batchRevision, 7n);
  await nominate(client, "p9", "");
  const live = (await iterator.next()).value as WatchNominationsResponse;
  watch.cancel();
  await iterator.return(undefined);
  assert.deepEqual([live.revision, live.type, live.initial], [8n, NominationEventType.NOMINATION_EVENT_TYPE_CLEARED, false]);
  assert.equal(live.batchRevision, 8n);
});

test("a restart on the same port: retries, the epoch callback, the watch follows", async () => {
  const first = await startServer();
  const changes: [string, string][] = [];
  const client = connect(first.address, {
    retry: { attempts: 30, initialBackoffMs: 50, maxBackoffMs: 500 },
    onEpochChange: (oldEpoch, newEpoch) => changes.push([oldEpoch, newEpoch]),
  });
  const oldEpoch = (await client.upsertJson(NODE)).epoch;
  await nominate(client, "p", "node-a");
  const watch = client.watchNominations();
  const events: WatchNominationsResponse[] = [];
  const consumed = (async () => {
    for await (const event of watch) {
      events.push(event);
      if (event.epoch !== oldEpoch) return;
    }
  })();
  while (events.length === 0) await sleep(20);
  assert.equal(await first.stop(), 0);
  const second = new Server(first.port);
  servers.push(second);
  setTimeout(() => void second.start(), 500);
  // Sent while nothing listens: retried on UNAVAILABLE until the new server answers.
  const newEpoch = (await client.upsertJson(NODE)).epoch;
  assert.notEqual(newEpoch, oldEpoch);
  assert.deepEqual(changes[0], [oldEpoch, newEpoch]);
  await nominate(client, "q", "node-a");
  await Promise.race([consumed, sleep(20_000).then(() => assert.fail("the watch never saw the new server"))]);
  watch.cancel();
  assert.equal(events[0].epoch, oldEpoch);
  assert.equal(events[0].pod!.name, "p");
  const last = events[events.length - 1];
  assert.deepEqual([last.pod!.name, last.node, last.epoch], ["q", "node-a", newEpoch]);
  assert.ok(watch.relists >= 1);
});
