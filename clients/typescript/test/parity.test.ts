// One test per row of the client parity table (docs/clients.md) that client.test.ts and
// conformance.test.ts do not cover already: Preempt by pod_ref, pdbMode, PlanDrain, TLS with
// bearer tokens, and the converters refusing the shared bad inputs
// (clients/testdata/bad-objects.json) at their field path.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { credentials, status } from "@grpc/grpc-js";

import {
  ConversionError,
  DrainOutcome,
  fromKube,
  type KubeObject,
  listItems,
  type ListNominationsResponse,
  Outcome,
  PdbMode,
  podFromKube,
  PreemptdClient,
  SyncRequest,
  workloadFromKube,
} from "../src";
import { readJson, REPO, Server } from "./server";

const TESTDATA = join(REPO, "clients", "testdata");

const node = (name: string, cpu: string): KubeObject => ({
  kind: "Node",
  metadata: { name },
  status: { allocatable: { cpu, pods: "10" } },
});

function pod(name: string, cpu: string, priority = 0, nodeName = "", labels: Record<string, string> = {}): KubeObject {
  return {
    kind: "Pod",
    metadata: { namespace: "parity", name, uid: `uid-${name}`, labels },
    spec: { nodeName, priority, containers: [{ name: "c", resources: { requests: { cpu } } }] },
    status: { phase: nodeName ? "Running" : "Pending" },
  };
}

const PDB: KubeObject = {
  kind: "PodDisruptionBudget",
  metadata: { namespace: "parity", name: "keep-victim" },
  spec: { selector: { matchLabels: { app: "victim" } } },
  status: { disruptionsAllowed: 0 },
};

async function rejected(promise: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code: number; details: string };
  }
  assert.fail("the call succeeded");
}

