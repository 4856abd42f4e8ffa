// Every conformance scenario through the client: the cluster bulk-loaded with Sync, the
// preemptor decided with a dry-run Preempt, once as Kubernetes JSON and once as typed
// messages converted by podFromKube/fromKube, the answer compared with the scenario's
// `expect`.

import assert from "node:assert/strict";
import { relative } from "node:path";
import { after, before, describe, test } from "node:test";

import { listItems, Outcome, podFromKube, PreemptdClient, type PreemptResponse, type KubeObject } from "../src";
import { readJson, scenarioFiles, SCENARIOS, Server } from "./server";

const OUTCOMES: { [key: number]: string } = {
  [Outcome.OUTCOME_PREEMPT]: "PREEMPT",
  [Outcome.OUTCOME_FITS]: "FITS",
  [Outcome.OUTCOME_NOT_ELIGIBLE]: "NOT_ELIGIBLE",
  [Outcome.OUTCOME_NO_CANDIDATE]: "NO_CANDIDATE",
};

function mismatch(answer: PreemptResponse, expect: any): string | undefined {
  const got = OUTCOMES[answer.outcome] ?? String(answer.outcome);
  if (got !== expect.outcome) return `outcome ${got} != ${expect.outcome}: ${answer.message}`;
  const names = (refs: { namespace: string; name: string }[]) => refs.map((r) => `${r.namespace}/${r.name}`).sort();
  if (got === "PREEMPT") {
    const node = answer.nominatedNodeName;
    if (!expect.nominatedNodeNameAnyOf.includes(node)) return `node ${node} not in ${expect.nominatedNodeNameAnyOf}`;
    const victims = names(answer.victims);
    const wantVictims = [...(expect.victimsByNode[node] ?? [])].sort();
    if (JSON.stringify(victims) !== JSON.stringify(wantVictims)) return `victims ${victims} != ${wantVictims}`;
    const cleared = names(answer.nominatedPodsToClear);
    const wantCleared = [...(expect.nominatedPodsToClearByNode[node] ?? [])].sort();
    if (JSON.stringify(cleared) !== JSON.stringify(wantCleared)) return `cleared ${cleared} != ${wantCleared}`;
  }
  if (got === "FITS" && "feasibleNodes" in expect) {
    const feasible = [...answer.feasibleNodes].sort();
    if (JSON.stringify(feasible) !== JSON.stringify([...expect.feasibleNodes].sort())) {
      return `feasible ${feasible} != ${expect.feasibleNodes}`;
    }
  }
  return undefined;
}

async function deleteAll(client: PreemptdClient, items: KubeObject[]): Promise<void> {
  // Pods first so nodes and budgets leave an empty cache behind. Succeeded and Failed pods
  // were never cached: NOT_FOUND.
  const ordered = [...items.filter((i) => i.kind === "Pod"), ...items.filter((i) => i.kind !== "Pod")];
  for (const item of ordered) {
    const meta = item.metadata ?? {};
    try {
      if (item.kind === "Pod") await client.deletePod(meta.namespace ?? "", meta.name);
      else if (item.kind === "Node") await client.deleteNode(meta.name);
      else await client.deletePodDisruptionBudget(meta.namespace ?? "", meta.name);
    } catch (error: any) {
      if (error?.code !== 5 /* NOT_FOUND */) throw error;
    }
  }
}

const files = scenarioFiles();

describe("conformance scenarios", () => {
  const server = new Server();
  let client: PreemptdClient;
  before(async () => {
    await server.start();
    client = new PreemptdClient(server.address);
  });
  after(async () => {
    client.close();
    assert.equal(await server.stop(), 0, "preemptd exited non-zero on SIGTERM");
  });

  test("scenarios are found", () => assert.ok(files.length > 0, `no scenarios under ${SCENARIOS}`));

  for (const file of files) {
    for (const mode of ["json", "typed"] as const) {
      test(`${relative(SCENARIOS, file)} [${mode}]`, async () => {
        const scenario = readJson(file);
        const items = listItems(scenario.cluster);
        const synced = await client.syncList(scenario.cluster, { typed: mode === "typed" });
        try {
          assert.equal(synced.rejected, 0n, JSON.stringify(synced.rejections));
          const applied = synced.applied!;
          assert.equal(Number(applied.nodes + applied.pods + applied.pdbs), items.length);
          const pod = mode === "typed" ? podFromKube(scenario.preemptor) : scenario.preemptor;
          const answer = await client.preempt(pod, { dryRun: true, timeoutMs: 30_000 });
          assert.equal(answer.epoch, synced.epoch);
          assert.equal(mismatch(answer, scenario.expect), undefined);
        } finally {
          await deleteAll(client, items);
        }
      });
    }
  }
});