describe("parity with the other clients", () => {
  let server: Server;
  let client: PreemptdClient;
  before(async () => {
    server = await new Server().start();
    client = new PreemptdClient(server.address);
    await client.sync([node("node-a", "1"), pod("victim", "1", 0, "node-a", { app: "victim" }), PDB]);
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  test("preempt by pod_ref decides on the cached pod", async () => {
    await client.upsertJson(pod("urgent", "1", 100));
    const answer = await client.preemptRef({ namespace: "parity", name: "urgent", uid: "" }, { dryRun: true });
    assert.equal(answer.outcome, Outcome.OUTCOME_PREEMPT);
    assert.deepEqual(answer.victims.map((v) => v.name), ["victim"]);
    const missing = await rejected(client.preemptRef({ namespace: "parity", name: "absent", uid: "" }, { dryRun: true }));
    assert.equal(missing.code, status.NOT_FOUND);
  });

  test("pdbMode strict refuses a node whose victim a budget protects", async () => {
    const urgent = pod("urgent", "1", 100);
    const prefer = await client.preempt(urgent, { dryRun: true, pdbMode: PdbMode.PDB_MODE_PREFER });
    assert.deepEqual([prefer.outcome, prefer.pdbViolations], [Outcome.OUTCOME_PREEMPT, 1]);
    const strict = await client.preempt(urgent, { dryRun: true, pdbMode: PdbMode.PDB_MODE_STRICT });
    assert.equal(strict.outcome, Outcome.OUTCOME_NO_CANDIDATE);
  });

  test("planDrain places the pods of the drained node", async () => {
    await client.upsertJson(node("node-b", "2"));
    const plan = await client.planDrain(["node-a"]);
    assert.deepEqual(
      plan.pods.map((p) => [p.pod?.name, p.outcome, p.nodeName]),
      [["victim", DrainOutcome.DRAIN_OUTCOME_FITS, "node-b"]],
    );
    assert.equal(plan.pods[0].blockedByPdb?.name, "keep-victim");
    const empty = await rejected(client.planDrain([]));
    assert.equal(empty.code, status.INVALID_ARGUMENT);
  });
});

test("TLS and bearer tokens map to roles", async () => {
  const dir = mkdtempSync(join(tmpdir(), "preemptd-tls-"));
  execFileSync(join(TESTDATA, "make-tls.sh"), [dir]);
  const server = await new Server(0, [
    "--tls-cert", join(dir, "server.crt"), "--tls-key", join(dir, "server.key"), "--authz", join(dir, "authz.yaml"),
  ]).start();
  const tls = credentials.createSsl(readFileSync(join(dir, "ca.crt")));
  const writer = new PreemptdClient(server.address, { credentials: tls, token: readFileSync(join(dir, "writer.token"), "utf8") });
  const reader = new PreemptdClient(server.address, { credentials: tls, token: readFileSync(join(dir, "reader.token"), "utf8") });
  const anonymous = new PreemptdClient(server.address, { credentials: tls });
  try {
    assert.equal((await writer.upsertJson(node("node-a", "1"))).applied, true);
    assert.equal((await reader.preempt(pod("p", "1"), { dryRun: true })).outcome, Outcome.OUTCOME_FITS);
    assert.equal((await rejected(reader.upsertJson(node("node-b", "1")))).code, status.PERMISSION_DENIED);
    assert.equal((await rejected(anonymous.listNominations())).code, status.UNAUTHENTICATED);
    // The generated stub shares the client's channel; client.metadata carries the token.
    const listed = await new Promise<ListNominationsResponse>((resolve, reject) =>
      reader.stub.listNominations({}, reader.metadata, (error, response) => (error ? reject(error) : resolve(response))),
    );
    assert.ok(listed.epoch);
  } finally {
    for (const c of [writer, reader, anonymous]) c.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

const BAD: { name: string; path: string; object: KubeObject }[] = readJson(join(TESTDATA, "bad-objects.json")).cases;

describe("converters refuse bad input at its field", () => {
  for (const c of BAD) {
    test(c.name, () => {
      assert.throws(
        () => fromKube(c.object),
        (error: unknown) =>
          error instanceof ConversionError && error.path === c.path && error.message.startsWith(`${c.path}: `),
      );
    });
  }
  test("a bad list item is named by its index", async () => {
    const client = new PreemptdClient("127.0.0.1:1");
    try {
      await assert.rejects(
        client.syncList({ kind: "List", items: [node("ok", "1"), BAD[0].object] }, { typed: true }),
        (error: unknown) => error instanceof ConversionError && error.path === "items[1].spec.priority",
      );
    } finally {
      client.close();
    }
  });
});

test("the converter matches the shared golden", () => {
  const input = readJson(join(TESTDATA, "converter-input.json"));
  const golden: unknown[] = readJson(join(TESTDATA, "converter-golden.json")).items;
  const converted = listItems(input).map((item) => {
    const typed = fromKube(item);
    switch (typed.kind) {
      case "Node":
        return SyncRequest.fromPartial({ node: { upsert: typed.node } });
      case "Pod":
        return SyncRequest.fromPartial({ pod: { upsert: typed.pod } });
      case "PodDisruptionBudget":
        return SyncRequest.fromPartial({ pdb: { upsert: typed.pdb } });
      case "PodGroup":
        return SyncRequest.fromPartial({ podGroup: { upsert: typed.podGroup } });
      case "Workload":
        return SyncRequest.fromPartial({ workload: { upsert: typed.workload } });
    }
  });
  assert.deepEqual(
    converted.map((c) => SyncRequest.toJSON(c)),
    golden.map((g) => SyncRequest.toJSON(SyncRequest.fromJSON(g))),
  );
});

function gangPod(name: string, priority: number, group: string, nodeName = ""): KubeObject {
  return {
    kind: "Pod",
    metadata: { namespace: "gang", name, uid: `uid-${name}` },
    spec: {
      nodeName,
      priority,
      schedulingGroup: { podGroupName: group },
      containers: [{ name: "c", resources: { requests: { cpu: "8" } } }],
    },
    status: { phase: nodeName ? "Running" : "Pending" },
  };
}

const gangGroup = (name: string, priority: number): KubeObject => ({
  apiVersion: "scheduling.k8s.io/v1beta1",
  kind: "PodGroup",
  metadata: { namespace: "gang", name },
  spec: { schedulingPolicy: { gang: { minCount: 2 } }, disruptionMode: { all: {} }, priority },
});

test("preemptGroup evicts an all-mode gang for every member", async () => {
  const server = await new Server(0, ["--kubernetes-version", "1.37", "--feature-gates", "GenericWorkload=true"]).start();
  const client = new PreemptdClient(server.address);
  try {
    const report = await client.sync(
      [
        node("n1", "8"),
        node("n2", "8"),
        gangGroup("inference", 100),
        gangPod("inf-0", 100, "inference", "n1"),
        gangPod("inf-1", 100, "inference", "n2"),
      ],
      { typed: true },
    );
    assert.deepEqual([report.rejected, report.applied?.podGroups], [0n, 1n]);
    assert.ok((await client.upsertJson(gangGroup("training", 1000))).applied);
    const members = [podFromKube(gangPod("train-1", 1000, "training")), gangPod("train-0", 1000, "training")];
    const answer = await client.preemptGroup({ namespace: "gang", name: "training", uid: "" }, members);
    assert.equal(answer.outcome, Outcome.OUTCOME_PREEMPT, answer.message);
    assert.deepEqual(answer.victims.map((v) => v.name), ["inf-0", "inf-1"]);
    assert.deepEqual(
      answer.nominations.map((n) => [n.pod?.name, n.nodeName]),
      [["train-0", "n1"], ["train-1", "n2"]],
    );
    assert.equal(answer.podGroupDisruptions, 1);
    assert.equal((await client.listNominations()).nominations.length, 2);
    const missing = await rejected(client.preemptGroup({ namespace: "gang", name: "absent", uid: "" }, [], { dryRun: true }));
    assert.equal(missing.code, status.NOT_FOUND);
    const workload = workloadFromKube({
      kind: "Workload",
      metadata: { namespace: "gang", name: "job" },
      spec: { podGroupTemplates: [{ name: "workers" }] },
    });
    assert.ok((await client.upsertWorkload(workload)).applied);
    assert.ok((await client.updateWorkload({ delete: { namespace: "gang", name: "job", uid: undefined } })).applied);
    assert.ok((await client.deletePodGroup("gang", "training")).applied);
    const deleted = await rejected(
      client.preemptGroup({ namespace: "gang", name: "training", uid: "" }, members, { dryRun: true }),
    );
    assert.equal(deleted.code, status.NOT_FOUND);
  } finally {
    client.close();
    await server.stop();
  }
});
